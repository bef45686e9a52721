//! The plan of a run: the job with the command line's overrides, and which
//! model of generalization runs. Every rule that ties options together is
//! settled here, once, before anything is read.

use super::reuse::{self, ReusePlan};
use crate::error::bad;
use crate::job::{parse_levels, Budget, EngineKind, Job, OutputSpec, Reconstructed};
use crate::options::{Algorithm, Metric, Reuse, Scheme};
use crate::search::partitions::{DpChoice, Pruning};
use anyhow::Result;
use std::path::PathBuf;

/// The reconstruction's seed when none is given.
pub(crate) const SEED: u64 = 0;

/// What the command line overrides or adds to the job file.
#[derive(Debug, Default)]
pub struct Overrides {
    pub(crate) k: Option<u64>,
    /// A fraction (0.01) or a row count (300), as typed.
    pub(crate) max_suppression: Option<String>,
    pub(crate) metric: Option<Metric>,
    pub(crate) algorithm: Option<Algorithm>,
    /// A node to release instead of searching, e.g. `age=3,education=1`.
    pub(crate) node: Option<String>,
    pub(crate) scheme: Option<Scheme>,
    /// Pruning techniques switched off, comma-separated.
    pub(crate) pruning_off: Option<String>,
    /// A reconstruction table or file.
    pub(crate) reconstruct: Option<String>,
    pub(crate) seed: Option<u64>,
    pub(crate) report: Option<PathBuf>,
    /// `--html`: overrides `[output] html`.
    pub(crate) html: Option<PathBuf>,
    /// `--reuse`: overrides `[search] reuse`.
    pub(crate) reuse: Option<Reuse>,
    /// `--compare`: with reuse, also search and report what keeping the node costs.
    pub(crate) compare: bool,
}

/// Which model of generalization the run uses.
pub enum Model {
    /// One level per QI: a search of the lattice, or the given node; with
    /// `reuse`, the previous report's node while it holds.
    FullDomain { node: Option<Vec<u8>>, reuse: Option<ReusePlan> },
    /// One partition of each QI's values under a Li & Li scheme.
    Scheme { scheme: Scheme, pruning: Pruning },
    /// Cells per cluster (Nergiz & Clifton), with the reconstruction when asked.
    Cells { reconstruction: Option<OutputSpec>, seed: u64 },
}

pub struct Plan {
    pub(crate) job: Job,
    pub(crate) model: Model,
}

