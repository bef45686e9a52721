//! `kanon limit`: the physical limit of a run on the job's source, with no
//! search: one plain `GROUP BY` of the QI columns (materialized), then one
//! recode-and-write of every source row at the node (dropped columns left
//! out, no ORDER BY, no suppression) into scratch files beside the output, of
//! the job's output kind (a DuckDB table, Parquet or CSV), deleted
//! afterwards. The plain-SQL limit (`write_seconds`, `total_seconds`)
//! recodes each QI by the cheapest SQL expression its hierarchy allows
//! (`substr`-like masks, `floor(x / w) * w`, `year(d) // 10 * 10`, a
//! constant at the top) and joins only file hierarchies' maps;
//! `maps_write_seconds` / `maps_total_seconds` join every QI to its value →
//! label map (the figure `kanon limit` gave before; `--plain-only` skips it).
//! When the GROUP BY does not fit in `[engine] memory_limit`, the first half
//! is the same GROUP BY of one 64-bit hash of the QI values, counted and not
//! kept (`"group_by": "hashed"`, no combinations); if that does not fit
//! either, one scan hashing every QI value (`"scan"`). Each costs less than
//! the plain GROUP BY would, so the ratio to it is an upper bound;
//! `group_by_failed_after_seconds` says how long the GROUP BY ran before it
//! failed. Building the hierarchies is timed apart (`hierarchy_seconds`).
//!
//! On Spark and PostgreSQL ([`engine`]) both halves run on the engine: the
//! GROUP BY as a work table there, the write as the engine writes a release
//! (a Parquet table of Spark's catalog, a table of PostgreSQL), each QI by
//! the expression that gives its labels (the release's own,
//! [`crate::release::plain`]); no map-join figure, no fallbacks.
//!
//! Stage by stage: [`Plan`] settles the options → [`yardstick`] times the
//! GROUP BY → the hierarchies and their value → label maps are built →
//! [`write`] times the recode-and-write ([`plain`] says how each QI is
//! recoded) → the [`Report`].

mod engine;
mod write;
mod yardstick;

use crate::data::frequency;
use crate::data::hierarchy::{self, h_table};
use crate::engine::embedded;
use crate::error::bad;
use crate::job::{parse_levels, Job};
use crate::load::check_columns;
use crate::progress::spinner;
use crate::release::plain::{self, Recode};
use crate::sql::{self, fragment, render};
use anyhow::{Context, Result};
use serde::Serialize;
use std::path::PathBuf;
use std::time::Instant;
use write::Written;
pub(crate) use yardstick::First;

/// The command's options, as given.
pub(crate) struct Options {
    pub(crate) job: PathBuf,
    /// The node, e.g. `zip=2,birth_date=1,…`.
    pub(crate) node: String,
    /// Time one scan of the QI values instead of the GROUP BY.
    pub(crate) scan: bool,
    /// Time the GROUP BY of one hash of the QI values instead.
    pub(crate) hashed: bool,
    /// Time only the plain-SQL write.
    pub(crate) plain_only: bool,
}

/// The options settled: the job, the node's levels, what to time.
pub struct Plan {
    job: Job,
    levels: Vec<u8>,
    /// What the first half times first.
    first: First,
    /// Also time the write through every QI's map.
    maps: bool,
}

impl Plan {
    pub(crate) fn new(opts: &Options) -> Result<Plan> {
        let job = Job::load(&opts.job)?;
        let levels = parse_levels(&job, &opts.node)?;
        let first = match (opts.scan, opts.hashed) {
            (true, _) => First::Scan,
            (false, true) => First::Hashed,
            (false, false) => First::GroupBy,
        };
        Ok(Plan { job, levels, first, maps: !opts.plain_only })
    }
}

/// What `kanon limit` prints, as one JSON object, in this order.
#[derive(Serialize)]
pub(crate) struct Report {
    pub(crate) group_by_seconds: f64,
    /// What was timed: `group_by`, `hashed` or `scan`.
    pub(crate) group_by: &'static str,
    pub(crate) group_by_failed_after_seconds: Option<f64>,
    pub(crate) write_seconds: f64,
    pub(crate) total_seconds: f64,
    pub(crate) maps_write_seconds: Option<f64>,
    pub(crate) maps_total_seconds: Option<f64>,
    pub(crate) written_as: &'static str,
    /// Distinct QI combinations (only the plain GROUP BY counts them).
    pub(crate) combinations: Option<i64>,
    pub(crate) rows: i64,
    pub(crate) hierarchy_seconds: f64,
    /// Each QI's level, in the job's order.
    pub(crate) node: serde_json::Map<String, serde_json::Value>,
}

