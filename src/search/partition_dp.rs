//! One QI's optimal partition when every other QI's partition is fixed, by
//! dynamic programming over sets of its values (docs/schemes.md, "One QI by
//! dynamic programming").
//!
//! With the others fixed, a record's class is its block of this QI together
//! with its class over the other QIs (its *rest class*), so an anonymization
//! costs the sum over this QI's blocks B of what B's classes cost. The best
//! partition is then best(S) = min over valid blocks B ∋ min(S), B ⊆ S, of
//! cost(B) + best(S \ B): about 3ⁿ/2 steps for n values where the
//! enumeration tree holds every partition (Bell(n) under SPS). Values are bits
//! by hierarchy rank and blocks are taken in order of their first value, so
//! ties resolve block by block exactly as the tie-break compares block lists.
//!
//! The bound: charge each suppressed record only what it costs at least under
//! any coarser partition of the other QIs (dm: k; hdm, glm: its penalty if
//! kept, never more than a suppressed record's charge). That bounds every
//! anonymization whose other partitions are coarser: classes only merge, a
//! kept record's cost only grows, a suppressed one costs at least that. The
//! charge only grows when blocks of this QI merge (per record, dm's
//! max(k, |E|) and a penalty both grow with the block), so its least value
//! over this QI's partitions is at the finest one, read off without the DP:
//! a node the bound rules out costs no DP at all.
//!
//! Three exact cuts (docs/schemes.md, "Pruning the DP"): rest classes under k
//! in all are suppressed whatever the partition, so they leave the DP and
//! raise the node's own bound ([`PartitionDp::split_small`],
//! [`PartitionDp::node_bound`]); a block some split of it beats is dropped,
//! and the DP runs top-down over the rest ([`Shape::candidates`],
//! [`TopDown`]); and it stops short once the node surely costs more than
//! the best so far (`solve`'s cap).
//!
//! Under a suppression budget ([`PartitionDp::solve_within`], docs/schemes.md,
//! "Under a suppression cap"): the unconstrained optimum when it keeps to the
//! budget, else a DP whose value per set is the Pareto front of (suppressed
//! records, weight) of its partitions ([`Fronts`]); a block is useless there
//! only when a split of it weighs less and suppresses no more.

use std::sync::Arc;

/// Costs as the scheme search compares them (integers, see partitions.rs).
pub(crate) type Cost = i128;

/// What a block's records cost besides their class sizes.
#[derive(Clone)]
pub(crate) enum Charge {
    /// dm: |E| per kept record, |D| per suppressed one.
    Dm,
    /// hdm or glm, in units: per suppressed record `suppressed`; per kept
    /// record its rest penalty (given per rest class) plus this QI's, which
    /// is, per block mask and value bit, `own(mask, bit)`.
    Penalty { suppressed: Cost, own: Own },
}

/// This QI's own penalty of a value in a block.
#[derive(Clone)]
pub(crate) enum Own {
    /// hdm: round(scale · (N_B − N_v) / (N − N_v)), from the marginals per bit.
    Hdm { scale: f64, marginal: Vec<u64>, total: u64 },
    /// glm: one value per block mask (only valid masks are read).
    PerBlock(Vec<Cost>),
}

impl Own {
    fn of(&self, mask: u32, bit: usize) -> Cost {
        match self {
            Own::Hdm { scale, marginal, total } => {
                let nv = marginal[bit];
                if nv >= *total {
                    return 0;
                }
                let nb: u64 = (0..marginal.len()).filter(|&b| mask >> b & 1 == 1).map(|b| marginal[b]).sum();
                (scale * ((nb - nv) as f64 / (total - nv) as f64)).round() as Cost
            }
            Own::PerBlock(q) => q[mask as usize],
        }
    }
}

/// The records of one anonymization of the other QIs, per value bit of this
/// QI and rest class: `count` records, `penalty` their summed rest penalty
/// (hdm and glm only), both `bits × classes`, bit-major. `small`: per bit,
/// the records of rest classes left out of `count` because they hold fewer
/// than k records in all, so that they are suppressed whatever this QI's
/// partition ([`PartitionDp::split_small`]).
pub(crate) struct Rest {
    pub(crate) classes: usize,
    pub(crate) count: Vec<u64>,
    pub(crate) penalty: Vec<Cost>,
    pub(crate) small: Vec<u64>,
}

/// The DP for one QI, its buffers reused node after node.
#[derive(Clone)]
pub(crate) struct PartitionDp {
    n: usize,
    k: u64,
    total: u64,
    charge: Charge,
    valid: Vec<bool>,
    /// Valid masks, ascending, and by their lowest bit.
    blocks: Vec<u32>,
    by_low: Vec<Vec<u32>>,
    /// Whether most subsets are valid blocks (then the DP walks submasks and
    /// block costs come from one depth-first pass over all subsets).
    dense: bool,
    /// Σ_{v ∈ B} own(B, v) · N_v per mask (hdm, glm): the own penalty of B's
    /// records when none is suppressed.
    own_all: Vec<Cost>,
    /// `own(mask, bit)` at `mask · n + bit` for valid masks (hdm, glm), built
    /// once and shared by the workers' copies: the block costs' inner loop reads it.
    own_table: Arc<Vec<i64>>,
    cost: Vec<Cost>,
    /// Per subset: the records in its classes under k, as if it were one
    /// block (every subset in dense shapes, the valid blocks otherwise);
    /// counted only when a partition must keep within a cap.
    supp: Vec<u64>,
    /// The records of `Rest::small`, suppressed whatever the partition.
    small: u64,
    /// What the records of `Rest::small` cost, whatever the partition.
    fixed: Cost,
    /// [`Self::value_bounds`] of the last block costs.
    value_bound: Vec<Cost>,
    /// Whether the DP skips blocks a split of them beats (`--pruning-off blocks`).
    useless_blocks: bool,
    /// Whether every weighted sum fits 64 bits (then the DP sums in u64).
    narrow: bool,
    b64: Buffers<u64>,
    b128: Buffers<u128>,
}

impl PartitionDp {
    /// `blocks`: the valid block masks (every single value among them) over
    /// `n` ≤ 16 bits; `marginal`: records per bit; `k`; the charge.
    pub(crate) fn new(n: usize, blocks: Vec<u32>, marginal: &[u64], k: u64, charge: Charge) -> PartitionDp {
        assert!((1..=16).contains(&n) && marginal.len() == n, "the DP takes 1 to 16 values");
        let size = 1usize << n;
        let mut valid = vec![false; TABLE];
        let mut by_low = vec![Vec::new(); n];
        for &b in &blocks {
            valid[b as usize] = true;
            by_low[b.trailing_zeros() as usize].push(b);
        }
        let total = marginal.iter().sum();
        let mut own_all = vec![0; size];
        let mut own_table = Vec::new();
        if let Charge::Penalty { own, .. } = &charge {
            own_table = vec![0i64; size * n];
            for &b in &blocks {
                for v in (0..n).filter(|&v| b >> v & 1 == 1) {
                    let o = own.of(b, v);
                    own_table[b as usize * n + v] = i64::try_from(o).expect("an own penalty fits 64 bits");
                    own_all[b as usize] += o * marginal[v] as Cost;
                }
            }
        }
        let dense = blocks.len() * 8 > size;
        // A record costs at most |D| (dm) or a suppressed record's charge.
        let per_record = match &charge {
            Charge::Dm => total as u128,
            Charge::Penalty { suppressed, .. } => *suppressed as u128,
        };
        let narrow = (total as u128)
            .checked_mul(per_record)
            .and_then(|x| x.checked_mul(WEIGHT as u128 * 2))
            .is_some_and(|x| x < 1 << 63);
        PartitionDp {
            n,
            k,
            total,
            charge,
            valid,
            blocks,
            by_low,
            dense,
            own_all,
            own_table: Arc::new(own_table),
            cost: vec![0; size],
            supp: Vec::new(),
            small: 0,
            fixed: 0,
            value_bound: Vec::new(),
            useless_blocks: true,
            narrow,
            b64: Buffers::default(),
            b128: Buffers::default(),
        }
    }