impl Plan {
    /// Read the job file, apply `flags` and settle the model, refusing
    /// options that do not combine (exit 2).
    pub(crate) fn new(path: &std::path::Path, flags: &Overrides) -> Result<Plan> {
        let mut job = with_overrides(Job::load(path)?, flags)?;
        let file = job.path.display().to_string();
        check_outputs(&job)?;
        if !job.output.pseudonymize.is_empty() {
            // Read before anything is: a missing key exits 2 with nothing written.
            job.output.key = Some(crate::pseudonym::Key::from_env(&job.output.key_env, &file)?);
        }
        let scheme = flags.scheme.or(job.scheme);
        let reuse = flags.reuse.unwrap_or(job.reuse);
        if job.privacy.differential_privacy.is_some() || job.algorithm == Algorithm::Safepub {
            differential_privacy(&mut job, flags, scheme.is_some(), reuse)?;
            let node = flags.node.as_deref().map(|s| parse_levels(&job, s)).transpose()?;
            return Ok(Plan { job, model: Model::FullDomain { node, reuse: None } });
        }
        if reuse != Reuse::Off {
            let other = [
                (flags.node.is_some(), "--node".to_string()),
                (scheme.is_some() || job.metric == Metric::Hdm, "a scheme".to_string()),
                (job.algorithm.cell_based(), format!("algorithm {}", job.algorithm.name())),
            ];
            if let Some((_, what)) = other.iter().find(|(on, _)| *on) {
                return Err(bad(format!(
                    "{file}: reuse = \"{}\" keeps a full-domain node; it does not combine with {what}",
                    reuse::name(reuse)
                )));
            }
        } else if flags.compare {
            return Err(bad(
                "--compare compares the reused node with today's optimum: it needs --reuse or [search] reuse",
            ));
        }
        if job.risk.population_table.is_some() && (job.algorithm.cell_based() || scheme.is_some()) {
            return Err(bad(format!(
                "{file}: [risk] population_table is read by full-domain runs and kanon check; schemes and cell-based runs measure risk against the sample only"
            )));
        }
        if job.algorithm.cell_based() {
            refuse_on_engine(&job, Feature::CellBased)?;
        }
        if job.algorithm == Algorithm::Bottomup && (job.metric != Metric::Dm || job.privacy.person.is_some()) {
            return Err(bad(format!(
                "{file}: algorithm bottomup bounds dm over records from below; it takes metric = \"dm\" without [privacy] person (auto picks the search for other metrics)"
            )));
        }
        let generalization = if job.algorithm.cell_based() {
            Some("cell-based generalization")
        } else if scheme.is_some() || job.metric == Metric::Hdm {
            Some("the scheme search")
        } else {
            None
        };
        refuse_with_person(&job, generalization)?;
        refuse_with_limits(&job, generalization)?;
        if scheme.is_some() || job.metric == Metric::Hdm {
            refuse_on_engine(&job, Feature::Scheme)?;
        }
        if job.algorithm.cell_based() {
            let other = [
                (flags.node.is_some(), "--node"),
                (scheme.is_some(), "a scheme"),
                (flags.pruning_off.is_some(), "--pruning-off"),
            ];
            if let Some((_, what)) = other.iter().find(|(on, _)| *on) {
                return Err(bad(format!("{what} does not combine with algorithm {}", job.algorithm.name())));
            }
            if let Some(models) = job.privacy.class_models() {
                return Err(bad(format!(
                    "{file}: cell-based generalization ({}) keeps k and distinct l-diversity only, not {models}",
                    job.algorithm.name()
                )));
            }
            let reconstruction = job.output.reconstruction(&job)?;
            let model = Model::Cells { reconstruction, seed: flags.seed.unwrap_or(SEED) };
            return Ok(Plan { job, model });
        }
        if job.output.reconstructed.is_some() {
            return Err(bad(format!(
                "{file}: a reconstruction (--reconstruct, [output] reconstructed) needs algorithm cdgh or cndgh"
            )));
        }
        if let Some(scheme) = scheme.or((job.metric == Metric::Hdm).then_some(Scheme::Bhs)) {
            if flags.node.is_some() {
                return Err(bad("--node takes a full-domain node; it does not combine with a scheme"));
            }
            let pruning = pruning_off(flags.pruning_off.as_deref())?;
            if let Some(d) = &job.privacy.diversity {
                return Err(bad(format!(
                    "{file}: the scheme search does not support l-diversity (l_diversity on \"{}\")",
                    d.column.name
                )));
            }
            if let Some(t) = &job.privacy.closeness {
                return Err(bad(format!(
                    "{file}: the scheme search does not support t-closeness (t_closeness on \"{}\")",
                    t.column.name
                )));
            }
            if !matches!(job.metric, Metric::Dm | Metric::Hdm | Metric::Glm) {
                return Err(bad(format!(
                    "{file}: the scheme search takes metric dm, hdm or glm, not {}",
                    job.metric.name()
                )));
            }
            return Ok(Plan { job, model: Model::Scheme { scheme, pruning } });
        }
        if flags.pruning_off.is_some() {
            return Err(bad("--pruning-off applies to the scheme search (--scheme)"));
        }
        let node = flags.node.as_deref().map(|s| parse_levels(&job, s)).transpose()?;
        let reuse = (reuse != Reuse::Off).then(|| reuse::plan(&job, reuse, flags.compare)).transpose()?;
        Ok(Plan { job, model: Model::FullDomain { node, reuse } })
    }
}

