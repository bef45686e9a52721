//! What a node's class-size histogram says: suppression, feasibility, achieved
//! k and ℓ, and the information-loss metrics. Pure arithmetic, no SQL.

use crate::measure::limits::{suppressed_prefix, SizeLimits};
use crate::options::Metric;
use serde::Serialize;
use std::cmp::Ordering;

/// Classes of one size, one count of distinct sensitive values and one
/// verdict of the per-class models.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bucket {
    pub size: u64,
    /// Distinct sensitive values per class (0 when no sensitive column is read).
    pub ldiv: u64,
    /// Do these classes meet the job's per-class models beyond k and distinct
    /// ℓ ([`crate::measure::privacy::ClassModels`]; true when there are none)?
    pub(crate) admitted: bool,
    pub classes: u64,
    /// Per QI of the node: Σ over these classes of size × (leaves under the class's value − 1).
    pub(crate) leaf_sums: Vec<u64>,
    /// Records not of their class's majority label (0 without a class column).
    pub(crate) minority: u64,
    /// Σ over these classes of Σ over sensitive values v of count(class, v)²
    /// (0 unless the evaluator was asked for it: `Extras::spread`).
    pub(crate) squares: u64,
    /// With `[privacy] person`, where `size` counts persons: the rows these
    /// classes hold ([`Bucket::records`], [`Bucket::row_squares`]).
    pub(crate) rows: Option<PersonRows>,
    /// With risk limits: every class here has, per QI of the node, this many
    /// leaves less one under its value (the order in which ARX's rule
    /// suppresses classes of one size; see [`Bucket::class_loss`]).
    pub(crate) shape: Option<Box<[u64]>>,
}

/// One record's glm in a class of this shape (per QI, its value's leaves less one).
pub(crate) fn class_loss(shape: &[u64], leaves: &[u64]) -> f64 {
    shape.iter().zip(leaves).filter(|(_, &l)| l > 1).map(|(&s, &l)| s as f64 / (l - 1) as f64).sum()
}

/// A person-level bucket's rows: loss stays over rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PersonRows {
    /// Rows of the persons in these classes.
    pub(crate) rows: u64,
    /// What these classes add to Σ over released tuples t of (rows released
    /// with t)², when they are released beside every class of more persons
    /// (dm over the released rows; see docs/semantics.md).
    pub(crate) squares: u64,
}

impl Bucket {
    /// Rows in these classes (a class's size counts rows unless it counts persons).
    pub(crate) fn records(&self) -> u64 {
        self.rows.map_or(self.size * self.classes, |r| r.rows)
    }

    /// dm's share of these classes when kept with every larger one: Σ size²
    /// over rows.
    pub(crate) fn row_squares(&self) -> u64 {
        self.rows.map_or(self.classes * self.size * self.size, |r| r.squares)
    }

    /// One record's glm in a class of this bucket (0 without a shape): of
    /// classes of one size, ARX's rule suppresses the least lossy first.
    pub(crate) fn class_loss(&self, leaves: &[u64]) -> f64 {
        self.shape.as_ref().map_or(0.0, |shape| class_loss(shape, leaves))
    }
}

/// A node's class-size histogram, ordered by (size, ldiv, admitted).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Histogram {
    pub buckets: Vec<Bucket>,
}

/// The privacy requirement: k, optional ℓ, the suppression budget in rows,
/// and the risk limits judged on the kept classes' sizes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Requirement {
    pub k: u64,
    pub l: Option<u64>,
    pub budget: u64,
    pub risk: Option<SizeLimits>,
}

impl Requirement {
    fn keeps(&self, b: &Bucket) -> bool {
        b.admitted && self.meets_k_and_l(b)
    }

    /// Does the class meet k and distinct ℓ (the models monotone under splitting)?
    fn meets_k_and_l(&self, b: &Bucket) -> bool {
        b.size >= self.k && self.l.is_none_or(|l| b.ldiv >= l)
    }
}

