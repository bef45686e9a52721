//! The page of a run, from its typed report, the job's hierarchy tables (the
//! labels of the node's levels, each QI's loss) and the run history.

use super::format::{at, count, figure, number, share};
use super::{history, job_text, ModelRow, Page, QiRow, RiskRow, RiskSection, Verdict};
use crate::data::hierarchy::{self, LeafOrder};
use crate::job::{DistanceSpec, HierarchySpec, Job};
use crate::load::Loaded;
use crate::measure::risk::{self, Risk};
use crate::report::{ModelReport, Report};
use anyhow::Result;
use serde_json::Value;

/// The labels and examples the page shows per QI at most.
const LABELS: usize = 12;
const EXAMPLES: usize = 4;

/// The page of a run whose release is written.
pub(crate) fn page(report: &Report, job: &Job, source: &Loaded) -> Result<Page> {
    let json = serde_json::to_value(report)?;
    let models = model_rows(&json, job);
    let rows_out = at(&json, "rows_out").as_u64().unwrap_or_default();
    let headline = format!(
        "Released: {} of {} rows to {}",
        count("", rows_out).shown,
        count("", report.rows_in).shown,
        job.output.describe(&job.engine.kind)
    );
    let (node, node_note) = node(report, job, source)?;
    let remote = source.remote.as_deref();
    Ok(Page {
        command: "run",
        title: format!("kanon run: {}", job.path.file_name().unwrap_or_default().to_string_lossy()),
        verdict: Verdict::of(true, headline, &models),
        job: job_text::section(job)?,
        node,
        node_note,
        suppression: suppression(&json),
        models,
        risk: risk_section(&report.risk.source, &report.risk.release, "risk.source", "risk.release", "release".into()),
        history: history::section(job)?,
        fingerprint: super::fingerprint::release(job, &source.conn, remote)?,
        kanon_version: env!("CARGO_PKG_VERSION"),
    })
}

/// Rows and persons in, out, suppressed, and the budget: whichever the report has.
fn suppression(json: &Value) -> Vec<(String, super::Figure)> {
    let names = [
        ("rows_in", "rows in"),
        ("rows_out", "rows released"),
        ("suppressed", "rows suppressed"),
        ("budget", "suppression budget (rows)"),
        ("suppression_cap", "suppression cap (rows)"),
        ("persons_in", "persons in"),
        ("persons_out", "persons released"),
        ("suppressed_persons", "persons suppressed"),
    ];
    let mut out = Vec::new();
    for (key, name) in names {
        if let Some(v) = json.get(key).filter(|v| !v.is_null()) {
            out.push((name.to_string(), figure(key, v, false)));
        }
    }
    out
}

/// Every model's figure against its requirement: k, distinct ℓ, and each
/// entry of the report's `models` section (a new model's entry shows up as
/// a row; one written as {figure, requirement, holds} shows as such).
pub(super) fn model_rows(json: &Value, job: &Job) -> Vec<ModelRow> {
    let p = &job.privacy;
    let units = if p.person.is_some() { "persons" } else { "rows" };
    let mut rows = Vec::new();
    let k = at(json, "k").as_u64();
    rows.push(ModelRow {
        model: format!("k-anonymity (smallest class, {units})"),
        figure: figure("k", at(json, "k"), false),
        requirement: format!("≥ {}", p.k),
        holds: k.map(|k| k >= p.k),
    });
    if let Some(l) = at(json, "l_requested").as_u64() {
        rows.push(ModelRow {
            model: "distinct ℓ-diversity".into(),
            figure: figure("l", at(json, "l"), false),
            requirement: format!("≥ {l}"),
            holds: at(json, "l").as_u64().map(|x| x >= l),
        });
    }
    if let Some(Value::Object(models)) = json.get("models") {
        for (name, value) in models.iter().filter(|(_, v)| !v.is_null()) {
            rows.push(model_row(&format!("models.{name}"), name, value, job));
        }
    }
    rows.extend(limit_rows(json, &|_| None));
    rows
}

