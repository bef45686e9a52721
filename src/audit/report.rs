//! What `kanon check` reports: one typed [`CheckReport`], printed as JSON
//! (its fields in order) or as text, and the verdict (exit 4 with a line per
//! failing model).

use super::tally::{Audit, Tally};
use crate::error::CheckFailed;
use crate::job::{DistanceSpec, Diversity, DiversityKind, Job};
use crate::measure::limits::{LimitFigures, SizeLimits};
use crate::measure::risk::Risk;
use crate::sql::list;
use anyhow::Result;
use serde::{Serialize, Serializer};
use std::fmt::Write;

/// The audit of one table. The JSON is these fields in order; the text is
/// made from them too (with the `skip`ped ones, which only the text reads).
#[derive(Serialize)]
pub(super) struct CheckReport {
    table: String,
    quasi_identifiers: Vec<String>,
    rows: u64,
    /// With `[privacy] person`: the table's persons (k, the classes, the
    /// histogram, the failures' records and the risk then count persons).
    #[serde(skip_serializing_if = "Option::is_none")]
    persons: Option<u64>,
    classes: u64,
    k: Option<u64>,
    l: Option<u64>,
    k_anonymous: bool,
    /// (class size, classes), smallest first.
    histogram: Vec<[u64; 2]>,
    l_diversity: Option<LDiversity>,
    t_closeness: Option<TCloseness>,
    /// The risk limits on the table's classes (only when the job sets one).
    #[serde(skip_serializing_if = "Option::is_none")]
    risk_limits: Option<LimitFigures>,
    risk: Risk,
    meets: bool,
    failures: Vec<Failure>,
    /// The job's k.
    #[serde(skip)]
    required_k: u64,
    /// The job's risk threshold.
    #[serde(skip)]
    threshold: f64,
    /// Every model of the job in words, in its order (k, ℓ, t).
    #[serde(skip)]
    requirements: Vec<String>,
}

#[derive(Serialize)]
struct LDiversity {
    column: String,
    kind: &'static str,
    l: u64,
    c: Option<f64>,
    distinct: Option<u64>,
    entropy: Option<f64>,
    recursive: Option<f64>,
    /// The job's ℓ in words.
    #[serde(skip)]
    requirement: String,
}

#[derive(Serialize)]
struct TCloseness {
    column: String,
    t: f64,
    distance: &'static str,
    equal: Largest,
    ordered: Largest,
    hierarchical: Largest,
}

/// A distance's largest value over the classes: not measured (the column's
/// type or the job has no such distance), or measured (None: no classes).
/// Both without a value are null in the JSON; the text names only the measured.
#[derive(Clone, Copy)]
enum Largest {
    Unmeasured,
    Measured(Option<f64>),
}

impl Serialize for Largest {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Largest::Unmeasured => s.serialize_none(),
            Largest::Measured(x) => x.serialize(s),
        }
    }
}

/// A model the table fails: which, in words, and in how many classes and records.
#[derive(Serialize)]
struct Failure {
    model: &'static str,
    requirement: String,
    classes: u64,
    records: u64,
}

impl CheckReport {
    /// The report of `audit` (the table `target`) with its risk.
    pub(super) fn new(job: &Job, audit: &Audit, target: &str, risk: Risk) -> CheckReport {
        let p = &job.privacy;
        let models = models(job, audit);
        let failures: Vec<Failure> = models
            .iter()
            .filter(|m| m.2.classes > 0)
            .map(|(model, requirement, tally)| Failure {
                model: *model,
                requirement: requirement.clone(),
                classes: tally.classes,
                records: tally.records,
            })
            .collect();
        CheckReport {
            table: target.to_string(),
            quasi_identifiers: job.qi_names(),
            rows: audit.rows,
            persons: None,
            classes: audit.classes,
            k: audit.k,
            l: p.diversity.as_ref().and(audit.distinct),
            k_anonymous: audit.k.is_some_and(|k| k >= p.k),
            histogram: audit.histogram.iter().map(|(s, c)| [*s, *c]).collect(),
            l_diversity: p.diversity.as_ref().map(|d| LDiversity {
                column: d.column.name.clone(),
                kind: kind_name(d.kind),
                l: d.l,
                c: match d.kind {
                    DiversityKind::Recursive(c) => Some(c.value()),
                    _ => None,
                },
                distinct: audit.distinct,
                entropy: audit.entropy,
                recursive: audit.recursive(),
                requirement: diversity_words(d),
            }),
            t_closeness: p.closeness.as_ref().map(|t| {
                let figure = |name: &str| match audit.distances.iter().find(|f| f.name == name) {
                    Some(f) => Largest::Measured(f.largest),
                    None => Largest::Unmeasured,
                };
                TCloseness {
                    column: t.column.name.clone(),
                    t: t.t.value(),
                    distance: distance_name(&t.distance),
                    equal: figure("equal"),
                    ordered: figure("ordered"),
                    hierarchical: figure("hierarchical"),
                }
            }),
            risk_limits: size_limits(job, audit).map(|l| l.figures(&audit.histogram)),
            risk,
            meets: failures.is_empty(),
            failures,
            required_k: p.k,
            threshold: job.risk.settings.threshold,
            requirements: models.into_iter().map(|m| m.1).collect(),
        }
    }

