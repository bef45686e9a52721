//! The one place a search asks about a node: its class-size histogram, from
//! which k, ℓ, suppression and loss follow (see [`crate::measure::metrics`]).
//!
//! Two backends hold the frequency sets, and a search never knows which:
//! [`memory`] (the base frequency set fetched once into Rust, nodes rolled up
//! there) when the base has at most `[engine] memory_rows` rows (by default
//! what fits in DuckDB's memory limit: [`default_memory_rows`]), and [`sql`]
//! (frequency sets as DuckDB tables, rolled up by queries) above. Both give
//! the same histograms (tests compare them node by node). Histograms are cached: a node is evaluated at most once per
//! evaluator.

pub(crate) mod candidates;
pub(crate) mod classes;
pub(crate) mod engine;
pub mod memory;
pub(crate) mod persons;
pub(crate) mod sorted;
pub(crate) mod sql;

use crate::data::frequency::{Base, BaseForm, Extras};
use crate::data::hierarchy::{code_table, marginal_table, node_table};
use crate::lattice::Node;
use crate::measure::metrics::{Dataset, Histogram, Requirement};
use crate::measure::privacy::ClassModels;
use crate::sql::render;
use anyhow::Result;
use duckdb::Connection;
use engine::EngineSets;
use memory::MemorySets;
pub use memory::NodeClasses;
use sql::SqlSets;
use std::collections::HashMap;
use std::sync::Arc;

/// A statement of the evaluator's (`sql/evaluator.sql`).
fn statement(name: &str) -> &'static str {
    crate::sql::fragment(crate::sql::EVALUATOR, name)
}

/// The largest base frequency set (rows) evaluated in memory when DuckDB's
/// memory limit cannot be read.
pub(crate) const MEMORY_ROWS: u64 = 10_000_000;

/// The largest base frequency set brought back from a remote engine for the
/// memory backend, by default (`[engine] memory_rows` sets another): at about
/// 80 bytes a row with its Arrow copy, within a few hundred MB.
pub(crate) const REMOTE_MEMORY_ROWS: u64 = 2_000_000;

/// Bytes the memory backend holds at most per base row, with `qis` QIs and
/// `threads` workers: the base set, a held set and a rollup's result as large
/// (4 bytes a QI and 8 for the count, each), and per worker a rollup's keys
/// and class ids (12). Measured peaks are lower (docs/evaluator.md).
pub(crate) fn bytes_per_row(qis: usize, threads: usize) -> u64 {
    3 * (4 * qis as u64 + 8) + 12 * threads as u64
}

/// The default `[engine] memory_rows`: as many base rows as the memory
/// backend holds within DuckDB's memory limit (the job's, or DuckDB's own
/// default, a share of the machine's memory). The two do not peak together:
/// the evaluator is dropped before the release writes, and while it runs the
/// base set it grouped itself is not in DuckDB.
pub(crate) fn default_memory_rows(conn: &Connection, qis: usize, threads: Option<usize>) -> Result<u64> {
    let limit: String = conn.query_row(statement("memory_limit"), [], |r| r.get(0))?;
    let threads = threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |p| p.get()));
    Ok(crate::engine::embedded::bytes(&limit).map_or(MEMORY_ROWS, |b| b / bytes_per_row(qis, threads.max(1))))
}

/// Run `read` with the engine free to return rows in any order (keeping
/// the order makes it collect them on one thread), the setting put back
/// whatever the read does: for readers that sort what they read.
fn unordered<T>(conn: &Connection, read: impl FnOnce() -> Result<T>) -> Result<T> {
    let set = |on: bool| render(statement("set_insertion_order"), &[("on", &on.to_string())]);
    let kept: bool = conn.query_row(statement("insertion_order"), [], |r| r.get(0))?;
    conn.execute_batch(&set(false))?;
    let outcome = read();
    conn.execute_batch(&set(kept))?;
    outcome
}

/// DuckDB's pool, shrunk while kanon holds a sorted base beside it (the job's
/// memory_limit bounds both), and given back when dropped: the release wants it.
pub(crate) struct Pool<'c> {
    conn: &'c Connection,
    before: String,
}

