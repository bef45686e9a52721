//! Re-identification risk of a release from its class sizes: ARX's sample-based
//! summary (prosecutor, journalist, marketer), sample and population uniqueness
//! (Pitman's, Zayatz's and the SNB model, Dankar et al.'s rule) and the risk
//! distribution, with an SVG chart of the distribution before and after.
//! Pure arithmetic on a histogram; docs/risk.md has the formulas.

mod closed;

use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;

pub use crate::job::RiskSettings;

/// Classes of one size in the sample and in the population: `classes` classes
/// of `sample` records each, each of `population` records in the population
/// (population >= sample; equal when there is no population table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClassSizes {
    pub sample: u64,
    pub population: u64,
    pub classes: u64,
}

/// The risk figures of one table. Shares are of the n kept records.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Risk {
    /// n: the records analysed.
    pub records: u64,
    /// u: their classes.
    pub classes: u64,
    pub prosecutor: Attacker,
    pub journalist: Attacker,
    pub marketer: Marketer,
    /// The share of records in classes of size 1.
    pub sample_uniqueness: f64,
    pub population_uniqueness: PopulationUniqueness,
    /// Records by prosecutor risk 1/f, in ARX's bands (lowest first).
    pub distribution: Vec<Band>,
}

/// A prosecutor's or a journalist's risk (El Emam's rA, rB, rC as in ARX).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Attacker {
    /// The share of records whose risk exceeds the threshold.
    pub records_at_risk: f64,
    /// The highest risk of any record.
    pub highest_risk: f64,
    /// The share of records re-identified on average.
    pub success_rate: f64,
}

/// A marketer's risk: the share of records re-identified on average.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Marketer {
    pub success_rate: f64,
}

/// The share of the population's records that are unique, estimated from the
/// sample's class-size histogram. None where a model has no estimate (its
/// solver does not converge, or the estimate is out of range).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PopulationUniqueness {
    /// N: the population's size the models assume.
    pub population: u64,
    /// n / N.
    pub sampling_fraction: f64,
    pub pitman: Option<f64>,
    pub zayatz: Option<f64>,
    pub snb: Option<f64>,
    /// Dankar et al.'s pick among the three.
    pub dankar: Option<f64>,
    /// The model Dankar's rule used; None when there is nothing to estimate
    /// (no sample uniques: every estimate is 0) or no model has an estimate.
    pub model: Option<Model>,
}

/// A population-uniqueness model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Model {
    Pitman,
    Zayatz,
    Snb,
}

/// The records whose prosecutor risk 1/f is in (low, high] (the first band is [0, high]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Band {
    pub low: f64,
    pub high: f64,
    pub records: u64,
    /// records / n.
    pub share: f64,
}

/// The upper edges of ARX's risk bands (RiskModelSampleRiskDistribution); each
/// band's lower edge is the previous one's upper edge, the first's is 0.
pub const BAND_EDGES: [f64; 24] = [
    1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09, 0.1, 0.125, 0.143, 0.167,
    0.2, 0.25, 0.334, 0.5, 1.0,
];

/// The risk figures of the classes (entries with no classes or no records are
/// ignored; a population size below the sample size counts as the sample size).
pub fn analyse(classes: &[ClassSizes], settings: &RiskSettings) -> Risk {
    // (f, F) -> classes, in order: sums do not depend on the input's order.
    let mut by_sizes: BTreeMap<(u64, u64), u128> = BTreeMap::new();
    for c in classes.iter().filter(|c| c.classes > 0 && c.sample > 0) {
        *by_sizes.entry((c.sample, c.population.max(c.sample))).or_default() += u128::from(c.classes);
    }
    let n: u128 = by_sizes.iter().map(|(&(f, _), &c)| u128::from(f) * c).sum();
    let u: u128 = by_sizes.values().sum();
    let share = |records: u128| if n == 0 { 0.0 } else { records as f64 / n as f64 };
    let tau = settings.threshold;

    // Prosecutor: the sample's class sizes; journalist: the population's.
    let records_where = |at_risk: &dyn Fn(u64, u64) -> bool| -> u128 {
        by_sizes.iter().filter(|(&(f, big_f), _)| at_risk(f, big_f)).map(|(&(f, _), &c)| u128::from(f) * c).sum()
    };
    let min_f = by_sizes.keys().map(|&(f, _)| f).min();
    let min_big_f = by_sizes.keys().map(|&(_, big_f)| big_f).min();
    let highest = |size: Option<u64>| size.map_or(0.0, |s| 1.0 / s as f64);
    let prosecutor = Attacker {
        records_at_risk: share(records_where(&|f, _| 1.0 / f as f64 > tau)),
        highest_risk: highest(min_f),
        success_rate: share(u),
    };
    let population_records: u128 = by_sizes.iter().map(|(&(_, big_f), &c)| u128::from(big_f) * c).sum();
    let matched: f64 = by_sizes.iter().map(|(&(f, big_f), &c)| c as f64 * (f as f64 / big_f as f64)).sum();
    let marketer = Marketer { success_rate: if n == 0 { 0.0 } else { matched / n as f64 } };
    let journalist = Attacker {
        records_at_risk: share(records_where(&|_, big_f| 1.0 / big_f as f64 > tau)),
        highest_risk: highest(min_big_f),
        success_rate: if population_records == 0 {
            0.0
        } else {
            (u as f64 / population_records as f64).max(marketer.success_rate)
        },
    };

    // The sample's histogram: f -> classes.
    let mut histogram: BTreeMap<u64, u128> = BTreeMap::new();
    for (&(f, _), &c) in &by_sizes {
        *histogram.entry(f).or_default() += c;
    }
    let histogram: Vec<(u64, u128)> = histogram.into_iter().collect();
    let uniques = histogram.first().filter(|&&(f, _)| f == 1).map_or(0, |&(_, c)| c);

    let mut distribution: Vec<Band> = BAND_EDGES
        .iter()
        .enumerate()
        .map(|(i, &high)| Band { low: if i == 0 { 0.0 } else { BAND_EDGES[i - 1] }, high, records: 0, share: 0.0 })
        .collect();
    let mut band_records = [0u128; BAND_EDGES.len()];
    for &(f, c) in &histogram {
        let risk = 1.0 / f as f64;
        // The first band whose upper edge is at least the risk (ARX's binary search).
        let band = BAND_EDGES.iter().position(|&high| high >= risk).unwrap_or(BAND_EDGES.len() - 1);
        band_records[band] += u128::from(f) * c;
    }
    for (band, &records) in distribution.iter_mut().zip(&band_records) {
        band.records = saturate(records);
        band.share = share(records);
    }

    Risk {
        records: saturate(n),
        classes: saturate(u),
        prosecutor,
        journalist,
        marketer,
        sample_uniqueness: share(uniques),
        population_uniqueness: population_uniqueness(&histogram, n, settings),
        distribution,
    }
}

fn saturate(x: u128) -> u64 {
    u64::try_from(x).unwrap_or(u64::MAX)
}

/// N: `population` when given (at least n), else n / `sampling_fraction`
/// rounded to a whole number of records as ARX does (ARXPopulationModel).
fn population_size(n: u128, settings: &RiskSettings) -> u128 {
    match settings.population {
        Some(big_n) => u128::from(big_n).max(n),
        None => {
            // Above 1: the sample is the population; 0, negative or NaN: the default.
            let fraction = match settings.sampling_fraction {
                f if f > 1.0 => 1.0,
                f if f > 0.0 => f,
                _ => RiskSettings::default().sampling_fraction,
            };
            // Float to integer casts saturate.
            ((n as f64 / fraction + 0.5).floor() as u128).max(n)
        }
    }
}

