//! Risk limits judged on a release's class sizes (ARX's AverageReidentificationRisk,
//! SampleUniqueness and PopulationUniqueness), ARX's rule of suppression under
//! them, and estimated k-map's derived k (ARX's KMap). Pure arithmetic;
//! docs/risk.md has the formulas and a worked example.

use crate::job::{AverageRisk, CellEstimator, Estimator, KMapSpec, RiskLimits, RiskSettings};
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::collections::BTreeMap;

/// The limits a node's kept classes are judged by, with the population's size
/// fixed from the source's rows (ARX fixes it once, before any suppression).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SizeLimits {
    pub average: Option<AverageRisk>,
    pub sample_uniqueness: Option<f64>,
    pub population_uniqueness: Option<(f64, Estimator)>,
    /// N, for population uniqueness.
    pub population: u64,
}

impl SizeLimits {
    /// The size limits of `limits` for a source of `rows` records (None when it sets none).
    pub fn new(limits: &RiskLimits, settings: &RiskSettings, rows: u64) -> Option<SizeLimits> {
        limits.any_on_sizes().then(|| SizeLimits {
            average: limits.average,
            sample_uniqueness: limits.sample_uniqueness,
            population_uniqueness: limits.population_uniqueness,
            population: population_size(rows, settings),
        })
    }

    /// Do kept classes of these sizes (size → classes) meet every limit?
    pub fn hold(&self, sizes: &BTreeMap<u64, u64>) -> bool {
        let records: u64 = sizes.iter().map(|(&s, &c)| s * c).sum();
        let classes: u64 = sizes.values().sum();
        let share_of = |size: u64| sizes.get(&size).map_or(0.0, |&c| (c * size) as f64 / records as f64);
        if let Some(a) = &self.average {
            // All suppressed: nothing is at risk.
            if records > 0 {
                if 1.0 / (records as f64 / classes as f64) > a.average {
                    return false;
                }
                if let Some((highest, at_risk)) = a.highest {
                    let smallest = size_threshold(highest);
                    let below: f64 = sizes.range(..smallest).map(|(&s, _)| share_of(s)).sum();
                    if below > at_risk {
                        return false;
                    }
                }
            }
        }
        if let Some(t) = self.sample_uniqueness {
            if records > 0 && share_of(1) > t {
                return false;
            }
        }
        if let Some((t, estimator)) = self.population_uniqueness {
            if records > 0 && !self.population_holds(sizes, records, t, estimator) {
                return false;
            }
        }
        true
    }

    /// ARX's PopulationUniqueness: the estimate in (0, T], or no estimate
    /// needed (no sample uniques). Dankar's rule without Zayatz as fallback.
    fn population_holds(&self, sizes: &BTreeMap<u64, u64>, records: u64, t: f64, estimator: Estimator) -> bool {
        let uniques = population_uniques(sizes, records, self.population, estimator);
        match uniques {
            Some(u) if u > 0.0 => u <= t,
            Some(_) => !sizes.contains_key(&1),
            None => false,
        }
    }

    /// The figures of kept classes of these sizes, for the report.
    pub fn figures(&self, sizes: &BTreeMap<u64, u64>) -> LimitFigures {
        let records: u64 = sizes.iter().map(|(&s, &c)| s * c).sum();
        let classes: u64 = sizes.values().sum();
        let share_of = |size: u64| {
            if records == 0 {
                0.0
            } else {
                sizes.get(&size).map_or(0.0, |&c| (c * size) as f64 / records as f64)
            }
        };
        LimitFigures {
            average_risk: self.average.map(|a| Figure {
                required: a.average,
                reached: if records == 0 { 0.0 } else { classes as f64 / records as f64 },
            }),
            records_at_risk: self.average.and_then(|a| a.highest).map(|(highest, at_risk)| Figure {
                required: at_risk,
                reached: sizes.range(..size_threshold(highest)).map(|(&s, _)| share_of(s)).sum(),
            }),
            sample_uniqueness: self.sample_uniqueness.map(|t| Figure { required: t, reached: share_of(1) }),
            population_uniqueness: self.population_uniqueness.map(|(t, e)| Figure {
                required: t,
                reached: if records == 0 {
                    0.0
                } else {
                    population_uniques(sizes, records, self.population, e).unwrap_or(f64::NAN)
                },
            }),
            holds: self.hold(sizes),
        }
    }
}

