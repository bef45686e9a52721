//! The job file: TOML in, a validated [`Job`] out.
//!
//! Each section is read by its own module, which starts its messages with the
//! file and the section once ([`text::At`]); the rules that read more than one
//! section are in [`cross_section`]. Relative paths are resolved against the
//! job file's folder. Errors name the job file and, for anything tied to a
//! column, the line where it is written.

use crate::error::bad;
use crate::options::{Algorithm, Metric, Reuse, Scheme};
use anyhow::{Context, Result};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

mod cross_section;
mod differential_privacy;
mod engine;
mod limits;
mod names;
mod output;
mod privacy;
mod quasi_identifiers;
mod ratio;
mod risk;
mod search;
mod source;
mod text;

pub use differential_privacy::{Derived, DifferentialPrivacy};
pub use engine::{Engine, EngineKind, EvaluatorSide, SecretUrl};
pub use limits::{AverageRisk, CellEstimator, Estimator, KMapSpec, RiskLimits};
pub use names::{local_table, name_parts, same_file};
pub use output::{OutputSpec, OutputTable, Reconstructed, KEY_ENV};
pub use privacy::{Budget, ClosenessSpec, DistanceSpec, Diversity, DiversityKind, Privacy};
pub use quasi_identifiers::{DateUnit, HierarchySpec, QuasiIdentifier};
pub use ratio::Ratio;
pub use risk::{PopulationTable, RiskSettings, RiskSpec};
pub use search::OPEN_CLUSTERS;
pub use source::SourceSpec;

/// A column named in the job file, with the line it is named on.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub name: String,
    pub line: usize,
}

/// A validated job.
#[derive(Debug, Clone)]
pub struct Job {
    pub(crate) path: PathBuf,
    pub(crate) sha256: String,
    pub(crate) source: SourceSpec,
    pub output: OutputSpec,
    pub(crate) privacy: Privacy,
    pub(crate) algorithm: Algorithm,
    /// Li & Li's scheme search when set (`[search] scheme`).
    pub(crate) scheme: Option<Scheme>,
    pub(crate) metric: Metric,
    /// Class label column for cm.
    pub class_column: Option<Column>,
    /// The sensitive column: `[privacy] l_diversity.column`, or the one
    /// `kanon pareto --sensitive` names.
    pub sensitive: Option<Column>,
    pub(crate) quasi_identifiers: Vec<QuasiIdentifier>,
    pub engine: Engine,
    /// Cell-based generalization's m (`[search] open_clusters`).
    pub(crate) open_clusters: usize,
    /// `[search] reuse`: keep the previous report's node while it holds.
    pub(crate) reuse: Reuse,
    /// `[risk]`: how the re-identification risk is measured.
    pub(crate) risk: RiskSpec,
}

/// The file as written, one raw part per section.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawJob {
    source: source::RawSource,
    output: output::RawOutput,
    privacy: privacy::RawPrivacy,
    #[serde(default)]
    search: search::RawSearch,
    #[serde(default)]
    quasi_identifiers: Vec<quasi_identifiers::RawQi>,
    #[serde(default)]
    engine: engine::RawEngine,
    #[serde(default)]
    risk: risk::RawRisk,
}

impl Job {
    /// Read and validate a job file.
    pub fn load(path: &Path) -> Result<Job> {
        let text =
            std::fs::read_to_string(path).map_err(|e| bad(format!("cannot read job file {}: {e}", path.display())))?;
        Job::parse(path, &text)
    }

    /// Validate job text read from `path` (used for relative paths and
    /// messages). The sections are read in this order, so a job with several
    /// faults is told the first of them.
    pub fn parse(path: &Path, text: &str) -> Result<Job> {
        let job = text::JobText::new(path, text);
        let raw: RawJob = job.toml()?;
        let kind = engine::kind(&raw.engine, &job)?;
        let source = source::parse(&raw.source, &kind, &job)?;
        let output = output::parse(&raw.output, &kind, &source, &job)?;
        let privacy = privacy::parse(&raw.privacy, &job)?;
        let quasi_identifiers = quasi_identifiers::parse(&raw.quasi_identifiers, &job)?;
        cross_section::check_column_roles(&output, &privacy, &quasi_identifiers, &job)?;
        let search = search::parse(&raw.search, &job)?;
        let risk = risk::parse(&raw.risk, &job)?;
        cross_section::check_presence(&privacy, &risk, &job)?;
        let engine = engine::settings(&raw.engine, kind, &job)?;
        Ok(Job {
            path: path.to_path_buf(),
            sha256: format!("{:x}", Sha256::digest(text.as_bytes())),
            source,
            output,
            sensitive: privacy
                .diversity
                .as_ref()
                .map(|d| &d.column)
                .or(privacy.closeness.as_ref().map(|t| &t.column))
                .cloned(),
            privacy,
            algorithm: search.algorithm,
            scheme: search.scheme,
            metric: search.metric,
            class_column: search.class_column,
            quasi_identifiers,
            engine,
            open_clusters: search.open_clusters,
            reuse: search.reuse,
            risk,
        })
    }

