//! The rules that read more than one part of the job: the engine decides the
//! source's and the release's forms; the release never overwrites the source
//! or a file the job reads; a column plays one role.

use super::engine::EngineKind;
use super::names::same_file;
use super::output::{OutputSpec, RawOutput};
use super::privacy::Privacy;
use super::quasi_identifiers::{HierarchySpec, QuasiIdentifier};
use super::risk::PopulationTable;
use super::source::{RawSource, SourceSpec};
use super::text::{At, JobText};
use super::Job;
use crate::error::bad;
use anyhow::Result;
use std::path::Path;

/// The source a server reads: a table of its own (Spark also a parquet path
/// it reads), named in `[source]` (`at`) and nothing else. None on DuckDB.
pub(super) fn source_on_server(raw: &RawSource, kind: &EngineKind, at: &At) -> Result<Option<SourceSpec>> {
    let source = match kind {
        EngineKind::DuckDb => return Ok(None),
        EngineKind::Postgres(_) => match (&raw.database, &raw.csv, &raw.table, &raw.parquet) {
            (None, None, Some(t), None) if !t.trim().is_empty() => SourceSpec::PostgresTable { name: t.clone() },
            _ => return Err(at.bad("on the PostgreSQL engine needs table (\"schema.table\") and nothing else")),
        },
        EngineKind::Spark(_) => match (&raw.database, &raw.csv, &raw.table, &raw.parquet) {
            (None, None, Some(t), None) if !t.trim().is_empty() => SourceSpec::SparkTable { name: t.clone() },
            (None, None, None, Some(p)) => SourceSpec::SparkParquet { path: p.clone() },
            _ => return Err(at.bad(
                "on the Spark engine needs exactly one of table (in Spark's catalog) or parquet (a path Spark reads)",
            )),
        },
    };
    Ok(Some(source))
}

/// The release a server writes: one table of its own, named in `[output]`
/// (`at`), and no database or file. None on DuckDB.
pub(super) fn release_on_server(raw: &RawOutput, kind: &EngineKind, at: &At) -> Result<Option<String>> {
    match (kind, &raw.table) {
        (EngineKind::DuckDb, _) => Ok(None),
        (_, Some(t)) if raw.database.is_none() && raw.csv.is_none() && raw.parquet.is_none() => {
            if t.trim().is_empty() {
                return Err(at.bad("table is empty"));
            }
            Ok(Some(t.clone()))
        }
        (EngineKind::Spark(_), _) => Err(at.bad(
            "on the Spark engine needs table (in Spark's catalog) and nothing else for the release (no database, csv or parquet)",
        )),
        (_, _) => Err(at.bad(
            "on the PostgreSQL engine needs table (\"schema.table\") and nothing else for the release (no database, csv or parquet)",
        )),
    }
}

/// Whether a release table `name` is the source table: on a server (no
/// `database`) the same name, on DuckDB the same name in the same database.
pub(super) fn is_source_table(source: &SourceSpec, database: Option<&Path>, name: &str) -> bool {
    match (source, database) {
        (SourceSpec::SparkTable { name: s } | SourceSpec::PostgresTable { name: s }, None) => {
            s.eq_ignore_ascii_case(name)
        }
        (SourceSpec::Database { path, table }, Some(database)) => {
            same_file(path, database) && table.eq_ignore_ascii_case(name)
        }
        _ => false,
    }
}

