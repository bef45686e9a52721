//! The JSON report of a run: a header every run writes, one section per
//! model of generalization (flattened in), where the release went and the
//! phases' seconds. Keys keep their names and order across versions.

use crate::job::OutputSpec;
use crate::measure::limits::LimitFigures;
use crate::measure::metrics::Metrics;
use crate::measure::privacy::ClassFigures;
use crate::measure::risk::Risk;
use serde::Serialize;
use serde_json::{Map, Value};

#[derive(Debug, Clone, Serialize)]
pub(crate) struct Seconds {
    pub(crate) load: f64,
    pub(crate) search: f64,
    pub(crate) release: f64,
    /// Writing the reconstruction (cell-based runs only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) reconstruct: Option<f64>,
    pub(crate) total: f64,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct Output {
    pub(crate) database: Option<String>,
    pub(crate) table: Option<String>,
    pub(crate) csv: Option<String>,
    pub(crate) parquet: Option<String>,
    /// Where the reconstruction went (cell-based runs only: null when none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) reconstructed: Option<Option<String>>,
}

impl Output {
    /// Where the job's release went, for the report.
    pub(crate) fn of(out: &OutputSpec) -> Output {
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
pub(crate) struct ReleaseMetrics {
    #[serde(flatten)]
    pub(crate) node: Metrics,
    pub(crate) lm: f64,
    pub(crate) am: f64,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct Report {
    pub(crate) kanon_version: &'static str,
    pub(crate) job_sha256: String,
    pub(crate) rows_in: u64,
    #[serde(flatten)]
    pub(crate) model: ModelReport,
    /// Re-identification risk before and after (docs/risk.md).
    pub(crate) risk: RiskReport,
    pub(crate) output: Output,
    pub(crate) seconds: Seconds,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct RiskReport {
    pub(crate) source: Risk,
    pub(crate) release: Risk,
}

/// What the model of generalization that ran reports.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub(crate) enum ModelReport {
    FullDomain(FullDomainReport),
    Scheme(SchemeReport),
    Cells(CellsReport),
}

/// A full-domain run: the node, its measures and the search's work.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct FullDomainReport {
    /// Distinct QI combinations in the source.
    pub(crate) combinations: u64,
    pub(crate) rows_out: u64,
    pub(crate) suppressed: u64,
    pub(crate) budget: u64,
    pub(crate) quasi_identifiers: Vec<String>,
    /// Level per QI, in job order.
    pub(crate) node: Map<String, Value>,
    /// Smallest class in the release.
    pub(crate) k: Option<u64>,
    pub(crate) k_requested: u64,
    /// Fewest distinct sensitive values in a released class (null when not asked).
    pub(crate) l: Option<u64>,
    pub(crate) l_requested: Option<u64>,
    /// What the released classes reach under entropy ℓ, recursive ℓ and
    /// t-closeness (only when the job asks for one of them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) models: Option<ClassFigures>,
    /// What the released classes reach under the risk limits (only when the job sets one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) risk_limits: Option<RiskLimitsReport>,
    pub(crate) classes: u64,
    pub(crate) algorithm: &'static str,
    /// Why that search (the one asked for, or kanon's pick).
    pub(crate) algorithm_reason: &'static str,
    /// Where frequency sets were evaluated: "memory", "sorted", "sql" (DuckDB), "engine" (Spark or PostgreSQL).
    pub(crate) evaluator: &'static str,
    pub(crate) metric: &'static str,
    pub(crate) metrics: ReleaseMetrics,
    pub(crate) feasible_nodes: usize,
    pub(crate) minimal_nodes: usize,
    /// Nodes whose feasibility the search checked.
    pub(crate) nodes_checked: u64,
    /// Histogram computations (search and scoring).
    pub(crate) nodes_evaluated: u64,
    pub(crate) lattice_size: u64,
    pub(crate) heights: Map<String, Value>,
    /// `[privacy] differential_privacy`: SafePub's budgets, β, k and sample.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) differential_privacy: Option<Box<DpReport>>,
    /// `[search] reuse`: whether the previous node was kept (only when reuse is asked).
    #[serde(flatten)]
    pub(crate) reuse: Option<ReuseReport>,
    /// `[privacy] person`: the persons beside the rows.
    #[serde(flatten)]
    pub(crate) persons: Option<PersonsReport>,
}

/// The risk limits: each one's requirement and what the release reaches.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RiskLimitsReport {
    #[serde(flatten)]
    pub(crate) figures: Option<LimitFigures>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) k_map: Option<KMapReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) delta_presence: Option<DeltaReport>,
}

/// δ-presence: the bounds, and the least and largest δ of the released classes.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct DeltaReport {
    pub(crate) min: f64,
    pub(crate) max: f64,
    pub(crate) reached_min: Option<f64>,
    pub(crate) reached_max: Option<f64>,
}

/// k-map: the k asked of the population; estimated, the class size it
/// takes; exact (with `[risk] population_table`), the smallest population
/// class of a released class.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct KMapReport {
    pub(crate) k: u64,
    pub(crate) exact: bool,
    pub(crate) smallest_population_class: Option<u64>,
    pub(crate) significance: f64,
    pub(crate) estimator: &'static str,
    /// The smallest released class size that maps to k population records (the run's k is at least this).
    pub(crate) derived_k: u64,
}

