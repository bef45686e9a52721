//! Top-down branch and bound: the optimal feasible node without first
//! enumerating every feasible one.
//!
//! Heights are visited from the top of the lattice down. A node under one
//! that [prunes](crate::measure::metrics::Histogram::prunes) (the records surely
//! suppressed there, which only grow downward, exceed the budget) is
//! infeasible and never evaluated. A node whose best
//! possible loss is worse than the best feasible node found so far is skipped.
//! For glm that bound is the loss with nothing suppressed, a sum of per-QI
//! terms read off the QI marginals (a suppressed record costs the most); for
//! precision and height the loss does not depend on the data; for dm it is
//! rows² over the most classes the node can have (a suppressed record costs
//! the rows, at least its class's size); cm has no bound here, so every node
//! not known infeasible is evaluated. A node
//! too large to be a hub is first tried on a sample of its classes
//! ([`Evaluator::refuted`]): near-unique nodes under generalizations the
//! bound skipped are proved infeasible at a fraction of a pass. After each
//! height a [`dive`] from the best node found steps down through feasible
//! nodes the held hubs serve, so that the bound has a good node to beat early.
//!
//! A node with a QI at a level that merges none of the data's values has
//! the classes of its twin one level down on that QI; once the twin is
//! evaluated or pruned, the node is settled without evaluation.
//!
//! Why: near the bottom of the lattice frequency sets are as large as the
//! source, and an Incognito check costs about one pass over them. Top-down,
//! the evaluated nodes are the high ones (few classes); everything below an
//! infeasible node is settled without touching the data.

use super::result::{Found, SearchResult};
use super::Problem;
use crate::evaluator::{Evaluator, Sampled};
use crate::lattice::{Lattice, Node};
use crate::measure::metrics::{same, Histogram};
use crate::options::Metric;
use crate::progress::Progress;
use anyhow::Result;
use std::collections::{BTreeMap, HashSet};

/// The best value of `metric` a node could reach, per node, when there is one;
/// and an upper estimate of a node's frequency-set size.
struct Bound {
    metric: Metric,
    /// glm: per QI and level, the QI's share with nothing suppressed.
    glm: Vec<Vec<f64>>,
    /// Per QI and level, the distinct values in the data.
    distinct: Vec<Vec<u64>>,
    heights: Vec<u8>,
    rows: u64,
    /// Classes count persons (`[privacy] person`).
    persons: bool,
    /// Per QI and level: the level merges none of the values the data has
    /// at the level below (and no population judges classes).
    merges_nothing: Vec<Vec<bool>>,
}

impl Bound {
    fn new(ev: &Evaluator, metric: Metric) -> Result<Bound> {
        let stats = ev.level_stats()?;
        let glm = stats
            .iter()
            .zip(&ev.data.leaves)
            .map(|(levels, &leaves)| {
                levels.iter().map(|s| if leaves > 1 { s.leaf_cost / (leaves - 1) as f64 } else { 0.0 }).collect()
            })
            .collect();
        let distinct = stats.iter().map(|levels| levels.iter().map(|s| s.distinct).collect()).collect();
        let persons = ev.data.persons.is_some();
        // A population's values may split where the data's do not.
        let population = ev.judges_population();
        let merges_nothing = (stats.iter())
            .map(|levels| levels.iter().enumerate().map(|(l, s)| l > 0 && s.fanout == 1 && !population).collect())
            .collect();
        let heights = ev.data.heights.clone();
        Ok(Bound { metric, glm, distinct, heights, rows: ev.data.rows, persons, merges_nothing })
    }

    /// The nodes with the classes of `levels`: one QI a level lower, where
    /// that level merges nothing. Each is no worse on any metric, and wins
    /// the tie (the lower height).
    fn twins_below(&self, levels: &[u8]) -> Vec<Vec<u8>> {
        (0..levels.len())
            .filter(|&a| self.merges_nothing[a].get(levels[a] as usize).copied().unwrap_or(false))
            .map(|a| {
                let mut twin = levels.to_vec();
                twin[a] -= 1;
                twin
            })
            .collect()
    }

