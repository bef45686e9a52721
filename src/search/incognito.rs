//! Incognito (LeFevre, DeWitt, Ramakrishnan, SIGMOD 2005): all feasible
//! full-domain generalizations, sound and complete.
//!
//! Iteration i searches the candidate graph of i-QI subsets (built in SQL from
//! iteration i−1's survivors, see [`crate::evaluator::candidates`]) breadth-first and
//! bottom-up. A feasible node marks its direct generalizations feasible without
//! checking them; an infeasible node keeps its frequency set so the nodes above
//! it roll up from it. Feasibility with k and distinct ℓ (suppression within
//! budget) is monotone under generalization and under projection to fewer
//! QIs, so the apriori pruning stays sound with suppression and ℓ-diversity.
//! With per-class models (entropy or recursive ℓ, t-closeness) and a budget
//! it is not: a class they reject may have pieces they accept. So the
//! candidates are searched for what surely overflows the budget
//! ([`crate::measure::metrics::Histogram::prunes`]: k and distinct ℓ, and a record of
//! each class the models reject), which is monotone, and every candidate is
//! judged by all the models when scored (without such models the two are
//! the same).
//!
//! Marking only reaches nodes one level up, so all nodes of one height are
//! known before the first of them is checked: each height is checked as one
//! batch (one rollup query, one histogram query).

use super::result::{score, SearchResult};
use super::Problem;
use crate::evaluator::Evaluator;
use crate::lattice::Node;
use crate::progress::Progress;
use anyhow::Result;
use std::collections::{BTreeMap, HashMap, HashSet};

pub fn search(ev: &mut Evaluator, p: &Problem, progress: &dyn Progress) -> Result<SearchResult> {
    let (lattice, req, metric) = (p.lattice, p.req, p.metric);
    let n = lattice.heights.len();
    let mut checked = 0u64;
    let mut graph = ev.first_candidates(&lattice.heights)?;
    for i in 1..=n {
        if i > 1 {
            graph = ev.next_candidates(i)?;
        }
        progress.message(format!("Incognito: {i}-QI subsets, {} candidates", graph.nodes.len()));
        crate::trace(|| format!("incognito {i}-QI subsets: {} candidates", graph.nodes.len()));
        let nodes: HashMap<i32, &Node> = graph.nodes.iter().map(|(id, n)| (*id, n)).collect();
        let mut up: HashMap<i32, Vec<i32>> = HashMap::new();
        let mut has_in: HashSet<i32> = HashSet::new();
        for &(s, e) in &graph.edges {
            up.entry(s).or_default().push(e);
            has_in.insert(e);
        }
        // Queue by height; each queued node remembers an infeasible
        // specialization to roll up from (none for roots).
        let mut queue: BTreeMap<u32, Vec<i32>> = BTreeMap::new();
        let mut rollup_from: HashMap<i32, i32> = HashMap::new();
        for (id, node) in &graph.nodes {
            if !has_in.contains(id) {
                queue.entry(node.height()).or_default().push(*id);
            }
        }
        // Super-roots (LeFevre et al. §3.3): the roots of one QI subset roll up
        // from the frequency set of their meet, computed once from the base.
        let mut by_subset: BTreeMap<Vec<usize>, Vec<&Node>> = BTreeMap::new();
        for (id, node) in &graph.nodes {
            if !has_in.contains(id) {
                by_subset.entry(node.attrs.clone()).or_default().push(node);
            }
        }
        let mut super_of: HashMap<Vec<usize>, Node> = HashMap::new();
        for (attrs, roots) in by_subset.into_iter().filter(|(_, r)| r.len() > 1) {
            let levels = (0..attrs.len()).map(|j| roots.iter().map(|r| r.levels[j]).min().unwrap_or(0)).collect();
            super_of.insert(attrs.clone(), Node { attrs, levels });
        }
        let supers: HashSet<Node> = super_of.values().cloned().collect();
        let mut super_items: Vec<(Node, Option<Node>)> = supers.iter().map(|s| (s.clone(), None)).collect();
        super_items.sort();
        ev.materialize(&super_items)?;
        let mut marked: HashSet<i32> = HashSet::new();
        let mut failed: Vec<i32> = Vec::new();
        while let Some((_, mut batch)) = queue.pop_first() {
            batch.sort();
            batch.dedup();
            batch.retain(|id| !marked.contains(id));
            if batch.is_empty() {
                continue;
            }
            let items: Vec<(Node, Option<Node>)> = batch
                .iter()
                .map(|id| {
                    let parent = match rollup_from.get(id) {
                        Some(p) => Some(nodes[p].clone()),
                        None => super_of.get(&nodes[id].attrs).cloned(),
                    };
                    (nodes[id].clone(), parent)
                })
                .collect();
            let hists = ev.materialize(&items)?;
            checked += batch.len() as u64;
            progress.tick();
            let mut failed_now: HashSet<Node> = HashSet::new();
            for (id, h) in batch.iter().zip(&hists) {
                let generalizations = up.get(id).cloned().unwrap_or_default();
                if !h.prunes(req) {
                    marked.extend(generalizations);
                } else {
                    failed.push(*id);
                    failed_now.insert(nodes[id].clone());
                    for g in generalizations {
                        rollup_from.entry(g).or_insert(*id);
                        queue.entry(nodes[&g].height()).or_default().push(g);
                    }
                }
            }
            // Only this height's infeasible nodes and the super-roots are rolled up from next.
            ev.retain(|n| failed_now.contains(n) || supers.contains(n))?;
        }
        ev.forget_all()?;
        ev.survive_candidates(i, &failed)?;
        if i == n {
            let failed: HashSet<i32> = failed.into_iter().collect();
            let feasible: Vec<Vec<u8>> = graph
                .nodes
                .iter()
                .filter(|(id, _)| !failed.contains(id))
                .map(|(_, node)| node.levels.clone())
                .collect();
            return score(ev, lattice, feasible, req, metric, checked, progress);
        }
    }
    unreachable!("the loop returns at i = n")
}
