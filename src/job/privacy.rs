//! `[privacy]`: k, the suppression budget, ℓ-diversity and t-closeness.

use super::quasi_identifiers::hierarchy_spec;
use super::text::JobText;
use super::{Column, HierarchySpec, Ratio};
use anyhow::Result;
use serde::Deserialize;
use toml::Spanned;

/// The suppression budget as written: a fraction of rows or a row count.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Budget {
    Fraction(f64),
    Rows(u64),
}

impl Budget {
    /// Rows that may be suppressed out of `rows`.
    pub fn rows(self, rows: u64) -> u64 {
        match self {
            Budget::Fraction(f) => (f * rows as f64).floor() as u64,
            Budget::Rows(n) => n.min(rows),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Diversity {
    pub(crate) column: Column,
    pub(crate) l: u64,
    pub(crate) kind: DiversityKind,
}

/// Which ℓ-diversity (`[privacy] l_diversity.kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiversityKind {
    /// At least ℓ distinct values per class (the default).
    Distinct,
    /// Entropy at least ln ℓ.
    Entropy,
    /// Recursive (c, ℓ).
    Recursive(Ratio),
}

/// `[privacy] t_closeness`.
#[derive(Debug, Clone)]
pub struct ClosenessSpec {
    pub(crate) column: Column,
    pub(crate) t: Ratio,
    pub(crate) distance: DistanceSpec,
}

#[derive(Debug, Clone, PartialEq)]
pub enum DistanceSpec {
    Equal,
    Ordered,
    /// Over this hierarchy of the column's values.
    Hierarchical(HierarchySpec),
}

#[derive(Debug, Clone)]
pub struct Privacy {
    pub(crate) k: u64,
    pub(crate) budget: Budget,
    /// Whether the job sets `max_suppression` (the scheme search then caps
    /// suppression by it; otherwise suppression is only charged).
    pub(crate) budget_given: bool,
    pub(crate) diversity: Option<Diversity>,
    pub(crate) closeness: Option<ClosenessSpec>,
    /// `person`: the column that identifies a person; classes and k then count
    /// persons, each with the set of its rows' generalized tuples.
    pub(crate) person: Option<Column>,
    /// Risk limits (ARX's risk-based models, estimated k-map).
    pub(crate) limits: super::limits::RiskLimits,
    /// `differential_privacy`: SafePub; k and the budget are then derived.
    pub(crate) differential_privacy: Option<super::DifferentialPrivacy>,
}

impl Privacy {
    /// ℓ as the distinct count the histograms check (None for entropy and recursive ℓ).
    pub(crate) fn distinct_l(&self) -> Option<u64> {
        self.diversity.as_ref().filter(|d| d.kind == DiversityKind::Distinct).map(|d| d.l)
    }

    /// The models beyond k and distinct ℓ, in words, when any (what a
    /// scheme or cell search cannot honour).
    pub(crate) fn class_models(&self) -> Option<String> {
        let mut out = Vec::new();
        if let Some(d) = &self.diversity {
            match d.kind {
                DiversityKind::Distinct => {}
                DiversityKind::Entropy => out.push(format!("entropy l-diversity on \"{}\"", d.column.name)),
                DiversityKind::Recursive(_) => out.push(format!("recursive (c,l)-diversity on \"{}\"", d.column.name)),
            }
        }
        if let Some(t) = &self.closeness {
            out.push(format!("t-closeness on \"{}\"", t.column.name));
        }
        (!out.is_empty()).then(|| out.join(" and "))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPrivacy {
    /// Absent only with `differential_privacy`, which derives k.
    k: Option<i64>,
    /// A row count (integer) or a fraction (float), told apart here.
    #[serde(default)]
    max_suppression: Option<toml::Value>,
    l_diversity: Option<RawDiversity>,
    t_closeness: Option<RawCloseness>,
    person: Option<Spanned<String>>,
    average_risk: Option<super::limits::RawAverage>,
    sample_uniqueness: Option<f64>,
    population_uniqueness: Option<super::limits::RawPopulationUniqueness>,
    k_map: Option<super::limits::RawKMap>,
    delta_presence: Option<super::limits::RawDeltaPresence>,
    differential_privacy: Option<super::differential_privacy::RawDifferentialPrivacy>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDiversity {
    column: Spanned<String>,
    l: i64,
    kind: Option<String>,
    c: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCloseness {
    column: Spanned<String>,
    t: f64,
    distance: Option<String>,
    hierarchy: Option<Spanned<toml::Value>>,
}

pub(super) fn parse(raw: &RawPrivacy, job: &JobText) -> Result<Privacy> {
    let at = job.section("privacy");
    let dp = raw.differential_privacy.as_ref().map(|d| super::differential_privacy::parse(d, &at)).transpose()?;
    let k = match (raw.k, &dp) {
        (Some(_), Some(_)) => return Err(at.bad("k is derived from differential_privacy's epsilon and delta; drop k")),
        (None, Some(_)) if raw.max_suppression.is_some() => {
            return Err(at.bad("differential_privacy suppresses every class under its k; drop max_suppression"))
        }
        (None, Some(_)) => 1,
        (None, None) => return Err(at.bad("k is missing")),
        (Some(k), None) if k < 1 => return Err(at.bad(format_args!("k must be at least 1, got {k}"))),
        (Some(k), None) => k,
    };
    let budget = match &raw.max_suppression {
        // SafePub suppresses every class under its k, whatever it costs.
        None if dp.is_some() => Budget::Fraction(1.0),
        None => Budget::Rows(0),
        Some(toml::Value::Integer(n)) if *n >= 0 => Budget::Rows(*n as u64),
        Some(toml::Value::Float(f)) if (0.0..=1.0).contains(f) => Budget::Fraction(*f),
        Some(other) => {
            return Err(at.bad(format_args!(
                "max_suppression must be a fraction in [0, 1] or a non-negative row count, got {other}"
            )))
        }
    };
    Ok(Privacy {
        k: k as u64,
        budget,
        budget_given: raw.max_suppression.is_some(),
        diversity: raw.l_diversity.as_ref().map(|d| diversity(d, job)).transpose()?,
        closeness: raw.t_closeness.as_ref().map(|t| closeness(t, job)).transpose()?,
        person: raw.person.as_ref().map(|p| job.column(p)),
        limits: super::limits::parse(
            super::limits::RawLimits {
                average: raw.average_risk.as_ref(),
                sample_uniqueness: raw.sample_uniqueness,
                population_uniqueness: raw.population_uniqueness.as_ref(),
                k_map: raw.k_map.as_ref(),
                delta_presence: raw.delta_presence.as_ref(),
            },
            &at,
        )?,
        differential_privacy: dp,
    })
}

/// `l_diversity`; its messages name the line of its column.
fn diversity(raw: &RawDiversity, job: &JobText) -> Result<Diversity> {
    let column = job.column(&raw.column);
    let at = job.line(column.line).section("privacy");
    if raw.l < 1 {
        return Err(at.bad("l_diversity l must be at least 1"));
    }
    let kind = match (raw.kind.as_deref().unwrap_or("distinct"), raw.c) {
        ("distinct", None) => DiversityKind::Distinct,
        ("entropy", None) => DiversityKind::Entropy,
        ("recursive", Some(c)) => match Ratio::from_decimal(c).filter(|c| c.num > 0) {
            Some(c) => DiversityKind::Recursive(c),
            None => return Err(at.bad(format_args!("l_diversity c must be a positive number, got {c}"))),
        },
        ("recursive", None) => return Err(at.bad("l_diversity: kind \"recursive\" needs c")),
        ("distinct" | "entropy", Some(_)) => return Err(at.bad("l_diversity: c is for kind = \"recursive\" only")),
        (k, _) => {
            return Err(at.bad(format_args!(
                "l_diversity: unknown kind \"{k}\" (expected \"distinct\", \"entropy\" or \"recursive\")"
            )))
        }
    };
    Ok(Diversity { column, l: raw.l as u64, kind })
}

/// `t_closeness`; its messages name the line of its column.
fn closeness(raw: &RawCloseness, job: &JobText) -> Result<ClosenessSpec> {
    let column = job.column(&raw.column);
    let at = job.line(column.line).section("privacy");
    let Some(t) = Ratio::from_decimal(raw.t).filter(|r| r.num <= r.den) else {
        return Err(at.bad(format_args!("t_closeness t must be a number in [0, 1], got {}", raw.t)));
    };
    let distance = match (raw.distance.as_deref().unwrap_or("equal"), &raw.hierarchy) {
        ("equal", None) => DistanceSpec::Equal,
        ("ordered", None) => DistanceSpec::Ordered,
        ("hierarchical", Some(h)) => DistanceSpec::Hierarchical(
            hierarchy_spec(h.get_ref(), job).map_err(|m| at.bad(format_args!("t_closeness: {m}")))?,
        ),
        ("hierarchical", None) => return Err(at.bad("t_closeness: distance \"hierarchical\" needs a hierarchy")),
        ("equal" | "ordered", Some(_)) => {
            return Err(at.bad("t_closeness: a hierarchy is for distance = \"hierarchical\" only"))
        }
        (d, _) => {
            return Err(at.bad(format_args!(
                "t_closeness: unknown distance \"{d}\" (expected \"equal\", \"hierarchical\" or \"ordered\")"
            )))
        }
    };
    Ok(ClosenessSpec { column, t, distance })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::tests::MINIMAL;
    use crate::job::Job;
    use std::path::Path;

    #[test]
    fn budget_rounds_down_or_counts() {
        assert_eq!(Budget::Fraction(0.01).rows(30162), 301);
        assert_eq!(Budget::Rows(7).rows(100), 7);
        assert_eq!(Budget::Rows(700).rows(100), 100);
    }

    #[test]
    fn integer_budget_is_a_row_count() {
        let job = Job::parse(Path::new("j.toml"), &MINIMAL.replace("0.01", "12")).unwrap();
        assert_eq!(job.privacy.budget, Budget::Rows(12));
    }
}
