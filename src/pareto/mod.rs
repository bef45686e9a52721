//! What `kanon pareto` does: the Pareto front of k against information loss under the job's
//! suppression budget; no k is needed. `--method exact` (the default) returns
//! the true front by bounds; `--method poka` runs the paper's heuristic
//! (`--depth` applies to it). `--exhaustive` also evaluates every node for
//! the true front and reports the method's recall against it. `--node` marks
//! a picked node on the plot; release it with `kanon run --node`.
//!
//! With `--objectives` (two or more of k, l, sk, sl, glm, dm, cm), the front
//! trades all of them off: `--method pbg-ea` (the default then) runs Dewri et
//! al.'s evolutionary search with an ε-box archive, `--method exhaustive`
//! returns every minimal node; `--exhaustive` compares the archive with those
//! (CE, RR). See docs/pareto.md.
//!
//! Stage by stage: [`plan`] settles the flags → [`front`] or [`objectives`]
//! loads, searches and compares → [`report`] is the JSON, the CSV and the
//! printed table; [`plot`] draws the SVG.

mod front;
mod objectives;
mod plan;
mod plot;
mod report;

use crate::engine::embedded::write_atomically;
use crate::options::Metric;
use anyhow::Result;
use plan::{Outputs, Plan, Search};
use report::Rendered;
use std::path::{Path, PathBuf};

/// What `kanon pareto` is asked (its flags).
#[derive(Debug)]
pub(crate) struct Options {
    pub(crate) job: PathBuf,
    pub(crate) metric: Option<Metric>,
    pub(crate) method: Option<Method>,
    pub(crate) objectives: Option<String>,
    pub(crate) seed: u64,
    pub(crate) population: usize,
    pub(crate) iterations: usize,
    pub(crate) epsilon: Option<String>,
    pub(crate) sensitive: Option<String>,
    pub(crate) depth: Option<u32>,
    pub(crate) exhaustive: bool,
    pub(crate) node: Option<String>,
    pub(crate) json: Option<PathBuf>,
    pub(crate) csv: Option<PathBuf>,
    pub(crate) svg: Option<PathBuf>,
    pub(crate) quiet: bool,
}

#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    Exact,
    Poka,
    PbgEa,
    Exhaustive,
}

impl Method {
    fn name(self) -> &'static str {
        match self {
            Method::Exact => "exact",
            Method::Poka => "poka",
            Method::PbgEa => "pbg-ea",
            Method::Exhaustive => "exhaustive",
        }
    }
}

/// Compute the front the options ask for; print it and write the files asked for.
pub(crate) fn run(args: Options) -> Result<()> {
    let plan = Plan::new(args)?;
    match &plan.search {
        Search::Front { method, depth, picked } => front::run(&plan, *method, *depth, picked.as_deref()),
        Search::Objectives { method, objectives, epsilon, pbg } => {
            objectives::run(&plan, *method, objectives, epsilon, pbg)
        }
    }
}

/// Write the files asked for (the report as JSON, its CSV, the plot that
/// `draw` makes beside the SVG's path, moved there once drawn), then print
/// the report's table.
fn publish(outputs: &Outputs, report: &impl Rendered, draw: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
    if let Some(path) = &outputs.json {
        write_atomically(path, serde_json::to_string_pretty(report)?.as_bytes())?;
    }
    if let Some(path) = &outputs.csv {
        write_atomically(path, report.csv().as_bytes())?;
    }
    if let Some(path) = &outputs.svg {
        let tmp = path.with_extension("svg.kanon-tmp");
        draw(&tmp)?;
        std::fs::rename(&tmp, path)?;
    }
    print!("{}", report.text());
    Ok(())
}
