//! The re-identification risk figures (src/risk.rs): every figure by hand on a
//! small table written out here, and the figures of fixtures/risk against ARX
//! 3.9.2's risk analysis (bench/arx-risk).

use crate::util::manifest_dir;
use kanon::measure::risk::{analyse, distribution_svg, ClassSizes, Model, Risk, RiskSettings, BAND_EDGES};
use std::collections::BTreeMap;

/// |actual − expected| <= tolerance · |expected| (or both None).
fn close(what: &str, actual: Option<f64>, expected: Option<f64>, tolerance: f64) {
    match (actual, expected) {
        (Some(a), Some(e)) => {
            assert!((a - e).abs() <= tolerance * e.abs(), "{what}: {a} against {e} (tolerance {tolerance:e} relative)")
        }
        (a, e) => assert_eq!(a, e, "{what}"),
    }
}

/// Closed forms: the same arithmetic in another order.
const EXACT: f64 = 1e-9;
/// Pitman's and SNB's estimates come from Newton's method stopped once both
/// equations are within 1e-6 of 0 (ARX's criterion): against the solvers
/// written here, which stop elsewhere, the estimates differ by < 1e-7.
const SOLVED: f64 = 1e-6;
/// kanon takes ARX's own Newton path for Pitman (its closed forms first): the
/// same stop, and only the closing Γ ratio is computed differently.
const ARX_PATH: f64 = 1e-12;

// ---------------------------------------------------------------- by hand

/// (f, F) per class: 6 sample uniques, two classes of 2, one of 3, one of 5.
const TINY: [(u64, u64); 10] = [(1, 2), (1, 2), (1, 3), (1, 4), (1, 6), (1, 10), (2, 2), (2, 8), (3, 3), (5, 20)];

fn tiny() -> Vec<ClassSizes> {
    TINY.iter().map(|&(sample, population)| ClassSizes { sample, population, classes: 1 }).collect()
}

