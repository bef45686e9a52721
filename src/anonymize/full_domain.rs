//! Full-domain generalization: a search of the lattice of levels (or the node
//! given with `--node`), the release at the node's levels.

use super::reuse::{reuse_or_search, ReusePlan};
use super::{requirement, Plan, Stages};
use crate::error::bad;
use crate::evaluator::classes::full_domain_ambiguity;
use crate::lattice::{Lattice, Node};
use crate::load::Loaded;
use crate::measure::metrics::{classes_ambiguity, Requirement};
use crate::measure::privacy::ClassFigures;
use crate::options::Algorithm;
use crate::progress::Progress;
use crate::release::{write_node_classes, Judged, Recoding, Written};
use crate::report::{by_qi, FullDomainReport, ModelReport, ReleaseMetrics, ReuseReport};
use crate::search::{self, exhaustive, incognito, topdown, Found, Problem, SearchResult};
use anyhow::Result;
use std::collections::HashSet;

pub(super) struct FullDomain {
    node: Option<Vec<u8>>,
    req: Requirement,
    lattice: Lattice,
    combinations: u64,
    algorithm: Algorithm,
    why: &'static str,
    result: Option<SearchResult>,
    best: Option<Found>,
    evaluator: &'static str,
    evaluated: u64,
    am: f64,
    figures: Option<ClassFigures>,
    /// The optimum's classes judged by the per-class models.
    judged: Judged,
    /// The released classes' (size, count), from the node's histogram.
    release_sizes: Vec<(u64, u64)>,
    /// The source's class sizes, when the evaluator held them.
    source_sizes: Option<Vec<(u64, u64)>>,
    /// The optimum's suppressed classes, when the evaluator held them in memory.
    dropped: Option<Vec<Box<[i64]>>>,
    /// `[search] reuse`: the plan, then what became of it.
    reuse: Option<ReusePlan>,
    reused: Option<ReuseReport>,
}

pub(super) fn prepare(
    plan: &Plan,
    node: Option<&[u8]>,
    reuse: Option<&ReusePlan>,
    source: &Loaded,
) -> Result<FullDomain> {
    let job = &plan.job;
    let rows = source.data.rows;
    let req = Requirement { k: job.privacy.k, l: job.privacy.distinct_l(), budget: job.privacy.budget.rows(rows) };
    let lattice = Lattice::new(source.data.heights.clone());
    if let Some(levels) = node {
        if let Some((h, l)) = lattice.heights.iter().zip(levels).find(|(h, l)| l > h) {
            return Err(bad(format!("--node: level {l} is above the hierarchy's height {h}")));
        }
    }
    let (algorithm, why) = search::choose(job.algorithm);
    Ok(FullDomain {
        node: node.map(<[u8]>::to_vec),
        req,
        lattice,
        combinations: 0,
        algorithm,
        why,
        result: None,
        best: None,
        evaluator: "",
        evaluated: 0,
        am: 0.0,
        figures: None,
        judged: Judged::default(),
        release_sizes: Vec::new(),
        source_sizes: None,
        dropped: None,
        reuse: reuse.cloned(),
        reused: None,
    })
}

impl Stages for FullDomain {
    fn search(&mut self, plan: &Plan, source: &Loaded, progress: &dyn Progress) -> Result<bool> {
        let req = &self.req;
        // k is fixed here: classes under k are suppressed, so their glm terms are never needed.
        let mut ev = source.evaluator()?.leaf_sums_from(req.k);
        self.combinations = ev.combinations()?;
        self.source_sizes = ev.source_sizes();
        crate::trace(|| format!("run evaluator ({}) ready", ev.backend()));
        let problem = Problem { lattice: &self.lattice, req, metric: plan.job.metric };
        let search = |ev: &mut crate::evaluator::Evaluator, node: Option<&Vec<u8>>| -> Result<SearchResult> {
            Ok(match node {
                Some(levels) => {
                    let outcome = ev.histogram_kept(&Node::full(levels.clone()))?.outcome(levels, req, &ev.data);
                    let feasible = if outcome.feasible { vec![levels.clone()] } else { vec![] };
                    SearchResult {
                        minimal: feasible.len(),
                        feasible,
                        best: outcome.feasible.then(|| Found { levels: levels.clone(), outcome }),
                        checked: 1,
                    }
                }
                None => match self.algorithm {
                    Algorithm::Incognito => incognito::search(ev, &problem, progress)?,
                    Algorithm::Exhaustive => exhaustive::search(ev, &problem, progress)?,
                    _ => topdown::search(ev, &problem, progress)?,
                },
            })
        };
        let result = match &self.reuse {
            None => search(&mut ev, self.node.as_ref())?,
            Some(reuse) => {
                let (result, report) = reuse_or_search(plan, &self.lattice, req, reuse, &mut ev, search)?;
                self.reused = Some(report);
                result
            }
        };
        crate::trace(|| "run search done".into());
        if let Some(best) = &result.best {
            let node = Node::full(best.levels.clone());
            let mut classes = ev.classes(&node);
            self.release_sizes = ev.histogram(&node)?.kept_sizes(req);
            // The classes' value lists: from the set in memory, else off the base frequency set.
            let judged = match &mut classes {
                Some(c) => Judged::of_classes(source, &c.codes, std::mem::take(&mut c.lists)),
                None => Judged::read(source, &best.levels)?,
            };
            self.am = match classes {
                Some(classes) => {
                    // The classes in memory: the suppressed ones and am without another scan.
                    let rejected: HashSet<&[i64]> = judged.rejected.iter().map(|c| &c[..]).collect();
                    let l = req.l.unwrap_or(0);
                    let kept = |c: usize| {
                        classes.size[c] >= req.k
                            && classes.ldiv.get(c).map_or(0, |&d| d) >= l
                            && !rejected.contains(&classes.codes[c][..])
                    };
                    let am = classes_ambiguity(&classes.size, &classes.leaves, kept, &source.data);
                    self.dropped =
                        Some((0..classes.size.len()).filter(|&c| !kept(c)).map(|c| classes.codes[c].clone()).collect());
                    am
                }
                None => {
                    // One scan for am and the suppressed classes: of the node's set if kept, else of the base.
                    write_node_classes(source, &best.levels, ev.kept_set(&node).as_ref())?;
                    let am = full_domain_ambiguity(&source.conn, &best.levels, req, &judged.rejected, &source.data)?;
                    if let Recoding::Levels { dropped, .. } =
                        Recoding::levels_judged(source, &best.levels, req, &judged)?
                    {
                        self.dropped = Some(dropped);
                    }
                    // Read; at scale it holds gigabytes of the pool the release wants.
                    source.conn.execute_batch("DROP TABLE kanon_node_classes")?;
                    am
                }
            };
            self.judged = judged;
        }
        self.evaluator = ev.backend();
        self.evaluated = ev.evaluations();
        drop(ev);
        self.best = result.best.clone();
        self.result = Some(result);
        Ok(self.best.is_some())
    }