    /// The most classes a hub may have (estimated): 1/8 of the rows.
    fn hub_rows(&self) -> u64 {
        (self.rows / 8).max(1)
    }

    /// At most this many classes: the rows, or the product of distinct values per QI.
    fn size_estimate(&self, levels: &[u8]) -> u64 {
        let mut est: u64 = 1;
        for (a, &l) in levels.iter().enumerate() {
            est = est.saturating_mul(self.distinct(a, l));
        }
        est.min(self.rows)
    }

    fn distinct(&self, a: usize, l: u8) -> u64 {
        self.distinct[a].get(l as usize).copied().unwrap_or(1).max(1)
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
            // Σ over classes of size² ≥ rows² / classes (Cauchy–Schwarz), and a
            // suppressed record costs rows ≥ its class's size: dm is at least
            // rows² over the most classes the node can have. (Over persons, dm
            // counts rows of signatures: no such bound here.)
            Metric::Dm if !self.persons => {
                let rows = self.rows as f64;
                Some(rows * rows / self.size_estimate(levels).max(1) as f64)
            }
            Metric::Dm | Metric::Cm | Metric::Hdm => None,
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

    /// Can a node whose best possible value is `bound` at most tie `best`?
    fn at_most_ties(&self, bound: f64, best: f64) -> bool {
        if same(bound, best) {
            return true;
        }
        let slack = 1e-9 * best.abs().max(1.0);
        match self.metric {
            Metric::Precision => bound <= best + slack,
            _ => bound >= best - slack,
        }
    }
}

/// Frequency-set sizes for choosing hubs: [`Bound::size_estimate`], or tighter,
/// from the evaluated node nearest above (same or higher on every QI) whose
/// classes are known: its classes times, per QI, how many more distinct values
/// the lower level has. An estimate, not a bound, but it carries the data's
/// correlations, which the product of distinct values misses (at 45M `kanon
/// generate` rows it puts zip=3, birth_date=2, the rest 0 at 43.2M classes,
/// the scaled estimate at 29.8M), so hubs go as low as stays small and fewer
/// passes read the base.
struct Sizes<'b> {
    bound: &'b Bound,
    /// Evaluated full nodes and their classes.
    known: Vec<(Vec<u8>, u64)>,
}

impl Sizes<'_> {
    fn new<'b>(bound: &'b Bound, ev: &Evaluator) -> Sizes<'b> {
        let known = ev
            .cached_full_nodes()
            .into_iter()
            .filter_map(|levels| ev.cached_classes(&Node::full(levels.clone())).map(|c| (levels, c)))
            .collect();
        Sizes { bound, known }
    }

    fn estimate(&self, levels: &[u8]) -> u64 {
        let product = self.bound.size_estimate(levels);
        let above = |g: &Vec<u8>| g.iter().zip(levels).all(|(&x, &y)| x >= y);
        let distance = |g: &Vec<u8>| g.iter().zip(levels).map(|(&x, &y)| (x - y) as u32).sum::<u32>();
        let nearest = (self.known.iter())
            .filter(|(g, _)| above(g))
            .map(|(g, classes)| {
                let scaled = (0..levels.len()).fold(*classes as f64, |e, a| {
                    e * self.bound.distinct(a, levels[a]) as f64 / self.bound.distinct(a, g[a]) as f64
                });
                (distance(g), scaled.ceil() as u64)
            })
            .min();
        nearest.map_or(product, |(_, scaled)| scaled.min(product))
    }
}

/// What top-down knows so far: every node it evaluated or settled, and the best.
struct Known {
    /// Nodes neither feasible nor with a feasible specialization.
    pruned: HashSet<Vec<u8>>,
    /// Nodes whose outcome is recorded (by a height's batch or a dive).
    evaluated: HashSet<Vec<u8>>,
    feasible: Vec<Vec<u8>>,
    best: Option<Found>,
    checked: u64,
    /// dm: evaluated nodes and their classes' Σ size², a floor under every generalization's dm.
    floors: Vec<(Vec<u8>, f64)>,
}

