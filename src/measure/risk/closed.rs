//! Pitman's likelihood equations in the closed forms ARX 3.9.2 solves first
//! (`ModelPitman`'s polygamma form), with ARX's own digamma and trigamma.
//!
//! ARX's trigamma adds its asymptotic tail only once the recurrence has
//! reached 12, but the recurrence stops at 8: between 8 and 12 the tail
//! (about 1/x) is missing, so this Jacobian is approximate and Newton can
//! stop at a far point where the equations are flat. kanon follows that
//! path so that its estimate, and whether there is one, is ARX's
//! (docs/risk.md, "Pitman's path").

use super::Equations;
use std::f64::consts::PI;

/// ψ(1) = −γ, ψ'(1) = π²/6 and ψ''(1) = −2ζ(3): the series near 0.
const DIGAMMA_1: f64 = -0.577_215_664_901_532_9;
const TRIGAMMA_1: f64 = PI * PI / 6.0;
const TETRAGAMMA_1: f64 = -2.0 * 1.202_056_903_159_594_2;

/// ψ(x) as ARX computes it: reflection below 0, the series at 0 up to
/// 1e-6, else the recurrence up to 12 and the asymptotic series.
fn digamma(x: f64) -> f64 {
    if !x.is_finite() {
        return f64::NAN;
    }
    if x == 0.0 {
        return f64::NEG_INFINITY;
    }
    if x < 0.0 {
        return digamma(1.0 - x) + PI / libm::tan(-PI * x);
    }
    if x <= 1e-6 {
        return DIGAMMA_1 - 1.0 / x + TRIGAMMA_1 * x;
    }
    let (mut x, mut result) = (x, 0.0);
    while x < 12.0 {
        result -= 1.0 / x;
        x += 1.0;
    }
    // ARX's order of operations, so that Newton's path is ARX's to the bit.
    let r = 1.0 / x;
    result += libm::log(x) - 0.5 * r;
    let r = r * r;
    result - r * (1.0 / 12.0 - r * (1.0 / 120.0 - r * (1.0 / 252.0 - r * (1.0 / 240.0 - r * (1.0 / 132.0)))))
}

/// ψ'(x) as ARX computes it: the recurrence stops at 8 and the tail is
/// added only from 12 on (see the module's note).
fn trigamma(x: f64) -> f64 {
    if !x.is_finite() {
        return f64::NAN;
    }
    if x == 0.0 {
        return f64::NEG_INFINITY;
    }
    if x < 0.0 {
        let r = PI / libm::sin(-PI * x);
        return -trigamma(1.0 - x) + r * r;
    }
    if x <= 1e-4 {
        return 1.0 / (x * x) + TRIGAMMA_1 + TETRAGAMMA_1 * x;
    }
    let (mut x, mut result) = (x, 0.0);
    while x < 8.0 {
        result += 1.0 / (x * x);
        x += 1.0;
    }
    if x >= 12.0 {
        let r = 1.0 / (x * x);
        let bernoulli =
            1.0 + r * (1.0 / 6.0 + r * (-1.0 / 30.0 + r * (1.0 / 42.0 + r * (-1.0 / 30.0 + r * (5.0 / 66.0)))));
        result += 0.5 * r + bernoulli / x;
    }
    result
}

/// ∂L/∂θ, ∂L/∂α and ARX's Jacobian at (θ, α), for u classes, n records and
/// the class-size histogram: Σ_{i<u} 1/(θ+iα) = (ψ(θ/α+u) − ψ(θ/α+1))/α and
/// the like, Σ_{i<n} 1/(θ+i) = ψ(θ+n) − ψ(θ+1), Σ_{k<j} 1/(k−α) = ψ(j−α) − ψ(1−α).
pub(super) fn pitman_equations(histogram: &[(u64, u128)], u: f64, n: f64, t: f64, a: f64) -> Equations {
    let m = u - 1.0;
    let psi_u = digamma(m + t / a + 1.0);
    let tri_u = trigamma((a + t + a * m) / a);
    let tri_1 = trigamma(t / a + 1.0);
    let psi_1 = digamma(t / a + 1.0);
    let a2 = a * a;
    let d1 = (tri_1 - tri_u) / a2;
    let d5 = (a * psi_u + t * tri_u - a * psi_1 - t * tri_1) / (a2 * a);
    let d3 = (a2 * m - t * t * tri_u + t * t * tri_1 - 2.0 * a * t * psi_u + 2.0 * a * t * psi_1) / (a2 * a2);
    let o1 = (psi_u - psi_1) / a;
    let o3 = (-t * psi_u + a * m + t * psi_1) / a2;
    let o2 = digamma(n + t) - digamma(t + 1.0);
    let d2 = trigamma(t + 1.0) - trigamma(n + t);
    let (psi_a, tri_a) = (digamma(1.0 - a), trigamma(1.0 - a));
    let (mut o4, mut d4) = (0.0, 0.0);
    for &(size, count) in histogram.iter().filter(|&&(size, _)| size != 1) {
        let (size, count) = (size as f64, count as f64);
        d4 += count * (tri_a - trigamma(size - a));
        o4 += count * (digamma(size - a) - psi_a);
    }
    Equations { f: (o1 - o2, o3 - o4), jacobian: ((d2 - d1, -d5), (-d5, -d3 - d4)) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The functions are exact where ARX's cut-offs do not bite, and the
    /// trigamma between 8 and 12 is the bare recurrence, as ARX's.
    #[test]
    fn arx_polygamma() {
        let euler = 0.577_215_664_901_532_9;
        assert!((digamma(1.0) + euler).abs() < 1e-12);
        assert!((digamma(0.5) + euler + 2.0 * 2f64.ln()).abs() < 1e-12);
        assert_eq!(trigamma(1.0), (1..8).map(|i| 1.0 / (i * i) as f64).sum::<f64>());
        assert!((trigamma(20.0) - (PI * PI / 6.0 - (1..20).map(|i| 1.0 / (i * i) as f64).sum::<f64>())).abs() < 1e-12);
        assert_eq!(trigamma(9.0), 0.0);
        assert_eq!(trigamma(7.5), 1.0 / (7.5 * 7.5));
        assert_eq!(digamma(0.0), f64::NEG_INFINITY);
    }
}
