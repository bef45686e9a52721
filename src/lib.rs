//! kanon: k-anonymity (and ℓ-diversity) by full-domain generalization and
//! record suppression, with the data work pushed down into DuckDB.
//!
//! Flow: [`job`] → [`load`] (source, [`hierarchy`], [`frequency`]) → a search
//! ([`incognito`], [`search::exhaustive`]) asking the [`evaluator`] about
//! [`lattice`] nodes and judging them with [`metrics`] → [`release`] → [`report`].

pub mod candidates;
pub mod cli;
pub mod cmd;
pub mod database;
pub mod error;
pub mod evaluator;
pub mod frequency;
pub mod hierarchy;
pub mod incognito;
pub mod job;
pub mod lattice;
pub mod load;
pub mod metrics;
pub mod pareto;
pub mod plot;
pub mod release;
pub mod report;
pub mod search;
pub mod sql;
pub mod topdown;

/// Diagnostics on stderr when `KANON_TRACE` is set (per-phase and per-rollup
/// timings and volumes); the message is built only then.
pub fn trace(message: impl FnOnce() -> String) {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    if *ON.get_or_init(|| std::env::var_os("KANON_TRACE").is_some()) {
        eprintln!("TRACE {}", message());
    }
}
