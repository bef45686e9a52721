//! Writing the release: a [`Recoding`] (the release's logical plan) applied
//! to the source in one streaming SQL scan, published atomically. [`write`]
//! is the one place that picks the engine.
//!
//! On DuckDB the recoding becomes small value maps held in Rust ([`maps`]):
//! per QI, each source value → its group and the group's label; and the
//! classes (tuples of groups) to drop. The statement calls them through
//! scalar functions registered for it ([`functions`]), so it has no join and
//! no sort: DuckDB keeps the source's row order through scan, projection and
//! filter (a hash join would not; see docs/scale.md). Levels and partitions
//! are recodings of that one shape; cells ([`CellRecoding`]) have the same
//! one pass, the row's cluster coming from its source position, its cells
//! from the cluster. [`publish`] swaps the result in. On Spark or PostgreSQL a full-domain
//! recoding is one statement of joins run there ([`remote`]).

mod functions;
mod maps;
mod publish;
mod remote;

use crate::data::hierarchy::divisors;
use crate::job::{Job, OutputSpec};
use crate::load::Loaded;
use crate::measure::metrics::Requirement;
use crate::measure::privacy::ClassFigures;
use crate::search::cbg::Clusters;
use crate::search::cells::CellDomain;
use crate::sql::{self, list, render};
use anyhow::{bail, Result};
use std::sync::Arc;

/// What the release writes for each kept record's QIs: the logical plan of
/// a release, whatever model of generalization found it.
pub enum Recoding {
    /// A full-domain node: each QI at its level; `dropped` the suppressed
    /// classes by their codes at those levels.
    Levels { levels: Vec<u8>, dropped: Vec<Box<[i64]>> },
    /// One partition per QI (Li & Li's schemes): per QI, `blocks[a][i]` is
    /// the block of leaf index `i` (the rank of the leaf code in
    /// `leaf_codes[a]`) and `labels[a]` the blocks' labels; `dropped` the
    /// classes (block per QI) suppressed.
    Partitions {
        leaf_codes: Vec<Vec<i64>>,
        blocks: Vec<Vec<u32>>,
        labels: Vec<Vec<Option<String>>>,
        dropped: Vec<Vec<u32>>,
    },
    /// Cells per cluster (cell-based generalization).
    Cells(Arc<CellRecoding>),
}

impl Recoding {
    /// The recoding of a full-domain node: the classes `req` suppresses at
    /// `levels`, read off the base frequency set (which may be dropped after).
    pub fn levels(source: &Loaded, levels: &[u8], req: &Requirement) -> Result<Recoding> {
        write_node_classes(source, levels, None)?;
        Recoding::levels_judged(source, levels, req, &Judged::read(source, levels)?)
    }

    /// [`Recoding::levels`] with the node's classes already judged by the
    /// per-class models and written by [`write_node_classes`].
    pub fn levels_judged(source: &Loaded, levels: &[u8], req: &Requirement, judged: &Judged) -> Result<Recoding> {
        let n = levels.len();
        let q = render(
            sql::fragment(sql::RELEASE_MAP, "suppressed"),
            &[("class_cols", &list(0..n, ", ", |a| format!("c.c{a}")))],
        );
        let mut stmt = source.conn.prepare(&q)?;
        let mut rows = stmt.query(duckdb::params![req.k as i64, req.l.unwrap_or(0) as i64])?;
        let mut dropped = Vec::new();
        while let Some(r) = rows.next()? {
            dropped.push((0..n).map(|a| r.get::<_, i64>(a)).collect::<duckdb::Result<Box<[i64]>>>()?);
        }
        crate::trace(|| format!("suppressed classes: {}", dropped.len()));
        if !judged.rejected.is_empty() {
            // Only with per-class models: a copy of every suppressed class is no small thing at 10⁹ rows.
            let known: std::collections::HashSet<Box<[i64]>> = dropped.iter().cloned().collect();
            dropped.extend(judged.rejected.iter().filter(|c| !known.contains(*c)).cloned());
        }
        Ok(Recoding::Levels { levels: levels.to_vec(), dropped })
    }
}