    /// Every model's figure against its requirement, for the HTML page; a
    /// model holds when no class fails it.
    pub(super) fn html_models(&self, job: &Job) -> Vec<crate::html::ModelRow> {
        use crate::html::figure;
        let json = serde_json::to_value(self).unwrap_or_default();
        let holds = |model: &str| Some(!self.failures.iter().any(|f| f.model == model));
        let units = if self.persons.is_some() { "persons" } else { "rows" };
        let mut rows = vec![crate::html::ModelRow {
            model: format!("k-anonymity (smallest class, {units})"),
            figure: figure("k", &json["k"], false),
            requirement: format!("≥ {}", self.required_k),
            holds: holds("k"),
        }];
        if let (Some(d), Some(spec)) = (&self.l_diversity, &job.privacy.diversity) {
            let key = format!("l_diversity.{}", kind_name(spec.kind));
            rows.push(crate::html::ModelRow {
                model: format!("{} ℓ-diversity on {}", d.kind, d.column),
                figure: figure(&key, &json["l_diversity"][kind_name(spec.kind)], false),
                requirement: d.requirement.clone(),
                holds: holds("l_diversity"),
            });
        }
        if let Some(t) = &self.t_closeness {
            rows.push(crate::html::ModelRow {
                model: format!("t-closeness ({} distance) on {}", t.distance, t.column),
                figure: figure(&format!("t_closeness.{}", t.distance), &json["t_closeness"][t.distance], false),
                requirement: format!("≤ {}", t.t),
                holds: holds("t_closeness"),
            });
        }
        let failed = |model: &str| Some(self.failures.iter().any(|f| f.model == model));
        rows.extend(crate::html::run::limit_rows(&json, &failed));
        rows
    }

    /// The audit counted persons (`[privacy] person`).
    pub(super) fn with_persons(mut self, persons: u64) -> CheckReport {
        self.persons = Some(persons);
        self
    }

    pub(super) fn text(&self) -> String {
        let mut out = String::new();
        let persons = self.persons.map_or(String::new(), |p| format!(" of {p} persons"));
        let _ = writeln!(
            out,
            "{}: {} rows{persons} in {} classes over {}",
            self.table,
            self.rows,
            self.classes,
            self.quasi_identifiers.join(", ")
        );
        let _ = writeln!(out, "k = {} (job: k = {})", dash(self.k.map(|k| k.to_string())), self.required_k);
        if let Some(d) = &self.l_diversity {
            let _ = writeln!(
                out,
                "l on \"{}\": distinct {}, entropy {}, recursive {} (job: {})",
                d.column,
                dash(d.distinct.map(|x| x.to_string())),
                figure(d.entropy),
                figure(d.recursive),
                d.requirement
            );
        }
        if let Some(t) = &self.t_closeness {
            let measured = [("equal", t.equal), ("ordered", t.ordered), ("hierarchical", t.hierarchical)];
            let figures = measured.iter().filter_map(|(name, largest)| match largest {
                Largest::Measured(x) => Some(format!("{name} {}", figure(*x))),
                Largest::Unmeasured => None,
            });
            let figures = figures.collect::<Vec<_>>().join(", ");
            let _ = writeln!(out, "t on \"{}\": {figures} (job: t = {}, {} distance)", t.column, t.t, t.distance);
        }
        if let Some(l) = &self.risk_limits {
            let figures = [
                ("average risk", l.average_risk),
                ("records at risk", l.records_at_risk),
                ("sample uniqueness", l.sample_uniqueness),
                ("population uniqueness", l.population_uniqueness),
            ];
            let figures = figures.iter().filter_map(|(name, f)| {
                f.map(|f| format!("{name} {} (job: at most {})", figure(Some(f.reached)), f.required))
            });
            let _ = writeln!(out, "risk limits: {}", figures.collect::<Vec<_>>().join(", "));
        }
        self.risk_text(&mut out);
        if self.failures.is_empty() {
            let _ = writeln!(out, "meets the job: {}", self.requirements.join("; "));
        } else {
            let _ = writeln!(
                out,
                "fails the job: {}",
                list(&self.failures, "; ", |f| format!(
                    "{} in {}",
                    f.requirement,
                    plural(f.classes, "class", "classes")
                ))
            );
        }
        let _ = writeln!(out, "class size\tclasses");
        for [s, c] in &self.histogram {
            let _ = writeln!(out, "{s}\t{c}");
        }
        out
    }

