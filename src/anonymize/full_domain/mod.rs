//! Full-domain generalization: a search of the lattice of levels (or the node
//! given with `--node`), then the chosen node measured ([`chosen`]), the
//! release at the node's levels.

mod chosen;
mod verdicts;

pub use chosen::recoding;

use super::reuse::{reuse_or_search, ReusePlan};
use super::{requirement, Account, Chosen, Plan, Search};
use crate::error::{bad, Infeasible};
use crate::evaluator::Evaluator;
use crate::lattice::{Lattice, Node};
use crate::load::Loaded;
use crate::measure::metrics::Requirement;
use crate::measure::privacy::ClassFigures;
use crate::options::Algorithm;
use crate::progress::Progress;
use crate::release::Recoding;
use crate::report::{
    by_qi, DeltaReport, DpReport, FullDomainReport, KMapReport, ModelReport, PersonsReport, ReleaseMetrics,
    ReuseReport, RiskLimitsReport, RowsPerPerson,
};
use crate::search::{self, bottomup, exhaustive, incognito, safepub, topdown, Problem, SearchResult};
use anyhow::Result;

/// A full-domain run, planned: what its search reads.
pub(super) struct FullDomain {
    node: Option<Vec<u8>>,
    req: Requirement,
    lattice: Lattice,
    algorithm: Algorithm,
    why: &'static str,
    /// `[search] reuse`: the plan.
    reuse: Option<ReusePlan>,
    /// With `differential_privacy`: the source's rows before sampling.
    unsampled_rows: Option<u64>,
}

/// What the report reads of a full-domain search and its chosen node.
pub(super) struct NodeAccount {
    searched: FullDomain,
    /// Distinct QI combinations in the source.
    combinations: u64,
    best: search::Found,
    feasible_nodes: usize,
    minimal_nodes: usize,
    nodes_checked: u64,
    /// What became of reuse (only when reuse is asked).
    reused: Option<ReuseReport>,
    evaluator: &'static str,
    evaluated: u64,
    am: f64,
    figures: Option<ClassFigures>,
    limits: Option<RiskLimitsReport>,
    persons: Option<crate::load::PersonStats>,
}

/// What the released classes reach under the job's risk limits (None without any).
fn risk_limits(
    plan: &Plan,
    req: &Requirement,
    units: u64,
    release: &[(u64, u64)],
    presence: Option<chosen::Presence>,
) -> Option<RiskLimitsReport> {
    let limits = &plan.job.privacy.limits;
    if !limits.any() {
        return None;
    }
    let mut sizes = std::collections::BTreeMap::new();
    for &(s, c) in release {
        *sizes.entry(s).or_insert(0) += c;
    }
    Some(RiskLimitsReport {
        figures: req.risk.map(|r| r.figures(&sizes)),
        delta_presence: limits.delta_presence.map(|(min, max)| DeltaReport {
            min,
            max,
            reached_min: presence.and_then(|p| p.delta).map(|d| d.0),
            reached_max: presence.and_then(|p| p.delta).map(|d| d.1),
        }),
        k_map: limits.k_map.map(|m| KMapReport {
            exact: plan.job.risk.population_table.is_some(),
            smallest_population_class: presence.and_then(|p| p.smallest),
            k: m.k,
            significance: m.significance,
            estimator: match m.estimator {
                crate::job::CellEstimator::Poisson => "poisson",
                crate::job::CellEstimator::ZeroTruncatedPoisson => "zero_truncated_poisson",
            },
            derived_k: crate::measure::limits::derived_k(&m, units, &plan.job.risk.settings),
        }),
    })
}

pub(super) fn prepare(
    plan: &Plan,
    node: Option<&[u8]>,
    reuse: Option<&ReusePlan>,
    source: &Loaded,
) -> Result<FullDomain> {
    let job = &plan.job;
    // With `[privacy] person` the budget counts persons.
    let units = source.data.units();
    let req = requirement_of(job, units);
    let lattice = Lattice::new(source.data.heights.clone());
    if let Some(levels) = node {
        if let Some((h, l)) = lattice.heights.iter().zip(levels).find(|(h, l)| l > h) {
            return Err(bad(format!("--node: level {l} is above the hierarchy's height {h}")));
        }
    }
    let (algorithm, why) = search::choose(job.algorithm, job.metric, &req, source.data.persons.is_some());
    let unsampled_rows = source.unsampled_rows;
    Ok(FullDomain {
        node: node.map(<[u8]>::to_vec),
        req,
        lattice,
        algorithm,
        why,
        reuse: reuse.cloned(),
        unsampled_rows,
    })
}