#[test]
fn every_figure_by_hand() {
    let settings = RiskSettings { threshold: 0.2, population: None, sampling_fraction: 0.25 };
    let risk = analyse(&tiny(), &settings);
    // n = 6 + 2·2 + 3 + 5 = 18 records in u = 10 classes.
    assert_eq!((risk.records, risk.classes), (18, 10));

    // Prosecutor: classes with 1/f > 0.2 (f < 5) hold 6 + 4 + 3 = 13 records;
    // the smallest class has 1 record; u / n = 10 / 18.
    close("prosecutor records at risk", Some(risk.prosecutor.records_at_risk), Some(13.0 / 18.0), EXACT);
    close("prosecutor highest risk", Some(risk.prosecutor.highest_risk), Some(1.0), EXACT);
    close("prosecutor success rate", Some(risk.prosecutor.success_rate), Some(10.0 / 18.0), EXACT);

    // Journalist: classes with 1/F > 0.2 (F < 5): (1,2) (1,2) (1,3) (1,4) (2,2)
    // (3,3) hold 1+1+1+1+2+3 = 9 sample records; the smallest F is 2; ΣF = 60,
    // Σ f/F = 1/2+1/2+1/3+1/4+1/6+1/10+1+1/4+1+1/4 = 87/20, so the success rate
    // is max(10/60, 87/20 / 18) = 87/360. The marketer's is 87/360 too.
    close("journalist records at risk", Some(risk.journalist.records_at_risk), Some(9.0 / 18.0), EXACT);
    close("journalist highest risk", Some(risk.journalist.highest_risk), Some(0.5), EXACT);
    close("journalist success rate", Some(risk.journalist.success_rate), Some(87.0 / 360.0), EXACT);
    close("marketer success rate", Some(risk.marketer.success_rate), Some(87.0 / 360.0), EXACT);

    // Sample uniqueness: 6 of 18.
    close("sample uniqueness", Some(risk.sample_uniqueness), Some(6.0 / 18.0), EXACT);

    // Distribution: risk 1 in (50%, 100%], 1/2 in (33.4%, 50%], 1/3 in
    // (25%, 33.4%], 1/5 in (16.7%, 20%]; every other band empty.
    let expected: BTreeMap<usize, u64> = [(23, 6), (22, 4), (21, 3), (19, 5)].into();
    assert_eq!(risk.distribution.len(), 24);
    for (i, band) in risk.distribution.iter().enumerate() {
        let records = expected.get(&i).copied().unwrap_or(0);
        assert_eq!(band.records, records, "band {i}");
        close(&format!("band {i} share"), Some(band.share), Some(records as f64 / 18.0), EXACT);
        assert_eq!(band.high, BAND_EDGES[i]);
    }
    assert_eq!((risk.distribution[0].low, risk.distribution[23].low, risk.distribution[23].high), (0.0, 0.5, 1.0));

    // Population uniqueness at a sampling fraction of 25%: N = 72.
    let pu = risk.population_uniqueness;
    assert_eq!((pu.population, pu.sampling_fraction), (72, 0.25));
    let histogram = [(1u64, 6u64), (2, 2), (3, 1), (5, 1)];
    let zayatz = zayatz_by_hand(&histogram, 18, 72);
    let pitman = pitman_by_hand(&histogram, 18, 72);
    let snb = snb_by_hand(&histogram, 18, 72);
    close("zayatz", pu.zayatz, Some(zayatz), EXACT);
    close("pitman", pu.pitman, pitman, SOLVED);
    close("snb", pu.snb, snb, SOLVED);
    // Above 10%: the smaller of Zayatz and SNB.
    let (pick, model) = match snb {
        Some(s) if s <= zayatz => (s, Model::Snb),
        _ => (zayatz, Model::Zayatz),
    };
    close("dankar", pu.dankar, Some(pick), SOLVED);
    assert_eq!(pu.model, Some(model));
    assert!(pitman.is_some() && snb.is_some(), "the table should give every estimate: {pitman:?} {snb:?}");

    // At 1% (N = 1800) Dankar's rule takes Pitman's estimate.
    let risk = analyse(&tiny(), &RiskSettings::default());
    let pu = risk.population_uniqueness;
    assert_eq!((pu.population, pu.sampling_fraction), (1800, 0.01));
    let pitman = pitman_by_hand(&histogram, 18, 1800);
    close("zayatz at 1%", pu.zayatz, Some(zayatz_by_hand(&histogram, 18, 1800)), EXACT);
    close("pitman at 1%", pu.pitman, pitman, SOLVED);
    close("snb at 1%", pu.snb, snb_by_hand(&histogram, 18, 1800), SOLVED);
    close("dankar at 1%", pu.dankar, pitman, SOLVED);
    assert_eq!(pu.model, Some(Model::Pitman));

    // A population of 50 given: N = 50, n/N = 0.36.
    let risk = analyse(&tiny(), &RiskSettings { population: Some(50), ..RiskSettings::default() });
    let pu = risk.population_uniqueness;
    assert_eq!((pu.population, pu.sampling_fraction), (50, 0.36));
    close("zayatz, N = 50", pu.zayatz, Some(zayatz_by_hand(&histogram, 18, 50)), EXACT);
}

/// Zayatz: P_i = P(X = 1) for X hypergeometric (N, i marked, n drawn)
/// = i · n/N · Π_{k=1}^{i−1} (N − n − k + 1)/(N − k); the share of sample
/// uniques unique in the population is c1 P_1 / Σ c_i P_i; the population's
/// uniques c1 · share · N/n, as a fraction of N.
fn zayatz_by_hand(histogram: &[(u64, u64)], n: u64, big_n: u64) -> f64 {
    let (n, big_n) = (n as f64, big_n as f64);
    let p = |i: u64| (1..i).fold(i as f64 * n / big_n, |p, k| p * (big_n - n - k as f64 + 1.0) / (big_n - k as f64));
    let c1 = histogram[0].1 as f64;
    let share = c1 * p(1) / histogram.iter().map(|&(i, c)| c as f64 * p(i)).sum::<f64>();
    c1 * share * big_n / n / big_n
}

