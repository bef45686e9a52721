//! The front of several objectives: `pbg-ea` (Dewri et al.'s evolutionary
//! search with an ε-box archive) or `exhaustive` (every minimal node); with
//! `--exhaustive`, the archive compared with the minimal nodes (CE, RR).

use super::plan::{Pbg, Plan};
use super::report::{Comparison, ObjectivesReport, Solutions};
use super::{plot, publish, Method};
use crate::lattice::Lattice;
use crate::load::load_showing;
use crate::measure::objectives::{Objective, Scored};
use crate::progress::{progress, spinner};
use crate::search::pbg_ea::{self, PbgSettings};
use anyhow::Result;
use std::cmp::Ordering;
use std::path::Path;

/// Search, compare when asked, write the files and print the solutions.
pub(super) fn run(plan: &Plan, method: Method, objectives: &[Objective], epsilon: &[f64], pbg: &Pbg) -> Result<()> {
    let job = &plan.job;
    let phase = spinner(plan.quiet);
    let mut loaded = load_showing(job, &phase)?;
    phase.finish_and_clear();
    loaded.extras.spread = objectives.contains(&Objective::Sl);
    let qis = job.qi_names();
    let lattice = Lattice::new(loaded.data.heights.clone());
    let budget = job.privacy.budget.rows(loaded.data.units());
    let settings = settings(objectives, epsilon, pbg, budget);
    let bar = progress(plan.quiet);
    bar.set_message(method.name());
    let mut ev = loaded.evaluator()?;
    let (mut solutions, evaluated) = match method {
        Method::Exhaustive => pbg_ea::exhaustive(&mut ev, &lattice, &settings)?,
        _ => {
            let found = pbg_ea::pbg_ea(&mut ev, &lattice, &settings)?;
            (found.archive, found.evaluated)
        }
    };
    let evaluations = ev.evaluations();
    let seconds = plan.start.elapsed().as_secs_f64();
    sort_best_first(objectives, &mut solutions);
    let comparison = if plan.exhaustive {
        bar.set_message("evaluating every node");
        let mut all_ev = loaded.evaluator()?;
        let (minimal, _) = pbg_ea::exhaustive(&mut all_ev, &lattice, &settings)?;
        let c = pbg_ea::compare(objectives, epsilon, &solutions, &minimal);
        Some(Comparison {
            minimal: c.minimal,
            boxes: c.boxes,
            ce: c.ce,
            ce_per_solution: c.ce / solutions.len().max(1) as f64,
            rr: c.rr,
            seconds: plan.start.elapsed().as_secs_f64() - seconds,
        })
    } else {
        None
    };
    bar.finish_and_clear();

    let pbg_only = method == Method::PbgEa;
    let report = ObjectivesReport {
        method: method.name(),
        objectives: objectives.iter().map(|o| o.name()).collect(),
        epsilon,
        seed: pbg_only.then_some(pbg.seed),
        population: pbg_only.then_some(pbg.population),
        iterations: pbg_only.then_some(pbg.iterations),
        quasi_identifiers: &qis,
        budget,
        solutions: Solutions { qis: &qis, objectives, solutions: &solutions },
        nodes_evaluated: evaluations,
        lattice_size: lattice.size(),
        evaluated_percent: 100.0 * evaluations as f64 / lattice.size() as f64,
        seconds,
        comparison,
    };
    let xy = |s: &Scored| (s.values[0], s.values[1]);
    let names = (report.objectives[0], report.objectives[1]);
    let draw = |tmp: &Path| {
        let grey: Vec<(f64, f64)> = evaluated.iter().map(xy).collect();
        let red: Vec<(f64, f64)> = solutions.iter().map(xy).collect();
        plot::objectives_svg(tmp, names, &grey, &red)
    };
    publish(&plan.outputs, &report, draw)
}

/// PBG-EA's settings (the exhaustive search reads the objectives and the budget).
fn settings(objectives: &[Objective], epsilon: &[f64], pbg: &Pbg, budget: u64) -> PbgSettings {
    PbgSettings {
        objectives: objectives.to_vec(),
        epsilon: epsilon.to_vec(),
        population: pbg.population,
        iterations: pbg.iterations,
        seed: pbg.seed,
        p_cross: 0.8,
        p_mut: None,
        budget,
    }
}

/// Best first in the first objective, then the next; then by levels.
fn sort_best_first(objectives: &[Objective], solutions: &mut [Scored]) {
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
            .unwrap_or(Ordering::Equal)
            .then_with(|| a.levels.cmp(&b.levels))
    });
}