/// A full-domain node's classes into `kanon_node_classes`, read by the
/// suppressed classes and am: one scan of the base frequency set, or of the
/// node's own frequency set when the SQL evaluator kept it (`kept`: its
/// table and node id), which at scale is a fraction of the base.
pub fn write_node_classes(source: &Loaded, levels: &[u8], kept: Option<&(String, i64)>) -> Result<()> {
    let n = levels.len();
    let ldiv = if source.extras.sensitive { "count(DISTINCT p.s)" } else { "0" };
    crate::trace(|| format!("node classes from {}", kept.map_or("the base frequency set", |k| k.0.as_str())));
    match kept {
        Some((table, id)) => {
            let q = render(
                sql::fragment(sql::RELEASE_MAP, "node_classes_kept"),
                &[
                    ("classes", &list(0..n, ", ", |a| format!("p.g{a}::BIGINT AS c{a}"))),
                    ("ldiv", ldiv),
                    ("kept", table),
                ],
            );
            source.conn.execute(&q, [id])?;
        }
        None => {
            let div = divisors(&source.conn, n)?;
            let q = render(
                sql::fragment(sql::RELEASE_MAP, "node_classes"),
                &[
                    (
                        "classes",
                        &list(0..n, ", ", |a| format!("(p.g{a} // {})::BIGINT AS c{a}", div[a][levels[a] as usize])),
                    ),
                    ("ldiv", ldiv),
                ],
            );
            source.conn.execute_batch(&q)?;
        }
    }
    Ok(())
}

/// A full-domain node's classes judged by the per-class models (entropy or
/// recursive ℓ, t-closeness): read once off the base frequency set, for the
/// release, am and the report's figures. Empty without such models.
#[derive(Default)]
pub struct Judged {
    /// Per class (codes at the node's levels): its (code, records) lists of
    /// the s and (when t-closeness reads its own column) t columns.
    lists: std::collections::BTreeMap<Box<[i64]>, [Vec<(u32, u64)>; 2]>,
    /// The classes the models reject.
    pub rejected: Vec<Box<[i64]>>,
}

impl Judged {
    pub fn read(source: &Loaded, levels: &[u8]) -> Result<Judged> {
        let models = &source.models;
        let mut judged = Judged::default();
        if models.is_empty() {
            return Ok(judged);
        }
        let n = levels.len();
        let div = divisors(&source.conn, n)?;
        let columns: &[&str] = if models.separate { &["s", "t"] } else { &["s"] };
        for (j, column) in columns.iter().enumerate() {
            let q = render(
                sql::fragment(sql::RELEASE_MAP, "class_lists"),
                &[
                    (
                        "classes",
                        &list(0..n, ", ", |a| format!("(p.g{a} // {})::BIGINT AS c{a}", div[a][levels[a] as usize])),
                    ),
                    ("class_cols", &list(0..n, ", ", |a| format!("c.c{a}"))),
                    ("column", column),
                ],
            );
            let mut stmt = source.conn.prepare(&q)?;
            let mut rows = stmt.query([])?;
            while let Some(r) = rows.next()? {
                let key = (0..n).map(|a| r.get::<_, i64>(a)).collect::<duckdb::Result<Box<[i64]>>>()?;
                judged.lists.entry(key).or_default()[j] = crate::evaluator::sql::value_list(r.get(n)?);
            }
        }
        Ok(judged.judge(models))
    }

    /// The same from a node's classes in memory: per class its codes at the
    /// node's levels and its (code, records) lists, as [`Self::read`] reads
    /// them off the base frequency set.
    pub fn of_classes(source: &Loaded, codes: &[Box<[i64]>], lists: Vec<[Vec<(u32, u64)>; 2]>) -> Judged {
        if source.models.is_empty() {
            return Judged::default();
        }
        Judged { lists: codes.iter().cloned().zip(lists).collect(), rejected: Vec::new() }.judge(&source.models)
    }

