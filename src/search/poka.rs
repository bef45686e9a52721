//! POkA (Dewri, Ray, Ray, Whitley): the Pareto front of k against
//! information loss over the full-domain lattice, for a suppression budget.
//!
//! A node's k is the largest k whose suppression fits the budget; the loss is
//! the chosen metric on what is kept. From each Pareto-optimal base node N the
//! next one (highest k below k_N with loss below L_N) is found by a depth
//! search down N's specialization graph to depth d, and from each node there (a
//! candidate ground node) a height search up its generalization graph, cut
//! where k ≥ k_N or loss ≥ L_N (the height boundary property). Nodes of N's
//! specialization graph other than its immediate neighbours are traversed
//! without evaluation. HBest / DBest memoize searched subtrees per base node.
//!
//! Fewer evaluations, same cuts: bounds from the nodes evaluated so far (k is
//! monotone; the loss with nothing suppressed bounds the loss from below, see
//! [`Bounds`]) cut a node without evaluating it when they already show
//! k ≥ k_N or loss ≥ L_N, and a node they show cannot beat the best candidate
//! so far is traversed without evaluation. Each search starts from the best
//! node already evaluated that beats the base.

use super::front::{pick, points, preferred, Point};
use crate::evaluator::Evaluator;
use crate::lattice::Lattice;
use crate::measure::metrics::same;
use crate::options::Metric;
use anyhow::Result;
use std::collections::{BTreeMap, HashMap};

/// The outcome of a POkA run.
#[derive(Debug, Clone)]
pub struct Poka {
    pub front: Vec<Point>,
    pub(crate) depth: u32,
}

/// d_avg = ceil(Σ heights / number of QIs), the paper's default depth.
pub fn default_depth(lattice: &Lattice) -> u32 {
    let n = lattice.heights.len().max(1) as u32;
    lattice.heights.iter().map(|&h| h as u32).sum::<u32>().div_ceil(n).max(1)
}

/// What the nodes evaluated so far imply about the others, propagated through
/// the lattice. All hold with suppression:
/// - k is monotone under generalization (classes only merge, so the records in
///   classes smaller than any size only shrink): a node's k is at least that of
///   each evaluated specialization and at most that of each evaluated
///   generalization. With per-class models only the second holds, with
///   [`Point::k_below`] for k, and the first not at all ([`Point::k_above`] is 0).
/// - The loss is not monotone with suppression, but [`Point::floor`], the loss
///   with nothing suppressed, bounds from below the loss of the node and of each
///   generalization: a kept record's cost only grows with generalization (glm:
///   the leaves under its value; dm: its class size; cm: a merged class has at
///   least the minorities of its parts) and a suppressed record costs the most
///   a record can (1 per QI, the row count, 1).
/// - For glm the loss with nothing suppressed is Σ over QIs of a term that
///   depends only on the QI's level and grows with it ([`Point::per_qi`]), so
///   it bounds the loss of a node not yet evaluated once the terms of its
///   levels (or of lower levels) have been seen in evaluated nodes.
#[derive(Default)]
struct Bounds {
    k_at_most: HashMap<Vec<u8>, u64>,
    k_at_least: HashMap<Vec<u8>, u64>,
    loss_at_least: HashMap<Vec<u8>, f64>,
    /// Per QI: level → its term of the loss with nothing suppressed.
    per_qi: Vec<BTreeMap<u8, f64>>,
}

impl Bounds {
    fn add(&mut self, lattice: &Lattice, p: &Point) {
        self.per_qi.resize(p.per_qi.len(), BTreeMap::new());
        for ((terms, &level), &t) in self.per_qi.iter_mut().zip(&p.levels).zip(&p.per_qi) {
            terms.insert(level, t);
        }
        // Each insert propagates fully, so a walk stops where the bound already holds.
        let mut stack = vec![p.levels.clone()];
        while let Some(x) = stack.pop() {
            if self.k_at_most.get(&x).is_some_and(|&k| k <= p.k_below) {
                continue;
            }
            stack.extend(lattice.down(&x));
            self.k_at_most.insert(x, p.k_below);
        }
        let mut stack = vec![p.levels.clone()];
        while let Some(x) = stack.pop() {
            let k = self.k_at_least.get(&x).copied().unwrap_or(0);
            let loss = self.loss_at_least.get(&x).copied().unwrap_or(f64::NEG_INFINITY);
            if k >= p.k_above && loss >= p.floor {
                continue;
            }
            stack.extend(lattice.up(&x));
            self.k_at_least.insert(x.clone(), k.max(p.k_above));
            self.loss_at_least.insert(x, loss.max(p.floor));
        }
    }

