//! The release's fingerprint, as ARX's certificate gives one: the SHA-256 of
//! each released file, and for a table its row count and an order-independent
//! checksum (the sum of every row's 64-bit hash, as the engine hashes it).

use crate::engine::embedded::{self, OUT};
use crate::engine::remote::{read_rows, RemoteEngine};
use crate::job::Job;
use crate::sql::{ident, list, render};
use anyhow::{Context, Result};
use duckdb::Connection;
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::path::Path;

/// One released file or table.
#[derive(Debug, Serialize)]
pub(crate) struct Fingerprint {
    pub(crate) what: String,
    /// How the value was computed.
    pub(crate) method: String,
    pub(crate) rows: Option<super::Figure>,
    pub(crate) value: String,
}

/// The SHA-256 of a file, streamed.
pub(crate) fn file(path: &Path) -> Result<Fingerprint> {
    let mut f = std::fs::File::open(path).with_context(|| format!("reading {} for its SHA-256", path.display()))?;
    let mut hash = Sha256::new();
    std::io::copy(&mut f, &mut hash).with_context(|| format!("reading {} for its SHA-256", path.display()))?;
    Ok(Fingerprint {
        what: path.display().to_string(),
        method: "SHA-256 of the file".into(),
        rows: None,
        value: format!("{:x}", hash.finalize()),
    })
}

/// A DuckDB relation of `conn`: its rows and checksum.
pub(crate) fn local(conn: &Connection, relation: &str, what: String) -> Result<Fingerprint> {
    let columns = embedded::relation_columns(conn, relation)?;
    let q = embedded::statement(
        "fingerprint",
        &[("relation", relation), ("cols", &list(&columns, ", ", |c| ident(&c.name)))],
    );
    let (rows, checksum): (i64, String) =
        conn.query_row(&q, [], |r| Ok((r.get(0)?, r.get(1)?))).with_context(|| format!("the checksum of {what}"))?;
    Ok(table(what, rows as u64, checksum, "DuckDB"))
}

/// A relation on a remote engine (a view there), with its columns: its rows
/// and checksum, measured there.
pub(crate) fn remote(
    conn: &Connection,
    engine: &dyn RemoteEngine,
    relation: &str,
    columns: &[String],
    what: String,
) -> Result<Fingerprint> {
    let cols = list(columns, ", ", |c| ident(c));
    let q = render(engine.spelling("fingerprint"), &[("relation", relation), ("cols", &cols)]);
    engine.fetch(conn, &q, "kanon_fingerprint").with_context(|| format!("the checksum of {what}"))?;
    let rows = read_rows(conn, &embedded::statement("select_all", &[("relation", "kanon_fingerprint")]))?;
    let (n, checksum) = match rows.first().map(|r| (r.first(), r.get(1))) {
        Some((Some(n), Some(c))) => (integer(n), text(c)),
        _ => anyhow::bail!("the checksum of {what}: no row came back"),
    };
    Ok(table(what, n, checksum, engine.name()))
}

fn table(what: String, rows: u64, checksum: String, engine: &str) -> Fingerprint {
    Fingerprint {
        what,
        method: format!("rows, and the sum of every row's 64-bit hash ({engine}): independent of row order"),
        rows: Some(super::format::count("rows", rows)),
        value: checksum,
    }
}

fn integer(v: &duckdb::types::Value) -> u64 {
    use duckdb::types::Value as V;
    match v {
        V::BigInt(x) => *x as u64,
        V::Int(x) => *x as u64,
        V::HugeInt(x) => *x as u64,
        V::UBigInt(x) => *x,
        V::Text(t) => t.parse().unwrap_or_default(),
        _ => 0,
    }
}

fn text(v: &duckdb::types::Value) -> String {
    use duckdb::types::Value as V;
    match v {
        V::Text(t) => t.clone(),
        V::BigInt(x) => x.to_string(),
        V::HugeInt(x) => x.to_string(),
        other => format!("{other:?}"),
    }
}

/// Every place the job's release went: files by SHA-256, a table by checksum.
pub(crate) fn release(job: &Job, conn: &Connection, engine: Option<&dyn RemoteEngine>) -> Result<Vec<Fingerprint>> {
    let out = &job.output;
    let mut prints = Vec::new();
    if let (Some(table), Some(engine)) = (&out.remote_table, engine) {
        let view = "kanon_fingerprint_release";
        let columns = engine.open_table(table, view)?.with_context(|| format!("the release table {table}"))?;
        let names: Vec<String> = columns.into_iter().map(|c| c.name).collect();
        prints.push(remote(conn, engine, view, &names, format!("{} table {table}", engine.name()))?);
    }
    if let Some(t) = &out.table {
        embedded::attach_output(conn, job, t, true)?;
        let relation = format!("{}.main.{}", ident(OUT), ident(&t.name));
        prints.push(local(conn, &relation, format!("table {} of {}", t.name, t.database.display()))?);
    }
    for path in [&out.csv, &out.parquet].into_iter().flatten() {
        prints.push(file(path)?);
    }
    Ok(prints)
}

/// The table `kanon check` audited: `relation` of `conn`, or on a remote
/// engine the view there (the source's, or the audited `table`'s).
pub(crate) fn audited(
    conn: &Connection,
    engine: Option<&dyn RemoteEngine>,
    table: Option<&str>,
    relation: &str,
    source_columns: &[embedded::SourceColumn],
) -> Result<Fingerprint> {
    let what = table.map_or_else(|| "the source".to_string(), |t| format!("table {t}"));
    let Some(engine) = engine else {
        return local(conn, relation, what);
    };
    let columns = match table {
        None => source_columns.to_vec(),
        Some(t) => engine.open_table(t, relation)?.with_context(|| format!("table {t}"))?,
    };
    let names: Vec<String> = columns.into_iter().map(|c| c.name).collect();
    remote(conn, engine, relation, &names, format!("{} {what}", engine.name()))
}
