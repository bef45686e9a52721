//! `kanon init` (flags: `kanon help init`).
//!
//! Profiles a DuckDB table, a CSV or a Parquet file with DuckDB and writes a
//! starting job file that runs as it is: a built-in hierarchy for each column
//! that looks like a quasi-identifier, identifiers dropped, every choice
//! explained by a comment above it (docs/init.md). Never overwrites a file.

use crate::profile::{run as init, Options};
use anyhow::Result;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The source: a DuckDB database file (with --table, unless it holds one table), a CSV or a Parquet file.
    pub(crate) source: PathBuf,
    /// The table of a DuckDB source; default its only table.
    #[arg(long, value_name = "T")]
    pub(crate) table: Option<String>,
    /// Where to write the job file (never overwritten); paths in it are relative to it.
    #[arg(long, value_name = "JOB.toml", default_value = "job.toml")]
    pub(crate) out: PathBuf,
}

pub(crate) fn run(args: Args) -> Result<()> {
    let out = args.out.clone();
    let w = init(&Options { source: args.source, table: args.table, out: args.out })?;
    let none = |v: &[String]| if v.is_empty() { "none".to_string() } else { v.join(", ") };
    println!("wrote {} from {} rows:", out.display(), w.rows);
    println!("  quasi-identifiers: {}", none(&w.quasi_identifiers));
    println!("  dropped: {}", none(&w.dropped));
    println!("  released as they are: {}", none(&w.released));
    for f in &w.files {
        println!("  hierarchy file: {}", f.display());
    }
    println!("review the comments in it, then: kanon run {}", out.display());
    Ok(())
}