/// A limit's requirement and what the kept classes reach.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Figure {
    pub required: f64,
    pub reached: f64,
}

/// The report's figures of the risk limits (each null when not asked).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LimitFigures {
    /// 1 / the average class size.
    pub average_risk: Option<Figure>,
    /// The share of records in classes smaller than 1 / highest risk.
    pub records_at_risk: Option<Figure>,
    pub sample_uniqueness: Option<Figure>,
    /// The estimated share of population uniques (NaN: no estimate).
    pub population_uniqueness: Option<Figure>,
    pub holds: bool,
}

/// The estimated share of population uniques (None: the model has none).
fn population_uniques(sizes: &BTreeMap<u64, u64>, records: u64, population: u64, e: Estimator) -> Option<f64> {
    let histogram: Vec<(u64, u128)> = sizes.iter().map(|(&s, &c)| (s, c as u128)).collect();
    let settings = RiskSettings { population: Some(population), ..RiskSettings::default() };
    super::risk::unique_share(&histogram, records as u128, &settings, e)
}

/// ARX's ParameterTranslation.getSizeThreshold: the smallest class size whose
/// risk is within `risk` (1 / risk, rounded up unless within 1% of it).
pub fn size_threshold(risk: f64) -> u64 {
    if risk <= 0.0 {
        return u64::MAX;
    }
    let size = 1.0 / risk;
    let mut floor = size.floor();
    if 1.0 / floor - 1.0 / size >= 0.01 * risk {
        floor += 1.0;
    }
    floor as u64
}

/// N: `[risk] population`, else the source's rows over the sampling fraction,
/// rounded (ARX's population model).
fn population_size(rows: u64, settings: &RiskSettings) -> u64 {
    match settings.population {
        Some(n) => n.max(rows),
        None => ((rows as f64 / settings.sampling_fraction).round() as u64).max(rows),
    }
}

/// How many of the kept classes, taken in order (ascending size), ARX's rule
/// suppresses: its binary search over prefixes of that order
/// (HashGroupifyDistribution.suppressWhileNotFulfilledBinary), followed
/// exactly, so a limit that is not monotone (population uniqueness) lands
/// where ARX lands. `kept`: (size, classes), ascending by size. As ARX's
/// RiskBasedCriterion, the search stops at a prefix that does not hold and
/// takes the records suppressed past `budget` (with the `before` suppressed
/// already): that prefix is the answer, and the node is infeasible.
pub fn suppressed_prefix(limits: &SizeLimits, kept: &[(u64, u64)], before: u64, budget: u64) -> u64 {
    // One entry per size: (size, classes).
    let mut sizes: Vec<(u64, u64)> = Vec::with_capacity(kept.len());
    for &(s, c) in kept {
        match sizes.last_mut() {
            Some(last) if last.0 == s => last.1 += c,
            _ => sizes.push((s, c)),
        }
    }
    let total: u64 = sizes.iter().map(|&(_, c)| c).sum();
    let holds = |m: u64| limits.hold_after(&sizes, m);
    if total == 0 || holds(0) {
        return 0;
    }
    // Records in the first m classes.
    let records = |m: u64| {
        let (mut rest, mut out) = (m, before);
        for &(s, c) in &sizes {
            let take = rest.min(c);
            out += take * s;
            rest -= take;
        }
        out
    };
    // Indices as ARX's: entries 0..=mid suppressed; Java's division truncates toward zero.
    let (mut low, mut high) = (0i64, total as i64 - 1);
    let mut mid = (low + high) / 2;
    while low <= high {
        let m = (mid + 1) as u64;
        let fulfilled = holds(m);
        if !fulfilled && records(m) > budget {
            return m;
        }
        if fulfilled {
            high = mid - 1;
        } else {
            low = mid + 1;
        }
        mid = (low + high) / 2;
    }
    let mut m = (mid + 1) as u64;
    // Finally: one more entry when the last state does not hold.
    if !holds(m) && m < total {
        m += 1;
    }
    m
}

