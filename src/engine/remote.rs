//! The engines a source can live in besides the embedded DuckDB, behind one
//! seam: Spark ([`crate::engine::spark`]) and PostgreSQL ([`crate::engine::postgres`]). The
//! scans run there (`fetch` brings their results into a local DuckDB
//! table), small local tables go there (`share`), and the release is one
//! statement of joins written there (`write_table`); everything else runs
//! locally as for any other source. An engine is one module implementing
//! [`RemoteEngine`], connected in [`crate::engine::connect`], with its row in
//! the plan's table of what each engine runs ([`crate::anonymize::plan`]).

use crate::engine::commit::BeforeCommit;
use crate::engine::embedded::SourceColumn;
use crate::job::Job;
use anyhow::Result;
use duckdb::Connection;

/// The job's remote engine, connected.
pub(crate) type Remote = Box<dyn RemoteEngine>;

/// What kanon asks of an engine that holds the source.
pub(crate) trait RemoteEngine {
    /// The engine's name in messages.
    fn name(&self) -> &'static str;

    /// The prefix of a column type the engine has and kanon does not read.
    fn unread(&self) -> &'static str;

    /// The join condition of a source value and a map's value (NULL matching
    /// NULL), as the engine runs it fast; `duckdb_type` the column's type,
    /// `nullable` whether the column has NULLs (its marginal does).
    fn same_value(&self, left: &str, right: &str, duckdb_type: &str, nullable: bool) -> String;

    /// The source as the view `kanon_source` there; its columns as DuckDB types.
    fn open_source(&self, job: &Job) -> Result<Vec<SourceColumn>>;

    /// The engine's table `name` as the view `view` there; its columns as
    /// DuckDB types, or None when there is no such table.
    fn open_table(&self, name: &str, view: &str) -> Result<Option<Vec<SourceColumn>>>;

    /// Run `select` there; its rows into the local temp table `target`.
    fn fetch(&self, conn: &Connection, select: &str, target: &str) -> Result<u64>;

    /// The rows of the local query `select` there, as `name`.
    fn share(&self, conn: &Connection, select: &str, params: &[i64], name: &str) -> Result<()>;

    /// `select` written as the release table `table`, swapped in; the rows.
    /// `before_commit` runs in PostgreSQL's transaction; on Spark, whose
    /// catalog has none, just after the swap, which is undone if it fails.
    fn write_table(&self, table: &str, select: &str, before_commit: Option<&BeforeCommit>) -> Result<u64>;

    /// The pseudonymization key's padded keys there as the one-row relation
    /// `kanon_release_key` (inner, outer: hex), sent as data; returns the SQL
    /// of a column's pseudonym, HMAC-SHA-256 from its definition (no engine
    /// has HMAC; each has SHA-256), reading `kk`.
    fn share_key(&self, key: &crate::pseudonym::Key) -> Result<fn(&str) -> String>;

    /// The run history's table there (quoted), None when it has none yet.
    fn history(&self, job: &Job) -> Result<Option<String>>;

    /// Does the release leave the suppressed classes out by their rows'
    /// source values rather than their labels, when the classes are there?
    /// PostgreSQL computes a label twice in an anti-join on labels (its key,
    /// then the row: 10M rows, 10.1 s against 7.6 s once); Spark once.
    fn anti_join_on_values(&self) -> bool {
        false
    }

    /// A statement or expression as this engine spells it: the section
    /// `name` of its `sql/<engine>.sql`, slots unfilled.
    fn spelling(&self, name: &str) -> &'static str;

    /// `select` there as the work table `name` (unqualified, as `share`'s
    /// names are), replaced: read many times by kanon and dropped by it
    /// ([`Self::drop_work`]) or with the session. Spark writes a Parquet
    /// table of the run's own name; PostgreSQL an unlogged
    /// table in the run's work schema, which the planner may scan in
    /// parallel (a temp table it may not).
    /// `work`: how it is read and grouped ([`WorkUse`]).
    /// Its rows, where the engine tells them as it writes (PostgreSQL).
    fn create_work(&self, name: &str, select: &str, work: WorkUse) -> Result<Option<u64>>;

    /// Drop the work table `name`, if there is one.
    fn drop_work(&self, name: &str) -> Result<()>;

    /// `select` written as a table beside the release `table`, as the
    /// release is written (Spark: a Parquet table of its catalog;
    /// PostgreSQL: a table in the release's schema, committed), then
    /// dropped; the rows. What `kanon limit` times on the engine.
    fn write_scratch(&self, table: &str, select: &str) -> Result<u64>;
}

/// What a work table is to its engine ([`RemoteEngine::create_work`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct WorkUse {
    /// Its `GROUP BY` may keep about as many groups as it reads rows: each
    /// worker's partial hash aggregate then saves nothing, and one process
    /// hashes every row, spilling. PostgreSQL groups it by sorting, the
    /// sorts in parallel (10M near-unique rows, 2 workers: 14 s against 19 s).
    pub near_unique: bool,
    /// It joins a large table to a small one on keys computed from the large
    /// one's codes. PostgreSQL, with no statistics for such keys, prices the
    /// hash join at its worst and sorts the large side to merge instead (10M
    /// base rows: 4.7 s against 1.5 s); it is told to hash.
    pub probes_small: bool,
}

/// Every row of a local query, each cell as a DuckDB value: what a remote
/// engine sent back ([`RemoteEngine::fetch`]), read by the engine evaluator
/// and the engine's check.
pub(crate) fn read_rows(conn: &Connection, select: &str) -> Result<Vec<Vec<duckdb::types::Value>>> {
    let mut stmt = conn.prepare(select)?;
    let width = stmt.column_count();
    let mut rows = stmt.query([])?;
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        out.push((0..width).map(|i| r.get::<_, duckdb::types::Value>(i)).collect::<duckdb::Result<Vec<_>>>()?);
    }
    Ok(out)
}