/// `[privacy] differential_privacy` (SafePub): refuse what it cannot honour,
/// then derive ε_search, ε_anonymization, β and k. A given node reads no
/// data, so the whole ε goes to the anonymization, as ARX does for a
/// data-independent scheme.
fn differential_privacy(job: &mut Job, flags: &Overrides, scheme: bool, reuse: Reuse) -> Result<()> {
    let file = job.path.display().to_string();
    let Some(mut dp) = job.privacy.differential_privacy.clone() else {
        return Err(bad(format!("{file}: algorithm safepub needs [privacy] differential_privacy")));
    };
    let other = [
        (job.privacy.person.is_some(), "[privacy] person"),
        (job.privacy.diversity.is_some(), "l-diversity"),
        (job.privacy.closeness.is_some(), "t-closeness"),
        (job.privacy.limits.any(), "risk limits"),
        (scheme || job.metric == Metric::Hdm, "a scheme"),
        (job.algorithm.cell_based(), "cell-based generalization"),
        (!matches!(job.algorithm, Algorithm::Auto | Algorithm::Safepub), "another search algorithm"),
        (reuse != Reuse::Off, "reuse"),
        (flags.k.is_some() || flags.max_suppression.is_some(), "--k or --max-suppression"),
        (job.output.reconstructed.is_some() || flags.pruning_off.is_some(), "a reconstruction or --pruning-off"),
        (!crate::measure::dp::scored(job.metric), "metric height or cm (SafePub scores by glm, dm or precision)"),
    ];
    if let Some((_, what)) = other.iter().find(|(on, _)| *on) {
        return Err(bad(format!(
            "{file}: differential_privacy (SafePub) does not combine with {what}: it samples the rows, then suppresses every class under its k"
        )));
    }
    refuse_on_engine(job, Feature::DifferentialPrivacy)?;
    let derived = safepub_derived(&dp, flags.node.is_some(), &file)?;
    dp.derived = Some(derived);
    job.privacy.differential_privacy = Some(dp);
    job.privacy.k = derived.k;
    job.algorithm = Algorithm::Safepub;
    Ok(())
}

/// SafePub's parameters: ε less the search's share to anonymization (the
/// whole ε with `--node`, chosen without the data), β and k from them.
pub(crate) fn safepub_derived(
    dp: &crate::job::DifferentialPrivacy,
    node: bool,
    file: &str,
) -> Result<crate::job::Derived> {
    let epsilon_search = if node { 0.0 } else { dp.search_epsilon };
    let epsilon_anonymization = if node { dp.epsilon } else { (dp.epsilon - epsilon_search).next_down() };
    let p = crate::measure::dp::parameters(epsilon_anonymization, dp.delta).map_err(|e| {
        bad(format!(
            "{file}: differential_privacy: no k for epsilon {epsilon_anonymization} and delta {}: {e}",
            dp.delta
        ))
    })?;
    Ok(crate::job::Derived { epsilon_search, epsilon_anonymization, beta: p.beta, k: p.k })
}

/// What a job may ask of an engine beyond a full-domain search.
#[derive(Clone, Copy)]
pub(crate) enum Feature {
    /// A scheme search (Li & Li's partitions; metric hdm is one).
    Scheme,
    /// Cell-based generalization (per-cluster cells, reconstructions).
    CellBased,
    /// `kanon limit`, which times the plain GROUP BY and write where the source is.
    Limit,
    /// `[privacy] person`: classes of persons by their rows' signatures.
    Persons,
    /// `[privacy] differential_privacy`: SafePub's sample by row position.
    DifferentialPrivacy,
}