/// The three models' estimates and Dankar's pick (ARX's
/// RiskModelPopulationUniqueness): fractions of N.
pub(crate) fn population_uniqueness(
    histogram: &[(u64, u128)],
    n: u128,
    settings: &RiskSettings,
) -> PopulationUniqueness {
    let big_n = population_size(n, settings);
    let sampling_fraction = if big_n == 0 { 0.0 } else { n as f64 / big_n as f64 };
    let c1 = histogram.first().filter(|&&(f, _)| f == 1).map_or(0, |&(_, c)| c);
    let mut figures = PopulationUniqueness {
        population: saturate(big_n),
        sampling_fraction,
        pitman: Some(0.0),
        zayatz: Some(0.0),
        snb: Some(0.0),
        dankar: Some(0.0),
        model: None,
    };
    if c1 == 0 {
        // No sample uniques: nothing to estimate.
        return figures;
    }
    let sample = Sample::new(histogram, n, big_n);
    figures.pitman = sample.share(sample.pitman());
    figures.zayatz = sample.share(sample.zayatz());
    figures.snb = sample.share(sample.snb());
    // Dankar et al.: Pitman up to a sampling fraction of 10%, else the smaller
    // of Zayatz and SNB; as ARX, Zayatz where the chosen model has no estimate.
    let pick = if sampling_fraction <= 0.1 {
        match figures.pitman {
            Some(x) => Some((x, Model::Pitman)),
            None => figures.zayatz.map(|x| (x, Model::Zayatz)),
        }
    } else {
        above_a_tenth(figures.zayatz, figures.snb)
    };
    figures.dankar = pick.map(|(x, _)| x);
    figures.model = pick.map(|(_, m)| m);
    figures
}

/// Dankar et al.'s pick above a sampling fraction of 10%: the smaller of
/// Zayatz and SNB, Zayatz where SNB has none.
fn above_a_tenth(zayatz: Option<f64>, snb: Option<f64>) -> Option<(f64, Model)> {
    match (zayatz, snb) {
        (Some(z), Some(s)) if z < s => Some((z, Model::Zayatz)),
        (_, Some(s)) => Some((s, Model::Snb)),
        (z, None) => z.map(|z| (z, Model::Zayatz)),
    }
}

/// One estimator's share of population uniques, as ARX's PopulationUniqueness
/// criterion reads it (Dankar: Pitman up to 10% without Zayatz in its place):
/// [`population_uniqueness`]'s figure, with only the models it needs solved
/// (a search asks this of every node, several times).
pub(crate) fn unique_share(
    histogram: &[(u64, u128)],
    n: u128,
    settings: &RiskSettings,
    estimator: crate::job::Estimator,
) -> Option<f64> {
    use crate::job::Estimator;
    let big_n = population_size(n, settings);
    if histogram.first().is_none_or(|&(f, c)| f != 1 || c == 0) {
        return Some(0.0);
    }
    let sample = Sample::new(histogram, n, big_n);
    let above = big_n > 0 && n as f64 / big_n as f64 > 0.1;
    match estimator {
        Estimator::Pitman => sample.share(sample.pitman()),
        Estimator::Dankar if !above => sample.share(sample.pitman()),
        Estimator::Zayatz => sample.share(sample.zayatz()),
        Estimator::Snb => sample.share(sample.snb()),
        Estimator::Dankar => above_a_tenth(sample.share(sample.zayatz()), sample.share(sample.snb())).map(|(x, _)| x),
    }
}

/// What the models read from the sample: the class-size histogram, n, N.
struct Sample<'a> {
    histogram: &'a [(u64, u128)],
    n: f64,
    big_n: f64,
    /// n and N as integers (the hypergeometric probabilities).
    n_int: u128,
    big_n_int: u128,
    /// u, c1, c2: the classes, those of size 1, of size 2.
    u: f64,
    c1: f64,
    c2: f64,
}

impl<'a> Sample<'a> {
    /// An estimate of uniques as a fraction of N; ARX counts an estimate of 0 as none.
    fn share(&self, uniques: Option<f64>) -> Option<f64> {
        uniques.filter(|&x| x > 0.0).map(|x| x / self.big_n)
    }

    fn new(histogram: &'a [(u64, u128)], n: u128, big_n: u128) -> Self {
        let count = |size: u64| histogram.iter().find(|&&(f, _)| f == size).map_or(0.0, |&(_, c)| c as f64);
        Sample {
            histogram,
            n: n as f64,
            big_n: big_n as f64,
            n_int: n,
            big_n_int: big_n,
            u: histogram.iter().map(|&(_, c)| c as f64).sum(),
            c1: count(1),
            c2: count(2),
        }
    }

    /// Zayatz (1991): the share of sample uniques that are population uniques
    /// is P(a sample unique comes from a class of size 1), the classes' sizes in
    /// the population taken as their sizes in the sample and the sample drawn
    /// without replacement (hypergeometric); uniques = c1 · that share / (n/N).
    fn zayatz(&self) -> Option<f64> {
        let p = |size: u64| hypergeometric_one(self.big_n_int, u128::from(size), self.n_int);
        let all: f64 = self.histogram.iter().map(|&(f, c)| c as f64 / self.u * p(f)).sum();
        let conditional = (self.c1 / self.u * p(1)) / all;
        let uniques = self.c1 * conditional / (self.n / self.big_n);
        uniques.is_finite().then_some(uniques)
    }

    /// Pitman's sampling formula (Pitman 1996), fitted by maximum likelihood
    /// (Hoshino 2001): θ, α solve ∂L/∂θ = ∂L/∂α = 0 for
    /// L = Σ_{i<u} ln(θ + iα) − Σ_{i<n} ln(θ + i) + Σ_j c_j Σ_{k<j} ln(k − α);
    /// uniques = Γ(θ + 1) / Γ(θ + α) · N^α, an estimate only in [0, N].
    /// ARX's start, solver, tolerance and path: first the closed forms
    /// (`closed`), whose point stands if the exact equations hold there too,
    /// else the exact equations from the same start; θ must stay >= 0.
    fn pitman(&self) -> Option<f64> {
        let (u, n, c1) = (self.u, self.n, self.c1);
        let c2 = if self.c2 == 0.0 { 1.0 } else { self.c2 };
        let c = c1 * (c1 - 1.0) / c2;
        let t = (n * u * c - c1 * (n - 1.0) * (2.0 * u + c)) / (2.0 * c1 * u + c1 * c - n * c);
        let a = (t * (c1 - n) + (n - 1.0) * c1) / (n * u);
        let valid = |t: f64, _: f64| t >= 0.0;
        let closed = newton((t, a), valid, |t, a| closed::pitman_equations(self.histogram, u, n, t, a));
        let holds = |&(t, a): &(f64, f64)| {
            let (f1, f2) = self.pitman_equations(t, a).f;
            f1.abs() <= ACCURACY && f2.abs() <= ACCURACY
        };
        let (t, a) = match closed.filter(holds) {
            Some(point) => point,
            None => newton((t, a), valid, |t, a| self.pitman_equations(t, a))?,
        };
        if a == 0.0 || t + a <= 0.0 {
            return None;
        }
        let uniques = (ln_gamma(t + 1.0) - ln_gamma(t + a)).exp() * self.big_n.powf(a);
        (uniques >= 0.0 && uniques <= self.big_n).then_some(uniques)
    }

