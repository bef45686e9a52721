//! Li & Li's schemes: the optimal partition of each QI's values under one
//! scheme, records in classes under k suppressed and charged by the metric
//! (capped by `max_suppression` when the job sets it); blocks released under
//! their labels.

use super::risk::PartitionClasses;
use super::{Account, Chosen, Plan, Search};
use crate::data::frequency::Extras;
use crate::data::hierarchy::HierarchyRows;
use crate::engine::types::ColumnType;
use crate::error::{bad, Infeasible};
use crate::evaluator::memory::MemorySets;
use crate::load::Loaded;
use crate::options::{Metric, Scheme};
use crate::progress::Progress;
use crate::release::Recoding;
use crate::report::{ModelReport, PruningReport, SchemeMetrics, SchemeReport};
use crate::search::partitions::{self, DpChoice, Optimum, Problem, Pruning};
use crate::search::scheme::ValueTree;
use anyhow::Result;
use serde_json::json;

/// A scheme run, planned: what its search reads.
pub(super) struct Schemes {
    scheme: Scheme,
    pruning: Pruning,
    domains: Vec<ValueTree>,
    leaf_codes: Vec<Vec<i64>>,
    sets: MemorySets,
    cap: Option<u64>,
}

/// What the report reads of a scheme search: its optimum and the release's lm and am.
pub(super) struct SchemeAccount {
    scheme: Scheme,
    pruning: Pruning,
    domains: Vec<ValueTree>,
    cap: Option<u64>,
    best: Optimum,
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
    let sets =
        MemorySets::new(&source.conn, &source.base.form(), &source.data.heights, Extras::default(), source.threads)?;
    let cap = job.privacy.budget_given.then(|| job.privacy.budget.rows(source.data.rows));
    Ok(Schemes { scheme, pruning, domains, leaf_codes, sets, cap })
}

impl Search for Schemes {
    type Account = SchemeAccount;

    fn search(
        self,
        plan: &Plan,
        source: &Loaded,
        progress: &dyn Progress,
    ) -> Result<Result<Chosen<SchemeAccount>, Infeasible>> {
        progress.message(format!("searching {} anonymizations", self.scheme.name()));
        let source_sizes = (!source.extras.any()).then(|| self.sets.base_sizes());
        let (codes, counts) = self.sets.base_columns();
        let problem = Problem {
            codes,
            counts,
            domains: &self.domains,
            k: plan.job.privacy.k,
            cap: self.cap,
            metric: plan.job.metric,
            threads: source.threads,
        };
        let Some(best) = partitions::search(&problem, self.pruning, progress) else {
            return Ok(Err(Infeasible(format!(
                "no {} anonymization keeps k = {} with at most {} suppressed rows",
                self.scheme.name(),
                plan.job.privacy.k,
                self.cap.unwrap_or(source.data.rows)
            ))));
        };
        let dropped = partitions::dropped_classes(&problem, &best.partitions);
        let lm_am = partitions::lm_am(&problem, &best.partitions);
        let blocks: Vec<Vec<u32>> = best.partitions.iter().map(|p| p.blocks.clone()).collect();
        // The release's classes for risk analysis, off the base set here rather than re-read.
        let mut classes = PartitionClasses::default();
        let mut leaves = Vec::with_capacity(codes.len());
        for (row, &records) in counts.iter().enumerate() {
            leaves.clear();
            leaves.extend(codes.iter().map(|col| col[row]));
            classes.add(&leaves, &blocks, records);
        }
        let release_sizes = classes.sizes(&dropped);
        let labels = self.domains.iter().zip(&best.partitions).map(|(d, s)| d.labels(s)).collect();
        Ok(Ok(Chosen {
            recoding: Recoding::Partitions { leaf_codes: self.leaf_codes, blocks, labels, dropped },
            suppressed: best.measures.suppressed,
            source_sizes,
            release_sizes: Some(release_sizes),
            account: SchemeAccount {
                scheme: self.scheme,
                pruning: self.pruning,
                domains: self.domains,
                cap: self.cap,
                best,
                lm_am,
            },
        }))
    }
}

impl Account for SchemeAccount {
    fn report(&self, plan: &Plan, _rows: u64, rows_out: u64) -> ModelReport {
        let (job, best) = (&plan.job, &self.best);
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
            rows_out,
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

    fn summary(&self, plan: &Plan, rows: u64, rows_out: u64) -> String {
        let (job, best) = (&plan.job, &self.best);
        let m = &best.measures;
        format!(
            "released {} of {rows} rows ({} suppressed) as {} under {}: {} = {}, {} anonymizations evaluated",
            rows_out,
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
