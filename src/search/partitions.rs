//! The optimal anonymization under a generalization scheme (Li & Li §3–4):
//! one valid partition per QI ([`crate::search::scheme`]), records in classes under k
//! suppressed and charged by the metric, the least cost found by a bottom-up
//! search of the enumeration tree of anonymizations with applicator sets
//! (Fig. 7) and pruning that keeps the result exact. docs/schemes.md.
//!
//! An anonymization is evaluated over the in-memory base frequency set: each
//! row's class key is its QIs' block ids packed into one integer, counted in a
//! reused array (or a hash table for large key spaces).
//!
//! Pruning, each switchable for measurement ([`Pruning`]):
//! - bounds (always): a node whose lower bound — the cost of the records it
//!   keeps, and for each record it suppresses min(k, |D|) under dm, under hdm
//!   and glm the penalty it would bear if kept (the paper charges 0) — cannot
//!   beat the best is not expanded, and an applicator all of whose children are
//!   bounded out is dropped from the applicator sets below the node (every
//!   later step on that QI generalizes one of those children);
//! - seeding: the best is first set from the full-domain (BHS) lattice and a
//!   greedy descent, not only from the most general anonymization;
//! - modified BFS: a node's bound is checked again when it leaves the queue;
//! - node rearrangement: the queue is ordered by lower bound, not FIFO;
//! - applicator rearrangement: a node's applicators are ordered by how many
//!   classes one step on them merges, fewest first.
//!
//! One QI by dynamic programming ([`DpChoice`], on by default): when one QI's
//! scheme allows more partitions than its values have subsets, the tree is
//! searched over the other QIs only and that QI's best partition for each of
//! their anonymizations comes from [`super::partition_dp`], whose relaxed DP
//! is the node's lower bound. Under a suppression cap the DP keeps to the
//! cap's budget (docs/schemes.md, "Under a suppression cap").

use super::partition_dp::{Charge, Cost, Own, PartitionDp, Rest};
use crate::options::Metric;
use crate::progress::Progress;
use crate::search::scheme::{State, ValueTree};
use rustc_hash::FxHashMap;
use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::Arc;

/// Costs are compared as integers, so that sums in another order compare
/// equal and ties go to the tie-break: dm as it is; hdm times the number of
/// QIs, and glm, with each QI value's penalty rounded to units of 10⁻¹²
/// (a suppressed record costs one unit per QI).
const SCALE: f64 = 1e12;

fn units(x: f64) -> Cost {
    (x * SCALE).round() as Cost
}

/// Which pruning techniques run (all by default).
#[derive(Debug, Clone, Copy)]
pub struct Pruning {
    pub seeding: bool,
    pub modified_bfs: bool,
    pub node_order: bool,
    pub applicator_order: bool,
    pub dp: DpChoice,
    /// With the DP: a node is skipped when a bound on its own cost cannot
    /// win (rest classes under k at every partition of the DP's QI charged as
    /// suppressed, each value alone or sharing its block), and those classes
    /// are left out of its DP.
    pub small_classes: bool,
    /// With the DP: blocks that a split of them beats are skipped.
    pub useless_blocks: bool,
    /// A queued node's bound charges as suppressed the records of classes
    /// that stay under k however its applicators' QIs (and the DP's QI) are
    /// generalized below it; under a cap, a node with more such records than
    /// the cap is dropped.
    pub stuck_classes: bool,
}

impl Default for Pruning {
    fn default() -> Self {
        Pruning {
            seeding: true,
            modified_bfs: true,
            node_order: true,
            applicator_order: true,
            dp: DpChoice::Auto,
            small_classes: true,
            useless_blocks: true,
            stuck_classes: true,
        }
    }
}

/// Which QI, if any, [`super::partition_dp`] solves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DpChoice {
    /// The QI with the most partitions, when evaluating them all would read
    /// more (partitions × base rows × QIs) than the plain DP steps, and it
    /// has at most 16 values.
    Auto,
    Off,
    /// This QI, when its scheme allows (not BHS, at most 16 values).
    Qi(usize),
}

/// Most values the DP takes (its tables hold 2ⁿ entries).
const DP_VALUES: usize = 16;

/// The QI the DP solves for `p` under `choice`.
pub fn dp_qi(p: &Problem, choice: DpChoice) -> Option<usize> {
    let able = |a: usize| {
        let d = &p.domains[a];
        (1..=DP_VALUES).contains(&d.len()) && d.valid_blocks().is_some()
    };
    match choice {
        DpChoice::Off => None,
        DpChoice::Qi(a) => (a < p.domains.len() && able(a)).then_some(a),
        DpChoice::Auto => {
            // One evaluation reads every base row on every QI; the DP replaces
            // `count` of them by its steps.
            let evaluation = (p.counts.len().max(1) * p.domains.len()) as u128;
            (0..p.domains.len())
                .filter(|&a| able(a))
                .map(|a| (p.domains[a].count().unwrap_or(u128::MAX), a))
                .filter(|&(count, a)| count.saturating_mul(evaluation) > dp_steps(&p.domains[a]))
                .max_by_key(|&(count, a)| (count, std::cmp::Reverse(a)))
                .map(|(_, a)| a)
        }
    }
}

/// The plain DP's steps for a QI: each valid block B is tried for every set
/// holding it whose lowest value is B's, 2^(n − low(B) − |B|) sets.
fn dp_steps(d: &ValueTree) -> u128 {
    let n = d.len() as u32;
    d.valid_blocks()
        .map_or(u128::MAX, |blocks| blocks.iter().map(|&b| 1u128 << (n - b.trailing_zeros() - b.count_ones())).sum())
}

