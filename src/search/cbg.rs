//! Nergiz & Clifton's cell-based generalization (CDGH and CNDGH): one pass
//! over the records in the order of their QI values, at most m clusters open.
//!
//! cost(X) = |X| · Σ over QIs of LM(X's cell). Each record t joins the open
//! cluster whose cost grows least (ties: the one opened first) when that
//! growth is zero or m clusters are open; otherwise t opens a cluster. A
//! cluster closes at k records (and ℓ distinct sensitive values when asked).
//! After the pass, the open clusters, in opening order, each absorb the open
//! cluster whose merge adds least cost until they can close; what is left
//! is suppressed. Which domain the cells live in (hierarchy, range, set) is
//! [`crate::search::cells`]'s business.

use crate::search::cells::{node_lm_with, Cell, CellDomain};
use rustc_hash::FxHashMap;

/// A record's final cluster when it is suppressed.
pub(crate) const SUPPRESSED: u32 = u32::MAX;

/// The requirement a cluster closes on.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClusterSettings {
    pub(crate) k: u64,
    pub(crate) l: Option<u64>,
    /// m, the most clusters open at once.
    pub(crate) open: usize,
}

struct Open {
    /// The ids of the clusters merged into this one (its own first).
    ids: Vec<u32>,
    size: u64,
    cells: Vec<Cell>,
    /// Per QI, its cell's LM and node row, side by side for the growth loop.
    qis: Vec<QiCell>,
    /// The cells' LMs summed in QI order.
    lm: f64,
    /// Distinct sensitive values, sorted (only with ℓ).
    sensitive: Vec<u32>,
}

/// One QI of an open cluster: its cell's LM; for a QI read through node rows,
/// the node's ancestors ([`CellDomain::node_row`]) and the levels at or above
/// its own, as bits.
#[derive(Clone, Copy, Default)]
struct QiCell {
    lm: f64,
    row: [u32; 8],
    above: u32,
}

impl Open {
    const EMPTY: Open =
        Open { ids: Vec::new(), size: 0, cells: Vec::new(), qis: Vec::new(), lm: 0.0, sensitive: Vec::new() };

    fn cost(&self) -> f64 {
        self.size as f64 * self.lm
    }
}

/// The pass in progress. Feed it records with [`Clustering::add`] in order.
pub(crate) struct Clustering<'a> {
    domains: &'a [CellDomain],
    settings: ClusterSettings,
    open: Vec<Open>,
    /// Per cluster id (given when a cluster opens): its final cluster, or [`SUPPRESSED`].
    final_of: Vec<u32>,
    out: Clusters,
    interned: Vec<FxHashMap<Cell, u32>>,
    /// The id of the cluster the previous record joined.
    last: u32,
    /// Per QI: is it read through node rows ([`CellDomain::node_row`])?
    rowed: Vec<bool>,
    all_rowed: bool,
    /// Does the CPU have AVX2 (the growth loop's faster build)?
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    avx2: bool,
    /// LM per QI of the cluster being tried and of the best so far.
    scratch: Vec<f64>,
    best_scratch: Vec<f64>,
    /// Per rowed QI, the record's [`CellDomain::value_row`].
    value_rows: Vec<([u32; 8], [f64; 8])>,
}

/// The closed clusters: per cluster its size and per QI a cell id; per QI the
/// distinct cells.
#[derive(Debug, Clone, Default)]
pub(crate) struct Clusters {
    pub(crate) sizes: Vec<u64>,
    /// `cells[c * qis + a]`: cluster c's cell on QI a, an index into `distinct[a]`.
    pub(crate) cells: Vec<u32>,
    pub(crate) distinct: Vec<Vec<Cell>>,
    pub(crate) suppressed: u64,
}

impl Clusters {
    pub(crate) fn cell(&self, c: u32, a: usize) -> &Cell {
        let n = self.distinct.len();
        &self.distinct[a][self.cells[c as usize * n + a] as usize]
    }
}

/// The outcome: the closed clusters, and each opened cluster id's final cluster.
pub(crate) struct ClusterOutcome {
    pub(crate) clusters: Clusters,
    pub(crate) final_of: Vec<u32>,
}

