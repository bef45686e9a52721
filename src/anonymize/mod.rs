//! What `kanon run` does, stage by stage: plan → load → search → recode →
//! write → (reconstruct) → report. [`Plan`] settles the options; each model
//! of generalization ([`full_domain`], [`schemes`], [`cells`]) is the glue
//! between the plan and its search, seen here through [`Stages`].

pub mod cells;
pub mod full_domain;
pub mod plan;
pub mod reuse;
mod risk;
pub mod schemes;

pub use plan::{Model, Overrides, Plan};

use crate::engine::embedded;
use crate::engine::history;
use crate::error::{bad, Infeasible};
use crate::job::DiversityKind;
use crate::load::{load_records, load_showing, Loaded};
use crate::progress::{progress, spinner, Progress};
use crate::release::{self, Recoding, Written};
use crate::report::{ModelReport, Output, Report, Seconds};
use anyhow::Result;
use std::time::Instant;

/// What a model of generalization does at each stage of a run.
trait Stages {
    /// Search; false when nothing feasible was found.
    fn search(&mut self, plan: &Plan, source: &Loaded, progress: &dyn Progress) -> Result<bool>;
    /// Why nothing was found (the search returned false): exit 3's message.
    fn infeasible(&self, plan: &Plan, rows: u64) -> String;
    /// Records the found anonymization suppresses.
    fn suppressed(&self) -> u64;
    /// The release's logical plan (read while the base frequency set exists).
    fn recoding(&mut self, plan: &Plan, source: &Loaded) -> Result<Recoding>;
    /// The report's section of this model.
    fn report(&self, plan: &Plan, rows: u64, written: &Written) -> ModelReport;
    /// The line printed when done.
    fn summary(&self, plan: &Plan, rows: u64, written: &Written) -> String;
    /// The released classes' (size, count), when the search already knows them.
    fn release_sizes(&self) -> Option<Vec<(u64, u64)>> {
        None
    }
    /// The source's classes' (size, count), when the search already counted them.
    fn source_sizes(&self) -> Option<Vec<(u64, u64)>> {
        None
    }
}

/// Seconds since the last lap.
struct Clock {
    start: Instant,
    last: f64,
}

impl Clock {
    fn lap(&mut self) -> f64 {
        let now = self.start.elapsed().as_secs_f64();
        let lap = now - self.last;
        self.last = now;
        lap
    }
}

