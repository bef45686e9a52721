//! What runs just before a release commits, in its transaction (the run
//! history's row, [`crate::history`]), and where that is: a module of its
//! own so the engines and the history meet here without importing each other.

use anyhow::Result;

/// Where a release is about to commit: the DuckDB connection (the output
/// database attached) or the PostgreSQL transaction, with the schema the
/// release went to; on Spark, whose catalog has no transaction, the session
/// just after the swap (undone if this fails).
pub enum CommitTarget<'a, 'b> {
    DuckDb(&'a duckdb::Connection),
    Postgres { tx: &'a mut postgres::Transaction<'b>, schema: &'a str },
    Spark(&'a crate::spark::Spark),
}

/// Run inside the release's transaction, just before it commits, with the rows written.
pub type BeforeCommit<'a> = dyn Fn(CommitTarget, u64) -> Result<()> + 'a;