/// The problem: the base frequency set, the domains, k, a suppression cap.
pub struct Problem<'a> {
    /// Per QI: leaf index per base row.
    pub codes: &'a [Vec<u32>],
    pub counts: &'a [u64],
    pub domains: &'a [ValueTree],
    pub k: u64,
    /// At most this many records suppressed (None: any number, charged).
    pub cap: Option<u64>,
    pub metric: Metric,
    /// Threads for the DP's evaluations (None: one per core).
    pub threads: Option<usize>,
}

/// Every metric of one anonymization.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measures {
    pub dm: f64,
    pub hdm: f64,
    pub glm: f64,
    pub suppressed: u64,
    pub(crate) classes: u64,
}

/// The optimum and how the search got there.
#[derive(Debug, Clone)]
pub struct Optimum {
    pub partitions: Vec<Arc<State>>,
    pub measures: Measures,
    /// Anonymizations evaluated (seeding included); with the DP, anonymizations
    /// of the other QIs, each with its best partition of the DP's QI.
    pub evaluated: u64,
    pub expanded: u64,
    /// The QI the DP solved.
    pub dp_qi: Option<usize>,
}

/// What one evaluation yields.
#[derive(Debug, Clone, Copy)]
struct Eval {
    cost: Cost,
    lb: Cost,
    suppressed: u64,
    classes: u64,
    blocks: u32,
    /// The most blocks any anonymization below this one can have.
    below_blocks: u32,
}

/// Reused buffers of the evaluation.
#[derive(Default)]
struct Scratch {
    keys: Vec<u64>,
    slots: Vec<u64>,
    map: FxHashMap<u64, u64>,
    pen: Vec<f64>,
    qi_pen: Vec<f64>,
    /// Per base row: kept penalty in units; per leaf: one QI's.
    row_units: Vec<Cost>,
    qi_units: Vec<Cost>,
    block_n: Vec<u64>,
    /// Classes found by the last count.
    classes: u64,
}

/// Dense counting up to this many keys, and at most this many per base row
/// (the array is cleared for every anonymization).
const DENSE: u64 = 1 << 22;
const DENSE_PER_ROW: u64 = 8;

struct Scorer<'a> {
    p: &'a Problem<'a>,
    /// Records in all.
    n: u64,
    /// Per QI, per leaf index: records with that value.
    marg: Vec<Vec<u64>>,
    scratch: Scratch,
    evaluated: u64,
}

impl<'a> Scorer<'a> {
    fn new(p: &'a Problem<'a>) -> Self {
        let n = p.counts.iter().sum();
        let marg = p
            .codes
            .iter()
            .zip(p.domains)
            .map(|(col, d)| {
                let mut m = vec![0u64; d.len()];
                for (&c, &w) in col.iter().zip(p.counts) {
                    m[c as usize] += w;
                }
                m
            })
            .collect();
        Scorer { p, n, marg, scratch: Scratch::default(), evaluated: 0 }
    }

    /// Another evaluator of the same problem, with its own buffers.
    fn fork(&self) -> Self {
        Scorer { p: self.p, n: self.n, marg: self.marg.clone(), scratch: Scratch::default(), evaluated: 0 }
    }

    /// Count classes: each base row's class key into `keys`, sizes by key.
    /// Returns whether the counts are in `slots` (else in `map`).
    fn count(&mut self, attrs: &[Arc<State>]) -> bool {
        let rows = self.p.counts.len();
        let s = &mut self.scratch;
        s.keys.clear();
        s.keys.resize(rows, 0);
        let mut stride: u64 = 1;
        let mut overflow = false;
        for (a, st) in attrs.iter().enumerate() {
            let col = &self.p.codes[a];
            let blocks = &st.blocks;
            for (k, &c) in s.keys.iter_mut().zip(col) {
                *k += blocks[c as usize] as u64 * stride;
            }
            match stride.checked_mul(st.nblocks.max(1) as u64) {
                Some(x) => stride = x,
                None => overflow = true,
            }
        }
        if overflow {
            // Key space past 64 bits: number the classes by their block tuples.
            let mut ids: FxHashMap<Vec<u32>, u64> = FxHashMap::default();
            for r in 0..rows {
                let t: Vec<u32> =
                    attrs.iter().enumerate().map(|(a, st)| st.blocks[self.p.codes[a][r] as usize]).collect();
                let next = ids.len() as u64;
                s.keys[r] = *ids.entry(t).or_insert(next);
            }
            stride = ids.len() as u64;
        }
        if stride <= DENSE.min((rows as u64 * DENSE_PER_ROW).max(4096)) {
            s.slots.clear();
            s.slots.resize(stride as usize, 0);
            s.classes = 0;
            for (&k, &w) in s.keys.iter().zip(self.p.counts) {
                let slot = &mut s.slots[k as usize];
                s.classes += (*slot == 0) as u64;
                *slot += w;
            }
            true
        } else {
            s.map.clear();
            for (&k, &w) in s.keys.iter().zip(self.p.counts) {
                *s.map.entry(k).or_default() += w;
            }
            s.classes = s.map.len() as u64;
            false
        }
    }

