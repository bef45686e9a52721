//! The privacy models decided per equivalence class from the class's
//! sensitive-value counts, beyond k and distinct ℓ: entropy ℓ, recursive
//! (c,ℓ) and t-closeness (equal, hierarchical and ordered distance).
//! Definitions: docs/risk.md and issue 27.
//!
//! Every verdict is exact. Distances are sums of integers in units of
//! 1/(n·N) (n the class's records, N the source's), compared with t as the
//! decimal the job wrote; entropy compares n^n with ℓ^n · Π c^c, in floating
//! point only where the two sides are far apart (and with exact integers
//! otherwise), so a class whose entropy is exactly ln ℓ passes.

use num_bigint::BigUint;
use serde::Serialize;
use std::collections::BTreeMap;

pub use crate::job::Ratio;

/// `a · b ≤ c · d`, exactly.
fn product_le(a: u128, b: u128, c: u128, d: u128) -> bool {
    match (a.checked_mul(b), c.checked_mul(d)) {
        (Some(x), Some(y)) => x <= y,
        _ => BigUint::from(a) * BigUint::from(b) <= BigUint::from(c) * BigUint::from(d),
    }
}

/// How t-closeness measures the distance of a class's distribution from the source's.
#[derive(Debug, Clone)]
pub(crate) enum Distance {
    /// ½ Σ |p − q|.
    Equal,
    /// Earth mover's distance over the values in their type's order.
    Ordered {
        /// Per code i (1..=m): Σ_{j≤i} q_j in records; and Σ_{j≤i} of those.
        cumulative: Vec<u64>,
        cumulative2: Vec<u128>,
    },
    /// Earth mover's distance over a hierarchy of the values.
    Hierarchical {
        height: u32,
        /// `parent[h][i]`: the node at level h+1 above node i of level h (level 0: codes).
        parent: Vec<Vec<u32>>,
        /// `mass[h][i]`: the source's records under node i of level h.
        mass: Vec<Vec<u64>>,
    },
}

/// t-closeness on one column: the source's distribution (records per code
/// 1..=m, index 0 unused) and the distance.
#[derive(Debug, Clone)]
pub(crate) struct Closeness {
    pub(crate) t: Ratio,
    pub(crate) reference: Vec<u64>,
    pub(crate) total: u64,
    pub(crate) distance: Distance,
}

/// The per-class models of a job beyond k and distinct ℓ.
#[derive(Debug, Clone, Default)]
pub(crate) struct ClassModels {
    /// Entropy ℓ.
    pub(crate) entropy: Option<u64>,
    /// Recursive (c, ℓ).
    pub(crate) recursive: Option<(Ratio, u64)>,
    pub(crate) closeness: Option<Closeness>,
    /// t-closeness reads the frequency sets' `t` column (a column other than ℓ's `s`).
    pub(crate) separate: bool,
}

impl ClassModels {
    pub(crate) fn is_empty(&self) -> bool {
        self.entropy.is_none() && self.recursive.is_none() && self.closeness.is_none()
    }

    /// Does a class meet every model? `s` and `t`: (code, records) of the
    /// class's values of the ℓ column and of the t column (`t` is ignored
    /// unless the columns differ), each code once, in any order.
    pub(crate) fn admits(&self, s: &[(u32, u64)], t: &[(u32, u64)]) -> bool {
        if let Some(l) = self.entropy {
            if !entropy_at_least(s.iter().map(|p| p.1), l) {
                return false;
            }
        }
        if let Some((c, l)) = self.recursive {
            if !recursive(s.iter().map(|p| p.1), c, l) {
                return false;
            }
        }
        match &self.closeness {
            Some(cl) => cl.admits(if self.separate { t } else { s }),
            None => true,
        }
    }
}

/// What the kept classes of a release reach under the job's per-class
/// models (each null when the job does not ask for that model).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(crate) struct ClassFigures {
    /// The least exp(entropy) over the classes: the entropy ℓ they all meet.
    pub(crate) entropy_l: Option<f64>,
    /// The largest r₁ / (r_ℓ + … + r_m): recursive (c, ℓ) holds for every c above it.
    pub(crate) recursive_c: Option<f64>,
    /// The largest t-closeness distance.
    pub(crate) t: Option<f64>,
}