/// Constants of the data set the metrics need.
#[derive(Debug, Clone)]
pub struct Dataset {
    pub rows: u64,
    /// Per QI: hierarchy height and number of leaves.
    pub heights: Vec<u8>,
    pub(crate) leaves: Vec<u64>,
    /// Is there a class column (for cm)?
    pub(crate) label: bool,
    /// With `[privacy] person`: the source's persons (k and the budget count them).
    pub persons: Option<u64>,
}

impl Dataset {
    /// What k and the suppression budget count: persons, or rows.
    pub fn units(&self) -> u64 {
        self.persons.unwrap_or(self.rows)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Metrics {
    pub glm: f64,
    pub glm_normalized: f64,
    pub dm: f64,
    pub precision: f64,
    pub height: f64,
    /// Classification metric; None without a class column.
    pub cm: Option<f64>,
}

impl Metrics {
    pub fn get(&self, m: Metric) -> f64 {
        match m {
            Metric::Glm => self.glm,
            Metric::Dm => self.dm,
            Metric::Precision => self.precision,
            Metric::Height => self.height,
            Metric::Cm => self.cm.unwrap_or(f64::NAN),
            // Full-domain searches are not given hdm (cmd/run routes it to the scheme search).
            Metric::Hdm => f64::NAN,
        }
    }
}

/// A full node judged against a requirement.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub feasible: bool,
    /// Units (rows, or persons with `[privacy] person`) suppressed.
    pub suppressed: u64,
    /// Rows suppressed (`suppressed` unless units are persons).
    pub suppressed_rows: u64,
    /// Smallest kept class (None when nothing is kept).
    pub k: Option<u64>,
    /// Fewest distinct sensitive values in a kept class (None when not asked or nothing kept).
    pub l: Option<u64>,
    pub classes: u64,
    pub metrics: Metrics,
}

impl Histogram {
    /// Sum buckets of the same (size, ldiv, admitted) and order them.
    pub(crate) fn merge_buckets(&mut self) {
        self.buckets.sort_by(|a, b| {
            (a.size, a.ldiv, a.admitted).cmp(&(b.size, b.ldiv, b.admitted)).then(a.shape.cmp(&b.shape))
        });
        let mut out: Vec<Bucket> = Vec::with_capacity(self.buckets.len());
        for b in self.buckets.drain(..) {
            match out.last_mut() {
                Some(last)
                    if (last.size, last.ldiv, last.admitted) == (b.size, b.ldiv, b.admitted)
                        && last.shape == b.shape =>
                {
                    last.classes += b.classes;
                    for (x, y) in last.leaf_sums.iter_mut().zip(&b.leaf_sums) {
                        *x += y;
                    }
                    last.minority += b.minority;
                    last.squares += b.squares;
                    if let (Some(x), Some(y)) = (&mut last.rows, b.rows) {
                        x.rows += y.rows;
                        x.squares += y.squares;
                    }
                }
                _ => out.push(b),
            }
        }
        self.buckets = out;
    }

    /// Number of equivalence classes.
    pub fn classes(&self) -> u64 {
        self.buckets.iter().map(|b| b.classes).sum()
    }

    /// The largest k whose suppression fits `budget` rows: records in classes
    /// smaller than k are suppressed, and those the per-class models reject
    /// (distinct ℓ is not considered).
    pub(crate) fn achieved_k(&self, budget: u64) -> u64 {
        let admitted = self.buckets.iter().filter(|b| b.admitted);
        let mut sizes: Vec<(u64, u64)> = admitted.map(|b| (b.size, b.size * b.classes)).collect();
        sizes.sort();
        let mut below: u64 = self.buckets.iter().filter(|b| !b.admitted).map(|b| b.size * b.classes).sum();
        let mut k = 0;
        for (size, records) in sizes {
            if below > budget {
                break;
            }
            k = size;
            below += records;
        }
        k
    }

