//! Cell-based generalization (Nergiz & Clifton): one sorted pass clusters the
//! records, each cluster generalized on its own (CDGH along the hierarchies,
//! CNDGH to value sets and numeric ranges); fewer than k records are
//! suppressed. Infeasible when the job caps suppression (`max_suppression`)
//! below what the pass suppresses, or nothing is released.

use super::{requirement, Account, Chosen, Plan, Search};
mod measure;
mod pass;

use crate::error::Infeasible;
use crate::load::Loaded;
use crate::progress::Progress;
use crate::release::{CellRecoding, Recoding};
use crate::report::{CellMetrics, CellsReport, ModelReport};
use crate::search::cbg::ClusterSettings;
use crate::search::cells::CellDomain;
use anyhow::{Context, Result};
use measure::{measure, Measured};
use pass::{cluster, domains, Pass};
use serde_json::json;
use std::sync::Arc;

/// A cell-based run, planned: what its pass reads.
pub(super) struct Cells {
    domains: Vec<CellDomain>,
    settings: ClusterSettings,
    cap: Option<u64>,
}

/// What the report reads of the pass: the release's measures and its clusters.
pub(super) struct CellsAccount {
    settings: ClusterSettings,
    cap: Option<u64>,
    measured: Measured,
    recoding: Arc<CellRecoding>,
}

pub(super) fn prepare(plan: &Plan, source: &Loaded, phase: &indicatif::ProgressBar) -> Result<Cells> {
    let job = &plan.job;
    phase.set_message("numbering each quasi-identifier's values");
    let domains = domains(source, job, job.algorithm)?;
    let settings =
        ClusterSettings { k: job.privacy.k, l: job.privacy.diversity.as_ref().map(|d| d.l), open: job.open_clusters };
    let cap = job.privacy.budget_given.then(|| job.privacy.budget.rows(source.data.rows));
    Ok(Cells { domains, settings, cap })
}

impl Search for Cells {
    type Account = CellsAccount;

    fn search(
        self,
        plan: &Plan,
        source: &Loaded,
        progress: &dyn Progress,
    ) -> Result<Result<Chosen<CellsAccount>, Infeasible>> {
        let rows = source.data.rows;
        progress.message(format!("clustering the {rows} records ({})", plan.job.algorithm.name()));
        let pass = cluster(source, &plan.job, &self.domains, self.settings)?;
        let suppressed = pass.clusters.suppressed;
        if pass.clusters.sizes.is_empty() || self.cap.is_some_and(|c| suppressed > c) {
            return Ok(Err(Infeasible(format!(
                "{} suppresses {suppressed} of {rows} rows for {}{}",
                plan.job.algorithm.name(),
                requirement(plan),
                self.cap.map_or(String::new(), |c| format!(", above max_suppression ({c} rows)"))
            ))));
        }
        let measured = measure(&pass, &self.domains, rows);
        let position = source.position.clone().context("the source was opened without row positions")?;
        let Pass { clusters, cluster_of, source_sizes, .. } = pass;
        let recoding = Arc::new(CellRecoding { cluster_of, clusters, domains: self.domains, position });
        Ok(Ok(Chosen {
            recoding: Recoding::Cells(recoding.clone()),
            suppressed,
            source_sizes: Some(source_sizes),
            release_sizes: None,
            account: CellsAccount { settings: self.settings, cap: self.cap, measured, recoding },
        }))
    }
}

impl Account for CellsAccount {
    fn report(&self, plan: &Plan, rows: u64, rows_out: u64) -> ModelReport {
        let (job, m, rec) = (&plan.job, &self.measured, &self.recoding);
        let qis = job.qi_names();
        let distinct = qis.iter().zip(&rec.clusters.distinct).map(|(q, d)| (q.clone(), json!(d.len())));
        let reconstruction = matches!(&plan.model, super::Model::Cells { reconstruction: Some(_), .. });
        ModelReport::Cells(CellsReport {
            rows_out,
            suppressed: rows - rows_out,
            suppression_cap: self.cap,
            quasi_identifiers: qis.clone(),
            algorithm: job.algorithm.name(),
            open_clusters: self.settings.open,
            k_requested: job.privacy.k,
            k: m.k,
            l_requested: self.settings.l,
            l: m.l,
            clusters: rec.clusters.sizes.len(),
            classes: m.classes,
            metrics: CellMetrics { lm: m.lm, am: m.am, dm: m.dm, cm: m.cm },
            distinct_cells: distinct.collect(),
            seed: match &plan.model {
                super::Model::Cells { seed, .. } if reconstruction => Some(*seed),
                _ => None,
            },
        })
    }

    fn summary(&self, plan: &Plan, rows: u64, rows_out: u64) -> String {
        let (job, m, rec) = (&plan.job, &self.measured, &self.recoding);
        let reconstruction = match &plan.model {
            super::Model::Cells { reconstruction: Some(r), .. } => {
                format!("; reconstruction in {}", r.describe(&job.engine.kind))
            }
            _ => String::new(),
        };
        format!(
            "released {} of {rows} rows ({} suppressed) as {} by {}: {} clusters, k = {}, lm = {:.6}, am = {:.3}{}",
            rows_out,
            rows - rows_out,
            job.output.describe(&job.engine.kind),
            job.algorithm.name(),
            rec.clusters.sizes.len(),
            m.k.map_or("-".into(), |k| k.to_string()),
            m.lm,
            m.am,
            reconstruction
        )
    }
}
