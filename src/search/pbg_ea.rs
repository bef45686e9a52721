//! PBG-EA (Dewri, Ray, Ray and Whitley, DBSec 2010): an evolutionary search
//! for the nodes no other node dominates in several objectives at once, with
//! an ε-box archive (their Algorithm 1) fed by a SPEA2-style generator
//! (Algorithm 2). Seeded: the same data, objectives and settings give the
//! same archive. Every generation is evaluated as one batch; a node is
//! evaluated at most once (the evaluator caches histograms). Semantics in
//! docs/pareto.md.

use crate::evaluator::Evaluator;
use crate::lattice::{Lattice, Node};
use crate::measure::objectives::{box_dominates, boxed, dominates, eps_dominates, minimal, score, Objective, Scored};
use anyhow::Result;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::HashMap;

/// The generator's settings.
#[derive(Debug, Clone)]
pub struct PbgSettings {
    pub objectives: Vec<Objective>,
    /// One per objective.
    pub epsilon: Vec<f64>,
    pub population: usize,
    pub iterations: usize,
    pub seed: u64,
    pub p_cross: f64,
    /// Per level; None: 1 / QIs.
    pub p_mut: Option<f64>,
    /// The suppression budget in rows.
    pub budget: u64,
}

/// The ε-box archive.
#[derive(Debug, Clone, Default)]
pub(crate) struct Archive {
    pub(crate) members: Vec<Scored>,
}

impl Archive {
    /// Algorithm 1: drop every member the candidate box-dominates; keep the
    /// candidate only if no member box-dominates it and none shares its box
    /// (the first node to reach a box keeps it against incomparable ones).
    pub(crate) fn offer(&mut self, objectives: &[Objective], epsilon: &[f64], c: &Scored) {
        if self.members.iter().any(|m| m.levels == c.levels) {
            return;
        }
        self.members.retain(|m| !eps_dominates(objectives, epsilon, &c.values, &m.values));
        let cb = boxed(&c.values, epsilon);
        let blocked = self
            .members
            .iter()
            .any(|m| eps_dominates(objectives, epsilon, &m.values, &c.values) || boxed(&m.values, epsilon) == cb);
        if !blocked {
            self.members.push(c.clone());
        }
    }
}

/// What a run found.
pub struct PbgRun {
    pub archive: Vec<Scored>,
    /// Every node evaluated, in the order first evaluated.
    pub evaluated: Vec<Scored>,
}

/// Evaluate `nodes` as one batch, remembering each node's score.
fn evaluate(
    ev: &mut Evaluator,
    nodes: &[Vec<u8>],
    s: &PbgSettings,
    seen: &mut HashMap<Vec<u8>, usize>,
    evaluated: &mut Vec<Scored>,
) -> Result<Vec<Scored>> {
    let mut fresh: Vec<Vec<u8>> = nodes.iter().filter(|l| !seen.contains_key(*l)).cloned().collect();
    fresh.sort();
    fresh.dedup();
    let hists = ev.histograms(&fresh.iter().map(|l| Node::full(l.clone())).collect::<Vec<_>>())?;
    for (levels, h) in fresh.iter().zip(&hists) {
        seen.insert(levels.clone(), evaluated.len());
        evaluated.push(score(h, levels, s.budget, &ev.data, &s.objectives));
    }
    Ok(nodes.iter().map(|l| evaluated[seen[l]].clone()).collect())
}

/// SPEA2 fitness: dom(P) counts the nodes P dominates; P's fitness is the
/// sum of dom over the nodes dominating it (0 when none does; lower is better).
fn fitness(objectives: &[Objective], pool: &[Scored]) -> Vec<u64> {
    let n = pool.len();
    let beats: Vec<Vec<bool>> = (0..n)
        .map(|i| (0..n).map(|j| i != j && dominates(objectives, &pool[i].values, &pool[j].values)).collect())
        .collect();
    let dom: Vec<u64> = beats.iter().map(|row| row.iter().filter(|&&b| b).count() as u64).collect();
    (0..n).map(|j| (0..n).filter(|&i| beats[i][j]).map(|i| dom[i]).sum()).collect()
}

