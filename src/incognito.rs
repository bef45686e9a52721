//! Incognito (LeFevre, DeWitt, Ramakrishnan, SIGMOD 2005): all feasible
//! full-domain generalizations, sound and complete.
//!
//! Iteration i searches the candidate graph of i-QI subsets (built in SQL from
//! iteration i−1's survivors, see [`crate::candidates`]) breadth-first and
//! bottom-up. A feasible node marks its direct generalizations feasible without
//! checking them; an infeasible node keeps its frequency set so the nodes above
//! it roll up from it. Feasibility (suppression within budget, ℓ) is monotone
//! under generalization and under projection to fewer QIs, so the apriori
//! pruning stays sound with suppression and ℓ-diversity.

use crate::candidates;
use crate::evaluator::Evaluator;
use crate::job::Metric;
use crate::lattice::Lattice;
use crate::metrics::Requirement;
use crate::search::{score, SearchResult};
use anyhow::Result;
use duckdb::Connection;
use indicatif::ProgressBar;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};

pub fn search(
    conn: &Connection,
    ev: &mut Evaluator,
    lattice: &Lattice,
    req: &Requirement,
    metric: Metric,
    progress: &ProgressBar,
) -> Result<SearchResult> {
    let n = lattice.heights.len();
    let mut checked = 0u64;
    let mut graph = candidates::first(conn, &lattice.heights)?;
    for i in 1..=n {
        if i > 1 {
            graph = candidates::next(conn, i)?;
        }
        progress.set_message(format!("Incognito: {i}-QI subsets, {} candidates", graph.nodes.len()));
        let nodes: HashMap<i32, &crate::lattice::Node> = graph.nodes.iter().map(|(id, n)| (*id, n)).collect();
        let mut up: HashMap<i32, Vec<i32>> = HashMap::new();
        let mut has_in: HashSet<i32> = HashSet::new();
        for &(s, e) in &graph.edges {
            up.entry(s).or_default().push(e);
            has_in.insert(e);
        }
        // Breadth-first by height; each queued node remembers an infeasible
        // specialization to roll up from.
        let mut queue: BinaryHeap<Reverse<(u32, i32)>> = BinaryHeap::new();
        let mut rollup_from: HashMap<i32, i32> = HashMap::new();
        for (id, node) in &graph.nodes {
            if !has_in.contains(id) {
                queue.push(Reverse((node.height(), *id)));
            }
        }
        let mut marked: HashSet<i32> = HashSet::new();
        let mut visited: HashSet<i32> = HashSet::new();
        let mut failed: Vec<i32> = Vec::new();
        while let Some(Reverse((_, id))) = queue.pop() {
            if marked.contains(&id) || !visited.insert(id) {
                continue;
            }
            let node = nodes[&id];
            let parent = rollup_from.get(&id).map(|p| nodes[p]);
            let h = ev.materialize(node, parent)?;
            checked += 1;
            progress.tick();
            let generalizations = up.get(&id).cloned().unwrap_or_default();
            if h.feasible(req) {
                marked.extend(generalizations);
                ev.forget(node)?;
            } else {
                failed.push(id);
                for g in generalizations {
                    rollup_from.entry(g).or_insert(id);
                    queue.push(Reverse((nodes[&g].height(), g)));
                }
            }
        }
        candidates::survive(conn, i, &failed)?;
        if i == n {
            let failed: HashSet<i32> = failed.into_iter().collect();
            let feasible: Vec<Vec<u8>> = graph
                .nodes
                .iter()
                .filter(|(id, _)| !failed.contains(id))
                .map(|(_, node)| node.levels.clone())
                .collect();
            let result = score(ev, lattice, feasible, req, metric, checked, progress);
            ev.forget_all()?;
            return result;
        }
        ev.forget_all()?;
    }
    unreachable!("the loop returns at i = n")
}
