//! Pareto fronts of k against information loss: a node's point (its k under
//! the suppression budget, its loss), dominance, the front of a set of points,
//! and a found front against the true one. POkA ([`super::poka`]) and the
//! exact search ([`super::exact_front`]) return these.

use crate::evaluator::Evaluator;
use crate::lattice::Node;
use crate::measure::metrics::{same, Metrics, Requirement};
use crate::options::Metric;
use anyhow::Result;
use std::cmp::Ordering;

/// A node with its k under the budget and its loss.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub levels: Vec<u8>,
    pub k: u64,
    /// At least k here and at every specialization ([`crate::measure::metrics::Histogram::k_bound`]).
    pub(crate) k_below: u64,
    /// At most k here and at every generalization: k without per-class
    /// models (classes only merge); 0 with them, which may reject a merged
    /// class whose parts they accept.
    pub(crate) k_above: u64,
    pub suppressed: u64,
    pub(crate) metrics: Metrics,
    /// The chosen metric's value.
    pub loss: f64,
    /// The chosen metric with nothing suppressed: a lower bound on the loss of
    /// this node and of every generalization (see `Bounds`).
    pub floor: f64,
    /// For glm and height, whose loss with nothing suppressed is a sum over
    /// the QIs of a term that depends only on that QI's level: the terms, in
    /// QI order (empty for other metrics).
    pub per_qi: Vec<f64>,
}

/// Evaluate full nodes into points (one batch query for those not cached).
pub fn points(ev: &mut Evaluator, nodes: &[Vec<u8>], budget: u64, metric: Metric) -> Result<Vec<Point>> {
    let full: Vec<Node> = nodes.iter().map(|l| Node::full(l.clone())).collect();
    let hists = ev.histograms(&full)?;
    let monotone = !ev.class_models();
    Ok(nodes
        .iter()
        .zip(hists)
        .map(|(levels, h)| {
            let k = h.achieved_k(budget);
            let o = h.outcome(levels, &Requirement { k, l: None, budget, risk: None }, &ev.data);
            // Nothing suppressed: every class kept, those the per-class models reject too.
            let mut all = h.clone();
            all.buckets.iter_mut().for_each(|b| b.admitted = true);
            let floor =
                all.outcome(levels, &Requirement { k: 1, l: None, budget, risk: None }, &ev.data).metrics.get(metric);
            let per_qi = match metric {
                // As in Histogram::outcome with every bucket kept, one QI at a time.
                Metric::Glm => (ev.data.leaves.iter().enumerate())
                    .map(|(a, &leaves)| {
                        let sum: u64 = h.buckets.iter().map(|b| b.leaf_sums[a]).sum();
                        if leaves > 1 {
                            sum as f64 / (leaves - 1) as f64
                        } else {
                            0.0
                        }
                    })
                    .collect(),
                Metric::Height => levels.iter().map(|&l| l as f64).collect(),
                _ => Vec::new(),
            };
            Point {
                levels: levels.clone(),
                k,
                k_below: h.k_bound(budget),
                k_above: if monotone { k } else { 0 },
                suppressed: o.suppressed,
                metrics: o.metrics,
                loss: o.metrics.get(metric),
                floor: if floor.is_nan() { f64::NEG_INFINITY } else { floor },
                per_qi,
            }
        })
        .collect())
}

/// Does `a` dominate `b`: at least the k for less loss, or more k for no more loss?
pub(crate) fn dominates(a: &Point, b: &Point) -> bool {
    let less = a.loss < b.loss && !same(a.loss, b.loss);
    let no_more = a.loss <= b.loss || same(a.loss, b.loss);
    (a.k >= b.k && less) || (a.k > b.k && no_more)
}