/// What each engine runs besides full-domain searches: a new engine adds its
/// row (the match is exhaustive, so it cannot be forgotten).
/// Columns: schemes, cell-based, `kanon limit`, `person`, `differential_privacy`.
#[rustfmt::skip]
fn runs_on(engine: &EngineKind) -> [bool; 5] {
    match engine {
        EngineKind::DuckDb      => [true, true, true, true, true],
        EngineKind::Spark(_)    => [false, false, true, true, false],
        EngineKind::Postgres(_) => [false, false, true, true, false],
    }
}

/// What `[privacy] person` does not combine with (exit 2, naming it):
/// `generalization` is the run's model when it is not full-domain.
pub(crate) fn refuse_with_person(job: &Job, generalization: Option<&str>) -> Result<()> {
    let Some(person) = &job.privacy.person else {
        return Ok(());
    };
    refuse_on_engine(job, Feature::Persons)?;
    let other = [
        (generalization.map(str::to_string)),
        job.privacy.diversity.as_ref().map(|d| format!("l-diversity (l_diversity on \"{}\")", d.column.name)),
        job.privacy.closeness.as_ref().map(|t| format!("t-closeness (t_closeness on \"{}\")", t.column.name)),
        job.class_column.as_ref().map(|c| format!("a class column (\"{}\", for metric cm)", c.name)),
        job.risk.population_table.as_ref().map(|_| "[risk] population_table".to_string()),
    ];
    match other.into_iter().flatten().next() {
        Some(what) => Err(bad(format!(
            "{}: [privacy] person = \"{}\" counts persons; it does not combine with {what} yet: kanon runs full-domain searches for k over persons",
            job.at(person),
            person.name
        ))),
        None => Ok(()),
    }
}

/// What risk limits do not combine with (exit 2, naming it): `generalization`
/// is the run's model when it is not full-domain (`pareto` for the fronts).
pub(crate) fn refuse_with_limits(job: &Job, generalization: Option<&str>) -> Result<()> {
    let limits = &job.privacy.limits;
    if !limits.any() {
        return Ok(());
    }
    let other =
        [generalization.map(str::to_string), job.privacy.person.as_ref().map(|p| format!("person = \"{}\"", p.name))];
    match other.into_iter().flatten().next() {
        Some(what) => Err(bad(format!(
            "{}: [privacy] {} is judged by full-domain searches over rows; it does not combine with {what} yet",
            job.path.display(),
            limits.names()
        ))),
        None => Ok(()),
    }
}

/// The one place a feature is refused on an engine (exit 2): `Plan::new`
/// asks it for the run, and the commands outside a plan ask it too.
pub(crate) fn refuse_on_engine(job: &Job, feature: Feature) -> Result<()> {
    let engine = job.engine.kind.name();
    if runs_on(&job.engine.kind)[feature as usize] {
        return Ok(());
    }
    let file = job.path.display();
    Err(bad(match feature {
        Feature::Scheme | Feature::CellBased => format!(
            "{file}: on the {engine} engine kanon runs full-domain searches; schemes and cell-based generalization run on DuckDB"
        ),
        Feature::Limit => format!(
            "{file}: this command runs on the DuckDB engine only; on {engine}, `kanon run`, `check` and `pareto` take full-domain jobs"
        ),
        Feature::Persons => format!("{file}: [privacy] person does not run on {engine}"),
        Feature::DifferentialPrivacy => format!(
            "{file}: [privacy] differential_privacy (SafePub) does not run on {engine} yet: its sample is drawn by row position, which kanon reads on DuckDB only"
        ),
    }))
}