impl Known {
    /// Record an evaluated node's outcome; whether it is feasible.
    fn record(&mut self, p: &Problem, ev: &Evaluator, levels: &[u8], h: &Histogram) -> bool {
        let outcome = h.outcome(levels, p.req, &ev.data);
        crate::trace(|| {
            format!(
                "top-down:   {levels:?} classes {} suppressed {} {}",
                h.classes(),
                outcome.suppressed,
                if outcome.feasible { "feasible" } else { "infeasible" }
            )
        });
        self.checked += 1;
        self.evaluated.insert(levels.to_vec());
        if p.metric == Metric::Dm && ev.data.persons.is_none() {
            // Every generalization's classes are unions of these, and a
            // suppressed record costs the rows: its dm is at least this.
            let floor: u64 = h.buckets.iter().map(|b| b.classes * b.size * b.size).sum();
            self.floors.push((levels.to_vec(), floor as f64));
        }
        if h.prunes(p.req) {
            self.pruned.insert(levels.to_vec());
        }
        let feasible = outcome.feasible;
        if feasible {
            Found::keep_better(&mut self.best, p.metric, levels, outcome);
            self.feasible.push(levels.to_vec());
        }
        feasible
    }

    /// Record `levels` proved infeasible on a sample (checked, and pruned
    /// with every specialization); it is not feasible.
    fn refuted(&mut self, levels: &[u8]) -> bool {
        self.checked += 1;
        self.pruned.insert(levels.to_vec());
        false
    }

    /// The direct specializations of `at` a dive may step to, the lowest
    /// loss first (highest precision; ties in lattice order), with their bounds.
    fn children(&self, p: &Problem, bound: &Bound, at: &[u8]) -> Vec<(f64, Vec<u8>)> {
        let mut children: Vec<(f64, Vec<u8>)> = (p.lattice.down(at).into_iter())
            .filter(|c| !self.pruned.contains(c) && !self.under_pruned(p.lattice, c))
            .filter(|c| !self.hopeless(bound, c))
            .filter_map(|c| bound.best_possible(&c).map(|b| (b, c)))
            .collect();
        children.sort_by(|(x, a), (y, b)| {
            let by = if bound.metric == Metric::Precision { y.total_cmp(x) } else { x.total_cmp(y) };
            by.then_with(|| a.cmp(b))
        });
        children
    }

    /// Is `levels` settled by a node with its classes below it
    /// ([`Bound::twins_below`]) that is evaluated or pruned: pruned as that
    /// one is, infeasible as it is, or feasible and no better. Either way it
    /// needs no evaluation; it counts as checked.
    fn settled_by_twin(&mut self, bound: &Bound, levels: &[u8]) -> bool {
        let twins = bound.twins_below(levels);
        let Some(twin) = twins.iter().find(|t| self.evaluated.contains(*t) || self.pruned.contains(*t)) else {
            return false;
        };
        if self.pruned.contains(twin) {
            self.pruned.insert(levels.to_vec());
        }
        self.checked += 1;
        true
    }

    /// Is `levels` directly under a pruned node (so infeasible, and pruned too)?
    fn under_pruned(&self, lattice: &Lattice, levels: &[u8]) -> bool {
        lattice.up(levels).iter().any(|u| self.pruned.contains(u))
    }