/// The risk limits of a report's `risk_limits` (a run's or a check's): each
/// limit's figure against its requirement; `failed` says whether a check
/// found it failing (None: judge by the figures).
pub(crate) fn limit_rows(json: &Value, failed: &dyn Fn(&str) -> Option<bool>) -> Vec<ModelRow> {
    let mut rows = Vec::new();
    let Some(limits) = json.get("risk_limits").filter(|v| !v.is_null()) else { return rows };
    let names = [
        ("average_risk", "average re-identification risk"),
        ("records_at_risk", "records at risk (relaxed average risk)"),
        ("sample_uniqueness", "sample uniqueness"),
        ("population_uniqueness", "population uniqueness"),
    ];
    for (key, model) in names {
        let Some(f) = limits.get(key).filter(|v| !v.is_null()) else { continue };
        let (reached, required) = (f["reached"].as_f64(), f["required"].as_f64().unwrap_or(f64::NAN));
        rows.push(ModelRow {
            model: model.into(),
            figure: figure(&format!("risk_limits.{key}.reached"), &f["reached"], false),
            requirement: format!("≤ {required}"),
            holds: failed(key).map(|f| !f).or(reached.map(|x| x <= required)),
        });
    }
    if let Some(m) = limits.get("k_map").filter(|v| !v.is_null()) {
        let smallest = at(json, "k").as_u64();
        let derived = m["derived_k"].as_u64().unwrap_or(0);
        rows.push(ModelRow {
            model: format!("k-map (k = {}, estimated)", m["k"]),
            figure: figure("risk_limits.k_map.derived_k", &m["derived_k"], false),
            requirement: format!("classes of ≥ {derived}"),
            holds: failed("k_map").map(|f| !f).or(smallest.map(|k| k >= derived)),
        });
    }
    rows
}

fn model_row(key: &str, name: &str, value: &Value, job: &Job) -> ModelRow {
    let p = &job.privacy;
    let x = value.as_f64();
    let known = |model: &str, requirement: String, holds: Option<bool>| ModelRow {
        model: model.into(),
        figure: figure(key, value, false),
        requirement,
        holds,
    };
    match (name, &p.diversity, &p.closeness) {
        ("entropy_l", Some(d), _) => {
            known("entropy ℓ-diversity", format!("≥ {}", d.l), x.map(|x| x + 1e-9 >= d.l as f64))
        }
        ("recursive_c", Some(d), _) => {
            let c = match d.kind {
                crate::job::DiversityKind::Recursive(c) => c.value(),
                _ => f64::INFINITY,
            };
            known("recursive (c,ℓ)-diversity", format!("< c = {}", c), x.map(|x| x < c))
        }
        ("t", _, Some(t)) => {
            let distance = match t.distance {
                DistanceSpec::Equal => "equal",
                DistanceSpec::Ordered => "ordered",
                _ => "hierarchical",
            };
            known(
                &format!("t-closeness ({distance} distance)"),
                format!("≤ {}", t.t.value()),
                x.map(|x| x <= t.t.value() + 1e-12),
            )
        }
        _ => match value {
            // A model that reports its own requirement and verdict.
            Value::Object(o) if o.contains_key("figure") => ModelRow {
                model: name.replace('_', " "),
                figure: figure(&format!("{key}.figure"), &o["figure"], false),
                requirement: o
                    .get("requirement")
                    .map_or(String::new(), |r| r.as_str().map_or(r.to_string(), String::from)),
                holds: o.get("holds").and_then(Value::as_bool),
            },
            _ => known(&name.replace('_', " "), "as the job sets".into(), None),
        },
    }
}

/// Risk before and after, and their distribution chart.
pub(super) fn risk_section(
    before: &Risk,
    after: &Risk,
    before_key: &str,
    after_key: &str,
    after_name: String,
) -> RiskSection {
    let (b, a) = (serde_json::to_value(before).unwrap_or_default(), serde_json::to_value(after).unwrap_or_default());
    let measures: [(&str, &str, bool); 13] = [
        ("records", "records", false),
        ("classes", "classes", false),
        ("prosecutor: records at risk", "prosecutor.records_at_risk", true),
        ("prosecutor: highest risk", "prosecutor.highest_risk", true),
        ("prosecutor: success rate", "prosecutor.success_rate", true),
        ("journalist: records at risk", "journalist.records_at_risk", true),
        ("journalist: highest risk", "journalist.highest_risk", true),
        ("journalist: success rate", "journalist.success_rate", true),
        ("marketer: success rate", "marketer.success_rate", true),
        ("sample uniqueness", "sample_uniqueness", true),
        ("population uniqueness (Dankar)", "population_uniqueness.dankar", true),
        ("population size assumed", "population_uniqueness.population", false),
        ("sampling fraction", "population_uniqueness.sampling_fraction", true),
    ];
    let key = |prefix: &str, path: &str| if prefix.is_empty() { String::new() } else { format!("{prefix}.{path}") };
    let rows = measures
        .into_iter()
        .map(|(measure, path, is_share)| RiskRow {
            measure,
            before: figure(&key(before_key, path), at(&b, path), is_share),
            after: figure(&key(after_key, path), at(&a, path), is_share),
        })
        .collect();
    RiskSection { before_name: "source", after_name, rows, chart: risk::distribution_svg(before, after) }
}

