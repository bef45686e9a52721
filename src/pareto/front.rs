//! The front of k against one loss: `exact` (the true front, by bounds) or
//! `poka` (the heuristic, to `depth`); with `--exhaustive`, every node too,
//! and the method's recall against the true front.

use super::plan::Plan;
use super::report::{FrontReport, Points, TrueFront};
use super::{plot, publish, Method};
use crate::evaluator::Evaluator;
use crate::lattice::Lattice;
use crate::load::load_showing;
use crate::options::Metric;
use crate::progress::{progress, spinner};
use crate::search::exact_front::exact_front;
use crate::search::front::{self as pareto, Point, PokaComparison};
use crate::search::poka;
use anyhow::Result;
use std::path::Path;

/// Search, compare when asked, write the files and print the front.
pub(super) fn run(plan: &Plan, method: Method, depth: Option<u32>, picked: Option<&[u8]>) -> Result<()> {
    let job = &plan.job;
    let phase = spinner(plan.quiet);
    let loaded = load_showing(job, &phase)?;
    phase.finish_and_clear();
    let qis = job.qi_names();
    let lattice = Lattice::new(loaded.data.heights.clone());
    let budget = job.privacy.budget.rows(loaded.data.units());
    let bar = progress(plan.quiet);
    bar.set_message(method.name());

    let mut ev = loaded.evaluator()?;
    let (front, depth) = search(&mut ev, &lattice, budget, job.metric, method, depth)?;
    let evaluations = ev.evaluations();
    let seconds = plan.start.elapsed().as_secs_f64();
    let evaluated = ev.cached_full_nodes();
    let evaluated_points = pareto::points(&mut ev, &evaluated, budget, job.metric)?;
    let picked = match picked {
        Some(l) => Some(pareto::points(&mut ev, &[l.to_vec()], budget, job.metric)?.remove(0)),
        None => None,
    };
    let truth: Option<(PokaComparison, f64)> = if plan.exhaustive {
        bar.set_message("evaluating every node");
        let mut all_ev = loaded.evaluator()?;
        let all = pareto::points(&mut all_ev, &lattice.nodes(), budget, job.metric)?;
        let comparison = pareto::compare(&front, pareto::front(&all));
        Some((comparison, plan.start.elapsed().as_secs_f64() - seconds))
    } else {
        None
    };
    bar.finish_and_clear();

    let report = FrontReport {
        quasi_identifiers: &qis,
        budget,
        metric: job.metric.name(),
        method: method.name(),
        depth,
        front: Points { qis: &qis, points: &front },
        nodes_evaluated: evaluations,
        lattice_size: lattice.size(),
        evaluated_percent: 100.0 * evaluations as f64 / lattice.size() as f64,
        seconds,
        exhaustive: truth.as_ref().map(|(c, seconds)| TrueFront {
            front: Points { qis: &qis, points: &c.true_front },
            true_front_size: c.true_front.len(),
            found: c.found,
            recall: c.recall,
            missed: Points { qis: &qis, points: &c.missed },
            dominated_reported: Points { qis: &qis, points: &c.dominated_reported },
            seconds: *seconds,
        }),
    };
    let draw = |tmp: &Path| plot::front_svg(tmp, job.metric.name(), &evaluated_points, &front, picked.as_ref());
    publish(&plan.outputs, &report, draw)
}

/// The method's front, with poka's depth.
fn search(
    ev: &mut Evaluator,
    lattice: &Lattice,
    budget: u64,
    metric: Metric,
    method: Method,
    depth: Option<u32>,
) -> Result<(Vec<Point>, Option<u32>)> {
    Ok(match method {
        Method::Poka => {
            let found = poka::poka(ev, lattice, budget, metric, depth)?;
            (found.front, Some(found.depth))
        }
        _ => (exact_front(ev, lattice, budget, metric)?.front, None),
    })
}