    /// Whether the DP skips blocks a split of them beats (on by default).
    pub(crate) fn skip_useless_blocks(&mut self, on: bool) {
        self.useless_blocks = on;
    }

    /// The records a partition (its blocks as masks) suppresses for these
    /// rest classes, `Rest::small`'s included.
    pub(crate) fn suppressed(&self, rest: &Rest, masks: &[u32]) -> u64 {
        let r = rest.classes;
        let mut sizes = vec![0u64; r];
        let mut out = rest.small.iter().sum::<u64>();
        for &m in masks {
            sizes.iter_mut().for_each(|x| *x = 0);
            for v in (0..self.n).filter(|&v| m >> v & 1 == 1) {
                for (x, &c) in sizes.iter_mut().zip(&rest.count[v * r..(v + 1) * r]) {
                    *x += c;
                }
            }
            out += self.under_k(&sizes);
        }
        out
    }

    /// Each subset's suppressed records into `supp` (only the valid blocks'
    /// unless dense), depth-first as [`Self::dm_costs_dense`].
    fn count_suppressed(&mut self, rest: &Rest) {
        let (n, r, k) = (self.n, rest.classes, self.k);
        self.supp.clear();
        self.supp.resize(1 << n, 0);
        if !self.dense {
            let mut sizes = vec![0u64; r];
            for i in 0..self.blocks.len() {
                let b = self.blocks[i];
                sizes.iter_mut().for_each(|x| *x = 0);
                for v in (0..n).filter(|&v| b >> v & 1 == 1) {
                    for (x, &c) in sizes.iter_mut().zip(&rest.count[v * r..(v + 1) * r]) {
                        *x += c;
                    }
                }
                self.supp[b as usize] = self.under_k(&sizes);
            }
            return;
        }
        let mut sizes = vec![0u64; (n + 1) * r];
        let mut stack: Vec<(u32, usize, usize)> = vec![(0, 0, 0)];
        while let Some((mask, from, depth)) = stack.pop() {
            for v in (from..n).rev() {
                stack.push((mask | 1 << v, v + 1, depth + 1));
            }
            if mask == 0 {
                continue;
            }
            let top = 31 - mask.leading_zeros() as usize;
            let (lo, hi) = sizes.split_at_mut(depth * r);
            let (parent, here) = (&lo[(depth - 1) * r..], &mut hi[..r]);
            let row = &rest.count[top * r..(top + 1) * r];
            let mut under = 0u64;
            for c in 0..r {
                let x = parent[c] + row[c];
                here[c] = x;
                under += if x >= k { 0 } else { x };
            }
            self.supp[mask as usize] = under;
        }
    }

    /// The least bound over this QI's partitions for the rest classes in
    /// `rest.count`: the finest partition's (see the module's notes). It
    /// bounds this anonymization and every one whose other partitions are
    /// coarser.
    pub(crate) fn bound(&self, rest: &Rest) -> Cost {
        let (r, k) = (rest.classes, self.k.min(self.total));
        (0..self.n)
            .map(|v| {
                let sizes = &rest.count[v * r..(v + 1) * r];
                match &self.charge {
                    Charge::Dm => sizes.iter().map(|&x| x as Cost * x.max(k) as Cost).sum::<Cost>(),
                    Charge::Penalty { .. } => {
                        rest.penalty[v * r..(v + 1) * r].iter().sum::<Cost>() + self.own_all[1 << v]
                    }
                }
            })
            .sum()
    }

    /// What a suppressed record costs.
    fn suppressed_charge(&self) -> Cost {
        match &self.charge {
            Charge::Dm => self.total as Cost,
            Charge::Penalty { suppressed, .. } => *suppressed,
        }
    }

    /// Move the rest classes holding fewer than k records in all into
    /// `rest.small`: every block of this QI keeps them under k, so they are
    /// suppressed whatever its partition, at a cost the same for all.
    pub(crate) fn split_small(&self, rest: Rest) -> Rest {
        let (n, r) = (self.n, rest.classes);
        let total = |c: usize| (0..n).map(|v| rest.count[v * r + c]).sum::<u64>();
        let keep: Vec<usize> = (0..r).filter(|&c| total(c) >= self.k).collect();
        if keep.len() == r {
            return rest;
        }
        let mut small = rest.small.clone();
        small.resize(n, 0);
        for (v, s) in small.iter_mut().enumerate() {
            *s += rest.count[v * r..(v + 1) * r].iter().sum::<u64>();
        }
        fn pick<T: Copy>(x: &[T], n: usize, r: usize, keep: &[usize]) -> Vec<T> {
            (0..n).flat_map(|v| keep.iter().map(move |&c| x[v * r + c])).collect()
        }
        let count = pick(&rest.count, n, r, &keep);
        for (v, s) in small.iter_mut().enumerate() {
            *s -= count[v * keep.len()..(v + 1) * keep.len()].iter().sum::<u64>();
        }
        let penalty = if rest.penalty.is_empty() { Vec::new() } else { pick(&rest.penalty, n, r, &keep) };
        Rest { classes: keep.len(), count, penalty, small }
    }

    /// A bound on this anonymization alone, over every partition of this QI:
    /// what the records of `rest.small` cost, suppressed, plus per value v
    /// the least of what its records cost when v is alone in its block and
    /// a bound on what they cost when v shares its block with another value
    /// u, over every u (see docs/schemes.md, "Pruning the DP").
    pub(crate) fn node_bound(&self, rest: &Rest) -> Cost {
        let small = rest.small.iter().sum::<u64>() as Cost * self.suppressed_charge();
        small + self.value_bounds(rest).iter().sum::<Cost>()
    }

    /// Per value (bit): the least its records in `rest.count` cost, alone in
    /// their block or sharing it with any other value ([`Self::node_bound`]);
    /// so a set's values bound what any partition of them costs.
    fn value_bounds(&self, rest: &Rest) -> Vec<Cost> {
        let (n, r) = (self.n, rest.classes);
        let k = self.k.min(self.total);
        let supp = self.suppressed_charge();
        let mut out = Vec::with_capacity(n);
        for v in 0..n {
            let cv = &rest.count[v * r..(v + 1) * r];
            let least = match &self.charge {
                Charge::Dm => {
                    // A cell of x ≥ k records is kept, costing x each; under k it is suppressed.
                    let alone: Cost = cv.iter().map(|&c| c as Cost * if c >= k { c } else { self.total } as Cost).sum();
                    // With u, a cell holds at least its records and u's, and costs at least k each.
                    (0..n)
                        .filter(|&u| u != v)
                        .map(|u| {
                            let cu = &rest.count[u * r..(u + 1) * r];
                            cv.iter().zip(cu).map(|(&c, &d)| c as Cost * (c + d).max(k) as Cost).sum::<Cost>()
                        })
                        .fold(alone, Cost::min)
                }
                Charge::Penalty { .. } => {
                    let pv = &rest.penalty[v * r..(v + 1) * r];
                    let own = |mask: usize| self.own_table[mask * n + v] as Cost;
                    let alone: Cost = cv
                        .iter()
                        .zip(pv)
                        .map(|(&c, &p)| if c >= k { p + c as Cost * own(1 << v) } else { c as Cost * supp })
                        .sum();
                    // With u, a record costs at least its kept penalty with v's own at {v, u}
                    // (never more than a suppressed record's charge).
                    let (records, pens) = (cv.iter().sum::<u64>() as Cost, pv.iter().sum::<Cost>());
                    (0..n).filter(|&u| u != v).map(|u| pens + records * own(1 << v | 1 << u)).fold(alone, Cost::min)
                }
            };
            out.push(least);
        }
        out
    }

