//! Li & Li's generalization schemes: which partitions of a QI's values (the
//! values present in the data) are valid generalizations, how to enumerate
//! them each exactly once, how many there are, and how a block is labelled.
//! docs/schemes.md has the definitions.
//!
//! Every scheme but BHS is one shape: a tree over the values (the hierarchy,
//! compressed so no node has a single child; or, for SPS and OPS, a root with
//! every value as a child) and, at each node, a *grouping* of its children.
//! A part of several children is one block (their values, whole); a child
//! alone in its part is split further by its own grouping. The schemes differ
//! in the groupings a node may take:
//! - GHS: all children apart, or all together (a cut of the hierarchy);
//! - GSPS, SPS: any set partition of the children;
//! - GOPS, OPS: any partition of the ordered children into runs.
//!
//! BHS is the chain of the hierarchy's levels.
//!
//! Enumeration (Li & Li Fig. 6, per node) is a tree whose every step merges
//! blocks, so a descendant is always a generalization of its ancestor. The
//! nodes of the value tree are stepped in pre-order, a node only after every
//! node before it is done (its `cursor`), so each partition is reached by one
//! path only.

use crate::data::hierarchy::HierarchyRows;
use crate::options::Scheme;
use anyhow::Result;
use rustc_hash::FxHashMap;
use std::sync::Arc;

impl Scheme {
    fn kind(self) -> Kind {
        match self {
            Scheme::Ghs => Kind::Cut,
            Scheme::Ops | Scheme::Gops => Kind::Runs,
            Scheme::Sps | Scheme::Gsps | Scheme::Bhs => Kind::Sets,
        }
    }

    /// Whether the scheme follows the hierarchy (else its tree is flat).
    fn guided(self) -> bool {
        matches!(self, Scheme::Ghs | Scheme::Gops | Scheme::Gsps)
    }
}

/// The groupings a tree node may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Cut,
    Runs,
    Sets,
}

#[derive(Debug, Clone, Copy)]
enum Child {
    Leaf(u32),
    Node(u32),
}

/// An inner node of the value tree: its children in order (of their first
/// value), and the positions (values, in scheme order) under it.
#[derive(Debug)]
struct Inner {
    children: Vec<Child>,
    positions: Vec<u32>,
}

/// One QI as the schemes see it. Values are numbered two ways: the leaf index
/// of the in-memory evaluator (rank of the leaf code) and the position in the
/// scheme's total order (numeric for a numeric column, else the hierarchy's
/// depth-first order, children in order of first appearance in its file).
#[derive(Debug)]
pub struct ValueTree {
    pub(crate) column: String,
    pub(crate) scheme: Scheme,
    /// Position → leaf index.
    order: Vec<u32>,
    /// Per leaf index: the value's text (None for NULL).
    pub values: Vec<Option<String>>,
    /// Per leaf index: its rank in hierarchy (depth-first) order, the order
    /// blocks and the tie-break vector list values in.
    pub(crate) hier_rank: Vec<u32>,
    /// Inner nodes in pre-order; empty when there is one value.
    inner: Vec<Inner>,
    /// BHS: per distinct level partition, the lowest level giving it and the
    /// block of each leaf index.
    levels: Vec<(u8, Vec<u32>)>,
    /// Present values under a hierarchy node (sorted leaf indices) → the
    /// lowest such node's label.
    node_labels: FxHashMap<Box<[u32]>, Option<String>>,
    /// Per leaf index, for BHS labels: per level, the node label.
    level_labels: Vec<Vec<Option<String>>>,
    numeric: bool,
    /// Absent hierarchy leaves, grouped by their lowest ancestor with present
    /// values: (that ancestor's present leaf indices, absent leaves under it).
    absent: Vec<(Vec<u32>, u64)>,
    /// Hierarchy leaves (glm's denominator).
    pub(crate) hierarchy_leaves: u64,
    /// [`ValueTree::valid_blocks`], computed once.
    valid: std::sync::OnceLock<Option<Vec<u32>>>,
}

