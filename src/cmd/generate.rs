//! `kanon generate` (flags: `kanon help generate`).
//!
//! Writes a synthetic, skewed person-level extract into a DuckDB file (row id,
//! zip, birth date, sex, race, marital status, education, occupation, income,
//! diagnosis, visit date; see `sql/generate.sql`) and a ready job file with
//! its hierarchies. The same seed gives the same table. The table replaces any
//! table of that name in one transaction; the job file defaults to
//! `<database stem>.job.toml` beside the database.

use crate::scale::generate::{self, Options};
use anyhow::Result;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// Rows to generate.
    #[arg(long)]
    pub(crate) rows: u64,
    /// Seed of the pseudo-random draws.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// The DuckDB file to write (created if missing).
    #[arg(long, value_name = "FILE")]
    pub(crate) database: PathBuf,
    /// The table to write (replaced if it exists).
    #[arg(long, value_name = "T")]
    pub(crate) table: String,
    /// Where to write the job file; default <database stem>.job.toml beside the database.
    #[arg(long, value_name = "JOB.toml")]
    pub(crate) job: Option<PathBuf>,
    /// No progress spinner.
    #[arg(long)]
    pub(crate) quiet: bool,
}

pub(crate) fn run(args: Args) -> Result<()> {
    let opts = Options { rows: args.rows, seed: args.seed, database: args.database, table: args.table, job: args.job };
    let done = generate::run(&opts, args.quiet)?;
    println!(
        "generated {} rows (seed {}) into {} table \"{}\" in {:.1} s; job file {}",
        opts.rows,
        opts.seed,
        opts.database.display(),
        opts.table,
        done.seconds,
        done.job.display()
    );
    Ok(())
}
