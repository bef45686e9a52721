//! Everything a search needs before it starts: the source opened and its
//! columns checked, the hierarchies validated and materialized, and the base
//! frequency set built: a light scan of the source gives per-column marginals
//! (the hierarchies and integer codes come from these), then one coded
//! `GROUP BY` over the source gives `kanon_f0`.

use crate::data::frequency::{self, Extras};
use crate::data::hierarchy::{self, Hierarchy};
use crate::engine::embedded::{self, SourceColumn};
use crate::engine::remote::{Remote, RemoteEngine};
use crate::engine::types::ColumnType;
use crate::error::bad;
use crate::evaluator::{default_memory_rows, Backend, Evaluator};
use crate::job::{Column, DistanceSpec, DiversityKind, EvaluatorSide, Job};
use crate::measure::limits::Population;
use crate::measure::metrics::Dataset;
use crate::measure::privacy::{ClassModels, Closeness, Distance};
use anyhow::Result;
use duckdb::Connection;
use std::sync::Arc;

pub struct Loaded {
    pub conn: Connection,
    pub columns: Vec<SourceColumn>,
    pub(crate) hierarchies: Vec<Hierarchy>,
    pub data: Dataset,
    pub extras: Extras,
    /// The base frequency set's physical form, as the encoder chose it.
    pub base: frequency::Base,
    /// The per-class models beyond k and distinct ℓ (entropy and recursive ℓ, t-closeness).
    pub(crate) models: Arc<ClassModels>,
    /// Exact k-map and δ-presence: the population's classes (`[risk] population_table`).
    pub(crate) population: Option<Arc<Population>>,
    /// `[engine]` memory_rows and threads, for the evaluators.
    pub(crate) memory_rows: u64,
    /// `[engine] evaluator`.
    pub(crate) side: EvaluatorSide,
    pub(crate) threads: Option<usize>,
    /// The position column of `kanon_source_rows` ([`load_records`] only).
    pub(crate) position: Option<String>,
    /// The engine the source lives in (`[engine] kind = "spark"` or `"postgres"`).
    pub(crate) remote: Option<Remote>,
    /// With `[privacy] person`: the source's persons and their rows.
    pub(crate) persons: Option<PersonStats>,
    /// With `differential_privacy`: the source's rows before sampling (`data.rows` counts the sample).
    pub(crate) unsampled_rows: Option<u64>,
}

/// The source's persons (`[privacy] person`), off the person column's marginal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PersonStats {
    pub persons: u64,
    /// Rows per person: the least, the median (the lower middle one) and the most.
    pub rows_per_person: [u64; 3],
}

/// The persons of the person column's marginal `kanon_marg_p`; a NULL person exits 2.
fn person_stats(conn: &Connection, job: &Job, person: &Column) -> Result<PersonStats> {
    let (persons, nulls, least, median, most) =
        conn.query_row(crate::sql::fragment(crate::sql::PERSONS, "stats"), [], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, i64>(3)?,
                r.get::<_, i64>(4)?,
            ))
        })?;
    if nulls > 0 {
        return Err(bad(format!(
            "{}: person column \"{}\" is NULL in some rows; every row needs its person",
            job.at(person),
            person.name
        )));
    }
    Ok(PersonStats { persons: persons as u64, rows_per_person: [least as u64, median as u64, most as u64] })
}

/// Check that every column the job names exists in the source.
pub(crate) fn check_columns(job: &Job, columns: &[SourceColumn]) -> Result<()> {
    let mut named: Vec<(&Column, &str)> =
        job.quasi_identifiers.iter().map(|q| (&q.column, "quasi-identifier")).collect();
    named.extend(job.output.drop.iter().map(|c| (c, "dropped column")));
    named.extend(job.output.pseudonymize.iter().map(|c| (c, "pseudonymized column")));
    if let Some(c) = &job.sensitive {
        named.push((c, "sensitive column"));
    }
    if let Some(c) = &job.class_column {
        named.push((c, "class column"));
    }
    if let Some(c) = &job.privacy.person {
        named.push((c, "person column"));
    }
    for (col, role) in named {
        if !columns.iter().any(|c| c.name == col.name) {
            let similar: Vec<&str> =
                columns.iter().filter(|c| c.name.eq_ignore_ascii_case(&col.name)).map(|c| c.name.as_str()).collect();
            let hint = if similar.is_empty() {
                format!(
                    "the source has {}",
                    columns.iter().map(|c| format!("\"{}\"", c.name)).collect::<Vec<_>>().join(", ")
                )
            } else {
                format!("did you mean \"{}\"?", similar[0])
            };
            return Err(bad(format!("{}: {role} \"{}\" is not a column of the source; {hint}", job.at(col), col.name)));
        }
    }
    Ok(())
}