impl ValueTree {
    /// The domain of one QI under `scheme`. Errors (as text, the caller adds
    /// the job file) when OPS/GOPS meet a numeric column whose hierarchy
    /// groups values that are not contiguous in numeric order.
    pub fn new(column: &str, scheme: Scheme, numeric: bool, h: &HierarchyRows) -> Result<ValueTree, String> {
        let n = h.present.len();
        let height = h.rows.first().map_or(0, |r| r.1.len() - 1);
        let index_of: FxHashMap<i64, u32> = h.present.iter().enumerate().map(|(i, &c)| (c, i as u32)).collect();
        // First appearance of each (level, code) in file order.
        let mut first: FxHashMap<(usize, i64), usize> = FxHashMap::default();
        for (r, (_, codes)) in h.rows.iter().enumerate() {
            for (l, &c) in codes.iter().enumerate() {
                first.entry((l, c)).or_insert(r);
            }
        }
        // Per leaf index: value, codes at every level, depth-first key (top down).
        let mut values = vec![None; n];
        let mut path: Vec<Vec<i64>> = vec![Vec::new(); n];
        let mut absent_codes: Vec<Vec<i64>> = Vec::new();
        for (v, codes) in &h.rows {
            match index_of.get(&codes[0]) {
                Some(&i) => {
                    values[i as usize] = v.clone();
                    path[i as usize] = codes.clone();
                }
                None => absent_codes.push(codes.clone()),
            }
        }
        let dfs_key = |i: usize| -> Vec<usize> { (0..=height).rev().map(|l| first[&(l, path[i][l])]).collect() };
        let mut hier: Vec<u32> = (0..n as u32).collect();
        hier.sort_by_key(|&i| dfs_key(i as usize));
        let mut hier_rank = vec![0u32; n];
        for (r, &i) in hier.iter().enumerate() {
            hier_rank[i as usize] = r as u32;
        }
        let number = |i: usize| -> Option<f64> { values[i].as_deref().and_then(|s| s.trim().parse::<f64>().ok()) };
        let order: Vec<u32> = if numeric {
            let mut o = hier.clone();
            // NULL (no number) first, then by value; equal numbers keep hierarchy order.
            o.sort_by(|&x, &y| {
                let (a, b) = (number(x as usize), number(y as usize));
                a.partial_cmp(&b).unwrap_or(std::cmp::Ordering::Equal)
            });
            o
        } else {
            hier.clone()
        };
        let mut pos_of = vec![0u32; n];
        for (p, &i) in order.iter().enumerate() {
            pos_of[i as usize] = p as u32;
        }

        // Hierarchy nodes with present values: (level, code) → sorted leaf indices.
        let mut members: FxHashMap<(usize, i64), Vec<u32>> = FxHashMap::default();
        for i in 0..n {
            for l in 0..=height {
                members.entry((l, path[i][l])).or_default().push(i as u32);
            }
        }
        let mut node_labels: FxHashMap<Box<[u32]>, Option<String>> = FxHashMap::default();
        let mut by_level: Vec<(usize, i64)> = members.keys().copied().collect();
        by_level.sort();
        for key in &by_level {
            let mut m = members[key].clone();
            m.sort_unstable();
            node_labels.entry(m.into_boxed_slice()).or_insert_with(|| h.labels.get(key).cloned().flatten());
        }
        if numeric && matches!(scheme, Scheme::Ops | Scheme::Gops) {
            for (&(l, c), m) in &members {
                let (lo, hi) = m
                    .iter()
                    .fold((u32::MAX, 0), |(lo, hi), &i| (lo.min(pos_of[i as usize]), hi.max(pos_of[i as usize])));
                if (hi - lo + 1) as usize != m.len() {
                    let label = h.labels.get(&(l, c)).cloned().flatten().unwrap_or_else(|| "NULL".into());
                    return Err(format!(
                        "column \"{column}\" is numeric, so {} orders it by value, but its hierarchy's \"{label}\" (level {l}) is not a contiguous range of the values present",
                        scheme.name()
                    ));
                }
            }
        }
        let level_labels: Vec<Vec<Option<String>>> =
            (0..n).map(|i| (0..=height).map(|l| h.labels.get(&(l, path[i][l])).cloned().flatten()).collect()).collect();

        // BHS: the distinct level partitions, lowest level first.
        let mut levels: Vec<(u8, Vec<u32>)> = Vec::new();
        for l in 0..=height {
            let mut ids: FxHashMap<i64, u32> = FxHashMap::default();
            let blocks: Vec<u32> = (0..n)
                .map(|i| {
                    let next = ids.len() as u32;
                    *ids.entry(path[i][l]).or_insert(next)
                })
                .collect();
            if levels.last().is_none_or(|(_, b)| !same_partition(b, &blocks)) {
                levels.push((l as u8, blocks));
            }
        }

        // The value tree: guided schemes follow the hierarchy, compressed.
        let mut inner: Vec<Inner> = Vec::new();
        if n > 1 {
            if scheme.guided() {
                let top = (height, path[0][height]);
                build_inner(&mut inner, top, &members, &path, &pos_of);
            } else {
                let children = (0..n as u32).map(Child::Leaf).collect();
                inner.push(Inner { children, positions: (0..n as u32).collect() });
            }
        }

        // Absent hierarchy leaves by their lowest ancestor with present values.
        let mut absent_by: FxHashMap<(usize, i64), u64> = FxHashMap::default();
        for codes in &absent_codes {
            if let Some(l) = (0..=height).find(|&l| members.contains_key(&(l, codes[l]))) {
                *absent_by.entry((l, codes[l])).or_default() += 1;
            }
        }
        let mut absent: Vec<(Vec<u32>, u64)> = absent_by.into_iter().map(|(k, c)| (members[&k].clone(), c)).collect();
        absent.sort();
        Ok(ValueTree {
            column: column.to_string(),
            scheme,
            order,
            values,
            hier_rank,
            inner,
            levels,
            node_labels,
            level_labels,
            numeric,
            absent,
            hierarchy_leaves: h.rows.len() as u64,
            valid: Default::default(),
        })
    }

    /// Values present.
    pub(crate) fn len(&self) -> usize {
        self.order.len()
    }