    /// Can `levels` not beat the best node found, nor tie it and win the
    /// tie (the lower height, then the lattice order)?
    fn hopeless(&self, bound: &Bound, levels: &[u8]) -> bool {
        let Some(found) = &self.best else { return false };
        let best = found.outcome.metrics.get(bound.metric);
        let height = |l: &[u8]| crate::lattice::height(l);
        let loses_tie = (height(levels), levels) > (height(&found.levels), &found.levels[..]);
        let possible = bound.best_possible(levels);
        if possible.is_some_and(|x| bound.hopeless(x, best) || (loses_tie && bound.at_most_ties(x, best))) {
            return true;
        }
        // dm: at least the class sizes' squares of any evaluated node below.
        let below = |s: &Vec<u8>| s.iter().zip(levels).all(|(&x, &y)| x <= y);
        self.floors.iter().any(|(s, floor)| bound.hopeless(*floor, best) && below(s))
    }
}

pub fn search(ev: &mut Evaluator, p: &Problem, progress: &dyn Progress) -> Result<SearchResult> {
    let (lattice, req, metric) = (p.lattice, p.req, p.metric);
    let bound = Bound::new(ev, metric)?;
    let mut by_height: BTreeMap<u32, Vec<Vec<u8>>> = BTreeMap::new();
    for levels in lattice.nodes() {
        by_height.entry(crate::lattice::height(&levels)).or_default().push(levels);
    }
    progress.start(lattice.size(), "top-down search");
    let mut st = Known {
        pruned: HashSet::new(),
        evaluated: HashSet::new(),
        feasible: Vec::new(),
        best: None,
        checked: 0,
        floors: Vec::new(),
    };
    let mut hubs: Vec<Node> = Vec::new();
    for (height, nodes) in by_height.into_iter().rev() {
        let mut batch = Vec::new();
        for levels in nodes {
            if st.under_pruned(lattice, &levels) {
                st.pruned.insert(levels);
                continue;
            }
            if !st.evaluated.contains(&levels) && !st.settled_by_twin(&bound, &levels) && !st.hopeless(&bound, &levels)
            {
                batch.push(levels);
            }
        }
        // Nodes too large to roll up as hubs are first tried on a sample of
        // their classes: near-unique ones, under generalizations the bound
        // skipped, are proved infeasible at a fraction of a pass.
        // The estimates hold for the whole height: a refutation reads no set into the cache.
        // Over persons every node is a pass over all the pairs (nothing rolls
        // up), so every one is tried first.
        let sizes = Sizes::new(&bound, ev);
        let persons = ev.data.persons.is_some();
        let large: Vec<Node> = (batch.iter())
            .filter(|l| persons || sizes.estimate(l) > bound.hub_rows())
            .map(|l| Node::full(l.to_vec()))
            .collect();
        let refuted: HashSet<Vec<u8>> =
            (large.iter().zip(ev.refuted(&large, req)?)).filter(|&(_, r)| r).map(|(n, _)| n.levels.clone()).collect();
        st.checked += refuted.len() as u64;
        batch.retain(|l| !refuted.contains(l));
        st.pruned.extend(refuted.iter().cloned());
        let hists = evaluate(ev, &sizes, &mut hubs, &batch)?;
        crate::trace(|| {
            format!(
                "top-down: height {height}: {} nodes evaluated, {} proved infeasible on a sample",
                batch.len(),
                refuted.len()
            )
        });
        for (levels, h) in batch.iter().zip(&hists) {
            st.record(p, ev, levels, h);
        }
        dive(ev, p, &bound, &hubs, &mut st)?;
        // Keep the hubs, and the best node's set for the release to read its classes from.
        let mut keep: HashSet<Node> = hubs.iter().cloned().collect();
        keep.extend(st.best.as_ref().map(|b| Node::full(b.levels.clone())));
        ev.retain(|n| keep.contains(n))?;
        progress.position(st.checked);
    }
    let best_node = st.best.as_ref().map(|b| Node::full(b.levels.clone()));
    ev.retain(|n| Some(n) == best_node.as_ref())?;
    Ok(SearchResult::new(lattice, st.feasible, st.best, st.checked))
}

