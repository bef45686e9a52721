//! `[output]`: where the release goes, what it leaves out or pseudonymizes,
//! and the reconstruction.

use super::cross_section;
use super::engine::EngineKind;
use super::names::{local_table, same_file};
use super::source::SourceSpec;
use super::text::JobText;
use super::{Column, Job};
use crate::error::bad;
use anyhow::Result;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// The environment variable holding the pseudonymization key when `[output] key_env` names none.
pub const KEY_ENV: &str = "KANON_KEY";

/// The release as a table of a DuckDB database.
#[derive(Debug, Clone)]
pub struct OutputTable {
    pub database: PathBuf,
    pub name: String,
}

#[derive(Debug, Clone)]
pub struct OutputSpec {
    /// None when the release goes only to files (a file source, no `database`).
    pub table: Option<OutputTable>,
    /// On the Spark or PostgreSQL engine: the release's table there.
    pub(crate) remote_table: Option<String>,
    pub(crate) csv: Option<PathBuf>,
    pub(crate) parquet: Option<PathBuf>,
    pub(crate) report: Option<PathBuf>,
    /// The approver's page (`[output] html`): one self-contained HTML file.
    pub(crate) html: Option<PathBuf>,
    pub(crate) drop: Vec<Column>,
    /// Released as HMAC-SHA-256 pseudonyms ([`crate::pseudonym`]).
    pub(crate) pseudonymize: Vec<Column>,
    /// The environment variable holding the pseudonymization key.
    pub(crate) key_env: String,
    /// The key, read from `key_env` by a run that pseudonymizes (never by the parser).
    pub(crate) key: Option<crate::pseudonym::Key>,
    /// Append each run to the output database's `kanon_runs` (`[output] history`, default true).
    pub(crate) history: bool,
    /// Where cell-based generalization writes its reconstruction, if asked.
    pub(crate) reconstructed: Option<Reconstructed>,
}

/// The reconstruction's target: a table of the output database, or a file
/// (a name ending in `.csv` or `.parquet`).
#[derive(Debug, Clone, PartialEq)]
pub enum Reconstructed {
    Table(String),
    Csv(PathBuf),
    Parquet(PathBuf),
}

impl Reconstructed {
    /// Read `name`: a file when it ends in .csv or .parquet (resolved by `resolve`), else a table.
    pub(crate) fn parse(name: &str, resolve: impl Fn(&str) -> PathBuf) -> Result<Reconstructed, String> {
        let lower = name.to_ascii_lowercase();
        if name.trim().is_empty() {
            Err("the reconstruction's table or file name is empty".into())
        } else if lower.ends_with(".csv") {
            Ok(Reconstructed::Csv(resolve(name)))
        } else if lower.ends_with(".parquet") {
            Ok(Reconstructed::Parquet(resolve(name)))
        } else {
            local_table(name).map(Reconstructed::Table)
        }
    }
}

impl OutputSpec {
    /// The reconstruction as an output of its own (same database, same dropped
    /// columns, no report), checked against the release and the source.
    pub(crate) fn reconstruction(&self, job: &Job) -> Result<Option<OutputSpec>> {
        let Some(r) = &self.reconstructed else { return Ok(None) };
        let file = job.path.display();
        let mut out = OutputSpec {
            table: None,
            remote_table: None,
            csv: None,
            parquet: None,
            report: None,
            html: None,
            drop: self.drop.clone(),
            pseudonymize: self.pseudonymize.clone(),
            key_env: self.key_env.clone(),
            key: self.key.clone(),
            history: false,
            reconstructed: None,
        };
        match r {
            Reconstructed::Table(name) => {
                let Some(t) = &self.table else {
                    return Err(bad(format!(
                        "{file}: the reconstruction \"{name}\" is a table, but the release has no database; name a .csv or .parquet file"
                    )));
                };
                if t.name.eq_ignore_ascii_case(name) {
                    return Err(bad(format!("{file}: the reconstruction table \"{name}\" is the release table")));
                }
                if cross_section::is_source_table(&job.source, Some(&t.database), name) {
                    return Err(bad(format!(
                        "{file}: the reconstruction table \"{name}\" is the source table; kanon never overwrites its source"
                    )));
                }
                out.table = Some(OutputTable { database: t.database.clone(), name: name.clone() });
            }
            Reconstructed::Csv(p) | Reconstructed::Parquet(p) => {
                if [&self.csv, &self.parquet].into_iter().flatten().any(|q| same_file(p, q)) {
                    return Err(bad(format!("{file}: the reconstruction file {} is the release file", p.display())));
                }
                if matches!(r, Reconstructed::Csv(_)) {
                    out.csv = Some(p.clone());
                } else {
                    out.parquet = Some(p.clone());
                }
            }
        }
        Ok(Some(out))
    }

    /// Where the release goes first: its database, else its csv or parquet file.
    pub(crate) fn first_path(&self) -> &Path {
        if let Some(t) = &self.remote_table {
            return Path::new(t.as_str());
        }
        match (&self.table, &self.csv, &self.parquet) {
            (Some(t), _, _) => &t.database,
            (None, Some(p), _) | (None, None, Some(p)) => p,
            (None, None, None) => unreachable!("Job::parse requires a release target"),
        }
    }

