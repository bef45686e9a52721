//! The exhaustive reference search: every lattice node evaluated, the
//! feasible ones scored. The other searches are tested against it.

use super::result::{score, SearchResult};
use crate::evaluator::Evaluator;
use crate::options::Metric;
use crate::lattice::{Lattice, Node};
use crate::metrics::Requirement;
use anyhow::Result;
use indicatif::ProgressBar;

/// Evaluate every node of the lattice straight from the base frequency set.
/// The reference the other searches are tested against.
pub fn search(
    ev: &mut Evaluator,
    lattice: &Lattice,
    req: &Requirement,
    metric: Metric,
    progress: &ProgressBar,
) -> Result<SearchResult> {
    let nodes = lattice.nodes();
    progress.set_length(nodes.len() as u64);
    progress.set_message("evaluating every node");
    let full: Vec<Node> = nodes.iter().map(|l| Node::full(l.clone())).collect();
    let hists = ev.histograms(&full)?;
    progress.inc(nodes.len() as u64);
    let feasible: Vec<Vec<u8>> =
        nodes.into_iter().zip(hists).filter(|(_, h)| h.feasible(req)).map(|(l, _)| l).collect();
    let checked = lattice.size();
    score(ev, lattice, feasible, req, metric, checked, progress)
}