impl<'a> Clustering<'a> {
    pub(crate) fn new(domains: &'a [CellDomain], settings: ClusterSettings) -> Clustering<'a> {
        let n = domains.len();
        let rowed: Vec<bool> = domains.iter().map(|d| d.node_row(&d.leaf(0)).is_some()).collect();
        Clustering {
            all_rowed: rowed.iter().all(|&r| r),
            #[cfg(target_arch = "x86_64")]
            avx2: std::arch::is_x86_feature_detected!("avx2"),
            #[cfg(not(target_arch = "x86_64"))]
            avx2: false,
            rowed,
            domains,
            settings: ClusterSettings { open: settings.open.max(1), ..settings },
            open: Vec::new(),
            final_of: Vec::new(),
            out: Clusters { distinct: vec![Vec::new(); n], ..Clusters::default() },
            interned: vec![FxHashMap::default(); n],
            last: SUPPRESSED,
            scratch: vec![0.0; n],
            best_scratch: vec![0.0; n],
            value_rows: vec![([0; 8], [0.0; 8]); n],
        }
    }

    fn can_close(&self, c: &Open) -> bool {
        c.size >= self.settings.k && self.settings.l.is_none_or(|l| c.sensitive.len() as u64 >= l)
    }

    /// Take the next record (its value number per QI, its sensitive value
    /// code when ℓ is asked); returns the id of the cluster it joined.
    pub(crate) fn add(&mut self, values: &[u32], sensitive: u32) -> u32 {
        for (a, d) in self.domains.iter().enumerate() {
            if self.rowed[a] {
                self.value_rows[a] = d.value_row(values[a]);
            }
        }
        let (mut lms, mut best_lms) = (std::mem::take(&mut self.scratch), std::mem::take(&mut self.best_scratch));
        // The least growth; ties go to the cluster opened first (lower index).
        let best = if self.all_rowed {
            let best = self.least_growth_rowed();
            if let Some((_, i)) = best {
                let c = &self.open[i];
                for ((l, q), v) in best_lms.iter_mut().zip(&c.qis).zip(&self.value_rows) {
                    *l = node_lm_with(&q.row, q.above, v);
                }
            }
            best
        } else {
            // The cluster the previous record joined (else the newest) is
            // tried first: in value order it is usually the best, and its
            // growth bounds the others'.
            let mut best: Option<(f64, usize)> = None;
            let first = self.open.iter().position(|c| c.ids[0] == self.last).or(self.open.len().checked_sub(1));
            for i in first.into_iter().chain((0..self.open.len()).filter(|&i| Some(i) != first)) {
                if let Some(growth) = self.growth(i, values, best, &mut lms) {
                    best = Some((growth, i));
                    std::mem::swap(&mut lms, &mut best_lms);
                }
            }
            best
        };
        let i = match best {
            Some((growth, i)) if growth == 0.0 || self.open.len() >= self.settings.open => {
                let mut c = std::mem::replace(&mut self.open[i], Open::EMPTY);
                for (a, d) in self.domains.iter().enumerate() {
                    d.add(&mut c.cells[a], values[a]);
                    self.refresh(&mut c, a);
                }
                c.lm = best_lms.iter().sum();
                for (q, &l) in c.qis.iter_mut().zip(best_lms.iter()) {
                    q.lm = l;
                }
                c.size += 1;
                if self.settings.l.is_some() {
                    if let Err(j) = c.sensitive.binary_search(&sensitive) {
                        c.sensitive.insert(j, sensitive);
                    }
                }
                self.open[i] = c;
                i
            }
            _ => {
                let id = self.final_of.len() as u32;
                self.final_of.push(SUPPRESSED);
                let cells: Vec<Cell> = self.domains.iter().zip(values).map(|(d, &v)| d.leaf(v)).collect();
                let sensitive = if self.settings.l.is_some() { vec![sensitive] } else { Vec::new() };
                let c = self.open_with(vec![id], 1, cells, sensitive);
                self.open.push(c);
                self.open.len() - 1
            }
        };
        (self.scratch, self.best_scratch) = (lms, best_lms);
        let id = self.open[i].ids[0];
        self.last = id;
        if self.can_close(&self.open[i]) {
            let c = self.open.remove(i);
            self.close(c);
        }
        id
    }

    /// With every QI read through node rows: each open cluster's growth on
    /// taking the record of `value_rows` (see [`Clustering::growth`]), every
    /// QI read without a branch, two clusters at a time so their two sums (in
    /// QI order, as the definition's) run side by side; the least growth and
    /// its index (ties: the lower). Measured about 45% faster than trying the
    /// clusters one by one, each until its bound loses.
    fn least_growth_rowed(&self) -> Option<(f64, usize)> {
        #[cfg(target_arch = "x86_64")]
        if self.avx2 {
            // SAFETY: the CPU has AVX2 (checked in `new`).
            return unsafe { self.least_growth_rowed_avx2() };
        }
        self.least_growth_with(node_lm_with)
    }

    /// [`Clustering::least_growth_rowed`] compiled for AVX2: a row compare is one instruction.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn least_growth_rowed_avx2(&self) -> Option<(f64, usize)> {
        self.least_growth_with(|row, above, value| crate::search::cells::node_lm_with_avx2(row, above, value))
    }

