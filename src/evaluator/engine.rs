//! The engine backend: on a remote engine (Spark, PostgreSQL) whose base
//! frequency set is too large to bring back, the base set stays there as a
//! work table (`kanon_f0`), and so do the frequency sets the searches keep
//! for rollups. A batch of nodes' histograms is one query there, each node
//! rolled up from the smallest kept set below it (integer division of the
//! codes, no join), and only the histograms come back: a row per (class
//! size, distinct sensitive values), whatever the data's size. The chosen node's suppressed classes
//! stay there too, as a work table the release anti-joins.

use crate::data::frequency::Extras;
use crate::data::hierarchy::node_table;
use crate::engine::remote::{RemoteEngine, WorkUse};
use crate::lattice::Node;
use crate::measure::metrics::{ambiguity, Bucket, Dataset, Histogram, Requirement};
use crate::measure::privacy::{ClassFigures, ClassModels};
use crate::sql::{self, list, render};
use anyhow::{Context, Result};
use duckdb::types::Value;
use duckdb::Connection;
use std::collections::HashMap;
use std::sync::Arc;

/// The base frequency set's work table there.
const BASE: &str = crate::data::frequency::BASE_THERE;

/// The suppressed classes' work table there (columns c0… BIGINT).
pub(crate) const SUPPRESSED: &str = "kanon_suppressed";

/// The local table an aggregate brought back lands in.
const RESULT: &str = "kanon_engine_result";

fn statement(name: &str) -> &'static str {
    sql::fragment(sql::ENGINE_EVALUATOR, name)
}

/// The sample [`EngineSets::refuted`] groups: classes whose key hashes into
/// the first this many of 64 parts (a sixteenth).
const SAMPLE_PARTS: u64 = 4;

/// The fewest hierarchy values a shared refutation sample's key spreads
/// over by default ([`EngineSets::sample_join`]): 64 keys per part of 64.
const SAMPLE_SPREAD: u64 = 4096;

/// Nodes a query evaluates or keeps at most: one round trip for many (a
/// query costs Spark a second or so before it reads a row).
const BATCH: usize = 8;

/// The most suppressed classes [`EngineSets::suppressed_here`] hands the
/// release to send (their labels, some tens of bytes a class).
const SEND_CLASSES: u64 = 100_000;

/// A node whose smallest set below it is a kept set of at most this many
/// rows is not kept itself: rolling it up from that set again costs less
/// than writing its own (on Spark a write is a job of seconds, whatever
/// its size; a top-down dive kept a set per step).
const KEEP_OVER: u64 = 1_000_000;

/// A hash of a class's key (its codes, each under 2^31) in 31 bits: a sum
/// of each code times its own odd multiplier (under 2^24), modulo a prime,
/// 64 codes a step so that no step passes 2^63. One multiply-add a code per
/// row, where the sampled refutation reads every row of the base set.
fn class_hash(keys: &[String]) -> String {
    const PRIME: u64 = 2_147_483_647;
    keys.chunks(64).enumerate().fold("CAST(0 AS BIGINT)".to_string(), |h, (c, chunk)| {
        let terms = list(chunk.iter().enumerate(), " + ", |(j, k)| {
            let multiplier = 1_000_003 + 2 * 7_919 * (c * 64 + j) as u64 % (1 << 23);
            format!("CAST({k} AS BIGINT) * {multiplier}")
        });
        format!("mod({h} + {terms}, {PRIME})")
    })
}

/// A node's classes grouped: the grouping columns (`… AS pk`, or
/// `… AS k0, …`), and per code of the node its expression over them (`q.`)
/// and the grouped columns to name in an outer GROUP BY.
struct Grouping {
    keys: Vec<String>,
    out: Vec<String>,
    grouped: Vec<String>,
}

/// A node's frequency set kept: its table, its id in it, its rows, whether
/// its table is here ([`EngineSets::bring_back`]) and whether it is there
/// (a set fetched straight from its grouping is here only).
struct Kept {
    table: String,
    id: i64,
    rows: u64,
    here: bool,
    there: bool,
}

/// The frequency sets of one evaluator on a remote engine.
pub(crate) struct EngineSets<'c> {
    remote: &'c dyn RemoteEngine,
    /// The local DuckDB the aggregates land in.
    conn: &'c Connection,
    n: usize,
    extras: Extras,
    /// Per QI and level: leaf code / divisor = code at that level.
    divisors: Vec<Vec<i64>>,
    /// Per QI and level: the hierarchy's values there.
    level_values: Vec<Vec<u64>>,
    base_rows: u64,
    /// A kept table of at most this many rows is brought back, and the
    /// nodes above its sets are rolled up here ([`Self::bring_back`]).
    here_rows: u64,
    /// Are the leaves tables here too (for glm, as there)?
    leaves_here: std::cell::Cell<bool>,
    /// Kept frequency sets there, several nodes a table.
    kept: HashMap<Node, Kept>,
    /// Kept nodes per table: a table goes when its last node does.
    tables: HashMap<String, usize>,
    next_table: u64,
    next_id: i64,
    /// Leaf sums (glm) are computed for classes of at least this size only.
    pub(super) leaf_sums_from: u64,
    /// [`Self::refuted`] tries nothing on base sets of fewer rows.
    pub(super) refute_from: u64,
    /// The fewest hierarchy values a shared refutation sample's key spreads
    /// over ([`Self::sample_join`]).
    pub(super) sample_spread: u64,
    pub(super) models: Arc<ClassModels>,
    /// Did [`Self::judge_there`] send rejected value lists there?
    rejected: bool,
}