/// From the best node found, step down to the first feasible direct
/// specialization in order of the bound (lowest first), until none is:
/// a feasible node far below the height the search is at, so that the bound
/// skips the nodes between that cannot beat it. Only specializations that
/// roll up from a held hub (or were evaluated) are tried, so a dive never
/// reads the base set; with no bound (dm, cm) there is nothing to skip, and
/// no dive.
///
/// Over persons nothing rolls up and every node is a pass over all the
/// pairs: a step is taken on a sample's estimate ([`Evaluator::sampled`])
/// where there is one, and where the steps end the node is evaluated; if it
/// is infeasible, the steps are bisected for the lowest feasible one (they
/// form a chain, so feasibility only falls along them) and the dive goes on
/// from there.
///
/// Why: top-down's best comes from the height above until then, and the glm
/// of a node falls with its height, so without a dive nearly every node above
/// the optimum is evaluated (10M `kanon generate` rows: 187 nodes without a
/// dive, 20 with one). A persons' estimate costs about a fifth of a node.
fn dive(ev: &mut Evaluator, p: &Problem, bound: &Bound, hubs: &[Node], st: &mut Known) -> Result<()> {
    let Some(mut at) = st.best.as_ref().map(|b| b.levels.clone()) else {
        return Ok(());
    };
    if bound.best_possible(&at).is_none() {
        return Ok(());
    }
    let estimate = ev.data.persons.is_some();
    let (from, before) = (at.clone(), st.checked);
    // Steps taken on an estimate since the last node known feasible, `known`.
    let (mut estimated, mut known): (Vec<Vec<u8>>, Vec<u8>) = (Vec::new(), Vec::new());
    if estimate {
        let steps = gallop(ev, p, bound, st, &at)?;
        if let Some(last) = steps.last() {
            (known, at) = (at.clone(), last.clone());
            estimated = steps;
        }
    }
    loop {
        let children = st.children(p, bound, &at);
        let mut next = None;
        for (_, c) in children {
            let node = Node::full(c.clone());
            let feasible = if st.evaluated.contains(&c) {
                let feasible = st.feasible.contains(&c);
                if feasible {
                    // Known feasible: so are the estimated steps above it.
                    estimated.clear();
                }
                feasible
            } else if estimate {
                match ev.sampled(std::slice::from_ref(&node), p.req)?[0] {
                    Sampled::Refuted => st.refuted(&c),
                    Sampled::Estimate(suppressed) if suppressed <= p.req.budget => {
                        if estimated.is_empty() {
                            known = at.clone();
                        }
                        estimated.push(c.clone());
                        true
                    }
                    Sampled::Estimate(_) => false,
                    Sampled::Untried => {
                        let h = ev.materialize(&[(node, None)])?.remove(0);
                        let feasible = st.record(p, ev, &c, &h);
                        if feasible {
                            // Its generalizations, the estimated steps above it, are feasible too.
                            estimated.clear();
                        }
                        feasible
                    }
                }
            } else {
                let Some(hub) = hub_under(hubs, ev, &node) else {
                    continue;
                };
                let h = ev.materialize(&[(node, Some(hub))])?.remove(0);
                st.record(p, ev, &c, &h)
            };
            if feasible {
                next = Some(c);
                break;
            }
        }
        match next {
            Some(c) => at = c,
            None if estimated.is_empty() => break,
            None => {
                let (base, verified) = verify(ev, p, st, &known, &estimated)?;
                estimated.clear();
                match verified {
                    // The dive ends on a node evaluated feasible.
                    true => break,
                    // Each bisection evaluates a node, so this ends.
                    false => at = base,
                }
            }
        }
    }
    if st.checked > before {
        crate::trace(|| format!("top-down: dive from {from:?} to {at:?}, {} nodes evaluated", st.checked - before));
    }
    Ok(())
}