    /// The body of [`Clustering::least_growth_rowed`], `lm_with` being [`node_lm_with`] or its AVX2 twin.
    #[inline(always)]
    fn least_growth_with(
        &self,
        lm_with: impl Fn(&[u32; 8], u32, &([u32; 8], [f64; 8])) -> f64,
    ) -> Option<(f64, usize)> {
        let values = &self.value_rows;
        let more = |q: &QiCell, v: &([u32; 8], [f64; 8])| lm_with(&q.row, q.above, v) - q.lm;
        let growth = |c: &Open, more: f64| c.lm + (c.size as f64 + 1.0) * more;
        let mut best: Option<(f64, usize)> = None;
        let mut take = |g: f64, i: usize| {
            if best.is_none_or(|(d, _)| g < d) {
                best = Some((g, i));
            }
        };
        let mut pairs = self.open.chunks_exact(2);
        for (j, pair) in pairs.by_ref().enumerate() {
            let (x, y) = (&pair[0], &pair[1]);
            let (mut mx, mut my) = (0.0, 0.0);
            for ((qx, qy), v) in x.qis.iter().zip(&y.qis).zip(values) {
                mx += more(qx, v);
                my += more(qy, v);
            }
            take(growth(x, mx), 2 * j);
            take(growth(y, my), 2 * j + 1);
        }
        if let [z] = pairs.remainder() {
            take(growth(z, z.qis.iter().zip(values).fold(0.0, |m, (q, v)| m + more(q, v))), self.open.len() - 1);
        }
        best
    }

    /// Cluster `i`'s growth (and its new LM per QI) on taking `values`, if it
    /// beats `best` (a growth and the index holding it; ties to the lower index).
    /// Growth = (|X|+1)·S' − |X|·S = S + (|X|+1)·(S' − S), computed in the
    /// second form, the increments summed in QI order, so a record the
    /// cluster covers grows it by exactly S (ties between such clusters are
    /// then exact). As S' ≥ S, a cluster whose S clearly exceeds the best
    /// growth is not tried, and the QIs are read in job order, S + (|X|+1)·
    /// (the increments so far) bounding the growth, a cluster dropped once
    /// that bound clearly exceeds the best. "Clearly": by a margin far above
    /// float rounding, so the exact growth decides every close call.
    #[inline]
    fn growth(&self, i: usize, values: &[u32], best: Option<(f64, usize)>, lms: &mut [f64]) -> Option<f64> {
        let c = &self.open[i];
        // A bound above this is clearly beaten.
        let limit = best.map_or(f64::INFINITY, |(d, _)| d + 1e-9 * d.abs().max(1.0));
        if c.lm > limit {
            return None;
        }
        let grown = c.size as f64 + 1.0;
        let mut more = 0.0;
        for a in 0..lms.len() {
            let q = &c.qis[a];
            lms[a] = if self.rowed[a] {
                node_lm_with(&q.row, q.above, &self.value_rows[a])
            } else {
                self.domains[a].lm_with(&c.cells[a], values[a])
            };
            more += lms[a] - q.lm;
            if c.lm + grown * more > limit {
                return None;
            }
        }
        let growth = c.lm + grown * more;
        debug_assert!(growth >= c.lm - 1e-9 * c.lm.max(1.0));
        best.is_none_or(|(d, j)| growth < d || (growth == d && i < j)).then_some(growth)
    }

    /// A cluster with these cells (its node rows and LMs filled in).
    fn open_with(&self, ids: Vec<u32>, size: u64, cells: Vec<Cell>, sensitive: Vec<u32>) -> Open {
        let qis: Vec<QiCell> =
            self.domains.iter().zip(&cells).map(|(d, c)| QiCell { lm: d.lm(c), ..QiCell::default() }).collect();
        let mut c = Open { ids, size, lm: qis.iter().map(|q| q.lm).sum(), qis, cells, sensitive };
        for a in 0..self.domains.len() {
            self.refresh(&mut c, a);
        }
        c
    }

