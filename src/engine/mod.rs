//! Where the data lives: embedded DuckDB (always: kanon's own work tables),
//! and the remote engines a job may name (Spark, PostgreSQL), with the commit
//! that makes a release and its history row visible together.

pub mod commit;
pub mod embedded;
pub mod history;
pub mod postgres;
pub mod remote;
pub mod spark;
