//! `kanon run JOB.toml [--k N] [--max-suppression F] [--metric M]
//!  [--algorithm A] [--node QI=LEVEL,…] [--scheme S] [--reconstruct TABLE]
//!  [--seed N] [--report FILE] [--quiet]`
//!
//! Loads the source, searches the lattice for the feasible generalization with
//! the least loss (or takes `--node`), writes the release atomically and the
//! JSON report. Exit 3 when no generalization is feasible. With a scheme (or
//! metric hdm) the search is Li & Li's instead: see [`super::run_scheme`];
//! with algorithm cdgh or cndgh it is cell-based: see [`super::run_cells`].

use crate::error::{bad, Infeasible};
use crate::job::{parse_levels, Budget, Job, Reconstructed};
use crate::options::{Algorithm, Metric};
use crate::lattice::{Lattice, Node};
use crate::load::load_showing;
use crate::metrics::Requirement;
use crate::progress::{progress, spinner};
use crate::report::{self, Report, Seconds};
use crate::options::Scheme;
use crate::search::{self, exhaustive, incognito, topdown, Found, SearchResult};
use crate::{database, frequency, release};
use anyhow::Result;
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The job file (TOML).
    pub job: PathBuf,
    /// Override [privacy] k.
    #[arg(long)]
    pub k: Option<u64>,
    /// Override [privacy] max_suppression: a fraction (0.01) or a row count (300).
    #[arg(long, value_name = "F")]
    pub max_suppression: Option<String>,
    /// Override [search] metric.
    #[arg(long, value_enum)]
    pub metric: Option<Metric>,
    /// Override [search] algorithm.
    #[arg(long, value_enum)]
    pub algorithm: Option<Algorithm>,
    /// Release this node instead of searching, e.g. age=3,education=1,…
    #[arg(long)]
    pub node: Option<String>,
    /// Search partitions of each QI's values under this scheme (Li & Li)
    /// instead of the full-domain lattice; overrides [search] scheme.
    #[arg(long, value_enum)]
    pub scheme: Option<Scheme>,
    /// With a scheme: switch pruning techniques off, to measure them
    /// (comma-separated: seeding, bfs, nodes, applicators, dp, classes, blocks, stuck).
    #[arg(long, value_name = "LIST")]
    pub pruning_off: Option<String>,
    /// Cell-based generalization (cdgh, cndgh): also write the reconstruction,
    /// leaves drawn under each released cell, to this table of the output
    /// database (or a .csv / .parquet file); overrides [output] reconstructed.
    #[arg(long, value_name = "TABLE")]
    pub reconstruct: Option<String>,
    /// The reconstruction's random seed.
    #[arg(long, default_value_t = super::run_cells::SEED)]
    pub seed: u64,
    /// Write the report here instead of [output] report.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

/// The job file with the command line's overrides applied.
pub fn job_with_overrides(args: &Args) -> Result<Job> {
    let mut job = Job::load(&args.job)?;
    if let Some(k) = args.k {
        if k == 0 {
            return Err(bad("--k must be at least 1"));
        }
        job.privacy.k = k;
    }
    if let Some(s) = &args.max_suppression {
        job.privacy.budget = match (s.parse::<u64>(), s.parse::<f64>()) {
            (Ok(n), _) => Budget::Rows(n),
            (_, Ok(f)) if (0.0..=1.0).contains(&f) => Budget::Fraction(f),
            _ => {
                return Err(bad(format!(
                    "--max-suppression: expected a fraction in [0, 1] or a row count, got \"{s}\""
                )))
            }
        };
    }
    if let Some(m) = args.metric {
        job.metric = m;
    }
    if let Some(a) = args.algorithm {
        job.algorithm = a;
    }
    if let Some(r) = &args.report {
        job.output.report = Some(r.clone());
    }
    if let Some(r) = &args.reconstruct {
        job.output.reconstructed =
            Some(Reconstructed::parse(r, |p: &str| PathBuf::from(p)).map_err(|m| bad(format!("--reconstruct: {m}")))?);
    }
    Ok(job)
}