    /// The cost of every valid block for these rest classes.
    pub(crate) fn block_costs(&mut self, rest: &Rest) {
        let r = rest.classes;
        self.small = rest.small.iter().sum::<u64>();
        self.fixed = self.small as Cost * self.suppressed_charge();
        self.value_bound = self.value_bounds(rest);
        let small_counts = self.total < 1 << 31 && rest.count.iter().all(|&c| c < 1 << 31);
        if self.dense && matches!(self.charge, Charge::Dm) && small_counts {
            self.dm_costs_dense(rest);
        } else if self.dense {
            let mut sizes = vec![vec![0u64; r]; self.n + 1];
            let mut pens = vec![vec![0 as Cost; r]; self.n + 1];
            self.subsets(rest, 0, 0, 0, &mut sizes, &mut pens);
        } else {
            let mut sizes = vec![0u64; r];
            let mut pens = vec![0 as Cost; r];
            for i in 0..self.blocks.len() {
                let b = self.blocks[i];
                sizes.iter_mut().for_each(|x| *x = 0);
                pens.iter_mut().for_each(|x| *x = 0);
                for v in (0..self.n).filter(|&v| b >> v & 1 == 1) {
                    for c in 0..r {
                        sizes[c] += rest.count[v * r + c];
                    }
                    if !rest.penalty.is_empty() {
                        for c in 0..r {
                            pens[c] += rest.penalty[v * r + c];
                        }
                    }
                }
                self.one_block(b, &sizes, &pens, rest);
            }
        }
    }

    /// The records in classes under k among `sizes`.
    fn under_k(&self, sizes: &[u64]) -> u64 {
        sizes.iter().filter(|&&x| x < self.k).sum()
    }

    /// dm's cost of every subset, depth-first, class sizes in 32 bits (every
    /// count and |D| under 2³¹, so a size times |D| fits 64): the dense
    /// case's hot loop, kept branch-free.
    fn dm_costs_dense(&mut self, rest: &Rest) {
        let (n, r) = (self.n, rest.classes);
        let rows: Vec<u32> = rest.count.iter().map(|&c| c as u32).collect();
        let mut sizes = vec![0u32; (n + 1) * r];
        let (k, total) = (self.k.min(u32::MAX as u64) as u32, self.total as u32);
        // (mask, lowest bit to add next, depth) of the subsets still to extend.
        let mut stack: Vec<(u32, usize, usize)> = vec![(0, 0, 0)];
        while let Some((mask, from, depth)) = stack.pop() {
            for v in (from..n).rev() {
                stack.push((mask | 1 << v, v + 1, depth + 1));
            }
            if mask == 0 {
                continue;
            }
            let top = 31 - mask.leading_zeros() as usize;
            let (lo, hi) = sizes.split_at_mut(depth * r);
            let (parent, here) = (&lo[(depth - 1) * r..], &mut hi[..r]);
            let row = &rows[top * r..(top + 1) * r];
            let mut cost = 0u64;
            for c in 0..r {
                let x = parent[c] + row[c];
                here[c] = x;
                let each = if x >= k { x } else { total };
                cost += x as u64 * each as u64;
            }
            self.cost[mask as usize] = cost as Cost;
        }
    }

    /// Depth-first over every subset with bits from `from` up, sums kept per depth.
    fn subsets(
        &mut self,
        rest: &Rest,
        mask: u32,
        from: usize,
        depth: usize,
        sizes: &mut [Vec<u64>],
        pens: &mut [Vec<Cost>],
    ) {
        let r = rest.classes;
        for v in from..self.n {
            let m = mask | 1 << v;
            let (lo, hi) = sizes.split_at_mut(depth + 1);
            for c in 0..r {
                hi[0][c] = lo[depth][c] + rest.count[v * r + c];
            }
            if !rest.penalty.is_empty() {
                let (lo, hi) = pens.split_at_mut(depth + 1);
                for c in 0..r {
                    hi[0][c] = lo[depth][c] + rest.penalty[v * r + c];
                }
            }
            if self.valid[m as usize] {
                let (s, p) = (std::mem::take(&mut sizes[depth + 1]), std::mem::take(&mut pens[depth + 1]));
                self.one_block(m, &s, &p, rest);
                sizes[depth + 1] = s;
                pens[depth + 1] = p;
            }
            self.subsets(rest, m, v + 1, depth + 1, sizes, pens);
        }
    }

    fn one_block(&mut self, mask: u32, sizes: &[u64], pens: &[Cost], rest: &Rest) {
        let k = self.k;
        let cost = match &self.charge {
            Charge::Dm => {
                let (mut kept, mut small) = (0u128, 0u128);
                for &x in sizes {
                    if x >= k {
                        kept += x as u128 * x as u128;
                    } else {
                        small += x as u128;
                    }
                }
                (kept + small * self.total as u128) as Cost
            }
            Charge::Penalty { suppressed, .. } => {
                let (mut kept, mut small) = (0 as Cost, 0u64);
                let mut own_kept = self.own_all[mask as usize];
                let r = rest.classes;
                let own = &self.own_table[mask as usize * self.n..][..self.n];
                // Suppressed records carry no own penalty.
                let mut bits = if rest.small.is_empty() { 0 } else { mask };
                while bits != 0 {
                    let v = bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    own_kept -= own[v] as Cost * rest.small[v] as Cost;
                }
                for (c, &x) in sizes.iter().enumerate() {
                    if x >= k {
                        kept += pens[c];
                    } else if x > 0 {
                        small += x;
                        // Suppressed records carry no own penalty.
                        let mut bits = mask;
                        while bits != 0 {
                            let v = bits.trailing_zeros() as usize;
                            bits &= bits - 1;
                            own_kept -= own[v] as Cost * rest.count[v * r + c] as Cost;
                        }
                    }
                }
                kept + own_kept + small as Cost * suppressed
            }
        };
        self.cost[mask as usize] = cost;
    }

    /// After [`Self::block_costs`]: the optimal partition's cost and its
    /// blocks as masks in order of their first value (ties: more blocks, then
    /// the block list first lexicographically).
    ///
    /// With `cap`, only a partition costing at most `cap` is wanted: the DP
    /// may stop short and answer None when the optimum costs more.
    pub(crate) fn solve(&mut self, cap: Option<Cost>) -> Option<(Cost, Vec<u32>)> {
        let every = self.blocks.len() + 1 == 1 << self.n;
        // The DP's cap on a partition's weight (cost · WEIGHT + values − blocks).
        let cap = match cap {
            Some(c) if c < self.fixed => return None,
            Some(c) => Some((c - self.fixed) * WEIGHT + WEIGHT - 1),
            None => None,
        };
        let shape = Shape {
            n: self.n,
            dense: self.dense,
            every,
            valid: &self.valid,
            by_low: &self.by_low,
            useless_blocks: self.useless_blocks,
            value_bound: &self.value_bound,
            cap,
        };
        let (cost, blocks) = if self.narrow {
            shape.solve(&self.blocks, &self.cost, &mut self.b64)?
        } else {
            shape.solve(&self.blocks, &self.cost, &mut self.b128)?
        };
        Some((cost + self.fixed, blocks))
    }

