//! `[search] reuse` (`--reuse`): keep last night's node while it holds, so a
//! nightly release's generalization stays stable (docs/nightly.md). The node
//! is read from the previous report at the job's `[output] report` when the
//! plan is made; the full-domain search judges it on today's data
//! ([`judge`]) and searches only when it no longer meets the job.

use super::Plan;
use crate::error::{bad, Infeasible};
use crate::evaluator::Evaluator;
use crate::job::{DiversityKind, Job};
use crate::lattice::{Lattice, Node};
use crate::measure::metrics::{Histogram, Requirement};
use crate::options::{Metric, Reuse};
use crate::report::{by_qi, Compare, Drift, ReuseReport};
use crate::search::{Found, SearchResult};
use anyhow::Result;
use serde_json::{Map, Value};

/// What the plan settled about reuse.
#[derive(Clone)]
pub(crate) struct ReusePlan {
    pub(crate) mode: Reuse,
    /// `--compare`: also search, to report what keeping the node costs.
    pub(crate) compare: bool,
    pub(crate) previous: Previous,
}

/// The previous report's node, as far as it can be read.
#[derive(Clone)]
pub(crate) enum Previous {
    /// Levels in job order.
    Node(Vec<u8>),
    /// The previous node does not fit today's job (its QIs differ): the node
    /// as written, and why.
    Unusable(Map<String, Value>, String),
    /// No node to reuse (no previous report, or not a full-domain one): why.
    None(String),
}

/// Read the previous report for a job that reuses (exit 2 when the job has
/// no report to read, or the one there is not a report).
pub(crate) fn plan(job: &Job, mode: Reuse, compare: bool) -> Result<ReusePlan> {
    let file = job.path.display();
    let Some(path) = &job.output.report else {
        return Err(bad(format!(
            "{file}: reuse = \"{}\" reads the node of the previous report: the job needs [output] report",
            name(mode)
        )));
    };
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let why = format!("no previous report at {}", path.display());
            return Ok(ReusePlan { mode, compare, previous: Previous::None(why) });
        }
        Err(e) => return Err(bad(format!("{file}: reading the previous report {}: {e}", path.display()))),
    };
    let report: Value = serde_json::from_str(&text)
        .map_err(|e| bad(format!("{file}: the previous report {} is not JSON: {e}", path.display())))?;
    let Some(node) = report.get("node").and_then(Value::as_object) else {
        let why = format!("the previous report at {} has no full-domain node", path.display());
        return Ok(ReusePlan { mode, compare, previous: Previous::None(why) });
    };
    let qis = job.qi_names();
    let previous = if node.len() != qis.len() || node.keys().zip(&qis).any(|(a, b)| a != b) {
        let why = format!(
            "the previous node's quasi-identifiers ({}) are not the job's ({})",
            node.keys().cloned().collect::<Vec<_>>().join(", "),
            qis.join(", ")
        );
        Previous::Unusable(node.clone(), why)
    } else {
        let levels: Option<Vec<u8>> = node.values().map(|v| v.as_u64().and_then(|l| u8::try_from(l).ok())).collect();
        match levels {
            Some(levels) => Previous::Node(levels),
            None => {
                return Err(bad(format!(
                    "{file}: the previous report {} has a node that is not levels",
                    path.display()
                )))
            }
        }
    };
    Ok(ReusePlan { mode, compare, previous })
}

pub(crate) fn name(mode: Reuse) -> &'static str {
    match mode {
        Reuse::Off => "off",
        Reuse::Previous => "previous",
        Reuse::Required => "required",
    }
}

/// Why the previous node no longer meets the job, judged on its histogram
/// today: the first model whose suppression alone is over the budget ("k",
/// "l" for distinct ℓ, then the per-class models: "l" for entropy or
/// recursive ℓ, "t" for t-closeness, "l,t" for both), or "budget" when each
/// fits alone but not all together.
pub(crate) fn failed(hist: &Histogram, req: &Requirement, job: &Job) -> &'static str {
    let records = |under: &dyn Fn(&crate::measure::metrics::Bucket) -> bool| -> u64 {
        hist.buckets.iter().filter(|b| under(b)).map(|b| b.size * b.classes).sum()
    };
    if records(&|b| b.size < req.k) > req.budget {
        return "k";
    }
    if req.l.is_some_and(|l| records(&|b| b.ldiv < l) > req.budget) {
        return "l";
    }
    if records(&|b| !b.admitted) > req.budget {
        let l = job.privacy.diversity.as_ref().is_some_and(|d| d.kind != DiversityKind::Distinct);
        return match (l, job.privacy.closeness.is_some()) {
            (true, true) => "l,t",
            (true, false) => "l",
            _ => "t",
        };
    }
    "budget"
}

