//! Writing the release: a recoding applied to the source in one plain-SQL
//! scan, into a temporary table renamed over the output in the same
//! transaction.
//!
//! A recoding is small tables: per QI a value map (`kanon_release_map_{a}`:
//! `n`, the value as the source has it; `code`, its group; `label`), and either
//! - [`Recoding::FullDomain`]: every class of a QI's group gets the group's
//!   label; `kanon_release_suppressed` (`c0..`) lists the classes dropped.
//!   [`full_domain_map`] builds it for a node;
//! - [`Recoding::PerClass`]: `kanon_release_classes` (`c0..`, `lab0..`) lists
//!   the kept classes, each with its own label per QI (cell-based recodings).

use crate::database::{self, SourceColumn, OUT};
use crate::hierarchy::{code_table, dim_table, node_table};
use crate::job::Job;
use crate::metrics::Requirement;
use crate::sql::{self, ident, list, literal, render};
use anyhow::{Context, Result};
use duckdb::Connection;
use std::path::{Path, PathBuf};

/// Value map table of QI `a`: `n` (value as in the source) → `code`, `label`.
pub fn value_map(a: usize) -> String {
    format!("kanon_release_map_{a}")
}

/// Which tables beside the value maps say what is kept and how it is labelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recoding {
    /// Labels from the value maps; `kanon_release_suppressed` is dropped.
    FullDomain,
    /// Only the classes of `kanon_release_classes` are kept, with its labels.
    PerClass,
}

/// Build the recoding for a full-domain node: per QI, value → code and label
/// at the node's level; the classes `req` suppresses.
pub fn full_domain_map(conn: &Connection, levels: &[u8], req: &Requirement, sensitive: bool) -> Result<Recoding> {
    let n = levels.len();
    let div = crate::hierarchy::divisors(conn, n)?;
    for (a, &l) in levels.iter().enumerate() {
        conn.execute_batch(&render(
            sql::fragment(sql::RELEASE_MAP, "value_map"),
            &[
                ("map", &value_map(a)),
                ("code", &format!("c{l}")),
                ("codes", &code_table(a)),
                ("dim", &dim_table(a)),
                ("nodes", &node_table(a)),
                ("level", &l.to_string()),
            ],
        ))?;
    }
    let q = render(
        sql::fragment(sql::RELEASE_MAP, "suppressed"),
        &[
            // BIGINT like the value maps' codes: the anti-join then compares without a cast per row.
            ("classes", &list(0..n, ", ", |a| format!("(p.g{a} // {})::BIGINT AS c{a}", div[a][levels[a] as usize]))),
            ("ldiv", if sensitive { "count(DISTINCT p.s)" } else { "0" }),
            ("class_cols", &list(0..n, ", ", |a| format!("c.c{a}"))),
        ],
    );
    conn.execute(&q, duckdb::params![req.k as i64, req.l.unwrap_or(0) as i64])?;
    Ok(Recoding::FullDomain)
}

/// What was written.
#[derive(Debug, Clone)]
pub struct Written {
    pub rows: u64,
}

/// Apply the recoding to the source and publish the result atomically:
/// the table, then its file copies. Nothing is left behind on failure.
pub fn write(conn: &Connection, job: &Job, columns: &[SourceColumn], recoding: Recoding) -> Result<Written> {
    let qis = job.qi_names();
    let created = database::attach_output(conn, job, false)?;
    let result = write_attached(conn, job, columns, &qis, recoding);
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

fn write_attached(
    conn: &Connection,
    job: &Job,
    columns: &[SourceColumn],
    qis: &[String],
    recoding: Recoding,
) -> Result<Written> {
    let out = &job.output;
    let select = list(columns.iter().filter(|c| !out.drop.iter().any(|d| d.name == c.name)), ", ", |c| {
        let name = ident(&c.name);
        match (qis.iter().position(|q| *q == c.name), recoding) {
            (Some(a), Recoding::FullDomain) => format!("m{a}.label AS {name}"),
            (Some(a), Recoding::PerClass) => format!("r.lab{a} AS {name}"),
            (None, _) => format!("s.{name}"),
        }
    });
    let statement = match recoding {
        Recoding::FullDomain => "full_domain",
        Recoding::PerClass => "per_class",
    };
    let value_joins = list(qis.iter().enumerate(), " ", |(a, q)| {
        format!("JOIN {} m{a} ON s.{} IS NOT DISTINCT FROM m{a}.n", value_map(a), ident(q))
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
            sql::fragment(sql::RELEASE_WRITE, statement),
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
