//! `kanon limit` (flags: `kanon help limit`): the physical limit of a run
//! on the job's source, with no search (one GROUP BY of the QIs, one
//! recode-and-write at the node); prints one JSON object with the times, the
//! distinct QI combinations and the rows. The work is [`crate::scale::limit`].

use crate::scale::limit::{self, Options, Plan};
use anyhow::Result;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The job file (TOML).
    pub(crate) job: PathBuf,
    /// The node to recode at, e.g. zip=2,birth_date=1,… (every QI).
    #[arg(long)]
    pub(crate) node: String,
    /// Time one scan hashing every QI value instead of the GROUP BY (what
    /// `limit` falls back to when the GROUP BY does not fit in memory).
    #[arg(long, conflicts_with = "hashed")]
    pub(crate) scan: bool,
    /// Time the GROUP BY of one hash of the QI values instead (what `limit`
    /// tries first when the plain GROUP BY does not fit in memory).
    #[arg(long)]
    pub(crate) hashed: bool,
    /// Time only the plain-SQL write, not today's write through the maps
    /// (at 10⁹ rows each write takes tens of minutes).
    #[arg(long)]
    pub(crate) plain_only: bool,
    /// No progress spinner.
    #[arg(long)]
    pub(crate) quiet: bool,
}

pub(crate) fn run(args: Args) -> Result<()> {
    let opts =
        Options { job: args.job, node: args.node, scan: args.scan, hashed: args.hashed, plain_only: args.plain_only };
    let report = limit::run(&Plan::new(&opts)?, args.quiet)?;
    println!("{}", serde_json::to_string(&report)?);
    Ok(())
}