    /// After [`Self::block_costs`] for `rest`: the optimal partition
    /// among those suppressing at most `budget` records in all
    /// (`Rest::small`'s included), with [`Self::solve`]'s tie-break among
    /// them; None when there is none, or (with `cap`) when it costs more than
    /// `cap`. A DP over sets whose value is the Pareto front of (suppressed,
    /// weight) of their partitions (docs/schemes.md, "Under a suppression cap").
    pub(crate) fn solve_within(&mut self, rest: &Rest, cap: Option<Cost>, budget: u64) -> Option<(Cost, Vec<u32>)> {
        if self.small > budget {
            return None;
        }
        self.count_suppressed(rest);
        let every = self.blocks.len() + 1 == 1 << self.n;
        let cap = match cap {
            Some(c) if c < self.fixed => return None,
            Some(c) => Some((c - self.fixed) * WEIGHT + WEIGHT - 1),
            None => None,
        };
        let shape = Shape {
            n: self.n,
            dense: self.dense,
            every,
            valid: &self.valid,
            by_low: &self.by_low,
            useless_blocks: self.useless_blocks,
            value_bound: &self.value_bound,
            cap,
        };
        let left = budget - self.small;
        let (cost, blocks) = if self.narrow {
            shape.solve_within(&self.blocks, &self.cost, &self.supp, left, &mut self.b64)?
        } else {
            shape.solve_within(&self.blocks, &self.cost, &self.supp, left, &mut self.b128)?
        };
        Some((cost + self.fixed, blocks))
    }
}

/// A block's weight in the DP is cost·WEIGHT + |B| − 1, so a partition's sum
/// is cost·WEIGHT + n − blocks (n ≤ 16 < WEIGHT): the least sum has the least
/// cost and, among those, the most blocks.
const WEIGHT: Cost = 32;

/// Tables the DP indexes by mask: 2¹⁶ entries whatever n, so that a u16
/// index needs no bounds check in the inner loop.
const TABLE: usize = 1 << 16;

/// The unsigned integers the DP sums in: 64 bits when every sum fits.
trait Num: Copy + Ord + std::ops::Add<Output = Self> + std::ops::Sub<Output = Self> {
    const ZERO: Self;
    const ONE: Self;
    const MAX: Self;
    fn of(c: Cost) -> Self;
    /// A cap (c ≥ 0) in T, at most `MAX − 1`.
    fn capped(c: Cost) -> Self;
    fn cost(self) -> Cost;
}

macro_rules! num {
    ($($t:ty),*) => {$(
        impl Num for $t {
            const ZERO: Self = 0;
            const ONE: Self = 1;
            const MAX: Self = <$t>::MAX;
            fn of(c: Cost) -> Self {
                c as $t
            }
            fn capped(c: Cost) -> Self {
                let most = <$t>::MAX - 1;
                if c as u128 >= most as u128 {
                    most
                } else {
                    c as $t
                }
            }
            fn cost(self) -> Cost {
                self as Cost
            }
        }
    )*};
}
num!(u64, u128);

/// Per mask: a block's weight, and the least sum over partitions of the mask.
#[derive(Clone, Default)]
struct Buffers<T> {
    weight: Vec<T>,
    best: Vec<T>,
    /// Candidate blocks by lowest bit, and per mask (top-down DP).
    cand: Vec<Vec<u16>>,
    is_cand: Vec<bool>,
    /// Per set, a bound on its least sum, and whether `best` is exact.
    floor: Vec<T>,
    exact: Vec<bool>,
    /// Under a cap: per set, a bound on the records any partition of it
    /// suppresses, and the Pareto fronts.
    least_supp: Vec<u64>,
    fronts: FrontMemo<T>,
}

/// Which blocks the DP may take.
struct Shape<'a> {
    n: usize,
    dense: bool,
    /// Every subset is a valid block (SPS).
    every: bool,
    valid: &'a [bool],
    by_low: &'a [Vec<u32>],
    /// Skip the blocks a split of them beats (dense shapes).
    useless_blocks: bool,
    /// Per bit, a bound on what its records cost in any partition.
    value_bound: &'a [Cost],
    /// The most weight wanted (top-down only): a set whose least sum is
    /// above it need not be known exactly.
    cap: Option<Cost>,
}