    /// Per leaf index of QI `a`: hdm's (N_e − N_v) / (N − N_v) (0 when N_v = N).
    fn hdm_pen(&mut self, a: usize, st: &State) {
        let s = &mut self.scratch;
        s.block_n.clear();
        s.block_n.resize(st.nblocks as usize, 0);
        for (v, &b) in st.blocks.iter().enumerate() {
            s.block_n[b as usize] += self.marg[a][v];
        }
        s.qi_pen.clear();
        for (v, &b) in st.blocks.iter().enumerate() {
            let nv = self.marg[a][v];
            let ne = s.block_n[b as usize];
            s.qi_pen.push(if nv >= self.n { 0.0 } else { (ne - nv) as f64 / (self.n - nv) as f64 });
        }
    }

    /// Each base row's cost if kept, for hdm (mean over QIs) or glm (sum), into `pen`.
    fn row_costs(&mut self, attrs: &[Arc<State>], metric: Metric) {
        let rows = self.p.counts.len();
        self.scratch.pen.clear();
        self.scratch.pen.resize(rows, 0.0);
        let m = attrs.len().max(1) as f64;
        for (a, st) in attrs.iter().enumerate() {
            match metric {
                Metric::Hdm => self.hdm_pen(a, st),
                _ => {
                    let mut out = std::mem::take(&mut self.scratch.qi_pen);
                    self.p.domains[a].glm_costs(st, &mut out);
                    self.scratch.qi_pen = out;
                }
            }
            let s = &mut self.scratch;
            for (pen, &c) in s.pen.iter_mut().zip(&self.p.codes[a]) {
                *pen += s.qi_pen[c as usize];
            }
        }
        if metric == Metric::Hdm {
            for pen in &mut self.scratch.pen {
                *pen /= m;
            }
        }
    }

    /// Each base row's kept penalty in units (hdm or glm), over every QI but `skip`.
    fn row_units(&mut self, attrs: &[Arc<State>], skip: Option<usize>) {
        let rows = self.p.counts.len();
        self.scratch.row_units.clear();
        self.scratch.row_units.resize(rows, 0);
        for (a, st) in attrs.iter().enumerate().filter(|(a, _)| Some(*a) != skip) {
            if self.p.metric == Metric::Hdm {
                self.hdm_pen(a, st);
            } else {
                let mut out = std::mem::take(&mut self.scratch.qi_pen);
                self.p.domains[a].glm_costs(st, &mut out);
                self.scratch.qi_pen = out;
            }
            let s = &mut self.scratch;
            s.qi_units.clear();
            s.qi_units.extend(s.qi_pen.iter().map(|&x| units(x)));
            for (u, &c) in s.row_units.iter_mut().zip(&self.p.codes[a]) {
                *u += s.qi_units[c as usize];
            }
        }
    }

    /// A suppressed record's cost in units (hdm, glm).
    fn suppressed_units(&self) -> Cost {
        SCALE as Cost * self.p.domains.len() as Cost
    }

    fn size_of(&self, dense: bool, r: usize) -> u64 {
        let k = self.scratch.keys[r];
        if dense {
            self.scratch.slots[k as usize]
        } else {
            self.scratch.map[&k]
        }
    }

    fn eval(&mut self, attrs: &[Arc<State>]) -> Eval {
        self.evaluated += 1;
        let metric = self.p.metric;
        let dense = self.count(attrs);
        let k = self.p.k;
        let rows = self.p.counts.len();
        let mut suppressed = 0u64;
        let blocks = attrs.iter().map(|s| s.nblocks).sum();
        let (cost, lb) = match metric {
            Metric::Dm => {
                let mut kept: u128 = 0;
                for r in 0..rows {
                    let size = self.size_of(dense, r);
                    let w = self.p.counts[r];
                    if size >= k {
                        kept += w as u128 * size as u128;
                    } else {
                        suppressed += w;
                    }
                }
                let cost = kept + self.n as u128 * suppressed as u128;
                let lb = kept + k.min(self.n) as u128 * suppressed as u128;
                (cost as Cost, lb as Cost)
            }
            _ => {
                self.row_units(attrs, None);
                let (mut kept, mut all): (Cost, Cost) = (0, 0);
                for r in 0..rows {
                    let size = self.size_of(dense, r);
                    let w = self.p.counts[r];
                    let pen = w as Cost * self.scratch.row_units[r];
                    all += pen;
                    if size >= k {
                        kept += pen;
                    } else {
                        suppressed += w;
                    }
                }
                // Below this node a record costs at least its penalty here.
                (kept + self.suppressed_units() * suppressed as Cost, all)
            }
        };
        Eval { cost, lb, suppressed, classes: self.scratch.classes, blocks, below_blocks: blocks.saturating_sub(1) }
    }

    /// The DP for QI `a`: its valid blocks, marginals and charges.
    fn dp_for(&self, a: usize) -> PartitionDp {
        let d = &self.p.domains[a];
        let n = d.len();
        let blocks = d.valid_blocks().expect("dp_qi checks the scheme").to_vec();
        let mut marginal = vec![0u64; n];
        for (leaf, &m) in self.marg[a].iter().enumerate() {
            marginal[d.hier_rank[leaf] as usize] = m;
        }
        let charge = match self.p.metric {
            Metric::Dm => Charge::Dm,
            Metric::Hdm => Charge::Penalty {
                suppressed: self.suppressed_units(),
                own: Own::Hdm { scale: SCALE, marginal: marginal.clone(), total: self.n },
            },
            _ => {
                let mut per = vec![0 as Cost; 1 << n];
                for &b in &blocks {
                    let members: Vec<u32> = (0..n as u32).filter(|&i| b >> d.hier_rank[i as usize] & 1 == 1).collect();
                    per[b as usize] = units(d.glm_block_cost(&members));
                }
                Charge::Penalty { suppressed: self.suppressed_units(), own: Own::PerBlock(per) }
            }
        };
        PartitionDp::new(n, blocks, &marginal, self.p.k, charge)
    }