    /// The largest k whose records surely suppressed ([`Self::surely_suppressed`]
    /// without ℓ) fit `budget`: at least [`Self::achieved_k`], and at least
    /// the k of every specialization, as classes only split there. Without
    /// per-class models it is [`Self::achieved_k`].
    pub(crate) fn k_bound(&self, budget: u64) -> u64 {
        let mut sizes: Vec<u64> = self.buckets.iter().map(|b| b.size).collect();
        sizes.sort_unstable();
        sizes.dedup();
        // Records of the classes under k, and the per-class models' one record
        // per class they reject at or above k, for k = each size in turn.
        let mut under = 0u64;
        let mut rejected: u64 = self.buckets.iter().filter(|b| !b.admitted).map(|b| b.classes).sum();
        let mut k = 0;
        for size in sizes {
            if under + rejected > budget {
                break;
            }
            k = size;
            for b in self.buckets.iter().filter(|b| b.size == size) {
                under += b.size * b.classes;
                rejected -= if b.admitted { 0 } else { b.classes };
            }
        }
        k
    }

    /// (size, classes) of the classes `req` keeps.
    pub(crate) fn kept_sizes(&self, req: &Requirement) -> Vec<(u64, u64)> {
        let by_limits = self.limit_suppressed(req, &[]);
        (self.buckets.iter().zip(&by_limits))
            .filter(|(b, &gone)| req.keeps(b) && gone < b.classes)
            .map(|(b, &gone)| (b.size, b.classes - gone))
            .collect()
    }

    /// Per bucket, the kept classes the risk limits suppress (ARX's rule:
    /// the shortest prefix of the kept classes by ascending size, and of one
    /// size the least lossy first by `leaves`, whose removal makes them hold).
    pub(crate) fn limit_suppressed(&self, req: &Requirement, leaves: &[u64]) -> Vec<u64> {
        let mut out = vec![0; self.buckets.len()];
        let Some(limits) = &req.risk else { return out };
        let mut order: Vec<usize> = (0..self.buckets.len()).filter(|&i| req.keeps(&self.buckets[i])).collect();
        let loss: Vec<f64> = self.buckets.iter().map(|b| b.class_loss(leaves)).collect();
        order.sort_by(|&a, &b| {
            let (x, y) = (&self.buckets[a], &self.buckets[b]);
            (x.size.cmp(&y.size))
                .then(loss[a].total_cmp(&loss[b]))
                .then_with(|| x.shape.cmp(&y.shape))
                .then(x.ldiv.cmp(&y.ldiv))
        });
        let kept: Vec<(u64, u64)> = order.iter().map(|&i| (self.buckets[i].size, self.buckets[i].classes)).collect();
        let before: u64 = self.buckets.iter().filter(|b| !req.keeps(b)).map(|b| b.size * b.classes).sum();
        let mut rest = suppressed_prefix(limits, &kept, before, req.budget);
        for i in order {
            if rest == 0 {
                break;
            }
            let take = rest.min(self.buckets[i].classes);
            out[i] = take;
            rest -= take;
        }
        out
    }

    /// Records in classes the requirement suppresses.
    pub fn suppressed(&self, req: &Requirement) -> u64 {
        let by_limits = self.limit_suppressed(req, &[]);
        let beyond: u64 = self.buckets.iter().zip(&by_limits).map(|(b, &gone)| gone * b.size).sum();
        self.buckets.iter().filter(|b| !req.keeps(b)).map(|b| b.size * b.classes).sum::<u64>() + beyond
    }

    /// Feasible: what must be suppressed fits the budget.
    pub fn feasible(&self, req: &Requirement) -> bool {
        self.suppressed(req) <= req.budget
    }

    /// Is neither this node nor any specialization of it feasible? See
    /// [`Self::surely_suppressed`].
    pub(crate) fn prunes(&self, req: &Requirement) -> bool {
        self.surely_suppressed(req) > req.budget
    }

