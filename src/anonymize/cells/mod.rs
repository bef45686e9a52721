//! Cell-based generalization (Nergiz & Clifton): one sorted pass clusters the
//! records, each cluster generalized on its own (CDGH along the hierarchies,
//! CNDGH to value sets and numeric ranges); fewer than k records are
//! suppressed. Infeasible when the job caps suppression (`max_suppression`)
//! below what the pass suppresses, or nothing is released.

use super::{requirement, Plan, Stages};
mod measure;
mod pass;

use crate::load::Loaded;
use crate::progress::Progress;
use crate::release::{CellRecoding, Recoding, Written};
use crate::report::{CellMetrics, CellsReport, ModelReport};
use crate::search::cbg::ClusterSettings;
use crate::search::cells::CellDomain;
use anyhow::{Context, Result};
use measure::{measure, Measured};
use pass::{cluster, domains, Pass};
use serde_json::json;
use std::sync::Arc;

pub(super) struct Cells {
    domains: Vec<CellDomain>,
    settings: ClusterSettings,
    cap: Option<u64>,
    pass: Option<Pass>,
    suppressed: u64,
    measured: Option<Measured>,
    /// The source's classes' (size, count), counted by the pass.
    source_sizes: Vec<(u64, u64)>,
    recoding: Option<Arc<CellRecoding>>,
}

pub(super) fn prepare(plan: &Plan, source: &Loaded, phase: &indicatif::ProgressBar) -> Result<Cells> {
    let job = &plan.job;
    phase.set_message("numbering each quasi-identifier's values");
    let domains = domains(source, job, job.algorithm)?;
    let settings =
        ClusterSettings { k: job.privacy.k, l: job.privacy.diversity.as_ref().map(|d| d.l), open: job.open_clusters };
    let cap = job.privacy.budget_given.then(|| job.privacy.budget.rows(source.data.rows));
    Ok(Cells {
        domains,
        settings,
        cap,
        pass: None,
        suppressed: 0,
        measured: None,
        source_sizes: Vec::new(),
        recoding: None,
    })
}

impl Stages for Cells {
    fn search(&mut self, plan: &Plan, source: &Loaded, progress: &dyn Progress) -> Result<bool> {
        let rows = source.data.rows;
        progress.message(format!("clustering the {rows} records ({})", plan.job.algorithm.name()));
        let mut pass = cluster(source, &plan.job, &self.domains, self.settings)?;
        self.measured = Some(measure(&pass, &self.domains, rows));
        self.source_sizes = std::mem::take(&mut pass.source_sizes);
        let suppressed = pass.clusters.suppressed;
        self.suppressed = suppressed;
        let found = !pass.clusters.sizes.is_empty() && !self.cap.is_some_and(|c| suppressed > c);
        self.pass = Some(pass);
        Ok(found)
    }

    fn infeasible(&self, plan: &Plan, rows: u64) -> String {
        format!(
            "{} suppresses {} of {rows} rows for {}{}",
            plan.job.algorithm.name(),
            self.suppressed(),
            requirement(plan),
            self.cap.map_or(String::new(), |c| format!(", above max_suppression ({c} rows)"))
        )
    }

    fn suppressed(&self) -> u64 {
        self.suppressed
    }

    fn source_sizes(&self) -> Option<Vec<(u64, u64)>> {
        Some(self.source_sizes.clone())
    }

    fn recoding(&mut self, _plan: &Plan, source: &Loaded) -> Result<Recoding> {
        let pass = self.pass.take().expect("recoding follows the pass");
        let position = source.position.clone().context("the source was opened without row positions")?;
        let rec = Arc::new(CellRecoding {
            cluster_of: pass.cluster_of,
            clusters: pass.clusters,
            domains: std::mem::take(&mut self.domains),
            position,
        });
        self.recoding = Some(rec.clone());
        Ok(Recoding::Cells(rec))
    }

    fn report(&self, plan: &Plan, rows: u64, written: &Written) -> ModelReport {
        let job = &plan.job;
        let (m, rec) = (self.measured.as_ref().expect("measured"), self.recoding.as_ref().expect("recoded"));
        let qis = job.qi_names();
        let distinct = qis.iter().zip(&rec.clusters.distinct).map(|(q, d)| (q.clone(), json!(d.len())));
        let reconstruction = matches!(&plan.model, super::Model::Cells { reconstruction: Some(_), .. });
        ModelReport::Cells(CellsReport {
            rows_out: written.rows,
            suppressed: rows - written.rows,
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

    fn summary(&self, plan: &Plan, rows: u64, written: &Written) -> String {
        let job = &plan.job;
        let (m, rec) = (self.measured.as_ref().expect("measured"), self.recoding.as_ref().expect("recoded"));
        let reconstruction = match &plan.model {
            super::Model::Cells { reconstruction: Some(r), .. } => format!("; reconstruction in {}", r.describe(&job.engine.kind)),
            _ => String::new(),
        };
        format!(
            "released {} of {rows} rows ({} suppressed) as {} by {}: {} clusters, k = {}, lm = {:.6}, am = {:.3}{}",
            written.rows,
            rows - written.rows,
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
