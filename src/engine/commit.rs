//! What runs just before a release commits, in its transaction (the run
//! history's row, [`crate::engine::history`]), and where that is: a module of its
//! own so the engines and the history meet here without importing each other.

use anyhow::Result;
use spark_connect::row::Value;
use spark_connect::types::DataType;

/// The table the run history lives in, beside the release (named here so
/// the engines refuse a release of that name without importing the history).
pub const RUNS: &str = "kanon_runs";

/// An engine session that appends one row of typed values to a table it
/// creates when missing (Spark: the values go as data, never as SQL text).
pub trait AppendRow {
    fn append_row(&self, table: &str, create: &str, row: Vec<(&str, Value, DataType)>) -> Result<()>;
}

/// Where a release is about to commit: the DuckDB connection (the output
/// database attached) or the PostgreSQL transaction, with the schema the
/// release went to; on Spark, whose catalog has no transaction, the session
/// just after the swap (undone if this fails).
pub enum CommitTarget<'a, 'b> {
    DuckDb(&'a duckdb::Connection),
    Postgres { tx: &'a mut postgres::Transaction<'b>, schema: &'a str },
    Spark(&'a dyn AppendRow),
}

/// Run inside the release's transaction, just before it commits, with the rows written.
pub type BeforeCommit<'a> = dyn Fn(CommitTarget, u64) -> Result<()> + 'a;
