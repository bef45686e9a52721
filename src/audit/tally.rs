//! The tallies over the classes: k, the histogram, the ℓ and t figures and,
//! per model, the classes and records that fail it. Pure: a class in, figures
//! updated.

use crate::engine::embedded::SourceColumn;
use crate::engine::types::ColumnType;
use crate::job::{DistanceSpec, DiversityKind, Job};
use crate::measure::privacy::{entropy, entropy_at_least, recursive, ClassModels, Closeness, Distance};
use crate::measure::risk::ClassSizes;
use std::collections::BTreeMap;

/// One class as the pass reads it: records, population records, and the
/// (code, records) pairs of `s` and `t` (a code may repeat until merged).
#[derive(Default)]
pub(super) struct Class {
    pub(super) records: u64,
    pub(super) population: u64,
    pub(super) s: Vec<(u32, u64)>,
    pub(super) t: Vec<(u32, u64)>,
}

/// Sort by code and add up each code's records.
pub(super) fn merge(pairs: &mut Vec<(u32, u64)>) {
    pairs.sort_unstable();
    pairs.dedup_by(|b, a| {
        if a.0 == b.0 {
            a.1 += b.1;
            true
        } else {
            false
        }
    });
}

/// What a class taken in counts for: everything, or (ℓ's column and
/// t-closeness's apart, a row of the engine's histogram each) its size and
/// ℓ only, or its t only.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Part {
    All,
    S,
    T,
}

/// Classes and records that fail one model.
#[derive(Default, Clone, Copy)]
pub(super) struct Tally {
    pub(super) classes: u64,
    pub(super) records: u64,
}

impl Tally {
    /// `times` classes of `records` records each.
    fn add(&mut self, records: u64, times: u64) {
        self.classes += times;
        self.records += records * times;
    }
}

/// A distance t-closeness's figures report, with its name.
pub(super) struct Figure {
    pub(super) name: &'static str,
    closeness: Closeness,
    pub(super) largest: Option<f64>,
}

/// What the pass accumulates over the classes.
pub(super) struct Audit<'a> {
    job: &'a Job,
    models: &'a ClassModels,
    pub(super) rows: u64,
    pub(super) classes: u64,
    pub(super) k: Option<u64>,
    pub(super) histogram: BTreeMap<u64, u64>,
    /// (f, F) → classes.
    pub(super) sizes: BTreeMap<(u64, u64), u64>,
    pub(super) distinct: Option<u64>,
    /// The smallest exp(entropy).
    pub(super) entropy: Option<f64>,
    /// The largest r_1 / (r_ℓ + … + r_m); `short` once a class has fewer than ℓ values.
    recursive: Option<f64>,
    short: bool,
    pub(super) distances: Vec<Figure>,
    pub(super) fail_k: Tally,
    pub(super) fail_l: Tally,
    pub(super) fail_t: Tally,
}

