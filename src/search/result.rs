//! What every full-domain search returns, and the scoring of feasible nodes
//! that picks the optimum.

use crate::evaluator::Evaluator;
use crate::lattice::{Lattice, Node};
use crate::measure::metrics::{better, Histogram, Outcome, Requirement};
use crate::options::Metric;
use crate::progress::Progress;
use anyhow::Result;
use std::collections::HashSet;

/// A chosen node and how it fares.
#[derive(Debug, Clone)]
pub struct Found {
    pub levels: Vec<u8>,
    pub outcome: Outcome,
}

impl Found {
    /// Replace `best` with this node when it is better for `metric` (ties: see [`better`]).
    pub(crate) fn keep_better(best: &mut Option<Found>, metric: Metric, levels: &[u8], outcome: Outcome) {
        let wins = match best {
            None => true,
            Some(b) => better(metric, (levels, &outcome.metrics), (&b.levels, &b.outcome.metrics)).is_lt(),
        };
        if wins {
            *best = Some(Found { levels: levels.to_vec(), outcome });
        }
    }
}

#[derive(Debug, Clone)]
pub struct SearchResult {
    /// Every feasible full node, in lattice order (height, then lexicographic).
    pub feasible: Vec<Vec<u8>>,
    /// Feasible nodes with no feasible direct specialization.
    pub minimal: usize,
    pub best: Option<Found>,
    /// Nodes whose feasibility the search checked explicitly.
    pub checked: u64,
}

impl SearchResult {
    /// The result for these feasible nodes (any order): sorted, minimal ones counted.
    pub(crate) fn new(
        lattice: &Lattice,
        mut feasible: Vec<Vec<u8>>,
        best: Option<Found>,
        checked: u64,
    ) -> SearchResult {
        crate::lattice::sort(&mut feasible);
        let set: HashSet<&Vec<u8>> = feasible.iter().collect();
        let minimal = feasible.iter().filter(|l| lattice.down(l).iter().all(|d| !set.contains(d))).count();
        SearchResult { minimal, best, checked, feasible }
    }
}

/// Score the candidate nodes, keep the feasible ones and pick the best for `metric`.
pub fn score(
    ev: &mut Evaluator,
    lattice: &Lattice,
    mut candidates: Vec<Vec<u8>>,
    req: &Requirement,
    metric: Metric,
    checked: u64,
    progress: &dyn Progress,
) -> Result<SearchResult> {
    crate::lattice::sort(&mut candidates);
    progress.start(candidates.len() as u64, "scoring feasible nodes");
    let mut best: Option<Found> = None;
    let hists = evaluate_upward(ev, lattice, &candidates)?;
    // Candidates the search could not rule out by monotonicity alone (with
    // per-class models) are judged here.
    let mut kept = Vec::with_capacity(candidates.len());
    for (levels, h) in candidates.into_iter().zip(hists) {
        let outcome = h.outcome(&levels, req, &ev.data);
        progress.advance(1);
        if outcome.feasible {
            Found::keep_better(&mut best, metric, &levels, outcome);
            kept.push(levels);
        }
    }
    Ok(SearchResult::new(lattice, kept, best, checked))
}

/// Histograms of `nodes` (full, sorted by height), each rolled up from a node
/// of the set one level below it when there is one, else from the base.
pub fn evaluate_upward(ev: &mut Evaluator, lattice: &Lattice, nodes: &[Vec<u8>]) -> Result<Vec<Histogram>> {
    let mut out = Vec::with_capacity(nodes.len());
    let height = |l: &Vec<u8>| crate::lattice::height(l);
    let mut below: HashSet<Vec<u8>> = HashSet::new();
    for batch in nodes.chunk_by(|a, b| height(a) == height(b)) {
        let items: Vec<(Node, Option<Node>)> = batch
            .iter()
            .map(|l| {
                let parent = lattice.down(l).into_iter().find(|d| below.contains(d)).map(Node::full);
                (Node::full(l.clone()), parent)
            })
            .collect();
        out.extend(ev.materialize(&items)?);
        let this: HashSet<Node> = items.into_iter().map(|(n, _)| n).collect();
        ev.retain(|n| this.contains(n))?;
        below = batch.iter().cloned().collect();
    }
    ev.forget_all()?;
    Ok(out)
}