/// Preference between two candidates for the next front node: higher k, then
/// lower loss, then lower sum of levels, then the smaller level vector.
pub(crate) fn preferred(a: &Point, b: &Point) -> Ordering {
    let loss =
        if same(a.loss, b.loss) { Ordering::Equal } else { a.loss.partial_cmp(&b.loss).unwrap_or(Ordering::Equal) };
    let sum = |p: &Point| p.levels.iter().map(|&l| l as u32).sum::<u32>();
    b.k.cmp(&a.k).then(loss).then(sum(a).cmp(&sum(b))).then(a.levels.cmp(&b.levels))
}

pub(crate) fn pick(best: Option<Point>, q: Option<Point>) -> Option<Point> {
    match (best, q) {
        (Some(b), Some(q)) => Some(if preferred(&q, &b).is_lt() { q } else { b }),
        (b, q) => b.or(q),
    }
}

/// The true front of a set of points: the non-dominated ones, one per (k, loss)
/// (the preferred node), by k descending.
pub fn front(all: &[Point]) -> Vec<Point> {
    // k = 0: the per-class models reject more than the budget at every k; no release.
    let mut sorted: Vec<&Point> = all.iter().filter(|p| p.k > 0).collect();
    sorted.sort_by(|a, b| preferred(a, b));
    let mut out: Vec<Point> = Vec::new();
    for p in sorted {
        // Sorted by k descending, then loss: p is dominated iff some earlier point has no more loss.
        if out.iter().any(|q| dominates(q, p) || (q.k == p.k && same(q.loss, p.loss))) {
            continue;
        }
        out.push(p.clone());
    }
    out
}

/// POkA's front against the true one.
#[derive(Debug, Clone)]
pub struct PokaComparison {
    pub(crate) true_front: Vec<Point>,
    /// True front points (k, loss) that POkA found.
    pub found: usize,
    pub recall: f64,
    /// Reported nodes that some true front node dominates.
    pub dominated_reported: Vec<Point>,
    /// True front points POkA missed.
    pub missed: Vec<Point>,
}

pub fn compare(found: &[Point], truth: Vec<Point>) -> PokaComparison {
    let hit = |t: &Point| found.iter().any(|f| f.k == t.k && same(f.loss, t.loss));
    let missed: Vec<Point> = truth.iter().filter(|t| !hit(t)).cloned().collect();
    let n_found = truth.len() - missed.len();
    let dominated_reported = found.iter().filter(|f| truth.iter().any(|t| dominates(t, f))).cloned().collect();
    PokaComparison {
        recall: if truth.is_empty() { 1.0 } else { n_found as f64 / truth.len() as f64 },
        found: n_found,
        true_front: truth,
        dominated_reported,
        missed,
    }
}

/// A point with only levels, k and loss set, for the front tests.
#[cfg(test)]
pub(crate) fn pt(levels: &[u8], k: u64, loss: f64) -> Point {
    let metrics = Metrics { glm: loss, glm_normalized: 0.0, dm: 0.0, precision: 0.0, height: 0.0, cm: None };
    Point {
        levels: levels.to_vec(),
        k,
        k_below: k,
        k_above: k,
        suppressed: 0,
        metrics,
        loss,
        floor: loss,
        per_qi: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_keeps_non_dominated_points_once() {
        let all = vec![
            pt(&[2, 2], 100, 10.0),
            pt(&[2, 1], 50, 6.0),
            pt(&[1, 2], 50, 6.0), // same point as [2,1]: one representative
            pt(&[1, 1], 40, 7.0), // dominated by [2,1]
            pt(&[0, 1], 5, 2.0),
            pt(&[1, 0], 5, 3.0), // dominated
            pt(&[0, 0], 1, 0.0),
        ];
        let f = front(&all);
        let ks: Vec<(u64, Vec<u8>)> = f.iter().map(|p| (p.k, p.levels.clone())).collect();
        assert_eq!(ks, vec![(100, vec![2, 2]), (50, vec![1, 2]), (5, vec![0, 1]), (1, vec![0, 0])]);
        assert!(dominates(&all[1], &all[3]));
        assert!(!dominates(&all[1], &all[2]));
    }
}
