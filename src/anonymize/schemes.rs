//! Li & Li's schemes: the optimal partition of each QI's values under one
//! scheme, records in classes under k suppressed and charged by the metric
//! (capped by `max_suppression` when the job sets it); blocks released under
//! their labels.

use super::risk::PartitionClasses;
use super::{Plan, Stages};
use crate::data::frequency::Extras;
use crate::data::hierarchy::HierarchyRows;
use crate::engine::types::ColumnType;
use crate::error::bad;
use crate::evaluator::memory::MemorySets;
use crate::load::Loaded;
use crate::options::{Metric, Scheme};
use crate::progress::Progress;
use crate::release::{Recoding, Written};
use crate::report::{ModelReport, PruningReport, SchemeMetrics, SchemeReport};
use crate::search::partitions::{self, DpChoice, Optimum, Problem, Pruning};
use crate::search::scheme::ValueTree;
use anyhow::Result;
use serde_json::json;

pub(super) struct Schemes {
    scheme: Scheme,
    pruning: Pruning,
    domains: Vec<ValueTree>,
    leaf_codes: Vec<Vec<i64>>,
    sets: Option<MemorySets>,
    /// The source's class sizes, off the base set (without extra columns).
    source_sizes: Option<Vec<(u64, u64)>>,
    /// The release's class sizes, counted once the search found its partitions.
    release_sizes: Option<Vec<(u64, u64)>>,
    cap: Option<u64>,
    best: Option<Optimum>,
    dropped: Vec<Vec<u32>>,
    lm_am: (f64, f64),
}

pub(super) fn prepare(
    plan: &Plan,
    scheme: Scheme,
    pruning: Pruning,
    source: &Loaded,
    phase: &indicatif::ProgressBar,
) -> Result<Schemes> {
    let job = &plan.job;
    phase.set_message(format!("reading the hierarchies as {} domains", scheme.name()));
    let mut domains = Vec::new();
    let mut leaf_codes = Vec::new();
    for (a, q) in job.qi_names().iter().enumerate() {
        let numeric =
            source.columns.iter().find(|c| c.name == *q).is_some_and(|c| ColumnType::of(&c.type_name).is_number());
        let h = HierarchyRows::read(&source.conn, a, source.data.heights[a])?;
        domains.push(ValueTree::new(q, scheme, numeric, &h).map_err(|e| bad(format!("{}: {e}", job.path.display())))?);
        leaf_codes.push(h.present);
    }
    let sets = MemorySets::new(&source.conn, &source.data.heights, Extras::default(), source.threads)?;
    let cap = job.privacy.budget_given.then(|| job.privacy.budget.rows(source.data.rows));
    Ok(Schemes {
        scheme,
        pruning,
        domains,
        leaf_codes,
        sets: Some(sets),
        source_sizes: None,
        release_sizes: None,
        cap,
        best: None,
        dropped: Vec::new(),
        lm_am: (0.0, 0.0),
    })
}

impl Stages for Schemes {
    fn search(&mut self, plan: &Plan, source: &Loaded, progress: &dyn Progress) -> Result<bool> {
        progress.message(format!("searching {} anonymizations", self.scheme.name()));
        let sets = self.sets.take().expect("searched once");
        if !source.extras.any() {
            self.source_sizes = Some(sets.base_sizes());
        }
        let (codes, counts) = sets.base_columns();
        let problem = Problem {
            codes,
            counts,
            domains: &self.domains,
            k: plan.job.privacy.k,
            cap: self.cap,
            metric: plan.job.metric,
            threads: source.threads,
        };
        self.best = partitions::search(&problem, self.pruning, progress);
        if let Some(best) = &self.best {
            self.dropped = partitions::dropped_classes(&problem, &best.partitions);
            self.lm_am = partitions::lm_am(&problem, &best.partitions);
            // The release's classes for risk analysis, off the base set here rather than re-read.
            let blocks: Vec<Vec<u32>> = best.partitions.iter().map(|p| p.blocks.clone()).collect();
            let mut classes = PartitionClasses::default();
            let mut leaves = Vec::with_capacity(codes.len());
            for (row, &records) in counts.iter().enumerate() {
                leaves.clear();
                leaves.extend(codes.iter().map(|col| col[row]));
                classes.add(&leaves, &blocks, records);
            }
            self.release_sizes = Some(classes.sizes(&self.dropped));
        }
        Ok(self.best.is_some())
    }

