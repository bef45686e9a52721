//! The choices a run is made of that the searches read: the loss metric,
//! the algorithm and Li & Li's scheme. They live apart from the job parser
//! ([`crate::job`] reads them from TOML, the CLI from flags) so that a search
//! depends on what it is asked, not on how the asking is written.

use serde::Deserialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Metric {
    Glm,
    Dm,
    Precision,
    Height,
    Cm,
    /// Li & Li's hierarchical discernibility (the scheme search only).
    Hdm,
}

impl Metric {
    pub fn name(self) -> &'static str {
        match self {
            Metric::Glm => "glm",
            Metric::Dm => "dm",
            Metric::Precision => "precision",
            Metric::Height => "height",
            Metric::Cm => "cm",
            Metric::Hdm => "hdm",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Algorithm {
    /// kanon picks the search (see `search::choose`).
    Auto,
    Incognito,
    Topdown,
    /// dm's branch and bound from the bottom (`search::bottomup`).
    Bottomup,
    Exhaustive,
    /// Nergiz & Clifton's cell-based generalization with hierarchies.
    Cdgh,
    /// The same without hierarchies: cells are value sets and numeric ranges.
    Cndgh,
    /// SafePub's walk by the exponential mechanism (`[privacy] differential_privacy`).
    Safepub,
}

impl Algorithm {
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Auto => "auto",
            Algorithm::Incognito => "incognito",
            Algorithm::Topdown => "topdown",
            Algorithm::Bottomup => "bottomup",
            Algorithm::Exhaustive => "exhaustive",
            Algorithm::Cdgh => "cdgh",
            Algorithm::Cndgh => "cndgh",
            Algorithm::Safepub => "safepub",
        }
    }

    /// Cell-based generalization (a pass over records, not a lattice search)?
    pub fn cell_based(self) -> bool {
        matches!(self, Algorithm::Cdgh | Algorithm::Cndgh)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Scheme {
    Bhs,
    Ghs,
    Ops,
    Gops,
    Gsps,
    Sps,
}

impl Scheme {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Scheme::Bhs => "bhs",
            Scheme::Ghs => "ghs",
            Scheme::Ops => "ops",
            Scheme::Gops => "gops",
            Scheme::Gsps => "gsps",
            Scheme::Sps => "sps",
        }
    }

    pub const ALL: [Scheme; 6] = [Scheme::Bhs, Scheme::Ghs, Scheme::Gops, Scheme::Ops, Scheme::Gsps, Scheme::Sps];
}

/// `[search] reuse`: release the node of the previous report when it still
/// meets the job (docs/nightly.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Reuse {
    /// Search every run.
    #[default]
    Off,
    /// Keep the previous node while it holds; search when it no longer does.
    Previous,
    /// Keep the previous node; exit 3 when it no longer holds.
    Required,
}
