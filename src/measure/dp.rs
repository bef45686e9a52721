//! SafePub's arithmetic (Bild, Kuhn and Prasser, PoPETs 2018), as ARX 3.9.2
//! computes it: the sampling probability β and the class size k from
//! (ε_anon, δ) in outward-rounded interval arithmetic (ARX's
//! `ParameterCalculation`, whose k this reproduces exactly, see
//! tests/dp.rs), the score of a node (ARX's `getScore` of loss,
//! discernibility and precision), and the exponential mechanism's
//! distribution. Pure arithmetic: the walk is `search::safepub`.

use crate::measure::metrics::Histogram;
use crate::options::Metric;
use anyhow::{bail, Result};
use std::collections::HashMap;

/// A closed interval [lo, hi] holding the exact value.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Iv {
    lo: f64,
    hi: f64,
}

fn down(x: f64) -> f64 {
    x.next_down()
}

fn up(x: f64) -> f64 {
    x.next_up()
}

fn finite(x: f64) -> Result<f64> {
    if x.is_finite() {
        Ok(x)
    } else {
        bail!("numeric instability: {x}")
    }
}

impl Iv {
    fn point(x: f64) -> Iv {
        Iv { lo: x, hi: x }
    }

    fn new(lo: f64, hi: f64) -> Result<Iv> {
        if finite(lo)? > finite(hi)? {
            bail!("invalid range [{lo}, {hi}]");
        }
        Ok(Iv { lo, hi })
    }

    /// A binary operation on the four corners, widened by one ulp each way.
    fn apply(self, other: Iv, op: impl Fn(f64, f64) -> f64) -> Result<Iv> {
        let v = [op(self.lo, other.lo), op(self.lo, other.hi), op(self.hi, other.lo), op(self.hi, other.hi)];
        for x in v {
            finite(x)?;
        }
        let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Iv::new(down(lo), up(hi))
    }

    /// A monotone unary operation on both ends, widened by one ulp each way.
    fn map(self, op: impl Fn(f64) -> f64) -> Result<Iv> {
        let (a, b) = (finite(op(self.lo))?, finite(op(self.hi))?);
        Iv::new(down(a.min(b)), up(a.max(b)))
    }

    fn add(self, o: Iv) -> Result<Iv> {
        self.apply(o, |a, b| a + b)
    }
    fn sub(self, o: Iv) -> Result<Iv> {
        self.apply(o, |a, b| a - b)
    }
    fn mul(self, o: Iv) -> Result<Iv> {
        self.apply(o, |a, b| a * b)
    }
    fn div(self, o: Iv) -> Result<Iv> {
        self.apply(o, |a, b| a / b)
    }
    fn exp(self) -> Result<Iv> {
        self.map(f64::exp)
    }
    fn ln(self) -> Result<Iv> {
        self.map(f64::ln)
    }
    fn sqrt(self) -> Result<Iv> {
        self.map(f64::sqrt)
    }
    fn inv(self) -> Result<Iv> {
        self.map(|x| 1.0 / x)
    }
    /// Java's `Math.pow(x, (double) n)`, not repeated multiplication.
    fn pow(self, n: i32) -> Result<Iv> {
        self.map(|x| x.powf(n as f64))
    }

    /// Strictly below, or an error when the two overlap (undecidable).
    fn less(self, o: Iv) -> Result<bool> {
        if !(self.hi < o.lo || o.hi < self.lo) {
            bail!("undecidable comparison of [{}, {}] and [{}, {}]", self.lo, self.hi, o.lo, o.hi);
        }
        Ok(self.hi < o.lo)
    }

    /// The larger of two intervals; an error when they overlap (not just touch).
    fn max(self, o: Iv) -> Result<Iv> {
        if self.hi == o.lo {
            return Ok(o);
        }
        if o.hi == self.lo {
            return Ok(self);
        }
        Ok(if self.less(o)? { o } else { self })
    }
}

/// Stirling's error term ln n! − ln(√(2πn) (n/e)^n), with its truncation bound.
fn stirling_error(v: Iv) -> Result<Iv> {
    let base = Iv::point(12.0).mul(v)?.inv()?.sub(Iv::point(360.0).mul(v.pow(3)?)?.inv()?)?;
    let bound = Iv::point(1260.0).mul(v.pow(5)?)?.inv()?;
    let offset = bound.lo.abs().max(bound.hi.abs());
    Iv::new(down(base.lo - offset), up(base.hi + offset))
}

