//! Top-down branch and bound: the optimal feasible node without first
//! enumerating every feasible one.
//!
//! Heights are visited from the top of the lattice down. A node with an
//! infeasible direct generalization is infeasible (feasibility is monotone,
//! with suppression and ℓ too) and is never evaluated. A node whose best
//! possible loss is worse than the best feasible node found so far is skipped.
//! For glm that bound is the loss with nothing suppressed, a sum of per-QI
//! terms read off the QI marginals (a suppressed record costs the most); for
//! precision and height the loss does not depend on the data; dm and cm have
//! no bound here, so every node not known infeasible is evaluated.
//!
//! Why: near the bottom of the lattice frequency sets are as large as the
//! source, and an Incognito check costs about one pass over them. Top-down,
//! the evaluated nodes are the high ones (few classes); everything below an
//! infeasible node is settled without touching the data.

use crate::evaluator::Evaluator;
use crate::hierarchy::node_table;
use crate::job::Metric;
use crate::lattice::{Lattice, Node};
use crate::metrics::{better, same, Requirement};
use crate::search::{Found, SearchResult};
use crate::sql::{self, render};
use anyhow::Result;
use duckdb::Connection;
use indicatif::ProgressBar;
use std::collections::{BTreeMap, HashSet};

/// The best value of `metric` a node could reach, per node, when there is one.
struct Bound {
    metric: Metric,
    /// glm: per QI and level, the QI's share with nothing suppressed.
    glm: Vec<Vec<f64>>,
    heights: Vec<u8>,
}

impl Bound {
    fn new(conn: &Connection, ev: &Evaluator, metric: Metric) -> Result<Bound> {
        let n = ev.data.heights.len();
        let mut glm = vec![Vec::new(); n];
        if metric == Metric::Glm {
            for (a, per_level) in glm.iter_mut().enumerate() {
                let q = render(sql::SEARCH_BOUNDS, &[("a", &a.to_string()), ("nodes", &node_table(a))]);
                let mut stmt = conn.prepare(&q)?;
                let rows = stmt.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, f64>(1)?)))?;
                let leaves = ev.data.leaves[a];
                for row in rows {
                    let (_, cost) = row?;
                    per_level.push(if leaves > 1 { cost / (leaves - 1) as f64 } else { 0.0 });
                }
            }
        }
        Ok(Bound { metric, glm, heights: ev.data.heights.clone() })
    }

    /// The best value `metric` can take at `levels` (lower is better except for precision).
    fn best_possible(&self, levels: &[u8]) -> Option<f64> {
        match self.metric {
            Metric::Glm => {
                Some(levels.iter().enumerate().map(|(a, &l)| self.glm[a].get(l as usize).copied().unwrap_or(0.0)).sum())
            }
            Metric::Height => Some(levels.iter().map(|&l| l as f64).sum()),
            Metric::Precision => {
                let n = levels.len().max(1) as f64;
                let used: f64 = levels
                    .iter()
                    .zip(&self.heights)
                    .map(|(&l, &h)| if h == 0 { 0.0 } else { l as f64 / h as f64 })
                    .sum();
                Some(1.0 - used / n)
            }
            Metric::Dm | Metric::Cm => None,
        }
    }

    /// Can a node whose best possible value is `bound` not beat or tie `best`?
    fn hopeless(&self, bound: f64, best: f64) -> bool {
        if same(bound, best) {
            return false;
        }
        // A margin for the different summation orders of the bound and the exact loss.
        let slack = 1e-9 * best.abs().max(1.0);
        match self.metric {
            Metric::Precision => bound < best - slack,
            _ => bound > best + slack,
        }
    }
}

pub fn search(
    conn: &Connection,
    ev: &mut Evaluator,
    lattice: &Lattice,
    req: &Requirement,
    metric: Metric,
    progress: &ProgressBar,
) -> Result<SearchResult> {
    let bound = Bound::new(conn, ev, metric)?;
    let mut by_height: BTreeMap<u32, Vec<Vec<u8>>> = BTreeMap::new();
    for levels in lattice.nodes() {
        by_height.entry(levels.iter().map(|&l| l as u32).sum()).or_default().push(levels);
    }
    progress.set_length(lattice.size());
    progress.set_message("top-down search");
    let mut infeasible: HashSet<Vec<u8>> = HashSet::new();
    let mut feasible: Vec<Vec<u8>> = Vec::new();
    let mut best: Option<Found> = None;
    let mut checked = 0u64;
    for (_, nodes) in by_height.into_iter().rev() {
        let mut batch = Vec::new();
        for levels in nodes {
            if lattice.up(&levels).iter().any(|u| infeasible.contains(u)) {
                infeasible.insert(levels);
                continue;
            }
            let hopeless = match (&best, bound.best_possible(&levels)) {
                (Some(b), Some(x)) => bound.hopeless(x, b.outcome.metrics.get(metric)),
                _ => false,
            };
            if !hopeless {
                batch.push(levels);
            }
        }
        let full: Vec<Node> = batch.iter().map(|l| Node::full(l.clone())).collect();
        let hists = ev.histograms(&full)?;
        checked += batch.len() as u64;
        for (levels, h) in batch.into_iter().zip(hists) {
            let outcome = h.outcome(&levels, req, &ev.data);
            if !outcome.feasible {
                infeasible.insert(levels);
                continue;
            }
            let wins = match &best {
                None => true,
                Some(b) => better(metric, (&levels, &outcome.metrics), (&b.levels, &b.outcome.metrics)).is_lt(),
            };
            if wins {
                best = Some(Found { levels: levels.clone(), outcome });
            }
            feasible.push(levels);
        }
        progress.set_position(checked);
    }
    feasible.sort_by_key(|l| (l.iter().map(|&x| x as u32).sum::<u32>(), l.clone()));
    let set: HashSet<&Vec<u8>> = feasible.iter().collect();
    let minimal = feasible.iter().filter(|l| lattice.down(l).iter().all(|d| !set.contains(d))).count();
    Ok(SearchResult { minimal, best, checked, feasible })
}