    fn kind(&self) -> Kind {
        self.scheme.kind()
    }

    /// A state from its groupings (or BHS level) and cursor, blocks filled in.
    fn state(&self, groupings: Vec<Vec<u32>>, level: usize, cursor: u32) -> Arc<State> {
        let mut s = State { groupings, level, cursor, blocks: Vec::new(), nblocks: 0 };
        self.fill_blocks(&mut s);
        Arc::new(s)
    }

    /// The finest partition: every value alone.
    pub fn root(&self) -> Arc<State> {
        match self.scheme {
            Scheme::Bhs => self.state(Vec::new(), 0, 0),
            _ => self.state(self.inner.iter().map(|u| (0..u.children.len() as u32).collect()).collect(), 0, 0),
        }
    }

    /// The coarsest partition: one block.
    pub(crate) fn top(&self) -> Arc<State> {
        match self.scheme {
            Scheme::Bhs => self.state(Vec::new(), self.levels.len() - 1, 0),
            _ => self.state(self.inner.iter().map(|u| vec![0; u.children.len()]).collect(), 0, 0),
        }
    }

    /// The BHS states, one per distinct level partition (for seeding).
    pub(crate) fn level_states(&self) -> Vec<Arc<State>> {
        (0..self.levels.len())
            .map(|l| {
                let blocks = self.levels[l].1.clone();
                let nblocks = blocks.iter().max().map_or(0, |m| m + 1);
                Arc::new(State { groupings: Vec::new(), level: l, cursor: 0, blocks, nblocks })
            })
            .collect()
    }

    /// The state's children in the enumeration tree, each one step coarser.
    pub fn children(&self, s: &State) -> Vec<Arc<State>> {
        let mut out = Vec::new();
        if self.scheme == Scheme::Bhs {
            if s.level + 1 < self.levels.len() {
                let mut c =
                    State { groupings: Vec::new(), level: s.level + 1, cursor: 0, blocks: Vec::new(), nblocks: 0 };
                self.fill_blocks(&mut c);
                out.push(Arc::new(c));
            }
            return out;
        }
        let active = self.active(s);
        for w in s.cursor as usize..self.inner.len() {
            if !active[w] {
                continue;
            }
            for g in local_children(self.kind(), &s.groupings[w]) {
                let mut groupings = s.groupings.clone();
                groupings[w] = g;
                out.push(self.state(groupings, 0, w as u32));
            }
        }
        out
    }

    /// Whether the state has any child.
    pub(crate) fn can_step(&self, s: &State) -> bool {
        if self.scheme == Scheme::Bhs {
            return s.level + 1 < self.levels.len();
        }
        let active = self.active(s);
        (s.cursor as usize..self.inner.len()).any(|w| active[w] && has_local_child(self.kind(), &s.groupings[w]))
    }

    /// Inner nodes still split by their own grouping: every ancestor keeps
    /// them alone in their part.
    fn active(&self, s: &State) -> Vec<bool> {
        let mut active = vec![false; self.inner.len()];
        if !self.inner.is_empty() {
            active[0] = true;
        }
        for u in 0..self.inner.len() {
            if !active[u] {
                continue;
            }
            let g = &s.groupings[u];
            for (ci, c) in self.inner[u].children.iter().enumerate() {
                if let Child::Node(w) = c {
                    active[*w as usize] = g.iter().filter(|&&p| p == g[ci]).count() == 1;
                }
            }
        }
        active
    }

    fn fill_blocks(&self, s: &mut State) {
        let n = self.len();
        if self.scheme == Scheme::Bhs {
            s.blocks = self.levels[s.level].1.clone();
            s.nblocks = s.blocks.iter().max().map_or(0, |m| m + 1);
            return;
        }
        let mut blocks = vec![0u32; n];
        let mut next = 0u32;
        if self.inner.is_empty() {
            next = n.min(1) as u32;
        } else {
            self.assign(0, s, &mut blocks, &mut next);
        }
        s.blocks = blocks;
        s.nblocks = next;
    }

    fn assign(&self, u: usize, s: &State, blocks: &mut [u32], next: &mut u32) {
        let g = &s.groupings[u];
        let parts = g.iter().max().map_or(0, |m| m + 1);
        for p in 0..parts {
            let members: Vec<usize> = (0..g.len()).filter(|&c| g[c] == p).collect();
            if members.len() == 1 {
                match self.inner[u].children[members[0]] {
                    Child::Leaf(pos) => {
                        blocks[self.order[pos as usize] as usize] = *next;
                        *next += 1;
                    }
                    Child::Node(w) => self.assign(w as usize, s, blocks, next),
                }
            } else {
                for &c in &members {
                    for pos in self.child_positions(u, c) {
                        blocks[self.order[pos as usize] as usize] = *next;
                    }
                }
                *next += 1;
            }
        }
    }

    fn child_positions(&self, u: usize, c: usize) -> Vec<u32> {
        match self.inner[u].children[c] {
            Child::Leaf(p) => vec![p],
            Child::Node(w) => self.inner[w as usize].positions.clone(),
        }
    }