    /// At least this many records are suppressed here and in every
    /// specialization. A class under k or with fewer than ℓ distinct
    /// sensitive values splits into pieces that are no larger and hold no
    /// more values: all its records. A class only the per-class models
    /// reject (entropy or recursive ℓ, t-closeness) may split into pieces
    /// some of which they accept, but not all (a class made of pieces they
    /// all accept meets them too): at least one record.
    pub(crate) fn surely_suppressed(&self, req: &Requirement) -> u64 {
        (self.buckets.iter())
            .map(|b| match (req.meets_k_and_l(b), b.admitted) {
                (false, _) => b.size * b.classes,
                (true, false) => b.classes,
                (true, true) => 0,
            })
            .sum()
    }

    /// Judge a full node (levels in job order) against `req`.
    pub fn outcome(&self, levels: &[u8], req: &Requirement, data: &Dataset) -> Outcome {
        let n = data.heights.len();
        // Kept buckets with their classes kept: the risk limits may take some
        // classes of a bucket (of one shape: each the same share of its sums).
        let gone = self.limit_suppressed(req, &data.leaves);
        let kept: Vec<(&Bucket, u64)> = (self.buckets.iter().zip(&gone))
            .filter(|(b, &g)| req.keeps(b) && g < b.classes)
            .map(|(b, &g)| (b, b.classes - g))
            .collect();
        let part = |b: &Bucket, classes: u64, x: u64| {
            if classes == b.classes {
                x
            } else {
                (x as u128 * classes as u128 / b.classes as u128) as u64
            }
        };
        let suppressed_rows: u64 = self.buckets.iter().filter(|b| !req.keeps(b)).map(|b| b.records()).sum::<u64>()
            + self.buckets.iter().zip(&gone).map(|(b, &g)| part(b, g, b.records())).sum::<u64>();
        let suppressed: u64 = self.buckets.iter().filter(|b| !req.keeps(b)).map(|b| b.size * b.classes).sum::<u64>()
            + self.buckets.iter().zip(&gone).map(|(b, &g)| g * b.size).sum::<u64>();
        let mut glm = (suppressed_rows * n as u64) as f64;
        for (a, &leaves) in data.leaves.iter().enumerate() {
            if leaves > 1 {
                let sum: u64 = kept.iter().map(|&(b, c)| part(b, c, b.leaf_sums[a])).sum();
                glm += sum as f64 / (leaves - 1) as f64;
            }
        }
        let dm: u64 = kept.iter().map(|&(b, c)| part(b, c, b.row_squares())).sum::<u64>() + suppressed_rows * data.rows;
        let precision = 1.0
            - levels
                .iter()
                .zip(&data.heights)
                .map(|(&l, &h)| if h == 0 { 0.0 } else { l as f64 / h as f64 })
                .sum::<f64>()
                / n as f64;
        let cells = (data.rows * n as u64) as f64;
        let minority: u64 = kept.iter().map(|&(b, c)| part(b, c, b.minority)).sum();
        let cm =
            data.label
                .then(|| if data.rows > 0 { (minority + suppressed_rows) as f64 / data.rows as f64 } else { 0.0 });
        Outcome {
            feasible: suppressed <= req.budget,
            suppressed,
            suppressed_rows,
            k: kept.iter().map(|(b, _)| b.size).min(),
            l: req.l.and(kept.iter().map(|(b, _)| b.ldiv).min()),
            classes: kept.iter().map(|&(_, c)| c).sum(),
            metrics: Metrics {
                glm,
                glm_normalized: if cells > 0.0 { glm / cells } else { 0.0 },
                dm: dm as f64,
                precision,
                height: levels.iter().map(|&l| l as f64).sum(),
                cm,
            },
        }
    }
}

/// Equal up to rounding: metric sums may be added up in different orders.
pub(crate) fn same(x: f64, y: f64) -> bool {
    (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0)
}

/// Order two feasible nodes for `metric`: less is better. glm, dm and height
/// are losses; precision is a utility. Ties: lower sum of levels, then the
/// lexicographically smaller level vector.
pub(crate) fn better(metric: Metric, a: (&[u8], &Metrics), b: (&[u8], &Metrics)) -> Ordering {
    let (x, y) = (a.1.get(metric), b.1.get(metric));
    let by_metric = if metric == Metric::Precision { y.partial_cmp(&x) } else { x.partial_cmp(&y) };
    let first = if same(x, y) { Ordering::Equal } else { by_metric.unwrap_or(Ordering::Equal) };
    let sum = |l: &[u8]| l.iter().map(|&v| v as u32).sum::<u32>();
    first.then_with(|| sum(a.0).cmp(&sum(b.0))).then_with(|| a.0.cmp(b.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data() -> Dataset {
        Dataset { rows: 10, heights: vec![2, 1], leaves: vec![5, 3], label: false, persons: None }
    }

    fn bucket(size: u64, classes: u64, ldiv: u64, leaf_sums: Vec<u64>) -> Bucket {
        Bucket { size, ldiv, admitted: true, classes, leaf_sums, minority: 0, squares: 0, rows: None, shape: None }
    }

    #[test]
    fn suppression_glm_and_dm_follow_the_definitions() {
        // Two classes of 4 (each cell: leaves-1 = 2 of 4 for QI 0, 0 for QI 1) and a class of 2.
        let h = Histogram { buckets: vec![bucket(2, 1, 1, vec![0, 0]), bucket(4, 2, 2, vec![16, 0])] };
        let req = Requirement { k: 3, l: None, budget: 2, risk: None };
        let o = h.outcome(&[1, 0], &req, &data());
        assert!(o.feasible);
        assert_eq!(o.suppressed, 2);
        assert_eq!(o.k, Some(4));
        // kept: 8 records × 2/4 on QI 0 = 4; suppressed: 2 records × 2 QIs = 4.
        assert_eq!(o.metrics.glm, 8.0);
        assert_eq!(o.metrics.glm_normalized, 8.0 / 20.0);
        // dm: 2 × 4² + 2 × 10.
        assert_eq!(o.metrics.dm, 52.0);
        assert_eq!(o.metrics.precision, 1.0 - (0.5 + 0.0) / 2.0);
        assert_eq!(o.metrics.height, 1.0);
        assert!(!h.feasible(&Requirement { k: 3, l: None, budget: 1, risk: None }));
    }

    #[test]
    fn k_bound_counts_one_record_per_class_the_models_reject() {
        // Two singletons, a class of 5 the per-class models reject, a class of 10.
        let rejected = Bucket { admitted: false, ..bucket(5, 1, 0, vec![0, 0]) };
        let h = Histogram { buckets: vec![bucket(1, 2, 0, vec![0, 0]), rejected, bucket(10, 1, 0, vec![0, 0])] };
        // The rejected class's 5 records are over budgets under 5: k is 0 there.
        assert_eq!((h.achieved_k(2), h.achieved_k(3), h.achieved_k(7)), (0, 0, 10));
        // Its pieces may pass, but one record at least is suppressed: k = 5
        // needs the two singletons and that record (3); k = 10 the 7 below 10.
        assert_eq!((h.k_bound(2), h.k_bound(3), h.k_bound(6), h.k_bound(7)), (1, 5, 5, 10));
        // Without per-class models the bound is k itself.
        let plain = Histogram {
            buckets: vec![bucket(1, 3, 0, vec![0, 0]), bucket(2, 1, 0, vec![0, 0]), bucket(6, 2, 0, vec![0, 0])],
        };
        for budget in 0..8 {
            assert_eq!(plain.k_bound(budget), plain.achieved_k(budget));
        }
    }

    #[test]
    fn achieved_k_is_the_largest_k_within_budget() {
        let h = Histogram {
            buckets: vec![bucket(1, 3, 0, vec![0, 0]), bucket(2, 1, 0, vec![0, 0]), bucket(6, 2, 0, vec![0, 0])],
        };
        assert_eq!(h.achieved_k(0), 1);
        assert_eq!(h.achieved_k(2), 1);
        assert_eq!(h.achieved_k(3), 2);
        assert_eq!(h.achieved_k(4), 2);
        assert_eq!(h.achieved_k(5), 6);
        assert_eq!(h.achieved_k(100), 6);
        for budget in 0..8 {
            let k = h.achieved_k(budget);
            assert!(h.feasible(&Requirement { k, l: None, budget, risk: None }));
            assert!(!h.feasible(&Requirement { k: k + 1, l: None, budget, risk: None }) || k == 6);
        }
    }

    #[test]
    fn l_diversity_suppresses_uniform_classes() {
        let h = Histogram { buckets: vec![bucket(4, 1, 1, vec![0, 0]), bucket(4, 1, 3, vec![0, 0])] };
        let req = Requirement { k: 2, l: Some(2), budget: 4, risk: None };
        let o = h.outcome(&[0, 0], &req, &data());
        assert_eq!((o.suppressed, o.l, o.feasible), (4, Some(3), true));
    }

    #[test]
    fn ties_go_to_lower_then_lexicographically_smaller_levels() {
        let m = Metrics { glm: 1.0, glm_normalized: 0.1, dm: 5.0, precision: 0.5, height: 2.0, cm: None };
        assert_eq!(better(Metric::Glm, (&[0, 2], &m), (&[1, 1], &m)), Ordering::Less);
        let m2 = Metrics { glm: 1.0, ..m };
        assert_eq!(better(Metric::Glm, (&[1, 0], &m), (&[0, 2], &m2)), Ordering::Less);
        let hi = Metrics { precision: 0.9, ..m };
        assert_eq!(better(Metric::Precision, (&[2, 2], &hi), (&[0, 0], &m)), Ordering::Less);
    }
}

/// Ambiguity (am) of a full-domain release: the mean over records of the
/// product over QIs of the leaves under the record's released value, a
/// suppressed record counting every leaf. Read off `kanon_f0` at the node.
/// [`crate::evaluator::classes::full_domain_ambiguity`] from a node's classes held in memory: per class
/// its records and Π of the leaves under its values; `kept` says which
/// classes the release keeps.
pub(crate) fn classes_ambiguity(sizes: &[u64], leaves: &[f64], kept: impl Fn(usize) -> bool, data: &Dataset) -> f64 {
    // A class adds size × Π leaves, a whole number (a float product of whole
    // numbers is one), summed exactly so that the order the classes come in
    // (the base set's, which differs between the ways it is grouped) does
    // not move the last digit; past u128, as floats smallest first.
    let terms =
        || (sizes.iter().zip(leaves).enumerate()).filter(|&(c, _)| kept(c)).map(|(_, (&s, &l))| (s, s as f64 * l));
    let records: u64 = terms().map(|(s, _)| s).sum();
    let whole = |t: f64| (t >= 0.0 && t < u128::MAX as f64 && t.fract() == 0.0).then_some(t as u128);
    let exact = terms().try_fold(0u128, |sum, (_, t)| whole(t).and_then(|t| sum.checked_add(t)));
    let sum = exact.map_or_else(
        || {
            let mut floats: Vec<f64> = terms().map(|(_, t)| t).collect();
            floats.sort_by(f64::total_cmp);
            floats.iter().sum()
        },
        |s| s as f64,
    );
    ambiguity(sum, records as f64, data)
}

/// am from the sum over kept classes of size × Π leaves and the records they
/// hold: a suppressed record counts every leaf.
pub(crate) fn ambiguity(kept: f64, records: f64, data: &Dataset) -> f64 {
    let suppressed = data.rows as f64 - records;
    let all: f64 = data.leaves.iter().map(|&l| l as f64).product();
    (kept + suppressed * all) / data.rows as f64
}