    /// The classes whose lists the models reject.
    fn judge(mut self, models: &crate::measure::privacy::ClassModels) -> Judged {
        self.rejected =
            self.lists.iter().filter(|(_, [s, t])| !models.admits(s, t)).map(|(key, _)| key.clone()).collect();
        self
    }

    /// What the classes not `dropped` reach under the per-class models (None without such models).
    pub fn kept_figures(&self, source: &Loaded, dropped: &[Box<[i64]>]) -> Option<ClassFigures> {
        if source.models.is_empty() {
            return None;
        }
        let dropped: std::collections::HashSet<&[i64]> = dropped.iter().map(|d| &d[..]).collect();
        let kept = self.lists.iter().filter(|(key, _)| !dropped.contains(&key[..]));
        Some(source.models.figures(kept.map(|(_, [s, t])| (s.as_slice(), t.as_slice()))))
    }
}

/// A per-record recoding: each record's cluster by its source position, and
/// each cluster's cell per QI in the QIs' domains.
pub struct CellRecoding {
    /// By position (`kanon_source_rows`): the record's cluster, or [`crate::search::cbg::SUPPRESSED`].
    pub cluster_of: Vec<u32>,
    pub clusters: Clusters,
    pub domains: Vec<CellDomain>,
    /// The position column of `kanon_source_rows`.
    pub position: String,
}

pub use crate::engine::commit::{BeforeCommit, CommitTarget};

/// What was written.
#[derive(Debug, Clone)]
pub struct Written {
    pub rows: u64,
}

/// Apply `recoding` to the source and publish the result to `out` atomically
/// (the job's output, or a reconstruction's): the table when `out` names one,
/// then its file copies; or, with no table, each file streamed straight from
/// the source. With `reconstruct` (a seed), a cell recoding writes leaves
/// drawn under each cell instead of the cells. `before_commit` runs in the
/// table's transaction (not at all when `out` has no table).
/// Nothing is left behind on failure.
pub fn write(
    source: &Loaded,
    job: &Job,
    out: &OutputSpec,
    recoding: &Recoding,
    reconstruct: Option<u64>,
    before_commit: Option<&BeforeCommit>,
) -> Result<Written> {
    let (conn, columns) = (&source.conn, &source.columns);
    if reconstruct.is_some() && !matches!(recoding, Recoding::Cells(_)) {
        bail!("only a cell-based release has a reconstruction");
    }
    match (&source.remote, recoding) {
        (Some(engine), Recoding::Levels { levels, dropped }) => {
            remote::write_levels(conn, engine.as_ref(), job, columns, levels, dropped, before_commit)
        }
        // The plan runs only full-domain searches on a remote engine.
        (Some(_), _) => unreachable!("a remote engine writes full-domain releases only"),
        (None, Recoding::Levels { levels, dropped }) => {
            let maps = maps::levels(conn, job, columns, levels, dropped)?;
            let calls = functions::register(conn, maps, job, columns)?;
            publish::write_select(conn, job, out, columns, &calls, "kanon_source", before_commit)
        }
        (None, Recoding::Partitions { leaf_codes, blocks, labels, dropped }) => {
            let maps = maps::partitions(conn, job, columns, leaf_codes, blocks, labels, dropped)?;
            let calls = functions::register(conn, maps, job, columns)?;
            publish::write_select(conn, job, out, columns, &calls, "kanon_source", before_commit)
        }
        (None, Recoding::Cells(rec)) => {
            let calls = functions::register_cells(conn, rec, job, columns, reconstruct)?;
            publish::write_select(conn, job, out, columns, &calls, "kanon_source_rows", before_commit)
        }
    }
}