    /// Copy QI `a`'s node row into the cluster after its cell changed.
    fn refresh(&self, c: &mut Open, a: usize) {
        if let Some((row, level)) = self.domains[a].node_row(&c.cells[a]) {
            c.qis[a].row = row;
            c.qis[a].above = u32::MAX << level;
        }
    }

    fn close(&mut self, c: Open) {
        let index = self.out.sizes.len() as u32;
        self.out.sizes.push(c.size);
        for (a, cell) in c.cells.into_iter().enumerate() {
            let distinct = &mut self.out.distinct[a];
            let id = *self.interned[a].entry(cell).or_insert_with_key(|cell| {
                distinct.push(cell.clone());
                distinct.len() as u32 - 1
            });
            self.out.cells.push(id);
        }
        for id in c.ids {
            self.final_of[id as usize] = index;
        }
    }

    fn merged(&self, x: &Open, y: &Open) -> Open {
        let cells: Vec<Cell> =
            self.domains.iter().enumerate().map(|(a, d)| d.merge(&x.cells[a], &y.cells[a])).collect();
        let mut sensitive: Vec<u32> = x.sensitive.iter().chain(&y.sensitive).copied().collect();
        sensitive.sort_unstable();
        sensitive.dedup();
        let ids = x.ids.iter().chain(&y.ids).copied().collect();
        self.open_with(ids, x.size + y.size, cells, sensitive)
    }