    /// How many partitions the scheme allows (None past u128).
    pub fn count(&self) -> Option<u128> {
        if self.scheme == Scheme::Bhs {
            return Some(self.levels.len() as u128);
        }
        if self.inner.is_empty() {
            return Some(1);
        }
        self.count_at(0)
    }

    fn count_at(&self, u: usize) -> Option<u128> {
        let weights: Vec<u128> = self.inner[u]
            .children
            .iter()
            .map(|c| match c {
                Child::Leaf(_) => Some(1),
                Child::Node(w) => self.count_at(*w as usize),
            })
            .collect::<Option<_>>()?;
        let d = weights.len();
        match self.kind() {
            // A cut: this node whole, or every child cut on its own.
            Kind::Cut => weights.iter().try_fold(1u128, |acc, &w| acc.checked_mul(w))?.checked_add(1),
            // Runs: f(i) = f(i-1)·w_i + Σ_{j ≤ i-2} f(j) (a run of two or more).
            Kind::Runs => {
                let mut f: Vec<u128> = vec![1];
                let mut prefix: u128 = 0; // Σ f(0..=i-2)
                for i in 1..=d {
                    if i >= 2 {
                        prefix = prefix.checked_add(f[i - 2])?;
                    }
                    f.push(f[i - 1].checked_mul(weights[i - 1])?.checked_add(prefix)?);
                }
                Some(f[d])
            }
            // Sets: Σ_j e_j(w) · A(d - j), A = set partitions with no singleton.
            Kind::Sets => {
                let mut e: Vec<u128> = vec![1];
                for &w in &weights {
                    let mut next = vec![0u128; e.len() + 1];
                    for (j, &v) in e.iter().enumerate() {
                        next[j] = next[j].checked_add(v)?;
                        next[j + 1] = next[j + 1].checked_add(v.checked_mul(w)?)?;
                    }
                    e = next;
                }
                let a = no_singleton_partitions(d)?;
                let mut total: u128 = 0;
                for j in 0..=d {
                    total = total.checked_add(e[j].checked_mul(a[d - j])?)?;
                }
                Some(total)
            }
        }
    }

    /// The blocks of a partition (per leaf index), each a list of leaf
    /// indices in hierarchy order, blocks ordered by their first value.
    pub(crate) fn block_lists(&self, blocks: &[u32]) -> Vec<Vec<u32>> {
        let mut by_hier: Vec<u32> = (0..self.len() as u32).collect();
        by_hier.sort_by_key(|&i| self.hier_rank[i as usize]);
        let mut index: FxHashMap<u32, usize> = FxHashMap::default();
        let mut out: Vec<Vec<u32>> = Vec::new();
        for i in by_hier {
            let slot = *index.entry(blocks[i as usize]).or_insert_with(|| {
                out.push(Vec::new());
                out.len() - 1
            });
            out[slot].push(i);
        }
        out
    }

    /// The partition as the tie-break compares it: its blocks as the report
    /// lists them (values in hierarchy order, blocks by their first value),
    /// each value as its hierarchy rank + 1 and each block closed by 0, so
    /// that comparing two vectors compares the block lists lexicographically
    /// (a block that is a prefix of another comes first).
    pub fn canonical(&self, blocks: &[u32]) -> Vec<u32> {
        let mut out = Vec::with_capacity(self.len() * 2);
        for list in self.block_lists(blocks) {
            out.extend(list.iter().map(|&i| self.hier_rank[i as usize] + 1));
            out.push(0);
        }
        out
    }

    /// Every valid block of the scheme (a set of values some valid partition
    /// holds as one block), as a bit mask over hierarchy ranks; None for BHS
    /// (whose validity is not block by block) or past 32 values. A partition
    /// is valid exactly when every block of it is: a single value, or a part
    /// of two or more whole children of one node of the value tree that the
    /// node's grouping kind allows (any set, a run, or all of them).
    pub(crate) fn valid_blocks(&self) -> Option<&[u32]> {
        self.valid.get_or_init(|| self.find_valid_blocks()).as_deref()
    }

    fn find_valid_blocks(&self) -> Option<Vec<u32>> {
        if self.scheme == Scheme::Bhs || self.len() > 32 {
            return None;
        }
        let bit = |pos: u32| 1u32 << self.hier_rank[self.order[pos as usize] as usize];
        let mut out: Vec<u32> = (0..self.len() as u32).map(bit).collect();
        for (u, node) in self.inner.iter().enumerate() {
            let masks: Vec<u32> = (0..node.children.len())
                .map(|c| self.child_positions(u, c).iter().fold(0, |m, &p| m | bit(p)))
                .collect();
            let d = masks.len();
            match self.kind() {
                Kind::Cut => out.push(masks.iter().fold(0, |m, &x| m | x)),
                Kind::Runs => {
                    for i in 0..d {
                        let mut m = masks[i];
                        for x in &masks[i + 1..] {
                            m |= x;
                            out.push(m);
                        }
                    }
                }
                Kind::Sets => {
                    if d > 31 {
                        return None;
                    }
                    for sub in 1u64..(1u64 << d) {
                        if sub.count_ones() >= 2 {
                            out.push((0..d).filter(|&c| sub >> c & 1 == 1).fold(0, |m, c| m | masks[c]));
                        }
                    }
                }
            }
        }
        out.sort_unstable();
        out.dedup();
        Some(out)
    }

