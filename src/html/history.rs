//! The run history on the page: the last runs of `kanon_runs`, night by
//! night (node, suppression, risk, drift), as a table and a chart.

use super::format::{count, share, Figure};
use crate::job::Job;
use anyhow::Result;
use serde::Serialize;
use serde_json::{Map, Value};

/// The runs the page shows at most (the newest).
const LAST: usize = 14;

#[derive(Debug, Serialize)]
pub(crate) struct Section {
    pub(crate) rows: Vec<Row>,
    /// Runs recorded in all (the table shows the last [`LAST`]).
    pub(crate) total: usize,
    /// Suppression and risk by run, inline SVG.
    pub(crate) chart: String,
}

#[derive(Debug, Serialize)]
pub(crate) struct Row {
    pub(crate) started_at: String,
    pub(crate) model: String,
    pub(crate) node: String,
    pub(crate) rows_out: Figure,
    pub(crate) suppressed: Figure,
    pub(crate) prosecutor: Figure,
    pub(crate) marketer: Figure,
    /// The model the previous node failed, when it drifted.
    pub(crate) drift: Option<String>,
    pub(crate) reused: Option<bool>,
    /// The chart's numbers: suppressed rows, prosecutor's highest risk and
    /// marketer's success rate (shares), whether the night drifted.
    #[serde(skip)]
    pub(crate) plotted: (f64, f64, f64, bool),
}

/// The job's history (None when the job keeps none, or none is recorded yet).
pub(crate) fn section(job: &Job) -> Result<Option<Section>> {
    if !job.output.history || (job.output.table.is_none() && job.output.remote_table.is_none()) {
        return Ok(None);
    }
    let runs = crate::engine::history::read(job)?;
    if runs.is_empty() {
        return Ok(None);
    }
    let total = runs.len();
    let rows: Vec<Row> = runs[total.saturating_sub(LAST)..].iter().map(row).collect();
    let chart = super::charts::history_svg(&rows)?;
    Ok(Some(Section { rows, total, chart }))
}

fn row(run: &Map<String, Value>) -> Row {
    let int = |key: &str| run.get(key).and_then(Value::as_u64);
    let risk = |path: &[&str]| path.iter().try_fold(run.get("risk")?, |v, p| v.get(p)).and_then(Value::as_f64);
    let node = match run.get("node") {
        Some(Value::Object(levels)) => levels.iter().map(|(qi, l)| format!("{qi}={l}")).collect::<Vec<_>>().join(", "),
        _ => "—".into(),
    };
    let figure = |key: &str, v: Option<u64>| v.map_or_else(|| super::format::none(key), |n| count(key, n));
    let shared = |key: &str, v: Option<f64>| v.map_or_else(|| super::format::none(key), |x| share(key, x));
    Row {
        started_at: run
            .get("started_at")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .replace('T', " ")
            .chars()
            .take(19)
            .collect(),
        model: run.get("model").and_then(Value::as_str).unwrap_or("—").to_string(),
        node,
        rows_out: figure("rows_out", int("rows_out")),
        suppressed: figure("suppressed", int("suppressed")),
        prosecutor: shared("risk.prosecutor.highest_risk", risk(&["prosecutor", "highest_risk"])),
        marketer: shared("risk.marketer.success_rate", risk(&["marketer", "success_rate"])),
        drift: run.get("drift").and_then(|d| d.get("failed")).and_then(Value::as_str).map(String::from),
        reused: run.get("reused").and_then(Value::as_bool),
        plotted: (
            int("suppressed").unwrap_or_default() as f64,
            risk(&["prosecutor", "highest_risk"]).unwrap_or_default(),
            risk(&["marketer", "success_rate"]).unwrap_or_default(),
            run.get("drift").is_some_and(|d| !d.is_null()),
        ),
    }
}
