//! `[privacy] differential_privacy` (SafePub): β and k against ARX's
//! `ParameterCalculation` (bench/arx/SafePub.java run on ../shared's jars),
//! the sample's size against Binomial(n, β), the release re-measured (every
//! class at least k, only sampled rows), seeds, and the exponential
//! mechanism's choices against its analytic distribution. Fixed seeds
//! throughout: nothing here can flake.

use crate::util::{kanon, manifest_dir, missing};
use kanon::job::Job;
use kanon::lattice::{Lattice, Node};
use kanon::load::load;
use kanon::measure::dp::{parameters, probabilities, score, ScoreBasis};
use kanon::options::Metric;
use kanon::search::safepub::{walk, Walk};
use kanon::search::Silent;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;
use std::fmt::Write;
use std::path::Path;

#[test]
fn parameters_on_fixed_values() {
    let p = parameters(1.0, 1e-6).unwrap();
    assert!((p.beta - 0.6321).abs() < 1e-4);
    assert_eq!(p.k, 75);
    // Figures ARX 3.9.2 prints for these (bench/arx/arx-safepub --params).
    assert_eq!(parameters(2.0, 1e-6).unwrap().k, 132);
    assert_eq!(parameters(0.5, 1e-3).unwrap().k, 28);
}

#[test]
fn parameters_equal_arx_on_a_grid() {
    let arx = manifest_dir().join("../shared/peers/arx/lib");
    if !arx.is_dir() {
        return missing("../shared/peers/arx (ARX's ParameterCalculation)");
    }
    let mut grid = Vec::new();
    // ARX takes seconds per pair at large k: a grid of 15 that runs in a few seconds.
    for e in ["0.5", "0.75", "1.0", "1.5", "2.0"] {
        for d in ["1e-3", "1e-5", "1e-7"] {
            grid.push(format!("{e}:{d}"));
        }
    }
    let out = std::process::Command::new(manifest_dir().join("bench/arx/arx-safepub"))
        .args(["--params", &grid.join(",")])
        .output()
        .expect("running bench/arx/arx-safepub");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().count(), grid.len(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    for line in text.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        let (e, d): (f64, f64) = (f[0].parse().unwrap(), f[1].parse().unwrap());
        let ours = parameters(e, d);
        if f[3] == "error" {
            assert!(ours.is_err(), "{line}: ARX could not decide, kanon gave {ours:?}");
            continue;
        }
        let ours = ours.unwrap();
        let beta: f64 = f[2].parse().unwrap();
        assert!((ours.beta - beta).abs() <= 4.0 * f64::EPSILON, "{line}: beta {}", ours.beta);
        assert_eq!(ours.k, f[3].parse::<u64>().unwrap(), "{line}: k");
    }
}

#[test]
fn the_sample_size_is_binomial() {
    // 400 seeds, n = 2000, β = 0.3: the sizes' mean and variance against n β and n β (1 − β).
    let (n, beta, seeds) = (2000u64, 0.3, 400u64);
    let sizes: Vec<f64> = (0..seeds)
        .map(|s| (0..n).filter(|&p| kanon::data::sample::kept(s * 7919 + 1, beta, p)).count() as f64)
        .collect();
    let mean = sizes.iter().sum::<f64>() / seeds as f64;
    let var = sizes.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (seeds - 1) as f64;
    let (m, v) = (n as f64 * beta, n as f64 * beta * (1.0 - beta));
    // The mean's standard error is sqrt(v / seeds) ≈ 1.02; the variance's about v sqrt(2 / seeds) ≈ 29.7.
    assert!((mean - m).abs() < 4.0 * (v / seeds as f64).sqrt(), "mean {mean} vs {m}");
    assert!((var - v).abs() < 4.0 * v * (2.0 / seeds as f64).sqrt(), "variance {var} vs {v}");
    // And each position independently: adjacent positions' joint frequency is β².
    let both = (0..200_000u64)
        .filter(|&p| kanon::data::sample::kept(11, beta, 2 * p) && kanon::data::sample::kept(11, beta, 2 * p + 1));
    let f = both.count() as f64 / 200_000.0;
    assert!((f - beta * beta).abs() < 4.0 * (beta * beta * (1.0 - beta * beta) / 200_000.0).sqrt(), "{f}");
}