/// Per QI: the level, the labels there with a few mappings, the share of the loss.
fn node(report: &Report, job: &Job, source: &Loaded) -> Result<(Vec<QiRow>, Option<String>)> {
    let names = job.qi_names();
    let f = match &report.model {
        ModelReport::FullDomain(f) => f,
        ModelReport::Scheme(s) => {
            let rows = names
                .iter()
                .map(|q| QiRow {
                    name: q.clone(),
                    labels_total: s.blocks.get(q).and_then(Value::as_u64).unwrap_or(0) as usize,
                    ..QiRow::default()
                })
                .collect();
            return Ok((
                rows,
                Some(format!("Li & Li's {} scheme: each QI released as blocks of its values.", s.scheme)),
            ));
        }
        ModelReport::Cells(c) => {
            let rows = names
                .iter()
                .map(|q| QiRow {
                    name: q.clone(),
                    labels_total: c.distinct_cells.get(q).and_then(Value::as_u64).unwrap_or(0) as usize,
                    ..QiRow::default()
                })
                .collect();
            return Ok((
                rows,
                Some(format!(
                    "Cell-based generalization ({}): each record's cells chosen with its cluster.",
                    c.algorithm
                )),
            ));
        }
    };
    let levels: Vec<u8> = names.iter().map(|q| f.node.get(q).and_then(Value::as_u64).unwrap_or(0) as u8).collect();
    let costs: Vec<Option<f64>> =
        levels.iter().enumerate().map(|(a, &l)| qi_loss(source, a, l).ok().flatten()).collect();
    let total: f64 = costs.iter().flatten().sum();
    let mut rows = Vec::new();
    for (a, name) in names.iter().enumerate() {
        let (level, height) = (levels[a], source.hierarchies[a].height);
        let from_file = matches!(job.quasi_identifiers[a].hierarchy, HierarchySpec::File(_));
        let (labels, labels_total, examples) = labels(source, a, level, height, from_file)?;
        let loss_share = costs[a].map(|c| if total > 0.0 { share("", c / total).shown + "%" } else { "0%".into() });
        rows.push(QiRow {
            name: name.clone(),
            level: Some(number(&format!("node.{name}"), level as f64)),
            height: Some(height),
            labels,
            labels_total,
            examples,
            loss_share,
        });
    }
    Ok((rows, None))
}

/// The labels shown (the first few), how many there are, and a few mappings.
type Labels = (Vec<String>, usize, Vec<(String, String)>);

/// QI `a`'s labels at `level` in the hierarchy's order (the first few), how
/// many, and a few mappings into them. A built-in hierarchy's leaves are
/// the data's own values: its level 0 is shown as a count only, and its
/// mappings start from level 1.
fn labels(source: &Loaded, a: usize, level: u8, height: u8, from_file: bool) -> Result<Labels> {
    let conn = &source.conn;
    let leaves = hierarchy::leaves(conn, a, height, LeafOrder::File)?;
    let names = hierarchy::labels(conn, a)?;
    let label = |l: usize, code: i64| names.get(&(l, code)).cloned().flatten().unwrap_or_else(|| "NULL".into());
    let lowest = if from_file { 0 } else { 1 };
    let mut seen = std::collections::HashSet::new();
    let mut shown = Vec::new();
    for (_, codes) in &leaves {
        let code = codes[level as usize];
        if seen.insert(code) && shown.len() < LABELS && level >= lowest {
            shown.push(label(level as usize, code));
        }
    }
    let mut examples = Vec::new();
    if level > lowest {
        let mut pairs = Vec::new();
        let mut from_seen = std::collections::HashSet::new();
        for (_, codes) in &leaves {
            if from_seen.insert(codes[lowest as usize]) {
                pairs.push((
                    label(lowest as usize, codes[lowest as usize]),
                    label(level as usize, codes[level as usize]),
                ));
            }
        }
        let step = (pairs.len() / EXAMPLES).max(1);
        examples = pairs.into_iter().step_by(step).take(EXAMPLES).collect();
    }
    Ok((shown, seen.len(), examples))
}

/// QI `a`'s loss at `level` with nothing suppressed: the sum over records
/// of (leaves under the value − 1) / (leaves − 1), off its marginal.
fn qi_loss(source: &Loaded, a: usize, level: u8) -> Result<Option<f64>> {
    let leaves = source.hierarchies[a].leaves;
    if leaves <= 1 {
        return Ok(Some(0.0));
    }
    let stats = crate::evaluator::level_stats_of(&source.conn, a)?;
    Ok(stats.get(level as usize).map(|s| s.leaf_cost / (leaves - 1) as f64))
}