/// A column is a quasi-identifier, dropped, pseudonymized or sensitive: one
/// of these only (a pseudonymized column also listed once).
pub(super) fn check_column_roles(
    output: &OutputSpec,
    privacy: &Privacy,
    quasi_identifiers: &[QuasiIdentifier],
    job: &JobText,
) -> Result<()> {
    let is_qi = |name: &str| quasi_identifiers.iter().any(|q| q.column.name == name);
    for d in &output.drop {
        if is_qi(&d.name) {
            return Err(job
                .line(d.line)
                .bad(format_args!("column \"{}\" is both dropped and a quasi-identifier", d.name)));
        }
    }
    let sensitive = || privacy.diversity.iter().map(|d| &d.column).chain(privacy.closeness.iter().map(|t| &t.column));
    for p in &output.pseudonymize {
        let role = if is_qi(&p.name) {
            Some("a quasi-identifier")
        } else if output.drop.iter().any(|d| d.name == p.name) {
            Some("dropped")
        } else if sensitive().any(|c| c.name == p.name) {
            Some("the sensitive column")
        } else if output.pseudonymize.iter().filter(|q| q.name == p.name).count() > 1 {
            Some("listed twice")
        } else {
            None
        };
        if let Some(role) = role {
            return Err(job.line(p.line).section("output").bad(format_args!(
                "pseudonymize: column \"{}\" is {role}; a pseudonymized column is released keyed, never generalized, measured or left out",
                p.name
            )));
        }
    }
    if let Some(person) = &privacy.person {
        let at = job.line(person.line).section("privacy");
        if is_qi(&person.name) || sensitive().any(|c| c.name == person.name) {
            return Err(at.bad(format_args!(
                "person column \"{}\" identifies persons; it cannot also be a quasi-identifier or the sensitive column",
                person.name
            )));
        }
        let hidden = (output.drop.iter().chain(&output.pseudonymize)).any(|c| c.name == person.name);
        if !hidden {
            return Err(at.bad(format_args!(
                "person column \"{}\" would go out in clear: add it to [output] drop or [output] pseudonymize",
                person.name
            )));
        }
    }
    for c in sensitive() {
        if is_qi(&c.name) {
            return Err(job
                .line(c.line)
                .bad(format_args!("sensitive column \"{}\" cannot also be a quasi-identifier", c.name)));
        }
    }
    Ok(())
}

impl Job {
    /// Every file the job reads, described for messages: the job file, the
    /// source, its hierarchy files and a population file.
    pub(crate) fn input_files(&self) -> Vec<(String, &Path)> {
        let mut inputs = vec![("the job file".to_string(), self.path.as_path())];
        match &self.source {
            SourceSpec::Csv { path, .. } | SourceSpec::Parquet { path } => {
                inputs.push(("the source file".into(), path))
            }
            SourceSpec::Database { path, .. } => inputs.push(("the source database".into(), path)),
            _ => {}
        }
        for q in &self.quasi_identifiers {
            if let HierarchySpec::File(path) = &q.hierarchy {
                inputs.push((format!("the hierarchy file of \"{}\"", q.column.name), path));
            }
        }
        if let Some(PopulationTable::Csv { path, .. } | PopulationTable::Parquet(path)) = &self.risk.population_table {
            inputs.push(("[risk] population_table".into(), path));
        }
        inputs
    }

    /// Refuse (exit 2) an output file `what` that resolves to a file the job
    /// reads, or whose folder does not exist: checked before anything is read.
    /// A DuckDB output database may be the source database (`database_output`).
    pub(crate) fn check_output_file(&self, what: &str, path: &Path, database_output: bool) -> Result<()> {
        let file = self.path.display();
        let folder = path.parent().filter(|f| !f.as_os_str().is_empty()).unwrap_or(Path::new("."));
        if !folder.is_dir() {
            return Err(bad(format!(
                "{file}: {what} {}: the folder {} does not exist",
                path.display(),
                folder.display()
            )));
        }
        for (input, at) in self.input_files() {
            if database_output && matches!(&self.source, SourceSpec::Database { path: p, .. } if p == at) {
                continue;
            }
            if same_file(at, path) {
                return Err(bad(format!(
                    "{file}: {what} {} is {input} ({}); kanon never writes over what it reads",
                    path.display(),
                    at.display()
                )));
            }
        }
        Ok(())
    }
}

/// δ-presence compares the source with its population: it needs `[risk] population_table`.
pub(super) fn check_presence(privacy: &Privacy, risk: &super::RiskSpec, job: &JobText) -> Result<()> {
    if privacy.limits.delta_presence.is_some() && risk.population_table.is_none() {
        return Err(job
            .section("privacy")
            .bad("delta_presence needs [risk] population_table: the population the source was drawn from"));
    }
    Ok(())
}