/// A skewed table of `rows` (zip, age, sex, id) and a SafePub job over it.
fn write_case(dir: &Path, rows: usize, dp: &str) {
    let mut rng = StdRng::seed_from_u64(5);
    let mut csv = String::from("zip,age,sex,id\n");
    for i in 0..rows {
        let zip = 53700 + (rng.random_range(0..30u32).pow(2) / 30);
        let age = 18 + rng.random_range(0..60u32) * rng.random_range(0..=1u32) + rng.random_range(0..10u32);
        let sex = if rng.random_bool(0.5) { "F" } else { "M" };
        writeln!(csv, "{zip},{age},{sex},{i}").unwrap();
    }
    std::fs::write(dir.join("t.csv"), csv).unwrap();
    let job = format!(
        "[source]\ncsv = \"t.csv\"\n[output]\ncsv = \"out.csv\"\nreport = \"report.json\"\n\
         [privacy]\ndifferential_privacy = {dp}\n[search]\nmetric = \"glm\"\n\
         [[quasi_identifiers]]\ncolumn = \"zip\"\nhierarchy = {{ mask = 3 }}\n\
         [[quasi_identifiers]]\ncolumn = \"age\"\nhierarchy = {{ intervals = [5, 10, 20] }}\n\
         [[quasi_identifiers]]\ncolumn = \"sex\"\nhierarchy = \"suppress\"\n"
    );
    std::fs::write(dir.join("job.toml"), job).unwrap();
}

fn report(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap()
}

#[test]
fn the_release_holds_sampled_rows_in_classes_of_at_least_k() {
    let dir = tempfile::tempdir().unwrap();
    write_case(dir.path(), 3000, "{ epsilon = 2.0, delta = 1e-5, search_epsilon = 0.2, steps = 20, seed = 3 }");
    let out = kanon(dir.path(), &["run", "job.toml", "--quiet"]);
    assert_eq!(out.code, 0, "{}", out.both());
    let r = report(dir.path());
    let dp = &r["differential_privacy"];
    let p = parameters(dp["epsilon_anonymization"].as_f64().unwrap(), 1e-5).unwrap();
    assert_eq!(dp["k"].as_u64().unwrap(), p.k);
    assert_eq!(dp["beta"].as_f64().unwrap(), p.beta);
    let (k, seed, beta) = (p.k, 3u64, p.beta);
    // The sample is the rows whose position the hash keeps (ids are positions here).
    let sampled = (0..3000u64).filter(|&i| kanon::data::sample::kept(seed, beta, i)).collect::<Vec<_>>();
    assert_eq!(dp["sampled_rows"].as_u64().unwrap(), sampled.len() as u64);
    assert_eq!(dp["source_rows"].as_u64().unwrap(), 3000);
    let text = std::fs::read_to_string(dir.path().join("out.csv")).unwrap();
    let mut classes: HashMap<String, u64> = HashMap::new();
    let mut ids = Vec::new();
    for line in text.lines().skip(1) {
        // Labels may hold commas ("[20, 30)"): the id is the last field.
        let (class, id) = line.rsplit_once(',').unwrap();
        *classes.entry(class.to_string()).or_default() += 1;
        ids.push(id.parse::<u64>().unwrap());
    }
    assert!(ids.iter().all(|i| sampled.binary_search(i).is_ok()), "a released row was not sampled");
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "source order");
    assert!(classes.values().all(|&c| c >= k), "a class under k = {k}: {classes:?}");
    assert_eq!(r["rows_out"].as_u64().unwrap(), ids.len() as u64);
    assert_eq!(r["suppressed"].as_u64().unwrap(), sampled.len() as u64 - ids.len() as u64);
}

#[test]
fn a_seed_gives_one_release_and_another_seed_another() {
    let mut outs = Vec::new();
    for seed in [1, 1, 2] {
        let dir = tempfile::tempdir().unwrap();
        write_case(dir.path(), 2000, &format!("{{ epsilon = 1.5, delta = 1e-5, steps = 10, seed = {seed} }}"));
        let out = kanon(dir.path(), &["run", "job.toml", "--quiet"]);
        assert_eq!(out.code, 0, "{}", out.both());
        outs.push(std::fs::read(dir.path().join("out.csv")).unwrap());
    }
    assert_eq!(outs[0], outs[1]);
    assert_ne!(outs[0], outs[2]);
}

#[test]
fn the_plan_refuses_what_safepub_cannot_honour() {
    let cases = [
        ("k = 5\n", "drop k"),
        ("l_diversity = { column = \"id\", l = 2 }\n", "l-diversity"),
        ("person = \"id\"\n", "person"),
        ("max_suppression = 0.1\n", "max_suppression"),
    ];
    for (extra, says) in cases {
        let dir = tempfile::tempdir().unwrap();
        write_case(dir.path(), 100, "{ epsilon = 1.0, delta = 1e-5 }");
        let job = std::fs::read_to_string(dir.path().join("job.toml")).unwrap();
        std::fs::write(dir.path().join("job.toml"), job.replace("[privacy]\n", &format!("[privacy]\n{extra}")))
            .unwrap();
        let out = kanon(dir.path(), &["run", "job.toml", "--quiet"]);
        assert_eq!(out.code, 2, "{extra}: {}", out.both());
        assert!(out.stderr.contains(says), "{extra}: {}", out.stderr);
        assert!(!dir.path().join("out.csv").exists());
    }
    let dir = tempfile::tempdir().unwrap();
    write_case(dir.path(), 2000, "{ epsilon = 1.0, delta = 1e-5 }");
    for flags in [&["--scheme", "bhs"][..], &["--algorithm", "cdgh"], &["--metric", "height"], &["--k", "3"]] {
        let out = kanon(dir.path(), &[&["run", "job.toml", "--quiet"][..], flags].concat());
        assert_eq!(out.code, 2, "{flags:?}: {}", out.both());
        assert!(out.stderr.contains("differential_privacy"), "{flags:?}: {}", out.stderr);
    }
    // --node: no search, the whole epsilon goes to the anonymization.
    let out = kanon(dir.path(), &["run", "job.toml", "--quiet", "--node", "zip=3,age=3,sex=1"]);
    assert_eq!(out.code, 0, "{}", out.both());
    let dp = &report(dir.path())["differential_privacy"];
    assert_eq!((dp["epsilon_search"].as_f64(), dp["epsilon_anonymization"].as_f64()), (Some(0.0), Some(1.0)));
    assert_eq!(dp["k"].as_u64(), Some(parameters(1.0, 1e-5).unwrap().k));
}

