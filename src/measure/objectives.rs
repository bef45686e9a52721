//! Quality indices of a full-domain node for multi-objective fronts (`kanon
//! pareto --objectives`, after Dewri et al.'s PBG-EA): k, ℓ, the spreads sk
//! and sl, and the losses glm, dm, cm; plain dominance, ε-boxes and
//! box-dominance, and the minimal nodes of a set (docs/pareto.md).
//!
//! Suppression is the η rule `pareto` uses throughout: the achieved k is the
//! largest k whose smaller classes hold at most the budget's records, and
//! exactly those are suppressed; every index is measured on what is kept.

use crate::error::bad;
use crate::measure::metrics::{same, Dataset, Histogram, Requirement};
use anyhow::Result;
use std::cmp::Ordering;

/// One index a front can trade off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Objective {
    /// The achieved k.
    K,
    /// The fewest distinct sensitive values in a kept class (NULL is a value).
    L,
    /// Σ over kept records of their class size (Σ |E|² over kept classes).
    Sk,
    /// Σ over kept records of the records of their class sharing their
    /// sensitive value (Σ over kept classes and values of count²).
    Sl,
    Glm,
    Dm,
    Cm,
}

impl Objective {
    pub const ALL: [Objective; 7] =
        [Objective::K, Objective::L, Objective::Sk, Objective::Sl, Objective::Glm, Objective::Dm, Objective::Cm];

    pub fn name(self) -> &'static str {
        match self {
            Objective::K => "k",
            Objective::L => "l",
            Objective::Sk => "sk",
            Objective::Sl => "sl",
            Objective::Glm => "glm",
            Objective::Dm => "dm",
            Objective::Cm => "cm",
        }
    }

    /// k, l, sk and sl are privacy, maximized; the losses are minimized.
    pub fn maximized(self) -> bool {
        matches!(self, Objective::K | Objective::L | Objective::Sk | Objective::Sl)
    }

    /// Needs the sensitive column.
    pub(crate) fn sensitive(self) -> bool {
        matches!(self, Objective::L | Objective::Sl)
    }

    /// `k,l,glm`: two or more distinct objectives (exit 2 otherwise).
    pub(crate) fn parse_list(text: &str) -> Result<Vec<Objective>> {
        let mut out = Vec::new();
        for word in text.split(',').map(str::trim) {
            let o = Objective::ALL.into_iter().find(|o| o.name().eq_ignore_ascii_case(word)).ok_or_else(|| {
                bad(format!("--objectives: unknown objective \"{word}\" (expected k, l, sk, sl, glm, dm or cm)"))
            })?;
            if out.contains(&o) {
                return Err(bad(format!("--objectives: \"{word}\" is given twice")));
            }
            out.push(o);
        }
        if out.len() < 2 {
            return Err(bad("--objectives needs two or more of k, l, sk, sl, glm, dm, cm"));
        }
        Ok(out)
    }
}

/// A node with its requested objective values (in the requested order).
#[derive(Debug, Clone, PartialEq)]
pub struct Scored {
    pub levels: Vec<u8>,
    pub values: Vec<f64>,
    pub suppressed: u64,
}

/// The requested objectives of a node from its histogram under `budget`.
pub fn score(h: &Histogram, levels: &[u8], budget: u64, data: &Dataset, objectives: &[Objective]) -> Scored {
    let k = h.achieved_k(budget);
    let o = h.outcome(levels, &Requirement { k, l: None, budget, risk: None }, data);
    let kept = || h.buckets.iter().filter(|b| b.admitted && b.size >= k);
    let values = objectives
        .iter()
        .map(|obj| match obj {
            Objective::K => k as f64,
            Objective::L => kept().map(|b| b.ldiv).min().unwrap_or(0) as f64,
            Objective::Sk => kept().map(|b| b.classes as f64 * (b.size * b.size) as f64).sum(),
            Objective::Sl => kept().map(|b| b.squares as f64).sum(),
            Objective::Glm => o.metrics.glm,
            Objective::Dm => o.metrics.dm,
            Objective::Cm => o.metrics.cm.unwrap_or(f64::NAN),
        })
        .collect();
    Scored { levels: levels.to_vec(), values, suppressed: o.suppressed }
}

/// Compare one objective's values, better first (Less: `a` is better).
/// Values equal up to rounding are equal (sums may be added in other orders).
fn better(o: Objective, a: f64, b: f64) -> Ordering {
    if same(a, b) {
        return Ordering::Equal;
    }
    let c = a.partial_cmp(&b).unwrap_or(Ordering::Equal);
    if o.maximized() {
        c.reverse()
    } else {
        c
    }
}

/// Whether `a` dominates `b`: no worse in every objective, better in one.
pub(crate) fn dominates(objectives: &[Objective], a: &[f64], b: &[f64]) -> bool {
    let mut strictly = false;
    for ((&o, &x), &y) in objectives.iter().zip(a).zip(b) {
        match better(o, x, y) {
            Ordering::Greater => return false,
            Ordering::Less => strictly = true,
            Ordering::Equal => {}
        }
    }
    strictly
}

