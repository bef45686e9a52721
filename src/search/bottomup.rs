//! Bottom-up branch and bound for dm: the optimum when the requirement prunes
//! nothing under generalization.
//!
//! A node's classes are unions of any specialization's, so their Σ size² only
//! grows upward, and a record suppressed costs the rows, at least its class's
//! size: a node's dm is at least the Σ size² of every class of any
//! specialization, suppressed or not (ARX's lower bound of discernibility).
//! Heights are visited from the bottom; a node with a direct specialization
//! whose Σ size² is above the best dm found, or that was skipped so, is
//! skipped without evaluation (a skipped node's specialization bounds it too).
//!
//! Why: with k = 1 and no distinct ℓ (risk limits, t-closeness, entropy ℓ,
//! δ-presence), nothing makes a node infeasible for all its specializations,
//! and dm has no bound from above: top-down evaluates about every node. The
//! optimum of such jobs sits low in the lattice, where this bound is tight
//! (Adult, k = 1, average risk 0.02: top-down 19.8 s, bottom-up 0.79 s,
//! docs/searches.md).

use super::result::{Found, SearchResult};
use super::Problem;
use crate::evaluator::Evaluator;
use crate::lattice::Node;
use crate::measure::metrics::{same, Histogram};
use crate::options::Metric;
use crate::progress::Progress;
use anyhow::{ensure, Result};
use std::collections::{BTreeMap, HashMap, HashSet};

/// A node's Σ size² over all its classes: a floor under its own dm and every generalization's.
fn floor(h: &Histogram) -> f64 {
    h.buckets.iter().map(|b| (b.classes as u128 * b.size as u128 * b.size as u128) as f64).sum()
}

/// Is `floor` above `best` (beyond the rounding of the two sums)? Ties are
/// kept: a tie goes to fewer levels, which a generalization may still have.
fn beyond(floor: f64, best: f64) -> bool {
    !same(floor, best) && floor > best + 1e-9 * best.abs().max(1.0)
}

/// Sets of one height kept as rollup sources at once, off the memory backend.
const HELD: usize = 16;

/// What the search knows so far.
struct Known {
    /// Evaluated nodes: Σ size² and classes.
    floors: HashMap<Vec<u8>, (f64, u64)>,
    /// Nodes skipped: a specialization's Σ size² is above the best dm.
    skipped: HashSet<Vec<u8>>,
    feasible: Vec<Vec<u8>>,
    best: Option<Found>,
    checked: u64,
}

impl Known {
    fn record(&mut self, p: &Problem, ev: &Evaluator, levels: &[u8], h: &Histogram) {
        if self.floors.contains_key(levels) {
            return;
        }
        let outcome = h.outcome(levels, p.req, &ev.data);
        self.checked += 1;
        self.floors.insert(levels.to_vec(), (floor(h), h.classes()));
        if outcome.feasible {
            self.feasible.push(levels.to_vec());
            Found::keep_better(&mut self.best, p.metric, levels, outcome);
        }
    }

    /// Is every generalization of this direct specialization's beyond the best?
    fn hopeless_under(&self, d: &[u8]) -> bool {
        let Some(best) = self.best.as_ref().map(|b| b.outcome.metrics.dm) else { return false };
        self.skipped.contains(d) || self.floors.get(d).is_some_and(|&(f, _)| beyond(f, best))
    }
}