    /// After the pass: merge the open clusters in opening order until each
    /// can close; suppress what is left.
    pub(crate) fn finish(mut self) -> ClusterOutcome {
        let mut open = std::mem::take(&mut self.open);
        while !open.is_empty() {
            let mut current = open.remove(0);
            while !self.can_close(&current) && !open.is_empty() {
                let mut best: Option<(f64, usize, Open)> = None;
                for (j, other) in open.iter().enumerate() {
                    let m = self.merged(&current, other);
                    let added = m.cost() - current.cost() - other.cost();
                    if best.as_ref().is_none_or(|(b, _, _)| added < *b) {
                        best = Some((added, j, m));
                    }
                }
                let (_, j, m) = best.expect("another open cluster");
                open.remove(j);
                current = m;
            }
            if self.can_close(&current) {
                self.close(current);
            } else {
                self.out.suppressed += current.size;
            }
        }
        ClusterOutcome { clusters: self.out, final_of: self.final_of }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(n: u32) -> CellDomain {
        CellDomain::Set { text: (0..n).map(|i| Some(i.to_string())).collect() }
    }

    #[test]
    fn identical_records_fill_a_cluster_at_no_cost() {
        let d = [set(4), set(4)];
        let mut c = Clustering::new(&d, ClusterSettings { k: 2, l: None, open: 2 });
        let ids: Vec<u32> = [[0, 0], [0, 0], [1, 1], [1, 1], [3, 3]].iter().map(|v| c.add(v, 0)).collect();
        assert_eq!(ids, vec![0, 0, 1, 1, 2]);
        let out = c.finish();
        // The last record has no partner: suppressed.
        assert_eq!(out.clusters.sizes, vec![2, 2]);
        assert_eq!(out.clusters.suppressed, 1);
        assert_eq!(out.final_of, vec![0, 1, SUPPRESSED]);
    }

    #[test]
    fn with_m_open_a_record_joins_the_least_growth() {
        let d = [set(10)];
        let mut c = Clustering::new(&d, ClusterSettings { k: 3, l: None, open: 2 });
        // 0 and 5 open clusters; 1 joins {0} (growth 2·(1/9) − 0) as m = 2 are open.
        for v in [0, 5, 1] {
            c.add(&[v], 0);
        }
        assert_eq!(c.open[0].size, 2);
        assert_eq!(c.open[1].size, 1);
        // 0 again: {0,1} grows by 3·(1/9) − 2·(1/9) = 1/9; {5} by 2·(1/9): joins {0,1}, which closes.
        c.add(&[0], 0);
        assert_eq!(c.out.sizes, vec![3]);
        let out = c.finish();
        assert_eq!(out.clusters.suppressed, 1);
    }

    #[test]
    fn leftover_open_clusters_merge_in_opening_order() {
        let d = [set(10)];
        let mut c = Clustering::new(&d, ClusterSettings { k: 3, l: None, open: 4 });
        for v in [0, 9, 1, 8] {
            c.add(&[v], 0);
        }
        // Open: {0}, {9}, {1}, {8}, all distinct values under m = 4.
        assert_eq!(c.open.len(), 4);
        let out = c.finish();
        // {0} takes {1} (cheapest), then {8} or {9}: both add the same, {9} opened first.
        assert_eq!(out.clusters.sizes, vec![3]);
        assert_eq!(out.clusters.suppressed, 1);
        assert_eq!(out.final_of, vec![0, 0, 0, SUPPRESSED]);
        assert_eq!(out.clusters.cell(0, 0), &Cell::Set(vec![0, 1, 9]));
    }

    #[test]
    fn l_diversity_keeps_a_cluster_open() {
        let d = [set(2)];
        let mut c = Clustering::new(&d, ClusterSettings { k: 2, l: Some(2), open: 2 });
        for s in [7, 7, 8] {
            c.add(&[0], s);
        }
        assert_eq!(c.out.sizes, vec![3]);
    }

    /// The algorithm written plainly: clusters as record lists, each
    /// cost recomputed from the records' leaf cells, no bounds.
    fn reference(
        domains: &[CellDomain],
        records: &[(Vec<u32>, u32)],
        st: ClusterSettings,
    ) -> (Vec<u32>, Vec<u64>, u64) {
        let cell_of = |members: &[usize], a: usize| {
            let d = &domains[a];
            members[1..].iter().fold(d.leaf(records[members[0]].0[a]), |c, &r| d.merge(&c, &d.leaf(records[r].0[a])))
        };
        let lm_sum =
            |members: &[usize]| -> f64 { (0..domains.len()).map(|a| domains[a].lm(&cell_of(members, a))).sum() };
        let cost = |members: &[usize]| -> f64 { members.len() as f64 * lm_sum(members) };
        let done = |members: &[usize]| {
            let mut s: Vec<u32> = members.iter().map(|&r| records[r].1).collect();
            s.sort_unstable();
            s.dedup();
            members.len() as u64 >= st.k && st.l.is_none_or(|l| s.len() as u64 >= l)
        };
        // Open clusters: (id, members); closed: their members.
        let mut open: Vec<(u32, Vec<usize>)> = Vec::new();
        let mut closed: Vec<Vec<usize>> = Vec::new();
        let mut ids = 0u32;
        let mut cluster_of = vec![0u32; records.len()];
        for r in 0..records.len() {
            let mut best: Option<(f64, usize)> = None;
            for (i, (_, m)) in open.iter().enumerate() {
                let mut with = m.clone();
                with.push(r);
                let g = cost(&with) - cost(m);
                // The test's LMs are dyadic fractions: every cost here is exact.
                assert_eq!(g, lm_sum(m) + (m.len() + 1) as f64 * (lm_sum(&with) - lm_sum(m)));
                if best.is_none_or(|(b, _)| g < b) {
                    best = Some((g, i));
                }
            }
            let i = match best {
                Some((g, i)) if g == 0.0 || open.len() >= st.open => {
                    open[i].1.push(r);
                    i
                }
                _ => {
                    open.push((ids, vec![r]));
                    ids += 1;
                    open.len() - 1
                }
            };
            cluster_of[r] = open[i].0;
            if done(&open[i].1) {
                closed.push(open.remove(i).1);
            }
        }
        let mut suppressed = 0;
        while !open.is_empty() {
            let (_, mut current) = open.remove(0);
            while !done(&current) && !open.is_empty() {
                let mut best: Option<(f64, usize)> = None;
                for (j, (_, m)) in open.iter().enumerate() {
                    let both: Vec<usize> = current.iter().chain(m).copied().collect();
                    let g = cost(&both) - cost(&current) - cost(m);
                    if best.is_none_or(|(b, _)| g < b) {
                        best = Some((g, j));
                    }
                }
                current.extend(open.remove(best.expect("open").1).1);
            }
            if done(&current) {
                closed.push(current);
            } else {
                suppressed += current.len() as u64;
                for &r in &current {
                    cluster_of[r] = SUPPRESSED;
                }
                continue;
            }
        }
        // Records → closed cluster index.
        let mut out = vec![SUPPRESSED; records.len()];
        for (c, members) in closed.iter().enumerate() {
            for &r in members {
                out[r] = c as u32;
            }
        }
        (out, closed.iter().map(|m| m.len() as u64).collect(), suppressed)
    }

    #[test]
    fn the_pass_equals_the_plain_algorithm_on_random_tables() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for round in 0..600 {
            // Three QIs: a hierarchy of 2^j + 1 leaves (leaf i under i >> l at
            // level l), a range over 0..=16, a set of 2^j + 1 values. Every LM
            // is then a dyadic fraction and every cost exact, so the plain
            // algorithm's ties are the pass's.
            let mut hierarchy = || {
                let j = rng.random_range(1..=4u32);
                let leaves = (1i64 << j) + 1;
                let levels = rng.random_range(1..=3usize);
                let codes: Vec<Vec<i64>> =
                    (0..leaves).map(|i| (0..=levels).map(|l| if l == levels { 0 } else { i >> l }).collect()).collect();
                let h = CellDomain::hierarchy((0..leaves).map(|i| Some(i.to_string())).collect(), &codes, |l, c| {
                    Some(format!("{l}:{c}"))
                });
                (h, leaves as u32)
            };
            let (h, leaves) = hierarchy();
            // Odd rounds: hierarchies only, the pass's branch-free path.
            let (h2, leaves2) = hierarchy();
            let (h3, leaves3) = hierarchy();
            let values: Vec<f64> = {
                let mut v: Vec<f64> = (0..6).map(|_| rng.random_range(0..=16) as f64).chain([0.0, 16.0]).collect();
                v.sort_by(f64::total_cmp);
                v.dedup();
                v
            };
            let r = CellDomain::Range {
                text: values.iter().map(|x| x.to_string()).collect(),
                values: values.clone(),
                integer: true,
            };
            let distinct = (1u32 << rng.random_range(1..=3)) + 1;
            let set = CellDomain::Set { text: (0..distinct).map(|i| Some(i.to_string())).collect() };
            let hierarchies_only = round % 2 == 1;
            let (domains, ranges) = if hierarchies_only {
                ([h, h2, h3], [leaves, leaves2, leaves3])
            } else {
                ([h, r, set], [leaves, values.len() as u32, distinct])
            };
            let rows = rng.random_range(1..150);
            let mut records: Vec<(Vec<u32>, u32)> = (0..rows)
                .map(|_| (ranges.iter().map(|&n| rng.random_range(0..n)).collect(), rng.random_range(0..4)))
                .collect();
            records.sort();
            let st = ClusterSettings {
                k: rng.random_range(1..6),
                l: (round % 3 == 0).then(|| rng.random_range(1..3)),
                open: rng.random_range(1..10),
            };
            let (want_of, want_sizes, want_suppressed) = reference(&domains, &records, st);
            // The branch-free path's portable build too, where the CPU picks AVX2.
            let mut portable = Clustering::new(&domains, st);
            portable.avx2 = false;
            let portable_ids: Vec<u32> = records.iter().map(|(v, s)| portable.add(v, *s)).collect();
            let portable_out = portable.finish();
            let portable_of: Vec<u32> = portable_ids.iter().map(|&i| portable_out.final_of[i as usize]).collect();
            assert_eq!(portable_of, want_of, "round {round}, {st:?}, without AVX2");
            let mut c = Clustering::new(&domains, st);
            let ids: Vec<u32> = records.iter().map(|(v, s)| c.add(v, *s)).collect();
            let out = c.finish();
            let got_of: Vec<u32> = ids.iter().map(|&i| out.final_of[i as usize]).collect();
            assert_eq!(got_of, want_of, "round {round}, {st:?}");
            assert_eq!(out.clusters.sizes, want_sizes, "round {round}");
            assert_eq!(out.clusters.suppressed, want_suppressed, "round {round}");
            // Each closed cluster's cells are those of its records, merged.
            for (cl, _) in want_sizes.iter().enumerate() {
                let members: Vec<usize> = (0..records.len()).filter(|&r| want_of[r] == cl as u32).collect();
                for (a, d) in domains.iter().enumerate() {
                    let cell = members[1..]
                        .iter()
                        .fold(d.leaf(records[members[0]].0[a]), |x, &r| d.merge(&x, &d.leaf(records[r].0[a])));
                    assert_eq!(out.clusters.cell(cl as u32, a), &cell, "round {round}, cluster {cl}, QI {a}");
                }
            }
        }
    }
}