    /// The risk lines of the text.
    fn risk_text(&self, out: &mut String) {
        let risk = &self.risk;
        let _ = writeln!(out, "risk (threshold {}):", percent(self.threshold));
        for (name, a) in [("prosecutor", &risk.prosecutor), ("journalist", &risk.journalist)] {
            let _ = writeln!(
                out,
                "  {name:<11} records at risk {}, highest risk {}, success rate {}",
                percent(a.records_at_risk),
                percent(a.highest_risk),
                percent(a.success_rate)
            );
        }
        let _ = writeln!(out, "  {:<11} success rate {}", "marketer", percent(risk.marketer.success_rate));
        let pu = &risk.population_uniqueness;
        let model = pu.model.and_then(|m| serde_json::to_value(m).ok()).and_then(|v| v.as_str().map(String::from));
        let _ = writeln!(
            out,
            "  {:<11} sample {}, population {} ({}N = {})",
            "uniqueness",
            percent(risk.sample_uniqueness),
            dash(pu.dankar.map(percent)),
            model.map_or(String::new(), |m| format!("{m}, ")),
            pu.population
        );
    }

    /// Ok when the table meets every model; else exit 4's error, a line per
    /// failing model.
    pub(super) fn verdict(&self) -> Result<()> {
        if self.failures.is_empty() {
            return Ok(());
        }
        let lines = self
            .failures
            .iter()
            .map(|f| {
                format!(
                    "{}: fails {} in {} ({} records)",
                    self.table,
                    f.requirement,
                    plural(f.classes, "class", "classes"),
                    thousands(f.records)
                )
            })
            .collect();
        Err(anyhow::Error::new(CheckFailed(lines)))
    }
}

/// The job's models (name, words, tally), in its order (k, ℓ, t).
fn models(job: &Job, audit: &Audit) -> Vec<(&'static str, String, Tally)> {
    let p = &job.privacy;
    let mut out = vec![("k", format!("k = {}", p.k), audit.fail_k)];
    if let Some(d) = &p.diversity {
        out.push(("l_diversity", diversity_words(d), audit.fail_l));
    }
    if let Some(t) = &p.closeness {
        let words = format!("t = {} ({} distance) on \"{}\"", t.t.value(), distance_name(&t.distance), t.column.name);
        out.push(("t_closeness", words, audit.fail_t));
    }
    out.extend(limit_models(job, audit));
    out
}

/// The job's size limits over the audited classes (N from their units when
/// `[risk]` gives no population).
fn size_limits(job: &Job, audit: &Audit) -> Option<SizeLimits> {
    let units: u64 = audit.histogram.iter().map(|(s, c)| s * c).sum();
    SizeLimits::new(&job.privacy.limits, &job.risk.settings, units)
}