impl<'c> EngineSets<'c> {
    /// The evaluator over the base set the load left there (`base_rows`
    /// rows); each QI's leaves per (level, code) go there for glm. Kept
    /// tables of at most `here_rows` rows come back ([`Self::bring_back`]).
    pub(crate) fn new(
        remote: &'c dyn RemoteEngine,
        conn: &'c Connection,
        heights: &[u8],
        base_rows: u64,
        here_rows: u64,
        extras: Extras,
    ) -> Result<EngineSets<'c>> {
        let n = heights.len();
        let mut level_values = Vec::with_capacity(n);
        for (a, &h) in heights.iter().enumerate() {
            let leaves = render(statement("leaves"), &[("nodes", &node_table(a))]);
            remote.share(conn, &leaves, &[], &leaves_table(a))?;
            let q = render(statement("level_values"), &[("nodes", &node_table(a))]);
            let mut stmt = conn.prepare(&q)?;
            let counts: Vec<(i32, i64)> =
                stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<duckdb::Result<_>>()?;
            let at = |l: u8| counts.iter().find(|&&(level, _)| level == l as i32).map_or(1, |&(_, n)| n.max(1) as u64);
            level_values.push((0..=h).map(at).collect());
        }
        Ok(EngineSets {
            remote,
            conn,
            n,
            extras,
            divisors: crate::data::hierarchy::divisors(conn, n)?,
            level_values,
            base_rows,
            here_rows,
            leaves_here: std::cell::Cell::new(false),
            kept: HashMap::new(),
            tables: HashMap::new(),
            next_table: 0,
            next_id: 1,
            leaf_sums_from: 0,
            refute_from: super::memory::REFUTE_FROM,
            sample_spread: SAMPLE_SPREAD,
            models: Arc::new(ClassModels::default()),
            rejected: false,
        })
    }

    /// Kept sets with a copy here.
    pub(crate) fn brought_back(&self) -> usize {
        self.kept.values().filter(|k| k.here).count()
    }

    /// Rows of the base frequency set there.
    pub(crate) fn base_rows(&self) -> u64 {
        self.base_rows
    }

    /// Run `select` there; its rows, brought back, in a fixed order.
    fn rows(&self, select: &str) -> Result<Vec<Vec<Value>>> {
        self.remote.fetch(self.conn, select, RESULT)?;
        crate::engine::remote::read_rows(self.conn, &render(statement("read"), &[("table", RESULT)]))
    }

    /// Run `select` here, on the kept sets brought back; its rows, as [`Self::rows`].
    fn rows_here(&self, select: &str) -> Result<Vec<Vec<Value>>> {
        if !self.leaves_here.get() {
            for a in 0..self.n {
                let leaves = render(statement("leaves"), &[("nodes", &node_table(a))]);
                let table = sql::ident(&leaves_table(a));
                self.conn.execute_batch(&render(statement("here"), &[("table", &table), ("select", &leaves)]))?;
            }
            self.leaves_here.set(true);
        }
        self.conn.execute_batch(&render(statement("here"), &[("table", RESULT), ("select", select)]))?;
        crate::engine::remote::read_rows(self.conn, &render(statement("read"), &[("table", RESULT)]))
    }

    /// Is `node` rolled up here: from a kept set brought back, with no
    /// class model (whose value lists are spelled there)?
    fn rolled_up_here(&self, node: &Node) -> bool {
        self.models.is_empty()
            && matches!(self.source_where(node, |_| true), (_, Some(from), _) if self.kept.get(&from).is_some_and(|k| k.here))
    }

    /// The set a node rolls up from in a query here (`here`) or there: the
    /// kept set of fewest rows below it on that side, else the base; as a
    /// relation, the node below it, and its rows.
    fn source_of(&self, node: &Node, here: bool) -> (String, Option<Node>, u64) {
        self.source_where(node, |k| if here { k.here } else { k.there })
    }

    /// [`Self::source_of`] among the kept sets `side` admits.
    fn source_where(&self, node: &Node, side: impl Fn(&Kept) -> bool) -> (String, Option<Node>, u64) {
        self.kept
            .iter()
            .filter(|(held, k)| node.generalizes(held) && side(k))
            .min_by_key(|(held, k)| (k.rows, k.id, held.levels.clone()))
            .map(|(held, k)| {
                let rows = render(statement("kept_rows"), &[("table", &k.table), ("id", &k.id.to_string())]);
                (rows, Some(held.clone()), k.rows)
            })
            .unwrap_or_else(|| (BASE.to_string(), None, self.base_rows))
    }

    /// Per QI of `node`, its code at the node's level off `from`'s codes
    /// (the base's when None): an integer division, or the code itself.
    fn key_exprs(&self, node: &Node, from: Option<&Node>, here: bool) -> Vec<String> {
        let int_div = match here {
            true => sql::fragment(sql::DUCKDB, "int_div"),
            false => self.remote.spelling("int_div"),
        };
        node.attrs
            .iter()
            .zip(&node.levels)
            .map(|(&a, &l)| {
                let below = from.map_or(0, |p| p.attrs.iter().position(|&b| b == a).map_or(0, |i| p.levels[i]));
                let divide = self.divisors[a][l as usize] / self.divisors[a][below as usize];
                let code = format!("p.g{a}");
                match divide {
                    1 => code,
                    d => render(int_div, &[("a", &code), ("b", &d.to_string())]),
                }
            })
            .collect()
    }

    /// How `node`'s classes are grouped off `keys` (its codes, from
    /// [`Self::key_exprs`]): by one packed BIGINT `pk` where the codes'
    /// ranges allow ([`sql::packed_key`]), else by the codes k0… themselves.
    fn grouping(&self, node: &Node, keys: &[String], here: bool) -> Grouping {
        let int_div = match here {
            true => sql::fragment(sql::DUCKDB, "int_div"),
            false => self.remote.spelling("int_div"),
        };
        // A code at level l is under the top divisor over level l's (leaf codes are under the top's).
        let radices: Vec<u64> = node
            .attrs
            .iter()
            .zip(&node.levels)
            .map(|(&a, &l)| {
                let d = &self.divisors[a];
                let top = *d.last().unwrap_or(&1) as u64;
                top.div_ceil(d[l as usize].max(1) as u64)
            })
            .collect();
        match sql::packed_key(keys, &radices, "q.pk", int_div) {
            Some(p) => {
                Grouping { keys: vec![format!("{} AS pk", p.key)], out: p.unpacked, grouped: vec!["q.pk".into()] }
            }
            None => Grouping {
                keys: keys.iter().enumerate().map(|(i, k)| format!("{k} AS k{i}")).collect(),
                out: (0..keys.len()).map(|i| format!("q.k{i}")).collect(),
                grouped: (0..keys.len()).map(|i| format!("q.k{i}")).collect(),
            },
        }
    }

    /// The classes of `node` off its source: k… (per QI of the node), size, ldiv.
    fn classes_sql(&self, node: &Node, here: bool) -> String {
        let (source, from, _) = self.source_of(node, here);
        let keys = self.key_exprs(node, from.as_ref(), here);
        let bottom = from.is_none() && node.attrs.len() == self.n && node.levels.iter().all(|&l| l == 0);
        // The base set's rows are the bottom node's classes, and a node's own
        // kept set's rows its classes: no grouping (with extra codes a class
        // has a row per code).
        if (bottom || from.as_ref() == Some(node)) && !self.extras.any() {
            let keys = list(keys.iter().enumerate(), ", ", |(i, k)| format!("{k} AS k{i}"));
            return render(statement("base_classes"), &[("keys", &keys), ("source", &source)]);
        }
        let g = self.grouping(node, &keys, here);
        render(
            statement("classes"),
            &[
                ("keys", &list(g.out.iter().enumerate(), ", ", |(i, k)| format!("{k} AS k{i}"))),
                ("group_keys", &g.keys.join(", ")),
                ("source", &source),
                ("ldiv", if self.extras.sensitive { "count(DISTINCT p.s)" } else { "0" }),
                ("group_by", &list(1..=g.keys.len(), ", ", |i| i.to_string())),
            ],
        )
    }

    /// The classes of `node` as the batch histogram query sums them
    /// (`class_rows`), under the id `id`.
    fn class_rows(&self, node: &Node, id: i64, here: bool) -> String {
        let mut joins = String::new();
        if self.extras.label {
            joins.push_str(&self.pairs_join(node, "majority", "y", "max(n)", here));
        }
        if self.extras.spread {
            joins.push_str(&self.pairs_join(node, "squares", "s", "sum(n * n)", here));
        }
        let (lists, list_joins) = self.lists(node);
        joins.push_str(&list_joins);
        let mut glm = String::new();
        for a in 0..self.n {
            match node.attrs.iter().position(|&b| b == a) {
                Some(i) => {
                    joins.push_str(&format!(
                        " LEFT JOIN {} n{i} ON n{i}.level = {} AND n{i}.code = c.k{i}",
                        sql::ident(&leaves_table(a)),
                        node.levels[i]
                    ));
                    glm.push_str(&format!(
                        ", CAST(CASE WHEN c.size >= {} THEN c.size * (coalesce(n{i}.leaves, 1) - 1) ELSE 0 END AS BIGINT) AS glm{a}",
                        self.leaf_sums_from
                    ));
                }
                None => glm.push_str(&format!(", CAST(0 AS BIGINT) AS glm{a}")),
            }
        }
        render(
            statement("class_rows"),
            &[
                ("id", &id.to_string()),
                ("glm", &glm),
                ("minority", if self.extras.label { "c.size - majority.majority" } else { "0" }),
                ("squares", if self.extras.spread { "squares.squares" } else { "0" }),
                ("lists", &lists),
                ("classes", &self.classes_sql(node, here)),
                ("joins", &joins),
            ],
        )
    }

    /// The histograms of `nodes` (at most [`BATCH`]), in one query: here,
    /// off kept sets brought back, when `here`; else there.
    fn batch(&self, nodes: &[Node], here: bool) -> Result<Vec<(Node, Histogram)>> {
        let ids: Vec<i64> = (0..nodes.len() as i64).collect();
        let union = list(nodes.iter().zip(&ids), " UNION ALL ", |(node, &id)| self.class_rows(node, id, here));
        let lists = match (self.models.is_empty(), self.models.separate) {
            (true, _) => "",
            (false, false) => ", u.s_list",
            (false, true) => ", u.s_list, u.t_list",
        };
        let q = render(
            statement("histograms"),
            &[
                ("glm", &list(0..self.n, "", |a| format!(", CAST(sum(u.glm{a}) AS BIGINT) AS glm{a}"))),
                ("lists", lists),
                ("union", &union),
            ],
        );
        let t = std::time::Instant::now();
        let rows = match here {
            true => self.rows_here(&q),
            false => self.rows(&q),
        };
        let rows = rows
            .with_context(|| format!("the histograms of {} nodes {}", nodes.len(), ["there", "here"][here as usize]))?;
        crate::trace(|| {
            let first: Vec<String> = nodes.iter().take(2).map(|n| format!("{:?}", n.levels)).collect();
            format!(
                "engine: {} nodes{} ({}{}): {} buckets, {:.3}s",
                nodes.len(),
                if here { " here" } else { "" },
                first.join(" "),
                if nodes.len() > 2 { " …" } else { "" },
                rows.len(),
                t.elapsed().as_secs_f64()
            )
        });
        let n = self.n;
        let mut out: Vec<Histogram> = vec![Histogram::default(); nodes.len()];
        for r in rows {
            let node = &nodes[int(&r[0]) as usize];
            let admitted = match self.models.is_empty() {
                true => true,
                false => {
                    let t = if self.models.separate { value_list(&r[7 + n])? } else { Vec::new() };
                    self.models.admits(&value_list(&r[6 + n])?, &t)
                }
            };
            out[int(&r[0]) as usize].buckets.push(Bucket {
                size: int(&r[1]),
                ldiv: int(&r[2]),
                admitted,
                classes: int(&r[3]),
                leaf_sums: node.attrs.iter().map(|&a| int(&r[4 + a])).collect(),
                minority: int(&r[4 + n]),
                squares: int(&r[5 + n]),
                rows: None,
                shape: None,
            });
        }
        Ok(nodes
            .iter()
            .cloned()
            .zip(out)
            .map(|(node, mut h)| {
                h.merge_buckets();
                (node, h)
            })
            .collect())
    }

    /// Per class of `node`, an aggregate of its (value, records) pairs of the
    /// extra column `column` ({{aggregate}} over v and n), as a join to the
    /// classes `c`: ` JOIN (…) name ON name.k0 = c.k0 …`.
    fn pairs_join(&self, node: &Node, name: &str, column: &str, aggregate: &str, here: bool) -> String {
        let (source, from, _) = self.source_of(node, here);
        let keys = self.key_exprs(node, from.as_ref(), here);
        let m = keys.len();
        let g = self.grouping(node, &keys, here);
        let q = render(
            statement("pairs"),
            &[
                ("keys", &list(g.out.iter().enumerate(), ", ", |(i, k)| format!("{k} AS k{i}"))),
                ("grouped", &g.grouped.join(", ")),
                ("aggregate", aggregate),
                ("name", name),
                ("group_keys", &g.keys.join(", ")),
                ("column", column),
                ("source", &source),
                ("group_by", &list(1..=g.keys.len() + 1, ", ", |i| i.to_string())),
            ],
        );
        format!(" JOIN ({q}) {name} ON {}", list(0..m, " AND ", |i| format!("{name}.k{i} = c.k{i}")))
    }

    /// The per-class models' value lists of `node`'s classes: their columns
    /// (`, s_list.s_list[, t_list.t_list]`) and joins; none without such models.
    fn lists(&self, node: &Node) -> (String, String) {
        if self.models.is_empty() {
            return (String::new(), String::new());
        }
        let aggregate = self.remote.spelling("value_list");
        let (mut columns, mut joins) = (String::new(), String::new());
        for (name, column) in std::iter::once(("s_list", "s")).chain(self.models.separate.then_some(("t_list", "t"))) {
            joins.push_str(&self.pairs_join(node, name, column, aggregate, false));
            columns.push_str(&format!(", {name}.{name}"));
        }
        (columns, joins)
    }

    /// The classes of `node` with their value lists (s_list, t_list) when
    /// the job has per-class models; else just the classes.
    fn listed_sql(&self, node: &Node) -> String {
        if self.models.is_empty() {
            return self.classes_sql(node, false);
        }
        let (lists, joins) = self.lists(node);
        render(
            statement("listed"),
            &[("lists", &lists), ("classes", &self.classes_sql(node, false)), ("joins", &joins)],
        )
    }

    /// The per-class models' verdicts at full node `levels`: the distinct
    /// value lists of the classes k and ℓ keep come back and are judged
    /// here; the rejected ones go there (`kanon_rejected_lists`), and what
    /// the kept classes reach is returned. Nothing without such models.
    pub(crate) fn judge_there(&mut self, levels: &[u8], req: &Requirement) -> Result<Option<ClassFigures>> {
        if self.models.is_empty() {
            return Ok(None);
        }
        let node = Node::full(levels.to_vec());
        let columns = if self.models.separate { "c.s_list, c.t_list" } else { "c.s_list" };
        let q = render(
            statement("distinct_lists"),
            &[
                ("lists", columns),
                ("classes", &self.listed_sql(&node)),
                ("k", &req.k.to_string()),
                ("l", &req.l.unwrap_or(0).to_string()),
            ],
        );
        let mut kept = Vec::new();
        let mut rejected = Vec::new();
        for r in self.rows(&q)? {
            let s = value_list(&r[0])?;
            let t = if self.models.separate { value_list(&r[1])? } else { Vec::new() };
            match self.models.admits(&s, &t) {
                true => kept.push((s, t)),
                false => rejected.push(r),
            }
        }
        crate::trace(|| format!("engine: {} value lists kept, {} rejected", kept.len(), rejected.len()));
        let figures = self.models.figures(kept.iter().map(|(s, t)| (s.as_slice(), t.as_slice())));
        self.rejected = !rejected.is_empty();
        if self.rejected {
            let text = if self.models.separate { "s_list VARCHAR, t_list VARCHAR" } else { "s_list VARCHAR" };
            self.conn.execute_batch(&render(statement("rejected_lists"), &[("columns", text)]))?;
            let mut app = self.conn.appender("kanon_rejected_lists")?;
            for r in &rejected {
                app.append_row(duckdb::appender_params_from_iter(r.iter()))?;
            }
            app.flush()?;
            drop(app);
            let select = render(sql::fragment(sql::FREQUENCY_SETS, "share"), &[("table", "kanon_rejected_lists")]);
            self.remote.share(self.conn, &select, &[], "kanon_rejected_lists")?;
        }
        Ok(Some(figures))
    }

    /// The join to the rejected value lists and the condition a class's
    /// lists are among them (none when no list was rejected).
    fn rejected_join(&self) -> (String, &'static str) {
        if !self.rejected {
            return (String::new(), "FALSE");
        }
        let t = if self.models.separate { " AND r.t_list = c.t_list" } else { "" };
        (format!(" LEFT JOIN kanon_rejected_lists r ON r.s_list = c.s_list{t}"), "r.s_list IS NOT NULL")
    }

    /// Which of `nodes` a sample of their classes proves to have more than
    /// `budget` records in classes under `k` (as the other backends'
    /// `refuted`): per node, the classes whose key hashes into the first
    /// [`SAMPLE_PARTS`] of 64 are grouped off the base, one scan of it; a
    /// batch of nodes a query. Nodes over a kept set roll up from it for less,
    /// and are not tried; nor is anything on a base set under `refute_from` rows.
    pub(crate) fn refuted(&self, nodes: &[Node], k: u64, budget: u64) -> Result<Vec<bool>> {
        let mut out = vec![false; nodes.len()];
        if self.base_rows < self.refute_from {
            return Ok(out);
        }
        let tried: Vec<usize> =
            (0..nodes.len()).filter(|&i| !self.kept.keys().any(|held| nodes[i].generalizes(held))).collect();
        for chunk in tried.chunks(BATCH) {
            if let Some(join) = self.sample_join(nodes, chunk) {
                self.refuted_on_sample(nodes, chunk, &join, k, budget, &mut out)?;
                continue;
            }
            let union = list(chunk, " UNION ALL ", |&i| {
                let keys = self.key_exprs(&nodes[i], None, false);
                let hash = class_hash(&keys);
                let g = self.grouping(&nodes[i], &keys, false);
                render(
                    statement("refute"),
                    &[
                        ("id", &i.to_string()),
                        ("keys", &g.keys.join(", ")),
                        ("source", BASE),
                        ("hash", &hash),
                        ("parts", &SAMPLE_PARTS.to_string()),
                        ("group_by", &list(1..=g.keys.len(), ", ", |j| j.to_string())),
                        ("k", &k.to_string()),
                    ],
                )
            });
            let t = std::time::Instant::now();
            for r in self.rows(&union)? {
                out[int(&r[0]) as usize] = int(&r[1]) > budget;
            }
            crate::trace(|| {
                format!("engine: {} nodes tried on a sample, {:.3}s", chunk.len(), t.elapsed().as_secs_f64())
            });
        }
        Ok(out)
    }

    /// The join of the full nodes `chunk` of `nodes` (each QI at their
    /// highest level), when there are several and its hierarchy values
    /// spread a sample over at least `sample_spread` keys: one sample of
    /// the base keyed on it holds whole classes of each, one scan of the
    /// base for all of them.
    fn sample_join(&self, nodes: &[Node], chunk: &[usize]) -> Option<Node> {
        if chunk.len() < 2 || chunk.iter().any(|&i| nodes[i].attrs.len() != self.n) {
            return None;
        }
        let levels: Vec<u8> =
            (0..self.n).map(|a| chunk.iter().map(|&i| nodes[i].levels[a]).max().unwrap_or(0)).collect();
        let spread = (levels.iter().enumerate())
            .map(|(a, &l)| self.level_values[a].get(l as usize).copied().unwrap_or(1))
            .fold(1u64, u64::saturating_mul);
        (spread >= self.sample_spread).then(|| Node::full(levels))
    }

    /// [`Self::refuted`] for the nodes `chunk` under `join`: the base's rows
    /// of a sixteenth of `join`'s classes as a work table (one scan of the
    /// base), then each node grouped off it, one query.
    fn refuted_on_sample(
        &self,
        nodes: &[Node],
        chunk: &[usize],
        join: &Node,
        k: u64,
        budget: u64,
        out: &mut [bool],
    ) -> Result<()> {
        let t = std::time::Instant::now();
        let sample = "kanon_refute_sample";
        let select = render(
            statement("refute_sample"),
            &[
                ("source", BASE),
                ("hash", &class_hash(&self.key_exprs(join, None, false))),
                ("parts", &SAMPLE_PARTS.to_string()),
            ],
        );
        // A sample expected within the rows a kept set may bring back comes
        // back, and the nodes are grouped off it here: no write there, and
        // no query there per batch (on Spark a job of about a second each).
        // At most one row more comes: a sample larger than expected (classes
        // of skewed sizes) is dropped here and made there.
        let here =
            self.base_rows * SAMPLE_PARTS / 64 <= self.here_rows && self.fetch_within(&select, sample)?.is_some();
        if !here {
            self.remote.create_work(sample, &select, WorkUse::default())?;
        }
        let union = list(chunk, " UNION ALL ", |&i| {
            let keys = self.key_exprs(&nodes[i], None, here);
            let g = self.grouping(&nodes[i], &keys, here);
            render(
                statement("refute_sampled"),
                &[
                    ("id", &i.to_string()),
                    ("keys", &g.keys.join(", ")),
                    ("source", sample),
                    ("group_by", &list(1..=g.keys.len(), ", ", |j| j.to_string())),
                    ("k", &k.to_string()),
                ],
            )
        });
        let rows = match here {
            true => {
                let rows = self.rows_here(&union);
                self.conn.execute_batch(&render(statement("drop_here"), &[("table", sample)]))?;
                rows
            }
            false => {
                let rows = self.rows(&union);
                self.remote.drop_work(sample)?;
                rows
            }
        };
        for r in rows? {
            out[int(&r[0]) as usize] = int(&r[1]) > budget;
        }
        crate::trace(|| {
            let at = if here { " here" } else { "" };
            format!("engine: {} nodes tried on one sample{at}, {:.3}s", chunk.len(), t.elapsed().as_secs_f64())
        });
        Ok(())
    }

    /// The histograms of `missing` (none cached), each from the smallest
    /// set below it, [`BATCH`] nodes a query.
    pub(crate) fn histograms(&mut self, missing: &[Node]) -> Result<Vec<(Node, Histogram)>> {
        let (here, there): (Vec<Node>, Vec<Node>) = missing.iter().cloned().partition(|n| self.rolled_up_here(n));
        let mut out = Vec::with_capacity(missing.len());
        for chunk in there.chunks(BATCH) {
            out.extend(self.batch(chunk, false)?);
        }
        for chunk in here.chunks(BATCH) {
            out.extend(self.batch(chunk, true)?);
        }
        let order: HashMap<&Node, usize> = missing.iter().enumerate().map(|(i, n)| (n, i)).collect();
        out.sort_by_key(|(n, _)| order.get(n).copied().unwrap_or(usize::MAX));
        Ok(out)
    }

    /// Evaluate `items` and keep their frequency sets for the nodes above
    /// them: [`BATCH`] nodes a table (a `node` column tells them apart), each
    /// rolled up there from the smallest set below it; a table that cannot
    /// outgrow `here_rows` comes straight here ([`Self::straight_here`]).
    pub(crate) fn materialize(
        &mut self,
        items: &[(Node, Option<Node>)],
        cached: &HashMap<Node, Histogram>,
    ) -> Result<Vec<(Node, Histogram)>> {
        let mut todo: Vec<Node> = items
            .iter()
            .map(|(n, _)| n.clone())
            .filter(|n| !self.kept.contains_key(n))
            // (rows 0: a set kept by this call, its size not known yet.) Nor
            // above a set here only: the node is rolled up from it here, each time.
            .filter(|n| match self.source_where(n, |_| true) {
                (_, Some(from), rows) => !(rows > 0 && rows <= KEEP_OVER) && self.kept[&from].there,
                _ => true,
            })
            .collect();
        todo.sort();
        todo.dedup();
        let mut made = Vec::new();
        for chunk in todo.chunks(BATCH) {
            let mut parts = Vec::with_capacity(chunk.len());
            let mut ids = Vec::with_capacity(chunk.len());
            for node in chunk {
                let id = self.next_id;
                self.next_id += 1;
                let (source, from, _) = self.source_of(node, false);
                let keys = self.key_exprs(node, from.as_ref(), false);
                let g = self.grouping(node, &keys, false);
                let codes = list(0..self.n, ", ", |a| match node.attrs.iter().position(|&b| b == a) {
                    Some(i) => format!("CAST({} AS BIGINT) AS g{a}", g.out[i]),
                    None => format!("CAST(NULL AS BIGINT) AS g{a}"),
                });
                let extras = self.extras.names();
                parts.push(render(
                    statement("kept_set"),
                    &[
                        ("id", &id.to_string()),
                        ("codes", &codes),
                        ("extras", &self.extras.columns("q")),
                        ("group_keys", &g.keys.join(", ")),
                        ("extras_in", &self.extras.columns("p")),
                        ("source", &source),
                        ("group_by", &list(1..=g.keys.len() + extras.len(), ", ", |j| j.to_string())),
                    ],
                ));
                ids.push(id);
            }
            let table = format!("kanon_fs_{}", self.next_table);
            self.next_table += 1;
            let select = parts.join(" UNION ALL ");
            if let Some(rows) = self.straight_here(chunk, &select, &table)? {
                self.tables.insert(table.clone(), chunk.len());
                // One set's rows are its classes; several sets' are read off their histograms.
                let rows = if chunk.len() == 1 { rows } else { 0 };
                for (node, id) in chunk.iter().zip(ids) {
                    self.kept.insert(node.clone(), Kept { table: table.clone(), id, rows, here: true, there: false });
                }
                continue;
            }
            let t = std::time::Instant::now();
            let told = self.remote.create_work(&table, &select, WorkUse::default())?;
            crate::trace(|| format!("engine: {} sets kept in {table}, {:.3}s", chunk.len(), t.elapsed().as_secs_f64()));
            self.tables.insert(table.clone(), chunk.len());
            for (node, id) in chunk.iter().zip(ids) {
                // Its own set is the smallest below it: none has fewer rows.
                self.kept.insert(node.clone(), Kept { table: table.clone(), id, rows: 0, here: false, there: true });
            }
            // A lone set, its rows told (PostgreSQL) or counted there (Spark: off
            // the Parquet footers, where its histogram is a job over the rows):
            // brought back before its histogram, which is then read here.
            match (told, chunk.len(), self.models.is_empty()) {
                (Some(rows), 1, true) => self.fetch_here(&table, rows)?,
                // (Not counted when nothing may come back: the engine's side forced.)
                (None, 1, true) if self.here_rows > 0 => {
                    let rows = self.table_rows(&table)?;
                    self.fetch_here(&table, rows)?
                }
                _ => made.push(table.clone()),
            }
        }
        // Histograms known already are not read again.
        let mut nodes: Vec<Node> = items.iter().map(|(n, _)| n.clone()).filter(|n| !cached.contains_key(n)).collect();
        nodes.sort();
        nodes.dedup();
        let out = self.histograms(&nodes)?;
        let known: Vec<(Node, u64)> =
            out.iter().map(|(n, h)| (n, h)).chain(cached.iter()).map(|(n, h)| (n.clone(), h.classes())).collect();
        for (node, classes) in known {
            if let Some(k) = self.kept.get_mut(&node) {
                if k.rows == 0 {
                    k.rows = classes;
                }
            }
        }
        for table in made {
            self.bring_back(&table)?;
        }
        Ok(out)
    }

    /// Fetch the sets `select` rolls up for `nodes` straight into the table
    /// `table` here, with no write there, when they cannot outgrow
    /// `here_rows`: the product of the hierarchy values of each node's
    /// levels bounds its classes. On Spark that saves the write, its count
    /// and its read (about 0.6 s a set of 400k rows). Not with extra codes
    /// (a class has a row per code) or class models (their lists are
    /// spelled there), nor on an engine whose release matches source values
    /// ([`RemoteEngine::anti_join_on_values`]): it wants the chosen node's
    /// classes there, off its set there. The rows, or None when not fetched;
    /// a fetch that finds more rows after all is dropped here.
    fn straight_here(&self, nodes: &[Node], select: &str, table: &str) -> Result<Option<u64>> {
        if self.here_rows == 0 || self.extras.any() || !self.models.is_empty() || self.remote.anti_join_on_values() {
            return Ok(None);
        }
        let bound = |node: &Node| {
            let (_, _, below) = self.source_of(node, false);
            let space = (node.attrs.iter().zip(&node.levels))
                .map(|(&a, &l)| self.level_values[a].get(l as usize).copied().unwrap_or(u64::MAX))
                .fold(1u64, u64::saturating_mul);
            if below > 0 {
                space.min(below)
            } else {
                space
            }
        };
        if nodes.iter().map(bound).fold(0u64, u64::saturating_add) > self.here_rows {
            return Ok(None);
        }
        let t = std::time::Instant::now();
        let rows = self.fetch_within(select, table)?;
        if let Some(rows) = rows {
            crate::trace(|| {
                format!(
                    "engine: {} sets kept here in {table}, {rows} rows, {:.3}s",
                    nodes.len(),
                    t.elapsed().as_secs_f64()
                )
            });
        }
        Ok(rows)
    }

    /// Fetch `select`'s rows into the local table `table` when they are at
    /// most `here_rows`: at most one row more is read, and a result that
    /// has it is dropped here. The rows, or None when dropped.
    fn fetch_within(&self, select: &str, table: &str) -> Result<Option<u64>> {
        let limited = render(statement("limited"), &[("select", select), ("rows", &(self.here_rows + 1).to_string())]);
        let rows = self.remote.fetch(self.conn, &limited, table)?;
        if rows > self.here_rows {
            self.conn.execute_batch(&render(statement("drop_here"), &[("table", table)]))?;
            return Ok(None);
        }
        Ok(Some(rows))
    }

    /// Copy the kept table `table` here when it has at most `here_rows`
    /// rows (and no class model, whose value lists are spelled there): the
    /// nodes above its sets are then rolled up here, a local query each
    /// instead of a query there (on Spark a job of about a second; a
    /// top-down dive rolls up a node a step). It stays there too, for what
    /// runs there (the suppressed classes, loss sums).
    fn bring_back(&mut self, table: &str) -> Result<()> {
        if !self.models.is_empty() {
            return Ok(());
        }
        let sets: Vec<u64> = self.kept.values().filter(|k| k.table == table).map(|k| k.rows).collect();
        let classes: u64 = sets.iter().sum();
        if sets.contains(&0) || classes > self.here_rows {
            return Ok(());
        }
        // With extra codes a class has a row per code: counted there.
        let rows = match self.extras.any() {
            true => self.table_rows(table)?,
            false => classes,
        };
        self.fetch_here(table, rows)
    }

    /// The rows of the work table `table` there, counted there.
    fn table_rows(&self, table: &str) -> Result<u64> {
        Ok(self.rows(&render(statement("table_rows"), &[("table", table)]))?.first().map_or(0, |r| int(&r[0])))
    }

    /// [`Self::bring_back`] for the kept table `table` of `rows` rows.
    fn fetch_here(&mut self, table: &str, rows: u64) -> Result<()> {
        if !self.models.is_empty() || rows > self.here_rows {
            return Ok(());
        }
        let t = std::time::Instant::now();
        self.remote.fetch(self.conn, &render(statement("kept_table"), &[("table", table)]), table)?;
        for k in self.kept.values_mut().filter(|k| k.table == table) {
            k.here = true;
        }
        crate::trace(|| format!("engine: {table} brought back, {rows} rows, {:.3}s", t.elapsed().as_secs_f64()));
        Ok(())
    }

    /// Drop the kept sets of nodes `keep` rejects.
    pub(crate) fn retain(&mut self, keep: impl Fn(&Node) -> bool) -> Result<()> {
        let gone: Vec<Node> = self.kept.keys().filter(|n| !keep(n)).cloned().collect();
        for node in gone {
            let Some(k) = self.kept.remove(&node) else { continue };
            let left = self.tables.get_mut(&k.table).map(|c| {
                *c -= 1;
                *c
            });
            if left == Some(0) {
                self.tables.remove(&k.table);
                if k.there {
                    self.remote.drop_work(&k.table)?;
                }
                if k.here {
                    self.conn.execute_batch(&render(statement("drop_here"), &[("table", &k.table)]))?;
                }
            }
        }
        Ok(())
    }

    /// The base set's class sizes: (size, classes), for the risk before.
    pub(crate) fn source_sizes(&self) -> Result<Vec<(u64, u64)>> {
        let node = Node::full(vec![0; self.n]);
        let q = render(statement("sizes"), &[("classes", &self.classes_sql(&node, false))]);
        self.rows(&q)?.into_iter().map(|r| Ok((int(&r[0]), int(&r[1])))).collect()
    }

    /// The classes `req` suppresses at full node `levels`, by their codes,
    /// when the node rolls up from a set here and they are at most
    /// [`SEND_CLASSES`]: the release then looks their labels up here and
    /// sends them, in place of a work table there whose labels it fetches
    /// (on Spark three jobs of about a second each). None otherwise, and on
    /// an engine whose release matches source values
    /// ([`RemoteEngine::anti_join_on_values`]): it wants the classes there.
    pub(crate) fn suppressed_here(&self, levels: &[u8], req: &Requirement) -> Result<Option<Vec<Box<[i64]>>>> {
        let node = Node::full(levels.to_vec());
        if self.remote.anti_join_on_values() || !self.rolled_up_here(&node) {
            return Ok(None);
        }
        let select = render(
            statement("suppressed"),
            &[
                ("codes", &list(0..self.n, ", ", |a| format!("CAST(c.k{a} AS BIGINT) AS c{a}"))),
                ("classes", &self.classes_sql(&node, true)),
                ("joins", ""),
                ("k", &req.k.to_string()),
                ("l", &req.l.unwrap_or(0).to_string()),
                ("rejected", ""),
            ],
        );
        let count = render(statement("count_of"), &[("select", &select)]);
        if int(&self.rows_here(&count)?[0][0]) > SEND_CLASSES {
            return Ok(None);
        }
        let classes: Vec<Box<[i64]>> =
            self.rows_here(&select)?.iter().map(|r| r.iter().map(|v| int(v) as i64).collect()).collect();
        crate::trace(|| format!("engine: {} suppressed classes here", classes.len()));
        Ok(Some(classes))
    }

    /// The classes `req` suppresses at full node `levels`, as the work table
    /// [`SUPPRESSED`] there (codes c0…); never brought back.
    pub(crate) fn suppress_there(&self, levels: &[u8], req: &Requirement) -> Result<String> {
        let node = Node::full(levels.to_vec());
        let (joins, rejected) = self.rejected_join();
        let select = render(
            statement("suppressed"),
            &[
                ("codes", &list(0..self.n, ", ", |a| format!("CAST(c.k{a} AS BIGINT) AS c{a}"))),
                ("classes", &self.listed_sql(&node)),
                ("joins", &joins),
                ("k", &req.k.to_string()),
                ("l", &req.l.unwrap_or(0).to_string()),
                ("rejected", &format!(" OR {rejected}")),
            ],
        );
        self.remote.create_work(SUPPRESSED, &select, WorkUse::default())?;
        Ok(SUPPRESSED.to_string())
    }

    /// am of the release at full node `levels`: Σ size × Π leaves over the
    /// kept classes, summed exactly there.
    pub(crate) fn ambiguity(&self, levels: &[u8], req: &Requirement, data: &Dataset) -> Result<f64> {
        let node = Node::full(levels.to_vec());
        // Off its set here when it rolls up from one (no value list rejected then).
        let here = self.rolled_up_here(&node);
        let (rejected_join, rejected) = self.rejected_join();
        let joins = list(0..self.n, " ", |a| {
            format!("JOIN {} h{a} ON h{a}.level = {} AND h{a}.code = c.k{a}", sql::ident(&leaves_table(a)), levels[a])
        });
        let q = render(
            statement("ambiguity"),
            &[
                ("classes", &if here { self.classes_sql(&node, true) } else { self.listed_sql(&node) }),
                ("product", &list(0..self.n, " * ", |a| format!("CAST(h{a}.leaves AS DECIMAL(38, 0))"))),
                ("text", if here { sql::fragment(sql::DUCKDB, "text") } else { self.remote.spelling("text") }),
                ("joins", &format!("{joins}{rejected_join}")),
                ("admitted", &format!(" AND NOT ({rejected})")),
                ("k", &req.k.to_string()),
                ("l", &req.l.unwrap_or(0).to_string()),
            ],
        );
        let rows = if here { self.rows_here(&q)? } else { self.rows(&q)? };
        let (kept, records) = match rows.first().map(|r| (&r[0], &r[1])) {
            Some((Value::Text(kept), Value::BigInt(records))) => (kept.parse::<u128>()? as f64, *records as f64),
            other => anyhow::bail!("am's sums from the engine: {other:?}"),
        };
        Ok(ambiguity(kept, records, data))
    }
}