    /// ∂L/∂θ, ∂L/∂α and their Jacobian.
    fn pitman_equations(&self, t: f64, a: f64) -> Equations {
        // Σ 1/(t+ia), Σ i/(t+ia), Σ 1/(t+ia)², Σ i/(t+ia)², Σ i²/(t+ia)² over i = 1 .. u−1.
        let m = self.u as u64 - 1;
        let (s1, s3, d1, d5, d3) = if m <= DIRECT {
            let mut sums = (0.0, 0.0, 0.0, 0.0, 0.0);
            // ARX's expressions, term by term (the same roundings as its solver's).
            for i in 1..=m {
                let i = i as f64;
                let v = t + i * a;
                let r = 1.0 / v;
                let r2 = 1.0 / (v * v);
                sums.0 += r;
                sums.1 += i * r;
                sums.2 += r2;
                sums.3 += i * r2;
                sums.4 += i * (i * r2);
            }
            sums
        } else if t.abs() > 1000.0 * m as f64 * a.abs() {
            // |ia/t| < 1e-3: 1/(t+ia) = (1/t) Σ_k (−ia/t)^k, by power sums
            // (to k = 6: the rest is below 1e-21 of the sum).
            let (e, p) = (-a / t, power_sums(m as f64));
            let mut sums = (0.0, 0.0, 0.0, 0.0, 0.0);
            let mut ek = 1.0;
            for k in 0..7 {
                let w = (k + 1) as f64 * ek;
                sums.0 += ek * p[k];
                sums.1 += ek * p[k + 1];
                sums.2 += w * p[k];
                sums.3 += w * p[k + 1];
                sums.4 += w * p[k + 2];
                ek *= e;
            }
            let t2 = t * t;
            (sums.0 / t, sums.1 / t, sums.2 / t2, sums.3 / t2, sums.4 / t2)
        } else {
            // t + ia = a (x + i): sums over 1/(x+i) and 1/(x+i)², i = 1..m.
            let x = t / a;
            let (r1, r2) = (recip_sum(x + 1.0, m), recip_square_sum(x + 1.0, m));
            let m = m as f64;
            (r1 / a, (m - x * r1) / a, r2 / (a * a), (r1 - x * r2) / (a * a), (m - 2.0 * x * r1 + x * x * r2) / (a * a))
        };
        // Σ_j c_j Σ_{k<j} 1/(k − α) and the squares.
        // Up to DIRECT terms the sums are running ones over the ascending
        // sizes, the same additions in the same order as each sum's own.
        let (mut o4, mut d4) = (0.0, 0.0);
        let (mut run, mut run_squares, mut terms) = (0.0f64, 0.0f64, 0u64);
        for &(size, count) in self.histogram.iter().filter(|&&(f, _)| f > 1) {
            let m = size - 1;
            let (r1, r2) = if m <= DIRECT && m >= terms {
                while terms < m {
                    let v = (terms + 1) as f64 - a;
                    run += 1.0 / v;
                    run_squares += 1.0 / (v * v);
                    terms += 1;
                }
                (run, run_squares)
            } else {
                (recip_sum(1.0 - a, m), recip_square_sum(1.0 - a, m))
            };
            o4 += count as f64 * r1;
            d4 += count as f64 * r2;
        }
        let n = self.n_int.min(u128::from(u64::MAX)) as u64;
        let (o2, d2) = if n - 1 <= DIRECT {
            (1..n).map(|i| t + i as f64).fold((0.0, 0.0), |(o, d), v| (o + 1.0 / v, d + 1.0 / (v * v)))
        } else {
            (recip_sum(t + 1.0, n - 1), recip_square_sum(t + 1.0, n - 1))
        };
        Equations { f: (s1 - o2, s3 - o4), jacobian: ((d2 - d1, -d5), (-d5, -d3 - d4)) }
    }

    /// The shifted negative binomial model (Chen & McNulty 1998): a
    /// population class holds 1 + NB(α, β) records and each record is sampled
    /// with probability f = n/N. α, β solve E[c1] = c1 and E[c2] = c2 for K
    /// population classes, K being Shlosser's estimate (Haas et al. 1995):
    /// K f (β/L)^α (1 + α d/L) = c1 and
    /// K α β^α f² (1−β) (2 − (1−α) d) / (2 L^(α+2)) = c2,
    /// d = (1−f)(1−β), L = 1 − d; uniques = K β^α, an estimate only in (0, N].
    /// ARX's solver and tolerance, from (1, 1).
    fn snb(&self) -> Option<f64> {
        let f = self.n / self.big_n;
        let k = self.shlosser(f);
        let (a, b) = newton((1.0, 1.0), |_, _| true, |a, b| self.snb_equations(k, f, a, b))?;
        let uniques = k * b.powf(a);
        (uniques.is_finite() && uniques > 0.0 && uniques <= self.big_n).then_some(uniques)
    }

    /// The SNB equations E[c1] − c1, E[c2] − c2 at (α, β) and their Jacobian.
    fn snb_equations(&self, k: f64, f: f64, a: f64, b: f64) -> Equations {
        let (c1, c2) = (self.c1, self.c2);
        let d = (1.0 - f) * (1.0 - b);
        let l = 1.0 - d;
        // F1 = K f g h − c1, g = (β/L)^α, h = 1 + α d / L.
        let g = (b / l).powf(a);
        let h = 1.0 + a * d / l;
        let g_a = g * (b / l).ln();
        let g_b = a * g * (1.0 / b - (1.0 - f) / l);
        let h_a = d / l;
        let h_b = -a * (1.0 - f) / (l * l);
        // F2 = K f²/2 · P − c2, P = α β^α (1−β) w L^−(α+2), w = 2 − (1−α) d.
        let w = 2.0 - (1.0 - a) * d;
        let ba = b.powf(a);
        let la = l.powf(-(a + 2.0));
        let p = a * ba * (1.0 - b) * w * la;
        let p_a = ba * (1.0 - b) * la * (w * (1.0 + a * b.ln() - a * l.ln()) + a * d);
        let p_b = a * w * la * (a * b.powf(a - 1.0) * (1.0 - b) - ba) + a * ba * (1.0 - b) * la * (1.0 - a) * (1.0 - f)
            - (a + 2.0) * (1.0 - f) / l * p;
        let (kf, kf2) = (k * f, k * f * f / 2.0);
        Equations {
            f: (kf * g * h - c1, kf2 * p - c2),
            jacobian: ((kf * (g_a * h + g * h_a), kf * (g_b * h + g * h_b)), (kf2 * p_a, kf2 * p_b)),
        }
    }

    /// Shlosser's estimator of the number of population classes, in Haas et
    /// al.'s form: u + c1 · Σ i f² (1−f²)^(i−1) c_i / Σ ((1−f²)^i − (1−f)^i) c_i
    /// · (Σ (1−f)^i c_i / Σ i f (1−f)^(i−1) c_i)²  (u when f = 1).
    fn shlosser(&self, f: f64) -> f64 {
        let (mut v1, mut v2, mut v3, mut v4) = (0.0, 0.0, 0.0, 0.0);
        let (q, q2) = (1.0 - f, 1.0 - f * f);
        for &(size, count) in self.histogram {
            let (i, c) = (size as f64, count as f64);
            v1 += i * f * f * q2.powf(i - 1.0) * c;
            v2 += (q2.powf(i) - q.powf(i)) * c;
            v3 += q.powf(i) * c;
            v4 += i * f * q.powf(i - 1.0) * c;
        }
        if v2 > 0.0 && v4 > 0.0 {
            self.u + self.c1 * (v1 / v2) * (v3 / v4) * (v3 / v4)
        } else {
            self.u
        }
    }
}