/// The first steps of a dive on estimates, taken at once: the chain down
/// from `at` through each node's first child in the bound's order, and of
/// it the nodes down to the lowest the estimates find feasible, by bisection
/// (feasibility only falls along a chain). Empty when the chain's first
/// node is not, or estimates are not tried.
///
/// Why: the high nodes a dive steps through one by one are nearly always
/// feasible, and over persons the few values there leave a sample keyed on
/// values too lumpy: each was estimated off every person's signature.
fn gallop(ev: &mut Evaluator, p: &Problem, bound: &Bound, st: &mut Known, at: &[u8]) -> Result<Vec<Vec<u8>>> {
    let mut chain: Vec<Vec<u8>> = Vec::new();
    while let Some((_, first)) = st.children(p, bound, chain.last().map_or(at, |c| &c[..])).into_iter().next() {
        chain.push(first);
    }
    // chain[..lo] are estimated feasible, chain[hi..] not.
    let (mut lo, mut hi) = (0, chain.len());
    while lo < hi {
        let mid = (lo + hi) / 2;
        let c = &chain[mid];
        let feasible = match st.evaluated.contains(c) {
            true => st.feasible.contains(c),
            false => match ev.sampled(&[Node::full(c.clone())], p.req)?[0] {
                Sampled::Refuted => st.refuted(c),
                Sampled::Estimate(suppressed) => suppressed <= p.req.budget,
                Sampled::Untried => return Ok(Vec::new()),
            },
        };
        match feasible {
            true => lo = mid + 1,
            false => hi = mid,
        }
    }
    chain.truncate(lo);
    Ok(chain)
}

/// Evaluate `steps` (a chain down from the feasible node `from`, each taken
/// on an estimate) until the lowest feasible one is known: the last, or by
/// bisection. That node (`from` when none is), and whether it is the last.
fn verify(ev: &mut Evaluator, p: &Problem, st: &mut Known, from: &[u8], steps: &[Vec<u8>]) -> Result<(Vec<u8>, bool)> {
    // A step may have been evaluated already (the chain a gallop takes can pass one).
    let evaluate = |ev: &mut Evaluator, st: &mut Known, levels: &[u8]| -> Result<bool> {
        if st.evaluated.contains(levels) {
            return Ok(st.feasible.iter().any(|f| f == levels));
        }
        let h = ev.materialize(&[(Node::full(levels.to_vec()), None)])?.remove(0);
        Ok(st.record(p, ev, levels, &h))
    };
    let last = &steps[steps.len() - 1];
    if evaluate(ev, st, last)? {
        return Ok((last.clone(), true));
    }
    // steps[..lo] are feasible, steps[hi - 1..] infeasible.
    let (mut lo, mut hi) = (0, steps.len());
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        match evaluate(ev, st, &steps[mid - 1])? {
            true => lo = mid,
            false => hi = mid,
        }
    }
    let base = match lo {
        0 => from.to_vec(),
        _ => steps[lo - 1].clone(),
    };
    Ok((base, false))
}

/// The smallest held hub `node` rolls up from.
fn hub_under(hubs: &[Node], ev: &Evaluator, node: &Node) -> Option<Node> {
    hubs.iter().filter(|h| node.generalizes(h)).min_by_key(|h| ev.cached_classes(h).unwrap_or(u64::MAX)).cloned()
}

/// Frequency sets kept as rollup sources at once, at most.
const MAX_HUBS: usize = 16;

fn meet(a: &[u8], b: &[u8]) -> Vec<u8> {
    a.iter().zip(b).map(|(&x, &y)| x.min(y)).collect()
}

/// The lowest node under `levels`, one QI level down at a time (the step
/// that keeps the estimated size smallest), whose estimate stays within `small`.
fn lower_hub(sizes: &Sizes, levels: &[u8], small: u64) -> Vec<u8> {
    let mut at = levels.to_vec();
    loop {
        let step = (0..at.len())
            .filter(|&a| at[a] > 0)
            .map(|a| {
                let mut lower = at.clone();
                lower[a] -= 1;
                (sizes.estimate(&lower), a, lower)
            })
            .filter(|(estimate, _, _)| *estimate <= small)
            .min_by_key(|(estimate, a, _)| (*estimate, *a));
        match step {
            Some((_, _, lower)) => at = lower,
            None => return at,
        }
    }
}