/// An integer the engine sent back.
fn int(v: &Value) -> u64 {
    match v {
        Value::BigInt(x) => *x as u64,
        Value::Int(x) => *x as u64,
        Value::HugeInt(x) => *x as u64,
        Value::UBigInt(x) => *x,
        Value::SmallInt(x) => *x as u64,
        Value::TinyInt(x) => *x as u64,
        _ => 0,
    }
}

/// A value list as the engine spelled it (`value_list`: v:n,v:n… in code
/// order) as the models read it.
fn value_list(v: &Value) -> Result<Vec<(u32, u64)>> {
    let Value::Text(text) = v else { anyhow::bail!("a value list from the engine: {v:?}") };
    text.split(',')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (v, n) = pair.split_once(':').context("a value list's pair")?;
            Ok((v.parse()?, n.parse()?))
        })
        .collect()
}

/// QI `a`'s leaves per (level, code), there.
fn leaves_table(a: usize) -> String {
    format!("kanon_leaves_{a}")
}

/// The kept sets go with the evaluator; the base set stays for the release.
impl Drop for EngineSets<'_> {
    fn drop(&mut self) {
        for table in self.tables.keys() {
            // A table lives while a kept set of it does; a set fetched straight is here only.
            if self.kept.values().any(|k| &k.table == table && k.there) {
                let _ = self.remote.drop_work(table);
            }
            let _ = self.conn.execute_batch(&render(statement("drop_here"), &[("table", table)]));
        }
    }
}
