//! The searches over the generalization lattice. Each sees nodes and the
//! [`crate::evaluator::Evaluator`] only, never where frequency sets live.
//!
//! - [`exhaustive`]: every node; the reference the others are tested against.
//! - [`incognito`]: every feasible node (LeFevre et al.), with [`candidates`].
//! - [`topdown`]: the optimum only, by branch and bound from the top.
//! - [`poka`]: POkA's heuristic Pareto front of k against loss.
//! - [`exact_front`]: the true Pareto front by bounds that hold with suppression.
//! - [`partitions`]: the optimal partition per QI under a Li & Li scheme, with
//!   [`partition_dp`] solving one QI exactly for fixed partitions of the others.
//! - [`cbg`]: Nergiz & Clifton's cell-based generalization, one pass over
//!   the records clustering them (not a lattice search).
//! - [`pbg_ea`]: PBG-EA's evolutionary front over several objectives, with
//!   the exhaustive reference and the paper's comparison.
//! - [`result`] and [`front`]: what they return.

pub mod candidates;
pub mod cbg;
pub mod exact_front;
pub mod exhaustive;
pub mod front;
pub mod incognito;
pub mod partition_dp;
pub mod partitions;
pub mod pbg_ea;
pub mod poka;
pub mod result;
pub mod topdown;

pub use result::{evaluate_upward, score, Found, SearchResult};

use crate::options::Algorithm;

/// The search `run` uses, and why: the one asked for, or for `auto` the one
/// that returns the optimum fastest. Top-down evaluates the fewest nodes, the
/// high ones with few classes, on every job measured (docs/searches.md):
/// Incognito checks from the bottom of the lattice, where frequency sets are
/// as large as the source, and then scores every feasible node; exhaustive
/// evaluation does both.
pub fn choose(asked: Algorithm) -> (Algorithm, &'static str) {
    match asked {
        Algorithm::Auto => (
            Algorithm::Topdown,
            "no algorithm given: top-down returns the optimum fastest (it settles every node under an infeasible one without evaluating it and skips nodes whose loss bound cannot win); name incognito for every feasible node",
        ),
        a => (a, "asked for by the job or the command line"),
    }
}