/// The full-domain search under reuse: the previous node when it still meets
/// the job (and, with `compare`, the search beside it), else the search, or
/// exit 3 under `required`. `search(ev, None)` is the job's search.
pub(super) fn reuse_or_search(
    plan: &Plan,
    lattice: &Lattice,
    req: &Requirement,
    ReusePlan { mode, compare, previous }: &ReusePlan,
    ev: &mut Evaluator,
    search: impl Fn(&mut Evaluator, Option<&Vec<u8>>) -> Result<SearchResult>,
) -> Result<(SearchResult, ReuseReport)> {
    let job = &plan.job;
    let qis = job.qi_names();
    let mut report = ReuseReport::default();
    // The previous node as written, and why it fails today (when it holds, the run returns here).
    let (previous_node, failed) = match previous {
        Previous::None(why) => {
            eprintln!("kanon: {why}: searching");
            report.reuse_note = Some(format!("{why}: searched"));
            return Ok((search(ev, None)?, report));
        }
        Previous::Unusable(node, why) => {
            eprintln!("kanon: warning: {why}");
            (node.clone(), "quasi_identifiers")
        }
        Previous::Node(levels) if levels.iter().zip(&lattice.heights).any(|(l, h)| l > h) => {
            eprintln!("kanon: warning: the previous node {} is above today's hierarchies' heights", show(&qis, levels));
            (by_qi(&qis, levels), "hierarchy")
        }
        Previous::Node(levels) => {
            let hist = ev.histogram_kept(&Node::full(levels.clone()))?;
            let outcome = hist.outcome(levels, req, &ev.data);
            if outcome.feasible {
                let kept = outcome.metrics.get(job.metric);
                let mut result = SearchResult {
                    feasible: vec![levels.clone()],
                    minimal: 1,
                    best: Some(Found { levels: levels.clone(), outcome }),
                    checked: 1,
                };
                report.reused = true;
                if *compare {
                    let searched = search(ev, None)?;
                    let optimum = searched.best.as_ref().expect("a feasible node exists, so the search finds one");
                    let best = optimum.outcome.metrics.get(job.metric);
                    let excess = if job.metric == Metric::Precision { best - kept } else { kept - best };
                    report.compare = Some(Compare {
                        optimum: by_qi(&qis, &optimum.levels),
                        metric: job.metric.name(),
                        kept_value: kept,
                        optimum_value: best,
                        excess: excess.max(0.0),
                    });
                    result.checked += searched.checked;
                }
                return Ok((result, report));
            }
            let why = failed(&hist, req, job);
            // Not released after all: its kept set would only take memory from the search.
            ev.retain(|_| false)?;
            let unit = if ev.data.persons.is_some() { "persons" } else { "rows" };
            eprintln!(
                "kanon: warning: the previous node {} no longer meets the job ({why} fails: {} {unit} to suppress, at most {} allowed)",
                show(&qis, levels),
                outcome.suppressed,
                req.budget
            );
            (by_qi(&qis, levels), why)
        }
    };
    if *mode == Reuse::Required {
        let node = previous_node.iter().map(|(q, l)| format!("{q}={l}")).collect::<Vec<_>>().join(",");
        return Err(anyhow::Error::new(Infeasible(format!(
            "reuse = \"required\": the previous node {node} no longer meets the job ({failed} fails); run with reuse = \"previous\" (or without reuse) to search for a new one"
        ))));
    }
    let result = search(ev, None)?;
    if let Some(best) = &result.best {
        eprintln!("kanon: warning: released the new node {} instead", show(&qis, &best.levels));
    }
    report.drift = Some(Drift {
        previous_node,
        failed,
        node: result.best.as_ref().map_or_else(Map::new, |b| by_qi(&qis, &b.levels)),
    });
    Ok((result, report))
}

/// A node as `a=1,b=2`.
fn show(qis: &[String], levels: &[u8]) -> String {
    qis.iter().zip(levels).map(|(q, l)| format!("{q}={l}")).collect::<Vec<_>>().join(",")
}
