//! `kanon generate` (flags: `kanon help generate`).
//!
//! Writes a synthetic, skewed person-level extract into a DuckDB file (row id,
//! zip, birth date, sex, race, marital status, education, occupation, income,
//! diagnosis, visit date; see `sql/generate.sql`) and a ready job file with
//! its hierarchies. The same seed gives the same table. The table replaces any
//! table of that name in one transaction; the job file defaults to
//! `<database stem>.job.toml` beside the database.

use crate::error::bad;
use crate::progress::spinner;
use crate::scale::generate::{default_job_path, write_job, write_table};
use anyhow::{Context, Result};
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Rows to generate.
    #[arg(long)]
    pub rows: u64,
    /// Seed of the pseudo-random draws.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// The DuckDB file to write (created if missing).
    #[arg(long, value_name = "FILE")]
    pub database: PathBuf,
    /// The table to write (replaced if it exists).
    #[arg(long, value_name = "T")]
    pub table: String,
    /// Where to write the job file; default <database stem>.job.toml beside the database.
    #[arg(long, value_name = "JOB.toml")]
    pub job: Option<PathBuf>,
    /// No progress spinner.
    #[arg(long)]
    pub quiet: bool,
}

pub fn run(args: Args) -> Result<()> {
    if args.rows == 0 {
        return Err(bad("--rows must be at least 1"));
    }
    if args.table.is_empty() {
        return Err(bad("--table must not be empty"));
    }
    if let Some(dir) = args.database.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.is_dir() {
            return Err(bad(format!("--database: folder {} does not exist", dir.display())));
        }
    }
    let job_path = args.job.clone().unwrap_or_else(|| default_job_path(&args.database));
    let start = Instant::now();
    let bar = spinner(args.quiet);
    bar.set_message(format!("generating {} rows into {}", args.rows, args.database.display()));
    write_table(&args.database, &args.table, args.rows, args.seed)
        .with_context(|| format!("writing table \"{}\" of {}", args.table, args.database.display()))?;
    bar.finish_and_clear();
    write_job(&job_path, &args.database, &args.table)?;
    println!(
        "generated {} rows (seed {}) into {} table \"{}\" in {:.1} s; job file {}",
        args.rows,
        args.seed,
        args.database.display(),
        args.table,
        start.elapsed().as_secs_f64(),
        job_path.display()
    );
    Ok(())
}