    /// The release for messages: its table (on `engine`), else its files.
    pub(crate) fn describe(&self, engine: &EngineKind) -> String {
        if let Some(t) = &self.remote_table {
            return format!("{} table \"{t}\"", engine.name());
        }
        match &self.table {
            Some(t) => format!("\"{}\"", t.name),
            None => [&self.csv, &self.parquet]
                .into_iter()
                .flatten()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(" and "),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawOutput {
    pub(super) database: Option<String>,
    pub(super) table: Option<String>,
    pub(super) csv: Option<String>,
    pub(super) parquet: Option<String>,
    report: Option<String>,
    html: Option<String>,
    #[serde(default)]
    drop: Vec<Spanned<String>>,
    #[serde(default)]
    pseudonymize: Vec<Spanned<String>>,
    key_env: Option<String>,
    history: Option<bool>,
    reconstructed: Option<String>,
}

pub(super) fn parse(raw: &RawOutput, kind: &EngineKind, source: &SourceSpec, job: &JobText) -> Result<OutputSpec> {
    let at = job.section("output");
    let remote_table = cross_section::release_on_server(raw, kind, &at)?;
    let database = match (&raw.database, source) {
        (Some(db), _) => Some(job.resolve(db)),
        (None, SourceSpec::Database { path, .. }) => Some(path.clone()),
        (None, _) => None,
    };
    let table = match (database, &raw.table) {
        _ if remote_table.is_some() => None,
        (Some(database), Some(name)) => {
            if name.trim().is_empty() {
                return Err(at.bad("table is empty"));
            }
            let name = local_table(name).map_err(|m| at.bad(format_args!("table {m}")))?;
            Some(OutputTable { database, name })
        }
        (Some(_), None) => return Err(at.bad("needs a table for the release")),
        (None, Some(_)) => return Err(at.bad("table needs a database when the source is a csv or parquet file")),
        (None, None) if raw.csv.is_none() && raw.parquet.is_none() => {
            return Err(at.bad("needs a database and table, or a csv or parquet file, for the release"))
        }
        (None, None) => None,
    };
    let release_table = match (&remote_table, &table) {
        (Some(name), _) => Some((None, name.as_str())),
        (None, Some(t)) => Some((Some(t.database.as_path()), t.name.as_str())),
        (None, None) => None,
    };
    if let Some((database, name)) = release_table {
        if cross_section::is_source_table(source, database, name) {
            return Err(at.bad(format_args!("table \"{name}\" is the source table; kanon never overwrites its source")));
        }
    }
    let key_env = match &raw.key_env {
        Some(v) if v.is_empty() || v.contains('=') || v.contains('\0') => {
            return Err(at.bad(format_args!("key_env must name an environment variable, got \"{v}\"")))
        }
        Some(v) => v.clone(),
        None => KEY_ENV.to_string(),
    };
    let reconstructed = raw
        .reconstructed
        .as_deref()
        .map(|r| Reconstructed::parse(r, |p| job.resolve(p)))
        .transpose()
        .map_err(|m| at.bad(format_args!("reconstructed: {m}")))?;
    Ok(OutputSpec {
        table,
        remote_table,
        csv: raw.csv.as_deref().map(|p| job.resolve(p)),
        parquet: raw.parquet.as_deref().map(|p| job.resolve(p)),
        report: raw.report.as_deref().map(|p| job.resolve(p)),
        html: raw.html.as_deref().map(|p| job.resolve(p)),
        drop: raw.drop.iter().map(|c| job.column(c)).collect(),
        pseudonymize: raw.pseudonymize.iter().map(|c| job.column(c)).collect(),
        key_env,
        key: None,
        history: raw.history.unwrap_or(true),
        reconstructed,
    })
}

#[cfg(test)]
mod tests {
    use crate::job::tests::MINIMAL;
    use crate::job::Job;
    use std::path::{Path, PathBuf};

    #[test]
    fn output_named_like_source_is_refused() {
        let t = MINIMAL
            .replace("csv = \"data.csv\"", "database = \"w.duckdb\"\ntable = \"REL\"")
            .replace("database = \"out.duckdb\"\n", "");
        let e = Job::parse(Path::new("j.toml"), &t).unwrap_err();
        assert!(format!("{e:#}").contains("source table"), "{e:#}");
    }

    #[test]
    fn a_file_source_may_release_to_files_only() {
        let files_only = MINIMAL.replace("database = \"out.duckdb\"\ntable = \"rel\"", "csv = \"out.csv\"");
        let job = Job::parse(Path::new("/jobs/j.toml"), &files_only).unwrap();
        assert!(job.output.table.is_none());
        assert_eq!(job.output.csv, Some(PathBuf::from("/jobs/out.csv")));
        let nothing = MINIMAL.replace("database = \"out.duckdb\"\ntable = \"rel\"", "report = \"r.json\"");
        let e = Job::parse(Path::new("j.toml"), &nothing).unwrap_err();
        assert!(format!("{e:#}").contains("for the release"), "{e:#}");
        let table_alone = MINIMAL.replace("database = \"out.duckdb\"\n", "");
        let e = Job::parse(Path::new("j.toml"), &table_alone).unwrap_err();
        assert!(format!("{e:#}").contains("table needs a database"), "{e:#}");
    }
}