    /// Evaluate the other QIs' partitions in `attrs` with QI `a`'s best
    /// partition: the bound over that QI's partitions always, the optimum
    /// (and its state) unless `hopeless(bound, most blocks)` says it cannot win.
    fn eval_dp(
        &mut self,
        attrs: &[Arc<State>],
        a: usize,
        dp: &mut PartitionDp,
        top: &Arc<State>,
        own_bound: bool,
        cap: Option<Cost>,
        hopeless: impl Fn(Cost, u32) -> bool,
    ) -> (Eval, Option<Arc<State>>) {
        self.evaluated += 1;
        let d = &self.p.domains[a];
        let n = d.len();
        let mut others = attrs.to_vec();
        others[a] = top.clone();
        self.count(&others);
        // Rest classes numbered by first appearance.
        let mut ids: FxHashMap<u64, u32> = FxHashMap::default();
        let class: Vec<u32> = self
            .scratch
            .keys
            .iter()
            .map(|k| {
                let next = ids.len() as u32;
                *ids.entry(*k).or_insert(next)
            })
            .collect();
        let r = ids.len();
        let mut rest = Rest { classes: r, count: vec![0; n * r], penalty: Vec::new(), small: Vec::new() };
        let bit = |row: usize| d.hier_rank[self.p.codes[a][row] as usize] as usize;
        for (row, (&c, &w)) in class.iter().zip(self.p.counts).enumerate() {
            rest.count[bit(row) * r + c as usize] += w;
        }
        if self.p.metric != Metric::Dm {
            self.row_units(attrs, Some(a));
            rest.penalty = vec![0; n * r];
            for (row, (&c, &w)) in class.iter().zip(self.p.counts).enumerate() {
                rest.penalty[bit(row) * r + c as usize] += w as Cost * self.scratch.row_units[row];
            }
        }
        let others_blocks: u32 = attrs.iter().enumerate().filter(|(b, _)| *b != a).map(|(_, s)| s.nblocks).sum();
        let most = others_blocks + n as u32;
        let mut e = Eval {
            cost: Cost::MAX,
            lb: dp.bound(&rest),
            suppressed: 0,
            classes: r as u64,
            blocks: most,
            below_blocks: most.saturating_sub(1),
        };
        // This node cannot win: its cost is not needed. Its own bound (not
        // one on everything below it), or with `classes` off the node's.
        let own = if own_bound {
            rest = dp.split_small(rest);
            dp.node_bound(&rest)
        } else {
            e.lb
        };
        if hopeless(own, most) {
            return (e, None);
        }
        let budget = self.p.cap;
        if let Some(c) = budget {
            // The rest classes under k are suppressed at every partition of
            // the DP's QI, the fewest it can suppress: more than the cap, and
            // none is a candidate.
            let (k, r) = (self.p.k, rest.classes);
            let least: u64 =
                (0..r).map(|c| (0..n).map(|v| rest.count[v * r + c]).sum::<u64>()).filter(|&x| x < k).sum::<u64>()
                    + rest.small.iter().sum::<u64>();
            if least > c {
                return (e, None);
            }
        }
        dp.block_costs(&rest);
        // The DP may stop short once the node's cost is surely over `cap`.
        let Some((mut cost, mut masks)) = dp.solve(cap) else {
            return (e, None);
        };
        if let Some(c) = budget {
            // The optimum without the cap, if within it, is the optimum under
            // it; else the DP again, over fronts, within the budget.
            e.suppressed = dp.suppressed(&rest, &masks);
            if e.suppressed > c {
                let Some(within) = dp.solve_within(&rest, cap, c) else {
                    return (e, None);
                };
                (cost, masks) = within;
                e.suppressed = dp.suppressed(&rest, &masks);
            }
        }
        let mut blocks = vec![0u32; n];
        for (leaf, b) in blocks.iter_mut().enumerate() {
            *b = masks.iter().position(|m| m >> d.hier_rank[leaf] & 1 == 1).expect("the blocks cover every value")
                as u32;
        }
        let st = d.from_blocks(&blocks).expect("the DP takes valid blocks only");
        e.cost = cost;
        e.blocks = others_blocks + st.nblocks;
        (e, Some(st))
    }