impl ClassModels {
    /// The figures over `classes`, each (s pairs, t pairs) as [`ClassModels::admits`] takes them.
    pub(crate) fn figures<'a>(
        &self,
        classes: impl Iterator<Item = (&'a [(u32, u64)], &'a [(u32, u64)])>,
    ) -> ClassFigures {
        let mut out = ClassFigures::default();
        for (s, t) in classes {
            if self.entropy.is_some() {
                // Equal counts over m values: exp(entropy) is m exactly.
                let uniform = s.windows(2).all(|w| w[0].1 == w[1].1);
                let e = if uniform { s.len() as f64 } else { entropy(s.iter().map(|p| p.1)).exp() };
                out.entropy_l = Some(out.entropy_l.map_or(e, |x: f64| x.min(e)));
            }
            if let Some((_, l)) = self.recursive {
                let mut r: Vec<u64> = s.iter().map(|p| p.1).collect();
                r.sort_unstable_by(|a, b| b.cmp(a));
                let tail: u64 = r.iter().skip(l as usize - 1).sum();
                let c = if tail == 0 { f64::INFINITY } else { r[0] as f64 / tail as f64 };
                out.recursive_c = Some(out.recursive_c.map_or(c, |x: f64| x.max(c)));
            }
            if let Some(cl) = &self.closeness {
                let d = cl.distance(if self.separate { t } else { s });
                out.t = Some(out.t.map_or(d, |x: f64| x.max(d)));
            }
        }
        out
    }
}

/// Shannon entropy (natural log) of a class's counts, for reports.
pub(crate) fn entropy(counts: impl Iterator<Item = u64> + Clone) -> f64 {
    let n: u64 = counts.clone().sum();
    if n == 0 {
        return 0.0;
    }
    let n = n as f64;
    -counts.map(|c| c as f64 / n).filter(|&p| p > 0.0).map(|p| p * p.ln()).sum::<f64>()
}

/// −Σ p ln p ≥ ln ℓ, exactly: n ln n − Σ c ln c ≥ n ln ℓ.
pub(crate) fn entropy_at_least(counts: impl Iterator<Item = u64> + Clone, l: u64) -> bool {
    if l <= 1 {
        return true;
    }
    let m = counts.clone().filter(|&c| c > 0).count() as u64;
    if m < l {
        // Entropy is at most ln m.
        return false;
    }
    let n: u64 = counts.clone().sum();
    let xlnx = |x: u64| if x == 0 { 0.0 } else { x as f64 * (x as f64).ln() };
    let sum: f64 = counts.clone().map(xlnx).sum();
    let rhs = n as f64 * (l as f64).ln();
    let diff = xlnx(n) - sum - rhs;
    // Each of the m + 2 terms is within a few ulps; far from the bound, the sign is the answer.
    let err = (xlnx(n) + sum + rhs) * (m as f64 + 3.0) * 8.0 * f64::EPSILON;
    if diff > err {
        return true;
    }
    if diff < -err {
        return false;
    }
    // Near the bound: n^n ≥ ℓ^n · Π c^c, with common prime factors cancelled.
    let mut exponents: BTreeMap<u64, i128> = BTreeMap::new();
    let mut add = |x: u64, times: i128| {
        for (p, e) in factor(x) {
            *exponents.entry(p).or_default() += e as i128 * times;
        }
    };
    add(n, n as i128);
    add(l, -(n as i128));
    for c in counts.filter(|&c| c > 1) {
        add(c, -(c as i128));
    }
    exponents.retain(|_, e| *e != 0);
    if exponents.is_empty() {
        return true;
    }
    let bits: f64 = exponents.iter().map(|(&p, &e)| e.unsigned_abs() as f64 * (p as f64).log2()).sum();
    if bits < (1u64 << 24) as f64 {
        let side = |positive: bool| {
            let mut x = BigUint::from(1u32);
            for (&p, &e) in &exponents {
                if (e > 0) == positive {
                    x *= BigUint::from(p).pow(e.unsigned_abs() as u32);
                }
            }
            x
        };
        side(true) >= side(false)
    } else {
        // Beyond 16M bits: the cancelled sum of logs, far smaller than the sums above.
        exponents.iter().map(|(&p, &e)| e as f64 * (p as f64).ln()).sum::<f64>() >= 0.0
    }
}

