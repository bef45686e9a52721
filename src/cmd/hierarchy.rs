//! `kanon hierarchy` (flags: `kanon help hierarchy`).
//!
//! Validates and materializes the job's hierarchies (built-in ones from the
//! source's values) and prints each as `leaf;level1;…;top`, one row per leaf.
//! With `--scheme`, prints instead how many partitions of each QI's values
//! (those present in the data) the scheme allows.

use crate::data::hierarchy;
use crate::data::hierarchy::HierarchyRows;
use crate::engine::types::ColumnType;
use crate::error::bad;
use crate::job::Job;
use crate::load::load;
use crate::options::Scheme;
use crate::search::scheme::ValueTree;
use anyhow::Result;
use std::io::Write;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The job file (TOML).
    pub(crate) job: PathBuf,
    /// Count each QI's valid partitions under this scheme instead.
    #[arg(long, value_enum)]
    pub(crate) scheme: Option<Scheme>,
}

pub(crate) fn run(args: Args) -> Result<()> {
    let job = Job::load(&args.job)?;
    let loaded = load(&job)?;
    let mut out = std::io::stdout().lock();
    if let Some(scheme) = args.scheme {
        writeln!(out, "column\tvalues\t{} partitions", scheme.name())?;
        for (a, h) in loaded.hierarchies.iter().enumerate() {
            let numeric = loaded
                .columns
                .iter()
                .find(|c| c.name == h.column)
                .is_some_and(|c| ColumnType::of(&c.type_name).is_number());
            let rows = HierarchyRows::read(&loaded.conn, a, h.height)?;
            let d = ValueTree::new(&h.column, scheme, numeric, &rows)
                .map_err(|e| bad(format!("{}: {e}", job.path.display())))?;
            let count = d.count().map_or("more than 3.4e38".to_string(), |c| c.to_string());
            writeln!(out, "{}\t{}\t{count}", h.column, d.len())?;
        }
        return Ok(());
    }
    for (a, h) in loaded.hierarchies.iter().enumerate() {
        writeln!(out, "# {} (height {}, {} leaves)", h.column, h.height, h.leaves)?;
        for row in hierarchy::rows(&loaded.conn, a, h.height)? {
            writeln!(out, "{}", row.join(";"))?;
        }
        writeln!(out)?;
    }
    Ok(())
}