impl Shape<'_> {
    fn solve<T: Num>(&self, blocks: &[u32], cost: &[Cost], buf: &mut Buffers<T>) -> Option<(Cost, Vec<u32>)> {
        buf.weight.clear();
        buf.weight.resize(TABLE, T::ZERO);
        for &b in blocks {
            let i = b as usize;
            buf.weight[i] = T::of(cost[i] * WEIGHT + b.count_ones() as Cost - 1);
        }
        let full = (1usize << self.n) - 1;
        if self.dense && self.useless_blocks {
            let w: &[T; TABLE] = buf.weight.as_slice().try_into().expect("TABLE entries");
            self.candidates(w, None, &mut buf.cand, &mut buf.is_cand);
            // A bound on every set's least sum: its values' bounds (a least
            // sum is at least its cost times WEIGHT).
            buf.floor.clear();
            buf.floor.resize(TABLE, T::ZERO);
            for m in 1..=full {
                let v = m.trailing_zeros() as usize;
                buf.floor[m] = buf.floor[m & (m - 1)] + T::of(self.value_bound.get(v).map_or(0, |&b| b * WEIGHT));
            }
            buf.best.clear();
            buf.best.resize(TABLE, T::MAX);
            buf.best[0] = T::ZERO;
            buf.exact.clear();
            buf.exact.resize(TABLE, false);
            buf.exact[0] = true;
            let mut top = TopDown {
                w,
                floor: buf.floor.as_slice().try_into().expect("TABLE entries"),
                cand: &buf.cand,
                is_cand: &buf.is_cand,
                best: buf.best.as_mut_slice().try_into().expect("TABLE entries"),
                exact: &mut buf.exact,
            };
            // No cap, or one past what T holds: every least sum is wanted.
            let cap = self.cap.map_or(T::MAX - T::ONE, T::capped);
            top.least(full as u32, cap);
            if !buf.exact[full] {
                return None;
            }
            Some((buf.best[full].cost() / WEIGHT, self.unfold(w, &buf.best, Some(&buf.exact))))
        } else {
            self.min_plus(&buf.weight, &mut buf.best);
            Some((buf.best[full].cost() / WEIGHT, self.unfold(&buf.weight, &buf.best, None)))
        }
    }

    /// [`Self::solve`] among the partitions suppressing at most `budget`
    /// records (`supp`: per block, and in dense shapes per subset, as if it
    /// were one block), top-down over Pareto fronts ([`Fronts`]).
    fn solve_within<T: Num>(
        &self,
        blocks: &[u32],
        cost: &[Cost],
        supp: &[u64],
        budget: u64,
        buf: &mut Buffers<T>,
    ) -> Option<(Cost, Vec<u32>)> {
        buf.weight.clear();
        buf.weight.resize(TABLE, T::ZERO);
        for &b in blocks {
            let i = b as usize;
            buf.weight[i] = T::of(cost[i] * WEIGHT + b.count_ones() as Cost - 1);
        }
        let full = (1usize << self.n) - 1;
        let w: &[T; TABLE] = buf.weight.as_slice().try_into().expect("TABLE entries");
        if self.dense && self.useless_blocks {
            self.candidates(w, Some(supp), &mut buf.cand, &mut buf.is_cand);
        } else {
            buf.cand.iter_mut().for_each(Vec::clear);
            buf.cand.resize(self.n, Vec::new());
            for (list, by) in buf.cand.iter_mut().zip(self.by_low) {
                list.extend(by.iter().map(|&b| b as u16));
            }
            buf.is_cand.clear();
            buf.is_cand.extend(self.valid.iter().take(TABLE).copied());
            buf.is_cand.resize(TABLE, false);
        }
        buf.floor.clear();
        buf.floor.resize(TABLE, T::ZERO);
        for m in 1..=full {
            let v = m.trailing_zeros() as usize;
            buf.floor[m] = buf.floor[m & (m - 1)] + T::of(self.value_bound.get(v).map_or(0, |&b| b * WEIGHT));
        }
        // A set's classes under k stay under k in every partition of it
        // (each class's parts are smaller): known for every subset only in
        // dense shapes.
        buf.least_supp.clear();
        buf.least_supp.resize(TABLE, 0);
        if self.dense {
            buf.least_supp[..=full].copy_from_slice(&supp[..=full]);
        }
        buf.fronts.reset();
        let mut f = Fronts {
            w,
            supp,
            floor: buf.floor.as_slice().try_into().expect("TABLE entries"),
            least_supp: &buf.least_supp,
            cand: &buf.cand,
            is_cand: &buf.is_cand,
            memo: &mut buf.fronts,
        };
        let cap = self.cap.map_or(T::MAX - T::ONE, T::capped);
        let least = f.least(full as u32, cap, budget)?;
        let parts = f.unfold(full as u32, least, budget);
        Some((least.cost() / WEIGHT, parts))
    }

    /// best(S) = min over valid B ∋ min(S), B ⊆ S, of w(B) + best(S \ B), for
    /// every S.
    fn min_plus<T: Num>(&self, w: &[T], best: &mut Vec<T>) {
        let full = (1u32 << self.n) - 1;
        best.clear();
        best.resize(TABLE, T::ZERO);
        let best: &mut [T; TABLE] = best.as_mut_slice().try_into().expect("TABLE entries");
        let w: &[T; TABLE] = w.try_into().expect("TABLE entries");
        let valid: &[bool; TABLE] = self.valid.try_into().expect("TABLE entries");
        for s in 1..=full {
            let low = s & s.wrapping_neg();
            let mut least = T::MAX;
            let mut offer = |b: usize| least = least.min(w[b] + best[(s as usize ^ b) as u16 as usize]);
            if self.dense {
                let others = s ^ low;
                let mut sub = others;
                loop {
                    let b = (sub | low) as u16 as usize;
                    if self.every || valid[b] {
                        offer(b);
                    }
                    if sub == 0 {
                        break;
                    }
                    sub = (sub - 1) & others;
                }
            } else {
                for &b in &self.by_low[low.trailing_zeros() as usize] {
                    if b & !s == 0 {
                        offer(b as u16 as usize);
                    }
                }
            }
            best[s as usize] = least;
        }
    }

    /// The blocks worth a place in the DP: every single value, and every
    /// other valid block B that weighs less than B \ {v} and {v} together
    /// for each v ∈ B whose B \ {v} is valid. A block that fails is useless:
    /// splitting it lowers the weight of every partition holding it (weights
    /// never tie, see [`WEIGHT`]), so no least sum holds it. Per lowest bit,
    /// ascending; and a flag per mask.
    ///
    /// With `supp` (under a cap, every subset's suppressed records), B must
    /// also fail to suppress fewer than each such split: a split that weighs
    /// less and suppresses no more beats B whatever the budget.
    fn candidates<T: Num>(
        &self,
        w: &[T; TABLE],
        supp: Option<&[u64]>,
        cand: &mut Vec<Vec<u16>>,
        is_cand: &mut Vec<bool>,
    ) {
        let full = (1u32 << self.n) - 1;
        cand.iter_mut().for_each(Vec::clear);
        cand.resize(self.n, Vec::new());
        is_cand.clear();
        is_cand.resize(TABLE, false);
        for b in 1..=full {
            let i = b as usize;
            if !(self.every || self.valid[i]) {
                continue;
            }
            let mut bits = if b.count_ones() > 1 { b } else { 0 };
            let mut keep = true;
            while bits != 0 && keep {
                let v = bits & bits.wrapping_neg();
                bits ^= v;
                let rest = (b ^ v) as usize;
                keep = !(self.every || self.valid[rest])
                    || w[i] < w[rest] + w[v as usize]
                    || supp.is_some_and(|s| s[i] < s[rest] + s[v as usize]);
            }
            if keep {
                is_cand[i] = true;
                cand[b.trailing_zeros() as usize].push(b as u16);
            }
        }
    }

    /// The optimal partition behind `best`: at each step, of the blocks
    /// reaching the least sum, the one whose list comes first.
    /// With `known` (top-down), only blocks whose remainder's least sum is
    /// known exactly are offered (the others cannot reach the least sum).
    fn unfold<T: Num>(&self, w: &[T], best: &[T], known: Option<&[bool]>) -> Vec<u32> {
        let mut out = Vec::new();
        let mut s = (1u32 << self.n) - 1;
        while s != 0 {
            let low = s & s.wrapping_neg();
            let mut pick: Option<u32> = None;
            let mut offer = |b: u32| {
                let (i, rest) = (b as usize, (s ^ b) as usize);
                let offered = self.valid[i] && known.is_none_or(|k| k[rest]);
                if offered && b & !s == 0 && w[i] + best[rest] == best[s as usize] {
                    if pick.is_none_or(|p| first_list(b, p)) {
                        pick = Some(b);
                    }
                }
            };
            if self.dense {
                let others = s ^ low;
                let mut sub = others;
                loop {
                    offer(sub | low);
                    if sub == 0 {
                        break;
                    }
                    sub = (sub - 1) & others;
                }
            } else {
                self.by_low[low.trailing_zeros() as usize].iter().for_each(|&b| offer(b));
            }
            let b = pick.expect("the least sum is reached");
            out.push(b);
            s ^= b;
        }
        out
    }
}

/// The top-down DP over candidate blocks, bounded.
struct TopDown<'a, T> {
    w: &'a [T; TABLE],
    /// Per set, a bound on its least sum.
    floor: &'a [T; TABLE],
    cand: &'a [Vec<u16>],
    is_cand: &'a [bool],
    /// Per set: its least sum when `exact`, else (if not `T::MAX`) a bound
    /// on it above the cap it was last asked under.
    best: &'a mut [T; TABLE],
    exact: &'a mut [bool],
}

impl<T: Num> TopDown<'_, T> {
    /// best(S) for the sets S reached from the whole set by taking away
    /// candidate blocks, each holding the lowest value left, from the top
    /// down and remembered, exact when at most `cap`; above it, some bound
    /// above `cap` (then S cannot be part of a wanted partition). A block is
    /// not tried when its weight and its remainder's bound exceed the least
    /// sum found so far or the cap; a tie is still tried, so that every block
    /// reaching the least sum has its remainder known exactly for the
    /// tie-break. A set's candidates are read off its lowest bit's list, or,
    /// when its subsets are fewer, by walking them.
    fn least(&mut self, s: u32, cap: T) -> T {
        let i = s as usize;
        if self.exact[i] || (self.best[i] != T::MAX && self.best[i] > cap) {
            return self.best[i];
        }
        let low = s & s.wrapping_neg();
        let list = &self.cand[low.trailing_zeros() as usize];
        let mut least = T::MAX;
        let mut offer = |b: u32, this: &mut Self| {
            let limit = cap.min(least);
            let wb = this.w[b as usize];
            if wb > limit || this.floor[(s ^ b) as usize] > limit - wb {
                return;
            }
            let rest = this.least(s ^ b, limit - wb);
            least = least.min(wb + rest);
        };
        if list.len() <= 1 << (s.count_ones() - 1) {
            for x in 0..list.len() {
                let b = self.cand[low.trailing_zeros() as usize][x] as u32;
                if b & !s == 0 {
                    offer(b, self);
                }
            }
        } else {
            let others = s ^ low;
            let mut sub = others;
            loop {
                let b = sub | low;
                if self.is_cand[b as usize] {
                    offer(b, self);
                }
                if sub == 0 {
                    break;
                }
                sub = (sub - 1) & others;
            }
        }
        if least <= cap {
            self.exact[i] = true;
            self.best[i] = least;
        } else {
            // Every way to split S weighs more than the cap.
            self.best[i] = cap + T::ONE;
        }
        self.best[i]
    }
}