/// A node's ε-box: floor(value / ε) per objective.
pub fn boxed(values: &[f64], epsilon: &[f64]) -> Vec<i64> {
    values.iter().zip(epsilon).map(|(&v, &e)| (v / e).floor() as i64).collect()
}

/// Whether box `a` dominates box `b` (same directions as the objectives).
pub(crate) fn box_dominates(objectives: &[Objective], a: &[i64], b: &[i64]) -> bool {
    let mut strictly = false;
    for ((&o, &x), &y) in objectives.iter().zip(a).zip(b) {
        let c = if o.maximized() { y.cmp(&x) } else { x.cmp(&y) };
        match c {
            Ordering::Greater => return false,
            Ordering::Less => strictly = true,
            Ordering::Equal => {}
        }
    }
    strictly
}

/// ε-box dominance: by the boxes when they differ, else plain dominance.
pub fn eps_dominates(objectives: &[Objective], epsilon: &[f64], a: &[f64], b: &[f64]) -> bool {
    let (ba, bb) = (boxed(a, epsilon), boxed(b, epsilon));
    if ba != bb {
        box_dominates(objectives, &ba, &bb)
    } else {
        dominates(objectives, a, b)
    }
}

/// The members of `all` no other member dominates (equal vectors all kept),
/// in the order given.
pub(crate) fn minimal(objectives: &[Objective], all: &[Scored]) -> Vec<Scored> {
    all.iter().filter(|p| !all.iter().any(|q| dominates(objectives, &q.values, &p.values))).cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::metrics::Bucket;

    fn bucket(size: u64, classes: u64, ldiv: u64, squares: u64) -> Bucket {
        Bucket {
            size,
            ldiv,
            admitted: true,
            classes,
            leaf_sums: vec![0],
            minority: 0,
            squares,
            rows: None,
            shape: None,
        }
    }

    #[test]
    fn indices_follow_the_definitions() {
        // Classes: one of 1 (ldiv 1), two of 3 (ldiv 2, squares 5 each), one of 4 (ldiv 1, 16).
        let h = Histogram { buckets: vec![bucket(1, 1, 1, 1), bucket(3, 2, 2, 10), bucket(4, 1, 1, 16)] };
        let data = Dataset { rows: 11, heights: vec![1], leaves: vec![2], label: false, persons: None };
        let all = [Objective::K, Objective::L, Objective::Sk, Objective::Sl, Objective::Dm];
        // Budget 1: the class of 1 is suppressed, k = 3.
        let s = score(&h, &[0], 1, &data, &all);
        assert_eq!(s.values, vec![3.0, 1.0, 2.0 * 9.0 + 16.0, 26.0, 2.0 * 9.0 + 16.0 + 11.0]);
        assert_eq!(s.suppressed, 1);
        // Budget 0: nothing suppressed, k = 1.
        let s = score(&h, &[0], 0, &data, &all);
        assert_eq!(s.values, vec![1.0, 1.0, 1.0 + 18.0 + 16.0, 27.0, 35.0]);
    }

    #[test]
    fn dominance_and_boxes_follow_the_directions() {
        let o = [Objective::K, Objective::Glm];
        assert!(dominates(&o, &[5.0, 10.0], &[4.0, 10.0]));
        assert!(dominates(&o, &[5.0, 9.0], &[5.0, 10.0]));
        assert!(!dominates(&o, &[5.0, 10.0], &[5.0, 10.0]));
        assert!(!dominates(&o, &[6.0, 11.0], &[5.0, 10.0]));
        // Boxes of width 2 and 10: (5, 10) and (4, 19) share box (2, 1); plain dominance decides.
        let eps = [2.0, 10.0];
        assert_eq!(boxed(&[5.0, 10.0], &eps), boxed(&[4.0, 19.0], &eps));
        assert!(eps_dominates(&o, &eps, &[5.0, 10.0], &[4.0, 19.0]));
        assert!(!eps_dominates(&o, &eps, &[4.0, 10.0], &[5.0, 19.0]));
        // Different boxes: (7, 10) is in box (3, 1), which dominates (2, 2) of (5, 20).
        assert!(eps_dominates(&o, &eps, &[7.0, 10.0], &[5.0, 20.0]));
        assert!(!eps_dominates(&o, &eps, &[7.0, 20.0], &[5.0, 10.0]));
        let all = vec![
            Scored { levels: vec![0], values: vec![1.0, 0.0], suppressed: 0 },
            Scored { levels: vec![1], values: vec![2.0, 5.0], suppressed: 0 },
            Scored { levels: vec![2], values: vec![2.0, 5.0], suppressed: 0 },
            Scored { levels: vec![3], values: vec![1.0, 5.0], suppressed: 0 },
        ];
        let m: Vec<u8> = minimal(&o, &all).iter().map(|s| s.levels[0]).collect();
        assert_eq!(m, vec![0, 1, 2]);
    }
}
