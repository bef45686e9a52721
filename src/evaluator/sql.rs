//! The SQL backend: frequency sets stay in DuckDB tables, and nodes are
//! evaluated in batches, one rollup query and one histogram query serving many
//! nodes. A search may keep a batch's frequency sets so the next batch rolls
//! up from them instead of from the base frequency set. For base frequency
//! sets too large to hold in memory (see [`super::memory`] for the others).

use super::memory::SAMPLE_PARTS;
use super::sorted::{SizeSums, SortedBase};
use super::Pool;
use crate::data::frequency::{rollup, rollup_sets, write_kids, Extras, Kid, RollupShape};
use crate::data::hierarchy::node_table;
use crate::lattice::Node;
use crate::measure::metrics::{Bucket, Histogram};
use crate::measure::privacy::ClassModels;
use crate::sql::{self, list, render};
use anyhow::Result;
use duckdb::types::Value;
use duckdb::Connection;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// Rows one rollup query may join, roughly: batches are cut to stay under it.
const BATCH_ROWS: u64 = 4_000_000;

/// Nodes per GROUPING SETS query from the base frequency set, used once the base
/// is large enough that the join with the batch would read it once per node.
const SETS: usize = 16;

/// [`SqlSets::refuted`] samples the classes in the first this many of
/// [`SAMPLE_PARTS`] parts: a sixteenth.
const SQL_SAMPLE_PARTS: u64 = 4;

/// The frequency-set tables of one evaluator, and how batches are cut.
pub(crate) struct SqlSets<'c> {
    conn: &'c Connection,
    n: usize,
    extras: Extras,
    /// Kept frequency sets: node → (table, id in it).
    stored: HashMap<Node, (String, i64)>,
    /// Kept sets whose histograms were not read (hubs no search asked for),
    /// with their classes.
    unread: HashMap<Node, u64>,
    /// Frequency-set tables that exist now.
    tables: HashSet<String>,
    next_id: i64,
    next_table: u64,
    base_rows: u64,
    /// Per QI and level: leaf code // divisor = code at that level.
    divisors: Vec<Vec<i64>>,
    /// From this many base rows on, batches from the base use GROUPING SETS.
    pub(super) sets_from: u64,
    /// Leaf sums (glm) are computed for classes of at least this size only.
    pub(super) leaf_sums_from: u64,
    /// [`Self::refuted`] tries nothing on base sets of fewer rows.
    pub(super) refute_from: u64,
    /// What GROUPING SETS batches need of the hierarchies, and whether they pack keys.
    pub(super) layout: RollupShape,
    pub(super) models: Arc<ClassModels>,
    /// The base set held by kanon, sorted, when the load chose one; the
    /// base's nodes are then counted there, not in DuckDB.
    sorted: Option<SortedBase>,
    /// DuckDB's pool, shrunk while `sorted` is held.
    pool: Option<Pool<'c>>,
}

/// Histograms computed by one call, with the nodes they belong to.
pub(super) type Computed = Vec<(Node, Histogram)>;