/// Prime factors of x with their exponents (x ≥ 1).
fn factor(mut x: u64) -> Vec<(u64, u32)> {
    let mut out = Vec::new();
    let mut p = 2u64;
    while p.saturating_mul(p) <= x {
        if x % p == 0 {
            let mut e = 0;
            while x % p == 0 {
                x /= p;
                e += 1;
            }
            out.push((p, e));
        }
        p += if p == 2 { 1 } else { 2 };
    }
    if x > 1 {
        out.push((x, 1));
    }
    out
}

/// Recursive (c,ℓ)-diversity: with counts sorted descending r_1 ≥ … ≥ r_m,
/// r_1 < c · (r_ℓ + … + r_m); fewer than ℓ values fails.
pub(crate) fn recursive(counts: impl Iterator<Item = u64>, c: Ratio, l: u64) -> bool {
    let mut r: Vec<u64> = counts.filter(|&x| x > 0).collect();
    if l == 0 || (r.len() as u64) < l {
        return false;
    }
    r.sort_unstable_by(|a, b| b.cmp(a));
    let tail: u128 = r[l as usize - 1..].iter().map(|&x| x as u128).sum();
    // r1 < c·tail  ⟺  r1·den < num·tail
    !product_le(c.num as u128, tail, r[0] as u128, c.den as u128)
}

impl Closeness {
    /// The distance in units of 1/(n·N·scale) and the scale: (Σ, scale).
    fn scaled(&self, class: &[(u32, u64)]) -> (u128, u128) {
        let n: u64 = class.iter().map(|p| p.1).sum();
        let (n, big_n) = (n as i128, self.total as i128);
        match &self.distance {
            Distance::Equal => {
                // Σ_v |c N − Q n| over all values; absent ones give Q n each.
                let mut in_class: u128 = 0;
                let mut sum: u128 = 0;
                for &(v, c) in class {
                    let q = self.reference[v as usize] as i128;
                    sum += (c as i128 * big_n - q * n).unsigned_abs();
                    in_class += q as u128;
                }
                sum += n as u128 * (self.total as u128 - in_class);
                (sum, 2)
            }
            Distance::Ordered { cumulative, cumulative2 } => {
                let m = self.reference.len() - 1;
                if m <= 1 {
                    return (0, 1);
                }
                let mut sorted: Vec<(u32, u64)> = class.to_vec();
                sorted.sort_unstable();
                // Σ_{i=1..m} |N·C_i − n·QC_i|: C_i (the class's records up to i) is
                // constant between the class's codes, QC_i increases.
                let mut sum: u128 = 0;
                let mut run = |from: usize, to: usize, c: u128| {
                    if from > to {
                        return;
                    }
                    let target = c * self.total as u128; // compare n·QC_i with N·C
                    let nq = |i: usize| n as u128 * cumulative[i] as u128;
                    // First i in from..=to with n·QC_i ≥ N·C.
                    let (mut lo, mut hi) = (from, to + 1);
                    while lo < hi {
                        let mid = (lo + hi) / 2;
                        if nq(mid) >= target {
                            hi = mid;
                        } else {
                            lo = mid + 1;
                        }
                    }
                    let s2 = |a: usize, b: usize| cumulative2[b] - cumulative2[a - 1]; // Σ QC_i, i in a..=b
                    if lo > from {
                        sum += (lo - from) as u128 * target - n as u128 * s2(from, lo - 1);
                    }
                    if lo <= to {
                        sum += n as u128 * s2(lo, to) - (to + 1 - lo) as u128 * target;
                    }
                };
                let mut c: u128 = 0;
                let mut at = 1usize;
                for &(v, k) in &sorted {
                    run(at, v as usize - 1, c);
                    c += k as u128;
                    at = v as usize;
                }
                run(at, m, c);
                (sum, (m - 1) as u128)
            }
            Distance::Hierarchical { height, parent, mass } => {
                // Extras of the touched nodes, level by level: (node, extra, mass).
                let mut level: Vec<(u32, i128, u64)> = class
                    .iter()
                    .map(|&(v, c)| {
                        (v, c as i128 * big_n - self.reference[v as usize] as i128 * n, self.reference[v as usize])
                    })
                    .collect();
                let mut sum: u128 = 0;
                for h in 1..=*height as usize {
                    // Parent → (pos, neg, touched mass).
                    let mut up: BTreeMap<u32, (u128, u128, u64)> = BTreeMap::new();
                    for &(node, extra, m) in &level {
                        let e = up.entry(parent[h - 1][node as usize]).or_default();
                        if extra > 0 {
                            e.0 += extra as u128;
                        } else {
                            e.1 += extra.unsigned_abs();
                        }
                        e.2 += m;
                    }
                    level.clear();
                    for (p, (pos, mut neg, touched)) in up {
                        let m = mass[h][p as usize];
                        // The children the class does not reach: −Q·n each.
                        neg += (m - touched) as u128 * n as u128;
                        sum += h as u128 * pos.min(neg);
                        level.push((p, pos as i128 - neg as i128, m));
                    }
                }
                (sum, *height as u128)
            }
        }
    }