    fn infeasible(&self, _plan: &Plan, _rows: u64) -> String {
        let node = if self.node.is_some() { "the given node is not feasible" } else { "no generalization is feasible" };
        format!("{node} for {} with at most {} suppressed rows", requirement(_plan), self.req.budget)
    }

    fn suppressed(&self) -> u64 {
        self.best.as_ref().map_or(0, |b| b.outcome.suppressed)
    }

    fn release_sizes(&self) -> Option<Vec<(u64, u64)>> {
        Some(self.release_sizes.clone())
    }

    fn source_sizes(&self) -> Option<Vec<(u64, u64)>> {
        self.source_sizes.clone()
    }

    fn recoding(&mut self, _plan: &Plan, source: &Loaded) -> Result<Recoding> {
        let best = self.best.as_ref().expect("recoding follows a feasible search");
        let dropped = self.dropped.take().expect("the search read the optimum's suppressed classes");
        let recoding = Recoding::Levels { levels: best.levels.clone(), dropped };
        if let Recoding::Levels { dropped, .. } = &recoding {
            self.figures = self.judged.kept_figures(source, dropped);
        }
        Ok(recoding)
    }

    fn report(&self, plan: &Plan, rows: u64, written: &Written) -> ModelReport {
        let (job, req) = (&plan.job, &self.req);
        let best = self.best.as_ref().expect("reported after a feasible search");
        let result = self.result.as_ref().expect("reported after the search");
        let qis = job.qi_names();
        let forced = self.node.is_some();
        let reused = self.reused.as_ref().is_some_and(|r| r.reused);
        ModelReport::FullDomain(FullDomainReport {
            combinations: self.combinations,
            rows_out: written.rows,
            suppressed: rows - written.rows,
            budget: req.budget,
            node: by_qi(&qis, &best.levels),
            quasi_identifiers: qis.clone(),
            k: best.outcome.k,
            k_requested: req.k,
            l: best.outcome.l,
            l_requested: req.l,
            models: self.figures.clone(),
            classes: best.outcome.classes,
            algorithm: match (forced, reused) {
                (true, _) => "node",
                (_, true) => "reuse",
                _ => self.algorithm.name(),
            },
            algorithm_reason: match (forced, reused) {
                (true, _) => "--node given: no search",
                (_, true) => "reuse: the previous report's node still meets the job",
                _ => self.why,
            },
            evaluator: self.evaluator,
            metric: job.metric.name(),
            metrics: ReleaseMetrics {
                node: best.outcome.metrics,
                lm: best.outcome.metrics.glm_normalized,
                am: self.am,
            },
            feasible_nodes: result.feasible.len(),
            minimal_nodes: result.minimal,
            nodes_checked: result.checked,
            nodes_evaluated: self.evaluated,
            lattice_size: self.lattice.size(),
            heights: by_qi(&qis, &self.lattice.heights),
            reuse: self.reused.clone(),
        })
    }

    fn summary(&self, plan: &Plan, rows: u64, written: &Written) -> String {
        let job = &plan.job;
        let best = self.best.as_ref().expect("summed up after a feasible search");
        let node = job.qi_names().iter().zip(&best.levels).map(|(q, l)| format!("{q}={l}")).collect::<Vec<_>>();
        format!(
            "released {} of {} rows ({} suppressed) as {} at node {}: k = {}, {} = {}",
            written.rows,
            rows,
            rows - written.rows,
            job.output.describe(&job.engine.kind),
            node.join(","),
            best.outcome.k.map_or("-".into(), |k| k.to_string()),
            job.metric.name(),
            best.outcome.metrics.get(job.metric)
        )
    }
}