/// P[Binomial(n, p) = k] by Loader's saddle-point form (as ARX and Commons Math).
fn binomial_probability(n: i64, p: Iv, k: i64) -> Result<Iv> {
    let one = Iv::point(1.0);
    if k < 0 || k > n {
        return Ok(Iv::point(0.0));
    }
    if k == 0 {
        return one.sub(p)?.pow(n as i32);
    }
    if k == n {
        return p.pow(n as i32);
    }
    let (iv_n, iv_k) = (Iv::point(n as f64), Iv::point(k as f64));
    let n_k = iv_n.sub(iv_k)?;
    let dev = iv_k.mul(iv_k.div(iv_n.mul(p)?)?.ln()?)?.add(n_k.mul(n_k.div(iv_n.mul(one.sub(p)?)?)?.ln()?)?)?;
    let term1 = stirling_error(iv_n)?.sub(stirling_error(iv_k)?)?.sub(stirling_error(n_k)?)?;
    let pi = Iv::new(std::f64::consts::PI.next_down(), std::f64::consts::PI)?;
    let term2 = iv_n.div(Iv::point(2.0).mul(pi)?.mul(iv_k)?.mul(n_k)?)?.sqrt()?;
    term2.ln()?.add(term1)?.sub(dev)?.exp()
}

/// β and k for (ε_anon, δ): SafePub's Theorem, as ARX's `ParameterCalculation`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Parameters {
    /// The sampling probability: the lower end of 1 − e^(−ε_anon).
    pub beta: f64,
    /// Classes with fewer sampled records are suppressed.
    pub k: u64,
}

/// The sequences a_n (the tail of Binomial(n, β) above nγ) and c_n (its
/// Chernoff bound), cached by n: they do not depend on k.
struct Sequences {
    beta: Iv,
    gamma: Iv,
    cached: HashMap<i64, (Iv, Iv)>,
}

impl Sequences {
    fn at(&mut self, n: i64) -> Result<(Iv, Iv)> {
        if let Some(v) = self.cached.get(&n) {
            return Ok(*v);
        }
        let iv_n = Iv::point(n as f64);
        // ARX takes the lower end of nγ: that only adds terms, so only lowers k's guarantee's slack.
        let from = iv_n.mul(self.gamma)?.lo.floor() as i64 + 1;
        let mut a = Iv::point(0.0);
        for j in from..=n {
            a = a.add(binomial_probability(n, self.beta, j)?)?;
        }
        let t = self.gamma.mul(self.gamma.div(self.beta)?.ln()?)?.sub(self.gamma.sub(self.beta)?)?;
        let c = Iv::point(-1.0).mul(iv_n.mul(t)?)?.exp()?;
        self.cached.insert(n, (a, c));
        Ok((a, c))
    }

    /// δ(k): the largest a_n from n_m = ⌈k/γ − 1⌉ on, until a_n passes the bound c_n.
    /// The maximum can come after n_m: a_n is not monotone in n.
    fn delta(&mut self, k: i64) -> Result<Iv> {
        let n_m = Iv::point(k as f64).div(self.gamma)?.sub(Iv::point(1.0))?.lo.ceil() as i64;
        let mut delta = Iv::point(-f64::MAX);
        let mut bound = Iv::point(f64::MAX);
        let mut n = n_m;
        while delta.lo <= bound.hi {
            let (a, c) = self.at(n)?;
            delta = delta.max(a)?;
            bound = c;
            n += 1;
        }
        Ok(delta)
    }
}

/// β and k for (ε_anon, δ), or why the arithmetic cannot decide them.
pub fn parameters(epsilon_anon: f64, delta: f64) -> Result<Parameters> {
    let eps = Iv::point(epsilon_anon);
    let one = Iv::point(1.0);
    let beta = one.sub(Iv::point(-1.0).mul(eps)?.exp()?)?;
    let power = eps.exp()?;
    let gamma = power.sub(one)?.add(beta)?.div(power)?;
    let mut seq = Sequences { beta, gamma, cached: HashMap::new() };
    let target = Iv::point(delta);
    // ARX's loop returns one more than the first k whose δ(k) is below δ.
    let mut k: i64 = 1;
    let mut delta_k = Iv::point(f64::MAX);
    while !delta_k.less(target)? {
        delta_k = seq.delta(k)?;
        k += 1;
    }
    Ok(Parameters { beta: beta.lo, k: k as u64 })
}

