//! `kanon hierarchy JOB.toml`
//!
//! Validates and materializes the job's hierarchies (built-in ones from the
//! source's values) and prints each as `leaf;level1;…;top`, one row per leaf.

use crate::hierarchy;
use crate::job::Job;
use crate::load::load;
use anyhow::Result;
use std::io::Write;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The job file (TOML).
    pub job: PathBuf,
}

pub fn run(args: Args) -> Result<()> {
    let job = Job::load(&args.job)?;
    let loaded = load(&job)?;
    let mut out = std::io::stdout().lock();
    for (a, h) in loaded.hierarchies.iter().enumerate() {
        writeln!(out, "# {} (height {}, {} leaves)", h.column, h.height, h.leaves)?;
        for row in hierarchy::rows(&loaded.conn, a, h.height)? {
            writeln!(out, "{}", row.join(";"))?;
        }
        writeln!(out)?;
    }
    Ok(())
}
