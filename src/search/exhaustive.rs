//! The exhaustive reference search: every lattice node evaluated, the
//! feasible ones scored. The other searches are tested against it.

use super::result::{score, SearchResult};
use super::Problem;
use crate::evaluator::Evaluator;
use crate::lattice::Node;
use crate::progress::Progress;
use anyhow::Result;

/// Evaluate every node of the lattice straight from the base frequency set.
/// The reference the other searches are tested against.
pub fn search(ev: &mut Evaluator, p: &Problem, progress: &dyn Progress) -> Result<SearchResult> {
    let (lattice, req, metric) = (p.lattice, p.req, p.metric);
    let nodes = lattice.nodes();
    progress.start(nodes.len() as u64, "evaluating every node");
    let full: Vec<Node> = nodes.iter().map(|l| Node::full(l.clone())).collect();
    let hists = ev.histograms(&full)?;
    progress.advance(nodes.len() as u64);
    let feasible: Vec<Vec<u8>> =
        nodes.into_iter().zip(hists).filter(|(_, h)| h.feasible(req)).map(|(l, _)| l).collect();
    let checked = lattice.size();
    score(ev, lattice, feasible, req, metric, checked, progress)
}
