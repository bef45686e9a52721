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

use crate::options::Metric;
use anyhow::Result;
use plan::{Plan, Search};
use std::path::{Path, PathBuf};

/// What `kanon pareto` is asked (its flags).
#[derive(Debug)]
pub struct Options {
    pub job: PathBuf,
    pub metric: Option<Metric>,
    pub method: Option<Method>,
    pub objectives: Option<String>,
    pub seed: u64,
    pub population: usize,
    pub iterations: usize,
    pub epsilon: Option<String>,
    pub sensitive: Option<String>,
    pub depth: Option<u32>,
    pub exhaustive: bool,
    pub node: Option<String>,
    pub json: Option<PathBuf>,
    pub csv: Option<PathBuf>,
    pub svg: Option<PathBuf>,
    pub quiet: bool,
}

#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
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
pub fn run(args: Options) -> Result<()> {
    let plan = Plan::new(args)?;
    match &plan.search {
        Search::Front { method, depth, picked } => front::run(&plan, *method, *depth, picked.as_deref()),
        Search::Objectives { method, objectives, epsilon, pbg } => {
            objectives::run(&plan, *method, objectives, epsilon, pbg)
        }
    }
}

/// Draw an SVG beside `path` and move it there once drawn.
fn write_svg(path: &Path, draw: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
    let tmp = path.with_extension("svg.kanon-tmp");
    draw(&tmp)?;
    std::fs::rename(&tmp, path)?;
    Ok(())
}
