//! The plan of a `kanon pareto`: the flags settled once, before anything is
//! read. Which search runs (a front of k against one loss, or of several
//! objectives), and every rule tying a flag to a method (`--depth` and
//! `--node` to exact and poka, `--epsilon` and `--sensitive` to pbg-ea and
//! exhaustive, `--objectives` to both) is decided here, refusing what does
//! not combine (exit 2).

use super::{Method, Options};
use crate::error::bad;
use crate::job::{parse_levels, Column, Job};
use crate::measure::objectives::Objective;
use crate::options::Metric;
use anyhow::Result;
use std::path::PathBuf;
use std::time::Instant;

/// The files asked for.
pub(super) struct Outputs {
    pub(super) json: Option<PathBuf>,
    pub(super) csv: Option<PathBuf>,
    pub(super) svg: Option<PathBuf>,
}

/// Which search runs, with what only it takes.
pub(super) enum Search {
    /// k against the job's metric, exact or poka; `picked`: `--node`'s levels.
    Front { method: Method, depth: Option<u32>, picked: Option<Vec<u8>> },
    /// Several objectives, pbg-ea or exhaustive.
    Objectives { method: Method, objectives: Vec<Objective>, epsilon: Vec<f64>, pbg: Pbg },
}

/// PBG-EA's own settings (reported with `--method pbg-ea` only).
pub(super) struct Pbg {
    pub(super) seed: u64,
    pub(super) population: usize,
    pub(super) iterations: usize,
}

pub(super) struct Plan {
    /// The job, with `--metric`, the loss of `--objectives` and `--sensitive` applied.
    pub(super) job: Job,
    /// When the command started (the reported seconds count from here).
    pub(super) start: Instant,
    pub(super) search: Search,
    /// Also evaluate every node and compare.
    pub(super) exhaustive: bool,
    pub(super) outputs: Outputs,
    pub(super) quiet: bool,
}

impl Plan {
    pub(super) fn new(args: Options) -> Result<Plan> {
        let start = Instant::now();
        let mut job = Job::load(&args.job)?;
        check_outputs(&job, &args)?;
        if let Some(m) = args.metric {
            job.metric = m;
        }
        let objectives = args.objectives.as_deref().map(Objective::parse_list).transpose()?;
        let search = match (args.method, objectives) {
            (Some(Method::PbgEa | Method::Exhaustive), objectives) | (None, objectives @ Some(_)) => {
                settle_objectives(&mut job, &args, objectives)?
            }
            (method, objectives) => settle_front(&mut job, &args, method, objectives)?,
        };
        let generalization = match &search {
            Search::Front { method: Method::Exact, .. } => None,
            Search::Front { .. } => Some("POkA's heuristic front (--method exact gives the front over persons)"),
            Search::Objectives { .. } => Some("the multi-objective fronts (--method exact gives k over persons)"),
        };
        crate::anonymize::plan::refuse_with_person(&job, generalization)?;
        crate::anonymize::plan::refuse_with_limits(&job, Some("kanon pareto (fronts of k against loss)"))?;
        let outputs = Outputs { json: args.json, csv: args.csv, svg: args.svg };
        Ok(Plan { job, start, search, exhaustive: args.exhaustive, outputs, quiet: args.quiet })
    }
}

/// Each output file may be written, and no two are one.
fn check_outputs(job: &Job, args: &Options) -> Result<()> {
    let outputs = [("--json", &args.json), ("--csv", &args.csv), ("--svg", &args.svg)];
    let outputs: Vec<(&str, &PathBuf)> = outputs.iter().filter_map(|(f, p)| p.as_ref().map(|p| (*f, p))).collect();
    for (i, (flag, path)) in outputs.iter().enumerate() {
        job.check_output_file(flag, path, false)?;
        if let Some((other, _)) = outputs[..i].iter().find(|(_, p)| crate::job::same_file(p, path)) {
            return Err(bad(format!("{flag} {} is also {other}", path.display())));
        }
    }
    Ok(())
}