/// Solves two equations by Newton's method with a central-difference
/// Jacobian, to 1e-12: from `start`, else from the first of ARX's restarts
/// (x, y in 0, 0.33, 0.66, 0.99) it converges from.
fn solve(start: (f64, f64), f: impl Fn(f64, f64) -> (f64, f64)) -> Option<(f64, f64)> {
    let grid = [0.0, 0.33, 0.66, 0.99];
    let restarts = grid.iter().flat_map(|&x| grid.iter().map(move |&y| (x, y)));
    std::iter::once(start).chain(restarts).find_map(|start| solve_from(start, &f))
}

fn solve_from(start: (f64, f64), f: &impl Fn(f64, f64) -> (f64, f64)) -> Option<(f64, f64)> {
    let (mut x, mut y) = start;
    for _ in 0..200 {
        let (f1, f2) = f(x, y);
        if !(f1.is_finite() && f2.is_finite()) {
            return None;
        }
        if f1.abs() < 1e-12 && f2.abs() < 1e-12 {
            return Some((x, y));
        }
        let (hx, hy) = (1e-6 * x.abs().max(1e-3), 1e-6 * y.abs().max(1e-3));
        let (a1, a2) = f(x + hx, y);
        let (b1, b2) = f(x - hx, y);
        let (c1, c2) = f(x, y + hy);
        let (d1, d2) = f(x, y - hy);
        let (j11, j21) = ((a1 - b1) / (2.0 * hx), (a2 - b2) / (2.0 * hx));
        let (j12, j22) = ((c1 - d1) / (2.0 * hy), (c2 - d2) / (2.0 * hy));
        let det = j11 * j22 - j12 * j21;
        x -= (j22 * f1 - j12 * f2) / det;
        y -= (j11 * f2 - j21 * f1) / det;
    }
    None
}