pub fn search(ev: &mut Evaluator, p: &Problem, progress: &dyn Progress) -> Result<SearchResult> {
    ensure!(p.metric == Metric::Dm && ev.data.persons.is_none(), "the bottom-up search ranks by dm over records");
    let lattice = p.lattice;
    let mut by_height: BTreeMap<u32, Vec<Vec<u8>>> = BTreeMap::new();
    for levels in lattice.nodes() {
        by_height.entry(crate::lattice::height(&levels)).or_default().push(levels);
    }
    progress.start(lattice.size(), "bottom-up search");
    let mut st =
        Known { floors: HashMap::new(), skipped: HashSet::new(), feasible: Vec::new(), best: None, checked: 0 };
    let on_memory = ev.backend() == "memory";
    let mut held_before: Vec<Node> = Vec::new();
    for (height, nodes) in by_height {
        let mut items: Vec<(Node, Option<Node>)> = Vec::new();
        for levels in nodes {
            let below = lattice.down(&levels);
            if below.iter().any(|d| st.hopeless_under(d)) {
                st.skipped.insert(levels);
                continue;
            }
            // From the evaluated direct specialization with the fewest classes.
            let from = below.into_iter().filter_map(|d| st.floors.get(&d).map(|&(_, c)| (c, d))).min();
            items.push((Node::full(levels), from.map(|(_, d)| Node::full(d))));
        }
        // In memory the evaluator holds sets within its byte budget itself;
        // elsewhere each set is a table, and HELD of a height at most are kept.
        let at_once = if on_memory { items.len().max(1) } else { HELD };
        let mut held_now: Vec<(u64, Node)> = Vec::new();
        for part in items.chunks(at_once) {
            let hists = ev.materialize(part)?;
            for ((node, _), h) in part.iter().zip(&hists) {
                st.record(p, ev, &node.levels, h);
                held_now.push((h.classes(), node.clone()));
            }
            if !on_memory {
                held_now.sort();
                held_now.truncate(HELD);
            }
            // The next height rolls up from these; the best's set is kept for the release.
            let best_node = st.best.as_ref().map(|b| Node::full(b.levels.clone()));
            let keep: HashSet<&Node> =
                held_before.iter().chain(held_now.iter().map(|(_, n)| n)).chain(best_node.iter()).collect();
            ev.retain(|n| keep.contains(n))?;
        }
        crate::trace(|| format!("bottom-up: height {height}: {} nodes evaluated", items.len()));
        held_before = held_now.into_iter().map(|(_, n)| n).collect();
        if st.best.is_none() {
            // The least Σ size² of this height, climbed from.
            let lowest = items.iter().map(|(n, _)| n).min_by(|a, b| {
                let f = |n: &Node| st.floors.get(&n.levels).map_or(f64::INFINITY, |&(f, _)| f);
                f(a).total_cmp(&f(b)).then_with(|| a.levels.cmp(&b.levels))
            });
            if let Some(from) = lowest.map(|n| n.levels.clone()) {
                climb(ev, p, &mut st, from, &held_before)?;
            }
        }
        progress.position(st.checked + st.skipped.len() as u64);
    }
    let best_node = st.best.as_ref().map(|b| Node::full(b.levels.clone()));
    ev.retain(|n| Some(n) == best_node.as_ref())?;
    Ok(SearchResult::new(lattice, st.feasible, st.best, st.checked))
}

/// Until a node is feasible: evaluate the direct generalizations of `at`
/// and step to the one of least Σ size², where dm grew least. The bound
/// prunes nothing before a feasible node is known, and the heights under
/// the first feasible one would all be evaluated; a good feasible node
/// found early skips most of them (as ARX's Flash climbs before it sweeps).
fn climb(ev: &mut Evaluator, p: &Problem, st: &mut Known, mut at: Vec<u8>, held: &[Node]) -> Result<()> {
    let before = st.checked;
    while st.best.is_none() {
        let up = p.lattice.up(&at);
        if up.is_empty() {
            break;
        }
        let items: Vec<(Node, Option<Node>)> =
            up.iter().map(|u| (Node::full(u.clone()), Some(Node::full(at.clone())))).collect();
        let hists = ev.materialize(&items)?;
        for (u, h) in up.iter().zip(&hists) {
            st.record(p, ev, u, h);
        }
        let f = |l: &Vec<u8>| st.floors.get(l).map_or(f64::INFINITY, |&(f, _)| f);
        at = up.into_iter().min_by(|a, b| f(a).total_cmp(&f(b)).then_with(|| a.cmp(b))).expect("a generalization");
        let next = Node::full(at.clone());
        let best = st.best.as_ref().map(|b| Node::full(b.levels.clone()));
        ev.retain(|n| *n == next || held.contains(n) || Some(n) == best.as_ref())?;
    }
    crate::trace(|| format!("bottom-up: climbed to {at:?}, {} nodes evaluated", st.checked - before));
    Ok(())
}