pub fn run(args: Args) -> Result<()> {
    let start = Instant::now();
    let job = job_with_overrides(&args)?;
    if job.engine.spark.is_some()
        && (job.algorithm.cell_based() || args.scheme.is_some() || job.scheme.is_some() || job.metric == Metric::Hdm)
    {
        return Err(bad(format!(
            "{}: on the Spark engine kanon runs full-domain searches; schemes and cell-based generalization run on DuckDB",
            job.path.display()
        )));
    }
    if job.algorithm.cell_based() {
        let other = [
            (args.node.is_some(), "--node"),
            (args.scheme.is_some() || job.scheme.is_some(), "a scheme"),
            (args.pruning_off.is_some(), "--pruning-off"),
        ];
        if let Some((_, what)) = other.iter().find(|(on, _)| *on) {
            return Err(bad(format!("{what} does not combine with algorithm {}", job.algorithm.name())));
        }
        return super::run_cells::run(job, args.seed, args.quiet);
    }
    if job.output.reconstructed.is_some() {
        return Err(bad(format!(
            "{}: a reconstruction (--reconstruct, [output] reconstructed) needs algorithm cdgh or cndgh",
            job.path.display()
        )));
    }
    let scheme = args.scheme.or(job.scheme).or((job.metric == Metric::Hdm).then_some(Scheme::Bhs));
    if let Some(scheme) = scheme {
        if args.node.is_some() {
            return Err(bad("--node takes a full-domain node; it does not combine with a scheme"));
        }
        let pruning = super::run_scheme::pruning_off(args.pruning_off.as_deref())?;
        return super::run_scheme::run(job, scheme, pruning, args.quiet);
    }
    if args.pruning_off.is_some() {
        return Err(bad("--pruning-off applies to the scheme search (--scheme)"));
    }
    let forced = args.node.as_deref().map(|s| parse_levels(&job, s)).transpose()?;
    let phase = spinner(args.quiet);
    let loaded = load_showing(&job, &phase)?;
    phase.finish_and_clear();
    let rows = loaded.data.rows;
    if job.privacy.k > rows {
        return Err(bad(format!("{}: k = {} is above the number of rows ({rows})", job.path.display(), job.privacy.k)));
    }
    let req = Requirement {
        k: job.privacy.k,
        l: job.privacy.diversity.as_ref().map(|d| d.l),
        budget: job.privacy.budget.rows(rows),
    };
    let lattice = Lattice::new(loaded.data.heights.clone());
    if let Some(levels) = &forced {
        if let Some((h, l)) = lattice.heights.iter().zip(levels).find(|(h, l)| l > h) {
            return Err(bad(format!("--node: level {l} is above the hierarchy's height {h}")));
        }
    }
    let combinations = frequency::combinations(&loaded.conn, loaded.data.heights.len(), loaded.extras)?;
    let t_load = start.elapsed().as_secs_f64();
    crate::trace(|| format!("run loaded: {t_load:.3}s"));

    let bar = progress(args.quiet);
    // k is fixed here: classes under k are suppressed, so their glm terms are never needed.
    let mut ev = loaded.evaluator()?.leaf_sums_from(req.k);
    let (algorithm, why) = search::choose(job.algorithm);
    crate::trace(|| format!("run evaluator ({}) ready: {:.3}s", ev.backend(), start.elapsed().as_secs_f64() - t_load));
    let result: SearchResult = match &forced {
        Some(levels) => {
            let outcome = ev.histogram(&Node::full(levels.clone()))?.outcome(levels, &req, &ev.data);
            let feasible = if outcome.feasible { vec![levels.clone()] } else { vec![] };
            SearchResult {
                minimal: feasible.len(),
                feasible,
                best: outcome.feasible.then(|| Found { levels: levels.clone(), outcome }),
                checked: 1,
            }
        }
        None => match algorithm {
            Algorithm::Incognito => incognito::search(&loaded.conn, &mut ev, &lattice, &req, job.metric, &bar)?,
            Algorithm::Topdown | Algorithm::Auto => topdown::search(&mut ev, &lattice, &req, job.metric, &bar)?,
            Algorithm::Exhaustive => exhaustive::search(&mut ev, &lattice, &req, job.metric, &bar)?,
            Algorithm::Cdgh | Algorithm::Cndgh => unreachable!("cell-based generalization returned above"),
        },
    };
    bar.finish_and_clear();
    let t_search = start.elapsed().as_secs_f64() - t_load;
    let Some(best) = result.best.clone() else {
        let what = match &job.privacy.diversity {
            Some(d) => format!("k = {} and l = {} on \"{}\"", req.k, d.l, d.column.name),
            None => format!("k = {}", req.k),
        };
        let node = if forced.is_some() { "the given node is not feasible" } else { "no generalization is feasible" };
        return Err(anyhow::Error::new(Infeasible(format!(
            "{node} for {what} with at most {} suppressed rows",
            req.budget
        ))));
    };

    let phase = spinner(args.quiet);
    phase.set_message(format!("writing the release to {}", job.output.first_path().display()));
    let recoding = match &loaded.spark {
        None => Some(release::full_domain_map(
            &loaded.conn,
            &job,
            &loaded.columns,
            &best.levels,
            &req,
            loaded.extras.sensitive,
        )?),
        Some(_) => None,
    };
    let am = release::ambiguity(&loaded.conn, &best.levels, &req, loaded.extras.sensitive, &loaded.data)?;
    crate::trace(|| format!("run recoding: {:.3}s", start.elapsed().as_secs_f64() - t_load - t_search));
    let nodes_evaluated = ev.evaluations();
    let ev_backend = ev.backend();
    drop(ev);
    let written = match (&loaded.spark, recoding) {
        (Some(spark), _) => release::write_spark_full_domain(
            &loaded.conn,
            spark,
            &job,
            &loaded.columns,
            &best.levels,
            &req,
            loaded.extras.sensitive,
        )?,
        (None, Some(recoding)) => {
            frequency::drop_base(&loaded.conn)?;
            release::write(&loaded.conn, &job, &loaded.columns, recoding)?
        }
        (None, None) => unreachable!("a DuckDB run has its recoding"),
    };
    phase.finish_and_clear();
    let t_release = start.elapsed().as_secs_f64() - t_load - t_search;
    debug_assert_eq!(written.rows + best.outcome.suppressed, rows);

    let qis = job.qi_names();
    let out = &job.output;
    let report = Report {
        kanon_version: env!("CARGO_PKG_VERSION"),
        job_sha256: job.sha256.clone(),
        rows_in: rows,
        combinations,
        rows_out: written.rows,
        suppressed: rows - written.rows,
        budget: req.budget,
        quasi_identifiers: qis.clone(),
        node: report::by_qi(&qis, &best.levels),
        k: best.outcome.k,
        k_requested: req.k,
        l: best.outcome.l,
        l_requested: req.l,
        classes: best.outcome.classes,
        algorithm: if forced.is_some() { "node" } else { algorithm.name() },
        algorithm_reason: if forced.is_some() { "--node given: no search" } else { why },
        evaluator: ev_backend,
        metric: job.metric.name(),
        metrics: report::ReleaseMetrics { node: best.outcome.metrics, lm: best.outcome.metrics.glm_normalized, am },
        feasible_nodes: result.feasible.len(),
        minimal_nodes: result.minimal,
        nodes_checked: result.checked,
        nodes_evaluated,
        lattice_size: lattice.size(),
        heights: report::by_qi(&qis, &lattice.heights),
        output: report::Output::of(out),
        seconds: Seconds { load: t_load, search: t_search, release: t_release, total: start.elapsed().as_secs_f64() },
    };
    if let Some(path) = &out.report {
        database::write_atomically(path, serde_json::to_string_pretty(&report)?.as_bytes())?;
    }
    let node = qis.iter().zip(&best.levels).map(|(q, l)| format!("{q}={l}")).collect::<Vec<_>>().join(",");
    crate::trace(|| format!("run report written: {:.3}s", start.elapsed().as_secs_f64()));
    println!(
        "released {} of {} rows ({} suppressed) as {} at node {node}: k = {}, {} = {}",
        written.rows,
        rows,
        report.suppressed,
        out.describe(),
        best.outcome.k.map_or("-".into(), |k| k.to_string()),
        job.metric.name(),
        best.outcome.metrics.get(job.metric)
    );
    Ok(())
}
