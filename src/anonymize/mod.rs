//! What `kanon run` does, stage by stage: plan → load → search → recode →
//! write → (reconstruct) → report. [`Plan`] settles the options; each model
//! of generalization ([`full_domain`], [`schemes`], [`cells`]) is the glue
//! between the plan and its search, seen here through [`Search`]: its search
//! hands on what it chose ([`Chosen`]: the release's logical plan, and the
//! [`Account`] the report reads), or why nothing is feasible.

pub(crate) mod cells;
pub(crate) mod full_domain;
pub(crate) mod plan;
pub(crate) mod reuse;
mod risk;
pub(crate) mod schemes;

pub use plan::{Model, Overrides, Plan};

use crate::engine::embedded;
use crate::engine::history;
use crate::error::{bad, Infeasible};
use crate::job::DiversityKind;
use crate::load::{load_records, load_showing, Loaded};
use crate::progress::{progress, spinner, Progress};
use crate::release::{self, Recoding};
use crate::report::{ModelReport, Output, Report, Seconds};
use anyhow::Result;
use indicatif::ProgressBar;
use std::time::Instant;

/// A model of generalization, planned and loaded: its search.
trait Search {
    /// What the report reads of the search.
    type Account: Account;
    /// Search, and hand on what was chosen; [`Infeasible`] (exit 3's
    /// message) when nothing feasible is found.
    fn search(
        self,
        plan: &Plan,
        source: &Loaded,
        progress: &dyn Progress,
    ) -> Result<Result<Chosen<Self::Account>, Infeasible>>;
}

/// What a feasible search hands on to the write and the report.
struct Chosen<A> {
    /// The release's logical plan.
    recoding: Recoding,
    /// Records the release suppresses.
    suppressed: u64,
    /// The source's classes' (size, count), when the search already counted them.
    source_sizes: Option<Vec<(u64, u64)>>,
    /// The released classes' (size, count), when the search already knows them.
    release_sizes: Option<Vec<(u64, u64)>>,
    account: A,
}

/// A search's account of what it chose, in words.
trait Account {
    /// The report's section of this model.
    fn report(&self, plan: &Plan, rows: u64, rows_out: u64) -> ModelReport;
    /// The line printed when done.
    fn summary(&self, plan: &Plan, rows: u64, rows_out: u64) -> String;
}

/// Seconds since the run started, and since the last lap.
struct Clock {
    start: Instant,
    last: f64,
    /// When the run started, microseconds since the Unix epoch (the history's).
    started_micros: i64,
}

impl Clock {
    fn start() -> Clock {
        let started_micros =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_micros() as i64);
        Clock { start: Instant::now(), last: 0.0, started_micros }
    }

    fn lap(&mut self) -> f64 {
        let now = self.start.elapsed().as_secs_f64();
        let lap = now - self.last;
        self.last = now;
        lap
    }
}

/// Run the plan: write the release and its report. Exit 3 (an [`Infeasible`]
/// error) when nothing feasible is found.
pub(crate) fn run(plan: &Plan, quiet: bool) -> Result<()> {
    let job = &plan.job;
    let clock = Clock::start();
    let phase = spinner(quiet);

    // Load: the source, its hierarchies and base frequency set, and what the model's search reads.
    let source = match plan.model {
        Model::Cells { .. } => load_records(job, &phase)?,
        _ => load_showing(job, &phase)?,
    };
    let (units, unit) = match source.data.persons {
        Some(persons) => (persons, "persons"),
        None => (source.data.rows, "rows"),
    };
    if job.privacy.k > units {
        return Err(bad(format!(
            "{}: k = {} is above the number of {unit} ({units})",
            job.path.display(),
            job.privacy.k
        )));
    }
    match &plan.model {
        Model::FullDomain { node, reuse } => {
            let model = full_domain::prepare(plan, node.as_deref(), reuse.as_ref(), &source)?;
            search_and_write(plan, &source, model, clock, phase, quiet)
        }
        Model::Scheme { scheme, pruning } => {
            let model = schemes::prepare(plan, *scheme, *pruning, &source, &phase)?;
            search_and_write(plan, &source, model, clock, phase, quiet)
        }
        Model::Cells { .. } => {
            let model = cells::prepare(plan, &source, &phase)?;
            search_and_write(plan, &source, model, clock, phase, quiet)
        }
    }
}