/// Every output's folder exists, no output file is a file the job reads
/// (the source, a hierarchy file, the job itself: compared as the file system
/// resolves them), and no two outputs are one file: a bad path exits 2 before
/// anything is read or written.
fn check_outputs(job: &Job) -> Result<()> {
    let file = job.path.display();
    let out = &job.output;
    let release = out.table.as_ref().map(|t| t.name.as_str()).or(out.remote_table.as_deref());
    if let Some(name) = release.filter(|n| {
        out.history && n.rsplit('.').next().is_some_and(|t| t.eq_ignore_ascii_case(crate::engine::history::RUNS))
    }) {
        return Err(bad(format!(
            "{file}: [output] table \"{name}\" is the run history's table; name the release otherwise, or set [output] history = false"
        )));
    }
    let reconstructed = match &out.reconstructed {
        Some(crate::job::Reconstructed::Csv(p) | crate::job::Reconstructed::Parquet(p)) => Some(p),
        _ => None,
    };
    let outputs: Vec<(&str, &std::path::Path)> = [
        ("[output] database", out.table.as_ref().map(|t| &t.database)),
        ("[output] csv", out.csv.as_ref()),
        ("[output] parquet", out.parquet.as_ref()),
        ("[output] report", out.report.as_ref()),
        ("[output] html", out.html.as_ref()),
        ("[output] reconstructed", reconstructed),
    ]
    .into_iter()
    .filter_map(|(k, p)| p.map(|p| (k, p.as_path())))
    .collect();
    for (i, (key, path)) in outputs.iter().enumerate() {
        job.check_output_file(key, path, *key == "[output] database")?;
        if let Some((other, _)) = outputs[..i].iter().find(|(_, p)| crate::job::same_file(p, path)) {
            return Err(bad(format!("{file}: {key} {} is also {other}", path.display())));
        }
    }
    Ok(())
}

/// The job file with the command line's overrides applied.
fn with_overrides(mut job: Job, flags: &Overrides) -> Result<Job> {
    if let Some(k) = flags.k {
        if k == 0 {
            return Err(bad("--k must be at least 1"));
        }
        job.privacy.k = k;
    }
    if let Some(s) = &flags.max_suppression {
        job.privacy.budget = match (s.parse::<u64>(), s.parse::<f64>()) {
            (Ok(n), _) => Budget::Rows(n),
            (_, Ok(f)) if (0.0..=1.0).contains(&f) => Budget::Fraction(f),
            _ => {
                return Err(bad(format!(
                    "--max-suppression: expected a fraction in [0, 1] or a row count, got \"{s}\""
                )))
            }
        };
        // Given on the command line is given: it caps schemes and cells too.
        job.privacy.budget_given = true;
    }
    if let Some(m) = flags.metric {
        job.metric = m;
    }
    if let Some(a) = flags.algorithm {
        job.algorithm = a;
    }
    if let Some(r) = &flags.report {
        job.output.report = Some(r.clone());
    }
    if let Some(h) = &flags.html {
        job.output.html = Some(h.clone());
    }
    if let Some(r) = &flags.reconstruct {
        job.output.reconstructed =
            Some(Reconstructed::parse(r, |p: &str| PathBuf::from(p)).map_err(|m| bad(format!("--reconstruct: {m}")))?);
    }
    Ok(job)
}

/// `--pruning-off seeding,bfs,nodes,applicators,dp,classes,blocks,stuck`: the techniques to switch off.
pub(crate) fn pruning_off(list: Option<&str>) -> Result<Pruning> {
    let mut p = Pruning::default();
    for name in list.unwrap_or("").split(',').map(str::trim).filter(|s| !s.is_empty()) {
        match name {
            "seeding" => p.seeding = false,
            "bfs" => p.modified_bfs = false,
            "nodes" => p.node_order = false,
            "applicators" => p.applicator_order = false,
            "dp" => p.dp = DpChoice::Off,
            "classes" => p.small_classes = false,
            "blocks" => p.useless_blocks = false,
            "stuck" => p.stuck_classes = false,
            other => {
                return Err(bad(format!(
                    "--pruning-off: unknown technique \"{other}\" (seeding, bfs, nodes, applicators, dp, classes, blocks, stuck)"
                )))
            }
        }
    }
    Ok(p)
}