/// Run PBG-EA on `lattice`.
pub fn pbg_ea(ev: &mut Evaluator, lattice: &Lattice, s: &PbgSettings) -> Result<PbgRun> {
    let heights = lattice.heights.clone();
    let qis = heights.len();
    let mut rng = ChaCha8Rng::seed_from_u64(s.seed);
    let p_mut = s.p_mut.unwrap_or(1.0 / qis as f64);
    let mut seen = HashMap::new();
    let mut evaluated = Vec::new();
    let mut archive = Archive::default();

    // P0: the most specific node, the most general, then random nodes.
    let mut nodes = vec![vec![0u8; qis], heights.clone()];
    while nodes.len() < s.population {
        nodes.push(heights.iter().map(|&h| rng.random_range(0..=h)).collect());
    }
    nodes.truncate(s.population.max(1));
    let mut population = evaluate(ev, &nodes, s, &mut seen, &mut evaluated)?;
    for p in &population {
        archive.offer(&s.objectives, &s.epsilon, p);
    }

    for _ in 0..s.iterations {
        // P_t ∪ A, each node once.
        let mut pool: Vec<Scored> = Vec::with_capacity(population.len() + archive.members.len());
        for p in population.iter().chain(&archive.members) {
            if !pool.iter().any(|q| q.levels == p.levels) {
                pool.push(p.clone());
            }
        }
        let fit = fitness(&s.objectives, &pool);
        // Binary tournaments, drawn with replacement; the lower fitness wins.
        let selected: Vec<Vec<u8>> = (0..s.population)
            .map(|_| {
                let (a, b) = (rng.random_range(0..pool.len()), rng.random_range(0..pool.len()));
                let w = if fit[b] < fit[a] { b } else { a };
                pool[w].levels.clone()
            })
            .collect();
        // One-point crossover in pairs, then per-level ±1 mutation.
        let mut next: Vec<Vec<u8>> = Vec::with_capacity(selected.len());
        for pair in selected.chunks(2) {
            let (mut x, mut y) = (pair[0].clone(), pair.get(1).cloned());
            if let Some(y) = y.as_mut() {
                if qis > 1 && rng.random_bool(s.p_cross) {
                    let cut = rng.random_range(1..qis);
                    for i in cut..qis {
                        std::mem::swap(&mut x[i], &mut y[i]);
                    }
                }
            }
            next.push(x);
            next.extend(y);
        }
        for node in &mut next {
            for (l, &h) in node.iter_mut().zip(&heights) {
                if rng.random_bool(p_mut) {
                    *l = if rng.random_bool(0.5) { l.saturating_add(1).min(h) } else { l.saturating_sub(1) };
                }
            }
        }
        population = evaluate(ev, &next, s, &mut seen, &mut evaluated)?;
        for p in &population {
            archive.offer(&s.objectives, &s.epsilon, p);
        }
    }
    Ok(PbgRun { archive: archive.members, evaluated })
}

/// Every node of `lattice`, evaluated as one batch: the reference.
pub(crate) fn every_node(ev: &mut Evaluator, lattice: &Lattice, s: &PbgSettings) -> Result<Vec<Scored>> {
    let nodes = lattice.nodes();
    let hists = ev.histograms(&nodes.iter().map(|l| Node::full(l.clone())).collect::<Vec<_>>())?;
    Ok(nodes.iter().zip(&hists).map(|(l, h)| score(h, l, s.budget, &ev.data, &s.objectives)).collect())
}

/// An archive against the minimal nodes, as the paper compares them.
#[derive(Debug, Clone, PartialEq)]
pub struct ArchiveComparison {
    /// Minimal nodes (equal objective vectors all counted).
    pub minimal: usize,
    /// Σ over archive members of the Euclidean distance to the nearest
    /// minimal node, each objective divided by its largest minimal value.
    pub ce: f64,
    /// Of the ε-boxes of minimal nodes that no other such box dominates, the
    /// share holding an archive member.
    pub rr: f64,
    /// Those boxes.
    pub boxes: usize,
}