/// Per set, the Pareto front of its partitions' (suppressed, weight),
/// suppressed ascending and weight strictly descending, complete within the
/// limits it was built under.
#[derive(Clone)]
struct FrontMemo<T> {
    points: Vec<Vec<(u64, T)>>,
    /// The (weight, suppressed) limits each front was built under.
    limit: Vec<Option<(T, u64)>>,
    touched: Vec<u32>,
    /// The fronts under construction, a stack.
    scratch: Vec<(u64, T)>,
}

impl<T> Default for FrontMemo<T> {
    fn default() -> Self {
        FrontMemo { points: Vec::new(), limit: Vec::new(), touched: Vec::new(), scratch: Vec::new() }
    }
}

impl<T: Num> FrontMemo<T> {
    fn reset(&mut self) {
        if self.points.len() != TABLE {
            self.points = vec![Vec::new(); TABLE];
            self.limit = vec![None; TABLE];
        }
        for &s in &self.touched {
            self.points[s as usize].clear();
            self.limit[s as usize] = None;
        }
        self.touched.clear();
        self.scratch.clear();
        // The empty set: one partition, nothing suppressed, weight 0.
        self.points[0] = vec![(0, T::ZERO)];
        self.limit[0] = Some((T::MAX, u64::MAX));
    }

    /// The least weight in `set`'s front within (`wcap`, `r`).
    fn best_in(&self, set: u32, wcap: T, r: u64) -> Option<T> {
        self.points[set as usize].iter().take_while(|p| p.0 <= r).last().map(|p| p.1).filter(|&w| w <= wcap)
    }
}

/// The DP under a suppression budget: a set's partitions are summed up by
/// their Pareto front of (suppressed, weight), built top-down from the whole
/// set, within a weight and a suppressed limit, from the fronts of what is
/// left once a candidate block holding its lowest value is taken away.
struct Fronts<'a, T> {
    w: &'a [T; TABLE],
    supp: &'a [u64],
    /// Per set, a bound on its least weight and on its least suppressed.
    floor: &'a [T; TABLE],
    least_supp: &'a [u64],
    cand: &'a [Vec<u16>],
    is_cand: &'a [bool],
    memo: &'a mut FrontMemo<T>,
}

impl<T: Num> Fronts<'_, T> {
    /// Each candidate block of `set` (holding its lowest value) that fits
    /// the limits with what its remainder needs at least: `f(block)`.
    fn each(&mut self, set: u32, wcap: T, r: u64, mut f: impl FnMut(&mut Self, u32, T, u64)) {
        let (w, supp, floor, least_supp) = (self.w, self.supp, self.floor, self.least_supp);
        let (cand, is_cand) = (self.cand, self.is_cand);
        let low = set & set.wrapping_neg();
        let list = &cand[low.trailing_zeros() as usize];
        let mut offer = |this: &mut Self, b: u32| {
            let (wb, sb, rest) = (w[b as usize], supp[b as usize], (set ^ b) as usize);
            if wb <= wcap && sb <= r && floor[rest] <= wcap - wb && least_supp[rest] <= r - sb {
                f(this, b, wcap - wb, r - sb);
            }
        };
        if list.len() <= 1 << (set.count_ones() - 1) {
            for &b in list {
                if b as u32 & !set == 0 {
                    offer(self, b as u32);
                }
            }
        } else {
            let others = set ^ low;
            let mut sub = others;
            loop {
                let b = sub | low;
                if is_cand[b as usize] {
                    offer(self, b);
                }
                if sub == 0 {
                    break;
                }
                sub = (sub - 1) & others;
            }
        }
    }

    /// Make `set`'s front complete within weight `wcap` and `r` suppressed.
    fn ensure(&mut self, set: u32, wcap: T, r: u64) {
        let i = set as usize;
        let (wcap, r) = match self.memo.limit[i] {
            Some((w0, r0)) if w0 >= wcap && r0 >= r => return,
            Some((w0, r0)) => (w0.max(wcap), r0.max(r)),
            None => {
                self.memo.touched.push(set);
                (wcap, r)
            }
        };
        let start = self.memo.scratch.len();
        self.each(set, wcap, r, |this, b, wl, rl| {
            let rest = (set ^ b) as usize;
            this.ensure(rest as u32, wl, rl);
            let (wb, sb) = (this.w[b as usize], this.supp[b as usize]);
            for j in 0..this.memo.points[rest].len() {
                let (ps, pw) = this.memo.points[rest][j];
                if ps > rl {
                    break;
                }
                if pw <= wl {
                    this.memo.scratch.push((ps + sb, pw + wb));
                }
            }
        });
        let memo = &mut *self.memo;
        memo.scratch[start..].sort_unstable();
        let mut front = std::mem::take(&mut memo.points[i]);
        front.clear();
        for &(s, w) in &memo.scratch[start..] {
            if front.last().is_none_or(|&(_, last)| w < last) {
                front.push((s, w));
            }
        }
        memo.scratch.truncate(start);
        memo.points[i] = front;
        memo.limit[i] = Some((wcap, r));
    }

    /// The least weight of `set`'s partitions within `wcap` and `r`: only
    /// the least is wanted, so the limit falls as lighter ones are found.
    fn least(&mut self, set: u32, wcap: T, r: u64) -> Option<T> {
        let mut least: Option<T> = None;
        self.each(set, wcap, r, |this, b, _, rl| {
            let wb = this.w[b as usize];
            let limit = least.map_or(wcap, |l| l.min(wcap));
            if wb > limit || this.floor[(set ^ b) as usize] > limit - wb {
                return;
            }
            this.ensure(set ^ b, limit - wb, rl);
            if let Some(x) = this.memo.best_in(set ^ b, limit - wb, rl) {
                least = Some(least.map_or(wb + x, |l| l.min(wb + x)));
            }
        });
        least
    }

    /// The partition of `set` of least weight `t` within `r` suppressed,
    /// block by block: of the blocks reaching it, the one whose list comes
    /// first (as [`Shape::unfold`]).
    fn unfold(&mut self, mut set: u32, mut t: T, mut r: u64) -> Vec<u32> {
        let mut out = Vec::new();
        while set != 0 {
            let mut pick: Option<u32> = None;
            self.each(set, t, r, |this, b, wl, rl| {
                this.ensure(set ^ b, wl, rl);
                if this.memo.best_in(set ^ b, wl, rl) == Some(wl) && pick.is_none_or(|p| first_list(b, p)) {
                    pick = Some(b);
                }
            });
            let b = pick.expect("the least weight is reached");
            out.push(b);
            t = t - self.w[b as usize];
            r -= self.supp[b as usize];
            set ^= b;
        }
        out
    }
}