impl<'c> Pool<'c> {
    /// What kanon may hold beside DuckDB's pool under the job's budget (the
    /// pool is [`crate::engine::embedded::POOL_SHARE`] of it, the machine's memory at
    /// most): the budget less a quarter of the pool (the least it is shrunk
    /// to) and an eighth of the budget; None when DuckDB does not say its pool.
    fn room(conn: &Connection) -> Result<Option<u64>> {
        let now: String = conn.query_row(statement("memory_limit"), [], |r| r.get(0))?;
        Ok(crate::engine::embedded::bytes(&now).map(|pool| {
            // Without a memory_limit, DuckDB's pool is 80% of the machine: the machine bounds the budget.
            let budget = ((pool as f64 / crate::engine::embedded::POOL_SHARE) as u64)
                .min(crate::physical_memory().unwrap_or(u64::MAX));
            budget.saturating_sub(pool / 4).saturating_sub(budget / 8)
        }))
    }

    /// Shrink the pool by `bytes`, to a quarter of it at least.
    fn shrink(conn: &'c Connection, bytes: u64) -> Result<Pool<'c>> {
        let before: String = conn.query_row(statement("memory_limit"), [], |r| r.get(0))?;
        if let Some(pool) = crate::engine::embedded::bytes(&before) {
            let smaller = pool.saturating_sub(bytes).max(pool / 4);
            conn.execute_batch(&render(statement("shrink_pool"), &[("bytes", &smaller.to_string())]))?;
        }
        Ok(Pool { conn, before })
    }
}

impl Drop for Pool<'_> {
    fn drop(&mut self) {
        // A size DuckDB printed itself; nothing else to do if it fails.
        let _ = self
            .conn
            .execute_batch(&render(statement("restore_pool"), &[("limit", &crate::sql::literal(&self.before))]));
    }
}

/// QI `a`'s [`LevelStats`], level by level, from its hierarchy's tables
/// and marginal (what the evaluator reads when its sets are not in memory,
/// and what the approver's page reads for each QI's share of the loss).
pub(crate) fn level_stats_of(conn: &Connection, a: usize) -> Result<Vec<LevelStats>> {
    let q = crate::sql::render(
        crate::sql::SEARCH_BOUNDS,
        &[
            ("a", &a.to_string()),
            ("nodes", &node_table(a)),
            ("marginal", &marginal_table(a)),
            ("codes", &code_table(a)),
        ],
    );
    let mut stmt = conn.prepare(&q)?;
    let rows = stmt.query_map([], |r| {
        Ok(LevelStats {
            leaf_cost: r.get::<_, f64>(1)?,
            distinct: r.get::<_, i64>(2)? as u64,
            fanout: r.get::<_, i64>(3)? as u64,
        })
    })?;
    Ok(rows.collect::<duckdb::Result<_>>()?)
}

/// Which backend holds the frequency sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// Memory when the base frequency set has at most this many rows, else SQL.
    Auto(u64),
    Memory,
    Sql,
}

/// What the data says of one level of one QI, before any node is evaluated.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct LevelStats {
    /// Σ over records of (leaves under the record's value at this level − 1).
    pub(crate) leaf_cost: f64,
    /// Distinct values at this level.
    pub(crate) distinct: u64,
    /// The most values of the level below under one value of this level (1 at level 0).
    pub(crate) fanout: u64,
}

/// What a sample of a node's classes tells of it ([`Evaluator::sampled`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sampled {
    /// Nothing: no sample was tried (too few records, or of values to key it).
    Untried,
    /// The sample alone suppresses more than the budget: the node and every
    /// specialization are infeasible.
    Refuted,
    /// Not refuted; the suppressed persons its sample scales up to (an estimate).
    Estimate(u64),
}

