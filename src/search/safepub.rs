//! SafePub's search (Bild, Kuhn and Prasser, PoPETs 2018, as ARX's
//! `DataDependentEDDPAlgorithm`): from the top of the lattice, each step adds
//! the pivot's direct specializations to the candidates, drops the pivot,
//! and draws the next pivot from the candidates by the exponential mechanism
//! on their scores (`measure::dp::score`), with ε_search / steps per draw.
//! The release is the best-scoring pivot (ties: the lower sum of levels), as
//! ARX picks it; docs/risk.md says what that last pick costs.

use crate::evaluator::Evaluator;
use crate::lattice::{Lattice, Node};
use crate::measure::dp::{pick, probabilities, score, ScoreBasis};
use crate::progress::Progress;
use anyhow::Result;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::HashMap;

/// The walk's settings.
#[derive(Debug, Clone, Copy)]
pub struct Walk {
    pub steps: u64,
    /// The search's whole budget, split evenly over the steps.
    pub epsilon: f64,
    /// Seeds the draws (a stream apart from the sample's hash).
    pub seed: u64,
}

/// What the walk did.
#[derive(Debug, Clone)]
pub struct Walked {
    /// The pivots in the order drawn, the top first.
    pub pivots: Vec<Vec<u8>>,
    /// The best-scoring pivot and its score.
    pub best: Vec<u8>,
    pub best_score: f64,
    /// Nodes scored (each once).
    pub scored: u64,
    /// The draws made (fewer than the steps when the candidates run out).
    pub draws: u64,
}

/// Each draw's budget: ε_search / steps, rounded down as ARX's interval's lower end.
pub fn epsilon_per_step(walk: &Walk) -> f64 {
    (walk.epsilon / walk.steps as f64).next_down().max(0.0)
}

/// The draws' generator for a seed: a stream apart from the sample's hash of the same seed.
pub fn draws(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed ^ 0x5afe_7075_b11c_0001)
}

/// Walk the lattice from the top: `basis` scores a node's histogram over the sample.
pub fn walk(
    ev: &mut Evaluator,
    lattice: &Lattice,
    basis: &ScoreBasis,
    walk: &Walk,
    progress: &dyn Progress,
) -> Result<Walked> {
    let epsilon = epsilon_per_step(walk);
    let mut rng = draws(walk.seed);
    let mut scores: HashMap<Vec<u8>, f64> = HashMap::new();
    let top = lattice.top();
    scores.insert(top.clone(), score(basis, &top, &ev.histogram(&Node::full(top.clone()))?));
    // The candidates in the order they were added: the draw's order, so a seed gives one walk.
    let mut candidates: Vec<Vec<u8>> = vec![top.clone()];
    let mut pivot = top.clone();
    let mut out = Walked { pivots: vec![top.clone()], best_score: scores[&top], best: top, scored: 1, draws: 0 };
    progress.start(walk.steps, "SafePub's walk");
    for _ in 0..walk.steps {
        let fresh: Vec<Vec<u8>> = lattice.down(&pivot).into_iter().filter(|n| !candidates.contains(n)).collect();
        let unscored: Vec<Vec<u8>> = fresh.iter().filter(|n| !scores.contains_key(*n)).cloned().collect();
        let nodes: Vec<Node> = unscored.iter().map(|l| Node::full(l.clone())).collect();
        for (levels, hist) in unscored.iter().zip(ev.histograms(&nodes)?) {
            scores.insert(levels.clone(), score(basis, levels, &hist));
            out.scored += 1;
        }
        candidates.extend(fresh);
        candidates.retain(|c| *c != pivot);
        if candidates.is_empty() {
            break;
        }
        let weights = probabilities(&candidates.iter().map(|c| scores[c]).collect::<Vec<_>>(), epsilon);
        pivot = candidates[pick(&weights, rng.random::<f64>())].clone();
        out.draws += 1;
        let s = scores[&pivot];
        let lower = crate::lattice::height(&pivot) < crate::lattice::height(&out.best);
        if s > out.best_score || (s == out.best_score && lower) {
            out.best = pivot.clone();
            out.best_score = s;
        }
        out.pivots.push(pivot.clone());
        progress.advance(1);
    }
    Ok(out)
}

/// The walk as a full-domain search: every pivot is feasible (classes under k
/// are suppressed whatever it costs); the best pivot is the result.
pub(crate) fn search(
    ev: &mut Evaluator,
    problem: &crate::search::Problem,
    unsampled_rows: u64,
    settings: &Walk,
    progress: &dyn Progress,
) -> Result<crate::search::SearchResult> {
    let basis = ScoreBasis::of(&ev.data, problem.metric, problem.req.k, unsampled_rows);
    let walked = walk(ev, problem.lattice, &basis, settings, progress)?;
    let outcome = ev.histogram(&Node::full(walked.best.clone()))?.outcome(&walked.best, problem.req, &ev.data);
    let mut pivots = walked.pivots;
    pivots.sort();
    pivots.dedup();
    let best = crate::search::Found { levels: walked.best, outcome };
    Ok(crate::search::SearchResult::new(problem.lattice, pivots, Some(best), walked.scored))
}
