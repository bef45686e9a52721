//! The engines a source can live in besides the embedded DuckDB, behind one
//! seam: Spark ([`crate::engine::spark`]) and PostgreSQL ([`crate::engine::postgres`]). The
//! scans run there (`fetch` brings their results into a local DuckDB
//! table), small local tables go there (`share`), and the release is one
//! statement of joins written there (`write_table`); everything else runs
//! locally as for any other source. What differs by engine is spelled in its
//! own module; this enum only routes.

use crate::engine::embedded::SourceColumn;
use crate::engine::postgres::Postgres;
use crate::engine::spark::Spark;
use crate::job::{EngineKind, Job};
use anyhow::Result;
use duckdb::Connection;

pub enum Remote {
    Spark(Spark),
    Postgres(Postgres),
}

impl Remote {
    /// Connect to the job's remote engine, if it names one. Nothing is
    /// changed there: `kanon check` connects so too.
    pub fn connect(job: &Job) -> Result<Option<Remote>> {
        Ok(match &job.engine.kind {
            EngineKind::DuckDb => None,
            EngineKind::Spark(url) => Some(Remote::Spark(Spark::connect(job, url)?)),
            EngineKind::Postgres(url) => Some(Remote::Postgres(Postgres::connect(job, url)?)),
        })
    }

    /// The join condition of a source value and a map's value (NULL matching
    /// NULL), as the engine runs it fast; `duckdb_type` the column's type,
    /// `nullable` whether the column has NULLs (its marginal does).
    pub fn same_value(&self, left: &str, right: &str, duckdb_type: &str, nullable: bool) -> String {
        match self {
            Remote::Spark(_) => format!("{left} IS NOT DISTINCT FROM {right}"),
            Remote::Postgres(_) => crate::engine::postgres::same_value(left, right, duckdb_type, nullable),
        }
    }

    /// The engine's name in messages.
    pub fn name(&self) -> &'static str {
        match self {
            Remote::Spark(_) => "Spark",
            Remote::Postgres(_) => "PostgreSQL",
        }
    }

    /// The source as the view `kanon_source` there; its columns as DuckDB types.
    pub fn open_source(&self, job: &Job) -> Result<Vec<SourceColumn>> {
        match self {
            Remote::Spark(s) => s.open_source(job),
            Remote::Postgres(p) => p.open_source(job),
        }
    }

    /// The engine's table `name` as the view `view` there; its columns as
    /// DuckDB types, or None when there is no such table.
    pub fn open_table(&self, name: &str, view: &str) -> Result<Option<Vec<SourceColumn>>> {
        match self {
            Remote::Spark(s) => s.open_table(name, view),
            Remote::Postgres(p) => p.open_table(name, view),
        }
    }

    /// The prefix of a column type the engine has and kanon does not read.
    pub fn unread(&self) -> &'static str {
        match self {
            Remote::Spark(_) => crate::engine::spark::UNREAD,
            Remote::Postgres(_) => crate::engine::postgres::UNREAD,
        }
    }

    /// Run `select` there; its rows into the local temp table `target`.
    pub fn fetch(&self, conn: &Connection, select: &str, target: &str) -> Result<u64> {
        match self {
            Remote::Spark(s) => s.fetch(conn, select, target),
            Remote::Postgres(p) => p.fetch(conn, select, target),
        }
    }

    /// The rows of the local query `select` there, as `name`.
    pub fn share(&self, conn: &Connection, select: &str, params: &[i64], name: &str) -> Result<()> {
        match self {
            Remote::Spark(s) => s.share(conn, select, params, name),
            Remote::Postgres(p) => p.share(conn, select, params, name),
        }
    }

    /// `select` written as the release table `table`, swapped in; the rows.
    /// `before_commit` runs in PostgreSQL's transaction; on Spark, whose
    /// catalog has none, just after the swap, which is undone if it fails.
    pub fn write_table(
        &self,
        table: &str,
        select: &str,
        before_commit: Option<&crate::engine::commit::BeforeCommit>,
    ) -> Result<u64> {
        match self {
            Remote::Spark(s) => s.write_table(table, select, before_commit),
            Remote::Postgres(p) => p.write_table(table, select, before_commit),
        }
    }

    /// The pseudonymization key's padded keys there as the one-row relation
    /// `kanon_release_key` (inner, outer: hex), sent as data; returns the SQL
    /// of a column's pseudonym, HMAC-SHA-256 from its definition (neither
    /// engine has HMAC; both have SHA-256), reading `kk`.
    pub fn share_key(&self, key: &crate::pseudonym::Key) -> Result<fn(&str) -> String> {
        let (inner, outer) = key.pads_hex();
        let row = [("inner", inner), ("outer", outer)];
        Ok(match self {
            Remote::Spark(s) => {
                s.share_secret_row("kanon_release_key", &row)?;
                |column| {
                    format!(
                        "sha2(concat(unhex(kk.outer), unhex(sha2(concat(unhex(kk.inner), encode(CAST({column} AS STRING), 'UTF-8')), 256))), 256)"
                    )
                }
            }
            Remote::Postgres(p) => {
                p.share_secret_row("kanon_release_key", &row)?;
                |column| {
                    format!(
                        "encode(sha256(decode(kk.outer, 'hex') || sha256(decode(kk.inner, 'hex') || convert_to(CAST({column} AS TEXT), 'UTF8'))), 'hex')"
                    )
                }
            }
        })
    }
}
