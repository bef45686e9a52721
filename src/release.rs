//! Writing the release: a recoding (per QI a small value → code map, and the
//! kept classes by code with their released labels) applied to the source in
//! one plain-SQL scan, into a temporary table renamed over the output in the
//! same transaction.
//!
//! Full-domain nodes build the recoding with [`full_domain_map`]; recodings that
//! treat classes individually can fill the same tables (`kanon_release_map_{a}`:
//! `v`, `code`; `kanon_release_classes`: `c0..`, `lab0..`) and call [`write`].

use crate::database::{self, SourceColumn, OUT};
use crate::hierarchy::{dim_table, node_table};
use crate::job::Job;
use crate::metrics::Requirement;
use crate::sql::{self, ident, list, literal, render};
use anyhow::{Context, Result};
use duckdb::Connection;
use std::path::{Path, PathBuf};

/// Value map table of QI `a`: `v` (leaf as text) → `code`.
pub fn value_map(a: usize) -> String {
    format!("kanon_release_map_{a}")
}

/// Build the recoding for a full-domain node: per QI, leaf → code at the
/// node's level; the classes kept under `req` with their labels.
pub fn full_domain_map(conn: &Connection, levels: &[u8], req: &Requirement, sensitive: bool) -> Result<()> {
    let n = levels.len();
    let div = crate::hierarchy::divisors(conn, n)?;
    for (a, &l) in levels.iter().enumerate() {
        conn.execute_batch(&render(
            sql::fragment(sql::RELEASE_MAP, "value_map"),
            &[("map", &value_map(a)), ("code", &format!("c{l}")), ("dim", &dim_table(a))],
        ))?;
    }
    let q = render(
        sql::fragment(sql::RELEASE_MAP, "classes"),
        &[
            ("classes", &list(0..n, ", ", |a| format!("p.g{a} // {} AS c{a}", div[a][levels[a] as usize]))),
            ("ldiv", if sensitive { "count(DISTINCT p.s)" } else { "0" }),
            ("class_cols", &list(0..n, ", ", |a| format!("c.c{a}"))),
            ("labels", &list(0..n, ", ", |a| format!("n{a}.label AS lab{a}"))),
            (
                "label_joins",
                &list(0..n, " ", |a| {
                    format!("JOIN {} n{a} ON n{a}.level = {} AND n{a}.code = c.c{a}", node_table(a), levels[a])
                }),
            ),
        ],
    );
    conn.execute(&q, duckdb::params![req.k as i64, req.l.unwrap_or(0) as i64])?;
    Ok(())
}

/// What was written.
#[derive(Debug, Clone)]
pub struct Written {
    pub rows: u64,
}

/// Apply the recoding to the source and publish the result atomically:
/// the table, then its file copies. Nothing is left behind on failure.
pub fn write(conn: &Connection, job: &Job, columns: &[SourceColumn]) -> Result<Written> {
    let qis = job.qi_names();
    let created = database::attach_output(conn, job, false)?;
    let result = write_attached(conn, job, columns, &qis);
    if result.is_err() && created {
        let _ = conn.execute_batch(&format!("DETACH {}", ident(OUT)));
        let db = &job.output.database;
        let _ = std::fs::remove_file(db);
        let _ = std::fs::remove_file(PathBuf::from(format!("{}.wal", db.display())));
    }
    result
}

fn tmp_path(p: &Path) -> PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push(".kanon-tmp");
    PathBuf::from(s)
}

fn write_attached(conn: &Connection, job: &Job, columns: &[SourceColumn], qis: &[String]) -> Result<Written> {
    let out = &job.output;
    let select = list(columns.iter().filter(|c| !out.drop.iter().any(|d| d.name == c.name)), ", ", |c| {
        match qis.iter().position(|q| *q == c.name) {
            Some(a) => format!("r.lab{a} AS {}", ident(&c.name)),
            None => format!("s.{}", ident(&c.name)),
        }
    });
    let value_joins = list(qis.iter().enumerate(), " ", |(a, q)| {
        format!("JOIN {} m{a} ON CAST(s.{} AS VARCHAR) IS NOT DISTINCT FROM m{a}.v", value_map(a), ident(q))
    });
    let class_join = list(0..qis.len(), " AND ", |a| format!("r.c{a} = m{a}.code"));
    let row = ident(&database::order_column(columns));
    let final_name = format!("{}.main.{}", ident(OUT), ident(&out.table));
    let tmp_table = format!("{}__kanon_tmp", out.table);
    let tmp_name = format!("{}.main.{}", ident(OUT), ident(&tmp_table));
    let copies: Vec<(&PathBuf, &str)> =
        [(out.csv.as_ref(), "FORMAT CSV, HEADER"), (out.parquet.as_ref(), "FORMAT PARQUET")]
            .into_iter()
            .filter_map(|(p, f)| p.map(|p| (p, f)))
            .collect();
    let run = || -> Result<u64> {
        let t = std::time::Instant::now();
        let trace = |what: &str| crate::trace(|| format!("release {what}: {:.3}s", t.elapsed().as_secs_f64()));
        conn.execute_batch("BEGIN TRANSACTION")?;
        conn.execute_batch(&format!("DROP TABLE IF EXISTS {tmp_name}"))?;
        conn.execute_batch(&render(
            sql::RELEASE_WRITE,
            &[
                ("target", &tmp_name),
                ("columns", &select),
                ("value_joins", &value_joins),
                ("class_join", &class_join),
                ("row", &row),
            ],
        ))
        .context("writing the release")?;
        trace("table");
        let rows: i64 = conn.query_row(&format!("SELECT count(*) FROM {tmp_name}"), [], |r| r.get(0))?;
        for (path, format) in &copies {
            conn.execute_batch(&format!(
                "COPY {tmp_name} TO {} ({format})",
                literal(&tmp_path(path).to_string_lossy())
            ))
            .with_context(|| format!("writing {}", path.display()))?;
        }
        conn.execute_batch(&format!("DROP TABLE IF EXISTS {final_name}"))?;
        conn.execute_batch(&format!("ALTER TABLE {tmp_name} RENAME TO {}", ident(&out.table)))?;
        trace("copies, rename");
        conn.execute_batch("COMMIT")?;
        trace("commit");
        Ok(rows as u64)
    };
    match run() {
        Ok(rows) => {
            for (path, _) in &copies {
                std::fs::rename(tmp_path(path), path).with_context(|| format!("writing {}", path.display()))?;
            }
            Ok(Written { rows })
        }
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            for (path, _) in &copies {
                let _ = std::fs::remove_file(tmp_path(path));
            }
            Err(e)
        }
    }
}