    /// `lb`, the bound of a node at `attrs` (its DP's QI, if any, `dp`),
    /// raised for the records that stay in classes under k however the QIs
    /// `free` says may still change below it are generalized: their classes
    /// with those QIs at one block hold fewer than k records, so below the
    /// node they are suppressed, where `lb` charged them as if kept.
    fn stuck(&mut self, attrs: &[Arc<State>], ends: &Ends, free: &[bool], dp: Option<usize>, lb: Cost) -> Cost {
        let tops = &ends.tops;
        let fixed: Vec<Arc<State>> =
            attrs.iter().zip(tops).zip(free).map(|((s, t), &f)| if f { t.clone() } else { s.clone() }).collect();
        let dense = self.count(&fixed);
        let k = self.p.k;
        let rows = self.p.counts.len();
        let stuck = |ev: &Self, r: usize| ev.size_of(dense, r) < k;
        let records: u64 = (0..rows).filter(|&r| stuck(self, r)).map(|r| self.p.counts[r]).sum();
        if self.p.cap.is_some_and(|c| records > c) {
            // Every anonymization below suppresses these: none is within the cap.
            return Cost::MAX;
        }
        match self.p.metric {
            Metric::Dm => lb + (self.n - k.min(self.n)) as Cost * records as Cost,
            _ => {
                let rows_stuck: Vec<usize> = (0..rows).filter(|&r| stuck(self, r)).collect();
                if rows_stuck.is_empty() {
                    return lb;
                }
                // What `lb` charged them: their penalty kept, the DP's QI at its finest.
                let charged: Vec<Arc<State>> = match dp {
                    Some(a) => attrs
                        .iter()
                        .enumerate()
                        .map(|(b, s)| if b == a { ends.roots[a].clone() } else { s.clone() })
                        .collect(),
                    None => attrs.to_vec(),
                };
                self.row_units(&charged, None);
                let supp = self.suppressed_units();
                lb + rows_stuck
                    .iter()
                    .map(|&r| self.p.counts[r] as Cost * (supp - self.scratch.row_units[r]))
                    .sum::<Cost>()
            }
        }
    }

    /// All metrics of one anonymization (for the report).
    fn measures(&mut self, attrs: &[Arc<State>]) -> Measures {
        let dense = self.count(attrs);
        let rows = self.p.counts.len();
        let kept_row: Vec<bool> = (0..rows).map(|r| self.size_of(dense, r) >= self.p.k).collect();
        let classes = self.scratch.classes;
        let mut out = Measures { dm: 0.0, hdm: 0.0, glm: 0.0, suppressed: 0, classes };
        let mut dm: u128 = 0;
        for r in 0..rows {
            let w = self.p.counts[r];
            if kept_row[r] {
                dm += w as u128 * self.size_of(dense, r) as u128;
            } else {
                out.suppressed += w;
                dm += w as u128 * self.n as u128;
            }
        }
        out.dm = dm as f64;
        // Floating sums in one order whatever order the base rows came in.
        let order = row_order(self.p);
        for metric in [Metric::Hdm, Metric::Glm] {
            self.row_costs(attrs, metric);
            let per_suppressed = if metric == Metric::Hdm { 1.0 } else { attrs.len() as f64 };
            let v: f64 = order
                .iter()
                .map(|&r| self.p.counts[r] as f64 * if kept_row[r] { self.scratch.pen[r] } else { per_suppressed })
                .sum();
            if metric == Metric::Hdm {
                out.hdm = v;
            } else {
                out.glm = v;
            }
        }
        out
    }

    /// The classes under k, as block ids per QI (what the release drops).
    fn small_classes(&mut self, attrs: &[Arc<State>]) -> Vec<Vec<u32>> {
        let dense = self.count(attrs);
        let mut out: Vec<Vec<u32>> = (0..self.p.counts.len())
            .filter(|&r| self.size_of(dense, r) < self.p.k)
            .map(|r| attrs.iter().enumerate().map(|(a, st)| st.blocks[self.p.codes[a][r] as usize]).collect())
            .collect();
        out.sort();
        out.dedup();
        out
    }
}

/// A node of the enumeration tree: a partition per QI and its applicators.
struct SearchNode {
    attrs: Vec<Arc<State>>,
    apps: Vec<u16>,
    eval: Eval,
    seq: u64,
}

/// The queue, ordered by lower bound (node rearrangement) or FIFO.
enum Queue {
    Heap(BinaryHeap<ByBound>),
    Fifo(VecDeque<SearchNode>),
}

struct ByBound(SearchNode);

impl PartialEq for ByBound {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for ByBound {}
impl PartialOrd for ByBound {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for ByBound {
    /// The least bound first (BinaryHeap is a max-heap); then the oldest.
    fn cmp(&self, o: &Self) -> Ordering {
        o.0.eval.lb.cmp(&self.0.eval.lb).then(o.0.seq.cmp(&self.0.seq))
    }
}

impl Queue {
    fn push(&mut self, n: SearchNode) {
        match self {
            Queue::Heap(h) => h.push(ByBound(n)),
            Queue::Fifo(q) => q.push_back(n),
        }
    }
    fn pop(&mut self) -> Option<SearchNode> {
        match self {
            Queue::Heap(h) => h.pop().map(|b| b.0),
            Queue::Fifo(q) => q.pop_front(),
        }
    }
}

/// The best anonymization so far, with what the tie-break compares.
struct Best {
    attrs: Vec<Arc<State>>,
    cost: Cost,
    blocks: u32,
    vector: Vec<Vec<u32>>,
}

/// Whether a DP node with this bound and at most this many blocks cannot win
/// against `best` (then the DP is not run for it).
fn hopeless_against(best: &Option<Best>) -> impl Fn(Cost, u32) -> bool + Copy + Send + Sync {
    let best = best.as_ref().map(|b| (b.cost, b.blocks));
    move |lb, most| best.is_some_and(|(c, nb)| lb > c || (lb == c && most < nb))
}

/// Each QI's finest and coarsest partitions.
struct Ends {
    roots: Vec<Arc<State>>,
    tops: Vec<Arc<State>>,
}

struct Search<'a> {
    ev: Scorer<'a>,
    ends: Ends,
    best: Option<Best>,
    pruning: Pruning,
    seq: u64,
    expanded: u64,
    /// Told the evaluations so far and the best cost, now and then.
    progress: &'a dyn Progress,
    /// The QI the DP solves, its DP, and the state standing in for it in
    /// the tree's nodes.
    dp: Option<(usize, PartitionDp, Arc<State>)>,
    /// With the DP: an evaluator and a DP per thread, and the threads.
    workers: Vec<std::sync::Mutex<(Scorer<'a>, PartitionDp)>>,
    pool: Option<rayon::ThreadPool>,
}

impl<'a> Search<'a> {
    fn vector(&self, attrs: &[Arc<State>]) -> Vec<Vec<u32>> {
        attrs.iter().zip(self.ev.p.domains).map(|(s, d)| d.canonical(&s.blocks)).collect()
    }