/// Sums of up to this many terms are added up term by term; longer ones in
/// closed form (digamma, trigamma, power sums).
const DIRECT: u64 = 10_000;

/// Σ_{i=0}^{m−1} 1/(x+i) = ψ(x+m) − ψ(x) (terms all negative: minus the
/// same sum over their absolute values; x >= m: the difference of the
/// asymptotic series term by term, the logarithms by ln(1 + m/x)).
fn recip_sum(x: f64, m: u64) -> f64 {
    let (mf, last) = (m as f64, x + (m as f64 - 1.0));
    if m <= DIRECT {
        (0..m).map(|i| 1.0 / (x + i as f64)).sum()
    } else if last < 0.0 {
        -recip_sum(-last, m)
    } else if x >= mf {
        let y = x + mf;
        let (x2, y2) = (x * x, y * y);
        (mf / x).ln_1p() + mf / (2.0 * x * y) + mf * (x + y) / (12.0 * x2 * y2)
            - mf * (x + y) * (x2 + y2) / (120.0 * x2 * x2 * y2 * y2)
    } else {
        digamma(x + mf) - digamma(x)
    }
}

/// Σ_{i=0}^{m−1} 1/(x+i)² = ψ'(x) − ψ'(x+m), likewise.
fn recip_square_sum(x: f64, m: u64) -> f64 {
    let (mf, last) = (m as f64, x + (m as f64 - 1.0));
    if m <= DIRECT {
        (0..m).map(|i| 1.0 / ((x + i as f64) * (x + i as f64))).sum()
    } else if last < 0.0 {
        recip_square_sum(-last, m)
    } else if x >= mf {
        let y = x + mf;
        let (x2, y2) = (x * x, y * y);
        mf / (x * y) + mf * (x + y) / (2.0 * x2 * y2) + mf * (x2 + x * y + y2) / (6.0 * x2 * x * y2 * y)
            - (1.0 / (x2 * x2 * x) - 1.0 / (y2 * y2 * y)) / 30.0
    } else {
        trigamma(x) - trigamma(x + mf)
    }
}

/// Σ_{i=1}^{m} i^k for k = 0..8 (Faulhaber).
fn power_sums(m: f64) -> [f64; 9] {
    let (m2, m3, m4) = (m * m, m * m * m, m * m * m * m);
    let (a, b) = (m * (m + 1.0), m * (m + 1.0) * (2.0 * m + 1.0));
    [
        m,
        a / 2.0,
        b / 6.0,
        a * a / 4.0,
        b * (3.0 * m2 + 3.0 * m - 1.0) / 30.0,
        a * a * (2.0 * m2 + 2.0 * m - 1.0) / 12.0,
        b * (3.0 * m4 + 6.0 * m3 - 3.0 * m + 1.0) / 42.0,
        a * a * (3.0 * m4 + 6.0 * m3 - m2 - 4.0 * m + 2.0) / 24.0,
        b * (5.0 * m4 * m2 + 15.0 * m4 * m + 5.0 * m4 - 15.0 * m3 - m2 + 9.0 * m - 3.0) / 90.0,
    ]
}

/// Two equations at a point and their Jacobian ((∂f1/∂x, ∂f1/∂y), (∂f2/∂x, ∂f2/∂y)).
struct Equations {
    f: (f64, f64),
    jacobian: ((f64, f64), (f64, f64)),
}

/// ARX's solver settings (ARXSolverConfiguration): both equations within
/// 1e-6 of 0; at most 1,000 steps per try and 10,000 evaluations in all.
const ACCURACY: f64 = 1e-6;
const STEPS_PER_TRY: u32 = 1000;
const EVALUATIONS: u32 = 10_000;

/// ARX's deterministic restarts after the first try: (x, y) for x, y in 0, 0.33, 0.66, 0.99.
fn restarts() -> impl Iterator<Item = (f64, f64)> {
    let steps = [0.0, 0.33, 0.33 + 0.33, 0.33 + 0.33 + 0.33];
    steps.into_iter().flat_map(move |x| steps.into_iter().map(move |y| (x, y)))
}

/// Newton–Raphson in two dimensions as ARX runs it (the linearbits solver): a
/// try from `start`, then one from each restart; a try ends when a step leaves
/// `valid`, gives NaN or runs out of steps. As there, a try from the last
/// restart only tests its start. No time limits (ARX's 100 ms a try, 1 s in
/// all), so the answer does not depend on the machine.
fn newton(
    start: (f64, f64),
    valid: impl Fn(f64, f64) -> bool,
    equations: impl Fn(f64, f64) -> Equations,
) -> Option<(f64, f64)> {
    let restarts: Vec<(f64, f64)> = restarts().collect();
    let mut next_restart = 0;
    let mut evaluations = 0;
    let mut first = true;
    'tries: while evaluations <= EVALUATIONS {
        let (mut x, mut y) = if first {
            first = false;
            start
        } else {
            next_restart += 1;
            restarts[next_restart - 1]
        };
        let mut steps = 0;
        loop {
            evaluations += 1;
            let Equations { f: (f1, f2), jacobian: ((a, b), (c, d)) } = equations(x, y);
            if f1.abs() <= ACCURACY && f2.abs() <= ACCURACY {
                return Some((x, y));
            }
            // x −= J⁻¹ f.
            let scalar = 1.0 / (a * d - b * c);
            let (i11, i12, i21, i22) = (d * scalar, -b * scalar, -c * scalar, a * scalar);
            x -= i11 * f1 + i12 * f2;
            y -= i21 * f1 + i22 * f2;
            if next_restart == restarts.len() {
                break 'tries;
            }
            if !valid(x, y) || x.is_nan() || y.is_nan() || steps >= STEPS_PER_TRY {
                continue 'tries;
            }
            steps += 1;
        }
    }
    None
}

/// P(X = 1) for X hypergeometric: one of `m` marked records among n drawn
/// without replacement from N, by Loader's saddle-point binomials (as Apache
/// Commons Math, which ARX uses).
fn hypergeometric_one(big_n: u128, m: u128, n: u128) -> f64 {
    if m == 0 || n == 0 || m > big_n || n > big_n || n - 1 > big_n - m {
        return 0.0;
    }
    if n == big_n {
        return if m == 1 { 1.0 } else { 0.0 };
    }
    let (big_nf, nf, mf) = (big_n as f64, n as f64, m as f64);
    let p = nf / big_nf;
    let q = (big_nf - nf) / big_nf;
    (log_binomial(1.0, mf, p, q) + log_binomial(nf - 1.0, big_nf - mf, p, q) - log_binomial(nf, big_nf, p, q)).exp()
}

/// ln of the binomial probability of x successes in `size` trials (Loader 2000).
fn log_binomial(x: f64, size: f64, p: f64, q: f64) -> f64 {
    if size == 0.0 {
        return if x == 0.0 { 0.0 } else { f64::NEG_INFINITY };
    }
    if x == 0.0 {
        return if p < 0.1 { -deviance(size, size * q) - size * p } else { size * q.ln() };
    }
    if x == size {
        return if q < 0.1 { -deviance(size, size * p) - size * q } else { size * p.ln() };
    }
    stirling_error(size)
        - stirling_error(x)
        - stirling_error(size - x)
        - deviance(x, size * p)
        - deviance(size - x, size * q)
        - 0.5 * (std::f64::consts::TAU * x * (size - x) / size).ln()
}

