//! The true Pareto front of k against loss, by bounds: every node is either
//! evaluated or shown, without evaluation, to be dominated by a node that was
//! (or to tie one that wins the tie-break), so what is returned equals the
//! front of an exhaustive evaluation.
//!
//! Heights are swept from the top of the lattice down, a height at a time (one
//! batch). For a node X not evaluated:
//! - k(X) ≤ kU(X), the least k bound of X's direct generalizations
//!   (evaluated, or bounded the same way): k never falls under generalization,
//!   with suppression too (classes only merge, so the records in classes below
//!   any size only shrink). With per-class models (entropy or recursive ℓ,
//!   t-closeness) k may rise under specialization, as a class they reject
//!   splits into pieces they accept; the bound is then
//!   [`crate::measure::metrics::Histogram::k_bound`], which counts one record per
//!   rejected class (docs/searches.md, "Per-class models and suppression").
//! - loss(X) ≥ lL(X), the largest of the lower bounds that hold with
//!   suppression: the loss with nothing suppressed of every evaluated
//!   specialization (a kept record only costs more as classes merge, and a
//!   suppressed record costs the most a record can); for glm and height that
//!   loss of X itself, a sum of per-QI terms known before the search; for dm,
//!   a direct generalization's Σ|E|² divided by the most pieces one of its
//!   classes can split into one level down (Σ over pieces of |p|² ≥ |E|²/pieces).
//! - X is dominated when an evaluated node has k ≥ kU(X) and loss < lL(X), or
//!   k > kU(X) and loss ≤ lL(X); when it has exactly kU(X) and lL(X), X at best
//!   ties it, and is left out if that node wins the tie (fewer levels, then
//!   the smaller level vector).

use super::front::{front, points, Point};
use crate::evaluator::Evaluator;
use crate::lattice::Lattice;
use crate::measure::metrics::same;
use crate::options::Metric;
use anyhow::Result;
use std::collections::HashMap;

/// Nodes evaluated per batch within a height: small enough that what a batch
/// finds excludes much of the rest, large enough to keep both cores busy.
const CHUNK: usize = 32;

/// The exact front, and how many nodes it took.
#[derive(Debug, Clone)]
pub struct ExactFront {
    pub front: Vec<Point>,
    /// Nodes shown dominated without evaluation.
    pub excluded: u64,
}

/// Does the tie-break prefer levels `a` to `b` (fewer levels in total, then
/// the lexicographically smaller vector)? As in [`super::front::front`].
fn wins_tie(a: &[u8], b: &[u8]) -> bool {
    let sum = |l: &[u8]| l.iter().map(|&v| v as u32).sum::<u32>();
    (sum(a), a) < (sum(b), b)
}

/// Can a node with k ≤ `k_up` and loss ≥ `loss_low` be left out, given the
/// front so far? (See the module notes for the three cases.)
fn excluded(front: &[Point], k_up: u64, loss_low: f64, levels: &[u8]) -> bool {
    front.iter().any(|p| {
        let tie = same(p.loss, loss_low);
        (p.k >= k_up && p.loss < loss_low && !tie)
            || (p.k > k_up && (p.loss <= loss_low || tie))
            || (p.k == k_up && tie && wins_tie(&p.levels, levels))
    })
}