/// Run the plan: write the release and its report. Exit 3 (an [`Infeasible`]
/// error) when nothing feasible is found.
pub fn run(plan: &Plan, quiet: bool) -> Result<()> {
    let job = &plan.job;
    let mut clock = Clock { start: Instant::now(), last: 0.0 };
    let started_micros =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_micros() as i64);
    let phase = spinner(quiet);

    // Load: the source, its hierarchies and base frequency set, and what the model's search reads.
    let source = match plan.model {
        Model::Cells { .. } => load_records(job, &phase)?,
        _ => load_showing(job, &phase)?,
    };
    let rows = source.data.rows;
    if job.privacy.k > rows {
        return Err(bad(format!("{}: k = {} is above the number of rows ({rows})", job.path.display(), job.privacy.k)));
    }
    let mut stages: Box<dyn Stages> = match &plan.model {
        Model::FullDomain { node, reuse } => {
            Box::new(full_domain::prepare(plan, node.as_deref(), reuse.as_ref(), &source)?)
        }
        Model::Scheme { scheme, pruning } => Box::new(schemes::prepare(plan, *scheme, *pruning, &source, &phase)?),
        Model::Cells { .. } => Box::new(cells::prepare(plan, &source, &phase)?),
    };
    phase.finish_and_clear();
    let t_load = clock.lap();
    crate::trace(|| format!("run loaded: {t_load:.3}s"));

    // Search.
    let bar = progress(quiet);
    let found = stages.search(plan, &source, &bar)?;
    bar.finish_and_clear();
    if !found {
        return Err(anyhow::Error::new(Infeasible(stages.infeasible(plan, rows))));
    }
    let t_search = clock.lap();

    // Recode: the release's logical plan; the base frequency set is no longer read.
    let phase = spinner(quiet);
    phase.set_message(format!("writing the release to {}", job.output.first_path().display()));
    let recoding = stages.recoding(plan, &source)?;
    let risk = risk::measure(&source, job, &recoding, stages.source_sizes(), stages.release_sizes())?;
    source.base.drop_tables(&source.conn)?;
    crate::trace(|| format!("run recoding: {:.3}s", clock.start.elapsed().as_secs_f64() - t_load - t_search));

    // Write, with the run's history row in the release's transaction.
    let history = |target: release::CommitTarget, rows_out: u64| -> Result<()> {
        let seconds = clock.start.elapsed().as_secs_f64();
        let report = Report {
            kanon_version: env!("CARGO_PKG_VERSION"),
            job_sha256: job.sha256.clone(),
            rows_in: rows,
            model: stages.report(plan, rows, &Written { rows: rows_out }),
            risk: risk.clone(),
            output: Output::of(&job.output),
            seconds: Seconds { load: t_load, search: t_search, release: 0.0, reconstruct: None, total: seconds },
        };
        let run = history::Run { started_micros, report: serde_json::to_value(&report)?, seconds };
        history::append(target, job, &run)
    };
    let before_commit: Option<&release::BeforeCommit> = job.output.history.then_some(&history);
    let written = release::write(&source, job, &job.output, &recoding, None, before_commit)?;
    if written.rows + stages.suppressed() != rows {
        anyhow::bail!("the release wrote {} rows, the search kept {}", written.rows, rows - stages.suppressed());
    }
    let t_release = clock.lap();

    // Reconstruct (cell-based runs that ask for it).
    let mut output = Output::of(&job.output);
    let mut t_reconstruct = None;
    if let Model::Cells { reconstruction, seed } = &plan.model {
        if let Some(out) = reconstruction {
            phase.set_message("writing the reconstruction");
            release::write(&source, job, out, &recoding, Some(*seed), None)?;
        }
        output.reconstructed = Some(reconstruction.as_ref().map(|r| r.describe(&job.engine.kind)));
        t_reconstruct = Some(clock.lap());
    }
    phase.finish_and_clear();

    // Report.
    let report = Report {
        kanon_version: env!("CARGO_PKG_VERSION"),
        job_sha256: job.sha256.clone(),
        rows_in: rows,
        model: stages.report(plan, rows, &written),
        risk,
        output,
        seconds: Seconds {
            load: t_load,
            search: t_search,
            release: t_release,
            reconstruct: t_reconstruct,
            total: clock.start.elapsed().as_secs_f64(),
        },
    };
    if let Some(path) = &job.output.report {
        embedded::write_atomically(path, serde_json::to_string_pretty(&report)?.as_bytes())?;
    }
    crate::trace(|| format!("run report written: {:.3}s", clock.start.elapsed().as_secs_f64()));
    println!("{}", stages.summary(plan, rows, &written));
    Ok(())
}

/// The requirement in words, for the infeasible messages.
fn requirement(plan: &Plan) -> String {
    let job = &plan.job;
    let mut out = format!("k = {}", job.privacy.k);
    if let Some(d) = &job.privacy.diversity {
        let kind = match d.kind {
            DiversityKind::Distinct => String::new(),
            DiversityKind::Entropy => "entropy ".into(),
            DiversityKind::Recursive(c) => format!("recursive (c = {}) ", c.value()),
        };
        out.push_str(&format!(" and {kind}l = {} on \"{}\"", d.l, d.column.name));
    }
    if let Some(t) = &job.privacy.closeness {
        out.push_str(&format!(" and t = {} on \"{}\"", t.t.value(), t.column.name));
    }
    out
}
