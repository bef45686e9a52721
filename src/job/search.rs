//! `[search]`: the algorithm, the scheme, the metric and their settings.

use super::text::JobText;
use super::Column;
use crate::options::{Algorithm, Metric, Reuse, Scheme};
use anyhow::Result;
use serde::Deserialize;
use toml::Spanned;

/// Cell-based generalization's default m, the most clusters open at once.
pub const OPEN_CLUSTERS: usize = 32;

/// `[search]` read; its parts become fields of [`super::Job`].
pub(super) struct Search {
    pub(super) algorithm: Algorithm,
    pub(super) scheme: Option<Scheme>,
    pub(super) metric: Metric,
    pub(super) class_column: Option<Column>,
    pub(super) open_clusters: usize,
    pub(super) reuse: Reuse,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSearch {
    #[serde(default = "default_algorithm")]
    algorithm: Algorithm,
    #[serde(default = "default_metric")]
    metric: Metric,
    class_column: Option<Spanned<String>>,
    scheme: Option<Scheme>,
    open_clusters: Option<i64>,
    #[serde(default)]
    reuse: Reuse,
}

impl Default for RawSearch {
    fn default() -> Self {
        RawSearch {
            algorithm: default_algorithm(),
            metric: default_metric(),
            class_column: None,
            scheme: None,
            open_clusters: None,
            reuse: Reuse::Off,
        }
    }
}

fn default_algorithm() -> Algorithm {
    Algorithm::Auto
}
fn default_metric() -> Metric {
    Metric::Glm
}

pub(super) fn parse(raw: &RawSearch, job: &JobText) -> Result<Search> {
    let open_clusters = match raw.open_clusters {
        None => OPEN_CLUSTERS,
        Some(m) if m >= 1 => m as usize,
        Some(m) => return Err(job.section("search").bad(format_args!("open_clusters must be at least 1, got {m}"))),
    };
    Ok(Search {
        algorithm: raw.algorithm,
        scheme: raw.scheme,
        metric: raw.metric,
        class_column: raw.class_column.as_ref().map(|c| job.column(c)),
        open_clusters,
        reuse: raw.reuse,
    })
}