impl SizeLimits {
    /// Do the limits hold once the first `m` classes of `sizes` ((size,
    /// classes), ascending) are suppressed? Without population uniqueness,
    /// in one pass and no allocation: a search asks this for every node.
    fn hold_after(&self, sizes: &[(u64, u64)], m: u64) -> bool {
        if self.population_uniqueness.is_some() {
            let mut left = BTreeMap::new();
            let mut rest = m;
            for &(s, c) in sizes {
                let take = rest.min(c);
                rest -= take;
                if c > take {
                    left.insert(s, c - take);
                }
            }
            return self.hold(&left);
        }
        let smallest = self.average.and_then(|a| a.highest).map_or(0, |(h, _)| size_threshold(h));
        let (mut records, mut classes, mut uniques, mut at_risk) = (0u64, 0u64, 0u64, 0u64);
        let mut rest = m;
        for &(s, c) in sizes {
            let take = rest.min(c);
            rest -= take;
            let kept = c - take;
            records += kept * s;
            classes += kept;
            if s == 1 {
                uniques += kept;
            }
            if s < smallest {
                at_risk += kept * s;
            }
        }
        if records == 0 {
            return true;
        }
        let share = |x: u64| x as f64 / records as f64;
        let average_ok = self.average.is_none_or(|a| {
            1.0 / (records as f64 / classes as f64) <= a.average && a.highest.is_none_or(|(_, r)| share(at_risk) <= r)
        });
        average_ok && self.sample_uniqueness.is_none_or(|t| share(uniques) <= t)
    }
}

/// Estimated k-map's k: the smallest class size at which a class maps to at
/// least k population records with the significance asked (ARX's KMap with
/// an estimator, capped at the source's rows and at k).
pub fn derived_k(spec: &KMapSpec, rows: u64, settings: &RiskSettings) -> u64 {
    let big_n = population_size(rows, settings);
    let lambda = rows as f64 / big_n as f64 * spec.k as f64;
    let threshold = 1.0 - spec.significance;
    let pmf = |i: u64| (-lambda + i as f64 * lambda.ln() - ln_factorial(i)).exp();
    let derived = match spec.estimator {
        CellEstimator::Poisson => {
            let (mut counter, mut value) = (0u64, 0.0f64);
            let mut cdf = 0.0;
            while value < threshold {
                cdf += pmf(counter);
                value = cdf;
                counter += 1;
                if counter >= spec.k {
                    break;
                }
            }
            counter + 1
        }
        CellEstimator::ZeroTruncatedPoisson => {
            let v2 = 1.0 - (-lambda).exp();
            let (mut counter, mut value) = (1u64, 0.0f64);
            while value < threshold {
                value += pmf(counter) / v2;
                counter += 1;
                if counter >= spec.k {
                    break;
                }
            }
            counter
        }
    };
    derived.min(rows).min(spec.k)
}

/// ln(i!).
fn ln_factorial(i: u64) -> f64 {
    (2..=i).map(|x| (x as f64).ln()).sum()
}