/// Every column the search reads has a type of the remote engine kanon reads (a scalar).
pub(crate) fn check_remote_types(job: &Job, remote: &dyn RemoteEngine, columns: &[SourceColumn]) -> Result<()> {
    let mut named: Vec<(&Column, &str)> =
        job.quasi_identifiers.iter().map(|q| (&q.column, "quasi-identifier")).collect();
    named.extend(job.sensitive.iter().map(|c| (c, "sensitive column")));
    named.extend(job.class_column.iter().map(|c| (c, "class column")));
    for (col, role) in named {
        if let Some(c) = columns.iter().find(|c| c.name == col.name) {
            if let Some(t) = c.type_name.strip_prefix(remote.unread()) {
                return Err(bad(format!(
                    "{}: {role} \"{}\" has {} type {t}, which no hierarchy reads (kanon reads booleans, numbers, strings, dates and timestamps)",
                    job.at(col),
                    col.name,
                    remote.name()
                )));
            }
        }
    }
    Ok(())
}

/// Open the source, validate, take the marginals, materialize hierarchies and `kanon_f0`.
pub fn load(job: &Job) -> Result<Loaded> {
    load_showing(job, &indicatif::ProgressBar::hidden())
}

/// [`load`], naming each phase on `bar` (a scan of a large source takes minutes).
pub(crate) fn load_showing(job: &Job, bar: &indicatif::ProgressBar) -> Result<Loaded> {
    load_as(job, bar, false)
}

/// For a pass over the records themselves (cell-based generalization): the
/// source with row positions (`kanon_source_rows`), the marginals, the
/// hierarchies and the code tables, but no base frequency set.
pub(crate) fn load_records(job: &Job, bar: &indicatif::ProgressBar) -> Result<Loaded> {
    load_as(job, bar, true)
}

