//! Command-line parsing and dispatch. Flags are parsed once into each
//! subcommand's `Args`; the work lives in `cmd::*`.

use crate::cmd;
use crate::error::{exit_code, resource_hint};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "kanon",
    version,
    about = "k-anonymize a table by full-domain generalization, pushed down into DuckDB"
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Find the optimal feasible generalization and write the release.
    Run(cmd::run::Args),
    /// Audit the source or a release against the job: k, ℓ, t-closeness and risk; exit 4 when a model fails.
    Check(cmd::check::Args),
    /// Print the materialized hierarchies for review.
    Hierarchy(cmd::hierarchy::Args),
    /// Pareto fronts: k against one loss (exact, POkA), or several objectives (PBG-EA).
    Pareto(cmd::pareto::Args),
    /// Write a synthetic person-level extract and a job file for it.
    Generate(cmd::generate::Args),
    /// Time the physical limit of a run: one GROUP BY of the QIs, one recode-and-write.
    Limit(cmd::limit::Args),
    /// Profile a table, CSV or Parquet file and write a starting job file for it.
    Init(cmd::init::Args),
    /// The runs recorded in the job's output database (kanon_runs), oldest first.
    History(cmd::history::Args),
}

/// Parse, run, report errors; returns the process exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    let result = match cli.command {
        Command::Run(a) => cmd::run::run(a),
        Command::Check(a) => cmd::check::run(a),
        Command::Hierarchy(a) => cmd::hierarchy::run(a),
        Command::Pareto(a) => cmd::pareto::run(a),
        Command::Generate(a) => cmd::generate::run(a),
        Command::Limit(a) => cmd::limit::run(a),
        Command::Init(a) => cmd::init::run(a),
        Command::History(a) => cmd::history::run(a),
    };
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("kanon: {e:#}");
            if let Some(hint) = resource_hint(&e) {
                eprintln!("kanon: {hint}");
            }
            exit_code(&e)
        }
    }
}
