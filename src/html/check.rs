//! The page of `kanon check`: the same page for an audited table, from the
//! check's JSON report and its model rows.

use super::format::{at, count, figure};
use super::run::risk_section;
use super::{history, job_text, Fingerprint, ModelRow, Page, QiRow, Verdict};
use crate::job::Job;
use crate::measure::risk::Risk;
use anyhow::Result;
use serde_json::Value;

/// What the check hands the page.
pub(crate) struct Checked<'a> {
    pub(crate) job: &'a Job,
    /// The check's JSON report (`kanon check --json`).
    pub(crate) report: Value,
    pub(crate) models: Vec<ModelRow>,
    /// The source's risk (the table's is in the report).
    pub(crate) source_risk: &'a Risk,
    pub(crate) table_risk: &'a Risk,
    pub(crate) fingerprint: Vec<Fingerprint>,
}

pub(crate) fn page(c: Checked) -> Result<Page> {
    let r = &c.report;
    let table = at(r, "table").as_str().unwrap_or("source").to_string();
    let meets = at(r, "meets").as_bool().unwrap_or(false);
    let rows = at(r, "rows").as_u64().unwrap_or_default();
    let headline = match meets {
        true => format!("{table} meets the job: {} rows", count("", rows).shown),
        false => format!("{table} does not meet the job: {} rows", count("", rows).shown),
    };
    let node = c.job.qi_names().into_iter().map(|name| QiRow { name, ..QiRow::default() }).collect();
    let mut suppression = Vec::new();
    for (key, name) in [("rows", "rows"), ("persons", "persons"), ("classes", "classes")] {
        if let Some(v) = r.get(key).filter(|v| !v.is_null()) {
            suppression.push((name.to_string(), figure(key, v, false)));
        }
    }
    // The source's risk is not in the check's JSON: its figures carry no key.
    let risk = risk_section(c.source_risk, c.table_risk, "", "risk", table.clone());
    Ok(Page {
        command: "check",
        title: format!("kanon check: {table}"),
        verdict: Verdict::of(meets, headline, &c.models),
        job: job_text::section(c.job)?,
        node,
        node_note: Some(format!("The audited table {table} is measured over these QI columns, as they are.")),
        suppression,
        models: c.models,
        risk,
        history: history::section(c.job)?,
        fingerprint: c.fingerprint,
        kanon_version: env!("CARGO_PKG_VERSION"),
    })
}