/// The population's classes against the source's (exact k-map and
/// δ-presence, with `[risk] population_table`): its records per combination
/// of leaf codes, grouped at a node by each level's divisor (a level's code
/// is the leaf code divided by it).
#[derive(Debug, Clone)]
pub struct Population {
    /// Per QI, per combination of the population: its leaf's index among the QI's leaves.
    leaf: Vec<Vec<u32>>,
    /// Per combination: its records.
    records: Vec<u64>,
    /// Per QI and level: leaf index → the index of its value at the level.
    lift: Vec<Vec<Vec<u32>>>,
    /// Per QI and level: the level's codes, ascending (a code's index is its position).
    codes: Vec<Vec<Vec<i64>>>,
    /// Exact k-map: every kept class holds at least this many population records.
    pub(crate) k_map: Option<u64>,
    /// δ-presence: every kept class's records over its population records within [min, max].
    pub(crate) delta: Option<(f64, f64)>,
}

/// The population's records per class at one node, keyed by the class's
/// value indexes in mixed radix (the level's values per QI).
pub struct PopulationClasses<'p> {
    population: &'p Population,
    levels: Vec<u8>,
    records: Records,
}

impl Drop for PopulationClasses<'_> {
    fn drop(&mut self) {
        if let Records::Dense(records) = &mut self.records {
            give_back(std::mem::take(records));
        }
    }
}

thread_local! {
    /// Buffers of the population's keys and direct indexes, kept per thread:
    /// a search asks for a node's classes thousands of times, and a fresh
    /// buffer each time is fresh pages from the system each time.
    static BUFFERS: std::cell::RefCell<Vec<Vec<u64>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A buffer of `len` zeros, one kept by this thread when there is one.
fn zeroed(len: usize) -> Vec<u64> {
    let mut v = BUFFERS.with(|b| b.borrow_mut().pop()).unwrap_or_default();
    v.clear();
    v.resize(len, 0);
    v
}

/// Keep a buffer for [`zeroed`] (a few per thread).
fn give_back(v: Vec<u64>) {
    BUFFERS.with(|b| {
        let mut b = b.borrow_mut();
        if b.len() < 4 {
            b.push(v);
        }
    });
}

enum Records {
    /// Every key's records, when the keys are few (a direct index).
    Dense(Vec<u64>),
    Hashed(FxHashMap<u64, u64>),
    /// Keys past 64 bits: by the value indexes themselves.
    Listed(FxHashMap<Box<[u32]>, u64>),
}

/// Indexes (each with its radix) as one mixed-radix key; None when one is missing.
fn mixed_radix(index: impl Iterator<Item = (Option<u32>, u64)>) -> Option<u64> {
    let mut key = 0u64;
    for (i, r) in index {
        key = key * r + i? as u64;
    }
    Some(key)
}

impl PopulationClasses<'_> {
    /// Per value of QI `a` (by its code at the node's level, `codes` in any
    /// order): its index among the population's values there, or None.
    pub fn indexes(&self, a: usize, codes: &[i64]) -> Vec<Option<u32>> {
        let at = &self.population.codes[a][self.levels[a] as usize];
        codes.iter().map(|c| at.binary_search(c).ok().map(|i| i as u32)).collect()
    }

    /// The population records of the class of these value indexes
    /// ([`Self::indexes`]; None: a value the population does not have).
    pub fn of_indexes(&self, index: impl Iterator<Item = Option<u32>>) -> u64 {
        let p = self.population;
        let radix = (0..self.levels.len()).map(|a| p.codes[a][self.levels[a] as usize].len() as u64);
        match &self.records {
            Records::Dense(records) => mixed_radix(index.zip(radix)).map_or(0, |key| records[key as usize]),
            Records::Hashed(records) => {
                mixed_radix(index.zip(radix)).and_then(|key| records.get(&key).copied()).unwrap_or(0)
            }
            Records::Listed(records) => {
                index.collect::<Option<Box<[u32]>>>().and_then(|key| records.get(&key).copied()).unwrap_or(0)
            }
        }
    }

    /// The population records of the class of these codes (0 when none).
    pub fn of(&self, codes: &[i64]) -> u64 {
        let p = self.population;
        self.of_indexes(
            codes
                .iter()
                .zip(&self.levels)
                .enumerate()
                .map(|(a, (c, &l))| p.codes[a][l as usize].binary_search(c).ok().map(|i| i as u32)),
        )
    }
}

