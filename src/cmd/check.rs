//! `kanon check` (flags: `kanon help check`): audits a table against the
//! job; what it measures and decides is in [`crate::audit`].

use anyhow::Result;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
#[command(after_long_help = "\
Audits the source (or table T of the output database, e.g. a release) against the job:
  k          the smallest class over the QI columns
  l          with [privacy] l_diversity: distinct l (fewest distinct values in a class),
             entropy l (smallest exp(entropy) of a class) and recursive (largest
             r1 / (rl + ... + rm) of a class, for the job's l)
  t          with [privacy] t_closeness: the largest distance of a class from the
             source's distribution (over all its rows), per distance: equal; ordered
             for a numeric or date column; hierarchical with the job's hierarchy
  risk       prosecutor, journalist, marketer, uniqueness ([risk]; F from
             [risk] population_table, grouped as it is, when given)
and the class-size histogram. Reads no QI hierarchy; changes nothing. On Spark
and PostgreSQL, T is a table there (schema.table), grouped there by the QI and
sensitive columns; only the groups come back.

Exit codes: 0 the table meets every model of the job (k, l of its kind,
t-closeness); 4 it does not, with a line on stderr per failing model, e.g.
  kanon: release_k5: fails k = 10 in 37 classes (1,204 records)
2 bad input (a missing column, a value or class the source or the population
table does not have).

Example: kanon check job.toml --table patients_k5 --json --svg risk.svg
More: docs/risk.md.")]
pub(crate) struct Args {
    /// The job file (TOML).
    pub(crate) job: PathBuf,
    /// Audit this table of the output database (on Spark or PostgreSQL: of the engine) instead of the source.
    #[arg(long, value_name = "T")]
    pub(crate) table: Option<String>,
    /// Print one JSON object instead of text (with "meets" and "failures").
    #[arg(long)]
    pub(crate) json: bool,
    /// Write the risk distribution of the source and of the audited table, side by side, as SVG.
    #[arg(long, value_name = "FILE")]
    pub(crate) svg: Option<PathBuf>,
    /// Write the approver's page for the audited table, one self-contained HTML file.
    #[arg(long, value_name = "FILE")]
    pub(crate) html: Option<PathBuf>,
}

pub(crate) fn run(args: Args) -> Result<()> {
    crate::audit::run(crate::audit::Request {
        job: args.job,
        table: args.table,
        json: args.json,
        svg: args.svg,
        html: args.html,
    })
}