/// Histograms of one height's nodes. Each evaluation from the base frequency
/// set costs a pass over it, as large as the source on sparse data; so nodes
/// are grouped while the meet of a group stays small (estimated at most 1/8 of
/// the rows), each group's meet (a hub) is rolled up once from the smallest
/// kept specialization and kept, and the group is rolled up from it.
fn evaluate(ev: &mut Evaluator, sizes: &Sizes, hubs: &mut Vec<Node>, batch: &[Vec<u8>]) -> Result<Vec<Histogram>> {
    let small = sizes.bound.hub_rows();
    let mut groups: Vec<(Vec<u8>, Vec<usize>)> = Vec::new();
    for (i, levels) in batch.iter().enumerate() {
        match groups.iter_mut().find(|(m, _)| sizes.estimate(&meet(m, levels)) <= small) {
            Some((m, members)) => {
                *m = meet(m, levels);
                members.push(i);
            }
            None => groups.push((levels.clone(), vec![i])),
        }
    }
    // This height's new hubs, and the nodes that need none of them, in one
    // batch (one pass over the base for all those rolled up from it); then the
    // rest from the new hubs.
    let mut first: Vec<(Node, Option<Node>)> = Vec::new();
    let mut later: Vec<usize> = Vec::new();
    let mut made: Vec<Node> = Vec::new();
    for (m, members) in &groups {
        let hub = Node::full(m.clone());
        if members.len() > 1 && sizes.estimate(m) <= small && !hubs.contains(&hub) {
            let from = hub_under(hubs, ev, &hub);
            // A hub read off the base goes as low as stays small, as below.
            let hub = match from {
                None => Node::full(lower_hub(sizes, m, small)),
                Some(_) => hub,
            };
            if !made.contains(&hub) {
                first.push((hub.clone(), from));
                made.push(hub);
            }
            later.extend(members);
        } else {
            for &i in members {
                let node = Node::full(batch[i].clone());
                if let Some(from) = hub_under(hubs, ev, &node) {
                    first.push((node, Some(from)));
                    continue;
                }
                // Nothing held below it: a pass over the base set makes a new
                // hub, as low as stays small, so that the nodes below this one
                // at later heights roll up from the hub too.
                let hub = made.iter().find(|h| node.generalizes(h)).cloned().or_else(|| {
                    let low = lower_hub(sizes, &batch[i], small);
                    (low != batch[i]).then(|| Node::full(low))
                });
                match hub {
                    Some(hub) => {
                        if !made.contains(&hub) {
                            first.push((hub.clone(), None));
                            made.push(hub);
                        }
                        later.push(i);
                    }
                    None => first.push((node, None)),
                }
            }
        }
    }
    // A hub that is no node of this batch needs no histogram now.
    let asked: HashSet<&[u8]> = batch.iter().map(|l| l.as_slice()).collect();
    ev.hold(&first, |n| asked.contains(n.levels.as_slice()))?;
    hubs.extend(made);
    let later_items: Vec<(Node, Option<Node>)> = later
        .iter()
        .map(|&i| {
            let node = Node::full(batch[i].clone());
            let from = hub_under(hubs, ev, &node);
            (node, from)
        })
        .collect();
    ev.materialize(&later_items)?;
    // The hubs used last go to the back, so the least recently used go first.
    for from in first.iter().chain(&later_items).filter_map(|(_, from)| from.as_ref()) {
        if let Some(at) = hubs.iter().position(|h| h == from) {
            let hub = hubs.remove(at);
            hubs.push(hub);
        }
    }
    while hubs.len() > MAX_HUBS {
        let old = hubs.remove(0);
        ev.retain(|n| *n != old)?;
    }
    let nodes: Vec<Node> = batch.iter().map(|l| Node::full(l.clone())).collect();
    // All cached now; in batch order. The caller drops the sets it no longer needs.
    ev.histograms(&nodes)
}