    /// Offer an evaluated anonymization as the optimum: least cost, then
    /// more blocks in all, then the smaller partition vector.
    fn consider(&mut self, attrs: &[Arc<State>], e: &Eval) {
        if self.ev.p.cap.is_some_and(|c| e.suppressed > c) {
            return;
        }
        let better = match &self.best {
            None => true,
            Some(b) => match e.cost.cmp(&b.cost).then(b.blocks.cmp(&e.blocks)) {
                Ordering::Less => true,
                Ordering::Greater => false,
                Ordering::Equal => self.vector(attrs) < b.vector,
            },
        };
        if better {
            let vector = self.vector(attrs);
            self.best = Some(Best { attrs: attrs.to_vec(), cost: e.cost, blocks: e.blocks, vector });
        }
    }

    /// Whether nothing under a node with this bound and these blocks can
    /// win: its descendants cost at least `lb` and have at most `below_blocks`.
    fn bounded_out(&self, e: &Eval) -> bool {
        match &self.best {
            None => false,
            Some(b) => e.lb > b.cost || (e.lb == b.cost && e.below_blocks < b.blocks),
        }
    }

    /// The metric's value of a cost, for the spinner.
    fn shown(&self, cost: Cost) -> f64 {
        match self.ev.p.metric {
            Metric::Dm => cost as f64,
            Metric::Hdm => cost as f64 / self.ev.suppressed_units() as f64,
            _ => cost as f64 / SCALE,
        }
    }

    fn evaluate(&mut self, mut attrs: Vec<Arc<State>>) -> (Vec<Arc<State>>, Eval) {
        let e = match &mut self.dp {
            None => self.ev.eval(&attrs),
            Some((a, dp, top)) => {
                let hopeless = hopeless_against(&self.best);
                let cap = self.best.as_ref().map(|b| b.cost);
                let (e, st) = self.ev.eval_dp(&attrs, *a, dp, top, self.pruning.small_classes, cap, hopeless);
                if let Some(st) = st {
                    attrs[*a] = st;
                }
                e
            }
        };
        self.tick(1);
        if e.cost != Cost::MAX {
            self.consider(&attrs, &e);
        }
        (attrs, e)
    }

    /// Evaluate a batch of anonymizations. With the DP they run in parallel,
    /// each judged against the best as it stood before the batch (so the work
    /// done does not depend on timing), and are then offered in order.
    fn evaluate_all(&mut self, batch: Vec<Vec<Arc<State>>>) -> Vec<(Vec<Arc<State>>, Eval)> {
        let Some((a, dp, top)) = self.dp.as_ref().filter(|_| batch.len() > 1 && self.pool.is_some()) else {
            return batch.into_iter().map(|attrs| self.evaluate(attrs)).collect();
        };
        let (a, top) = (*a, top.clone());
        let pool = self.pool.as_ref().expect("checked above");
        if self.workers.is_empty() {
            self.workers =
                (0..pool.current_num_threads()).map(|_| std::sync::Mutex::new((self.ev.fork(), dp.clone()))).collect();
        }
        let hopeless = hopeless_against(&self.best);
        let cap = self.best.as_ref().map(|b| b.cost);
        let small_classes = self.pruning.small_classes;
        let workers = &self.workers;
        let out: Vec<(Vec<Arc<State>>, Eval)> = pool.install(|| {
            use rayon::prelude::*;
            batch
                .into_par_iter()
                .map(|mut attrs| {
                    let i = rayon::current_thread_index().unwrap_or(0) % workers.len();
                    let mut w = workers[i].lock().unwrap_or_else(|e| e.into_inner());
                    let (ev, dp) = &mut *w;
                    let (e, st) = ev.eval_dp(&attrs, a, dp, &top, small_classes, cap, hopeless);
                    if let Some(st) = st {
                        attrs[a] = st;
                    }
                    (attrs, e)
                })
                .collect()
        });
        self.ev.evaluated += out.len() as u64;
        self.tick(out.len() as u64);
        for (attrs, e) in &out {
            if e.cost != Cost::MAX {
                self.consider(attrs, e);
            }
        }
        out
    }

    /// Tell the spinner, now and then, how far the search has got.
    fn tick(&self, evaluated: u64) {
        let crossed = self.ev.evaluated / (1 << 14) != (self.ev.evaluated - evaluated) / (1 << 14);
        if crossed {
            let best = self.best.as_ref().map_or("none yet".into(), |b| format!("{:.6}", self.shown(b.cost)));
            self.progress.message(format!(
                "{} anonymizations evaluated, {} expanded; best {} so far: {best}",
                self.ev.evaluated,
                self.expanded,
                self.ev.p.metric.name()
            ));
        }
    }