    /// The state of a partition given block by block (per leaf index), when
    /// it is valid under the scheme; it ends the enumeration (no children):
    /// for partitions found outside it, to measure and release.
    pub(crate) fn from_blocks(&self, blocks: &[u32]) -> Option<Arc<State>> {
        if self.scheme == Scheme::Bhs || blocks.len() != self.len() {
            return None;
        }
        let valid = self.valid_blocks()?;
        let mut masks: FxHashMap<u32, u32> = FxHashMap::default();
        for (i, &b) in blocks.iter().enumerate() {
            *masks.entry(b).or_default() |= 1 << self.hier_rank[i];
        }
        if !masks.values().all(|m| valid.binary_search(m).is_ok()) {
            return None;
        }
        let groupings = (0..self.inner.len())
            .map(|u| {
                // A child whole in a block with a sibling shares that part.
                let of: Vec<(u32, bool)> = (0..self.inner[u].children.len())
                    .map(|c| {
                        let pos = self.child_positions(u, c);
                        let b = blocks[self.order[pos[0] as usize] as usize];
                        (b, pos.iter().all(|&p| blocks[self.order[p as usize] as usize] == b))
                    })
                    .collect();
                let mut parts: Vec<(u32, usize)> = Vec::new();
                of.iter()
                    .enumerate()
                    .map(|(c, &(b, whole))| {
                        let shared = whole && of.iter().enumerate().any(|(o, &(ob, ow))| o != c && ow && ob == b);
                        let key = if shared { (b, usize::MAX) } else { (u32::MAX, c) };
                        match parts.iter().position(|&k| k == key) {
                            Some(p) => p as u32,
                            None => {
                                parts.push(key);
                                parts.len() as u32 - 1
                            }
                        }
                    })
                    .collect()
            })
            .collect();
        let s = self.state(groupings, 0, self.inner.len() as u32);
        same_partition(&s.blocks, blocks).then_some(s)
    }

    /// glm's cost of one cell of a block given by its leaf indices, as
    /// [`ValueTree::glm_costs`] gives it.
    pub(crate) fn glm_block_cost(&self, members: &[u32]) -> f64 {
        let mut covered = members.len() as u64;
        for (m, count) in &self.absent {
            if m.iter().all(|i| members.contains(i)) {
                covered += count;
            }
        }
        (covered - 1) as f64 / self.hierarchy_leaves.saturating_sub(1).max(1) as f64
    }

    /// Labels of the blocks of `state` (indexed by block id), distinct.
    pub(crate) fn labels(&self, s: &State) -> Vec<Option<String>> {
        let mut labels: Vec<Option<String>> = vec![None; s.nblocks as usize];
        let lists = self.block_lists(&s.blocks);
        let joined = |list: &[u32]| -> String {
            list.iter()
                .map(|&i| self.values[i as usize].clone().unwrap_or_else(|| "NULL".into()))
                .collect::<Vec<_>>()
                .join("|")
        };
        for list in &lists {
            let b = s.blocks[list[0] as usize] as usize;
            labels[b] = if self.scheme == Scheme::Bhs {
                self.level_labels[list[0] as usize][self.levels[s.level].0 as usize].clone()
            } else {
                let mut sorted = list.clone();
                sorted.sort_unstable();
                match self.node_labels.get(sorted.as_slice()) {
                    Some(l) => l.clone(),
                    None => Some(self.interval_label(list).unwrap_or_else(|| joined(list))),
                }
            };
        }
        // Unambiguous: a label two blocks share becomes the values joined, then numbered.
        for round in 0..2 {
            let mut seen: FxHashMap<Option<String>, usize> = FxHashMap::default();
            for l in &labels {
                *seen.entry(l.clone()).or_default() += 1;
            }
            if seen.values().all(|&c| c == 1) {
                break;
            }
            for list in &lists {
                let b = s.blocks[list[0] as usize] as usize;
                if seen[&labels[b]] > 1 {
                    labels[b] = Some(if round == 0 { joined(list) } else { format!("{} #{}", joined(list), b + 1) });
                }
            }
        }
        labels
    }

    /// `lo-hi` when the column is numeric and the block is a run of its order.
    fn interval_label(&self, list: &[u32]) -> Option<String> {
        if !self.numeric {
            return None;
        }
        let mut pos: Vec<usize> = list.iter().map(|&i| self.order.iter().position(|&o| o == i).unwrap_or(0)).collect();
        pos.sort_unstable();
        if pos.last()? - pos[0] + 1 != pos.len() {
            return None;
        }
        let text = |p: usize| self.values[self.order[p] as usize].clone();
        Some(format!("{}-{}", text(pos[0])?, text(*pos.last()?)?))
    }