    /// t-closeness's column when it is not the sensitive column (the
    /// frequency sets then carry it as `t` beside ℓ's `s`).
    pub(crate) fn closeness_column(&self) -> Option<&Column> {
        let t = &self.privacy.closeness.as_ref()?.column;
        (self.sensitive.as_ref().map(|s| &s.name) != Some(&t.name)).then_some(t)
    }

    /// QI column names in job order.
    pub fn qi_names(&self) -> Vec<String> {
        self.quasi_identifiers.iter().map(|q| q.column.name.clone()).collect()
    }

    /// cm needs a class column.
    pub(crate) fn check_metric(&self) -> Result<()> {
        if self.metric == Metric::Cm && self.class_column.is_none() {
            return Err(bad(format!("{}: metric cm needs [search] class_column", self.path.display())));
        }
        Ok(())
    }

    /// Every QI has a hierarchy, unless the algorithm is CNDGH (natural
    /// domains), the one that needs none.
    pub(crate) fn check_hierarchies(&self) -> Result<()> {
        match self.quasi_identifiers.iter().find(|q| !q.hierarchy_given) {
            Some(q) if self.algorithm != Algorithm::Cndgh => Err(bad(format!(
                "{}: quasi-identifier \"{}\" has no hierarchy; only algorithm cndgh runs without one",
                self.at(&q.column),
                q.column.name
            ))),
            _ => Ok(()),
        }
    }

    /// `file:line` for messages about a column named in the job.
    pub(crate) fn at(&self, col: &Column) -> String {
        format!("{}:{}", self.path.display(), col.line)
    }
}

/// Parse a `--node age=3,education=1` argument against the job's QIs.
pub(crate) fn parse_levels(job: &Job, spec: &str) -> Result<Vec<u8>> {
    let names = job.qi_names();
    let mut levels = vec![None; names.len()];
    for part in spec.split(',').filter(|p| !p.trim().is_empty()) {
        let (name, level) =
            part.split_once('=').ok_or_else(|| bad(format!("--node: expected column=level, got \"{part}\"")))?;
        let i = names
            .iter()
            .position(|n| n == name.trim())
            .ok_or_else(|| bad(format!("--node: \"{}\" is not a quasi-identifier", name.trim())))?;
        let l: u8 = level
            .trim()
            .parse()
            .with_context(|| format!("--node: level for \"{name}\""))
            .map_err(|e| bad(format!("{e:#}")))?;
        levels[i] = Some(l);
    }
    levels
        .into_iter()
        .zip(&names)
        .map(|(l, n)| l.ok_or_else(|| bad(format!("--node: no level given for \"{n}\""))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A valid job, edited by the tests of each section.
    pub(super) const MINIMAL: &str = r#"
[source]
csv = "data.csv"
[output]
database = "out.duckdb"
table = "rel"
[privacy]
k = 3
max_suppression = 0.01
[[quasi_identifiers]]
column = "zip"
hierarchy = { mask = 3 }
[[quasi_identifiers]]
column = "sex"
hierarchy = "suppress"
"#;

    #[test]
    fn parses_and_resolves_relative_paths() {
        let job = Job::parse(Path::new("/jobs/j.toml"), MINIMAL).unwrap();
        assert_eq!(job.source, SourceSpec::Csv { path: "/jobs/data.csv".into(), delimiter: None });
        assert_eq!(job.output.table.as_ref().unwrap().database, PathBuf::from("/jobs/out.duckdb"));
        assert_eq!(job.privacy.budget, Budget::Fraction(0.01));
        assert_eq!(job.quasi_identifiers[0].hierarchy, HierarchySpec::Mask(3));
        assert_eq!(job.quasi_identifiers[1].column.line, 14);
        assert_eq!(job.metric, Metric::Glm);
    }
}
