//! `[source]`: where the rows come from.

use super::cross_section;
use super::engine::EngineKind;
use super::names::local_table;
use super::text::JobText;
use anyhow::Result;
use serde::Deserialize;
use std::path::PathBuf;

/// Where the rows come from.
#[derive(Debug, Clone, PartialEq)]
pub enum SourceSpec {
    Database {
        path: PathBuf,
        table: String,
    },
    Csv {
        path: PathBuf,
        delimiter: Option<String>,
    },
    Parquet {
        path: PathBuf,
    },
    /// On the Spark engine: a table of Spark's catalog (dot-separated parts).
    SparkTable {
        name: String,
    },
    /// On the Spark engine: a Parquet path as Spark reads it (kept verbatim).
    SparkParquet {
        path: String,
    },
    /// On the PostgreSQL engine: a table (`schema.table`, dot-separated parts).
    PostgresTable {
        name: String,
    },
}

impl SourceSpec {
    /// The source for messages: its file, and the table in it.
    pub(crate) fn describe(&self) -> String {
        match self {
            SourceSpec::Database { path, table } => format!("table \"{table}\" of {}", path.display()),
            SourceSpec::Csv { path, .. } | SourceSpec::Parquet { path } => path.display().to_string(),
            SourceSpec::SparkTable { name } => format!("Spark table \"{name}\""),
            SourceSpec::SparkParquet { path } => format!("Spark parquet {path}"),
            SourceSpec::PostgresTable { name } => format!("PostgreSQL table \"{name}\""),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSource {
    pub(super) database: Option<String>,
    pub(super) table: Option<String>,
    pub(super) csv: Option<String>,
    pub(super) parquet: Option<String>,
    pub(super) delimiter: Option<String>,
}

pub(super) fn parse(raw: &RawSource, kind: &EngineKind, job: &JobText) -> Result<SourceSpec> {
    let at = job.section("source");
    let source = match cross_section::source_on_server(raw, kind, &at)? {
        Some(source) => source,
        None => match (&raw.database, &raw.csv, &raw.parquet) {
            (Some(db), None, None) => {
                let table = raw.table.as_deref().ok_or_else(|| at.bad("database needs a table"))?;
                let table = local_table(table).map_err(|m| at.bad(format_args!("table {m}")))?;
                SourceSpec::Database { path: job.resolve(db), table }
            }
            (None, Some(csv), None) => SourceSpec::Csv { path: job.resolve(csv), delimiter: raw.delimiter.clone() },
            (None, None, Some(pq)) => SourceSpec::Parquet { path: job.resolve(pq) },
            _ => return Err(at.bad("needs exactly one of database (with table), csv or parquet")),
        },
    };
    if raw.delimiter.is_some() && !matches!(source, SourceSpec::Csv { .. }) {
        return Err(at.bad("delimiter applies to csv only"));
    }
    if raw.table.is_some()
        && !matches!(
            source,
            SourceSpec::Database { .. } | SourceSpec::SparkTable { .. } | SourceSpec::PostgresTable { .. }
        )
    {
        return Err(at.bad("table applies to a database source only"));
    }
    Ok(source)
}