impl<'c> SqlSets<'c> {
    pub(crate) fn new(conn: &'c Connection, heights: &[u8], base_rows: u64, extras: Extras) -> Result<SqlSets<'c>> {
        let divisors = crate::data::hierarchy::divisors(conn, heights.len())?;
        let tops = heights.iter().zip(&divisors).map(|(&h, d)| d[h as usize]).collect();
        let layout = RollupShape { heights: heights.to_vec(), tops, packed: true };
        Ok(SqlSets {
            conn,
            n: heights.len(),
            extras,
            stored: HashMap::new(),
            unread: HashMap::new(),
            tables: HashSet::new(),
            next_id: 1,
            next_table: 0,
            base_rows: base_rows.max(1),
            divisors,
            sets_from: BATCH_ROWS / 8,
            leaf_sums_from: 0,
            refute_from: super::memory::REFUTE_FROM,
            layout,
            models: Arc::new(ClassModels::default()),
            sorted: None,
            pool: None,
        })
    }

    /// This evaluator with a sorted base, which rolls up and samples the
    /// nodes from the base (`kanon_f0` is then a view over the source's coded
    /// rows, for any other reader), and the pool shrunk beside it.
    pub(super) fn with_sorted(mut self, base: SortedBase, pool: Pool<'c>) -> Self {
        self.sorted = Some(base);
        self.pool = Some(pool);
        self
    }

    /// The sorted base, if this evaluator holds one.
    pub(crate) fn sorted(&self) -> Option<&SortedBase> {
        self.sorted.as_ref()
    }

    /// Which of `nodes` a sample of their classes, rolled up from the base
    /// frequency set, proves to have more than `budget` records in classes
    /// under `k`, as [`super::memory::MemorySets::refuted`] does. One query
    /// per node, over the classes whose key hashes into the first
    /// [`SQL_SAMPLE_PARTS`] of [`SAMPLE_PARTS`]: a scan of the base, the
    /// sampled rows grouped. No stages as in memory: here the scan, not the
    /// grouping, is most of a sample's cost. Nodes over a kept set are not
    /// tried.
    pub(crate) fn refuted(&self, nodes: &[Node], k: u64, budget: u64) -> Result<Vec<bool>> {
        if self.base_rows < self.refute_from {
            return Ok(vec![false; nodes.len()]);
        }
        let mut out = Vec::with_capacity(nodes.len());
        for node in nodes {
            // A node over a kept set rolls up from it for less than a scan of the base.
            if self.stored.keys().any(|held| node.generalizes(held)) {
                out.push(false);
                continue;
            }
            if let Some(base) = &self.sorted {
                out.push(base.refutes(&self.levels_of(node), k, budget));
                continue;
            }
            let key = list(node.attrs.iter().zip(&node.levels), ", ", |(&a, &l)| {
                format!("g{a} // {}", self.divisors[a][l as usize])
            });
            let q = render(sql::REFUTE, &[("key", &key), ("parts", &SAMPLE_PARTS.to_string())]);
            let params = duckdb::params![0i64, SQL_SAMPLE_PARTS as i64, k as i64];
            let suppressed: i64 = self.conn.query_row(&q, params, |r| r.get(0))?;
            out.push(suppressed as u64 > budget);
        }
        Ok(out)
    }

    /// The histograms of `missing` (none cached, sorted, distinct), rolled up
    /// from the base frequency set in batches.
    pub(crate) fn histograms(&mut self, missing: &[Node], cache: &HashMap<Node, Histogram>) -> Result<Computed> {
        let (kept, missing): (Vec<Node>, Vec<Node>) =
            missing.iter().cloned().partition(|n| self.unread.contains_key(n));
        let mut out = self.read_kept(&kept)?;
        let per_batch = if self.sets() { SETS } else { (BATCH_ROWS / self.base_rows).max(1) as usize };
        for chunk in missing.chunks(per_batch) {
            let items: Vec<(Node, Option<Node>)> = chunk.iter().map(|n| (n.clone(), None)).collect();
            out.extend(self.compute(&items, false, cache, &|_| true)?);
        }
        Ok(out)
    }

    /// The histograms of kept sets not read yet, off their tables.
    fn read_kept(&mut self, nodes: &[Node]) -> Result<Computed> {
        let mut by_table: HashMap<String, HashMap<i64, Node>> = HashMap::new();
        for node in nodes {
            let (table, id) = self.stored[node].clone();
            by_table.entry(table).or_default().insert(id, node.clone());
        }
        let mut tables: Vec<&String> = by_table.keys().collect();
        tables.sort();
        let mut out = Vec::new();
        for table in tables {
            let ids = &by_table[table];
            // The histogram query reads the nodes' levels off kanon_kids, which the last rollup wrote.
            let kids: Vec<Kid> = ids
                .iter()
                .map(|(&child, node)| {
                    let mut levels = vec![None; self.n];
                    for (&a, &l) in node.attrs.iter().zip(&node.levels) {
                        levels[a] = Some(l);
                    }
                    Kid { child, parent: 0, divide: vec![None; self.n], levels }
                })
                .collect();
            write_kids(self.conn, &kids, self.n)?;
            let mut hists = self.read_histograms(table, ids)?;
            for (id, node) in ids {
                self.unread.remove(node);
                out.push((node.clone(), hists.remove(id).unwrap_or_default()));
            }
        }
        Ok(out)
    }

    /// Rows of a parent's kept set (the base's when unknown).
    fn classes_of(&self, parent: &Node, cache: &HashMap<Node, Histogram>) -> u64 {
        (cache.get(parent).map(|h| h.classes()).or_else(|| self.unread.get(parent).copied())).unwrap_or(self.base_rows)
    }

    /// Kept sets whose histograms were not read, with their classes.
    pub(crate) fn unread(&self) -> &HashMap<Node, u64> {
        &self.unread
    }

    /// Evaluate `items` (node, the node below it whose kept frequency set it
    /// rolls up from, or None for the base frequency set) and keep their
    /// frequency sets for the nodes above them. The histograms of the nodes
    /// `wanted` rejects are not read (a hub's costs a pass over its classes).
    pub(crate) fn materialize(
        &mut self,
        items: &[(Node, Option<Node>)],
        cache: &HashMap<Node, Histogram>,
        wanted: &dyn Fn(&Node) -> bool,
    ) -> Result<Computed> {
        // A node whose set is kept already (a hub that is also a node of the
        // search) is done, its histogram read now if it was not: a kept set's
        // histogram is either cached or unread.
        let unread: Vec<Node> = (items.iter())
            .filter(|(node, _)| self.unread.contains_key(node) && wanted(node))
            .map(|(node, _)| node.clone())
            .collect();
        let mut out = self.read_kept(&unread)?;
        // Group by source table so each rollup query reads one table.
        let mut by_source: HashMap<String, Vec<(Node, Option<Node>)>> = HashMap::new();
        for (node, parent) in items.iter().filter(|(node, _)| !self.stored.contains_key(node)) {
            let parent = parent.as_ref().filter(|p| self.stored.contains_key(*p)).cloned();
            let source = match &parent {
                Some(p) => self.stored[p].0.clone(),
                None => "kanon_f0_node".to_string(),
            };
            by_source.entry(source).or_default().push((node.clone(), parent));
        }
        let mut sources: Vec<String> = by_source.keys().cloned().collect();
        sources.sort();
        for source in sources {
            let group = &by_source[&source];
            let mut start = 0;
            while start < group.len() {
                // Cut the batch where the parents' frequency sets add up to BATCH_ROWS.
                let mut rows = 0u64;
                let mut end = start;
                let from_base_in_sets = source == "kanon_f0_node" && self.sets();
                while end < group.len()
                    && (end == start || rows < BATCH_ROWS || (from_base_in_sets && end - start < SETS))
                {
                    rows += match &group[end].1 {
                        Some(p) => self.classes_of(p, cache),
                        None => self.base_rows,
                    };
                    end += 1;
                }
                out.extend(self.compute(&group[start..end], true, cache, wanted)?);
                start = end;
            }
        }
        Ok(out)
    }

    /// Per QI, the node's level (None for a QI it leaves out).
    fn levels_of(&self, node: &Node) -> Vec<Option<u8>> {
        let mut levels = vec![None; self.n];
        for (&a, &l) in node.attrs.iter().zip(&node.levels) {
            levels[a] = Some(l);
        }
        levels
    }

    /// Roll up from the base frequency set with GROUPING SETS (one pass per batch)?
    fn sets(&self) -> bool {
        self.base_rows >= self.sets_from
    }

    /// The table and id in it of `node`'s kept frequency set.
    pub(crate) fn kept(&self, node: &Node) -> Option<(String, i64)> {
        self.stored.get(node).cloned()
    }

    /// Drop the kept frequency sets of nodes `keep` rejects.
    pub(crate) fn retain(&mut self, keep: impl Fn(&Node) -> bool) -> Result<()> {
        self.stored.retain(|n, _| keep(n));
        self.unread.retain(|n, _| keep(n));
        let live: HashSet<&String> = self.stored.values().map(|(t, _)| t).collect();
        let mut dead: Vec<String> = self.tables.iter().filter(|t| !live.contains(t)).cloned().collect();
        dead.sort();
        for t in dead {
            self.conn.execute_batch(&render(super::statement("drop_set"), &[("table", &t)]))?;
            self.tables.remove(&t);
        }
        Ok(())
    }

    /// Roll up one batch into a new table, read the histograms `wanted`
    /// accepts (the others' classes only), keep or drop it.
    fn compute(
        &mut self,
        items: &[(Node, Option<Node>)],
        keep: bool,
        cache: &HashMap<Node, Histogram>,
        wanted: &dyn Fn(&Node) -> bool,
    ) -> Result<Computed> {
        let n = self.n;
        let source = match items[0].1.as_ref().and_then(|p| self.stored.get(p)) {
            Some((t, _)) => t.clone(),
            None => "kanon_f0_node".to_string(),
        };
        let mut ids: HashMap<i64, Node> = HashMap::new();
        let mut kids = Vec::with_capacity(items.len());
        for (node, parent) in items {
            let child = self.next_id;
            self.next_id += 1;
            let stored = parent.as_ref().and_then(|p| self.stored.get(p).map(|(_, id)| (p, *id)));
            let mut levels = vec![None; n];
            let mut divide = vec![None; n];
            for (&a, &l) in node.attrs.iter().zip(&node.levels) {
                // The parent's level of QI a (the base frequency set has every QI at level 0).
                let from = match stored {
                    Some((p, _)) => p.attrs.iter().position(|&b| b == a).map(|j| p.levels[j]),
                    None => Some(0),
                };
                let from = from.filter(|&f| f <= l).expect("a rollup parent is a specialization of its child");
                levels[a] = Some(l);
                divide[a] = Some(self.divisors[a][l as usize] / self.divisors[a][from as usize]);
            }
            kids.push(Kid { child, parent: stored.map_or(0, |(_, id)| id), divide, levels });
            ids.insert(child, node.clone());
        }
        let target = format!("kanon_fs_{}", self.next_table);
        self.next_table += 1;
        if source == "kanon_f0_node" {
            crate::trim_heap(&target);
        }
        let t0 = std::time::Instant::now();
        // From the base, even one node is a plain GROUP BY this way, without the join with kanon_kids.
        let sorted =
            self.sorted.as_ref().filter(|b| source == "kanon_f0_node" && kids.iter().all(|k| b.counts(&k.levels)));
        // Without extra columns, the sorted base's count gives the histograms too.
        let mut counted = None;
        if let Some(base) = sorted {
            write_kids(self.conn, &kids, n)?;
            let sums = base.rollup_into(self.conn, &target, &kids, self.leaf_sums_from)?;
            if !self.extras.any() && self.models.is_empty() {
                counted = Some(kids.iter().map(|k| k.child).zip(sums).collect::<HashMap<i64, SizeSums>>());
            }
        }
        let in_sets = sorted.is_some()
            || source == "kanon_f0_node"
                && self.sets()
                && rollup_sets(self.conn, &target, &kids, &self.layout, self.extras)?;
        if !in_sets {
            rollup(self.conn, &target, &source, &kids, n, self.extras)?;
        }
        let t1 = t0.elapsed().as_secs_f64();
        self.tables.insert(target.clone());
        let (read, unread): (HashMap<i64, Node>, HashMap<i64, Node>) =
            ids.into_iter().partition(|(_, node)| !keep || wanted(node));
        let (mut hists, classes) = match counted {
            Some(mut sums) => {
                let hists = read.iter().map(|(id, node)| (*id, histogram_of(node, &sums[id]))).collect();
                let classes = unread
                    .keys()
                    .map(|id| (*id, sums.remove(id).map_or(0, |s| s.values().map(|v| v.0).sum())))
                    .collect();
                (hists, classes)
            }
            None => (self.read_histograms(&target, &read)?, self.class_counts(&target, &unread)?),
        };
        crate::trace(|| {
            let rows: u64 = hists.values().map(|h| h.classes()).sum::<u64>() + classes.values().sum::<u64>();
            let input: u64 =
                items.iter().map(|(_, p)| p.as_ref().map_or(self.base_rows, |p| self.classes_of(p, cache))).sum();
            let first: Vec<String> = items.iter().take(2).map(|(n, _)| format!("{:?}", n.levels)).collect();
            format!(
                "{source} -> {target}: {} nodes ({}{}), in {input} out {rows} rows, rollup {t1:.3}s hist {:.3}s",
                items.len(),
                first.join(" "),
                if items.len() > 2 { " …" } else { "" },
                t0.elapsed().as_secs_f64() - t1
            )
        });
        let mut out = Vec::with_capacity(read.len());
        for (id, node) in &read {
            out.push((node.clone(), hists.remove(id).unwrap_or_default()));
            if keep {
                self.stored.insert(node.clone(), (target.clone(), *id));
            }
        }
        for (id, node) in &unread {
            self.stored.insert(node.clone(), (target.clone(), *id));
            self.unread.insert(node.clone(), classes.get(id).copied().unwrap_or(0));
        }
        if !keep {
            self.conn.execute_batch(&render(super::statement("drop_set"), &[("table", &target)]))?;
            self.tables.remove(&target);
        }
        Ok(out)
    }

    /// Classes per node id of `ids` in `table`.
    fn class_counts(&self, table: &str, ids: &HashMap<i64, Node>) -> Result<HashMap<i64, u64>> {
        if ids.is_empty() {
            return Ok(HashMap::new());
        }
        let group_by = match self.extras.any() {
            true => format!("GROUP BY node, {}", list(0..self.n, ", ", |a| format!("g{a}"))),
            false => String::new(),
        };
        let q = render(
            sql::fragment(sql::KEPT_SETS, "classes"),
            &[("table", table), ("ids", &id_list(ids)), ("group_by", &group_by)],
        );
        let mut stmt = self.conn.prepare(&q)?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)? as u64)))?;
        Ok(rows.collect::<duckdb::Result<_>>()?)
    }

    /// The histograms of the nodes `ids` in `table` (which may hold others too).
    fn read_histograms(&self, table: &str, ids: &HashMap<i64, Node>) -> Result<HashMap<i64, Histogram>> {
        if ids.is_empty() {
            return Ok(HashMap::new());
        }
        let n = self.n;
        let rows = render(sql::fragment(sql::KEPT_SETS, "nodes"), &[("table", table), ("ids", &id_list(ids))]);
        let table = rows.as_str();
        let groups = list(0..n, ", ", |a| format!("p.g{a}"));
        let plain = list(0..n, ", ", |a| format!("g{a}"));
        // A per-class aggregate over (class, value) counts: its CTE, its join to the classes.
        let pairs = |on: bool, name: &str, column: &str, aggregate: &str| -> (String, String) {
            if !on {
                return (String::new(), String::new());
            }
            let cte = render(
                sql::CLASS_PAIRS,
                &[
                    ("name", name),
                    ("plain", &plain),
                    ("aggregate", aggregate),
                    ("groups", &groups),
                    ("column", column),
                    ("source", table),
                ],
            );
            let join = format!(
                "JOIN {name} ON {name}.node = c.node AND {}",
                list(0..n, " AND ", |a| format!("{name}.g{a} IS NOT DISTINCT FROM c.g{a}"))
            );
            (cte, join)
        };
        let (label_cte, label_join) = pairs(self.extras.label, "majority", "y", "max(n)");
        let minority = if self.extras.label { "sum(c.size - majority.majority)" } else { "0" };
        let (squares_cte, squares_join) = pairs(self.extras.spread, "squares", "s", "sum(n * n)");
        let squares = if self.extras.spread { "sum(squares.squares)" } else { "0" };
        // Per-class models: each class's (value, records) list of the ℓ and t columns.
        let judged = !self.models.is_empty();
        let list_of = "list([{{column}}::BIGINT, n::BIGINT] ORDER BY {{column}})";
        let (mut lists_cte, mut lists_join, mut lists) = (String::new(), String::new(), String::new());
        for (on, name, column) in [(judged, "s_list", "s"), (judged && self.models.separate, "t_list", "t")] {
            let (cte, join) = pairs(on, name, column, &render(list_of, &[("column", column)]));
            if on {
                lists_cte.push_str(&cte);
                lists_join.push_str(&format!(" {join}"));
                lists.push_str(&format!(", {name}.{name}"));
            }
        }
        let group = if judged {
            format!("GROUP BY c.node, c.size, c.ldiv{lists}")
        } else {
            "GROUP BY c.node, c.size, c.ldiv\nORDER BY c.node, c.size, c.ldiv".to_string()
        };
        let per_class = !self.extras.any();
        let q = render(
            sql::CLASS_HISTOGRAM,
            &[
                ("groups", &groups),
                ("ldiv", if self.extras.sensitive { "count(DISTINCT p.s)" } else { "0" }),
                ("size", if per_class { "p.cnt" } else { "sum(p.cnt)" }),
                ("group_by", if per_class { "" } else { "GROUP BY ALL" }),
                ("glm", &list(0..n, "", |a| format!(", (c.size * (coalesce(n{a}.leaves, 1) - 1))::BIGINT AS glm{a}"))),
                ("zeros", &list(0..n, "", |a| format!(", 0::BIGINT AS glm{a}"))),
                ("min_size", &self.leaf_sums_from.to_string()),
                ("source", table),
                (
                    "leaf_joins",
                    &list(0..n, " ", |a| {
                        format!("LEFT JOIN {} n{a} ON n{a}.level = k.l{a} AND n{a}.code = c.g{a}", node_table(a))
                    }),
                ),
                ("label_cte", &label_cte),
                ("glm_totals", &list(0..n, "", |a| format!(", sum(c.glm{a})::BIGINT"))),
                ("minority", minority),
                ("label_join", &label_join),
                ("squares_cte", &squares_cte),
                ("squares_join", &squares_join),
                ("squares", squares),
                ("lists_cte", &lists_cte),
                ("lists_join", &lists_join),
                ("lists", &lists),
                ("group", &group),
            ],
        );
        let mut stmt = self.conn.prepare(&q)?;
        let mut out: HashMap<i64, Histogram> = HashMap::new();
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let id: i64 = r.get(0)?;
            let node = &ids[&id];
            let leaf_sums = node
                .attrs
                .iter()
                .map(|&a| r.get::<_, i64>(4 + a).map(|v| v as u64))
                .collect::<duckdb::Result<Vec<_>>>()?;
            let admitted = if judged {
                let s = value_list(r.get(6 + n)?);
                let t = if self.models.separate { value_list(r.get(7 + n)?) } else { Vec::new() };
                self.models.admits(&s, &t)
            } else {
                true
            };
            out.entry(id).or_default().buckets.push(Bucket {
                size: r.get::<_, i64>(1)? as u64,
                ldiv: r.get::<_, i64>(2)? as u64,
                admitted,
                classes: r.get::<_, i64>(3)? as u64,
                leaf_sums,
                minority: r.get::<_, i64>(4 + n)? as u64,
                squares: r.get::<_, i64>(5 + n)? as u64,
                rows: None,
                shape: None,
            });
        }
        if judged {
            for h in out.values_mut() {
                h.merge_buckets();
            }
        }
        Ok(out)
    }
}