    /// D ≤ t, exactly.
    pub(crate) fn admits(&self, class: &[(u32, u64)]) -> bool {
        let n: u64 = class.iter().map(|p| p.1).sum();
        let (sum, scale) = self.scaled(class);
        // D = sum / (scale · n · N) ≤ num / den
        product_le(sum, self.t.den as u128, self.t.num as u128, scale * n as u128 * self.total as u128)
    }

    /// D, for reports.
    pub(crate) fn distance(&self, class: &[(u32, u64)]) -> f64 {
        let n: u64 = class.iter().map(|p| p.1).sum();
        let (sum, scale) = self.scaled(class);
        if n == 0 {
            return 0.0;
        }
        sum as f64 / (scale as f64 * n as f64 * self.total as f64)
    }
}

impl Distance {
    /// The ordered distance's prefix sums over the reference counts (index 0 unused).
    pub(crate) fn ordered(reference: &[u64]) -> Distance {
        let mut cumulative = vec![0u64; reference.len()];
        let mut cumulative2 = vec![0u128; reference.len()];
        for i in 1..reference.len() {
            cumulative[i] = cumulative[i - 1] + reference[i];
            cumulative2[i] = cumulative2[i - 1] + cumulative[i] as u128;
        }
        Distance::Ordered { cumulative, cumulative2 }
    }