/// The stages after loading: search, recode, write, (reconstruct), report.
fn search_and_write(
    plan: &Plan,
    source: &Loaded,
    model: impl Search,
    mut clock: Clock,
    phase: ProgressBar,
    quiet: bool,
) -> Result<()> {
    let job = &plan.job;
    let rows = source.data.rows;
    phase.finish_and_clear();
    let t_load = clock.lap();
    crate::trace(|| format!("run loaded: {t_load:.3}s"));

    // Search.
    let bar = progress(quiet);
    let searched = model.search(plan, source, &bar)?;
    bar.finish_and_clear();
    let chosen = searched.map_err(anyhow::Error::new)?;
    let t_search = clock.lap();

    // Recode: the risk of the release's logical plan; the base frequency set is no longer read.
    let phase = spinner(quiet);
    phase.set_message(format!("writing the release to {}", job.output.first_path().display()));
    let Chosen { recoding, suppressed, source_sizes, release_sizes, account } = chosen;
    let risk = risk::measure(source, job, &recoding, source_sizes, release_sizes)?;
    source.base.drop_tables(&source.conn)?;
    crate::trace(|| format!("run recoding: {:.3}s", clock.start.elapsed().as_secs_f64() - t_load - t_search));

    // The report, once: the release must write the rows the search kept. Its
    // seconds (and a reconstruction) are known once written.
    let rows_out = rows - suppressed;
    let mut report = Report {
        kanon_version: env!("CARGO_PKG_VERSION"),
        job_sha256: job.sha256.clone(),
        rows_in: rows,
        model: account.report(plan, rows, rows_out),
        risk,
        output: Output::of(&job.output),
        seconds: Seconds { load: t_load, search: t_search, release: 0.0, reconstruct: None, total: 0.0 },
    };

    // Write, with the run's history row (read off the report) in the release's transaction.
    let history = |target: release::CommitTarget, _rows: u64| -> Result<()> {
        let seconds = clock.start.elapsed().as_secs_f64();
        let run =
            history::Run { started_micros: clock.started_micros, report: serde_json::to_value(&report)?, seconds };
        history::append(target, job, &run)
    };
    let before_commit: Option<&release::BeforeCommit> = job.output.history.then_some(&history);
    let written = release::write(source, job, &job.output, &recoding, None, before_commit)?;
    if written.rows != rows_out {
        anyhow::bail!("the release wrote {} rows, the search kept {rows_out}", written.rows);
    }
    let t_release = clock.lap();

    // Reconstruct (cell-based runs that ask for it).
    let mut t_reconstruct = None;
    if let Model::Cells { reconstruction, seed } = &plan.model {
        if let Some(out) = reconstruction {
            phase.set_message("writing the reconstruction");
            release::write(source, job, out, &recoding, Some(*seed), None)?;
        }
        report.output.reconstructed = Some(reconstruction.as_ref().map(|r| r.describe(&job.engine.kind)));
        t_reconstruct = Some(clock.lap());
    }
    phase.finish_and_clear();

    // Report.
    report.seconds = Seconds {
        load: t_load,
        search: t_search,
        release: t_release,
        reconstruct: t_reconstruct,
        total: clock.start.elapsed().as_secs_f64(),
    };
    if let Some(path) = &job.output.report {
        embedded::write_atomically(path, serde_json::to_string_pretty(&report)?.as_bytes())?;
    }
    if let Some(path) = &job.output.html {
        crate::html::write(path, &crate::html::run::page(&report, job, source)?)?;
    }
    crate::trace(|| format!("run report written: {:.3}s", clock.start.elapsed().as_secs_f64()));
    println!("{}", account.summary(plan, rows, rows_out));
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
