//! Publishing a release atomically: the statement into a temporary table
//! renamed over the output in one transaction, then copied to the job's CSV /
//! Parquet files (each written under a temporary name, renamed into place);
//! with no table, each file streamed straight from the source. Nothing is left
//! behind on failure.

use super::functions::Calls;
use super::Written;
use crate::engine::embedded::{self, statement, SourceColumn, OUT};
use crate::job::{Job, OutputSpec};
use crate::sql::{self, ident, list, literal, render};
use anyhow::{Context, Result};
use duckdb::Connection;
use std::path::{Path, PathBuf};

/// The release statement from `calls` over `relation`, published to `out`.
pub(super) fn write_select(
    conn: &Connection,
    job: &Job,
    out: &OutputSpec,
    columns: &[SourceColumn],
    calls: &Calls,
    relation: &str,
    before_commit: Option<&super::BeforeCommit>,
) -> Result<Written> {
    let qis = job.qi_names();
    let pseudonym = match (&out.key, out.pseudonymize.is_empty()) {
        (_, true) => None,
        (Some(key), false) => Some(super::functions::register_pseudonym(conn, key)?),
        (None, false) => anyhow::bail!("[output] pseudonymize without a key"),
    };
    let select = list(columns.iter().filter(|c| !out.drop.iter().any(|d| d.name == c.name)), ", ", |c| {
        let name = ident(&c.name);
        match (qis.iter().position(|q| *q == c.name), &pseudonym) {
            (Some(a), _) => format!("{} AS {name}", calls.labels[a]),
            (None, Some(p)) if out.pseudonymize.iter().any(|q| q.name == c.name) => {
                format!("{} AS {name}", p(&format!("s.{name}")))
            }
            (None, _) => format!("s.{name}"),
        }
    });
    let select = render(
        sql::RELEASE_SELECT,
        &[("columns", &select), ("groups", &calls.groups.join(", ")), ("kept", &calls.kept), ("relation", relation)],
    );
    let copies: Vec<(&PathBuf, &str)> =
        [(out.csv.as_ref(), "FORMAT CSV, HEADER"), (out.parquet.as_ref(), "FORMAT PARQUET")]
            .into_iter()
            .filter_map(|(p, f)| p.map(|p| (p, f)))
            .collect();
    let Some(table) = &out.table else {
        return write_files(conn, &select, &copies);
    };
    let created = embedded::attach_output(conn, job, table, false)?;
    let result = write_table(conn, &table.name, &select, &copies, before_commit);
    if result.is_err() && created {
        let _ = conn.execute_batch(&statement("detach", &[("catalog", &ident(OUT))]));
        let _ = std::fs::remove_file(&table.database);
        let _ = std::fs::remove_file(PathBuf::from(format!("{}.wal", table.database.display())));
    }
    result
}

fn tmp_path(p: &Path) -> PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push(".kanon-tmp");
    PathBuf::from(s)
}

/// Run `copy` (which writes each file under its [`tmp_path`]), then rename
/// every file into place; on failure remove the temporary files.
fn publish_files(copies: &[(&PathBuf, &str)], copy: impl FnOnce() -> Result<u64>) -> Result<Written> {
    match copy() {
        Ok(rows) => {
            for (path, _) in copies {
                std::fs::rename(tmp_path(path), path).with_context(|| format!("writing {}", path.display()))?;
            }
            Ok(Written { rows })
        }
        Err(e) => {
            for (path, _) in copies {
                let _ = std::fs::remove_file(tmp_path(path));
            }
            Err(e)
        }
    }
}

fn copy_to(conn: &Connection, relation: &str, path: &Path, format: &str) -> Result<u64> {
    let rows: i64 = conn
        .query_row(
            &statement(
                "copy_to",
                &[("relation", relation), ("path", &literal(&tmp_path(path).to_string_lossy())), ("format", format)],
            ),
            [],
            |r| r.get(0),
        )
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(rows as u64)
}

/// No table: each file is one streaming pass over the source (a second file
/// is a second pass, cheaper than holding the release).
fn write_files(conn: &Connection, select: &str, copies: &[(&PathBuf, &str)]) -> Result<Written> {
    publish_files(copies, || {
        let t = std::time::Instant::now();
        let mut rows = None;
        for (path, format) in copies {
            let n = copy_to(conn, &format!("({select})"), path, format)?;
            crate::trace(|| format!("release {}: {:.3}s", path.display(), t.elapsed().as_secs_f64()));
            if rows.is_some_and(|r| r != n) {
                anyhow::bail!("the release passes wrote {} and {n} rows", rows.unwrap_or(0));
            }
            rows = Some(n);
        }
        Ok(rows.unwrap_or(0))
    })
}

fn write_table(
    conn: &Connection,
    table: &str,
    select: &str,
    copies: &[(&PathBuf, &str)],
    before_commit: Option<&super::BeforeCommit>,
) -> Result<Written> {
    let final_name = format!("{}.main.{}", ident(OUT), ident(table));
    let tmp_name = format!("{}.main.{}", ident(OUT), ident(&format!("{table}__kanon_tmp")));
    let run = || -> Result<u64> {
        let t = std::time::Instant::now();
        let trace = |what: &str| crate::trace(|| format!("release {what}: {:.3}s", t.elapsed().as_secs_f64()));
        conn.execute_batch(&statement("begin", &[]))?;
        conn.execute_batch(&statement("drop_if_exists", &[("table", &tmp_name)]))?;
        conn.execute_batch(&statement("create_as", &[("table", &tmp_name), ("select", select)]))
            .context("writing the release")?;
        trace("table");
        let rows: i64 = conn.query_row(&statement("count", &[("relation", &tmp_name)]), [], |r| r.get(0))?;
        for (path, format) in copies {
            copy_to(conn, &tmp_name, path, format)?;
        }
        conn.execute_batch(&statement("drop_if_exists", &[("table", &final_name)]))?;
        conn.execute_batch(&statement("rename", &[("from", &tmp_name), ("to", &ident(table))]))?;
        if let Some(f) = before_commit {
            f(super::CommitTarget::DuckDb(conn), rows as u64)?;
        }
        trace("copies, rename");
        conn.execute_batch(&statement("commit", &[]))?;
        trace("commit");
        Ok(rows as u64)
    };
    publish_files(copies, || {
        run().inspect_err(|_| {
            let _ = conn.execute_batch(&statement("rollback", &[]));
        })
    })
}