/// What a node's score needs besides its histogram over the sample.
#[derive(Debug, Clone)]
pub struct ScoreBasis {
    pub metric: Metric,
    pub k: u64,
    /// Rows of the source before sampling (n), and sampled (m).
    pub source_rows: u64,
    pub sampled_rows: u64,
    /// Per QI: hierarchy height and leaves.
    pub heights: Vec<u8>,
    pub leaves: Vec<u64>,
}

impl ScoreBasis {
    /// The basis for a histogram over `data` (the sample) drawn from `source_rows`.
    pub fn of(data: &crate::measure::metrics::Dataset, metric: Metric, k: u64, source_rows: u64) -> ScoreBasis {
        ScoreBasis {
            metric,
            k,
            source_rows,
            sampled_rows: data.rows,
            heights: data.heights.clone(),
            leaves: data.leaves.clone(),
        }
    }
}

/// The metrics SafePub scores by: ARX's loss (glm), discernibility (dm) and precision.
pub fn scored(metric: Metric) -> bool {
    matches!(metric, Metric::Glm | Metric::Dm | Metric::Precision)
}

/// The node's score (higher is better), divided by its sensitivity as in the
/// paper: classes of at least k sampled records are kept, the rest of the
/// sample and every record left out of it count as suppressed.
pub fn score(basis: &ScoreBasis, levels: &[u8], hist: &Histogram) -> f64 {
    let k = basis.k;
    let kept = hist.buckets.iter().filter(|b| b.admitted && b.size >= k);
    let kept_records: u64 = kept.clone().map(|b| b.records()).sum();
    let suppressed = (basis.sampled_rows - kept_records) + (basis.source_rows - basis.sampled_rows);
    let d = basis.heights.len() as f64;
    let per_k = if k > 1 { (k - 1) as f64 } else { 1.0 };
    match basis.metric {
        Metric::Dm => {
            let n = basis.source_rows as f64;
            let squares: f64 = kept.map(|b| b.row_squares() as f64).sum();
            let sensitivity = if k == 1 { 5.0 } else { (k * k) as f64 / (k - 1) as f64 + 1.0 };
            -(squares + n * suppressed as f64) / (n * sensitivity)
        }
        Metric::Precision => {
            let mut total = 0.0;
            for (&level, &height) in levels.iter().zip(&basis.heights) {
                let share = if height == 0 { 0.0 } else { level as f64 / height as f64 };
                total += kept_records as f64 * share + suppressed as f64;
            }
            -total / d / per_k
        }
        // Loss: each kept record's value covers leaves/all leaves of its QI's domain.
        _ => {
            let mut total = d * suppressed as f64;
            for (a, &leaves) in basis.leaves.iter().enumerate() {
                let covered: u64 = kept.clone().map(|b| b.leaf_sums[a] + b.records()).sum();
                total += covered as f64 / leaves as f64;
            }
            -total / d / per_k
        }
    }
}

/// The exponential mechanism's probabilities: each candidate's weight
/// exp(ε·score/2), normalized (shifted by the largest exponent first, as ARX).
pub fn probabilities(scores: &[f64], epsilon: f64) -> Vec<f64> {
    let exponents: Vec<f64> = scores.iter().map(|s| 0.5 * epsilon * s).collect();
    let shift = exponents.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let weights: Vec<f64> = exponents.iter().map(|e| (e - shift).exp()).collect();
    let total: f64 = weights.iter().sum();
    weights.iter().map(|w| w / total).collect()
}

/// The index `u` (uniform in [0, 1)) falls on in `probabilities`' cumulative sums.
pub fn pick(probabilities: &[f64], u: f64) -> usize {
    let mut sum = 0.0;
    for (i, p) in probabilities.iter().enumerate() {
        sum += p;
        if u < sum {
            return i;
        }
    }
    probabilities.len() - 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_and_a_millionth_give_arx_figures() {
        let p = parameters(1.0, 1e-6).unwrap();
        assert!((p.beta - 0.632_120_558_828_557_7).abs() < 1e-12, "{}", p.beta);
        assert_eq!(p.k, 75);
    }

    #[test]
    fn the_mechanism_weighs_by_half_epsilon_times_score() {
        let p = probabilities(&[0.0, -2.0], 1.0);
        let e = (-1.0f64).exp();
        assert!((p[0] - 1.0 / (1.0 + e)).abs() < 1e-15);
        assert!((p[1] - e / (1.0 + e)).abs() < 1e-15);
        assert_eq!(pick(&p, 0.0), 0);
        assert_eq!(pick(&p, 0.99), 1);
    }
}