/// Whether block `a` comes before block `b` (both holding the same lowest
/// bit) when each is listed by ascending bit and the lists compared
/// lexicographically, a prefix first.
fn first_list(a: u32, b: u32) -> bool {
    let d = (a ^ b).trailing_zeros();
    if d >= 32 {
        return false;
    }
    let above = |m: u32| (m as u64) >> (d + 1) != 0;
    if a >> d & 1 == 1 {
        // a lists d where b lists a higher value, or b has ended.
        above(b)
    } else {
        !above(a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(m: u32) -> Vec<u32> {
        (0..32).filter(|&b| m >> b & 1 == 1).collect()
    }

    #[test]
    fn block_order_is_the_lists_order() {
        for a in 1u32..64 {
            for b in 1u32..64 {
                if a & 1 == 1 && b & 1 == 1 {
                    assert_eq!(first_list(a, b), list(a) < list(b), "{a:b} {b:b}");
                }
            }
        }
    }

    /// Every set partition of `n` bits as block masks, by brute force.
    fn partitions(n: usize) -> Vec<Vec<u32>> {
        fn rec(rest: u32, acc: &mut Vec<u32>, out: &mut Vec<Vec<u32>>) {
            if rest == 0 {
                out.push(acc.clone());
                return;
            }
            let low = rest & rest.wrapping_neg();
            let others = rest ^ low;
            let mut sub = others;
            loop {
                acc.push(sub | low);
                rec(others & !sub, acc, out);
                acc.pop();
                if sub == 0 {
                    break;
                }
                sub = (sub - 1) & others;
            }
        }
        let mut out = Vec::new();
        rec((1 << n) - 1, &mut Vec::new(), &mut out);
        out
    }

    /// dm over every partition of 6 values against 3 rest classes, some
    /// blocks invalid, several k: the DP's optimum and bound equal the
    /// brute force's, tie-break included.
    #[test]
    fn dp_equals_brute_force() {
        let n = 6;
        let mut x = 7u64;
        let mut next = |m: u64| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 33) % m
        };
        for round in 0..20 {
            let classes = 3;
            let count: Vec<u64> = (0..n * classes).map(|_| [0, 0, 1, 1, 2, 5][next(6) as usize]).collect();
            let marginal: Vec<u64> = (0..n).map(|v| count[v * classes..(v + 1) * classes].iter().sum()).collect();
            let all_blocks: Vec<u32> =
                (1..1u32 << n).filter(|m| m.count_ones() == 1 || round % 2 == 0 || m % 3 != 0).collect();
            for k in [2, 3, 6, 10] {
                let total: u64 = marginal.iter().sum();
                // A block's class sizes over `merge`d rest classes.
                let sizes = |b: u32, merge: &[usize]| -> Vec<u128> {
                    let mut out = vec![0u128; classes];
                    for cl in 0..classes {
                        out[merge[cl]] +=
                            (0..n).filter(|&v| b >> v & 1 == 1).map(|v| count[v * classes + cl] as u128).sum::<u128>();
                    }
                    out
                };
                let (k2, t2) = (k as u128, total as u128);
                let cost_at = |parts: &[u32], merge: &[usize]| -> Cost {
                    let c: u128 =
                        parts.iter().flat_map(|&b| sizes(b, merge)).map(|x| if x >= k2 { x * x } else { x * t2 }).sum();
                    c as Cost
                };
                let cost = |parts: &[u32], lb: bool| -> Cost {
                    let c: u128 = parts
                        .iter()
                        .flat_map(|&b| sizes(b, &[0, 1, 2]))
                        .map(|x| if x >= k2 { x * x } else { x * if lb { k2 } else { t2 } })
                        .sum();
                    c as Cost
                };
                let valid: Vec<Vec<u32>> =
                    partitions(n).into_iter().filter(|p| p.iter().all(|b| all_blocks.contains(b))).collect();
                let want = valid
                    .iter()
                    .map(|p| {
                        (cost(p, false), std::cmp::Reverse(p.len()), p.iter().map(|&b| list(b)).collect::<Vec<_>>(), p)
                    })
                    .min()
                    .unwrap();
                let want_bound = valid.iter().map(|p| cost(p, true)).min().unwrap();
                // A bound: no partition costs less once rest classes merge.
                for merge in [[0, 0, 2], [0, 1, 0], [0, 1, 1], [0, 0, 0]] {
                    let least = valid.iter().map(|p| cost_at(p, &merge)).min().unwrap();
                    assert!(want_bound <= least, "round {round} k {k}: bound {want_bound} over {least}");
                }
                let variants = [
                    (false, true, true, false),
                    (true, true, true, false),
                    (true, false, true, true),
                    (true, true, false, true),
                    (true, true, true, true),
                    (false, true, true, true),
                ];
                for (dense, narrow, useless, split) in variants {
                    let case =
                        format!("round {round} k {k} dense {dense} narrow {narrow} useless {useless} split {split}");
                    let mut dp = PartitionDp::new(n, all_blocks.clone(), &marginal, k, Charge::Dm);
                    dp.dense = dense;
                    dp.narrow = narrow;
                    dp.skip_useless_blocks(useless);
                    let mut rest = Rest { classes, count: count.clone(), penalty: Vec::new(), small: Vec::new() };
                    assert_eq!(dp.bound(&rest), want_bound, "{case}");
                    if split {
                        rest = dp.split_small(rest);
                        // A bound on this anonymization alone: at most its optimum.
                        let node = dp.node_bound(&rest);
                        assert!(want_bound <= node && node <= want.0, "{case}: node bound {node}");
                    }
                    dp.block_costs(&rest);
                    let (c, parts) = dp.solve(None).unwrap();
                    assert_eq!((c, &parts), (want.0, want.3), "{case}");
                    // Capped at the optimum: the same answer; under it, none (top-down).
                    assert_eq!(dp.solve(Some(want.0)), Some((c, parts.clone())), "{case}");
                    let under = dp.solve(Some(want.0 - 1));
                    assert!(under.is_none() || !(dense && useless), "{case}: {under:?} under the cap");
                }
            }
        }
    }

    /// hdm over every partition of 6 values against 3 rest classes with
    /// their own penalties: the DP's optimum equals the brute force's, and
    /// the bound is the least relaxed charge over all partitions.
    #[test]
    fn hdm_dp_and_bound_equal_brute_force() {
        let n = 6;
        let classes = 3;
        let mut x = 11u64;
        let mut next = |m: u64| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 33) % m
        };
        let scale = 1e6;
        for round in 0..12 {
            let count: Vec<u64> = (0..n * classes).map(|_| [0, 1, 1, 2, 4][next(5) as usize]).collect();
            let penalty: Vec<Cost> = count.iter().map(|&c| c as Cost * next(1000) as Cost).collect();
            let mut marginal: Vec<u64> = (0..n).map(|v| count[v * classes..(v + 1) * classes].iter().sum()).collect();
            marginal.iter_mut().for_each(|m| *m = (*m).max(1));
            let total: u64 = marginal.iter().sum();
            let suppressed: Cost = 3_000_000;
            let own = Own::Hdm { scale, marginal: marginal.clone(), total };
            let blocks: Vec<u32> =
                (1..1u32 << n).filter(|m| m.count_ones() == 1 || round % 2 == 0 || m % 5 != 0).collect();
            let valid: Vec<Vec<u32>> =
                partitions(n).into_iter().filter(|p| p.iter().all(|b| blocks.contains(b))).collect();
            for k in [1, 3, 5, 9] {
                let block = |b: u32, relaxed: bool| -> Cost {
                    (0..classes)
                        .map(|c| {
                            let vs: Vec<usize> = (0..n).filter(|&v| b >> v & 1 == 1).collect();
                            let size: u64 = vs.iter().map(|&v| count[v * classes + c]).sum();
                            let kept: Cost = vs
                                .iter()
                                .map(|&v| penalty[v * classes + c] + own.of(b, v) * count[v * classes + c] as Cost)
                                .sum();
                            if relaxed || size >= k {
                                kept
                            } else {
                                size as Cost * suppressed
                            }
                        })
                        .sum()
                };
                let want = valid
                    .iter()
                    .map(|p| {
                        let c: Cost = p.iter().map(|&b| block(b, false)).sum();
                        (c, std::cmp::Reverse(p.len()), p.iter().map(|&b| list(b)).collect::<Vec<_>>(), p)
                    })
                    .min()
                    .unwrap();
                let want_bound = valid.iter().map(|p| p.iter().map(|&b| block(b, true)).sum::<Cost>()).min().unwrap();
                let charge = Charge::Penalty { suppressed, own: own.clone() };
                for (dense, useless, split) in
                    [(false, true, false), (true, true, false), (true, false, true), (true, true, true)]
                {
                    let case = format!("round {round} k {k} dense {dense} useless {useless} split {split}");
                    let mut dp = PartitionDp::new(n, blocks.clone(), &marginal, k, charge.clone());
                    dp.dense = dense;
                    dp.skip_useless_blocks(useless);
                    let mut rest = Rest { classes, count: count.clone(), penalty: penalty.clone(), small: Vec::new() };
                    assert_eq!(dp.bound(&rest), want_bound, "{case}");
                    if split {
                        rest = dp.split_small(rest);
                        let node = dp.node_bound(&rest);
                        assert!(want_bound <= node && node <= want.0, "{case}: node bound {node}");
                    }
                    dp.block_costs(&rest);
                    let (c, parts) = dp.solve(None).unwrap();
                    assert_eq!((c, &parts), (want.0, want.3), "{case}");
                    // Capped at the optimum: the same answer; under it, none (top-down).
                    assert_eq!(dp.solve(Some(want.0)), Some((c, parts.clone())), "{case}");
                    let under = dp.solve(Some(want.0 - 1));
                    assert!(under.is_none() || !(dense && useless), "{case}: {under:?} under the cap");
                }
            }
        }
    }

    /// Under a suppression budget, dm and hdm over every partition of 6
    /// values against 4 rest classes, some blocks invalid, several k: the
    /// least cost among the partitions suppressing at most the budget, and
    /// its tie-break, equal the brute force's, for budgets of none, a few
    /// records, the unconstrained optimum's less one, that optimum's, and
    /// every record; a budget no partition meets gives None.
    #[test]
    fn capped_dp_equals_brute_force() {
        let (n, classes) = (6, 4);
        let mut x = 5u64;
        let mut next = |m: u64| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 33) % m
        };
        let mut checked = [0usize; 2];
        for round in 0..16 {
            let count: Vec<u64> = (0..n * classes).map(|_| [0, 1, 1, 2, 3, 6][next(6) as usize]).collect();
            let penalty: Vec<Cost> = count.iter().map(|&c| c as Cost * next(1000) as Cost).collect();
            let mut marginal: Vec<u64> = (0..n).map(|v| count[v * classes..(v + 1) * classes].iter().sum()).collect();
            marginal.iter_mut().for_each(|m| *m = (*m).max(1));
            let total: u64 = marginal.iter().sum();
            let blocks: Vec<u32> =
                (1..1u32 << n).filter(|m| m.count_ones() == 1 || round % 2 == 0 || m % 3 != 0).collect();
            let valid: Vec<Vec<u32>> =
                partitions(n).into_iter().filter(|p| p.iter().all(|b| blocks.contains(b))).collect();
            let suppressed_charge: Cost = 3_000_000;
            let own = Own::Hdm { scale: 1e6, marginal: marginal.clone(), total };
            for hdm in [false, true] {
                for k in [2, 4, 7] {
                    // A block's (cost, suppressed records), from the counts.
                    let block = |b: u32| -> (Cost, u64) {
                        let vs: Vec<usize> = (0..n).filter(|&v| b >> v & 1 == 1).collect();
                        let (mut cost, mut supp) = (0 as Cost, 0u64);
                        for c in 0..classes {
                            let size: u64 = vs.iter().map(|&v| count[v * classes + c]).sum();
                            if size < k {
                                supp += size;
                                cost += size as Cost * if hdm { suppressed_charge } else { total as Cost };
                            } else if hdm {
                                cost += vs
                                    .iter()
                                    .map(|&v| penalty[v * classes + c] + own.of(b, v) * count[v * classes + c] as Cost)
                                    .sum::<Cost>();
                            } else {
                                cost += (size * size) as Cost;
                            }
                        }
                        (cost, supp)
                    };
                    let scored: Vec<(Cost, u64, &Vec<u32>)> = valid
                        .iter()
                        .map(|p| {
                            let (c, s) = p.iter().map(|&b| block(b)).fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
                            (c, s, p)
                        })
                        .collect();
                    let within = |budget: u64| {
                        scored
                            .iter()
                            .filter(|p| p.1 <= budget)
                            .map(|&(c, _, p)| {
                                (c, std::cmp::Reverse(p.len()), p.iter().map(|&b| list(b)).collect::<Vec<_>>(), p)
                            })
                            .min()
                    };
                    let free = within(u64::MAX).unwrap();
                    let free_supp = scored.iter().find(|p| p.2 == free.3).unwrap().1;
                    let least_supp = scored.iter().map(|p| p.1).min().unwrap();
                    let budgets = [0, least_supp, 2, free_supp.saturating_sub(1), free_supp, total];
                    for (dense, useless, split) in
                        [(false, true, false), (true, true, false), (true, false, true), (true, true, true)]
                    {
                        let charge = if hdm {
                            Charge::Penalty { suppressed: suppressed_charge, own: own.clone() }
                        } else {
                            Charge::Dm
                        };
                        let mut dp = PartitionDp::new(n, blocks.clone(), &marginal, k, charge);
                        dp.dense = dense;
                        dp.skip_useless_blocks(useless);
                        let pens = if hdm { penalty.clone() } else { Vec::new() };
                        let mut rest = Rest { classes, count: count.clone(), penalty: pens, small: Vec::new() };
                        if split {
                            rest = dp.split_small(rest);
                        }
                        dp.block_costs(&rest);
                        let (c, parts) = dp.solve(None).unwrap();
                        assert_eq!(dp.suppressed(&rest, &parts), free_supp, "round {round} k {k}");
                        for budget in budgets {
                            let case = format!(
                                "round {round} hdm {hdm} k {k} budget {budget} dense {dense} useless {useless} split {split}"
                            );
                            let want = within(budget);
                            let got = dp.solve_within(&rest, None, budget);
                            assert_eq!(got.as_ref().map(|g| (g.0, &g.1)), want.as_ref().map(|w| (w.0, w.3)), "{case}");
                            if let Some(w) = &want {
                                checked[(w.0 > c) as usize] += 1;
                                assert!(dp.suppressed(&rest, &got.as_ref().unwrap().1) <= budget, "{case}");
                                // Capped at the optimum: the same; under it, none.
                                assert_eq!(dp.solve_within(&rest, Some(w.0), budget), got, "{case}");
                                assert_eq!(dp.solve_within(&rest, Some(w.0 - 1), budget), None, "{case}");
                            }
                        }
                    }
                }
            }
        }
        // Both kinds met: budgets the optimum keeps to, and budgets that cost more.
        assert!(checked[0] > 0 && checked[1] > 0, "{checked:?}");
    }
}