    /// Seeding: every full-domain anonymization (when the level lattice is
    /// small), then a greedy descent from the most specific one.
    fn seed(&mut self, root: &[Arc<State>]) {
        let domains = self.ev.p.domains;
        let fixed = self.dp.as_ref().map(|(a, _, top)| (*a, top.clone()));
        let levels: Vec<Vec<Arc<State>>> = domains
            .iter()
            .enumerate()
            .map(|(a, d)| match &fixed {
                Some((f, top)) if *f == a => vec![top.clone()],
                _ => d.level_states(),
            })
            .collect();
        let size = levels.iter().try_fold(1u64, |acc, l| acc.checked_mul(l.len() as u64));
        if size.is_some_and(|s| s <= 20_000) {
            let mut idx = vec![0usize; levels.len()];
            loop {
                let attrs: Vec<Arc<State>> = idx.iter().zip(&levels).map(|(&i, l)| l[i].clone()).collect();
                self.evaluate(attrs);
                let mut a = 0;
                while a < idx.len() {
                    idx[a] += 1;
                    if idx[a] < levels[a].len() {
                        break;
                    }
                    idx[a] = 0;
                    a += 1;
                }
                if a == idx.len() {
                    break;
                }
            }
        }
        let mut current = root.to_vec();
        loop {
            let mut next: Option<(Vec<Arc<State>>, Eval)> = None;
            let mut batch = Vec::new();
            for (a, d) in domains.iter().enumerate() {
                if self.solved(a) {
                    continue;
                }
                for child in d.children(&current[a]) {
                    let mut attrs = current.clone();
                    attrs[a] = child;
                    batch.push(attrs);
                }
            }
            for (attrs, e) in self.evaluate_all(batch) {
                if next.as_ref().is_none_or(|(_, n)| (e.cost, e.lb) < (n.cost, n.lb)) {
                    next = Some((attrs, e));
                }
            }
            match next {
                Some((attrs, _)) => current = attrs,
                None => break,
            }
        }
    }

    /// Whether the DP solves QI `a` (the tree never steps it).
    fn solved(&self, a: usize) -> bool {
        self.dp.as_ref().is_some_and(|(f, _, _)| *f == a)
    }

    fn run(&mut self) {
        let domains = self.ev.p.domains;
        let root: Vec<Arc<State>> = domains.iter().map(|d| d.root()).collect();
        let top: Vec<Arc<State>> = domains.iter().map(|d| d.top()).collect();
        // The most general anonymization is the paper's initial best.
        self.evaluate(top);
        if self.pruning.seeding {
            self.seed(&root);
        }
        let (root, e) = self.evaluate(root);
        let apps: Vec<u16> = (0..domains.len() as u16)
            .filter(|&a| !self.solved(a as usize) && domains[a as usize].can_step(&root[a as usize]))
            .collect();
        let mut queue =
            if self.pruning.node_order { Queue::Heap(BinaryHeap::new()) } else { Queue::Fifo(VecDeque::new()) };
        if !apps.is_empty() && !self.bounded_out(&e) {
            queue.push(SearchNode { attrs: root, apps, eval: e, seq: 0 });
        }
        // With worker threads, several nodes are expanded per round so that
        // one parallel batch keeps every thread busy; which nodes join a
        // round depends only on the queue, so the work stays deterministic.
        let round = self.pool.as_ref().map_or(1, |pool| 8 * pool.current_num_threads());
        loop {
            // Each node with its children, per applicator.
            let mut nodes: Vec<(SearchNode, Vec<(u16, Vec<Arc<State>>)>)> = Vec::new();
            let mut children = 0;
            while children < round {
                let Some(node) = queue.pop() else { break };
                if self.pruning.modified_bfs && self.bounded_out(&node.eval) {
                    continue;
                }
                let kids: Vec<(u16, Vec<Arc<State>>)> =
                    node.apps.iter().map(|&a| (a, domains[a as usize].children(&node.attrs[a as usize]))).collect();
                children += kids.iter().map(|(_, k)| k.len()).sum::<usize>();
                nodes.push((node, kids));
            }
            if nodes.is_empty() {
                break;
            }
            self.expanded += nodes.len() as u64;
            // Every child of every applicator of every node, evaluated.
            let mut batch = Vec::with_capacity(children);
            for (node, kids) in &nodes {
                for (a, states) in kids {
                    for kid in states {
                        let mut attrs = node.attrs.clone();
                        attrs[*a as usize] = kid.clone();
                        batch.push(attrs);
                    }
                }
            }
            let mut evaluated = self.evaluate_all(batch).into_iter();
            for (node, kids) in &nodes {
                let by_app: Vec<(u16, Vec<(Vec<Arc<State>>, Eval)>)> =
                    kids.iter().map(|(a, states)| (*a, evaluated.by_ref().take(states.len()).collect())).collect();
                self.push_children(&mut queue, node, by_app);
            }
        }
    }