/// The job's requirement over `units` (rows, or persons): k raised to
/// estimated k-map's derived k, and the risk limits judged on class sizes.
pub(super) fn requirement_of(job: &crate::job::Job, units: u64) -> Requirement {
    let limits = &job.privacy.limits;
    let settings = &job.risk.settings;
    // With a population table k-map is exact (a per-class verdict); else estimated as a k.
    let estimated = limits.k_map.filter(|_| job.risk.population_table.is_none());
    let k_map = estimated.map_or(1, |m| crate::measure::limits::derived_k(&m, units, settings));
    Requirement {
        k: job.privacy.k.max(k_map),
        l: job.privacy.distinct_l(),
        budget: job.privacy.budget.rows(units),
        risk: crate::measure::limits::SizeLimits::new(limits, settings, units),
    }
}

impl Search for FullDomain {
    type Account = NodeAccount;

    fn search(
        self,
        plan: &Plan,
        source: &Loaded,
        progress: &dyn Progress,
    ) -> Result<Result<Chosen<NodeAccount>, Infeasible>> {
        let req = &self.req;
        // k is fixed here: classes under k are suppressed, so their glm terms are never needed.
        let by_loss = plan.job.metric == crate::options::Metric::Glm;
        let mut ev = source.evaluator()?.leaf_sums_from(req.k).for_risk_limits(req.risk.is_some(), by_loss)?;
        // Persons' dm costs a sort of every pair per node: the search reads it only when it ranks by it.
        ev.person_dm(plan.job.metric == crate::options::Metric::Dm);
        let combinations = ev.combinations()?;
        let source_sizes = ev.source_sizes()?;
        crate::trace(|| format!("run evaluator ({}) ready", ev.backend()));
        let (result, reused) = match &self.reuse {
            None => (self.search_lattice(plan, &mut ev, self.node.as_ref(), progress)?, None),
            Some(reuse) => {
                let search = |ev: &mut Evaluator, node: Option<&Vec<u8>>| self.search_lattice(plan, ev, node, progress);
                let (result, report) = reuse_or_search(plan, &self.lattice, req, reuse, &mut ev, search)?;
                (result, Some(report))
            }
        };
        crate::trace(|| "run search done".into());
        let SearchResult { feasible, minimal, best, checked } = result;
        let Some(mut best) = best else {
            let node =
                if self.node.is_some() { "the given node is not feasible" } else { "no generalization is feasible" };
            return Ok(Err(Infeasible(format!(
                "{node} for {} with at most {} suppressed rows",
                requirement(plan),
                req.budget
            ))));
        };
        let mut measured = chosen::measure(source, &mut ev, req, &best.levels)?;
        if let Some(outcome) = measured.outcome.take() {
            best.outcome = outcome;
        }
        let (evaluator, evaluated) = (ev.backend(), ev.evaluations());
        drop(ev);
        let figures = measured.judged.kept_figures(source, &measured.dropped);
        let limits = risk_limits(plan, req, source.data.units(), &measured.release_sizes, measured.presence);
        Ok(Ok(Chosen {
            recoding: Recoding::Levels {
                levels: best.levels.clone(),
                dropped: measured.dropped,
                dropped_there: measured.dropped_there,
                persons_dropped: source.persons.is_some(),
            },
            suppressed: best.outcome.suppressed_rows,
            source_sizes,
            release_sizes: Some(measured.release_sizes),
            account: NodeAccount {
                searched: self,
                combinations,
                best,
                feasible_nodes: feasible.len(),
                minimal_nodes: minimal,
                nodes_checked: checked,
                reused,
                evaluator,
                evaluated,
                am: measured.am,
                figures,
                limits,
                persons: source.persons,
            },
        }))
    }
}

