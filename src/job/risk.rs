//! `[risk]`: how the re-identification risk is measured (docs/risk.md).

use super::names::local_table;
use super::text::JobText;
use anyhow::Result;
use serde::Deserialize;
use std::path::PathBuf;

/// The analysis's settings (`[risk]` in the job).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RiskSettings {
    /// A record is at risk when its probability of re-identification exceeds this.
    pub threshold: f64,
    /// The population's size N, when known.
    pub population: Option<u64>,
    /// n / N, when the population's size is not given (in (0, 1]).
    pub sampling_fraction: f64,
}

impl Default for RiskSettings {
    /// ARX's defaults: threshold 0.2, sampling fraction 1%.
    fn default() -> Self {
        RiskSettings { threshold: 0.2, population: None, sampling_fraction: 0.01 }
    }
}

/// `[risk]` (docs/risk.md).
#[derive(Debug, Clone)]
pub struct RiskSpec {
    pub(crate) settings: RiskSettings,
    /// Population class sizes F_j come from this table (with the source's QI columns).
    pub(crate) population_table: Option<PopulationTable>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum PopulationTable {
    /// A table of the source database.
    Table(String),
    Csv {
        path: PathBuf,
        delimiter: Option<String>,
    },
    Parquet(PathBuf),
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRisk {
    threshold: Option<f64>,
    population: Option<i64>,
    sampling_fraction: Option<f64>,
    population_table: Option<RawPopulationTable>,
}

/// `population_table = "name"` (a table of the source database) or `{ csv | parquet = "file" }`.
#[derive(Deserialize)]
#[serde(untagged)]
enum RawPopulationTable {
    Table(String),
    File { csv: Option<String>, parquet: Option<String>, delimiter: Option<String> },
}

pub(super) fn parse(raw: &RawRisk, job: &JobText) -> Result<RiskSpec> {
    let at = job.section("risk");
    let defaults = RiskSettings::default();
    let threshold = raw.threshold.unwrap_or(defaults.threshold);
    if !(threshold > 0.0 && threshold <= 1.0) {
        return Err(at.bad(format_args!("threshold must be in (0, 1], got {threshold}")));
    }
    let sampling_fraction = raw.sampling_fraction.unwrap_or(defaults.sampling_fraction);
    if !(sampling_fraction > 0.0 && sampling_fraction <= 1.0) {
        return Err(at.bad(format_args!("sampling_fraction must be in (0, 1], got {sampling_fraction}")));
    }
    if raw.population.is_some() && raw.sampling_fraction.is_some() {
        return Err(at.bad("takes population or sampling_fraction, not both"));
    }
    let population = match raw.population {
        None => None,
        Some(p) if p >= 1 => Some(p as u64),
        Some(p) => return Err(at.bad(format_args!("population must be at least 1, got {p}"))),
    };
    let population_table = match &raw.population_table {
        None => None,
        Some(RawPopulationTable::Table(t)) => {
            Some(PopulationTable::Table(local_table(t).map_err(|m| at.bad(format_args!("population_table {m}")))?))
        }
        Some(RawPopulationTable::File { csv: Some(c), parquet: None, delimiter }) => {
            Some(PopulationTable::Csv { path: job.resolve(c), delimiter: delimiter.clone() })
        }
        Some(RawPopulationTable::File { csv: None, parquet: Some(p), delimiter: None }) => {
            Some(PopulationTable::Parquet(job.resolve(p)))
        }
        Some(_) => {
            return Err(at.bad("population_table is a table name or { csv = \"file\" } or { parquet = \"file\" }"))
        }
    };
    Ok(RiskSpec { settings: RiskSettings { threshold, population, sampling_fraction }, population_table })
}
