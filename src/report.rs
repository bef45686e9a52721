//! The JSON report of a run: a header every run writes, one section per
//! model of generalization (flattened in), where the release went and the
//! phases' seconds. Keys keep their names and order across versions.

use crate::job::OutputSpec;
use crate::measure::metrics::Metrics;
use crate::measure::privacy::ClassFigures;
use crate::measure::risk::Risk;
use serde::Serialize;
use serde_json::{Map, Value};

#[derive(Debug, Clone, Serialize)]
pub struct Seconds {
    pub load: f64,
    pub search: f64,
    pub release: f64,
    /// Writing the reconstruction (cell-based runs only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reconstruct: Option<f64>,
    pub total: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Output {
    pub database: Option<String>,
    pub table: Option<String>,
    pub csv: Option<String>,
    pub parquet: Option<String>,
    /// Where the reconstruction went (cell-based runs only: null when none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reconstructed: Option<Option<String>>,
}

impl Output {
    /// Where the job's release went, for the report.
    pub fn of(out: &OutputSpec) -> Output {
        Output {
            database: out.table.as_ref().map(|t| t.database.display().to_string()),
            table: out.table.as_ref().map(|t| t.name.clone()).or_else(|| out.remote_table.clone()),
            csv: out.csv.as_ref().map(|p| p.display().to_string()),
            parquet: out.parquet.as_ref().map(|p| p.display().to_string()),
            reconstructed: None,
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
    #[serde(flatten)]
    pub model: ModelReport,
    /// Re-identification risk before and after (docs/risk.md).
    pub risk: RiskReport,
    pub output: Output,
    pub seconds: Seconds,
}

#[derive(Debug, Clone, Serialize)]
pub struct RiskReport {
    pub source: Risk,
    pub release: Risk,
}

/// What the model of generalization that ran reports.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum ModelReport {
    FullDomain(FullDomainReport),
    Scheme(SchemeReport),
    Cells(CellsReport),
}

/// A full-domain run: the node, its measures and the search's work.
#[derive(Debug, Clone, Serialize)]
pub struct FullDomainReport {
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
    /// What the released classes reach under entropy ℓ, recursive ℓ and
    /// t-closeness (only when the job asks for one of them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub models: Option<ClassFigures>,
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
    /// `[search] reuse`: whether the previous node was kept (only when reuse is asked).
    #[serde(flatten)]
    pub reuse: Option<ReuseReport>,
}

/// The report's account of reuse (flattened into a full-domain report).
#[derive(Debug, Clone, Serialize, Default)]
pub struct ReuseReport {
    /// True when the previous node was released with no search.
    pub reused: bool,
    /// The previous node no longer met the job: what failed, what was released instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drift: Option<Drift>,
    /// Why nothing was reused when there was no node to judge (no previous report, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reuse_note: Option<String>,
    /// `--compare`: the kept node against today's optimum.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compare: Option<Compare>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Drift {
    pub previous_node: Map<String, Value>,
    pub failed: &'static str,
    /// The node searched for today.
    pub node: Map<String, Value>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Compare {
    /// Today's optimum, had kanon searched.
    pub optimum: Map<String, Value>,
    pub metric: &'static str,
    /// The job's metric at the kept node and at the optimum.
    pub kept_value: f64,
    pub optimum_value: f64,
    /// How much more the kept node loses: kept − optimum for a loss
    /// (glm, dm, height, cm), optimum − kept for precision; 0 when the
    /// kept node is the optimum.
    pub excess: f64,
}

/// A scheme run (Li & Li): the partitions, their measures and the search's work.
#[derive(Debug, Clone, Serialize)]
pub struct SchemeReport {
    pub rows_out: u64,
    pub suppressed: u64,
    pub suppression_cap: Option<u64>,
    pub quasi_identifiers: Vec<String>,
    pub scheme: &'static str,
    /// Per QI: its blocks, each a list of values in the scheme's order.
    pub partitions: Map<String, Value>,
    /// Per QI: how many blocks.
    pub blocks: Map<String, Value>,
    pub k_requested: u64,
    pub classes: u64,
    pub metric: &'static str,
    pub metrics: SchemeMetrics,
    pub algorithm: &'static str,
    pub nodes_evaluated: u64,
    pub nodes_expanded: u64,
    pub dp_quasi_identifier: Option<String>,
    pub pruning: PruningReport,
}

#[derive(Debug, Clone, Serialize)]
pub struct SchemeMetrics {
    pub dm: f64,
    pub hdm: f64,
    pub glm: f64,
    pub lm: f64,
    pub am: f64,
}

/// Which pruning techniques the scheme search used.
#[derive(Debug, Clone, Serialize)]
pub struct PruningReport {
    pub seeding: bool,
    pub modified_bfs: bool,
    pub node_rearrangement: bool,
    pub applicator_rearrangement: bool,
    pub dp: bool,
    pub classes: bool,
    pub blocks: bool,
    pub stuck: bool,
}

/// A cell-based run: the clusters and the release's measures.
#[derive(Debug, Clone, Serialize)]
pub struct CellsReport {
    pub rows_out: u64,
    pub suppressed: u64,
    pub suppression_cap: Option<u64>,
    pub quasi_identifiers: Vec<String>,
    pub algorithm: &'static str,
    pub open_clusters: usize,
    pub k_requested: u64,
    pub k: Option<u64>,
    pub l_requested: Option<u64>,
    pub l: Option<u64>,
    pub clusters: usize,
    pub classes: u64,
    pub metrics: CellMetrics,
    /// Per QI: distinct cells released.
    pub distinct_cells: Map<String, Value>,
    /// The reconstruction's seed (null without one).
    pub seed: Option<u64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CellMetrics {
    pub lm: f64,
    pub am: f64,
    pub dm: f64,
    pub cm: Option<f64>,
}

/// `{qi: value}` in job order.
pub fn by_qi<T: Into<Value> + Copy>(qis: &[String], values: &[T]) -> Map<String, Value> {
    qis.iter().cloned().zip(values.iter().map(|&v| v.into())).collect()
}