    /// Queue a node's evaluated children that can still win, each with the
    /// applicators from its own onwards (in applicator order).
    fn push_children(
        &mut self,
        queue: &mut Queue,
        node: &SearchNode,
        mut by_app: Vec<(u16, Vec<(Vec<Arc<State>>, Eval)>)>,
    ) {
        let domains = self.ev.p.domains;
        // Useless applicators: every child bounded out.
        by_app.retain(|(_, kids)| kids.iter().any(|(_, e)| !self.bounded_out(e)));
        if self.pruning.applicator_order {
            // Fewest classes merged by one step first (mean over its children).
            let merged = |kids: &Vec<(Vec<Arc<State>>, Eval)>| -> f64 {
                kids.iter().map(|(_, e)| node.eval.classes.saturating_sub(e.classes) as f64).sum::<f64>()
                    / kids.len().max(1) as f64
            };
            by_app.sort_by(|x, y| merged(&x.1).total_cmp(&merged(&y.1)).then(x.0.cmp(&y.0)));
        }
        let order: Vec<u16> = by_app.iter().map(|(a, _)| *a).collect();
        let dp = self.dp.as_ref().map(|(a, _, _)| *a);
        for (p, (a, kids)) in by_app.into_iter().enumerate() {
            for (attrs, mut e) in kids {
                if self.bounded_out(&e) {
                    continue;
                }
                let apps: Vec<u16> = order[p..]
                    .iter()
                    .copied()
                    .filter(|&b| b != a || domains[a as usize].can_step(&attrs[a as usize]))
                    .collect();
                if apps.is_empty() {
                    continue;
                }
                if self.pruning.stuck_classes {
                    let free: Vec<bool> =
                        (0..domains.len()).map(|b| Some(b) == dp || apps.contains(&(b as u16))).collect();
                    e.lb = self.ev.stuck(&attrs, &self.ends, &free, dp, e.lb);
                    if e.lb == Cost::MAX || self.bounded_out(&e) {
                        continue;
                    }
                }
                self.seq += 1;
                queue.push(SearchNode { attrs, apps, eval: e, seq: self.seq });
            }
        }
    }
}

/// The optimal anonymization of `p`, or None when no anonymization keeps
/// suppression within the cap. `progress`, when given, is told how far the
/// search has got (the search is exact, and can be long on large domains).
pub fn search(p: &Problem, pruning: Pruning, progress: &dyn Progress) -> Option<Optimum> {
    let ev = Scorer::new(p);
    let dp_qi = dp_qi(p, pruning.dp);
    let dp = dp_qi.map(|a| {
        let mut dp = ev.dp_for(a);
        dp.skip_useless_blocks(pruning.useless_blocks);
        (a, dp, p.domains[a].top())
    });
    let pool = dp
        .as_ref()
        .and_then(|_| rayon::ThreadPoolBuilder::new().num_threads(p.threads.unwrap_or(0)).build().ok())
        .filter(|pool| pool.current_num_threads() > 1);
    let ends =
        Ends { roots: p.domains.iter().map(|d| d.root()).collect(), tops: p.domains.iter().map(|d| d.top()).collect() };
    let mut s = Search { ev, ends, best: None, pruning, seq: 0, expanded: 0, progress, dp, workers: Vec::new(), pool };
    s.run();
    let best = s.best.take()?;
    let measures = s.ev.measures(&best.attrs);
    Some(Optimum { partitions: best.attrs, measures, evaluated: s.ev.evaluated, expanded: s.expanded, dp_qi })
}

/// The classes the release drops at `partitions`: block ids per QI.
pub(crate) fn dropped_classes(p: &Problem, partitions: &[Arc<State>]) -> Vec<Vec<u32>> {
    Scorer::new(p).small_classes(partitions)
}

/// The base rows by their leaf indices, QI by QI: an order that does not
/// depend on how the base frequency set was read.
fn row_order(p: &Problem) -> Vec<usize> {
    let mut order: Vec<usize> = (0..p.counts.len()).collect();
    order.sort_unstable_by(|&x, &y| {
        p.codes.iter().map(|c| c[x].cmp(&c[y])).find(|o| o.is_ne()).unwrap_or(Ordering::Equal)
    });
    order
}

/// The report's lm and am (docs/cells.md) of an anonymization: a kept
/// record's cell on a QI is its value's block, LM = (leaves it covers − 1) /
/// (hierarchy leaves − 1), standing for the leaves it covers; a suppressed
/// record costs 1 a QI and stands for every leaf of every hierarchy.
pub(crate) fn lm_am(p: &Problem, partitions: &[Arc<State>]) -> (f64, f64) {
    let mut ev = Scorer::new(p);
    let dense = ev.count(partitions);
    let covered: Vec<Vec<u64>> = p.domains.iter().zip(partitions).map(|(d, s)| d.covered(s)).collect();
    let n = partitions.len();
    let everything: f64 = p.domains.iter().map(|d| d.hierarchy_leaves as f64).product();
    let (mut lm, mut am, mut rows) = (0.0, 0.0, 0u64);
    for r in row_order(p) {
        let count = p.counts[r];
        rows += count;
        if ev.size_of(dense, r) < p.k {
            lm += (count * n as u64) as f64;
            am += count as f64 * everything;
            continue;
        }
        let (mut sum, mut product) = (0.0, 1.0);
        for (a, (d, s)) in p.domains.iter().zip(partitions).enumerate() {
            let leaves = covered[a][s.blocks[p.codes[a][r] as usize] as usize];
            sum += (leaves - 1) as f64 / d.hierarchy_leaves.saturating_sub(1).max(1) as f64;
            product *= leaves as f64;
        }
        lm += count as f64 * sum;
        am += count as f64 * product;
    }
    if rows == 0 || n == 0 {
        return (0.0, 0.0);
    }
    (lm / (rows * n as u64) as f64, am / rows as f64)
}