/// ln Γ(x), x > 0, by Lanczos' approximation (g = 7, 9 terms).
fn ln_gamma(x: f64) -> f64 {
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let t = x + 7.5;
    let sum = C[0] + (1..9).map(|i| C[i] / (x + i as f64)).sum::<f64>();
    0.5 * std::f64::consts::TAU.ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

/// Pitman (Hoshino 2001): θ, α solve
///   Σ_{i=1}^{u−1} 1/(θ+iα) = Σ_{i=1}^{n−1} 1/(θ+i),
///   Σ_{i=1}^{u−1} i/(θ+iα) = Σ_j c_j Σ_{k=1}^{j−1} 1/(k−α),
/// from ARX's start; uniques Γ(θ+1)/Γ(θ+α) · N^α, as a fraction of N (an
/// estimate only in (0, N] and for θ >= 0).
fn pitman_by_hand(histogram: &[(u64, u64)], n: u64, big_n: u64) -> Option<f64> {
    let u: u64 = histogram.iter().map(|&(_, c)| c).sum();
    let count = |size| histogram.iter().find(|&&(i, _)| i == size).map_or(0.0, |&(_, c)| c as f64);
    let (uf, nf, c1, c2) = (u as f64, n as f64, count(1), count(2).max(1.0));
    let c = c1 * (c1 - 1.0) / c2;
    let t = (nf * uf * c - c1 * (nf - 1.0) * (2.0 * uf + c)) / (2.0 * c1 * uf + c1 * c - nf * c);
    let a = (t * (c1 - nf) + (nf - 1.0) * c1) / (nf * uf);
    let (t, a) = solve((t, a), |t, a| {
        let left: f64 = (1..u).map(|i| 1.0 / (t + i as f64 * a)).sum();
        let right: f64 = (1..n).map(|i| 1.0 / (t + i as f64)).sum();
        let left2: f64 = (1..u).map(|i| i as f64 / (t + i as f64 * a)).sum();
        let right2: f64 =
            histogram.iter().map(|&(j, c)| c as f64 * (1..j).map(|k| 1.0 / (k as f64 - a)).sum::<f64>()).sum();
        (left - right, left2 - right2)
    })?;
    if t < 0.0 {
        return None;
    }
    let uniques = (ln_gamma(t + 1.0) - ln_gamma(t + a)).exp() * (big_n as f64).powf(a);
    (uniques > 0.0 && uniques <= big_n as f64).then_some(uniques / big_n as f64)
}

/// SNB (Chen & McNulty 1998) with f = n/N, d = (1−f)(1−β), L = 1 − d:
///   K f (β/L)^α (1 + α d/L) = c1,
///   K α β^α f² (1−β) (2 − (1−α) d) / (2 L^(α+2)) = c2,
/// K = u + c1 · Σ i f²(1−f²)^(i−1) c_i / Σ ((1−f²)^i − (1−f)^i) c_i
///       · (Σ (1−f)^i c_i / Σ i f (1−f)^(i−1) c_i)²  (Shlosser, Haas et al.);
/// from (1, 1); uniques K β^α, as a fraction of N.
fn snb_by_hand(histogram: &[(u64, u64)], n: u64, big_n: u64) -> Option<f64> {
    let f = n as f64 / big_n as f64;
    let count = |size| histogram.iter().find(|&&(i, _)| i == size).map_or(0.0, |&(_, c)| c as f64);
    let (c1, c2) = (count(1), count(2));
    let sum = |term: &dyn Fn(f64) -> f64| histogram.iter().map(|&(i, c)| term(i as f64) * c as f64).sum::<f64>();
    let u = sum(&|_| 1.0);
    let ratio = sum(&|i| (1.0 - f).powf(i)) / sum(&|i| i * f * (1.0 - f).powf(i - 1.0));
    let k = u + c1 * sum(&|i| i * f * f * (1.0 - f * f).powf(i - 1.0))
        / sum(&|i| (1.0 - f * f).powf(i) - (1.0 - f).powf(i))
        * ratio
        * ratio;
    let (a, b) = solve((1.0, 1.0), |a, b| {
        let d = (1.0 - f) * (1.0 - b);
        let l = 1.0 - d;
        (
            k * f * (b / l).powf(a) * (1.0 + a * d / l) - c1,
            k * a * b.powf(a) * f * f * (1.0 - b) * (2.0 - (1.0 - a) * d) / (2.0 * l.powf(a + 2.0)) - c2,
        )
    })?;
    let uniques = k * b.powf(a);
    (uniques > 0.0 && uniques <= big_n as f64).then_some(uniques / big_n as f64)
}

#[test]
fn no_records_and_no_uniques() {
    // Nothing: zeros, no NaN anywhere.
    let empty = analyse(&[], &RiskSettings::default());
    assert_eq!((empty.records, empty.classes), (0, 0));
    let json = serde_json::to_string(&empty).unwrap();
    assert!(!json.contains("NaN") && json.matches("null").count() == 1 && json.contains(r#""model":null"#), "{json}");
    assert!(empty.distribution.iter().all(|b| b.share == 0.0));
    // No class of size 1: every population estimate is 0, no model needed.
    let risk = analyse(&[ClassSizes { sample: 4, population: 4, classes: 5 }], &RiskSettings::default());
    let pu = risk.population_uniqueness;
    assert_eq!((pu.pitman, pu.zayatz, pu.snb, pu.dankar, pu.model), (Some(0.0), Some(0.0), Some(0.0), Some(0.0), None));
    assert_eq!(risk.sample_uniqueness, 0.0);
    // 1/4 > 0.2: every record is at risk.
    assert_eq!((risk.prosecutor.records_at_risk, risk.prosecutor.highest_risk), (1.0, 0.25));
}

#[test]
fn chart_of_two_tables() {
    let before = analyse(&tiny(), &RiskSettings::default());
    let after = analyse(&[ClassSizes { sample: 6, population: 6, classes: 3 }], &RiskSettings::default());
    let svg = distribution_svg(&before, &after);
    assert_eq!(svg, distribution_svg(&before, &after));
    assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\"") && svg.trim_end().ends_with("</svg>"));
    // A bar per band and table, the legend's two swatches, the background.
    assert_eq!(svg.matches("<rect").count(), 2 * 24 + 2 + 1);
    assert!(svg.contains(">(50%, 100%]<") && svg.contains(">[0%, 0.000001%]<"), "{svg}");
    assert!(svg.contains(">source<") && svg.contains(">release<"));
    // The release's only band: risk 1/6 in (14.3%, 16.7%], all its records.
    assert!(svg.contains("release: 100.00%"), "{svg}");
}

// ------------------------------------------------------------ against ARX

/// The QIs of fixtures/risk's tables.
const QIS: [&str; 3] = ["age_band", "sex", "zip3"];

/// Records per combination of the QIs' values.
fn classes_of(file: &str) -> BTreeMap<Vec<String>, u64> {
    let text = std::fs::read_to_string(manifest_dir().join("fixtures/risk").join(file)).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let columns: Vec<usize> = QIS.iter().map(|q| header.iter().position(|h| h == q).unwrap()).collect();
    let mut classes = BTreeMap::new();
    for line in lines {
        let values: Vec<&str> = line.split(',').collect();
        *classes.entry(columns.iter().map(|&c| values[c].to_string()).collect()).or_insert(0) += 1;
    }
    classes
}

/// fixtures/risk/sample.csv's classes, each with its size in population.csv
/// (which holds the sample's records and more) or, without it, its own.
fn fixture(with_population: bool) -> Vec<ClassSizes> {
    let population = classes_of("population.csv");
    classes_of("sample.csv")
        .into_iter()
        .map(|(key, f)| ClassSizes {
            sample: f,
            population: if with_population { population[&key] } else { f },
            classes: 1,
        })
        .collect()
}

/// What ARX printed for one run (`null`: no estimate).
struct Arx {
    prosecutor: [f64; 3],
    journalist: [f64; 3],
    marketer: f64,
    sample_uniqueness: f64,
    population: u64,
    sampling_fraction: f64,
    pitman: Option<f64>,
    zayatz: Option<f64>,
    /// ARX's own SNB: none on this table (see `snb_published`).
    snb: Option<f64>,
    dankar: Option<f64>,
    model: Option<Model>,
    /// SNB on Chen & McNulty's equations, by the solver ARX bundles (Risk.java's
    /// snbPublished): what kanon's SNB is checked against.
    snb_published: Option<f64>,
}

// ARX 3.9.2 via bench/arx-risk (java 17), 2026-11-24:
//   bench/arx-risk/run.sh --data fixtures/risk/sample.csv --qis age_band,sex,zip3 --fraction 0.01
//   bench/arx-risk/run.sh --data fixtures/risk/sample.csv --qis age_band,sex,zip3 --fraction 0.1 \
//       --population-table fixtures/risk/population.csv
//   bench/arx-risk/run.sh --data fixtures/risk/sample.csv --qis age_band,sex,zip3 --fraction 0.3 \
//       --population-table fixtures/risk/population.csv
//   bench/arx-risk/run.sh --data fixtures/risk/sample.csv --qis age_band,sex,zip3 --population 200
// (threshold 0.2). The sample: 83 records, 36 classes, class sizes 1×22, 2×4,
// 3×4, 4×1, 5×2, 7×1, 10×2.
const PROSECUTOR: [f64; 3] = [0.5542168674698795, 1.0, 0.43373493975903615];
const JOURNALIST_TABLE: [f64; 3] = [0.3253012048192771, 1.0, 0.24307228915662646];
const MARKETER_TABLE: f64 = 0.24307228915662646;
const SAMPLE_UNIQUENESS: f64 = 0.26506024096385544;
/// ARX's risk distribution of the sample: (band's upper edge, share), the
/// other bands empty.
const DISTRIBUTION: [(f64, f64); 7] = [
    (0.1, 0.24096385542168675),
    (0.143, 0.08433734939759036),
    (0.2, 0.12048192771084337),
    (0.25, 0.04819277108433735),
    (0.334, 0.14457831325301204),
    (0.5, 0.0963855421686747),
    (1.0, 0.26506024096385544),
];

fn arx_runs() -> [(RiskSettings, bool, Arx); 4] {
    let fraction = |f| RiskSettings { sampling_fraction: f, ..RiskSettings::default() };
    [
        (
            fraction(0.01),
            false,
            Arx {
                prosecutor: PROSECUTOR,
                journalist: PROSECUTOR,
                marketer: PROSECUTOR[2],
                sample_uniqueness: SAMPLE_UNIQUENESS,
                population: 8300,
                sampling_fraction: 0.01,
                pitman: Some(0.01279300627406002),
                zayatz: Some(0.07283469567143018),
                snb: None,
                dankar: Some(0.01279300627406002),
                model: Some(Model::Pitman),
                snb_published: None,
            },
        ),
        (
            fraction(0.1),
            true,
            Arx {
                prosecutor: PROSECUTOR,
                journalist: JOURNALIST_TABLE,
                marketer: MARKETER_TABLE,
                sample_uniqueness: SAMPLE_UNIQUENESS,
                population: 830,
                sampling_fraction: 0.1,
                pitman: Some(0.05946322608208687),
                zayatz: Some(0.0971907625131432),
                snb: None,
                dankar: Some(0.05946322608208687),
                model: Some(Model::Pitman),
                snb_published: Some(0.03875638814469854),
            },
        ),
        (
            fraction(0.3),
            true,
            Arx {
                prosecutor: PROSECUTOR,
                journalist: JOURNALIST_TABLE,
                marketer: MARKETER_TABLE,
                sample_uniqueness: SAMPLE_UNIQUENESS,
                population: 277,
                sampling_fraction: 0.2996389891696751,
                pitman: Some(0.1236718965639354),
                zayatz: Some(0.1496732618675532),
                snb: None,
                dankar: Some(0.1496732618675532),
                model: Some(Model::Zayatz),
                snb_published: Some(0.17268072038087615),
            },
        ),
        (
            RiskSettings { population: Some(200), ..RiskSettings::default() },
            false,
            Arx {
                prosecutor: PROSECUTOR,
                journalist: PROSECUTOR,
                marketer: PROSECUTOR[2],
                sample_uniqueness: SAMPLE_UNIQUENESS,
                population: 200,
                sampling_fraction: 0.415,
                pitman: Some(0.15369404451556226),
                zayatz: Some(0.17547449971189524),
                snb: None,
                dankar: Some(0.17547449971189524),
                model: Some(Model::Zayatz),
                snb_published: None,
            },
        ),
    ]
}

fn check_against_arx(risk: &Risk, arx: &Arx, run: &str) {
    let at = |what: &str| format!("{run}: {what}");
    let attacker = |a: &kanon::measure::risk::Attacker| [a.records_at_risk, a.highest_risk, a.success_rate];
    for (what, ours, theirs) in [
        ("prosecutor", attacker(&risk.prosecutor), arx.prosecutor),
        ("journalist", attacker(&risk.journalist), arx.journalist),
    ] {
        for i in 0..3 {
            close(&at(&format!("{what}[{i}]")), Some(ours[i]), Some(theirs[i]), EXACT);
        }
    }
    close(&at("marketer"), Some(risk.marketer.success_rate), Some(arx.marketer), EXACT);
    close(&at("sample uniqueness"), Some(risk.sample_uniqueness), Some(arx.sample_uniqueness), EXACT);
    let pu = &risk.population_uniqueness;
    assert_eq!((pu.population, pu.sampling_fraction), (arx.population, arx.sampling_fraction), "{run}");
    close(&at("zayatz"), pu.zayatz, arx.zayatz, EXACT);
    close(&at("pitman"), pu.pitman, arx.pitman, ARX_PATH);
    close(&at("snb (published equations)"), pu.snb, arx.snb_published, SOLVED);
    assert_eq!(arx.snb, None, "{run}: ARX 3.9.2's SNB has no estimate on this table");
    close(&at("dankar"), pu.dankar, arx.dankar, SOLVED);
    assert_eq!(pu.model, arx.model, "{run}: Dankar's pick");
    for band in &risk.distribution {
        let share = DISTRIBUTION.iter().find(|&&(high, _)| high == band.high).map_or(0.0, |&(_, s)| s);
        close(&at(&format!("band up to {}", band.high)), Some(band.share), Some(share), EXACT);
    }
}

#[test]
fn fixture_against_arx() {
    let runs = arx_runs();
    for (settings, with_population, arx) in &runs {
        let risk = analyse(&fixture(*with_population), settings);
        assert_eq!((risk.records, risk.classes), (83, 36));
        let run = format!("{settings:?}, population table: {with_population}");
        check_against_arx(&risk, arx, &run);
    }
}