impl FullDomain {
    /// The search stage: the given node judged, else the job's search of the lattice.
    fn search_lattice(
        &self,
        plan: &Plan,
        ev: &mut Evaluator,
        node: Option<&Vec<u8>>,
        progress: &dyn Progress,
    ) -> Result<SearchResult> {
        let req = &self.req;
        let problem = Problem { lattice: &self.lattice, req, metric: plan.job.metric };
        Ok(match node {
            Some(levels) => {
                let outcome = ev.histogram_kept(&Node::full(levels.clone()))?.outcome(levels, req, &ev.data);
                let feasible = if outcome.feasible { vec![levels.clone()] } else { vec![] };
                SearchResult {
                    minimal: feasible.len(),
                    feasible,
                    best: outcome.feasible.then(|| search::Found { levels: levels.clone(), outcome }),
                    checked: 1,
                }
            }
            None => match self.algorithm {
                Algorithm::Incognito => incognito::search(ev, &problem, progress)?,
                Algorithm::Exhaustive => exhaustive::search(ev, &problem, progress)?,
                Algorithm::Bottomup => bottomup::search(ev, &problem, progress)?,
                Algorithm::Safepub => {
                    let (dp, rows) = (plan.job.privacy.differential_privacy.as_ref(), self.unsampled_rows);
                    let (Some(dp), Some(derived), Some(rows)) = (dp, dp.and_then(|d| d.derived), rows) else {
                        anyhow::bail!("SafePub's walk without differential_privacy's sample");
                    };
                    let walk = safepub::Walk { steps: dp.steps, epsilon: derived.epsilon_search, seed: dp.seed };
                    safepub::search(ev, &problem, rows, &walk, progress)?
                }
                _ => topdown::search(ev, &problem, progress)?,
            },
        })
    }
}

impl Account for NodeAccount {
    fn report(&self, plan: &Plan, rows: u64, rows_out: u64) -> ModelReport {
        let (job, searched, best) = (&plan.job, &self.searched, &self.best);
        let req = &searched.req;
        let qis = job.qi_names();
        let forced = searched.node.is_some();
        let reused = self.reused.as_ref().is_some_and(|r| r.reused);
        ModelReport::FullDomain(FullDomainReport {
            combinations: self.combinations,
            rows_out,
            suppressed: rows - rows_out,
            budget: req.budget,
            node: by_qi(&qis, &best.levels),
            quasi_identifiers: qis.clone(),
            k: best.outcome.k,
            k_requested: req.k,
            l: best.outcome.l,
            l_requested: req.l,
            models: self.figures.clone(),
            risk_limits: self.limits.clone(),
            classes: best.outcome.classes,
            algorithm: match (forced, reused) {
                (true, _) => "node",
                (_, true) => "reuse",
                _ => searched.algorithm.name(),
            },
            algorithm_reason: match (forced, reused) {
                (true, _) => "--node given: no search",
                (_, true) => "reuse: the previous report's node still meets the job",
                _ => searched.why,
            },
            evaluator: self.evaluator,
            metric: job.metric.name(),
            metrics: ReleaseMetrics {
                node: best.outcome.metrics,
                lm: best.outcome.metrics.glm_normalized,
                am: self.am,
            },
            feasible_nodes: self.feasible_nodes,
            minimal_nodes: self.minimal_nodes,
            nodes_checked: self.nodes_checked,
            nodes_evaluated: self.evaluated,
            lattice_size: searched.lattice.size(),
            heights: by_qi(&qis, &searched.lattice.heights),
            differential_privacy: job
                .privacy
                .differential_privacy
                .as_ref()
                .and_then(|dp| Some(Box::new(DpReport::new(dp, dp.derived?, searched.unsampled_rows?, rows)))),
            reuse: self.reused.clone(),
            persons: self.persons.map(|p| PersonsReport {
                persons_in: p.persons,
                persons_out: p.persons - best.outcome.suppressed,
                suppressed_persons: best.outcome.suppressed,
                rows_per_person: RowsPerPerson {
                    min: p.rows_per_person[0],
                    median: p.rows_per_person[1],
                    max: p.rows_per_person[2],
                },
            }),
        })
    }

    fn summary(&self, plan: &Plan, rows: u64, rows_out: u64) -> String {
        let (job, best) = (&plan.job, &self.best);
        let node = job.qi_names().iter().zip(&best.levels).map(|(q, l)| format!("{q}={l}")).collect::<Vec<_>>();
        let persons = self.persons.map_or(String::new(), |p| {
            format!(
                ", {} of {} persons ({} suppressed)",
                p.persons - best.outcome.suppressed,
                p.persons,
                best.outcome.suppressed
            )
        });
        format!(
            "released {} of {} rows ({} suppressed){persons} as {} at node {}: k = {}, {} = {}",
            rows_out,
            rows,
            rows - rows_out,
            job.output.describe(&job.engine.kind),
            node.join(","),
            best.outcome.k.map_or("-".into(), |k| k.to_string()),
            job.metric.name(),
            best.outcome.metrics.get(job.metric)
        )
    }
}