/// SafePub's figures (docs/risk.md): ε = ε_search + ε_anonymization, β, k,
/// the rows of the source and of its sample, the seed.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct DpReport {
    pub(crate) epsilon: f64,
    pub(crate) delta: f64,
    pub(crate) epsilon_search: f64,
    pub(crate) epsilon_anonymization: f64,
    pub(crate) beta: f64,
    pub(crate) k: u64,
    pub(crate) steps: u64,
    pub(crate) source_rows: u64,
    pub(crate) sampled_rows: u64,
    pub(crate) seed: u64,
}

impl DpReport {
    pub(crate) fn new(dp: &crate::job::DifferentialPrivacy, d: crate::job::Derived, source: u64, sampled: u64) -> Self {
        DpReport {
            epsilon: dp.epsilon,
            delta: dp.delta,
            epsilon_search: d.epsilon_search,
            epsilon_anonymization: d.epsilon_anonymization,
            beta: d.beta,
            k: d.k,
            steps: dp.steps,
            source_rows: source,
            sampled_rows: sampled,
            seed: dp.seed,
        }
    }
}

/// With `[privacy] person`: k, the budget and the risk count persons.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct PersonsReport {
    pub(crate) persons_in: u64,
    pub(crate) persons_out: u64,
    pub(crate) suppressed_persons: u64,
    pub(crate) rows_per_person: RowsPerPerson,
}

/// The source's rows per person.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RowsPerPerson {
    pub(crate) min: u64,
    /// The lower middle value.
    pub(crate) median: u64,
    pub(crate) max: u64,
}

/// The report's account of reuse (flattened into a full-domain report).
#[derive(Debug, Clone, Serialize, Default)]
pub(crate) struct ReuseReport {
    /// True when the previous node was released with no search.
    pub(crate) reused: bool,
    /// The previous node no longer met the job: what failed, what was released instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) drift: Option<Drift>,
    /// Why nothing was reused when there was no node to judge (no previous report, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) reuse_note: Option<String>,
    /// `--compare`: the kept node against today's optimum.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) compare: Option<Compare>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct Drift {
    pub(crate) previous_node: Map<String, Value>,
    pub(crate) failed: &'static str,
    /// The node searched for today.
    pub(crate) node: Map<String, Value>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct Compare {
    /// Today's optimum, had kanon searched.
    pub(crate) optimum: Map<String, Value>,
    pub(crate) metric: &'static str,
    /// The job's metric at the kept node and at the optimum.
    pub(crate) kept_value: f64,
    pub(crate) optimum_value: f64,
    /// How much more the kept node loses: kept − optimum for a loss
    /// (glm, dm, height, cm), optimum − kept for precision; 0 when the
    /// kept node is the optimum.
    pub(crate) excess: f64,
}

/// A scheme run (Li & Li): the partitions, their measures and the search's work.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SchemeReport {
    pub(crate) rows_out: u64,
    pub(crate) suppressed: u64,
    pub(crate) suppression_cap: Option<u64>,
    pub(crate) quasi_identifiers: Vec<String>,
    pub(crate) scheme: &'static str,
    /// Per QI: its blocks, each a list of values in the scheme's order.
    pub(crate) partitions: Map<String, Value>,
    /// Per QI: how many blocks.
    pub(crate) blocks: Map<String, Value>,
    pub(crate) k_requested: u64,
    pub(crate) classes: u64,
    pub(crate) metric: &'static str,
    pub(crate) metrics: SchemeMetrics,
    pub(crate) algorithm: &'static str,
    pub(crate) nodes_evaluated: u64,
    pub(crate) nodes_expanded: u64,
    pub(crate) dp_quasi_identifier: Option<String>,
    pub(crate) pruning: PruningReport,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct SchemeMetrics {
    pub(crate) dm: f64,
    pub(crate) hdm: f64,
    pub(crate) glm: f64,
    pub(crate) lm: f64,
    pub(crate) am: f64,
}

/// Which pruning techniques the scheme search used.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct PruningReport {
    pub(crate) seeding: bool,
    pub(crate) modified_bfs: bool,
    pub(crate) node_rearrangement: bool,
    pub(crate) applicator_rearrangement: bool,
    pub(crate) dp: bool,
    pub(crate) classes: bool,
    pub(crate) blocks: bool,
    pub(crate) stuck: bool,
}

/// A cell-based run: the clusters and the release's measures.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct CellsReport {
    pub(crate) rows_out: u64,
    pub(crate) suppressed: u64,
    pub(crate) suppression_cap: Option<u64>,
    pub(crate) quasi_identifiers: Vec<String>,
    pub(crate) algorithm: &'static str,
    pub(crate) open_clusters: usize,
    pub(crate) k_requested: u64,
    pub(crate) k: Option<u64>,
    pub(crate) l_requested: Option<u64>,
    pub(crate) l: Option<u64>,
    pub(crate) clusters: usize,
    pub(crate) classes: u64,
    pub(crate) metrics: CellMetrics,
    /// Per QI: distinct cells released.
    pub(crate) distinct_cells: Map<String, Value>,
    /// The reconstruction's seed (null without one).
    pub(crate) seed: Option<u64>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct CellMetrics {
    pub(crate) lm: f64,
    pub(crate) am: f64,
    pub(crate) dm: f64,
    pub(crate) cm: Option<f64>,
}

/// `{qi: value}` in job order.
pub(crate) fn by_qi<T: Into<Value> + Copy>(qis: &[String], values: &[T]) -> Map<String, Value> {
    qis.iter().cloned().zip(values.iter().map(|&v| v.into())).collect()
}
