//! `[privacy] differential_privacy = { epsilon, delta, search_epsilon, steps, seed }`:
//! SafePub's settings as written (docs/risk.md). β and k are derived by the
//! plan (`measure::dp::parameters`), which knows whether a search spends
//! `search_epsilon`.

use super::text::At;
use anyhow::Result;
use serde::Deserialize;

/// The search's share of ε and its steps when the job does not say.
pub(crate) const SEARCH_EPSILON: f64 = 0.1;
pub(crate) const STEPS: u64 = 300;

#[derive(Debug, Clone, PartialEq)]
pub struct DifferentialPrivacy {
    /// The whole budget E: the search's S plus the anonymization's E − S.
    pub(crate) epsilon: f64,
    pub(crate) delta: f64,
    pub(crate) search_epsilon: f64,
    pub(crate) steps: u64,
    /// Seeds the sampling and the exponential mechanism's draws.
    pub(crate) seed: u64,
    /// β and k, set by the plan (None until then).
    pub(crate) derived: Option<Derived>,
}

/// What the plan derives: the budgets spent and SafePub's β and k.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Derived {
    pub(crate) epsilon_search: f64,
    pub(crate) epsilon_anonymization: f64,
    pub(crate) beta: f64,
    pub(crate) k: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawDifferentialPrivacy {
    epsilon: f64,
    delta: f64,
    search_epsilon: Option<f64>,
    steps: Option<i64>,
    seed: Option<i64>,
}

pub(super) fn parse(raw: &RawDifferentialPrivacy, at: &At) -> Result<DifferentialPrivacy> {
    let bad = |what: String| at.bad(format_args!("differential_privacy: {what}"));
    if !(raw.epsilon.is_finite() && raw.epsilon > 0.0) {
        return Err(bad(format!("epsilon must be a positive number, got {}", raw.epsilon)));
    }
    if !(raw.delta > 0.0 && raw.delta < 1.0) {
        return Err(bad(format!("delta must be in (0, 1), got {}", raw.delta)));
    }
    let search_epsilon = raw.search_epsilon.unwrap_or(SEARCH_EPSILON);
    if !(search_epsilon >= 0.0 && search_epsilon < raw.epsilon) {
        return Err(bad(format!(
            "search_epsilon must be at least 0 and below epsilon ({}), got {search_epsilon}",
            raw.epsilon
        )));
    }
    let steps = raw.steps.unwrap_or(STEPS as i64);
    if steps < 1 {
        return Err(bad(format!("steps must be at least 1, got {steps}")));
    }
    let seed = raw.seed.unwrap_or(0);
    if seed < 0 {
        return Err(bad(format!("seed must be a non-negative integer, got {seed}")));
    }
    Ok(DifferentialPrivacy {
        epsilon: raw.epsilon,
        delta: raw.delta,
        search_epsilon,
        steps: steps as u64,
        seed: seed as u64,
        derived: None,
    })
}