impl Population {
    /// `base`: the population's (leaf codes, records); `divisors`: per QI and level.
    pub fn new(
        base: Vec<(Box<[i64]>, u64)>,
        divisors: Vec<Vec<i64>>,
        k_map: Option<u64>,
        delta: Option<(f64, f64)>,
    ) -> Population {
        let qis = divisors.len();
        let mut leaf = Vec::with_capacity(qis);
        let (mut lift, mut codes) = (Vec::with_capacity(qis), Vec::with_capacity(qis));
        for (a, divisors) in divisors.iter().enumerate() {
            let mut leaves: Vec<i64> = base.iter().map(|(c, _)| c[a]).collect();
            leaves.sort_unstable();
            leaves.dedup();
            leaf.push(
                base.iter().map(|(c, _)| leaves.binary_search(&c[a]).expect("a leaf of the base") as u32).collect(),
            );
            let (mut by_level, mut level_codes) = (Vec::new(), Vec::new());
            for &d in divisors {
                // Codes are mixed-radix: ascending leaves give ascending codes at every level.
                let mut at: Vec<i64> = leaves.iter().map(|&c| c / d).collect();
                at.dedup();
                by_level.push(leaves.iter().map(|&c| at.binary_search(&(c / d)).expect("a code") as u32).collect());
                level_codes.push(at);
            }
            lift.push(by_level);
            codes.push(level_codes);
        }
        let records = base.iter().map(|&(_, n)| n).collect();
        Population { leaf, records, lift, codes, k_map, delta }
    }