fn load_as(job: &Job, bar: &indicatif::ProgressBar, records: bool) -> Result<Loaded> {
    job.check_metric()?;
    job.check_hierarchies()?;
    let t = std::time::Instant::now();
    let trace = |what: &str| crate::trace(|| format!("load {what}: {:.3}s", t.elapsed().as_secs_f64()));
    bar.set_message("opening the source");
    let dp = job.privacy.differential_privacy.as_ref();
    let crate::engine::Opened { conn, columns, position, remote } = crate::engine::open(job, records || dp.is_some())?;
    check_columns(job, &columns)?;
    let unsampled_rows = dp.map(|dp| sample_source(&conn, job, dp, position.as_deref())).transpose()?;
    if let Some(remote) = &remote {
        check_remote_types(job, remote.as_ref(), &columns)?;
    }
    trace("open");
    let files = hierarchy::load_files(&conn, job)?;
    trace("hierarchy files");
    let sensitive = job.sensitive.as_ref().map(|c| c.name.as_str());
    let closeness = job.closeness_column().map(|c| c.name.as_str());
    let label = job.class_column.as_ref().map(|c| c.name.as_str());
    // The extra columns the frequency sets carry: (alias, column).
    // The person column's codes (`p`) make the base set a set of (person, tuple) pairs.
    let person = job.privacy.person.as_ref().map(|c| c.name.as_str());
    let extra: Vec<(&str, &str)> = [("s", sensitive), ("t", closeness), ("y", label), ("p", person)]
        .into_iter()
        .filter_map(|(alias, c)| c.map(|c| (alias, c)))
        .collect();
    bar.set_message("scanning the source for each column's values");
    // A copied CSV is a table already: grouping it first would not save a parse.
    let input = if embedded::small_file(job) && !records {
        let mut read: Vec<&str> = job.quasi_identifiers.iter().map(|q| q.column.name.as_str()).collect();
        for &(_, c) in &extra {
            if !read.contains(&c) {
                read.push(c);
            }
        }
        let input = frequency::Input::grouped(&conn, &read, &job.source.describe())?;
        trace("source grouped");
        input
    } else {
        frequency::Input::source()
    };
    let rows = frequency::scan_source(&conn, remote.as_ref(), &input, &job.qi_names(), &files.leaves(), &extra)?;
    if rows == 0 {
        return Err(bad(format!("{}: the source, {}, has no rows", job.path.display(), job.source.describe())));
    }
    trace("scan");
    let persons = job.privacy.person.as_ref().map(|c| person_stats(&conn, job, c)).transpose()?;
    bar.set_message("building the hierarchies");
    let hierarchies = hierarchy::finish(&conn, job, files)?;
    trace("hierarchies");
    let threads = job.engine.threads.map(|t| t as usize);
    let memory_rows = match job.engine.memory_rows {
        Some(rows) => rows,
        // What comes back from a remote engine is held beside its Arrow copy: a few hundred MB at most.
        None if remote.is_some() => crate::evaluator::REMOTE_MEMORY_ROWS,
        None => default_memory_rows(&conn, job.quasi_identifiers.len(), threads)?,
    };
    let extras = Extras {
        sensitive: sensitive.is_some(),
        closeness: closeness.is_some(),
        label: label.is_some(),
        spread: false,
    };
    let side = job.engine.evaluator;
    let form = if records {
        let aliases: Vec<&str> = extra.iter().map(|e| e.0).collect();
        frequency::code_tables(&conn, job.quasi_identifiers.len(), &aliases)?;
        frequency::BaseForm::Absent
    } else {
        bar.set_message(format!("grouping the {rows} source rows by their quasi-identifiers"));
        let form = frequency::encode(
            &conn,
            remote.as_ref(),
            &input,
            &job.qi_names(),
            rows,
            &extra,
            &columns,
            memory_rows,
            side,
        )?;
        trace("base frequency set");
        if let (frequency::BaseForm::OnEngine { rows }, Some(person)) = (&form, &job.privacy.person) {
            // Signatures are computed over the pairs kanon holds.
            return Err(bad(format!(
                "{}: person = \"{}\": the base set of (person, QI values) pairs has {rows} rows on {}, more than [engine] memory_rows ({memory_rows}), or evaluator = \"engine\"; person signatures are computed over pairs kanon holds: raise memory_rows (about 40 bytes a pair) or run on DuckDB",
                job.at(person),
                person.name,
                job.engine.kind.name(),
            )));
        }
        if matches!(form, frequency::BaseForm::OnEngine { .. }) && job.risk.population_table.is_some() {
            // F_j joins each class of the sample with the population's, which kanon reads locally.
            return Err(bad(format!(
                "{}: [risk] population_table is joined with the classes kanon holds; this base set stays on {} (more than [engine] memory_rows rows, or evaluator = \"engine\"): set [engine] evaluator = \"memory\" to bring it back",
                job.path.display(),
                job.engine.kind.name(),
            )));
        }
        form
    };
    let models = Arc::new(class_models(&conn, job, &columns)?);
    let population = population(&conn, job)?;
    let data = Dataset {
        rows,
        heights: hierarchies.iter().map(|h| h.height).collect(),
        leaves: hierarchies.iter().map(|h| h.leaves).collect(),
        label: extras.label,
        persons: persons.map(|p| p.persons),
    };
    let base = frequency::Base::new(form);
    Ok(Loaded {
        conn,
        columns,
        hierarchies,
        data,
        extras,
        base,
        models,
        population,
        memory_rows,
        side,
        threads,
        position,
        remote,
        persons,
        unsampled_rows,
    })
}

/// SafePub's sample in place of the source (`data::sample`): the rows before it.
fn sample_source(
    conn: &Connection,
    job: &Job,
    dp: &crate::job::DifferentialPrivacy,
    position: Option<&str>,
) -> Result<u64> {
    match (dp.derived, position) {
        (Some(derived), Some(position)) => crate::data::sample::sample(conn, position, dp.seed, derived.beta),
        _ => Err(bad(format!("{}: differential_privacy runs in kanon run, on DuckDB", job.path.display()))),
    }
}

