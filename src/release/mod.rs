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
//! recoding is one statement run there ([`remote`]): each QI recoded by the
//! plain SQL expression that gives its labels ([`plain`], which `kanon limit`
//! times too), a join only for a QI that needs its value map.

mod functions;
mod maps;
pub(crate) mod plain;
mod publish;
mod remote;

use crate::job::{Job, OutputSpec};
use crate::load::Loaded;
use crate::search::cbg::Clusters;
use crate::search::cells::CellDomain;
use anyhow::{bail, Result};
use std::sync::Arc;

/// What the release writes for each kept record's QIs: the logical plan of
/// a release, whatever model of generalization found it.
pub enum Recoding {
    /// A full-domain node: each QI at its level; `dropped` the suppressed
    /// classes by their codes at those levels, or, when the evaluator ran on
    /// the remote engine, `dropped_there`: the work table there that holds
    /// them (columns c0… BIGINT; `dropped` is then empty).
    /// With `persons_dropped`, the persons in `kanon_dropped_persons` (by
    /// person code) are left out with all their rows (`[privacy] person`).
    Levels { levels: Vec<u8>, dropped: Vec<Box<[i64]>>, dropped_there: Option<String>, persons_dropped: bool },
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

/// A per-record recoding: each record's cluster by its source position, and
/// each cluster's cell per QI in the QIs' domains.
pub struct CellRecoding {
    /// By position (`kanon_source_rows`): the record's cluster, or [`crate::search::cbg::SUPPRESSED`].
    pub(crate) cluster_of: Vec<u32>,
    pub(crate) clusters: Clusters,
    pub(crate) domains: Vec<CellDomain>,
    /// The position column of `kanon_source_rows`.
    pub(crate) position: String,
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
        (Some(engine), Recoding::Levels { levels, dropped, dropped_there, persons_dropped }) => {
            let heights: Vec<u8> = source.hierarchies.iter().map(|h| h.height).collect();
            let there = dropped_there.as_deref();
            let persons = job.privacy.person.as_ref().filter(|_| *persons_dropped).map(|p| p.name.as_str());
            let suppressed = remote::Suppressed { classes: dropped, there, persons };
            remote::write_levels(conn, engine.as_ref(), job, columns, &heights, levels, &suppressed, before_commit)
        }
        // The plan runs only full-domain searches on a remote engine.
        (Some(_), _) => unreachable!("a remote engine writes full-domain releases only"),
        (None, Recoding::Levels { levels, dropped, persons_dropped, .. }) => {
            let maps = maps::levels(conn, job, columns, levels, dropped)?;
            let calls = functions::register(conn, maps, job, columns)?;
            let relation = match (&job.privacy.person, persons_dropped) {
                (Some(person), true) => {
                    conn.execute_batch(&crate::sql::render(
                        crate::sql::fragment(crate::sql::PERSONS, "kept_source"),
                        &[("person", &crate::sql::ident(&person.name)), ("dropped", "kanon_dropped_persons")],
                    ))?;
                    "kanon_source_persons"
                }
                _ => "kanon_source",
            };
            publish::write_select(conn, job, out, columns, &calls, relation, before_commit)
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