    /// The hierarchical distance's tree: `ancestors[code]` the node index of
    /// the code's value at levels 1..=height (index 0 of `ancestors` unused).
    pub(crate) fn hierarchical(reference: &[u64], ancestors: &[Vec<u32>], height: u32) -> Distance {
        let h = height as usize;
        let mut parent: Vec<Vec<u32>> = vec![Vec::new(); h];
        let mut mass: Vec<Vec<u64>> = vec![reference.to_vec()];
        let width = |level: usize| ancestors.iter().skip(1).map(|a| a[level - 1] + 1).max().unwrap_or(1) as usize;
        for level in 1..=h {
            mass.push(vec![0; width(level)]);
        }
        parent[0] = vec![0; reference.len()];
        for level in 1..h {
            parent[level] = vec![0; width(level)];
        }
        for (code, a) in ancestors.iter().enumerate().skip(1) {
            parent[0][code] = a[0];
            for level in 1..=h {
                mass[level][a[level - 1] as usize] += reference[code];
                if level < h {
                    parent[level][a[level - 1] as usize] = a[level];
                }
            }
        }
        Distance::Hierarchical { height, parent, mass }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Σ over values of p ln p the long way, compared with a tolerance only where
    /// the exact test is not at stake.
    #[test]
    fn entropy_boundary_is_exact() {
        // (3,3) has entropy ln 2 exactly: it passes at ℓ = 2 (ARX's doubles reject it).
        assert!(entropy_at_least([3u64, 3].into_iter(), 2));
        assert!(entropy_at_least([1u64, 1, 1].into_iter(), 3));
        assert!(entropy_at_least([7u64, 7, 7, 7].into_iter(), 4));
        // (4,1,1,1,1): ½ ln 2 + 4·⅛ ln 8 = 2 ln 2 = ln 4, not uniform.
        assert!(entropy_at_least([4u64, 1, 1, 1, 1].into_iter(), 4));
        assert!(!entropy_at_least([4u64, 1, 1, 1, 1].into_iter(), 5));
        assert!(!entropy_at_least([4u64, 2].into_iter(), 2));
        assert!(!entropy_at_least([98u64, 2].into_iter(), 2));
        assert!(entropy_at_least([1u64].into_iter(), 1));
        assert!(!entropy_at_least([5u64].into_iter(), 2));
        // Large exact ties: 2·10^6 equal halves.
        assert!(entropy_at_least([1_000_000u64, 1_000_000].into_iter(), 2));
        assert!(!entropy_at_least([1_000_001u64, 999_999].into_iter(), 2));
    }

    #[test]
    fn recursive_is_strict() {
        let c = |x| Ratio::from_decimal(x).unwrap();
        // r1 = 6, tail (ℓ = 2) = 3 + 1 = 4: 6 < 2·4 passes, 6 < 1.5·4 fails (equal).
        assert!(recursive([6u64, 3, 1].into_iter(), c(2.0), 2));
        assert!(!recursive([6u64, 3, 1].into_iter(), c(1.5), 2));
        assert!(!recursive([6u64].into_iter(), c(100.0), 2));
        assert!(recursive([1u64, 3, 6].into_iter(), c(1.6), 2));
    }

    #[test]
    fn decimals_are_read_as_written() {
        assert_eq!(Ratio::from_decimal(0.3), Some(Ratio { num: 3, den: 10 }));
        assert_eq!(Ratio::from_decimal(4.0), Some(Ratio { num: 4, den: 1 }));
        assert_eq!(Ratio::from_decimal(0.15), Some(Ratio { num: 15, den: 100 }));
        assert_eq!(Ratio::from_decimal(-1.0), None);
    }

    /// The distances against their definitions on dense vectors (floats), and
    /// the exact boundary.
    #[test]
    fn distances_match_definitions() {
        let reference = vec![0u64, 4, 3, 2, 1]; // codes 1..4, N = 10
        let class = [(2u32, 1u64), (4, 2)]; // n = 3
        let p = [0.0, 0.0, 1.0 / 3.0, 0.0, 2.0 / 3.0];
        let q: Vec<f64> = reference.iter().map(|&x| x as f64 / 10.0).collect();
        let t = |distance| Closeness { t: Ratio { num: 1, den: 1 }, reference: reference.clone(), total: 10, distance };
        let equal: f64 = 0.5 * (1..5).map(|i| (p[i] - q[i]).abs()).sum::<f64>();
        assert!((t(Distance::Equal).distance(&class) - equal).abs() < 1e-12);
        let mut acc = 0.0;
        let mut ordered = 0.0;
        for i in 1..5 {
            acc += p[i] - q[i];
            ordered += f64::abs(acc);
        }
        ordered /= 3.0;
        assert!((t(Distance::ordered(&reference)).distance(&class) - ordered).abs() < 1e-12);
        // Hierarchy: {1,2} under A, {3,4} under B, A and B under the root; H = 2.
        let ancestors = vec![vec![], vec![0, 0], vec![0, 0], vec![1, 0], vec![1, 0]];
        let tree = Distance::hierarchical(&reference, &ancestors, 2);
        // Extras: leaf e = p − q: 1: −.4, 2: 1/3 − .3, 3: −.2, 4: 2/3 − .1.
        let e: [f64; 5] = [0.0, -0.4, 1.0 / 3.0 - 0.3, -0.2, 2.0 / 3.0 - 0.1];
        let (pa, na) = (e[2], -e[1]);
        let (pb, nb) = (e[4], -e[3]);
        let (xa, xb) = (pa - na, pb - nb);
        let root = xa.max(0.0) + xb.max(0.0);
        let root_neg = (-xa).max(0.0) + (-xb).max(0.0);
        let hier = 0.5 * (pa.min(na) + pb.min(nb)) + root.min(root_neg);
        assert!((t(tree.clone()).distance(&class) - hier).abs() < 1e-12, "{} {hier}", t(tree).distance(&class));
        // Exactly at t: equal distance of class {1: 2, 2: 1, 3: 1, 4: 1} … choose one with D = 1/5.
        let class = [(1u32, 2u64), (2, 2), (3, 1)]; // p = .4 .4 .2 0; q = .4 .3 .2 .1: D = ½(.1 + .1) = .1
        let at = |x: f64| Closeness {
            t: Ratio::from_decimal(x).unwrap(),
            reference: reference.clone(),
            total: 10,
            distance: Distance::Equal,
        };
        assert!(at(0.1).admits(&class));
        assert!(!at(0.09).admits(&class));
    }
}