    /// Per leaf index: (hierarchy leaves its block covers − 1) / (hierarchy
    /// leaves − 1), glm's cost of one cell. A block covers its values and the
    /// absent leaves whose nearest ancestor with present values lies wholly
    /// inside it, so a block that is a hierarchy node covers what the node
    /// does, and merging never covers less.
    pub fn glm_costs(&self, s: &State, out: &mut Vec<f64>) {
        let covered = self.covered(s);
        let denom = self.hierarchy_leaves.saturating_sub(1).max(1) as f64;
        out.clear();
        out.extend(s.blocks.iter().map(|&b| (covered[b as usize] - 1) as f64 / denom));
    }

    /// Per block of `s`: how many hierarchy leaves its released cell stands
    /// for (its values, and the absent leaves under a node whose present
    /// values are all in the block).
    pub(crate) fn covered(&self, s: &State) -> Vec<u64> {
        let mut covered = vec![0u64; s.nblocks as usize];
        for &b in &s.blocks {
            covered[b as usize] += 1;
        }
        for (members, count) in &self.absent {
            let b = s.blocks[members[0] as usize];
            if members.iter().all(|&i| s.blocks[i as usize] == b) {
                covered[b as usize] += count;
            }
        }
        covered
    }
}

fn same_partition(a: &[u32], b: &[u32]) -> bool {
    let mut ab: FxHashMap<u32, u32> = FxHashMap::default();
    let mut ba: FxHashMap<u32, u32> = FxHashMap::default();
    a.iter().zip(b).all(|(&x, &y)| *ab.entry(x).or_insert(y) == y && *ba.entry(y).or_insert(x) == x)
}

/// Add the compressed subtree under hierarchy node `key` to `inner`
/// (pre-order) and return how the parent refers to it.
fn build_inner(
    inner: &mut Vec<Inner>,
    key: (usize, i64),
    members: &FxHashMap<(usize, i64), Vec<u32>>,
    path: &[Vec<i64>],
    pos_of: &[u32],
) -> Child {
    let (mut level, mut code) = key;
    loop {
        let m = &members[&(level, code)];
        if m.len() == 1 {
            return Child::Leaf(pos_of[m[0] as usize]);
        }
        let mut kids: Vec<i64> = m.iter().map(|&i| path[i as usize][level - 1]).collect();
        kids.sort_unstable();
        kids.dedup();
        if kids.len() == 1 {
            // A node with one child is that child.
            level -= 1;
            code = kids[0];
            continue;
        }
        let mut positions: Vec<u32> = m.iter().map(|&i| pos_of[i as usize]).collect();
        positions.sort_unstable();
        let id = inner.len();
        inner.push(Inner { children: Vec::new(), positions });
        let first = |c: i64| members[&(level - 1, c)].iter().map(|&i| pos_of[i as usize]).min().unwrap_or(0);
        kids.sort_by_key(|&c| first(c));
        let built = kids.iter().map(|&c| build_inner(inner, (level - 1, c), members, path, pos_of)).collect();
        inner[id].children = built;
        return Child::Node(id as u32);
    }
}

/// A QI's partition in the enumeration: the grouping of every inner node's
/// children (as part numbers in order of first child), or the BHS level; the
/// first inner node it may still step; and the block of each leaf index.
#[derive(Debug, Clone)]
pub struct State {
    groupings: Vec<Vec<u32>>,
    level: usize,
    cursor: u32,
    pub blocks: Vec<u32>,
    pub nblocks: u32,
}

/// Li & Li's Child_Partitions (Fig. 6) on one grouping, restricted to runs
/// for `Runs` and to apart → together for `Cut`.
fn local_children(kind: Kind, g: &[u32]) -> Vec<Vec<u32>> {
    let parts = g.iter().max().map_or(0, |m| m + 1) as usize;
    let mut out = Vec::new();
    if kind == Kind::Cut {
        if parts == g.len() && parts > 1 {
            out.push(vec![0; g.len()]);
        }
        return out;
    }
    let mut size = vec![0u32; parts];
    let mut max = vec![0usize; parts];
    let mut only = vec![0usize; parts];
    for (c, &p) in g.iter().enumerate() {
        size[p as usize] += 1;
        max[p as usize] = max[p as usize].max(c);
        only[p as usize] = c;
    }
    // A merge puts a single child e into an earlier part j whose children all
    // come before e, and every part after j is still a single child: so each
    // partition is built by one order only (parts in order of their first
    // child, each part's children in increasing order). Fig. 6 as printed
    // checks the parts between j and e only, which reaches ⟨{0,1},{2,3}⟩ both
    // from ⟨{0},{1},{2,3}⟩ and from ⟨{0,1},{2},{3}⟩.
    let last_multi = (0..parts).rev().find(|&p| size[p] > 1).unwrap_or(0);
    for i in 1..parts {
        if size[i] != 1 {
            continue;
        }
        let e = only[i];
        for j in (last_multi..i).rev() {
            if kind == Kind::Runs && j + 1 != i {
                break;
            }
            if max[j] < e {
                out.push(merge(g, i as u32, j as u32));
            }
        }
    }
    out
}