    /// A lower bound on the loss of `c` (not necessarily evaluated).
    fn loss_floor(&self, c: &[u8]) -> f64 {
        let below = self.loss_at_least.get(c).copied().unwrap_or(f64::NEG_INFINITY);
        if self.per_qi.is_empty() {
            return below;
        }
        // Terms are ≥ 0 and grow with the level: take the highest seen level at or below c's.
        let separable: f64 = (self.per_qi.iter().zip(c))
            .map(|(terms, &level)| terms.range(..=level).next_back().map_or(0.0, |(_, &t)| t))
            .sum();
        below.max(separable)
    }
}

struct Search<'e, 'c> {
    ev: &'e mut Evaluator<'c>,
    lattice: &'e Lattice,
    budget: u64,
    metric: Metric,
    depth: u32,
    base: Point,
    /// The best candidate for the next front node so far.
    best: Option<Point>,
    /// Every node evaluated in this run.
    known: HashMap<Vec<u8>, Point>,
    bounds: Bounds,
    hbest: HashMap<Vec<u8>, Option<Point>>,
    dbest: HashMap<Vec<u8>, Option<Point>>,
}

fn distance(a: &[u8], b: &[u8]) -> u32 {
    a.iter().zip(b).map(|(&x, &y)| (x as i32 - y as i32).unsigned_abs()).sum()
}

impl Search<'_, '_> {
    /// Evaluate nodes (cached ones cost nothing) and remember what they imply.
    fn eval(&mut self, nodes: &[Vec<u8>]) -> Result<Vec<Point>> {
        let pts = points(self.ev, nodes, self.budget, self.metric)?;
        for p in &pts {
            if !self.known.contains_key(&p.levels) {
                self.bounds.add(self.lattice, p);
                self.known.insert(p.levels.clone(), p.clone());
            }
        }
        Ok(pts)
    }

    /// In the base's specialization graph, below its immediate neighbours:
    /// traversed without evaluation.
    fn deep(&self, c: &[u8]) -> bool {
        c.iter().zip(&self.base.levels).all(|(x, n)| x <= n) && distance(&self.base.levels, c) > 1
    }

    /// In the base's generalization graph: k is at least k_N there (k is
    /// monotone even with suppression, but not with per-class models: see
    /// [`Point::k_above`]), so such nodes are never evaluated.
    fn above_base(&self, c: &[u8]) -> bool {
        self.base.k_above == self.base.k && c.iter().zip(&self.base.levels).all(|(x, n)| x >= n)
    }

    fn beats_base(&self, p: &Point) -> bool {
        p.k < self.base.k && p.loss < self.base.loss && !same(p.loss, self.base.loss)
    }

    /// The height boundary without evaluation: evaluated specializations show
    /// k ≥ k_N or loss ≥ L_N here, hence also in every generalization (see
    /// [`Bounds`]), so a path stops here exactly as if the node were evaluated.
    fn cut(&self, c: &[u8]) -> bool {
        self.above_base(c) || self.bounds.k_at_least.get(c).is_some_and(|&k| k >= self.base.k) || {
            let l = self.bounds.loss_floor(c);
            l >= self.base.loss || same(l, self.base.loss)
        }
    }

    /// Not evaluated yet and, by the bounds, not preferable to the best
    /// candidate so far (lower k, or the same k and more loss): such a node is
    /// traversed without evaluation, like the base's deeper specializations.
    /// The search then reaches at least what it would reach evaluating it.
    fn outclassed(&self, c: &[u8]) -> bool {
        let Some(best) = &self.best else { return false };
        if self.known.contains_key(c) {
            return false;
        }
        let k = self.bounds.k_at_most.get(c).copied().unwrap_or(u64::MAX);
        k < best.k
            || (k == best.k && {
                let l = self.bounds.loss_floor(c);
                l > best.loss && !same(l, best.loss)
            })
    }

    fn consider(&mut self, p: &Point) {
        self.best = pick(self.best.take(), Some(p.clone()));
    }

    /// DFS down the specialization graph of the base node; height search from
    /// each node at the depth limit (or at the bottom of the lattice).
    fn depth_search(&mut self, p: &[u8]) -> Result<Option<Point>> {
        if let Some(r) = self.dbest.get(p) {
            return Ok(r.clone());
        }
        let mut best = None;
        for c in self.lattice.down(p) {
            let q = if distance(&self.base.levels, &c) >= self.depth || self.lattice.down(&c).is_empty() {
                self.ground(&c)?
            } else {
                self.depth_search(&c)?
            };
            best = pick(best, q);
        }
        self.dbest.insert(p.to_vec(), best.clone());
        Ok(best)
    }

