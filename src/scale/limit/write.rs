//! The second half of the limit: every source row recoded and written, as
//! the job's release would be (a table of a fresh database, a Parquet or a
//! CSV file), into a scratch folder beside the output.

use crate::engine::embedded::SourceColumn;
use crate::error::bad;
use crate::job::Job;
use crate::release::plain::Recode;
use crate::sql::{self, fragment, ident, list, literal, render};
use anyhow::{Context, Result};
use duckdb::Connection;
use std::path::Path;
use tempfile::TempDir;

/// The value → label map of QI `a` at its level.
pub(super) fn map_table(a: usize) -> String {
    format!("kanon_limit_map{a}")
}

/// Catalog name of the scratch database.
const SCRATCH: &str = "kanon_limit";

/// The scratch folder beside the job's output (deleted when dropped).
pub(super) fn scratch(job: &Job) -> Result<TempDir> {
    let out_dir = job.output.first_path().parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !out_dir.is_dir() {
        return Err(bad(format!("{}: output folder {} does not exist", job.path.display(), out_dir.display())));
    }
    tempfile::Builder::new()
        .prefix(".kanon-limit-")
        .tempdir_in(out_dir)
        .with_context(|| format!("creating a scratch folder in {}", out_dir.display()))
}

/// What the writes produce: the job's release kind.
#[derive(Clone, Copy)]
pub(super) enum Written {
    Table,
    Parquet,
    Csv,
}

impl Written {
    pub(super) fn of(job: &Job) -> Written {
        if job.output.table.is_some() || job.output.remote_table.is_some() {
            Written::Table
        } else if job.output.parquet.is_some() {
            Written::Parquet
        } else {
            Written::Csv
        }
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            Written::Table => "table",
            Written::Parquet => "parquet",
            Written::Csv => "csv",
        }
    }
}

/// Recode every source row (`recode` per QI) into a table of a fresh database
/// at `path` (the detach is timed too, as it writes the table out), or a
/// file there. Returns the rows written.
pub(super) fn write(
    conn: &Connection,
    job: &Job,
    columns: &[SourceColumn],
    qis: &[String],
    recode: &[Recode],
    path: &Path,
    kind: Written,
) -> Result<i64> {
    let select =
        list(columns.iter().filter(|c| !job.output.drop.iter().any(|d| d.name == c.name)), ", ", |c| {
            match qis.iter().position(|q| *q == c.name) {
                Some(a) => match &recode[a] {
                    Recode::Expression(e) => format!("{e} AS {}", ident(&c.name)),
                    Recode::Map => format!("m{a}.label AS {}", ident(&c.name)),
                },
                None => format!("s.{}", ident(&c.name)),
            }
        });
    let joins = list(qis.iter().enumerate().filter(|(a, _)| matches!(recode[*a], Recode::Map)), " ", |(a, q)| {
        format!("JOIN {} m{a} ON s.{} IS NOT DISTINCT FROM m{a}.n", map_table(a), ident(q))
    });
    match kind {
        Written::Parquet => to_file(conn, &select, &joins, &path.with_extension("parquet"), "FORMAT PARQUET"),
        Written::Csv => to_file(conn, &select, &joins, &path.with_extension("csv"), "FORMAT CSV, HEADER"),
        Written::Table => to_table(conn, &select, &joins, &path.with_extension("duckdb")),
    }
}

/// The write as a Parquet or CSV `file`; its rows read back.
fn to_file(conn: &Connection, select: &str, joins: &str, file: &Path, format: &str) -> Result<i64> {
    let path = literal(&file.to_string_lossy());
    conn.execute_batch(&render(
        fragment(sql::LIMIT, "copy"),
        &[("columns", select), ("joins", joins), ("path", &path), ("format", format)],
    ))
    .context("recoding and writing the source")?;
    let count = if file.extension().is_some_and(|e| e == "parquet") { "count_parquet" } else { "count_csv" };
    Ok(conn.query_row(&render(fragment(sql::LIMIT, count), &[("path", &path)]), [], |r| r.get(0))?)
}

/// The write as a table of the fresh database `db`; its rows counted.
fn to_table(conn: &Connection, select: &str, joins: &str, db: &Path) -> Result<i64> {
    let scratch = ident(SCRATCH);
    let target = format!("{scratch}.main.release");
    let path = literal(&db.to_string_lossy());
    conn.execute_batch(&render(fragment(sql::LIMIT, "attach"), &[("path", &path), ("db", &scratch)]))
        .with_context(|| format!("opening scratch database {}", db.display()))?;
    conn.execute_batch(&render(
        fragment(sql::LIMIT, "write"),
        &[("target", &target), ("columns", select), ("joins", joins)],
    ))
    .context("recoding and writing the source")?;
    let rows: i64 =
        conn.query_row(&render(fragment(sql::LIMIT, "count_table"), &[("table", &target)]), [], |r| r.get(0))?;
    conn.execute_batch(&render(fragment(sql::LIMIT, "detach"), &[("db", &scratch)]))
        .context("writing the scratch database")?;
    Ok(rows)
}