fn has_local_child(kind: Kind, g: &[u32]) -> bool {
    let parts = g.iter().max().map_or(0, |m| m + 1) as usize;
    match kind {
        Kind::Cut => parts == g.len() && parts > 1,
        // Some part after the first is a single child, and the part before it
        // ends before it (always so for runs).
        _ => !local_children(kind, g).is_empty(),
    }
}

/// Part `i` merged into part `j < i`; parts after `i` renumbered down.
fn merge(g: &[u32], i: u32, j: u32) -> Vec<u32> {
    g.iter()
        .map(|&p| {
            if p == i {
                j
            } else if p > i {
                p - 1
            } else {
                p
            }
        })
        .collect()
}

/// A(r) for r in 0..=d: set partitions of r items with no block of one.
fn no_singleton_partitions(d: usize) -> Option<Vec<u128>> {
    let mut binom: Vec<Vec<u128>> = vec![vec![1]];
    for r in 1..=d {
        let mut row = vec![1u128; r + 1];
        for i in 1..r {
            row[i] = binom[r - 1][i - 1].checked_add(binom[r - 1][i])?;
        }
        binom.push(row);
    }
    let mut a = vec![0u128; d + 1];
    a[0] = 1;
    for r in 2..=d {
        // The block of the first item has i + 1 ≥ 2 items.
        let mut s: u128 = 0;
        for i in 1..r {
            s = s.checked_add(binom[r - 1][i].checked_mul(a[r - 1 - i])?)?;
        }
        a[r] = s;
    }
    Some(a)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A domain from hierarchy rows `leaf;…;top`, every leaf present.
    pub(crate) fn domain(rows: &[&str], scheme: Scheme, numeric: bool) -> ValueTree {
        let split: Vec<Vec<String>> = rows.iter().map(|r| r.split(';').map(String::from).collect()).collect();
        let height = split[0].len() - 1;
        // Codes: per level, the text itself numbered by first appearance (any
        // injective code will do here); leaf codes sorted give the leaf index.
        let mut codes: Vec<FxHashMap<String, i64>> = vec![FxHashMap::default(); height + 1];
        let mut labels = FxHashMap::default();
        let mut out_rows = Vec::new();
        for r in &split {
            let mut c = Vec::new();
            for l in 0..=height {
                let key = r[l..].join(";");
                let next = codes[l].len() as i64;
                let code = *codes[l].entry(key).or_insert(next);
                labels.insert((l, code), Some(r[l].clone()));
                c.push(code);
            }
            out_rows.push((Some(r[0].clone()), c));
        }
        let mut present: Vec<i64> = out_rows.iter().map(|r| r.1[0]).collect();
        present.sort_unstable();
        ValueTree::new("x", scheme, numeric, &HierarchyRows { rows: out_rows, labels, present }).unwrap()
    }

    /// Per value in hierarchy order, its block numbered by first appearance.
    fn rgs(d: &ValueTree, blocks: &[u32]) -> Vec<u32> {
        let mut by_hier: Vec<u32> = (0..d.len() as u32).collect();
        by_hier.sort_by_key(|&i| d.hier_rank[i as usize]);
        let mut ids: FxHashMap<u32, u32> = FxHashMap::default();
        by_hier
            .iter()
            .map(|&i| {
                let next = ids.len() as u32;
                *ids.entry(blocks[i as usize]).or_insert(next)
            })
            .collect()
    }

    fn enumerate(d: &ValueTree) -> Vec<Vec<u32>> {
        let mut out = Vec::new();
        let mut stack = vec![d.root()];
        while let Some(s) = stack.pop() {
            out.push(rgs(d, &s.blocks));
            let kids = d.children(&s);
            for k in &kids {
                // Every step merges blocks.
                assert!(k.nblocks < s.nblocks);
            }
            stack.extend(kids);
        }
        out
    }

    const WORK: [&str; 8] = [
        "State-gov;Government;*",
        "Local-gov;Government;*",
        "Federal-gov;Government;*",
        "Private;Private;*",
        "Inc;Self-employed;*",
        "Not-inc;Self-employed;*",
        "Without-pay;Unemployed;*",
        "Never-worked;Unemployed;*",
    ];

    #[test]
    fn counts_match_the_paper_and_the_enumeration() {
        let seven: Vec<String> = (0..7).map(|i| format!("v{i};*")).collect();
        let seven: Vec<&str> = seven.iter().map(|s| s.as_str()).collect();
        assert_eq!(domain(&seven, Scheme::Sps, false).count(), Some(877));
        assert_eq!(domain(&WORK, Scheme::Sps, false).count(), Some(4140));
        assert_eq!(domain(&WORK, Scheme::Ops, false).count(), Some(128));
        // The paper's footnote: one plus the subsets of the four middle nodes,
        // where a middle node of one leaf adds nothing (Private).
        assert_eq!(domain(&WORK, Scheme::Ghs, false).count(), Some(1 + 2 * 1 * 2 * 2));
        for scheme in Scheme::ALL {
            let d = domain(&WORK, scheme, false);
            let all = enumerate(&d);
            let mut distinct = all.clone();
            distinct.sort();
            distinct.dedup();
            assert_eq!(distinct.len(), all.len(), "{scheme:?}: a partition enumerated twice");
            assert_eq!(Some(all.len() as u128), d.count(), "{scheme:?}");
        }
    }

    /// Every set partition of `n` values, as restricted-growth strings.
    fn all_partitions(n: usize) -> Vec<Vec<u32>> {
        let mut out = Vec::new();
        let mut g = vec![0u32; n];
        fn rec(i: usize, max: u32, g: &mut Vec<u32>, out: &mut Vec<Vec<u32>>) {
            if i == g.len() {
                out.push(g.clone());
                return;
            }
            for p in 0..=max + 1 {
                g[i] = p;
                rec(i + 1, max.max(p), g, out);
            }
        }
        if n > 0 {
            rec(1, 0, &mut g, &mut out);
        }
        out
    }

    /// Each scheme's enumeration is exactly the partitions its definition
    /// (the words, checked here value by value) allows.
    #[test]
    fn enumeration_equals_the_definitions() {
        let deep = [
            "a1;a;ab;*",
            "a2;a;ab;*",
            "b1;b;ab;*",
            "b2;b;ab;*",
            "b3;b;ab;*",
            "c1;c;cd;*",
            "d1;d;cd;*",
            "d2;d;cd;*",
            "e1;e;e;*",
        ];
        for rows in [&WORK[..], &deep[..]] {
            let paths: Vec<Vec<&str>> = rows.iter().map(|r| r.split(';').collect()).collect();
            let n = paths.len();
            let height = paths[0].len() - 1;
            // Level of the lowest common ancestor (same text from there up).
            let lca = |x: usize, y: usize| (0..=height).find(|&l| paths[x][l..] == paths[y][l..]).unwrap();
            let nodes: Vec<Vec<usize>> = (0..=height)
                .flat_map(|l| {
                    let mut by: std::collections::BTreeMap<String, Vec<usize>> = Default::default();
                    for (i, p) in paths.iter().enumerate() {
                        by.entry(p[l..].join(";")).or_default().push(i);
                    }
                    by.into_values()
                })
                .collect();
            let levels: Vec<Vec<u32>> = (0..=height)
                .map(|l| {
                    let mut ids: Vec<String> = Vec::new();
                    (0..n)
                        .map(|i| {
                            let key = paths[i][l..].join(";");
                            ids.iter().position(|k| *k == key).unwrap_or_else(|| {
                                ids.push(key);
                                ids.len() - 1
                            }) as u32
                        })
                        .collect()
                })
                .collect();
            let blocks_of = |g: &[u32]| -> Vec<Vec<usize>> {
                let parts = *g.iter().max().unwrap() as usize + 1;
                (0..parts).map(|p| (0..n).filter(|&i| g[i] as usize == p).collect()).collect()
            };
            let interval = |b: &Vec<usize>| b.last().unwrap() - b[0] + 1 == b.len();
            let guided = |g: &[u32]| {
                (0..n).all(|x| {
                    (0..n)
                        .filter(|&y| g[y] == g[x])
                        .all(|y| (0..n).filter(|&z| lca(z, x) < lca(x, y)).all(|z| g[z] == g[x]))
                })
            };
            let valid = |scheme: Scheme, g: &[u32]| match scheme {
                Scheme::Sps => true,
                Scheme::Ops => blocks_of(g).iter().all(interval),
                Scheme::Gsps => guided(g),
                Scheme::Gops => guided(g) && blocks_of(g).iter().all(interval),
                Scheme::Ghs => blocks_of(g).iter().all(|b| nodes.contains(b)),
                Scheme::Bhs => levels.iter().any(|l| same_partition(l, g)),
            };
            let all = all_partitions(n);
            for scheme in Scheme::ALL {
                let d = domain(rows, scheme, false);
                // The test rows list values in hierarchy order, so leaf index
                // order (by code) is mapped back to row order here.
                let mut got: Vec<Vec<u32>> = enumerate(&d);
                got.sort();
                let mut want: Vec<Vec<u32>> = all.iter().filter(|g| valid(scheme, g)).cloned().collect();
                want.sort();
                assert_eq!(got, want, "{scheme:?} over {n} values");
                // Block by block: a partition is valid exactly when its blocks are.
                let Some(masks) = d.valid_blocks() else {
                    assert_eq!(scheme, Scheme::Bhs);
                    continue;
                };
                for g in &all {
                    let mask = |b: &Vec<usize>| b.iter().fold(0u32, |m, &i| m | 1 << d.hier_rank[i]);
                    let by_blocks = blocks_of(g).iter().all(|b| masks.binary_search(&mask(b)).is_ok());
                    assert_eq!(by_blocks, valid(scheme, g), "{scheme:?} {g:?}");
                    let s = d.from_blocks(g);
                    assert_eq!(s.is_some(), by_blocks, "{scheme:?} {g:?}");
                    if let Some(s) = s {
                        assert!(same_partition(&s.blocks, g) && !d.can_step(&s), "{scheme:?} {g:?}");
                    }
                }
            }
        }
    }
}