    fn infeasible(&self, plan: &Plan, rows: u64) -> String {
        format!(
            "no {} anonymization keeps k = {} with at most {} suppressed rows",
            self.scheme.name(),
            plan.job.privacy.k,
            self.cap.unwrap_or(rows)
        )
    }

    fn suppressed(&self) -> u64 {
        self.best.as_ref().map_or(0, |b| b.measures.suppressed)
    }

    fn source_sizes(&self) -> Option<Vec<(u64, u64)>> {
        self.source_sizes.clone()
    }

    fn release_sizes(&self) -> Option<Vec<(u64, u64)>> {
        self.release_sizes.clone()
    }

    fn recoding(&mut self, _plan: &Plan, _source: &Loaded) -> Result<Recoding> {
        let best = self.best.as_ref().expect("recoding follows a feasible search");
        Ok(Recoding::Partitions {
            leaf_codes: std::mem::take(&mut self.leaf_codes),
            blocks: best.partitions.iter().map(|s| s.blocks.clone()).collect(),
            labels: self.domains.iter().zip(&best.partitions).map(|(d, s)| d.labels(s)).collect(),
            dropped: std::mem::take(&mut self.dropped),
        })
    }

    fn report(&self, plan: &Plan, _rows: u64, written: &Written) -> ModelReport {
        let job = &plan.job;
        let best = self.best.as_ref().expect("reported after a feasible search");
        let qis = job.qi_names();
        let partitions = qis
            .iter()
            .zip(self.domains.iter().zip(&best.partitions))
            .map(|(q, (d, s))| {
                let lists: Vec<Vec<Option<String>>> = d
                    .block_lists(&s.blocks)
                    .iter()
                    .map(|b| b.iter().map(|&i| d.values[i as usize].clone()).collect())
                    .collect();
                (q.clone(), json!(lists))
            })
            .collect();
        let blocks = self.domains.iter().zip(&best.partitions).map(|(d, s)| (d.column.clone(), json!(s.nblocks)));
        let (m, p) = (&best.measures, &self.pruning);
        ModelReport::Scheme(SchemeReport {
            rows_out: written.rows,
            suppressed: m.suppressed,
            suppression_cap: self.cap,
            quasi_identifiers: qis.clone(),
            scheme: self.scheme.name(),
            partitions,
            blocks: blocks.collect(),
            k_requested: job.privacy.k,
            classes: m.classes,
            metric: job.metric.name(),
            metrics: SchemeMetrics { dm: m.dm, hdm: m.hdm, glm: m.glm, lm: self.lm_am.0, am: self.lm_am.1 },
            algorithm: "li-li",
            nodes_evaluated: best.evaluated,
            nodes_expanded: best.expanded,
            dp_quasi_identifier: best.dp_qi.map(|a| qis[a].clone()),
            pruning: PruningReport {
                seeding: p.seeding,
                modified_bfs: p.modified_bfs,
                node_rearrangement: p.node_order,
                applicator_rearrangement: p.applicator_order,
                dp: p.dp != DpChoice::Off,
                classes: p.small_classes,
                blocks: p.useless_blocks,
                stuck: p.stuck_classes,
            },
        })
    }

    fn summary(&self, plan: &Plan, rows: u64, written: &Written) -> String {
        let job = &plan.job;
        let best = self.best.as_ref().expect("summed up after a feasible search");
        let m = &best.measures;
        format!(
            "released {} of {rows} rows ({} suppressed) as {} under {}: {} = {}, {} anonymizations evaluated",
            written.rows,
            m.suppressed,
            job.output.describe(&job.engine.kind),
            self.scheme.name(),
            job.metric.name(),
            match job.metric {
                Metric::Dm => m.dm,
                Metric::Hdm => m.hdm,
                _ => m.glm,
            },
            best.evaluated
        )
    }
}
