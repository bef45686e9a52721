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

use crate::engine::embedded::write_atomically;
use crate::error::bad;
use crate::job::{parse_levels, Column, Job};
use crate::lattice::Lattice;
use crate::load::load_showing;
use crate::measure::objectives::{Objective, Scored};
use crate::options::Metric;
mod plot;
use crate::progress::{progress, spinner};
use crate::report::by_qi;
use crate::search::exact_front::exact_front;
use crate::search::front::{self as pareto, Point};
use crate::search::pbg_ea::{self, PbgSettings};
use crate::search::poka;
use anyhow::Result;
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

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

fn point_json(qis: &[String], p: &Point) -> Value {
    json!({"node": by_qi(qis, &p.levels), "k": p.k, "suppressed": p.suppressed, "metrics": p.metrics})
}

/// Compute the front the options ask for; print it and write the files asked for.
pub fn run(mut args: Options) -> Result<()> {
    let start = Instant::now();
    let mut job = Job::load(&args.job)?;
    let outputs = [("--json", &args.json), ("--csv", &args.csv), ("--svg", &args.svg)];
    let outputs: Vec<(&str, &PathBuf)> = outputs.iter().filter_map(|(f, p)| p.as_ref().map(|p| (*f, p))).collect();
    for (i, (flag, path)) in outputs.iter().enumerate() {
        job.check_output_file(flag, path, false)?;
        if let Some((other, _)) = outputs[..i].iter().find(|(_, p)| crate::job::same_file(p, path)) {
            return Err(bad(format!("{flag} {} is also {other}", path.display())));
        }
    }
    if let Some(m) = args.metric {
        job.metric = m;
    }
    let objectives = args.objectives.as_deref().map(Objective::parse_list).transpose()?;
    match (args.method, &objectives) {
        (Some(Method::PbgEa | Method::Exhaustive), _) | (None, Some(_)) => {
            return run_objectives(args, job, objectives, start);
        }
        (Some(m), Some(o)) => {
            // exact and poka trade k against one loss.
            let loss = match o.as_slice() {
                [Objective::K, l] | [l, Objective::K] => match l {
                    Objective::Glm => Metric::Glm,
                    Objective::Dm => Metric::Dm,
                    Objective::Cm => Metric::Cm,
                    _ => return Err(bad(format!("--method {}: objectives k and one of glm, dm, cm", method_name(m)))),
                },
                _ => return Err(bad(format!("--method {} takes only k plus one loss as objectives", method_name(m)))),
            };
            job.metric = loss;
        }
        _ => {}
    }
    for (given, flag) in [(args.epsilon.is_some(), "--epsilon"), (args.sensitive.is_some(), "--sensitive")] {
        if given {
            return Err(bad(format!("{flag} applies to --method pbg-ea or exhaustive")));
        }
    }
    let method = *args.method.get_or_insert(Method::Exact);
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
    let picked_levels = args.node.as_deref().map(|s| parse_levels(&job, s)).transpose()?;
    let phase = spinner(args.quiet);
    let loaded = load_showing(&job, &phase)?;
    phase.finish_and_clear();
    let qis = job.qi_names();
    let lattice = Lattice::new(loaded.data.heights.clone());
    let budget = job.privacy.budget.rows(loaded.data.rows);
    let bar = progress(args.quiet);
    let method_name = method_name(method);
    bar.set_message(method_name);

    let mut ev = loaded.evaluator()?;
    let (front, depth) = match method {
        Method::Poka => {
            let found = poka::poka(&mut ev, &lattice, budget, job.metric, args.depth)?;
            (found.front, Some(found.depth))
        }
        _ => (exact_front(&mut ev, &lattice, budget, job.metric)?.front, None),
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

fn method_name(m: Method) -> &'static str {
    match m {
        Method::Exact => "exact",
        Method::Poka => "poka",
        Method::PbgEa => "pbg-ea",
        Method::Exhaustive => "exhaustive",
    }
}

/// A number as JSON: an integer when it is one (k, l, sk, sl, dm).
fn number(v: f64) -> Value {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 9e15 {
        json!(v as i64)
    } else {
        json!(v)
    }
}

/// `--objectives`: PBG-EA or every minimal node.
fn run_objectives(args: Options, mut job: Job, objectives: Option<Vec<Objective>>, start: Instant) -> Result<()> {
    let method = args.method.unwrap_or(Method::PbgEa);
    let objectives = match objectives {
        Some(o) => o,
        // k against the job's metric, as the other methods trade off.
        None => {
            let loss = match job.metric {
                Metric::Glm => Objective::Glm,
                Metric::Dm => Objective::Dm,
                Metric::Cm => Objective::Cm,
                m => {
                    return Err(bad(format!(
                        "--method {} without --objectives trades k against the metric, which must be glm, dm or cm (not {})",
                        method_name(method),
                        m.name()
                    )))
                }
            };
            vec![Objective::K, loss]
        }
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
    let epsilon: Vec<f64> = match &args.epsilon {
        None => vec![1.0; objectives.len()],
        Some(text) => {
            let e: Vec<f64> = text
                .split(',')
                .map(|w| w.trim().parse::<f64>().ok().filter(|e| e.is_finite() && *e > 0.0))
                .collect::<Option<_>>()
                .ok_or_else(|| bad(format!("--epsilon {text}: expected positive numbers, comma-separated")))?;
            if e.len() != objectives.len() {
                return Err(bad(format!(
                    "--epsilon gives {} widths for {} objectives; give one per objective",
                    e.len(),
                    objectives.len()
                )));
            }
            e
        }
    };
    if args.population < 2 {
        return Err(bad(
            "--population must be at least 2 (it starts with the most specific and the most general node)",
        ));
    }
    let phase = spinner(args.quiet);
    let mut loaded = load_showing(&job, &phase)?;
    phase.finish_and_clear();
    loaded.extras.spread = objectives.contains(&Objective::Sl);
    let qis = job.qi_names();
    let lattice = Lattice::new(loaded.data.heights.clone());
    let budget = job.privacy.budget.rows(loaded.data.rows);
    let settings = PbgSettings {
        objectives: objectives.clone(),
        epsilon: epsilon.clone(),
        population: args.population,
        iterations: args.iterations,
        seed: args.seed,
        p_cross: 0.8,
        p_mut: None,
        budget,
    };
    let bar = progress(args.quiet);
    bar.set_message(method_name(method));
    let mut ev = loaded.evaluator()?;
    let (solutions, evaluated) = match method {
        Method::Exhaustive => pbg_ea::exhaustive(&mut ev, &lattice, &settings)?,
        _ => {
            let found = pbg_ea::pbg_ea(&mut ev, &lattice, &settings)?;
            (found.archive, found.evaluated)
        }
    };
    let evaluations = ev.evaluations();
    let seconds = start.elapsed().as_secs_f64();
    let mut solutions = solutions;
    // Best first in the first objective, then the next; then by levels.
    solutions.sort_by(|a, b| {
        objectives
            .iter()
            .enumerate()
            .map(|(i, o)| {
                let c = a.values[i].total_cmp(&b.values[i]);
                if o.maximized() {
                    c.reverse()
                } else {
                    c
                }
            })
            .find(|c| c.is_ne())
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| a.levels.cmp(&b.levels))
    });
    let solution_json = |s: &Scored| {
        let mut v = json!({"levels": s.levels, "node": by_qi(&qis, &s.levels)});
        for (o, &x) in objectives.iter().zip(&s.values) {
            v[o.name()] = number(x);
        }
        v["suppressed"] = json!(s.suppressed);
        v
    };
    let names: Vec<&str> = objectives.iter().map(|o| o.name()).collect();
    let mut out = json!({
        "method": method_name(method), "objectives": names, "epsilon": epsilon,
        "seed": (method == Method::PbgEa).then_some(args.seed),
        "population": (method == Method::PbgEa).then_some(args.population),
        "iterations": (method == Method::PbgEa).then_some(args.iterations),
        "quasi_identifiers": qis, "budget": budget,
        "solutions": solutions.iter().map(solution_json).collect::<Vec<_>>(),
        "nodes_evaluated": evaluations, "lattice_size": lattice.size(),
        "evaluated_percent": 100.0 * evaluations as f64 / lattice.size() as f64,
        "seconds": seconds, "comparison": null,
    });
    let mut summary = String::new();
    if args.exhaustive {
        bar.set_message("evaluating every node");
        let mut all_ev = loaded.evaluator()?;
        let (minimal, _) = pbg_ea::exhaustive(&mut all_ev, &lattice, &settings)?;
        let c = pbg_ea::compare(&objectives, &epsilon, &solutions, &minimal);
        out["comparison"] = json!({
            "minimal": c.minimal, "boxes": c.boxes, "ce": c.ce,
            "ce_per_solution": c.ce / solutions.len().max(1) as f64, "rr": c.rr,
            "seconds": start.elapsed().as_secs_f64() - seconds,
        });
        writeln!(
            summary,
            "exhaustive: {} minimal nodes in {} non-dominated boxes; RR {:.3}, CE {:.3e} ({:.3e} per solution)",
            c.minimal,
            c.boxes,
            c.rr,
            c.ce,
            c.ce / solutions.len().max(1) as f64
        )?;
    }
    bar.finish_and_clear();

    if let Some(path) = &args.json {
        write_atomically(path, serde_json::to_string_pretty(&out)?.as_bytes())?;
    }
    if let Some(path) = &args.csv {
        let mut csv = format!("{},{},suppressed\n", qis.join(","), names.join(","));
        for s in &solutions {
            let cells: Vec<String> =
                s.levels.iter().map(|l| l.to_string()).chain(s.values.iter().map(|v| v.to_string())).collect();
            writeln!(csv, "{},{}", cells.join(","), s.suppressed)?;
        }
        write_atomically(path, csv.as_bytes())?;
    }
    if let Some(path) = &args.svg {
        let tmp = path.with_extension("svg.kanon-tmp");
        let xy = |s: &Scored| (s.values[0], s.values[1]);
        let grey: Vec<(f64, f64)> = evaluated.iter().map(xy).collect();
        let red: Vec<(f64, f64)> = solutions.iter().map(xy).collect();
        plot::objectives_svg(&tmp, (names[0], names[1]), &grey, &red)?;
        std::fs::rename(&tmp, path)?;
    }
    println!("{}\tsuppressed\tnode", names.join("\t"));
    for s in &solutions {
        let node: Vec<String> = qis.iter().zip(&s.levels).map(|(q, l)| format!("{q}={l}")).collect();
        let values: Vec<String> = s.values.iter().map(|&v| number(v).to_string()).collect();
        println!("{}\t{}\t{}", values.join("\t"), s.suppressed, node.join(","));
    }
    println!(
        "{} solutions, {} of {} nodes evaluated ({:.1}%), {}, {:.2} s",
        solutions.len(),
        evaluations,
        lattice.size(),
        100.0 * evaluations as f64 / lattice.size() as f64,
        method_name(method),
        seconds
    );
    print!("{summary}");
    Ok(())
}