/// ln(n!) − ln(√(2πn) (n/e)^n) for a whole n >= 1.
fn stirling_error(n: f64) -> f64 {
    if n <= 15.0 {
        let log_factorial = (2..=n as u64).map(|k| k as f64).product::<f64>().ln();
        return log_factorial - (n + 0.5) * n.ln() + n - 0.5 * std::f64::consts::TAU.ln();
    }
    let nn = n * n;
    let (s0, s1, s2, s3, s4) = (1.0 / 12.0, 1.0 / 360.0, 1.0 / 1260.0, 1.0 / 1680.0, 1.0 / 1188.0);
    if n > 500.0 {
        (s0 - s1 / nn) / n
    } else if n > 80.0 {
        (s0 - (s1 - s2 / nn) / nn) / n
    } else if n > 35.0 {
        (s0 - (s1 - (s2 - s3 / nn) / nn) / nn) / n
    } else {
        (s0 - (s1 - (s2 - (s3 - s4 / nn) / nn) / nn) / nn) / n
    }
}

/// x ln(x/m) + m − x, accurately when x is near m (Loader's bd0).
fn deviance(x: f64, m: f64) -> f64 {
    if (x - m).abs() < 0.1 * (x + m) {
        let v = (x - m) / (x + m);
        let mut s = (x - m) * v;
        let mut term = 2.0 * x * v;
        let v2 = v * v;
        for j in 1..1000 {
            term *= v2;
            let next = s + term / f64::from(2 * j + 1);
            if next == s {
                break;
            }
            s = next;
        }
        s
    } else {
        x * (x / m).ln() + m - x
    }
}

/// ψ(x), the digamma function: the recurrence up to x >= 10, then the
/// asymptotic series; the reflection formula below 0.
fn digamma(x: f64) -> f64 {
    if !x.is_finite() || (x <= 0.0 && x == x.floor()) {
        return f64::NAN;
    }
    if x < 0.0 {
        return digamma(1.0 - x) - std::f64::consts::PI / (std::f64::consts::PI * x).tan();
    }
    let (mut x, mut result) = (x, 0.0);
    while x < 10.0 {
        result -= 1.0 / x;
        x += 1.0;
    }
    let r = 1.0 / (x * x);
    let series = r
        * (1.0 / 12.0
            - r * (1.0 / 120.0
                - r * (1.0 / 252.0 - r * (1.0 / 240.0 - r * (1.0 / 132.0 - r * (691.0 / 32760.0 - r / 12.0))))));
    result + x.ln() - 0.5 / x - series
}

/// ψ'(x), the trigamma function, likewise.
fn trigamma(x: f64) -> f64 {
    if !x.is_finite() || (x <= 0.0 && x == x.floor()) {
        return f64::NAN;
    }
    if x < 0.0 {
        let s = std::f64::consts::PI / (std::f64::consts::PI * x).sin();
        return -trigamma(1.0 - x) + s * s;
    }
    let (mut x, mut result) = (x, 0.0);
    while x < 10.0 {
        result += 1.0 / (x * x);
        x += 1.0;
    }
    let r = 1.0 / (x * x);
    let series = 1.0
        + r * (1.0 / 6.0
            - r * (1.0 / 30.0
                - r * (1.0 / 42.0 - r * (1.0 / 30.0 - r * (5.0 / 66.0 - r * (691.0 / 2730.0 - r * 7.0 / 6.0))))));
    result + 0.5 * r + series / x
}

/// ln Γ(x) for x > 0: the recurrence up to x >= 10, then Stirling's series.
fn ln_gamma(x: f64) -> f64 {
    if x.is_nan() || x <= 0.0 {
        return f64::NAN;
    }
    let (mut x, mut product) = (x, 1.0);
    while x < 10.0 {
        product *= x;
        x += 1.0;
    }
    let r = 1.0 / (x * x);
    let series = (1.0 / 12.0
        - r * (1.0 / 360.0
            - r * (1.0 / 1260.0 - r * (1.0 / 1680.0 - r * (1.0 / 1188.0 - r * (691.0 / 360360.0 - r / 156.0))))))
        / x;
    (x - 0.5) * x.ln() - x + 0.5 * std::f64::consts::TAU.ln() + series - product.ln()
}