pub fn exact_front(ev: &mut Evaluator, lattice: &Lattice, budget: u64, metric: Metric) -> Result<ExactFront> {
    let stats = ev.level_stats()?;
    // glm and height: the loss with nothing suppressed, per QI and level (before any evaluation).
    let separable: Option<Vec<Vec<f64>>> = match metric {
        Metric::Glm => Some(
            stats
                .iter()
                .zip(&ev.data.leaves)
                .map(|(levels, &leaves)| {
                    levels.iter().map(|s| if leaves > 1 { s.leaf_cost / (leaves - 1) as f64 } else { 0.0 }).collect()
                })
                .collect(),
        ),
        Metric::Height => Some(lattice.heights.iter().map(|&h| (0..=h).map(|l| l as f64).collect()).collect()),
        _ => None,
    };
    let fanout: Vec<Vec<u64>> = stats.iter().map(|levels| levels.iter().map(|s| s.fanout).collect()).collect();

    let mut by_height: Vec<Vec<Vec<u8>>> = Vec::new();
    for levels in lattice.nodes() {
        let h = crate::lattice::height(&levels) as usize;
        by_height.resize(by_height.len().max(h + 1), Vec::new());
        by_height[h].push(levels);
    }
    // Evaluated points, and per node: the upper bound on k and, for dm, on
    // Σ|E|² with nothing suppressed from above.
    let mut known: HashMap<Vec<u8>, Point> = HashMap::new();
    let mut k_up: HashMap<Vec<u8>, u64> = HashMap::new();
    let mut dm_low: HashMap<Vec<u8>, f64> = HashMap::new();
    // The loss with nothing suppressed of evaluated nodes, propagated up: a lower bound there.
    let mut floor_up: HashMap<Vec<u8>, f64> = HashMap::new();
    let mut current: Vec<Point> = Vec::new();
    let mut excluded_count = 0u64;

    let add = |pts: Vec<Point>,
               known: &mut HashMap<Vec<u8>, Point>,
               floor_up: &mut HashMap<Vec<u8>, f64>,
               current: &mut Vec<Point>| {
        for p in pts {
            let mut stack = vec![p.levels.clone()];
            while let Some(x) = stack.pop() {
                if floor_up.get(&x).is_some_and(|&f| f >= p.floor) {
                    continue;
                }
                stack.extend(lattice.up(&x));
                floor_up.insert(x, p.floor);
            }
            current.push(p.clone());
            known.insert(p.levels.clone(), p);
        }
        *current = front(current);
    };

    // The bottom node bounds every loss from below; the top has the largest k.
    let bottom = vec![0u8; lattice.heights.len()];
    let first = points(ev, &[lattice.top(), bottom.clone()], budget, metric)?;
    add(first, &mut known, &mut floor_up, &mut current);

    for nodes in by_height.iter().rev() {
        // Bound every node of this height first (its bounds come from the heights above).
        let mut bounded: Vec<(u64, f64, &Vec<u8>)> = Vec::new();
        for levels in nodes {
            if known.contains_key(levels) {
                continue;
            }
            let ups = lattice.up(levels);
            let ku = ups.iter().map(|u| known.get(u).map_or_else(|| k_up[u], |p| p.k_below)).min().unwrap_or(u64::MAX);
            k_up.insert(levels.clone(), ku);
            let mut low = floor_up.get(levels).copied().unwrap_or(f64::NEG_INFINITY);
            if let Some(terms) = &separable {
                low = low.max(levels.iter().enumerate().map(|(a, &l)| terms[a][l as usize]).sum());
            }
            if metric == Metric::Dm {
                // From each direct generalization: its Σ|E|² over the pieces one class can split into.
                let from_above = ups
                    .iter()
                    .map(|u| {
                        let a = (0..u.len()).find(|&a| u[a] != levels[a]).expect("a generalization differs");
                        let above = known.get(u).map_or_else(|| dm_low[u], |p| p.floor);
                        above / fanout[a][u[a] as usize].max(1) as f64
                    })
                    .fold(f64::NEG_INFINITY, f64::max);
                dm_low.insert(levels.clone(), from_above);
                low = low.max(from_above);
            }
            bounded.push((ku, low, levels));
        }
        // The most promising first (highest k, then least loss), in small
        // batches, so the points they add can exclude the rest of the height.
        bounded.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.total_cmp(&b.1)).then(a.2.cmp(b.2)));
        for chunk in bounded.chunks(CHUNK) {
            let batch: Vec<Vec<u8>> = chunk
                .iter()
                .filter(|(ku, low, levels)| {
                    let out = excluded(&current, *ku, *low, levels);
                    excluded_count += out as u64;
                    !out
                })
                .map(|(_, _, levels)| (*levels).clone())
                .collect();
            let pts = points(ev, &batch, budget, metric)?;
            add(pts, &mut known, &mut floor_up, &mut current);
        }
    }
    // The front of the evaluated points, by k descending.
    Ok(ExactFront { front: current, excluded: excluded_count })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::front::pt;

    #[test]
    fn a_node_is_left_out_only_when_dominated_or_losing_a_tie() {
        let front = vec![pt(&[1, 1], 10, 5.0)];
        // k at most 10 and loss at least 6: dominated.
        assert!(excluded(&front, 10, 6.0, &[0, 2]));
        // k at most 9 and loss at least 5: dominated (less k, no less loss).
        assert!(excluded(&front, 9, 5.0, &[0, 2]));
        // k may reach 11: not dominated.
        assert!(!excluded(&front, 11, 6.0, &[0, 2]));
        // Loss may be 4: not dominated.
        assert!(!excluded(&front, 10, 4.0, &[0, 2]));
        // Exactly (10, 5): a tie; [1, 1] wins against [0, 3] (fewer levels), not against [0, 1].
        assert!(excluded(&front, 10, 5.0, &[0, 3]));
        assert!(!excluded(&front, 10, 5.0, &[0, 1]));
        // [0, 2] has as many levels and is lexicographically smaller: it would win.
        assert!(!excluded(&front, 10, 5.0, &[0, 2]));
    }
}