#[test]
fn the_mechanism_draws_by_its_distribution() {
    // One step from the top of a 3-QI lattice: the first draw is among the
    // top's specializations, with probabilities ∝ exp(ε score / 2).
    let dir = tempfile::tempdir().unwrap();
    write_case(dir.path(), 600, "{ epsilon = 1.0, delta = 1e-5 }");
    let text = std::fs::read_to_string(dir.path().join("job.toml")).unwrap();
    let text = text.replace("differential_privacy = { epsilon = 1.0, delta = 1e-5 }", "k = 1");
    let loaded = load(&Job::parse(&dir.path().join("job.toml"), &text).unwrap()).unwrap();
    let mut ev = loaded.evaluator().unwrap();
    let lattice = Lattice::new(loaded.data.heights.clone());
    let basis = ScoreBasis { source_rows: 1000, ..ScoreBasis::of(&loaded.data, Metric::Glm, 3, 1000) };
    let top = lattice.top();
    let candidates: Vec<Vec<u8>> = (0..top.len())
        .filter(|&a| top[a] > 0)
        .map(|a| {
            let mut n = top.clone();
            n[a] -= 1;
            n
        })
        .collect();
    let scores: Vec<f64> =
        candidates.iter().map(|c| score(&basis, c, &ev.histogram(&Node::full(c.clone())).unwrap())).collect();
    // An ε that spreads the draws: the scores' range is 3 in the exponent.
    let range = scores.iter().copied().fold(f64::MIN, f64::max) - scores.iter().copied().fold(f64::MAX, f64::min);
    let (epsilon, draws) = (6.0 / range, 3000u64);
    let want = probabilities(&scores, epsilon.next_down());
    let mut seen = vec![0u64; candidates.len()];
    for seed in 0..draws {
        let w = walk(&mut ev, &lattice, &basis, &Walk { steps: 1, epsilon, seed }, &Silent).unwrap();
        seen[candidates.iter().position(|c| *c == w.pivots[1]).unwrap()] += 1;
    }
    let chi2: f64 =
        (seen.iter().zip(&want)).map(|(&o, &p)| (o as f64 - draws as f64 * p).powi(2) / (draws as f64 * p)).sum();
    // The 99.9% point of chi-square with 2 degrees of freedom is 13.8.
    assert_eq!(candidates.len(), 3);
    assert!(want.iter().all(|&p| p > 0.02), "a degenerate distribution: {want:?}");
    assert!(chi2 < 13.8, "chi2 {chi2}: seen {seen:?}, want {want:?}");
}

/// `kanon check` audits a SafePub job by its derived k: the release read back
/// meets it, the source does not.
#[test]
fn check_audits_by_the_derived_k() {
    let dir = tempfile::tempdir().unwrap();
    write_case(dir.path(), 3000, "{ epsilon = 2.0, delta = 1e-5, search_epsilon = 0.2, steps = 20, seed = 3 }");
    let out = kanon(dir.path(), &["run", "job.toml", "--quiet"]);
    assert_eq!(out.code, 0, "{}", out.both());
    let k = report(dir.path())["differential_privacy"]["k"].as_u64().unwrap();
    let source = kanon(dir.path(), &["check", "job.toml", "--json"]);
    assert_eq!(source.code, 4, "{}", source.both());
    assert!(source.stderr.contains(&format!("k = {k}")), "{}", source.both());
    std::fs::rename(dir.path().join("out.csv"), dir.path().join("release.csv")).unwrap();
    let text = std::fs::read_to_string(dir.path().join("job.toml")).unwrap().replace("t.csv", "release.csv");
    std::fs::write(dir.path().join("check.toml"), text.replace("out.csv", "out2.csv")).unwrap();
    let release = kanon(dir.path(), &["check", "check.toml", "--json"]);
    assert_eq!(release.code, 0, "{}", release.both());
    let r: serde_json::Value = serde_json::from_str(&release.stdout).unwrap();
    assert!(r["k"].as_u64().unwrap() >= k, "{r}");
}
