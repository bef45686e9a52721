//! What every full-domain search returns, the exhaustive reference search, and
//! the scoring of feasible nodes that picks the optimum.

use crate::evaluator::Evaluator;
use crate::job::Metric;
use crate::lattice::{Lattice, Node};
use crate::metrics::{better, Outcome, Requirement};
use anyhow::Result;
use indicatif::ProgressBar;
use std::collections::HashSet;

/// A chosen node and how it fares.
#[derive(Debug, Clone)]
pub struct Found {
    pub levels: Vec<u8>,
    pub outcome: Outcome,
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

/// Score the feasible nodes and pick the best for `metric`.
pub fn score(
    ev: &mut Evaluator,
    lattice: &Lattice,
    mut feasible: Vec<Vec<u8>>,
    req: &Requirement,
    metric: Metric,
    checked: u64,
    progress: &ProgressBar,
) -> Result<SearchResult> {
    feasible.sort_by_key(|l| (l.iter().map(|&x| x as u32).sum::<u32>(), l.clone()));
    progress.set_length(feasible.len() as u64);
    progress.set_position(0);
    progress.set_message("scoring feasible nodes");
    let mut best: Option<Found> = None;
    for levels in &feasible {
        let h = ev.histogram(&Node::full(levels.clone()))?;
        let outcome = h.outcome(levels, req, &ev.data);
        debug_assert!(outcome.feasible);
        let wins = match &best {
            None => true,
            Some(b) => better(metric, (levels, &outcome.metrics), (&b.levels, &b.outcome.metrics)).is_lt(),
        };
        if wins {
            best = Some(Found { levels: levels.clone(), outcome });
        }
        progress.inc(1);
    }
    let set: HashSet<&Vec<u8>> = feasible.iter().collect();
    let minimal = feasible.iter().filter(|l| lattice.down(l).iter().all(|d| !set.contains(d))).count();
    Ok(SearchResult { minimal, best, checked, feasible })
}

/// Evaluate every node of the lattice straight from the base frequency set.
/// The reference the other searches are tested against.
pub fn exhaustive(
    ev: &mut Evaluator,
    lattice: &Lattice,
    req: &Requirement,
    metric: Metric,
    progress: &ProgressBar,
) -> Result<SearchResult> {
    let nodes = lattice.nodes();
    progress.set_length(nodes.len() as u64);
    progress.set_message("evaluating every node");
    let mut feasible = Vec::new();
    for levels in nodes {
        if ev.histogram(&Node::full(levels.clone()))?.feasible(req) {
            feasible.push(levels);
        }
        progress.inc(1);
    }
    let checked = lattice.size();
    score(ev, lattice, feasible, req, metric, checked, progress)
}
