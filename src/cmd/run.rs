//! `kanon run`: find the feasible anonymization with the least loss (or take
//! `--node`), write the release atomically and the JSON report; exit 3 when
//! nothing is feasible. The flags are `kanon help run`; the work is
//! [`crate::anonymize`].

use crate::anonymize::{self, Overrides, Plan};
use crate::options::{Algorithm, Metric, Reuse, Scheme};
use anyhow::Result;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The job file (TOML).
    pub(crate) job: PathBuf,
    /// Override [privacy] k.
    #[arg(long)]
    pub(crate) k: Option<u64>,
    /// Override [privacy] max_suppression: a fraction (0.01) or a row count (300).
    #[arg(long, value_name = "F")]
    pub(crate) max_suppression: Option<String>,
    /// Override [search] metric.
    #[arg(long, value_enum)]
    pub(crate) metric: Option<Metric>,
    /// Override [search] algorithm.
    #[arg(long, value_enum)]
    pub(crate) algorithm: Option<Algorithm>,
    /// Release this node instead of searching, e.g. age=3,education=1,…
    #[arg(long)]
    pub(crate) node: Option<String>,
    /// Search partitions of each QI's values under this scheme (Li & Li)
    /// instead of the full-domain lattice; overrides [search] scheme.
    #[arg(long, value_enum)]
    pub(crate) scheme: Option<Scheme>,
    /// With a scheme: switch pruning techniques off, to measure them
    /// (comma-separated: seeding, bfs, nodes, applicators, dp, classes, blocks, stuck).
    #[arg(long, value_name = "LIST")]
    pub(crate) pruning_off: Option<String>,
    /// Cell-based generalization (cdgh, cndgh): also write the reconstruction,
    /// leaves drawn under each released cell, to this table of the output
    /// database (or a .csv / .parquet file); overrides [output] reconstructed.
    #[arg(long, value_name = "TABLE")]
    pub(crate) reconstruct: Option<String>,
    /// The reconstruction's random seed.
    #[arg(long, default_value_t = crate::anonymize::plan::SEED)]
    pub(crate) seed: u64,
    /// Release the previous report's node while it still meets the job
    /// (`previous`, the default when the flag is given without a value), or
    /// exit 3 when it no longer does (`required`); overrides [search] reuse.
    #[arg(long, value_enum, num_args = 0..=1, default_missing_value = "previous", value_name = "MODE")]
    pub(crate) reuse: Option<Reuse>,
    /// With reuse: also search, and report how much more the kept node loses than today's optimum.
    #[arg(long)]
    pub(crate) compare: bool,
    /// Write the report here instead of [output] report.
    #[arg(long, value_name = "FILE")]
    pub(crate) report: Option<PathBuf>,
    /// Write the approver's page, one self-contained HTML file, here; overrides [output] html.
    #[arg(long, value_name = "FILE")]
    pub(crate) html: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    pub(crate) quiet: bool,
}

pub(crate) fn run(args: Args) -> Result<()> {
    let flags = Overrides {
        k: args.k,
        max_suppression: args.max_suppression,
        metric: args.metric,
        algorithm: args.algorithm,
        node: args.node,
        scheme: args.scheme,
        pruning_off: args.pruning_off,
        reconstruct: args.reconstruct,
        seed: Some(args.seed),
        report: args.report,
        html: args.html,
        reuse: args.reuse,
        compare: args.compare,
    };
    anonymize::run(&Plan::new(&args.job, &flags)?, args.quiet)
}