pub fn compare(
    objectives: &[Objective],
    epsilon: &[f64],
    archive: &[Scored],
    minimal_set: &[Scored],
) -> ArchiveComparison {
    let dims = objectives.len();
    let scale: Vec<f64> = (0..dims)
        .map(|i| {
            let m = minimal_set.iter().map(|p| p.values[i].abs()).fold(0.0, f64::max);
            if m > 0.0 {
                m
            } else {
                1.0
            }
        })
        .collect();
    let distance =
        |a: &[f64], b: &[f64]| -> f64 { (0..dims).map(|i| ((a[i] - b[i]) / scale[i]).powi(2)).sum::<f64>().sqrt() };
    let ce = archive
        .iter()
        .map(|a| minimal_set.iter().map(|p| distance(&a.values, &p.values)).fold(f64::INFINITY, f64::min))
        .filter(|d| d.is_finite())
        .sum();
    let mut boxes: Vec<Vec<i64>> = minimal_set.iter().map(|p| boxed(&p.values, epsilon)).collect();
    boxes.sort();
    boxes.dedup();
    let top: Vec<&Vec<i64>> = boxes.iter().filter(|b| !boxes.iter().any(|o| box_dominates(objectives, o, b))).collect();
    let held: Vec<Vec<i64>> = archive.iter().map(|a| boxed(&a.values, epsilon)).collect();
    let hit = top.iter().filter(|b| held.contains(b)).count();
    ArchiveComparison {
        minimal: minimal_set.len(),
        ce,
        rr: if top.is_empty() { 1.0 } else { hit as f64 / top.len() as f64 },
        boxes: top.len(),
    }
}

/// The minimal nodes of every node (`--method exhaustive`).
pub fn exhaustive(ev: &mut Evaluator, lattice: &Lattice, s: &PbgSettings) -> Result<(Vec<Scored>, Vec<Scored>)> {
    let all = every_node(ev, lattice, s)?;
    Ok((minimal(&s.objectives, &all), all))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sc(l: u8, values: &[f64]) -> Scored {
        Scored { levels: vec![l], values: values.to_vec(), suppressed: 0 }
    }

    #[test]
    fn archive_follows_algorithm_1() {
        let o = [Objective::K, Objective::Glm];
        let eps = [10.0, 10.0];
        let mut a = Archive::default();
        a.offer(&o, &eps, &sc(0, &[12.0, 55.0])); // box (1, 5)
        a.offer(&o, &eps, &sc(1, &[15.0, 52.0])); // same box, dominates: replaces
        assert_eq!(a.members.iter().map(|m| m.levels[0]).collect::<Vec<_>>(), vec![1]);
        a.offer(&o, &eps, &sc(2, &[18.0, 58.0])); // same box, incomparable: the first keeps it
        assert_eq!(a.members.len(), 1);
        a.offer(&o, &eps, &sc(3, &[25.0, 70.0])); // box (2, 7): incomparable box, kept
        a.offer(&o, &eps, &sc(4, &[5.0, 40.0])); // box (0, 4): kept
        a.offer(&o, &eps, &sc(5, &[3.0, 90.0])); // box (0, 9): dominated by (1, 5), refused
        assert_eq!(a.members.iter().map(|m| m.levels[0]).collect::<Vec<_>>(), vec![1, 3, 4]);
        a.offer(&o, &eps, &sc(6, &[30.0, 30.0])); // box (3, 3) dominates all
        assert_eq!(a.members.iter().map(|m| m.levels[0]).collect::<Vec<_>>(), vec![6]);
    }

    #[test]
    fn fitness_sums_the_strength_of_dominators() {
        let o = [Objective::K, Objective::Glm];
        // 0 dominates 1 and 2; 1 dominates 2; 3 is incomparable with all.
        let pool = vec![sc(0, &[5.0, 1.0]), sc(1, &[4.0, 2.0]), sc(2, &[3.0, 3.0]), sc(3, &[9.0, 9.0])];
        assert_eq!(fitness(&o, &pool), vec![0, 2, 3, 0]);
    }

    #[test]
    fn comparison_counts_distance_and_boxes() {
        let o = [Objective::K, Objective::Glm];
        let eps = [1.0, 1.0];
        let minimal_set = vec![sc(0, &[10.0, 100.0]), sc(1, &[5.0, 50.0])];
        let archive = vec![sc(0, &[10.0, 100.0]), sc(2, &[5.0, 60.0])];
        let c = compare(&o, &eps, &archive, &minimal_set);
        assert_eq!((c.minimal, c.boxes), (2, 2));
        assert_eq!(c.rr, 0.5);
        assert!((c.ce - 0.1).abs() < 1e-12, "{}", c.ce);
    }
}
