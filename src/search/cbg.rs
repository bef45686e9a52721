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
//! [`crate::cells`]'s business.

use crate::cells::{Cell, Domain};
use rustc_hash::FxHashMap;

/// A record's final cluster when it is suppressed.
pub const SUPPRESSED: u32 = u32::MAX;

/// The requirement a cluster closes on.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    pub k: u64,
    pub l: Option<u64>,
    /// m, the most clusters open at once.
    pub open: usize,
}

struct Open {
    /// The ids of the clusters merged into this one (its own first).
    ids: Vec<u32>,
    size: u64,
    cells: Vec<Cell>,
    /// Σ over QIs of LM of the cells.
    lm: f64,
    /// Distinct sensitive values, sorted (only with ℓ).
    sensitive: Vec<u32>,
}

impl Open {
    fn cost(&self) -> f64 {
        self.size as f64 * self.lm
    }
}

/// The pass in progress. Feed it records with [`Clustering::add`] in order.
pub struct Clustering<'a> {
    domains: &'a [Domain],
    settings: Settings,
    open: Vec<Open>,
    /// Per cluster id (given when a cluster opens): its final cluster, or [`SUPPRESSED`].
    final_of: Vec<u32>,
    out: Clusters,
    interned: Vec<FxHashMap<Cell, u32>>,
}

/// The closed clusters: per cluster its size and per QI a cell id; per QI the
/// distinct cells.
#[derive(Debug, Clone, Default)]
pub struct Clusters {
    pub sizes: Vec<u64>,
    /// `cells[c * qis + a]`: cluster c's cell on QI a, an index into `distinct[a]`.
    pub cells: Vec<u32>,
    pub distinct: Vec<Vec<Cell>>,
    pub suppressed: u64,
}

impl Clusters {
    pub fn cell(&self, c: u32, a: usize) -> &Cell {
        let n = self.distinct.len();
        &self.distinct[a][self.cells[c as usize * n + a] as usize]
    }
}

/// The outcome: the closed clusters, and each opened cluster id's final cluster.
pub struct Outcome {
    pub clusters: Clusters,
    pub final_of: Vec<u32>,
}

impl<'a> Clustering<'a> {
    pub fn new(domains: &'a [Domain], settings: Settings) -> Clustering<'a> {
        let n = domains.len();
        Clustering {
            domains,
            settings: Settings { open: settings.open.max(1), ..settings },
            open: Vec::new(),
            final_of: Vec::new(),
            out: Clusters { distinct: vec![Vec::new(); n], ..Clusters::default() },
            interned: vec![FxHashMap::default(); n],
        }
    }

    fn can_close(&self, c: &Open) -> bool {
        c.size >= self.settings.k && self.settings.l.is_none_or(|l| c.sensitive.len() as u64 >= l)
    }

    /// Take the next record (its value number per QI, its sensitive value
    /// code when ℓ is asked); returns the id of the cluster it joined.
    pub fn add(&mut self, values: &[u32], sensitive: u32) -> u32 {
        // The least growth, among clusters in opening order (the first wins ties).
        let mut best: Option<(f64, f64, usize)> = None;
        for (i, c) in self.open.iter().enumerate() {
            // Growth = (|X|+1)·S' − |X|·S ≥ S' ≥ S: X cannot beat what it only ties.
            if best.is_some_and(|(d, _, _)| c.lm >= d) {
                continue;
            }
            let (grown, size) = (c.size as f64 + 1.0, c.size as f64);
            let mut s = 0.0;
            let mut beaten = false;
            for (a, d) in self.domains.iter().enumerate() {
                s += d.lm_with(&c.cells[a], values[a]);
                if best.is_some_and(|(b, _, _)| grown * s - size * c.lm >= b) {
                    beaten = true;
                    break;
                }
            }
            if !beaten {
                best = Some((grown * s - size * c.lm, s, i));
            }
        }
        let i = match best {
            Some((growth, s, i)) if growth == 0.0 || self.open.len() >= self.settings.open => {
                let c = &mut self.open[i];
                for (a, d) in self.domains.iter().enumerate() {
                    d.add(&mut c.cells[a], values[a]);
                }
                c.lm = s;
                c.size += 1;
                if self.settings.l.is_some() {
                    if let Err(j) = c.sensitive.binary_search(&sensitive) {
                        c.sensitive.insert(j, sensitive);
                    }
                }
                i
            }
            _ => {
                let id = self.final_of.len() as u32;
                self.final_of.push(SUPPRESSED);
                let cells: Vec<Cell> = self.domains.iter().zip(values).map(|(d, &v)| d.leaf(v)).collect();
                let lm = self.domains.iter().zip(&cells).map(|(d, c)| d.lm(c)).sum();
                let sensitive = if self.settings.l.is_some() { vec![sensitive] } else { Vec::new() };
                self.open.push(Open { ids: vec![id], size: 1, cells, lm, sensitive });
                self.open.len() - 1
            }
        };
        let id = self.open[i].ids[0];
        if self.can_close(&self.open[i]) {
            let c = self.open.remove(i);
            self.close(c);
        }
        id
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
        let lm = self.domains.iter().zip(&cells).map(|(d, c)| d.lm(c)).sum();
        let mut sensitive: Vec<u32> = x.sensitive.iter().chain(&y.sensitive).copied().collect();
        sensitive.sort_unstable();
        sensitive.dedup();
        Open { ids: x.ids.iter().chain(&y.ids).copied().collect(), size: x.size + y.size, cells, lm, sensitive }
    }

    /// After the pass: merge the open clusters in opening order until each
    /// can close; suppress what is left.
    pub fn finish(mut self) -> Outcome {
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
        Outcome { clusters: self.out, final_of: self.final_of }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(n: u32) -> Domain {
        Domain::Set { text: (0..n).map(|i| Some(i.to_string())).collect() }
    }

    #[test]
    fn identical_records_fill_a_cluster_at_no_cost() {
        let d = [set(4), set(4)];
        let mut c = Clustering::new(&d, Settings { k: 2, l: None, open: 2 });
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
        let mut c = Clustering::new(&d, Settings { k: 3, l: None, open: 2 });
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
        let mut c = Clustering::new(&d, Settings { k: 3, l: None, open: 4 });
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
        let mut c = Clustering::new(&d, Settings { k: 2, l: Some(2), open: 2 });
        for s in [7, 7, 8] {
            c.add(&[0], s);
        }
        assert_eq!(c.out.sizes, vec![3]);
    }
}