/// What the limit's GROUP BY groups by: the QIs, and with `[privacy] person`
/// the person column too (kanon's base set is then (person, tuple) pairs).
pub(super) fn grouped_columns(job: &Job) -> Vec<String> {
    let mut columns = job.qi_names();
    columns.extend(job.privacy.person.iter().map(|p| p.name.clone()));
    columns
}

/// Time the plan's GROUP BY and recode-and-writes.
pub(crate) fn run(plan: &Plan, quiet: bool) -> Result<Report> {
    let job = &plan.job;
    crate::anonymize::plan::refuse_on_engine(job, crate::anonymize::plan::Feature::Limit)?;
    if !matches!(job.engine.kind, crate::job::EngineKind::DuckDb) {
        return engine::run(plan, quiet);
    }
    let (conn, columns) = embedded::open(job)?;
    check_columns(job, &columns)?;
    let qis = job.qi_names();
    let bar = spinner(quiet);
    let timed = yardstick::time(&conn, &grouped_columns(job), plan.first, &bar)?;

    bar.set_message("building hierarchies");
    let start = Instant::now();
    let heights = maps(&conn, job, &qis, &plan.levels)?;
    let hierarchy_seconds = start.elapsed().as_secs_f64();

    bar.set_message("recode-and-write");
    let scratch = write::scratch(job)?;
    let kind = Written::of(job);
    // The plain-SQL limit: each QI by the cheapest expression of its hierarchy.
    let plain: Vec<Recode> =
        (0..qis.len()).map(|a| plain::duckdb_limit(job, &columns, a, plan.levels[a], heights[a])).collect();
    let start = Instant::now();
    let written = write::write(&conn, job, &columns, &qis, &plain, &scratch.path().join("plain"), kind)?;
    let plain_seconds = start.elapsed().as_secs_f64();
    check_rows(written, timed.rows)?;
    // Today's figure: every QI joined to its value → label map.
    let maps_seconds = if plan.maps {
        let joined: Vec<Recode> = (0..qis.len()).map(|_| Recode::Map).collect();
        let start = Instant::now();
        let written = write::write(&conn, job, &columns, &qis, &joined, &scratch.path().join("maps"), kind)?;
        check_rows(written, timed.rows)?;
        Some(start.elapsed().as_secs_f64())
    } else {
        None
    };
    bar.finish_and_clear();
    Ok(Report {
        group_by_seconds: timed.seconds,
        group_by: timed.kind,
        group_by_failed_after_seconds: timed.failed_after,
        write_seconds: plain_seconds,
        total_seconds: timed.seconds + plain_seconds,
        maps_write_seconds: maps_seconds,
        maps_total_seconds: maps_seconds.map(|m| timed.seconds + m),
        written_as: kind.name(),
        combinations: timed.combinations,
        rows: timed.rows,
        hierarchy_seconds,
        node: qis.iter().zip(&plan.levels).map(|(q, &l)| (q.clone(), l.into())).collect(),
    })
}

/// The hierarchies as `kanon run` builds them (the generated ones need the
/// marginals, scanned where the source is), checked against the node's
/// `levels`. Their heights.
fn hierarchies(
    conn: &duckdb::Connection,
    remote: Option<&crate::engine::remote::Remote>,
    job: &Job,
    qis: &[String],
    levels: &[u8],
) -> Result<Vec<u8>> {
    let files = hierarchy::load_files(conn, job)?;
    frequency::scan_source(conn, remote, &frequency::Input::source(), qis, &files.leaves(), &[])?;
    let hierarchies = hierarchy::finish(conn, job, files)?;
    for (h, &l) in hierarchies.iter().zip(levels) {
        if l > h.height {
            return Err(bad(format!(
                "--node: level {l} of \"{}\" is above its hierarchy's height {}",
                h.column, h.height
            )));
        }
    }
    Ok(hierarchies.iter().map(|h| h.height).collect())
}

/// The hierarchies ([`hierarchies`]) and each QI's value → label map at its
/// level. Their heights.
fn maps(conn: &duckdb::Connection, job: &Job, qis: &[String], levels: &[u8]) -> Result<Vec<u8>> {
    let heights = hierarchies(conn, None, job, qis, levels)?;
    for (a, (column, &l)) in qis.iter().zip(levels).enumerate() {
        conn.execute_batch(&render(
            fragment(sql::LIMIT, "map"),
            &[
                ("map", &write::map_table(a)),
                ("label", &format!("v{l}")),
                ("h", &h_table(a)),
                ("marginal", &hierarchy::marginal_table(a)),
                ("col", &format!("v{a}")),
            ],
        ))
        .with_context(|| format!("building the value → label map of \"{column}\""))?;
    }
    Ok(heights)
}

pub(super) fn check_rows(written: i64, rows: i64) -> Result<()> {
    if written != rows {
        anyhow::bail!("the recode-and-write wrote {written} rows, the source has {rows}");
    }
    Ok(())
}