impl Loaded {
    /// An evaluator over this data, on the backend the job's size calls for.
    pub fn evaluator(&self) -> Result<Evaluator<'_>> {
        // `[engine] evaluator` forces a side; on DuckDB the engine's side is its SQL backend.
        self.evaluator_on(match self.side {
            EvaluatorSide::Auto => Backend::Auto(self.memory_rows),
            EvaluatorSide::Memory => Backend::Memory,
            EvaluatorSide::Engine => Backend::Sql,
        })
    }

    /// An evaluator on a chosen backend (tests compare the two).
    pub fn evaluator_on(&self, backend: Backend) -> Result<Evaluator<'_>> {
        Evaluator::new(
            &self.conn,
            &self.base,
            self.data.clone(),
            self.extras,
            backend,
            self.threads,
            self.remote.as_deref(),
        )?
        .with_models(self.models.clone())
        .with_population(self.population.clone())
    }
}

/// The population the job's exact k-map or δ-presence compares classes with
/// (None unless the job asks for one of them with `[risk] population_table`).
fn population(conn: &Connection, job: &Job) -> Result<Option<Arc<Population>>> {
    let limits = &job.privacy.limits;
    let k_map = limits.k_map.filter(|_| job.risk.population_table.is_some()).map(|m| m.k);
    if k_map.is_none() && limits.delta_presence.is_none() {
        return Ok(None);
    }
    let Some(relation) = crate::engine::embedded::population_relation(conn, job)? else { return Ok(None) };
    let base = crate::data::population::base(conn, job, &relation)?;
    let divisors = crate::data::hierarchy::divisors(conn, job.quasi_identifiers.len())?;
    Ok(Some(Arc::new(Population::new(base, divisors, k_map, limits.delta_presence))))
}

/// The job's per-class models, with what t-closeness needs of the source:
/// its distribution of the column (before any suppression) and, per
/// distance, the column's order or hierarchy.
pub(crate) fn class_models(conn: &Connection, job: &Job, columns: &[SourceColumn]) -> Result<ClassModels> {
    let mut models = ClassModels { separate: job.closeness_column().is_some(), ..ClassModels::default() };
    if let Some(d) = &job.privacy.diversity {
        match d.kind {
            DiversityKind::Distinct => {}
            DiversityKind::Entropy => models.entropy = Some(d.l),
            DiversityKind::Recursive(c) => models.recursive = Some((c, d.l)),
        }
    }
    let Some(spec) = &job.privacy.closeness else {
        return Ok(models);
    };
    let alias = if models.separate { "t" } else { "s" };
    let mut stmt = conn.prepare(&embedded::statement(
        "closeness_reference",
        &[("codes", &frequency::extra_codes(alias)), ("alias", alias)],
    ))?;
    let mut reference = vec![0u64];
    for row in stmt.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)))? {
        let (code, count) = row?;
        debug_assert_eq!(code as usize, reference.len());
        reference.push(count as u64);
    }
    let total = reference.iter().sum();
    let at = || format!("{}: t_closeness column \"{}\"", job.at(&spec.column), spec.column.name);
    let distance = match &spec.distance {
        DistanceSpec::Equal => Distance::Equal,
        DistanceSpec::Ordered => {
            let column = columns.iter().find(|c| c.name == spec.column.name);
            let type_name = column.map_or("", |c| c.type_name.as_str());
            if !ColumnType::of(type_name).is_ordered() {
                return Err(bad(format!(
                    "{}: distance \"ordered\" needs a numeric or date column, and this one is {type_name}",
                    at()
                )));
            }
            Distance::ordered(&reference)
        }
        DistanceSpec::Hierarchical(h) => {
            let (height, ancestors) = hierarchy::value_tree(conn, h, alias, &frequency::extra_codes(alias))
                .map_err(|e| bad(format!("{}: {e:#}", at())))?;
            Distance::hierarchical(&reference, &ancestors, height)
        }
    };
    models.closeness = Some(Closeness { t: spec.t, reference, total, distance });
    Ok(models)
}