/// exact or poka: k against one loss (the job's metric, or the loss of
/// `--objectives`).
fn settle_front(
    job: &mut Job,
    args: &Options,
    method: Option<Method>,
    objectives: Option<Vec<Objective>>,
) -> Result<Search> {
    if let (Some(m), Some(o)) = (method, &objectives) {
        job.metric = front_loss(m, o)?;
    }
    for (given, flag) in [(args.epsilon.is_some(), "--epsilon"), (args.sensitive.is_some(), "--sensitive")] {
        if given {
            return Err(bad(format!("{flag} applies to --method pbg-ea or exhaustive")));
        }
    }
    let method = method.unwrap_or(Method::Exact);
    if job.metric == Metric::Hdm {
        return Err(bad(
            "hdm is the metric of the scheme search (kanon run --scheme); pareto takes glm, dm, cm or height",
        ));
    }
    if job.metric == Metric::Precision {
        return Err(bad("pareto needs a loss metric (glm, dm, cm or height); precision is a utility"));
    }
    if args.depth.is_some() && method != Method::Poka {
        return Err(bad("--depth applies to --method poka only"));
    }
    let picked = args.node.as_deref().map(|s| parse_levels(job, s)).transpose()?;
    Ok(Search::Front { method, depth: args.depth, picked })
}

/// exact and poka trade k against one loss: `objectives` must be k and one of glm, dm, cm.
fn front_loss(method: Method, objectives: &[Objective]) -> Result<Metric> {
    let name = method.name();
    match objectives {
        [Objective::K, l] | [l, Objective::K] => match l {
            Objective::Glm => Ok(Metric::Glm),
            Objective::Dm => Ok(Metric::Dm),
            Objective::Cm => Ok(Metric::Cm),
            _ => Err(bad(format!("--method {name}: objectives k and one of glm, dm, cm"))),
        },
        _ => Err(bad(format!("--method {name} takes only k plus one loss as objectives"))),
    }
}

/// pbg-ea or exhaustive over `--objectives` (default: k against the job's metric).
fn settle_objectives(job: &mut Job, args: &Options, objectives: Option<Vec<Objective>>) -> Result<Search> {
    let method = args.method.unwrap_or(Method::PbgEa);
    let objectives = match objectives {
        Some(o) => o,
        None => vec![Objective::K, metric_objective(job.metric, method)?],
    };
    if args.depth.is_some() || args.node.is_some() {
        return Err(bad("--depth and --node apply to --method exact or poka"));
    }
    if let Some(name) = &args.sensitive {
        if job.quasi_identifiers.iter().any(|q| &q.column.name == name) {
            return Err(bad(format!(
                "--sensitive: \"{name}\" is a quasi-identifier; the sensitive column may not be one"
            )));
        }
        job.sensitive = Some(Column { name: name.clone(), line: 0 });
    }
    if let Some(o) = objectives.iter().find(|o| o.sensitive()) {
        if job.sensitive.is_none() {
            return Err(bad(format!(
                "objective {} needs a sensitive column: set [privacy] l_diversity.column in {} or pass --sensitive COLUMN",
                o.name(),
                job.path.display()
            )));
        }
    }
    if objectives.contains(&Objective::Cm) && job.class_column.is_none() {
        return Err(bad(format!("objective cm needs [search] class_column in {}", job.path.display())));
    }
    let epsilon = epsilon(args.epsilon.as_deref(), objectives.len())?;
    if args.population < 2 {
        return Err(bad(
            "--population must be at least 2 (it starts with the most specific and the most general node)",
        ));
    }
    let pbg = Pbg { seed: args.seed, population: args.population, iterations: args.iterations };
    Ok(Search::Objectives { method, objectives, epsilon, pbg })
}

/// k against the job's metric, as the other methods trade off: its objective.
fn metric_objective(metric: Metric, method: Method) -> Result<Objective> {
    match metric {
        Metric::Glm => Ok(Objective::Glm),
        Metric::Dm => Ok(Objective::Dm),
        Metric::Cm => Ok(Objective::Cm),
        m => Err(bad(format!(
            "--method {} without --objectives trades k against the metric, which must be glm, dm or cm (not {})",
            method.name(),
            m.name()
        ))),
    }
}

/// `--epsilon`: one positive width per objective (default all 1).
fn epsilon(text: Option<&str>, objectives: usize) -> Result<Vec<f64>> {
    let Some(text) = text else {
        return Ok(vec![1.0; objectives]);
    };
    let e: Vec<f64> = text
        .split(',')
        .map(|w| w.trim().parse::<f64>().ok().filter(|e| e.is_finite() && *e > 0.0))
        .collect::<Option<_>>()
        .ok_or_else(|| bad(format!("--epsilon {text}: expected positive numbers, comma-separated")))?;
    if e.len() != objectives {
        return Err(bad(format!(
            "--epsilon gives {} widths for {objectives} objectives; give one per objective",
            e.len()
        )));
    }
    Ok(e)
}