/// ARX's risk-distribution chart for two tables side by side: per band, a bar
/// for the source and one for the release (share of records, horizontal), with
/// the band labels, a share axis and a legend. Plain SVG, deterministic.
pub fn distribution_svg(before: &Risk, after: &Risk) -> String {
    const SOURCE: &str = "#9e9e9e";
    const RELEASE: &str = "#1f77b4";
    let bands = BAND_EDGES.len();
    let (left, top, plot_width, row) = (190.0, 70.0, 560.0, 24.0);
    let plot_height = row * bands as f64;
    let (width, height) = (left + plot_width + 90.0, top + plot_height + 60.0);
    // The share axis: up to the largest share, in steps of 5, 10, 20 or 25%.
    let largest = before.distribution.iter().chain(&after.distribution).map(|b| b.share).fold(0.0, f64::max);
    let step = [0.05, 0.1, 0.2, 0.25].into_iter().find(|&s| largest <= 5.0 * s).unwrap_or(0.25);
    let ticks = ((largest / step).ceil() as usize).clamp(1, (1.0 / step).round() as usize);
    let axis_max = step * ticks as f64;
    let x_of = |share: f64| left + plot_width * share / axis_max;

    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(svg, r#"<rect width="{width}" height="{height}" fill="white"/>"#);
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="28" font-size="16" text-anchor="middle">Records by re-identification risk (prosecutor, 1/class size)</text>"#,
        width / 2.0
    );
    // Legend.
    for (i, (name, colour)) in [("source", SOURCE), ("release", RELEASE)].into_iter().enumerate() {
        let x = left + 140.0 * i as f64;
        let _ = writeln!(svg, r#"<rect x="{x}" y="40" width="14" height="14" fill="{colour}"/>"#);
        let _ = writeln!(svg, r#"<text x="{}" y="52">{name}</text>"#, x + 20.0);
    }
    // Grid and share axis.
    for tick in 0..=ticks {
        let share = step * tick as f64;
        let x = x_of(share);
        let _ = writeln!(
            svg,
            r##"<line x1="{x:.1}" y1="{top}" x2="{x:.1}" y2="{}" stroke="#dddddd"/>"##,
            top + plot_height
        );
        let _ = writeln!(
            svg,
            r#"<text x="{x:.1}" y="{}" text-anchor="middle">{}%</text>"#,
            top + plot_height + 16.0,
            percent(share)
        );
    }
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="{}" text-anchor="middle">share of records</text>"#,
        left + plot_width / 2.0,
        top + plot_height + 40.0
    );
    let _ = writeln!(
        svg,
        r#"<text x="16" y="{}" text-anchor="middle" transform="rotate(-90 16 {})">risk band</text>"#,
        top + plot_height / 2.0,
        top + plot_height / 2.0
    );
    // Bands, the highest risk on top.
    for (slot, band) in (0..bands).rev().enumerate() {
        let y = top + row * slot as f64;
        let (low, high) = (if band == 0 { 0.0 } else { BAND_EDGES[band - 1] }, BAND_EDGES[band]);
        let open = if band == 0 { "[" } else { "(" };
        let _ = writeln!(
            svg,
            r#"<text x="{}" y="{:.1}" text-anchor="end">{open}{}%, {}%]</text>"#,
            left - 8.0,
            y + row / 2.0 + 4.0,
            percent(low),
            percent(high)
        );
        for (i, (risk, colour)) in [(before, SOURCE), (after, RELEASE)].into_iter().enumerate() {
            let share = risk.distribution.get(band).map_or(0.0, |b| b.share);
            let bar_y = y + 2.0 + 10.0 * i as f64;
            let bar_width = x_of(share) - left;
            let _ = writeln!(
                svg,
                r#"<rect x="{left}" y="{bar_y:.1}" width="{bar_width:.2}" height="10" fill="{colour}"><title>{}: {:.2}%</title></rect>"#,
                ["source", "release"][i],
                100.0 * share
            );
            if share > 0.0 {
                let _ = writeln!(
                    svg,
                    r#"<text x="{:.1}" y="{:.1}" font-size="9">{:.1}%</text>"#,
                    left + bar_width + 4.0,
                    bar_y + 8.5,
                    100.0 * share
                );
            }
        }
    }
    let _ = writeln!(svg, r#"<line x1="{left}" y1="{top}" x2="{left}" y2="{}" stroke="black"/>"#, top + plot_height);
    svg.push_str("</svg>\n");
    svg
}

/// A band edge or an axis tick as a percentage: up to 6 decimals, no trailing zeros.
fn percent(share: f64) -> String {
    let text = format!("{:.6}", share * 100.0);
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text.is_empty() {
        "0".to_string()
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::f64::consts::PI;

    fn near(what: &str, actual: f64, expected: f64, tolerance: f64) {
        assert!(
            (actual - expected).abs() <= tolerance * expected.abs().max(f64::MIN_POSITIVE),
            "{what}: {actual} against {expected}"
        );
    }

    #[test]
    fn one_estimator_is_the_figure_of_all_of_them() {
        use crate::job::Estimator;
        let histograms: [&[(u64, u128)]; 3] =
            [&[(1, 120), (2, 40), (3, 22), (7, 5)], &[(2, 10), (5, 4)], &[(1, 3), (4, 900), (30, 2)]];
        for histogram in histograms {
            let n: u128 = histogram.iter().map(|&(f, c)| f as u128 * c).sum();
            for fraction in [0.01, 0.3] {
                let settings = RiskSettings { sampling_fraction: fraction, ..RiskSettings::default() };
                let all = population_uniqueness(histogram, n, &settings);
                let dankar = if fraction <= 0.1 { all.pitman } else { all.dankar };
                for (e, want) in [
                    (Estimator::Pitman, all.pitman),
                    (Estimator::Zayatz, all.zayatz),
                    (Estimator::Snb, all.snb),
                    (Estimator::Dankar, dankar),
                ] {
                    assert_eq!(unique_share(histogram, n, &settings, e), want, "{histogram:?} at {fraction}: {e:?}");
                }
            }
        }
    }

    fn sizes(histogram: &[(u64, u64)]) -> Vec<ClassSizes> {
        histogram.iter().map(|&(sample, classes)| ClassSizes { sample, population: sample, classes }).collect()
    }

    /// fixtures/risk/sample.csv's histogram.
    const FIXTURE: [(u64, u128); 7] = [(1, 22), (2, 4), (3, 4), (4, 1), (5, 2), (7, 1), (10, 2)];

    /// By hand: f = 1, 1, 2, 3, 5 (n = 12, u = 5) with F = 1, 4, 2, 6, 5.
    #[test]
    fn a_tiny_table_by_hand() {
        let classes: Vec<ClassSizes> = [(1, 1), (1, 4), (2, 2), (3, 6), (5, 5)]
            .iter()
            .map(|&(sample, population)| ClassSizes { sample, population, classes: 1 })
            .collect();
        let risk = analyse(&classes, &RiskSettings::default());
        assert_eq!((risk.records, risk.classes), (12, 5));
        // 1/f > 0.2 for f = 1, 1, 2, 3: 7 records; the smallest class has 1; 5 classes.
        assert_eq!(
            risk.prosecutor,
            Attacker { records_at_risk: 7.0 / 12.0, highest_risk: 1.0, success_rate: 5.0 / 12.0 }
        );
        // 1/F > 0.2 for F = 1, 4, 2: 1 + 1 + 2 records; the smallest F is 1;
        // max(5/18, (1 + 1/4 + 1 + 1/2 + 1)/12 = 0.3125).
        assert_eq!(risk.journalist, Attacker { records_at_risk: 4.0 / 12.0, highest_risk: 1.0, success_rate: 0.3125 });
        assert_eq!(risk.marketer.success_rate, 0.3125);
        assert_eq!(risk.sample_uniqueness, 2.0 / 12.0);
        let records: Vec<(f64, u64)> =
            risk.distribution.iter().filter(|b| b.records > 0).map(|b| (b.high, b.records)).collect();
        assert_eq!(records, [(0.2, 5), (0.334, 3), (0.5, 2), (1.0, 2)]);
        // N = 12 / 0.01 = 1200; Zayatz with P_i = P(X = 1), X ~ H(1200, i, 12).
        let pu = risk.population_uniqueness;
        assert_eq!((pu.population, pu.sampling_fraction), (1200, 0.01));
        let p =
            |i: u64| (1..i).fold(i as f64 * 12.0 / 1200.0, |p, k| p * (1188.0 - k as f64 + 1.0) / (1200.0 - k as f64));
        let share = 2.0 * p(1) / (2.0 * p(1) + p(2) + p(3) + p(5));
        near("zayatz", pu.zayatz.unwrap(), 2.0 * share / 12.0, 1e-12);
    }

    #[test]
    fn special_functions() {
        let euler = 0.577_215_664_901_532_9;
        near("ψ(1)", digamma(1.0), -euler, 1e-15);
        near("ψ(1/2)", digamma(0.5), -euler - 2.0 * 2f64.ln(), 1e-15);
        near("ψ(−1/2)", digamma(-0.5), 2.0 - euler - 2.0 * 2f64.ln(), 1e-13);
        let harmonic = |m: u64| (1..=m).map(|k| 1.0 / k as f64).sum::<f64>();
        near("ψ(100)", digamma(100.0), harmonic(99) - euler, 1e-15);
        near("ψ(1e7)", digamma(1e7), 1e7f64.ln() - 0.5e-7 - 1.0 / 12e14, 1e-15);
        near("ψ'(1)", trigamma(1.0), PI * PI / 6.0, 1e-15);
        near("ψ'(1/2)", trigamma(0.5), PI * PI / 2.0, 1e-15);
        let squares = (1..20).map(|k| 1.0 / (k * k) as f64).sum::<f64>();
        near("ψ'(20)", trigamma(20.0), PI * PI / 6.0 - squares, 1e-13);
        near("ψ'(−1/2)", trigamma(-0.5), PI * PI / 2.0 + 4.0, 1e-13);
        near("ln Γ(1/2)", ln_gamma(0.5), 0.5 * PI.ln(), 1e-14);
        near("ln Γ(10)", ln_gamma(10.0), 362_880f64.ln(), 1e-14);
        for x in [0.01, 0.7, 3.7, 25.3, 1e5] {
            near(&format!("ln Γ({x} + 1) − ln Γ({x})"), ln_gamma(x + 1.0) - ln_gamma(x), x.ln(), 1e-10);
        }
        assert!(digamma(0.0).is_nan() && digamma(-2.0).is_nan() && ln_gamma(0.0).is_nan());
    }

    #[test]
    fn long_sums_by_digamma() {
        let m = 3 * DIRECT;
        for x in [0.3, 7.5, 1234.5, -0.6, -40_000.0, -40_000.5] {
            let direct: f64 = (0..m).map(|i| 1.0 / (x + i as f64)).sum();
            let squares: f64 = (0..m).map(|i| 1.0 / ((x + i as f64) * (x + i as f64))).sum();
            near(&format!("Σ 1/({x}+i)"), recip_sum(x, m), direct, 1e-12);
            near(&format!("Σ 1/({x}+i)²"), recip_square_sum(x, m), squares, 1e-12);
        }
    }

    #[test]
    fn power_sums_and_long_sums_far_out() {
        for m in [1u64, 2, 7, 50] {
            let p = power_sums(m as f64);
            for (k, &sum) in p.iter().enumerate() {
                near(&format!("Σ i^{k}, m = {m}"), sum, (1..=m).map(|i| (i as f64).powi(k as i32)).sum(), 1e-13);
            }
        }
        let m = 2 * DIRECT;
        for x in [m as f64, 3e5, 1e9, 1e14] {
            let direct: f64 = (0..m).map(|i| 1.0 / (x + i as f64)).sum();
            let squares: f64 = (0..m).map(|i| 1.0 / ((x + i as f64) * (x + i as f64))).sum();
            near(&format!("Σ 1/({x}+i)"), recip_sum(x, m), direct, 1e-13);
            near(&format!("Σ 1/({x}+i)²"), recip_square_sum(x, m), squares, 1e-13);
        }
    }

    #[test]
    fn hypergeometric_against_exact() {
        // P(X = 1) = m · C(N−m, n−1) / C(N, n) = m n/N · Π_{k=1}^{m−1} (N−n−k+1)/(N−k).
        let exact = |big_n: u128, m: u128, n: u128| {
            if n - 1 > big_n - m {
                return 0.0;
            }
            let (big_nf, nf) = (big_n as f64, n as f64);
            (1..m).fold(m as f64 * nf / big_nf, |p, k| p * (big_nf - nf - k as f64 + 1.0) / (big_nf - k as f64))
        };
        for (big_n, m, n) in [
            (72, 1, 18),
            (72, 5, 18),
            (8300, 10, 83),
            (277, 10, 83),
            (20, 1, 20),
            (20, 3, 20),
            (10, 9, 5),
            (1e6 as u128, 7, 500),
        ] {
            near(&format!("P(X = 1 | {big_n}, {m}, {n})"), hypergeometric_one(big_n, m, n), exact(big_n, m, n), 1e-12);
        }
        assert_eq!(hypergeometric_one(10, 9, 5), 0.0);
    }

    /// Central differences of the equations against the analytic Jacobian.
    fn check_jacobian(what: &str, equations: impl Fn(f64, f64) -> Equations, x: f64, y: f64) {
        let Equations { jacobian: ((a, b), (c, d)), .. } = equations(x, y);
        let (hx, hy) = (1e-5 * x.abs().max(1.0), 1e-5 * y.abs().max(1.0));
        let (px, mx) = (equations(x + hx, y).f, equations(x - hx, y).f);
        let (py, my) = (equations(x, y + hy).f, equations(x, y - hy).f);
        near(&format!("{what} ∂f1/∂x"), a, (px.0 - mx.0) / (2.0 * hx), 1e-6);
        near(&format!("{what} ∂f1/∂y"), b, (py.0 - my.0) / (2.0 * hy), 1e-6);
        near(&format!("{what} ∂f2/∂x"), c, (px.1 - mx.1) / (2.0 * hx), 1e-6);
        near(&format!("{what} ∂f2/∂y"), d, (py.1 - my.1) / (2.0 * hy), 1e-6);
    }

    #[test]
    fn jacobians() {
        let sample = Sample::new(&FIXTURE, 83, 277);
        for (t, a) in [(5.0, 0.3), (13.8, -0.3), (40.0, 0.9)] {
            check_jacobian("pitman", |t, a| sample.pitman_equations(t, a), t, a);
        }
        let (f, k) = (83.0 / 277.0, sample.shlosser(83.0 / 277.0));
        for (a, b) in [(0.47, 0.18), (1.5, 0.6), (0.2, 0.05)] {
            check_jacobian("snb", |a, b| sample.snb_equations(k, f, a, b), a, b);
        }
        // Past the direct sums: the closed forms.
        let big: Vec<(u64, u128)> = vec![(1, 30_000), (2, 4_000), (3, 500), (20_000, 1)];
        let n: u128 = big.iter().map(|&(f, c)| u128::from(f) * c).sum();
        let sample = Sample::new(&big, n, 100 * n);
        check_jacobian("pitman, long sums", |t, a| sample.pitman_equations(t, a), 9000.0, 0.4);
        check_jacobian("pitman, long sums, α < 0", |t, a| sample.pitman_equations(t, a), 90_000.0, -0.4);
        // θ, α far apart (α = 0 too): the sums by power series and by ln(1 + m/x), against direct sums.
        let u = big.iter().map(|&(_, c)| c as u64).sum::<u64>();
        for (t, a) in [(9e5, 0.0), (9e5, 1e-3), (9e5, -1e-3), (2e9, 0.7), (3e4, 0.05)] {
            let Equations { f: (f1, f2), jacobian: ((j11, j12), (_, j22)) } = sample.pitman_equations(t, a);
            let s = |p: i32, q: i32| (1..u).map(|i| (i as f64).powi(p) / (t + i as f64 * a).powi(q)).sum::<f64>();
            let o2: f64 = (1..n as u64).map(|i| 1.0 / (t + i as f64)).sum();
            let d2: f64 = (1..n as u64).map(|i| 1.0 / ((t + i as f64) * (t + i as f64))).sum();
            let o4: f64 = big.iter().map(|&(j, c)| c as f64 * (1..j).map(|k| 1.0 / (k as f64 - a)).sum::<f64>()).sum();
            let d4: f64 =
                big.iter().map(|&(j, c)| c as f64 * (1..j).map(|k| 1.0 / (k as f64 - a).powi(2)).sum::<f64>()).sum();
            near(&format!("∂L/∂θ at {t} {a}"), f1, s(0, 1) - o2, 1e-9);
            near(&format!("∂L/∂α at {t} {a}"), f2, s(1, 1) - o4, 1e-9);
            near(&format!("∂²L/∂θ² at {t} {a}"), j11, d2 - s(0, 2), 1e-7);
            near(&format!("∂²L/∂θ∂α at {t} {a}"), j12, -s(1, 2), 1e-9);
            near(&format!("∂²L/∂α² at {t} {a}"), j22, -s(2, 2) - d4, 1e-9);
        }
    }

    /// SNB: E[c1]/K and E[c2]/K in closed form against the series over the
    /// population class size F = 1 + NB(α, β), each record sampled with
    /// probability f: Σ_F P(F) · F f (1−f)^(F−1) and Σ_F P(F) · C(F, 2) f² (1−f)^(F−2).
    #[test]
    fn snb_expectations_against_the_series() {
        let sample = Sample::new(&FIXTURE, 83, 277);
        let (c1, c2) = (sample.c1, sample.c2);
        for (a, b, f) in [(0.7, 0.3, 0.2), (2.5, 0.6, 0.05), (0.3, 0.1, 0.5)] {
            let (mut e1, mut e2, mut p) = (0.0, 0.0, f64::powf(b, a));
            for x in 0..20_000u32 {
                let size = f64::from(x) + 1.0;
                e1 += p * size * f * (1.0 - f).powf(size - 1.0);
                e2 += p * size * (size - 1.0) / 2.0 * f * f * (1.0 - f).powf(size - 2.0);
                p *= (f64::from(x) + a) / (f64::from(x) + 1.0) * (1.0 - b);
            }
            let (f1, f2) = sample.snb_equations(1.0, f, a, b).f;
            near(&format!("E[c1] at {a} {b} {f}"), f1 + c1, e1, 1e-12);
            near(&format!("E[c2] at {a} {b} {f}"), f2 + c2, e2, 1e-12);
        }
    }

    #[test]
    fn solver_as_arx() {
        let starts: Vec<(f64, f64)> = restarts().collect();
        assert_eq!(starts.len(), 16);
        assert_eq!((starts[0], starts[9], starts[15]), ((0.0, 0.0), (0.66, 0.33), (0.99, 0.99)));
        // x² = 2, y = 3: from (1, 1).
        let root = newton(
            (1.0, 1.0),
            |_, _| true,
            |x, y| Equations { f: (x * x - 2.0, y - 3.0), jacobian: ((2.0 * x, 0.0), (0.0, 1.0)) },
        );
        let (x, y) = root.unwrap();
        assert!((x - 2f64.sqrt()).abs() < 1e-6 && y == 3.0);
        // No root: every try, then None.
        assert_eq!(
            newton(
                (1.0, 1.0),
                |_, _| true,
                |x, y| Equations { f: (x * x + 1.0, y), jacobian: ((2.0 * x, 0.0), (0.0, 1.0)) }
            ),
            None
        );
    }

    #[test]
    fn population_size_as_arx() {
        let at =
            |n, fraction| population_size(n, &RiskSettings { sampling_fraction: fraction, ..RiskSettings::default() });
        assert_eq!((at(83, 0.01), at(83, 0.3), at(18, 0.25), at(5, 0.4), at(0, 0.01)), (8300, 277, 72, 13, 0));
        // Out of (0, 1]: the default 1%, or the sample itself.
        assert_eq!((at(83, 0.0), at(83, f64::NAN), at(83, 2.0)), (8300, 8300, 83));
        let given = |n, big_n| population_size(n, &RiskSettings { population: Some(big_n), ..RiskSettings::default() });
        assert_eq!((given(83, 200), given(83, 50)), (200, 83));
    }

    #[test]
    fn dankars_rule() {
        let settings = |fraction| RiskSettings { sampling_fraction: fraction, ..RiskSettings::default() };
        let fixture: Vec<ClassSizes> =
            FIXTURE.iter().map(|&(f, c)| ClassSizes { sample: f, population: f, classes: c as u64 }).collect();
        // 20%: SNB (0.1018) below Zayatz (0.1245): SNB (ARX, whose SNB has no estimate here, takes Zayatz).
        let pu = analyse(&fixture, &settings(0.2)).population_uniqueness;
        assert_eq!((pu.model, pu.dankar), (Some(Model::Snb), pu.snb));
        assert!(pu.snb.unwrap() < pu.zayatz.unwrap());
        // 50%: no SNB estimate: Zayatz.
        let pu = analyse(&fixture, &settings(0.5)).population_uniqueness;
        assert_eq!((pu.snb, pu.model, pu.dankar), (None, Some(Model::Zayatz), pu.zayatz));
        // 1%, no Pitman estimate (every class unique): Zayatz (all of the population unique).
        let pu = analyse(&sizes(&[(1, 50)]), &settings(0.01)).population_uniqueness;
        assert_eq!((pu.pitman, pu.model, pu.dankar), (None, Some(Model::Zayatz), pu.zayatz));
        near("zayatz", pu.zayatz.unwrap(), 1.0, 1e-12);
    }

    /// ARX 3.9.2 finds no Pitman estimate on this table at 1%: its first
    /// solve (closed forms, with a trigamma that lacks its asymptotic tail
    /// between 8 and 12) stops at θ = 1.7e11, α = −8.5e7, where the exact
    /// equations are below 1e-6 too, and the estimate there is out of range.
    /// kanon takes the same path, so Dankar's rule falls back to Zayatz as
    /// ARX's does. (An exact Jacobian would have found θ = 20.72,
    /// α = −0.4335 and 1.40 uniques.)
    #[test]
    fn pitman_where_arx_strays() {
        let table = sizes(&[(1, 8), (2, 5), (3, 4), (4, 2), (5, 3), (7, 1), (10, 2), (20, 1)]);
        let pu = analyse(&table, &RiskSettings::default()).population_uniqueness;
        assert_eq!(pu.population, 10_000);
        assert_eq!(pu.pitman, None);
        assert_eq!(pu.model, Some(Model::Zayatz));
        near("zayatz", pu.zayatz.unwrap(), 0.0068613454249346435, 1e-9); // ARX 3.9.2
        assert_eq!(pu.dankar, pu.zayatz);
    }

    #[test]
    fn order_and_duplicates_do_not_matter() {
        let a = [
            ClassSizes { sample: 1, population: 3, classes: 4 },
            ClassSizes { sample: 2, population: 2, classes: 1 },
            ClassSizes { sample: 5, population: 9, classes: 2 },
        ];
        let b = [
            ClassSizes { sample: 5, population: 9, classes: 1 },
            ClassSizes { sample: 1, population: 3, classes: 3 },
            ClassSizes { sample: 2, population: 2, classes: 1 },
            ClassSizes { sample: 0, population: 0, classes: 7 },
            ClassSizes { sample: 5, population: 9, classes: 1 },
            ClassSizes { sample: 1, population: 3, classes: 1 },
            ClassSizes { sample: 3, population: 3, classes: 0 },
        ];
        assert_eq!(analyse(&a, &RiskSettings::default()), analyse(&b, &RiskSettings::default()));
        // A population size below the sample's counts as the sample's.
        let low = [ClassSizes { sample: 3, population: 1, classes: 2 }];
        let risk = analyse(&low, &RiskSettings::default());
        assert_eq!(risk.journalist, risk.prosecutor);
    }

    #[test]
    fn large_tables_stay_finite() {
        // 1.3 million classes, one of a billion records: the long sums by ψ.
        let histogram = sizes(&[(1, 1_000_000), (2, 300_000), (7, 1_000), (1_000_000_000, 1)]);
        for settings in [RiskSettings::default(), RiskSettings { sampling_fraction: 0.5, ..RiskSettings::default() }] {
            let risk = analyse(&histogram, &settings);
            assert_eq!(risk.records, 1_000_000 + 600_000 + 7_000 + 1_000_000_000);
            let pu = risk.population_uniqueness;
            for x in [pu.pitman, pu.zayatz, pu.snb, pu.dankar].into_iter().flatten() {
                assert!(x.is_finite() && (0.0..=1.0).contains(&x), "{pu:?}");
            }
            assert!(pu.zayatz.is_some() && pu.dankar.is_some(), "{pu:?}");
        }
    }
}