impl<'a> Audit<'a> {
    pub(super) fn new(job: &'a Job, models: &'a ClassModels, columns: &[SourceColumn]) -> Audit<'a> {
        let mut distances = Vec::new();
        if let (Some(spec), Some(cl)) = (&job.privacy.closeness, &models.closeness) {
            let with = |distance| Closeness { distance, ..cl.clone() };
            distances.push(Figure { name: "equal", closeness: with(Distance::Equal), largest: None });
            let type_name = columns.iter().find(|c| c.name == spec.column.name).map_or("", |c| c.type_name.as_str());
            if ColumnType::of(type_name).is_ordered() {
                let closeness = with(Distance::ordered(&cl.reference));
                distances.push(Figure { name: "ordered", closeness, largest: None });
            }
            if matches!(spec.distance, DistanceSpec::Hierarchical(_)) {
                distances.push(Figure { name: "hierarchical", closeness: cl.clone(), largest: None });
            }
        }
        Audit {
            job,
            models,
            rows: 0,
            classes: 0,
            k: None,
            histogram: BTreeMap::new(),
            sizes: BTreeMap::new(),
            distinct: None,
            entropy: None,
            recursive: None,
            short: false,
            distances,
            fail_k: Tally::default(),
            fail_l: Tally::default(),
            fail_t: Tally::default(),
        }
    }

    /// Take one class in (and leave `class` empty for the next).
    pub(super) fn class(&mut self, class: &mut Class) {
        self.classes_alike(std::mem::take(class), 1, Part::All);
    }

    /// Take in `times` classes alike: the same records, population records
    /// and value lists (a row of the engine's histogram, `engine.rs`), for
    /// what `part` says.
    pub(super) fn classes_alike(&mut self, c: Class, times: u64, part: Part) {
        let (mut s, mut t) = (c.s, c.t);
        merge(&mut s);
        merge(&mut t);
        let f = c.records;
        if part != Part::T {
            self.sized(f, c.population, times);
            self.diverse(f, &s, times);
        }
        if part != Part::S {
            self.close(f, if self.models.separate { &t } else { &s }, times);
        }
    }

    /// `times` classes of `f` records (`big_f` in the population): k and the histograms.
    fn sized(&mut self, f: u64, big_f: u64, times: u64) {
        let big_f = if self.job.risk.population_table.is_some() { big_f } else { f };
        self.rows += f * times;
        self.classes += times;
        self.k = Some(self.k.map_or(f, |k| k.min(f)));
        *self.histogram.entry(f).or_default() += times;
        *self.sizes.entry((f, big_f)).or_default() += times;
        if f < self.job.privacy.k {
            self.fail_k.add(f, times);
        }
    }

    /// ℓ's figures and verdict of `times` classes of `f` records with the
    /// (code, records) pairs `s` of ℓ's column.
    fn diverse(&mut self, f: u64, s: &[(u32, u64)], times: u64) {
        if let Some(d) = &self.job.privacy.diversity {
            let counts = s.iter().map(|p| p.1);
            let values = s.len() as u64;
            self.distinct = Some(self.distinct.map_or(values, |x| x.min(values)));
            let e = entropy(counts.clone()).exp();
            self.entropy = Some(self.entropy.map_or(e, |x| x.min(e)));
            let mut r: Vec<u64> = counts.clone().collect();
            r.sort_unstable_by(|a, b| b.cmp(a));
            if values < d.l {
                self.short = true;
            } else {
                let tail: u64 = r[d.l as usize - 1..].iter().sum();
                let ratio = r[0] as f64 / tail as f64;
                self.recursive = Some(self.recursive.map_or(ratio, |x| x.max(ratio)));
            }
            let meets = match d.kind {
                DiversityKind::Distinct => values >= d.l,
                DiversityKind::Entropy => entropy_at_least(counts, d.l),
                DiversityKind::Recursive(c) => recursive(counts, c, d.l),
            };
            if !meets {
                self.fail_l.add(f, times);
            }
        }
    }

    /// t's figures and verdict of `times` classes of `f` records with the
    /// (code, records) pairs of t-closeness's column.
    fn close(&mut self, f: u64, pairs: &[(u32, u64)], times: u64) {
        if let Some(cl) = &self.models.closeness {
            for figure in &mut self.distances {
                let x = figure.closeness.distance(pairs);
                figure.largest = Some(figure.largest.map_or(x, |y| y.max(x)));
            }
            if !cl.admits(pairs) {
                self.fail_t.add(f, times);
            }
        }
    }

    pub(super) fn class_sizes(&self) -> Vec<ClassSizes> {
        self.sizes.iter().map(|(&(sample, population), &classes)| ClassSizes { sample, population, classes }).collect()
    }

    /// The recursive figure: None once a class has fewer than ℓ values.
    pub(super) fn recursive(&self) -> Option<f64> {
        if self.short {
            None
        } else {
            self.recursive
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_merge_by_code() {
        let mut p = vec![(3, 1), (1, 2), (3, 4), (2, 1), (1, 1)];
        merge(&mut p);
        assert_eq!(p, vec![(1, 3), (2, 1), (3, 5)]);
    }
}
