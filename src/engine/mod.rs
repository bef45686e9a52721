//! Where the data lives: embedded DuckDB (always: kanon's own work tables),
//! and the remote engines a job may name (Spark, PostgreSQL), with the commit
//! that makes a release and its history row visible together. [`open`] is
//! the one place a job's source is opened, wherever it lives; a new engine
//! is a module implementing [`remote::RemoteEngine`], a row in [`connect`],
//! and its row in the plan's table ([`crate::anonymize::plan`]).

pub(crate) mod commit;
pub(crate) mod embedded;
pub(crate) mod history;
pub mod postgres;
pub(crate) mod remote;
pub mod spark;
pub mod types;

use crate::job::{EngineKind, Job};
use anyhow::Result;
use duckdb::Connection;
use embedded::SourceColumn;
use remote::Remote;

/// Connect to the job's remote engine, if it names one. Nothing is changed
/// there: `kanon check` and `kanon history` connect so too.
pub(crate) fn connect(job: &Job) -> Result<Option<Remote>> {
    Ok(match &job.engine.kind {
        EngineKind::DuckDb => None,
        EngineKind::Spark(url) => Some(Box::new(spark::Spark::connect(job, url)?)),
        EngineKind::Postgres(url) => Some(Box::new(postgres::Postgres::connect(job, url)?)),
    })
}

/// A job's source, opened: the local DuckDB kanon works in, the source's
/// columns (as DuckDB types), and the remote engine that holds it, if any.
pub(crate) struct Opened {
    pub(crate) conn: Connection,
    pub(crate) columns: Vec<SourceColumn>,
    /// The position column of `kanon_source_rows` (embedded, with positions only).
    pub(crate) position: Option<String>,
    pub(crate) remote: Option<Remote>,
}

/// Open the job's source wherever it lives as the view `kanon_source` (on a
/// remote engine, there), with a local DuckDB beside it. With `positions`,
/// also `kanon_source_rows` ([`embedded::open_with`]): the plan runs those
/// passes on the embedded engine only.
pub(crate) fn open(job: &Job, positions: bool) -> Result<Opened> {
    Ok(match connect(job)? {
        None => {
            let (conn, columns, position) = embedded::open_with(job, positions)?;
            Opened { conn, columns, position, remote: None }
        }
        Some(remote) => {
            let columns = remote.open_source(job)?;
            Opened { conn: embedded::open_local(&job.engine)?, columns, position: None, remote: Some(remote) }
        }
    })
}