/// The evaluator's tables go with it: at scale they hold gigabytes of
/// DuckDB's memory pool, which the release's write wants.
impl Drop for SqlSets<'_> {
    fn drop(&mut self) {
        // Nothing to do about a failure here; the connection's end drops them anyway.
        let _ = self.retain(|_| false);
        // The sorted base's memory back to the system before DuckDB's pool grows again.
        if self.sorted.take().is_some() {
            crate::trim_heap("the pool is given back");
        }
        self.pool = None;
    }
}

/// A node's histogram from its classes by size ([`SizeSums`], leaf sums per QI
/// of the base, picked out in the node's order).
fn histogram_of(node: &Node, sums: &SizeSums) -> Histogram {
    let buckets = sums
        .iter()
        .map(|(&size, (classes, leaf_sums))| Bucket {
            size,
            ldiv: 0,
            admitted: true,
            classes: *classes,
            leaf_sums: node.attrs.iter().map(|&a| leaf_sums[a]).collect(),
            minority: 0,
            squares: 0,
            rows: None,
            shape: None,
        })
        .collect();
    Histogram { buckets }
}

/// Node ids, sorted, for an IN list (integers the evaluator numbers, no values).
fn id_list(ids: &HashMap<i64, Node>) -> String {
    let mut v: Vec<i64> = ids.keys().copied().collect();
    v.sort();
    list(v, ", ", |id| id.to_string())
}

/// A class's `[[value, records], …]` list as (code, records) pairs.
pub(crate) fn value_list(v: Value) -> Vec<(u32, u64)> {
    let int = |v: &Value| match v {
        Value::BigInt(x) => *x,
        _ => 0,
    };
    match v {
        Value::List(items) => items
            .iter()
            .map(|pair| match pair {
                Value::List(xy) if xy.len() == 2 => (int(&xy[0]) as u32, int(&xy[1]) as u64),
                _ => (0, 0),
            })
            .collect(),
        _ => Vec::new(),
    }
}
