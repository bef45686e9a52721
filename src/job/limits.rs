//! `[privacy]`'s risk limits: ARX's risk-based models (average risk, sample
//! and population uniqueness) and estimated k-map (docs/risk.md).

use super::text::At;
use anyhow::Result;
use serde::Deserialize;

/// A population-uniqueness estimator (ARX's PopulationUniquenessModel).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Estimator {
    Dankar,
    Pitman,
    Zayatz,
    Snb,
}

/// k-map's estimate of the population's class sizes (ARX's CellSizeEstimator).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CellEstimator {
    Poisson,
    ZeroTruncatedPoisson,
}

/// `average_risk`: ARX's AverageReidentificationRisk, in its relaxed form
/// when `highest` is given.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AverageRisk {
    pub average: f64,
    /// (highest risk, the share of records allowed above it).
    pub highest: Option<(f64, f64)>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KMapSpec {
    pub k: u64,
    pub significance: f64,
    pub estimator: CellEstimator,
}

/// The risk limits a job sets (all None: the job sets none).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RiskLimits {
    pub average: Option<AverageRisk>,
    pub sample_uniqueness: Option<f64>,
    pub population_uniqueness: Option<(f64, Estimator)>,
    pub k_map: Option<KMapSpec>,
    /// δ-presence: (δ_min, δ_max), with `[risk] population_table`.
    pub delta_presence: Option<(f64, f64)>,
}

impl RiskLimits {
    /// Limits judged on a release's class sizes (k-map is a derived k instead).
    pub fn any_on_sizes(&self) -> bool {
        self.average.is_some() || self.sample_uniqueness.is_some() || self.population_uniqueness.is_some()
    }

    pub fn any(&self) -> bool {
        self.any_on_sizes() || self.k_map.is_some() || self.delta_presence.is_some()
    }

    /// The limits in words, for refusals.
    pub fn names(&self) -> String {
        let mut out = Vec::new();
        if self.average.is_some() {
            out.push("average_risk");
        }
        if self.sample_uniqueness.is_some() {
            out.push("sample_uniqueness");
        }
        if self.population_uniqueness.is_some() {
            out.push("population_uniqueness");
        }
        if self.k_map.is_some() {
            out.push("k_map");
        }
        if self.delta_presence.is_some() {
            out.push("delta_presence");
        }
        out.join(", ")
    }
}

/// `average_risk = T` or `{ average = T, highest = H, records_at_risk = R }`.
#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum RawAverage {
    Threshold(f64),
    Relaxed { average: f64, highest: f64, records_at_risk: f64 },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPopulationUniqueness {
    threshold: f64,
    estimator: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawKMap {
    k: i64,
    significance: Option<f64>,
    estimator: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawDeltaPresence {
    min: f64,
    max: f64,
}

/// The raw keys, as `[privacy]` holds them.
pub(super) struct RawLimits<'a> {
    pub(super) average: Option<&'a RawAverage>,
    pub(super) sample_uniqueness: Option<f64>,
    pub(super) population_uniqueness: Option<&'a RawPopulationUniqueness>,
    pub(super) k_map: Option<&'a RawKMap>,
    pub(super) delta_presence: Option<&'a RawDeltaPresence>,
}

/// A share in [0, 1] (`open`: 0 excluded).
fn share(at: &At, what: &str, x: f64, open: bool) -> Result<f64> {
    let ok = if open { x > 0.0 && x <= 1.0 } else { (0.0..=1.0).contains(&x) };
    if ok {
        Ok(x)
    } else {
        let range = if open { "(0, 1]" } else { "[0, 1]" };
        Err(at.bad(format_args!("{what} must be in {range}, got {x}")))
    }
}

pub(super) fn parse(raw: RawLimits, at: &At) -> Result<RiskLimits> {
    let average = match raw.average {
        None => None,
        Some(RawAverage::Threshold(t)) => {
            Some(AverageRisk { average: share(at, "average_risk", *t, true)?, highest: None })
        }
        Some(RawAverage::Relaxed { average, highest, records_at_risk }) => Some(AverageRisk {
            average: share(at, "average_risk.average", *average, true)?,
            highest: Some((
                share(at, "average_risk.highest", *highest, true)?,
                share(at, "average_risk.records_at_risk", *records_at_risk, false)?,
            )),
        }),
    };
    let sample_uniqueness = raw.sample_uniqueness.map(|t| share(at, "sample_uniqueness", t, false)).transpose()?;
    let population_uniqueness = match raw.population_uniqueness {
        None => None,
        Some(p) => {
            let estimator = match p.estimator.as_deref().unwrap_or("dankar") {
                "dankar" => Estimator::Dankar,
                "pitman" => Estimator::Pitman,
                "zayatz" => Estimator::Zayatz,
                "snb" => Estimator::Snb,
                e => {
                    return Err(at.bad(format_args!(
                        "population_uniqueness: unknown estimator \"{e}\" (expected \"dankar\", \"pitman\", \"zayatz\" or \"snb\")"
                    )))
                }
            };
            Some((share(at, "population_uniqueness.threshold", p.threshold, false)?, estimator))
        }
    };
    let k_map = match raw.k_map {
        None => None,
        Some(m) => {
            if m.k < 1 {
                return Err(at.bad(format_args!("k_map.k must be at least 1, got {}", m.k)));
            }
            let estimator = match m.estimator.as_deref().unwrap_or("poisson") {
                "poisson" => CellEstimator::Poisson,
                "zero_truncated_poisson" => CellEstimator::ZeroTruncatedPoisson,
                e => {
                    return Err(at.bad(format_args!(
                        "k_map: unknown estimator \"{e}\" (expected \"poisson\" or \"zero_truncated_poisson\")"
                    )))
                }
            };
            let significance = share(at, "k_map.significance", m.significance.unwrap_or(0.01), false)?;
            Some(KMapSpec { k: m.k as u64, significance, estimator })
        }
    };
    let delta_presence = match raw.delta_presence {
        None => None,
        Some(d) => {
            let (min, max) =
                (share(at, "delta_presence.min", d.min, false)?, share(at, "delta_presence.max", d.max, false)?);
            if min > max {
                return Err(at.bad(format_args!("delta_presence: min {min} is above max {max}")));
            }
            Some((min, max))
        }
    };
    Ok(RiskLimits { average, sample_uniqueness, population_uniqueness, k_map, delta_presence })
}