enum Sets<'c> {
    Memory(Box<MemorySets>),
    Sql(SqlSets<'c>),
    /// On the remote engine that holds the base set (engine.rs).
    Engine(Box<EngineSets<'c>>),
    /// Classes of persons (`[privacy] person`, persons.rs).
    Persons(Box<persons::PersonSets<'c>>),
}

pub struct Evaluator<'c> {
    conn: &'c Connection,
    pub(crate) data: Dataset,
    extras: Extras,
    evaluations: u64,
    refutations: u64,
    class_models: bool,
    cache: HashMap<Node, Histogram>,
    /// Nodes whose frequency sets were rolled up but whose histograms were
    /// not read (the SQL backend's hubs), with their classes: counted as
    /// evaluated, and remembered after the set is dropped, as a histogram is.
    unread: HashMap<Node, u64>,
    sets: Sets<'c>,
}

impl<'c> Evaluator<'c> {
    pub(crate) fn new(
        conn: &'c Connection,
        base: &Base,
        data: Dataset,
        extras: Extras,
        backend: Backend,
        threads: Option<usize>,
        remote: Option<&'c dyn crate::engine::remote::RemoteEngine>,
    ) -> Result<Evaluator<'c>> {
        if let (BaseForm::OnEngine { rows }, Some(remote)) = (base.form(), remote) {
            // Forced to the engine's side, every set stays there.
            let here_rows = match backend {
                Backend::Auto(limit) => limit,
                Backend::Memory | Backend::Sql => 0,
            };
            let sets = EngineSets::new(remote, conn, &data.heights, rows, here_rows, extras)?;
            return Ok(Evaluator::with_sets(conn, data, extras, Sets::Engine(Box::new(sets))));
        }
        let base_rows = || crate::data::frequency::base_rows(conn);
        if data.persons.is_some() {
            let memory = match backend {
                // The pairs are at most the rows: no count needed (on a view it groups them all).
                Backend::Auto(limit) => data.rows <= limit || base_rows()? <= limit,
                Backend::Memory => true,
                Backend::Sql => false,
            };
            let sets = persons::PersonSets::new(conn, base, &data.heights, memory, threads)?;
            return Ok(Evaluator::with_sets(conn, data, extras, Sets::Persons(Box::new(sets))));
        }
        // Coded rows above the memory backend's rows: the load chose a sorted base (sorted.rs).
        let sorted = match (backend, base.form()) {
            (Backend::Auto(limit), BaseForm::Sorted { divisors }) if data.rows > limit => {
                sorted::layout_of(&divisors, &data.heights).map(|layout| (layout, divisors, limit))
            }
            _ => None,
        };
        let workers = threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |p| p.get())).max(1);
        // The base and its threads' buffers must fit beside DuckDB's pool
        // (shrunk for them, to a quarter at least) within the job's budget,
        // an eighth of which is kept for what else both allocate; otherwise
        // DuckDB's own path (a grouped table it spills) runs.
        let sorted = sorted.map(|(layout, divisors, limit)| {
            let need = sorted::memory_needed(&layout, data.rows, workers);
            (layout, divisors, limit, need)
        });
        let sorted = sorted.filter(|&(_, _, _, need)| {
            let fits = Pool::room(conn).is_ok_and(|room| room.is_none_or(|r| need <= r));
            crate::trace(|| format!("sorted base: needs {} MiB, fits: {fits}", need >> 20));
            fits
        });
        if let Some((layout, divisors, limit, need)) = sorted {
            let pool = Pool::shrink(conn, need)?;
            let sorted_base = sorted::SortedBase::load(conn, layout, divisors, &data.heights, data.rows, workers)?;
            crate::trace(|| {
                format!(
                    "sorted base: {} rows, {} classes, {} MiB",
                    sorted_base.rows(),
                    sorted_base.classes(),
                    sorted_base.bytes() >> 20
                )
            });
            if sorted_base.classes() > limit {
                let sets =
                    SqlSets::new(conn, &data.heights, sorted_base.classes(), extras)?.with_sorted(sorted_base, pool);
                return Ok(Evaluator::with_sets(conn, data, extras, Sets::Sql(sets)));
            }
            // Few classes after all: the memory backend groups them from a table.
            sorted_base.write_base(conn)?;
            base.take_classes(conn)?;
            drop(pool);
        }
        let memory = match backend {
            // The source's rows bound the base set's: no count needed when they are few.
            Backend::Auto(limit) => data.rows <= limit || base_rows()? <= limit,
            Backend::Memory => true,
            Backend::Sql => false,
        };
        let sets = if memory {
            Sets::Memory(Box::new(MemorySets::new(conn, &base.form(), &data.heights, extras, threads)?))
        } else {
            base.as_table(conn)?;
            Sets::Sql(SqlSets::new(conn, &data.heights, base_rows()?, extras)?)
        };
        Ok(Evaluator::with_sets(conn, data, extras, sets))
    }

    fn with_sets(conn: &'c Connection, data: Dataset, extras: Extras, sets: Sets<'c>) -> Evaluator<'c> {
        Evaluator {
            conn,
            data,
            extras,
            evaluations: 0,
            refutations: 0,
            class_models: false,
            cache: HashMap::new(),
            unread: HashMap::new(),
            sets,
        }
    }

    /// Incognito's first candidate graph: every (QI, level) ([`candidates::first`]).
    pub(crate) fn first_candidates(&self, heights: &[u8]) -> Result<candidates::Graph> {
        candidates::first(self.conn, heights)
    }

    /// Iteration `i`'s candidate graph from iteration i−1's survivors.
    pub(crate) fn next_candidates(&self, i: usize) -> Result<candidates::Graph> {
        candidates::next(self.conn, i)
    }

    /// Record iteration `i`'s survivors: every candidate but `failed`.
    pub(crate) fn survive_candidates(&self, i: usize, failed: &[i32]) -> Result<()> {
        candidates::survive(self.conn, i, failed)
    }

    /// Distinct QI combinations of the source: the base set's classes.
    pub fn combinations(&self) -> Result<u64> {
        match &self.sets {
            Sets::Memory(m) if !self.extras.any() => Ok(m.base_rows()),
            Sets::Memory(m) => Ok(m.base_sizes().iter().map(|&(_, classes)| classes).sum()),
            Sets::Sql(s) if s.sorted().is_some() => Ok(s.sorted().map_or(0, |b| b.classes())),
            Sets::Engine(e) if !self.extras.any() => Ok(e.base_rows()),
            Sets::Engine(e) => Ok(e.source_sizes()?.iter().map(|&(_, classes)| classes).sum()),
            Sets::Persons(p) => p.combinations(),
            _ => crate::data::frequency::combinations(self.conn, self.data.heights.len(), self.extras),
        }
    }

    /// The source's class sizes (size, classes), when the base set is in memory.
    pub fn source_sizes(&mut self) -> Result<Option<Vec<(u64, u64)>>> {
        if let Sets::Persons(_) = &self.sets {
            // The bottom node's classes of persons.
            let bottom = Node::full(vec![0; self.data.heights.len()]);
            let sizes = self.histogram(&bottom)?.buckets.iter().map(|b| (b.size, b.classes)).collect();
            return Ok(Some(sizes));
        }
        Ok(match &self.sets {
            Sets::Memory(m) => Some(m.base_sizes()),
            Sets::Sql(s) => s.sorted().map(|b| b.sizes()),
            Sets::Engine(e) => Some(e.source_sizes()?),
            Sets::Persons(_) => None,
        })
    }

    /// Does the SQL backend hold the base set itself, sorted ([`sorted`])?
    pub fn holds_sorted_base(&self) -> bool {
        matches!(&self.sets, Sets::Sql(s) if s.sorted().is_some())
    }

    /// Which backend this evaluator uses: "memory", "sorted" (the SQL
    /// backend with the base held sorted in kanon), "sql" (DuckDB's SQL) or
    /// "engine" (the remote engine's SQL).
    pub fn backend(&self) -> &'static str {
        match &self.sets {
            Sets::Memory(_) => "memory",
            Sets::Sql(s) if s.sorted().is_some() => "sorted",
            Sets::Sql(_) => "sql",
            Sets::Engine(_) => "engine",
            Sets::Persons(p) if p.in_memory() => "memory",
            Sets::Persons(_) => "sql",
        }
    }

    /// Kept sets held here as well as on the engine (the engine backend
    /// brings back the small ones); 0 on every other backend.
    pub fn sets_brought_back(&self) -> usize {
        match &self.sets {
            Sets::Engine(e) => e.brought_back(),
            _ => 0,
        }
    }

    /// The person classes' sets, with `[privacy] person`.
    pub(crate) fn persons(&mut self) -> Option<&mut persons::PersonSets<'c>> {
        match &mut self.sets {
            Sets::Persons(p) => Some(p),
            _ => None,
        }
    }

    /// With `[privacy] person`: compute dm (its row squares cost a sort of
    /// every pair per node) or not. Histograms cached without it are dropped
    /// when it is turned on.
    pub(crate) fn person_dm(&mut self, on: bool) {
        if let Sets::Persons(p) = &mut self.sets {
            if on && !p.dm {
                self.cache.clear();
            }
            p.dm = on;
        }
    }

    /// The engine backend, when the base set stayed on the remote engine.
    pub(crate) fn on_engine(&mut self) -> Option<&mut EngineSets<'c>> {
        match &mut self.sets {
            Sets::Engine(e) => Some(e),
            _ => None,
        }
    }

    /// Per QI and level: the sum over records of (leaves under the record's
    /// value − 1), glm's share of that QI with nothing suppressed before
    /// dividing by (leaves − 1); and the distinct values at that level.
    /// Searches bound nodes with these.
    pub(crate) fn level_stats(&self) -> Result<Vec<Vec<LevelStats>>> {
        if let Sets::Memory(m) = &self.sets {
            return Ok(m
                .level_stats()
                .into_iter()
                .map(|levels| {
                    levels
                        .into_iter()
                        .map(|(leaf_cost, distinct, fanout)| LevelStats { leaf_cost, distinct, fanout })
                        .collect()
                })
                .collect());
        }
        (0..self.data.heights.len()).map(|a| level_stats_of(self.conn, a)).collect()
    }

    /// Are classes judged against a population table (k-map, δ-presence),
    /// whose values may split where the data's do not?
    pub(crate) fn judges_population(&self) -> bool {
        matches!(&self.sets, Sets::Memory(m) if m.population.is_some())
    }

    /// Nodes evaluated so far (cache hits do not count).
    pub fn evaluations(&self) -> u64 {
        self.evaluations
    }

    /// Full nodes evaluated or held so far, in lattice order.
    pub(crate) fn cached_full_nodes(&self) -> Vec<Vec<u8>> {
        let n = self.data.heights.len();
        let mut out: Vec<Vec<u8>> = (self.cache.keys().chain(self.unread.keys()))
            .filter(|node| node.attrs.len() == n)
            .map(|node| node.levels.clone())
            .collect();
        crate::lattice::sort(&mut out);
        out.dedup();
        out
    }

    /// Classes of a node already evaluated or held (its frequency set's rows).
    pub(crate) fn cached_classes(&self, node: &Node) -> Option<u64> {
        self.cache.get(node).map(|h| h.classes()).or_else(|| self.unread.get(node).copied())
    }

    /// The histogram of one node.
    pub fn histogram(&mut self, node: &Node) -> Result<Histogram> {
        Ok(self.histograms(std::slice::from_ref(node))?.remove(0))
    }

    /// The histogram of the node a release takes, its kept classes told
    /// apart by shape in memory (whatever [`Self::for_risk_limits`] asked
    /// of the search's): the classes risk limits take are then the least
    /// lossy of their size, and its glm exact.
    pub(crate) fn histogram_by_shape(&mut self, node: &Node) -> Result<Histogram> {
        match &mut self.sets {
            Sets::Memory(m) => Ok(m.shaped_histogram(node)),
            _ => self.histogram(node),
        }
    }

    /// The histogram of a node the release may read its classes from (a
    /// given or reused node): its frequency set is kept, so at scale the
    /// release reads that, not another pass over the base set.
    pub(crate) fn histogram_kept(&mut self, node: &Node) -> Result<Histogram> {
        Ok(self.materialize(&[(node.clone(), None)])?.remove(0))
    }

    /// The histograms of `nodes`, in order: the batch entry point (a search
    /// that evaluates a generation at once asks for all of it in one call).
    pub fn histograms(&mut self, nodes: &[Node]) -> Result<Vec<Histogram>> {
        let mut missing: Vec<Node> = nodes.iter().filter(|n| !self.cache.contains_key(n)).cloned().collect();
        missing.sort();
        missing.dedup();
        let computed = match &mut self.sets {
            Sets::Memory(m) => m.histograms(&missing),
            Sets::Sql(s) => s.histograms(&missing, &self.cache)?,
            Sets::Engine(e) => e.histograms(&missing)?,
            Sets::Persons(p) => p.histograms(&missing)?,
        };
        self.remember(computed);
        Ok(nodes.iter().map(|n| self.cache[n].clone()).collect())
    }

    /// Evaluate `items` (node, the node below it whose kept frequency set it
    /// should roll up from, or None) and keep their frequency sets for the
    /// nodes above them.
    pub fn materialize(&mut self, items: &[(Node, Option<Node>)]) -> Result<Vec<Histogram>> {
        self.hold(items, |_| true)?;
        Ok(items.iter().map(|(n, _)| self.cache[n].clone()).collect())
    }

    /// [`Self::materialize`], the histograms of only the nodes `wanted`
    /// accepts read (a hub's: by the SQL backend, when a search asks).
    pub(crate) fn hold(&mut self, items: &[(Node, Option<Node>)], wanted: impl Fn(&Node) -> bool) -> Result<()> {
        let computed = match &mut self.sets {
            Sets::Memory(m) => {
                // The memory backend picks the best source itself; cached nodes need no set.
                let mut todo: Vec<(Node, Option<Node>)> =
                    items.iter().filter(|(n, _)| !self.cache.contains_key(n)).cloned().collect();
                todo.sort();
                todo.dedup_by(|a, b| a.0 == b.0);
                m.evaluate(&todo)
            }
            Sets::Sql(s) => {
                let computed = s.materialize(items, &self.cache, &wanted)?;
                // A set rolled up counts as evaluated, read or not, as in memory.
                for (node, &classes) in s.unread() {
                    if !self.cache.contains_key(node) && self.unread.insert(node.clone(), classes).is_none() {
                        self.evaluations += 1;
                    }
                }
                computed
            }
            Sets::Engine(e) => e.materialize(items, &self.cache)?,
            Sets::Persons(p) => {
                // Each node is a pass over the pairs: nothing to roll up from, so a
                // hub not asked for is not evaluated (a search still holds it).
                let mut todo: Vec<Node> = (items.iter().map(|(n, _)| n.clone()))
                    .filter(|n| !self.cache.contains_key(n) && wanted(n))
                    .collect();
                todo.sort();
                todo.dedup();
                p.histograms(&todo)?
            }
        };
        self.remember(computed);
        Ok(())
    }

    fn remember(&mut self, computed: Vec<(Node, Histogram)>) {
        for (node, h) in computed {
            let counted = self.unread.remove(&node).is_some();
            if self.cache.insert(node, h).is_none() && !counted {
                self.evaluations += 1;
            }
        }
    }

    /// Which of `nodes` a sample of their classes proves to suppress more
    /// than `req`'s budget at `req`'s k, whatever the models: infeasible, as
    /// is every specialization, with no histogram to read
    /// ([`MemorySets::refuted`], [`SqlSets::refuted`]). A node proved so
    /// counts as evaluated. For nodes that would be costly to evaluate
    /// whole: one that is not proved costs its keys over again (in memory),
    /// or scans of the base (SQL).
    pub fn refuted(&mut self, nodes: &[Node], req: &Requirement) -> Result<Vec<bool>> {
        Ok(self.sampled(nodes, req)?.into_iter().map(|s| s == Sampled::Refuted).collect())
    }

    /// [`Self::refuted`], and over persons an estimate of what a node not
    /// refuted suppresses, scaled up from its sample.
    pub fn sampled(&mut self, nodes: &[Node], req: &Requirement) -> Result<Vec<Sampled>> {
        let proof = |refuted: Vec<bool>| -> Vec<Sampled> {
            refuted.into_iter().map(|r| if r { Sampled::Refuted } else { Sampled::Untried }).collect()
        };
        let out = match &mut self.sets {
            Sets::Memory(m) => proof(m.refuted(nodes, req.k, req.budget)),
            Sets::Sql(s) => proof(s.refuted(nodes, req.k, req.budget)?),
            Sets::Engine(e) => proof(e.refuted(nodes, req.k, req.budget)?),
            Sets::Persons(p) => p.sampled(nodes, req.k, req.budget),
        };
        let proved = out.iter().filter(|&&r| r == Sampled::Refuted).count() as u64;
        self.evaluations += proved;
        self.refutations += proved;
        Ok(out)
    }

    /// Nodes [`Self::refuted`] proved infeasible so far.
    pub fn refutations(&self) -> u64 {
        self.refutations
    }

    /// Of [`Self::refutations`], those a row sample (drawn from the values
    /// of a node's most spread QIs) proved (memory backend).
    pub fn row_refutations(&self) -> u64 {
        match &self.sets {
            Sets::Memory(m) => m.row_refutations.load(std::sync::atomic::Ordering::Relaxed),
            Sets::Sql(_) | Sets::Engine(_) | Sets::Persons(_) => 0,
        }
    }

    /// Try [`Self::refuted`] only on nodes rolled up from sets of at least
    /// `rows` rows (in memory), from a base set of as many (SQL), or over as
    /// many persons; default [`memory::REFUTE_FROM`]. Tests set 0 to exercise
    /// it on small tables.
    pub fn refute_from(mut self, rows: u64) -> Self {
        match &mut self.sets {
            Sets::Memory(m) => m.refute_from = rows,
            Sets::Sql(s) => s.refute_from = rows,
            Sets::Engine(e) => e.refute_from = rows,
            Sets::Persons(p) => p.refute_from = rows,
        }
        self
    }

    /// Memory backend: draw a node's row sample from its most spread QIs
    /// until they have at least `values` distinct values together at the
    /// node's levels (default [`memory::SAMPLE_SPREAD`]); persons: the same
    /// QIs' least values per person (else the persons' signatures); on Spark and PostgreSQL, a batch of
    /// full nodes shares one sample keyed on their join when its values
    /// spread as far (default 4,096).
    /// Tests set a low figure to exercise it on small tables, or `u64::MAX`
    /// to turn it off.
    pub fn sample_spread(mut self, values: u64) -> Self {
        match &mut self.sets {
            Sets::Memory(m) => m.sample_spread = values,
            Sets::Persons(p) => p.sample_values = values,
            Sets::Engine(e) => e.sample_spread = values,
            Sets::Sql(_) => {}
        }
        self
    }

    /// Compute glm's leaf sums only for classes of at least `k` records. For a
    /// search with a fixed k, whose smaller classes are suppressed: their sums
    /// never count. Histograms then judge requirements with this k or more only.
    pub fn leaf_sums_from(mut self, k: u64) -> Self {
        match &mut self.sets {
            Sets::Memory(m) => m.leaf_sums_from = k,
            Sets::Sql(s) => s.leaf_sums_from = k,
            Sets::Engine(e) => e.leaf_sums_from = k,
            Sets::Persons(p) => p.leaf_sums_from = k,
        }
        self
    }

    /// Judge risk limits (`on`): the memory backend does; the others refuse
    /// (exit 2). `shapes`: its histograms tell kept classes apart by their
    /// shape ([`crate::measure::metrics::Bucket::shape`]), as glm needs: the
    /// limits suppress classes of one size in the order of their loss, which
    /// only glm reads (dm, precision, height and cm of a prefix of one size
    /// do not depend on which classes it holds). A full node's classes carry
    /// their shapes either way, for the release's order.
    pub(crate) fn for_risk_limits(mut self, on: bool, shapes: bool) -> Result<Self> {
        if !on {
            return Ok(self);
        }
        match &mut self.sets {
            Sets::Memory(m) => {
                m.shapes = shapes;
                m.class_shapes = true;
                Ok(self)
            }
            _ => Err(crate::error::bad(format!(
                "risk limits are judged with the base frequency set in memory, and this run's is held by the {} evaluator: raise [engine] memory_rows above the source's distinct QI combinations",
                self.backend()
            ))),
        }
    }

    /// Judge full nodes' classes against the population (exact k-map,
    /// δ-presence): the memory backend does; the others refuse (exit 2).
    pub(crate) fn with_population(
        mut self,
        population: Option<Arc<crate::measure::limits::Population>>,
    ) -> Result<Self> {
        let Some(population) = population else { return Ok(self) };
        match &mut self.sets {
            Sets::Memory(m) => {
                m.population = Some(population);
                Ok(self)
            }
            _ => Err(crate::error::bad(format!(
                "exact k-map and delta_presence are judged with the base frequency set in memory, and this run's is held by the {} evaluator: raise [engine] memory_rows above the source's distinct QI combinations",
                self.backend()
            ))),
        }
    }

    /// SQL backend: use GROUPING SETS for batches from the base from `rows`
    /// base rows on (default 500,000); tests set 0 to exercise that path on
    /// small tables.
    pub fn grouping_sets_from(mut self, rows: u64) -> Self {
        if let Sets::Sql(s) = &mut self.sets {
            s.sets_from = rows;
        }
        self
    }

    /// SQL backend: group each node of a GROUPING SETS batch by one packed key
    /// (the default) or, with false, by a column per QI (what nodes whose codes
    /// overflow 63 bits do); tests compare the two.
    pub fn packed_keys(mut self, packed: bool) -> Self {
        if let Sets::Sql(s) = &mut self.sets {
            s.layout.packed = packed;
        }
        self
    }

    /// Judge classes by the job's per-class models beyond k and distinct ℓ
    /// (entropy and recursive ℓ, t-closeness): a histogram's `admitted`.
    pub(crate) fn with_models(mut self, models: Arc<ClassModels>) -> Self {
        self.class_models = !models.is_empty();
        match &mut self.sets {
            Sets::Memory(m) => m.models = models,
            Sets::Sql(s) => s.models = models,
            Sets::Engine(e) => e.models = models,
            // The plan refuses per-class models with persons.
            Sets::Persons(_) => {}
        }
        self
    }

    /// Are there per-class models beyond k and distinct ℓ ([`Self::with_models`])?
    pub(crate) fn class_models(&self) -> bool {
        self.class_models
    }

    /// Drop the kept frequency sets of nodes `keep` rejects.
    pub(crate) fn retain(&mut self, keep: impl Fn(&Node) -> bool) -> Result<()> {
        match &mut self.sets {
            Sets::Memory(m) => m.retain(keep),
            Sets::Sql(s) => s.retain(keep)?,
            Sets::Engine(e) => e.retain(keep)?,
            Sets::Persons(_) => {}
        }
        Ok(())
    }

    /// A full node's classes, when the sets are in memory (None on the SQL
    /// backend, whose callers read them off the base frequency set).
    pub(crate) fn classes(&mut self, node: &Node) -> Option<NodeClasses> {
        let Sets::Memory(m) = &mut self.sets else { return None };
        let (classes, histogram) = m.classes(node);
        self.remember(vec![(node.clone(), histogram)]);
        Some(classes)
    }

    /// The SQL backend's kept frequency set of a full node: its table and
    /// the node's id in it (None in memory, or when not kept).
    pub(crate) fn kept_set(&self, node: &Node) -> Option<(String, i64)> {
        let Sets::Sql(s) = &self.sets else { return None };
        s.kept(node)
    }

    /// Drop every kept frequency set.
    pub(crate) fn forget_all(&mut self) -> Result<()> {
        self.retain(|_| false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The room beside DuckDB's pool under a job's memory_limit, against what a sorted base
    /// needs: 10⁹ rows of seven QIs (52-bit keys) fit in 8 GB with two threads (the
    /// billion-row benchmark), not in 4 GB; 10⁸ rows fit in 2 GB, not in 800 MB (2²⁰
    /// buckets, each with its last chunk half full); narrow keys of 10⁶ rows fit in 200 MB with
    /// one counting thread, not two.
    #[test]
    fn the_sorted_base_is_weighed_against_the_budget() {
        let room = |limit: &str| {
            let engine = crate::job::Engine { memory_limit: Some(limit.into()), ..Default::default() };
            let conn = crate::engine::embedded::open_local(&engine).unwrap();
            Pool::room(&conn).unwrap().unwrap()
        };
        let wide = sorted::Layout::new(&[1 << 15, 1 << 12, 16, 8, 64, 32, 128]).unwrap();
        let need = |rows: u64, threads| sorted::memory_needed(&wide, rows, threads);
        assert!(need(1_000_000_000, 2) > 4_000_000_000);
        assert!(need(1_000_000_000, 2) <= room("8GB"), "{} > {}", need(1_000_000_000, 2), room("8GB"));
        assert!(need(1_000_000_000, 2) > room("4GB"));
        assert!(need(100_000_000, 2) <= room("2GB"), "{} > {}", need(100_000_000, 2), room("2GB"));
        assert!(need(100_000_000, 1) > room("800MB"));
        let narrow = sorted::Layout::new(&[1 << 10, 16, 8]).unwrap();
        let need = |rows: u64, threads| sorted::memory_needed(&narrow, rows, threads);
        assert!(need(1_000_000, 1) <= room("200MB"), "{} > {}", need(1_000_000, 1), room("200MB"));
        assert!(need(1_000_000, 2) > room("200MB"));
    }
}