    /// Start a height search at a candidate ground node.
    fn ground(&mut self, g: &[u8]) -> Result<Option<Point>> {
        if self.deep(g) {
            return self.height_search(g, None);
        }
        // An immediate neighbour is evaluated; above one that fails the bounds nothing can pass.
        if self.cut(g) {
            return Ok(None);
        }
        if self.outclassed(g) {
            return self.height_search(g, None);
        }
        let pt = self.eval(&[g.to_vec()])?.remove(0);
        if self.beats_base(&pt) {
            self.consider(&pt);
            self.height_search(g, Some(pt))
        } else {
            Ok(None)
        }
    }

    /// DFS up the generalization graph of `p`, cut by the height boundary
    /// property; `own` is p's point when p itself is a candidate.
    fn height_search(&mut self, p: &[u8], own: Option<Point>) -> Result<Option<Point>> {
        if let Some(r) = self.hbest.get(p) {
            return Ok(r.clone());
        }
        let ups = self.lattice.up(p);
        // Children that need a value are evaluated in one batch.
        let eval: Vec<Vec<u8>> =
            ups.iter().filter(|c| !self.cut(c) && !self.deep(c) && !self.outclassed(c)).cloned().collect();
        self.eval(&eval)?;
        let mut best = own;
        for c in ups {
            let q = if self.cut(&c) {
                None
            } else if self.deep(&c) {
                self.height_search(&c, None)?
            } else if let Some(pt) = self.known.get(&c).cloned() {
                if self.beats_base(&pt) {
                    self.consider(&pt);
                    self.height_search(&c, Some(pt))?
                } else {
                    None
                }
            } else {
                // Outclassed: traversed without evaluation.
                self.height_search(&c, None)?
            };
            best = pick(best, q);
        }
        self.hbest.insert(p.to_vec(), best.clone());
        Ok(best)
    }

    /// Walk down plateaus: while an immediate specialization of `p` has the
    /// same k and no more loss, it is an equal or better front node (ties go
    /// to fewer levels), and its specialization graph is where the next node
    /// lies. Without this, a neighbour tying with the base hides every node
    /// below it.
    fn settle(&mut self, mut p: Point) -> Result<Point> {
        loop {
            let below = self.eval(&self.lattice.down(&p.levels))?;
            let better = below
                .into_iter()
                .filter(|d| d.k == p.k && (d.loss <= p.loss || same(d.loss, p.loss)))
                .min_by(|a, b| preferred(a, b));
            match better {
                Some(d) => p = d,
                None => return Ok(p),
            }
        }
    }
}

/// Run POkA from the fully generalized node.
pub fn poka(ev: &mut Evaluator, lattice: &Lattice, budget: u64, metric: Metric, depth: Option<u32>) -> Result<Poka> {
    let depth = depth.unwrap_or_else(|| default_depth(lattice)).max(1);
    let top = points(ev, &[lattice.top()], budget, metric)?.remove(0);
    let mut search = Search {
        ev,
        lattice,
        budget,
        metric,
        depth,
        base: top.clone(),
        best: None,
        known: HashMap::new(),
        bounds: Bounds::default(),
        hbest: HashMap::new(),
        dbest: HashMap::new(),
    };
    search.eval(std::slice::from_ref(&top.levels))?;
    let top = search.settle(top)?;
    // The bottom node has the least k of all (k is monotone), so it is the last
    // front node whenever it beats the base; it lies deep in every
    // specialization graph, where the depth search would not evaluate it.
    let bottom = search.eval(&[vec![0; lattice.heights.len()]])?.remove(0);
    let mut front = vec![top.clone()];
    search.base = top;
    loop {
        search.hbest.clear();
        search.dbest.clear();
        // Nodes evaluated for earlier bases that beat this one are candidates
        // already: the search starts with the best of them (in a fixed order,
        // so the run is deterministic), and the bounds can skip what cannot beat it.
        search.best = None;
        let mut warm: Vec<Point> = search.known.values().filter(|p| search.beats_base(p)).cloned().collect();
        warm.sort_by(|a, b| a.levels.cmp(&b.levels));
        for p in &warm {
            search.consider(p);
        }
        if search.beats_base(&bottom) {
            search.consider(&bottom);
        }
        let base = search.base.levels.clone();
        search.depth_search(&base)?;
        match search.best.take() {
            Some(next) => {
                let next = search.settle(next)?;
                front.push(next.clone());
                search.base = next;
            }
            None => break,
        }
    }
    Ok(Poka { front, depth })
}