/// The risk limits as models: each fails in the classes it puts at risk
/// (every class for the average, those under its size for the rest).
fn limit_models(job: &Job, audit: &Audit) -> Vec<(&'static str, String, Tally)> {
    let limits = &job.privacy.limits;
    let mut out = Vec::new();
    let tally = |fails: bool, at_risk: &dyn Fn(u64) -> bool| {
        let mut t = Tally::default();
        if fails {
            for (&s, &c) in audit.histogram.iter().filter(|(&s, _)| at_risk(s)) {
                t.classes += c;
                t.records += s * c;
            }
        }
        t
    };
    if let Some(all) = size_limits(job, audit) {
        let none = SizeLimits { average: None, sample_uniqueness: None, population_uniqueness: None, ..all };
        let alone = |l: SizeLimits| !l.hold(&audit.histogram);
        if let Some(a) = all.average {
            let plain = crate::job::AverageRisk { highest: None, ..a };
            let fails = alone(SizeLimits { average: Some(plain), ..none });
            out.push(("average_risk", format!("average risk at most {}", a.average), tally(fails, &|_| true)));
            if let Some((h, r)) = a.highest {
                let smallest = crate::measure::limits::size_threshold(h);
                let fails = !alone(SizeLimits { average: Some(plain), ..none })
                    && alone(SizeLimits { average: Some(a), ..none });
                let words = format!("at most {r} of the records in classes under {smallest} (highest risk {h})");
                out.push(("records_at_risk", words, tally(fails, &|s| s < smallest)));
            }
        }
        if let Some(t) = all.sample_uniqueness {
            let fails = alone(SizeLimits { sample_uniqueness: Some(t), ..none });
            out.push(("sample_uniqueness", format!("sample uniqueness at most {t}"), tally(fails, &|s| s == 1)));
        }
        if let Some((t, e)) = all.population_uniqueness {
            let fails = alone(SizeLimits { population_uniqueness: Some((t, e)), ..none });
            let words = format!("population uniqueness at most {t} ({e:?})").to_lowercase();
            out.push(("population_uniqueness", words, tally(fails, &|s| s == 1)));
        }
    }
    let exact = job.risk.population_table.is_some();
    if let Some(m) = limits.k_map.filter(|_| !exact) {
        let units: u64 = audit.histogram.iter().map(|(s, c)| s * c).sum();
        let derived = crate::measure::limits::derived_k(&m, units, &job.risk.settings);
        let words = format!("k-map k = {} (classes of at least {derived})", m.k);
        out.push(("k_map", words, tally(true, &|s| s < derived)));
    }
    // Against the population table: each class's records f and population records F.
    let against = |fails: &dyn Fn(u64, u64) -> bool| {
        let mut t = Tally::default();
        for (&(f, _), &c) in audit.sizes.iter().filter(|(&(f, big_f), _)| fails(f, big_f)) {
            t.classes += c;
            t.records += f * c;
        }
        t
    };
    if let Some(m) = limits.k_map.filter(|_| exact) {
        let words = format!("k-map k = {} (population records per class)", m.k);
        out.push(("k_map", words, against(&|_, big_f| big_f < m.k)));
    }
    if let Some((min, max)) = limits.delta_presence {
        let words = format!("delta-presence in [{min}, {max}]");
        let fails = move |f: u64, big_f: u64| {
            let delta = f as f64 / big_f as f64;
            !(delta >= min && delta <= max)
        };
        out.push(("delta_presence", words, against(&fails)));
    }
    out
}

fn kind_name(kind: DiversityKind) -> &'static str {
    match kind {
        DiversityKind::Distinct => "distinct",
        DiversityKind::Entropy => "entropy",
        DiversityKind::Recursive(_) => "recursive",
    }
}

fn diversity_words(d: &Diversity) -> String {
    match d.kind {
        DiversityKind::Recursive(c) => {
            format!("recursive (c, l) = ({}, {}) on \"{}\"", c.value(), d.l, d.column.name)
        }
        kind => format!("{} l = {} on \"{}\"", kind_name(kind), d.l, d.column.name),
    }
}

fn distance_name(d: &DistanceSpec) -> &'static str {
    match d {
        DistanceSpec::Equal => "equal",
        DistanceSpec::Ordered => "ordered",
        DistanceSpec::Hierarchical(_) => "hierarchical",
    }
}

/// A figure or "-".
fn dash(x: Option<String>) -> String {
    x.unwrap_or_else(|| "-".into())
}

/// A figure to 4 decimals, or "-".
fn figure(x: Option<f64>) -> String {
    dash(x.map(|x| format!("{x:.4}")))
}

/// A share as a percentage with up to 4 significant decimals.
fn percent(x: f64) -> String {
    let p = 100.0 * x;
    let text = format!("{p:.4}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}%")
}

/// 1204 → "1,204".
fn thousands(x: u64) -> String {
    let digits = x.to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", thousands(n), if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_well() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1204), "1,204");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(plural(1, "class", "classes"), "1 class");
        assert_eq!(percent(0.2), "20%");
        assert_eq!(percent(1.0 / 3.0), "33.3333%");
        assert_eq!(percent(0.0), "0%");
    }
}
