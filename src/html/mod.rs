//! The approver's page: one self-contained HTML file per run (`[output]
//! html`, `kanon run --html`) and per check (`kanon check --html`): the
//! verdict, the job, the node, suppression, the models, risk before and
//! after, the run history and the release's fingerprint. Built from the
//! typed reports and kanon's own tables (hierarchy labels, `kanon_runs`,
//! the release's row count and checksum), never from a record: the page
//! holds no value of the source or the release beyond hierarchy labels and
//! class statistics. Inline CSS and SVG, no script, nothing fetched (a
//! Content-Security-Policy says so to the browser); written atomically.

mod charts;
pub(crate) mod check;
pub(crate) mod fingerprint;
mod format;
mod history;
mod job_text;
pub(crate) mod run;

use crate::engine::embedded;
use anyhow::{Context, Result};
use serde::Serialize;
use std::path::Path;

pub(crate) use fingerprint::Fingerprint;
pub(crate) use format::{figure, Figure};

/// The page's template (autoescaped: its name ends in .html).
const TEMPLATE: &str = include_str!("../../templates/report.html");

/// Everything the page shows, in its order; the template only lays it out.
#[derive(Debug, Serialize)]
pub(crate) struct Page {
    /// "run" or "check".
    pub(crate) command: &'static str,
    pub(crate) title: String,
    pub(crate) verdict: Verdict,
    pub(crate) job: JobSection,
    /// Per QI: its level and labels (a run) or just its name (a check).
    pub(crate) node: Vec<QiRow>,
    /// What the node section says beyond the table (a scheme's or cells' run).
    pub(crate) node_note: Option<String>,
    /// (what, figure): rows and persons in, out and suppressed, the budget.
    pub(crate) suppression: Vec<(String, Figure)>,
    pub(crate) models: Vec<ModelRow>,
    pub(crate) risk: RiskSection,
    pub(crate) history: Option<history::Section>,
    pub(crate) fingerprint: Vec<Fingerprint>,
    pub(crate) kanon_version: &'static str,
}

/// Released or not, and which models hold.
#[derive(Debug, Serialize)]
pub(crate) struct Verdict {
    /// A run: the release was written; a check: the table meets every model.
    pub(crate) ok: bool,
    pub(crate) headline: String,
    pub(crate) holds: Vec<String>,
    pub(crate) fails: Vec<String>,
}

impl Verdict {
    /// The verdict's lists read off the model rows.
    pub(crate) fn of(ok: bool, headline: String, models: &[ModelRow]) -> Verdict {
        let names = |want: bool| models.iter().filter(|m| m.holds == Some(want)).map(|m| m.model.clone()).collect();
        Verdict { ok, headline, holds: names(true), fails: names(false) }
    }
}

#[derive(Debug, Serialize)]
pub(crate) struct JobSection {
    pub(crate) path: String,
    pub(crate) sha256: String,
    /// The job file as written, its secrets masked.
    pub(crate) text: String,
}

/// One QI of the node.
#[derive(Debug, Serialize, Default)]
pub(crate) struct QiRow {
    pub(crate) name: String,
    /// The level released (None on a check or a run that is not full-domain).
    pub(crate) level: Option<Figure>,
    pub(crate) height: Option<u8>,
    /// The hierarchy's labels at that level (the first few), and how many there are.
    pub(crate) labels: Vec<String>,
    pub(crate) labels_total: usize,
    /// A few mappings from a lower level's label to the released one.
    pub(crate) examples: Vec<(String, String)>,
    /// This QI's share of the loss.
    pub(crate) loss_share: Option<String>,
}

/// A model's figure against its requirement. Rows are built generically from
/// the report's figures, so a new model shows up with no template change.
#[derive(Debug, Serialize)]
pub(crate) struct ModelRow {
    pub(crate) model: String,
    pub(crate) figure: Figure,
    pub(crate) requirement: String,
    /// None where the page cannot tell (a figure it has no requirement for).
    pub(crate) holds: Option<bool>,
}

/// Risk before (the source) and after (the release or audited table).
#[derive(Debug, Serialize)]
pub(crate) struct RiskSection {
    pub(crate) before_name: &'static str,
    pub(crate) after_name: String,
    pub(crate) rows: Vec<RiskRow>,
    /// The distribution chart, inline SVG (built by kanon, not escaped).
    pub(crate) chart: String,
}

#[derive(Debug, Serialize)]
pub(crate) struct RiskRow {
    pub(crate) measure: &'static str,
    pub(crate) before: Figure,
    pub(crate) after: Figure,
}

/// The page as HTML.
pub(crate) fn render(page: &Page) -> Result<String> {
    let mut env = minijinja::Environment::new();
    env.add_template("report.html", TEMPLATE).context("the HTML page's template")?;
    let template = env.get_template("report.html")?;
    template.render(minijinja::Value::from(minijinja::value::Serde(page))).context("rendering the HTML page")
}

/// Render `page` and write it to `path` atomically.
pub(crate) fn write(path: &Path, page: &Page) -> Result<()> {
    let html = render(page)?;
    embedded::write_atomically(path, html.as_bytes())
        .with_context(|| format!("writing the HTML page {}", path.display()))
}