    /// The population's records per class (its codes at `levels`).
    pub fn classes_at(&self, levels: &[u8]) -> PopulationClasses<'_> {
        let lifts: Vec<&[u32]> = levels.iter().enumerate().map(|(a, &l)| &self.lift[a][l as usize][..]).collect();
        let radices: Vec<u64> =
            levels.iter().enumerate().map(|(a, &l)| self.codes[a][l as usize].len() as u64).collect();
        let space = radices.iter().try_fold(1u64, |p, &r| p.checked_mul(r));
        let rows = self.records.len();
        // Each combination's key, a QI (a column) at a time.
        let keys = || {
            let mut keys = zeroed(rows);
            for ((lift, leaf), &r) in lifts.iter().zip(&self.leaf).zip(&radices) {
                for (k, &i) in keys.iter_mut().zip(leaf) {
                    *k = *k * r + lift[i as usize] as u64;
                }
            }
            keys
        };
        let records = match space {
            // A direct index when it costs no more than a pass over the combinations.
            Some(space) if space <= (4 * rows as u64).max(1 << 16) => {
                let mut records = zeroed(space as usize);
                let keys = keys();
                for (&k, &n) in keys.iter().zip(&self.records) {
                    records[k as usize] += n;
                }
                give_back(keys);
                Records::Dense(records)
            }
            Some(_) => {
                let mut records: FxHashMap<u64, u64> = FxHashMap::default();
                records.reserve(rows);
                let keys = keys();
                for (&k, &n) in keys.iter().zip(&self.records) {
                    *records.entry(k).or_default() += n;
                }
                give_back(keys);
                Records::Hashed(records)
            }
            None => {
                let mut records: FxHashMap<Box<[u32]>, u64> = FxHashMap::default();
                for (row, &n) in self.records.iter().enumerate() {
                    let values = lifts.iter().zip(&self.leaf).map(|(lift, leaf)| lift[leaf[row] as usize]).collect();
                    *records.entry(values).or_default() += n;
                }
                Records::Listed(records)
            }
        };
        PopulationClasses { population: self, levels: levels.to_vec(), records }
    }

    /// Does a class of `f` source records and `big_f` population records meet
    /// the models (ARX's KMap with a subset and DPresence)?
    pub fn admits(&self, f: u64, big_f: u64) -> bool {
        let k_ok = self.k_map.is_none_or(|k| big_f >= k);
        let delta = if f == 0 { 0.0 } else { f as f64 / big_f as f64 };
        k_ok && self.delta.is_none_or(|(min, max)| delta >= min && delta <= max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(average: Option<f64>, unique: Option<f64>) -> SizeLimits {
        SizeLimits {
            average: average.map(|a| AverageRisk { average: a, highest: None }),
            sample_uniqueness: unique,
            population_uniqueness: None,
            population: 1_000_000,
        }
    }

    #[test]
    fn size_threshold_is_arxs() {
        assert_eq!(size_threshold(0.2), 5);
        assert_eq!(size_threshold(0.1), 10);
        assert_eq!(size_threshold(0.3), 4);
        assert_eq!(size_threshold(1.0), 1);
        // 1/0.33 = 3.03: within 1% of 1/3, so 3.
        assert_eq!(size_threshold(0.33), 4);
    }

    #[test]
    fn prefix_is_the_shortest_that_holds_when_monotone() {
        // 10 singletons, 5 pairs, 2 classes of 10: 40 records, 17 classes.
        let kept = [(1, 10), (2, 5), (10, 2)];
        // Average size at least 5 (risk 0.2): suppress m smallest classes, brute force.
        let l = limits(Some(0.2), None);
        let brute = (0..=17u64)
            .find(|&m| {
                let mut sizes: Vec<u64> = kept.iter().flat_map(|&(s, c)| std::iter::repeat_n(s, c as usize)).collect();
                sizes.drain(..m as usize);
                sizes.is_empty() || (sizes.len() as f64 / sizes.iter().sum::<u64>() as f64) <= 0.2
            })
            .unwrap();
        assert_eq!(suppressed_prefix(&l, &kept, 0, u64::MAX), brute);
        // Sample uniqueness at most 10%: 40 - m records, 10 - m uniques.
        let l = limits(None, Some(0.1));
        let brute = (0..=10u64).find(|&m| (10 - m) as f64 / (40 - m) as f64 <= 0.1).unwrap();
        assert_eq!(suppressed_prefix(&l, &kept, 0, u64::MAX), brute);
        assert_eq!(suppressed_prefix(&limits(Some(1.0), None), &kept, 0, u64::MAX), 0);
        // ARX's abort: the probes take 9 classes (holds), 4 (4 of 36 records unique: not,
        // within a budget of 4), 6 (4 of 34: not, past the budget): the search stops at 6.
        assert_eq!(suppressed_prefix(&limits(None, Some(0.1)), &kept, 0, 4), 6);
        // Within the budget it goes on to the shortest prefix that holds.
        assert_eq!(suppressed_prefix(&limits(None, Some(0.1)), &kept, 0, 10), brute);
    }

    #[test]
    fn derived_k_is_arxs() {
        // ARX 3.9.2 KMap(5, 0.01, population of 30162 / 0.01) on 30162 rows: λ = 0.05.
        let spec = KMapSpec { k: 5, significance: 0.01, estimator: CellEstimator::Poisson };
        let settings = RiskSettings::default();
        // P(X ≤ 0) = 0.951, P(X ≤ 1) = 0.9988 ≥ 0.99: counter 2, k' = 3.
        assert_eq!(derived_k(&spec, 30162, &settings), 3);
        let ztp = KMapSpec { estimator: CellEstimator::ZeroTruncatedPoisson, ..spec };
        // P(1)/P(X>0) = 0.975 < 0.99, + P(2) → 0.9996: counter 3.
        assert_eq!(derived_k(&ztp, 30162, &settings), 3);
    }
}
