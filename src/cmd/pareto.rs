//! `kanon pareto JOB.toml [--metric M] [--method exact|poka] [--depth N] [--exhaustive]
//!  [--node QI=LEVEL,…] [--json FILE] [--csv FILE] [--svg FILE] [--quiet]`
//!
//! The Pareto front of k against information loss under the job's
//! suppression budget; no k is needed. `--method exact` (the default) returns
//! the true front by bounds; `--method poka` runs the paper's heuristic
//! (`--depth` applies to it). `--exhaustive` also evaluates every node for
//! the true front and reports the method's recall against it. `--node` marks
//! a picked node on the plot; release it with `kanon run --node`.

use crate::database::write_atomically;
use crate::error::bad;
use crate::job::{parse_levels, Job, Metric};
use crate::lattice::Lattice;
use crate::load::load_showing;
use crate::plot;
use crate::progress::{progress, spinner};
use crate::report::by_qi;
use crate::search::exact_front::exact_front;
use crate::search::front::{self as pareto, Point};
use crate::search::poka;
use anyhow::Result;
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The job file (TOML).
    pub job: PathBuf,
    /// Loss metric (glm, dm, cm or height); default [search] metric.
    #[arg(long, value_enum)]
    pub metric: Option<Metric>,
    /// exact (the true front, by bounds) or poka (the paper's heuristic).
    #[arg(long, value_enum, default_value_t = Method::Exact)]
    pub method: Method,
    /// Depth of POkA's depth search; default ceil(Σ heights / QIs).
    #[arg(long)]
    pub depth: Option<u32>,
    /// Also evaluate every node: the true front, and POkA's recall against it.
    #[arg(long)]
    pub exhaustive: bool,
    /// Mark this node on the plot, e.g. age=3,education=1,…
    #[arg(long)]
    pub node: Option<String>,
    /// Write the result as JSON here.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the front as CSV here.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Plot loss against k (log k) as SVG here.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Exact,
    Poka,
}

fn point_json(qis: &[String], p: &Point) -> Value {
    json!({"node": by_qi(qis, &p.levels), "k": p.k, "suppressed": p.suppressed, "metrics": p.metrics})
}

pub fn run(args: Args) -> Result<()> {
    let start = Instant::now();
    let mut job = Job::load(&args.job)?;
    if let Some(m) = args.metric {
        job.metric = m;
    }
    if job.metric == Metric::Hdm {
        return Err(bad(
            "hdm is the metric of the scheme search (kanon run --scheme); pareto takes glm, dm, cm or height",
        ));
    }
    if job.metric == Metric::Precision {
        return Err(bad("pareto needs a loss metric (glm, dm, cm or height); precision is a utility"));
    }
    if args.depth.is_some() && args.method != Method::Poka {
        return Err(bad("--depth applies to --method poka only"));
    }
    let picked_levels = args.node.as_deref().map(|s| parse_levels(&job, s)).transpose()?;
    let phase = spinner(args.quiet);
    let loaded = load_showing(&job, &phase)?;
    phase.finish_and_clear();
    let qis = job.qi_names();
    let lattice = Lattice::new(loaded.data.heights.clone());
    let budget = job.privacy.budget.rows(loaded.data.rows);
    let bar = progress(args.quiet);
    let method_name = match args.method {
        Method::Exact => "exact",
        Method::Poka => "poka",
    };
    bar.set_message(method_name);

    let mut ev = loaded.evaluator()?;
    let (front, depth) = match args.method {
        Method::Exact => (exact_front(&mut ev, &lattice, budget, job.metric)?.front, None),
        Method::Poka => {
            let found = poka::poka(&mut ev, &lattice, budget, job.metric, args.depth)?;
            (found.front, Some(found.depth))
        }
    };
    let evaluations = ev.evaluations();
    let seconds = start.elapsed().as_secs_f64();
    let evaluated = ev.cached_full_nodes();
    let evaluated_points = pareto::points(&mut ev, &evaluated, budget, job.metric)?;
    let picked = match &picked_levels {
        Some(l) => Some(pareto::points(&mut ev, std::slice::from_ref(l), budget, job.metric)?.remove(0)),
        None => None,
    };

    let mut out = json!({
        "quasi_identifiers": qis, "budget": budget, "metric": job.metric.name(),
        "method": method_name, "depth": depth,
        "front": front.iter().map(|p| point_json(&qis, p)).collect::<Vec<_>>(),
        "nodes_evaluated": evaluations, "lattice_size": lattice.size(),
        "evaluated_percent": 100.0 * evaluations as f64 / lattice.size() as f64,
        "seconds": seconds, "exhaustive": null,
    });
    let mut summary = String::new();
    if args.exhaustive {
        bar.set_message("evaluating every node");
        let mut all_ev = loaded.evaluator()?;
        let all = pareto::points(&mut all_ev, &lattice.nodes(), budget, job.metric)?;
        let cmp = pareto::compare(&front, pareto::front(&all));
        out["exhaustive"] = json!({
            "front": cmp.true_front.iter().map(|p| point_json(&qis, p)).collect::<Vec<_>>(),
            "true_front_size": cmp.true_front.len(), "found": cmp.found, "recall": cmp.recall,
            "missed": cmp.missed.iter().map(|p| point_json(&qis, p)).collect::<Vec<_>>(),
            "dominated_reported": cmp.dominated_reported.iter().map(|p| point_json(&qis, p)).collect::<Vec<_>>(),
            "seconds": start.elapsed().as_secs_f64() - seconds,
        });
        writeln!(
            summary,
            "exhaustive: true front {} nodes, {method_name} found {} (recall {:.3}), {} dominated reported",
            cmp.true_front.len(),
            cmp.found,
            cmp.recall,
            cmp.dominated_reported.len()
        )?;
    }
    bar.finish_and_clear();

    if let Some(path) = &args.json {
        write_atomically(path, serde_json::to_string_pretty(&out)?.as_bytes())?;
    }
    if let Some(path) = &args.csv {
        let mut csv = format!("{},k,suppressed,glm,glm_normalized,dm,precision,height,cm\n", qis.join(","));
        for p in &front {
            let m = &p.metrics;
            let levels: Vec<String> = p.levels.iter().map(|l| l.to_string()).collect();
            let cm = m.cm.map_or(String::new(), |c| c.to_string());
            writeln!(
                csv,
                "{},{},{},{},{},{},{},{},{cm}",
                levels.join(","),
                p.k,
                p.suppressed,
                m.glm,
                m.glm_normalized,
                m.dm,
                m.precision,
                m.height
            )?;
        }
        write_atomically(path, csv.as_bytes())?;
    }
    if let Some(path) = &args.svg {
        let tmp = path.with_extension("svg.kanon-tmp");
        plot::front_svg(&tmp, job.metric.name(), &evaluated_points, &front, picked.as_ref())?;
        std::fs::rename(&tmp, path)?;
    }
    println!("k\tsuppressed\t{}\tnode", job.metric.name());
    for p in &front {
        let node: Vec<String> = qis.iter().zip(&p.levels).map(|(q, l)| format!("{q}={l}")).collect();
        println!("{}\t{}\t{}\t{}", p.k, p.suppressed, p.loss, node.join(","));
    }
    println!(
        "{} front nodes, {} of {} nodes evaluated ({:.1}%), {method_name}{}, {:.2} s",
        front.len(),
        evaluations,
        lattice.size(),
        100.0 * evaluations as f64 / lattice.size() as f64,
        depth.map_or(String::new(), |d| format!(" depth {d}")),
        seconds
    );
    print!("{summary}");
    Ok(())
}
