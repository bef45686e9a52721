//! The JSON report of a run.

use crate::job::OutputSpec;
use crate::metrics::Metrics;
use serde::Serialize;
use serde_json::{Map, Value};

#[derive(Debug, Clone, Serialize)]
pub struct Seconds {
    pub load: f64,
    pub search: f64,
    pub release: f64,
    pub total: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Output {
    pub database: Option<String>,
    pub table: Option<String>,
    pub csv: Option<String>,
    pub parquet: Option<String>,
}

impl Output {
    /// Where the job's release went, for the report.
    pub fn of(out: &OutputSpec) -> Output {
        Output {
            database: out.table.as_ref().map(|t| t.database.display().to_string()),
            table: out.table.as_ref().map(|t| t.name.clone()).or_else(|| out.spark_table.clone()),
            csv: out.csv.as_ref().map(|p| p.display().to_string()),
            parquet: out.parquet.as_ref().map(|p| p.display().to_string()),
        }
    }
}

/// The node's metrics, with the ones every algorithm reports: lm (glm per
/// cell) and am (ambiguity: mean leaves a released record stands for).
#[derive(Debug, Clone, Serialize)]
pub struct ReleaseMetrics {
    #[serde(flatten)]
    pub node: Metrics,
    pub lm: f64,
    pub am: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub kanon_version: &'static str,
    pub job_sha256: String,
    pub rows_in: u64,
    /// Distinct QI combinations in the source.
    pub combinations: u64,
    pub rows_out: u64,
    pub suppressed: u64,
    pub budget: u64,
    pub quasi_identifiers: Vec<String>,
    /// Level per QI, in job order.
    pub node: Map<String, Value>,
    /// Smallest class in the release.
    pub k: Option<u64>,
    pub k_requested: u64,
    /// Fewest distinct sensitive values in a released class (null when not asked).
    pub l: Option<u64>,
    pub l_requested: Option<u64>,
    pub classes: u64,
    pub algorithm: &'static str,
    /// Why that search (the one asked for, or kanon's pick).
    pub algorithm_reason: &'static str,
    /// Where frequency sets were evaluated: "memory" or "sql".
    pub evaluator: &'static str,
    pub metric: &'static str,
    pub metrics: ReleaseMetrics,
    pub feasible_nodes: usize,
    pub minimal_nodes: usize,
    /// Nodes whose feasibility the search checked.
    pub nodes_checked: u64,
    /// Histogram computations (search and scoring).
    pub nodes_evaluated: u64,
    pub lattice_size: u64,
    pub heights: Map<String, Value>,
    pub output: Output,
    pub seconds: Seconds,
}

/// `{qi: value}` in job order.
pub fn by_qi<T: Into<Value> + Copy>(qis: &[String], values: &[T]) -> Map<String, Value> {
    qis.iter().cloned().zip(values.iter().map(|&v| v.into())).collect()
}
