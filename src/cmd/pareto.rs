//! `kanon pareto`: Pareto fronts of k against one loss, or of several
//! objectives (flags: `kanon help pareto`; the work: [`crate::pareto`]).

use crate::options::Metric;
use crate::pareto::{self, Method, Options};
use anyhow::Result;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The job file (TOML).
    pub(crate) job: PathBuf,
    /// Loss metric (glm, dm, cm or height); default [search] metric.
    #[arg(long, value_enum)]
    pub(crate) metric: Option<Metric>,
    /// exact (the true front of k and one loss, by bounds; the default), poka
    /// (POkA's heuristic), pbg-ea (PBG-EA over --objectives; their default) or
    /// exhaustive (every node; the minimal ones over --objectives).
    #[arg(long, value_enum)]
    pub(crate) method: Option<Method>,
    /// Two or more of k, l, sk, sl, glm, dm, cm, comma-separated.
    #[arg(long, value_name = "LIST")]
    pub(crate) objectives: Option<String>,
    /// PBG-EA's random seed.
    #[arg(long, default_value_t = 0)]
    pub(crate) seed: u64,
    /// PBG-EA's population size.
    #[arg(long, default_value_t = 25)]
    pub(crate) population: usize,
    /// PBG-EA's iterations.
    #[arg(long, default_value_t = 100)]
    pub(crate) iterations: usize,
    /// The ε-box widths, one per objective (default all 1).
    #[arg(long, value_name = "LIST")]
    pub(crate) epsilon: Option<String>,
    /// The sensitive column for l and sl (default [privacy] l_diversity.column).
    #[arg(long, value_name = "COLUMN")]
    pub(crate) sensitive: Option<String>,
    /// Depth of POkA's depth search; default ceil(Σ heights / QIs).
    #[arg(long)]
    pub(crate) depth: Option<u32>,
    /// Also evaluate every node: the true front, and POkA's recall against it.
    #[arg(long)]
    pub(crate) exhaustive: bool,
    /// Mark this node on the plot, e.g. age=3,education=1,…
    #[arg(long)]
    pub(crate) node: Option<String>,
    /// Write the result as JSON here.
    #[arg(long, value_name = "FILE")]
    pub(crate) json: Option<PathBuf>,
    /// Write the front as CSV here.
    #[arg(long, value_name = "FILE")]
    pub(crate) csv: Option<PathBuf>,
    /// Plot loss against k (log k) as SVG here.
    #[arg(long, value_name = "FILE")]
    pub(crate) svg: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    pub(crate) quiet: bool,
}

pub(crate) fn run(args: Args) -> Result<()> {
    pareto::run(Options {
        job: args.job,
        metric: args.metric,
        method: args.method,
        objectives: args.objectives,
        seed: args.seed,
        population: args.population,
        iterations: args.iterations,
        epsilon: args.epsilon,
        sensitive: args.sensitive,
        depth: args.depth,
        exhaustive: args.exhaustive,
        node: args.node,
        json: args.json,
        csv: args.csv,
        svg: args.svg,
        quiet: args.quiet,
    })
}
