//! Risk limits (`average_risk`, `sample_uniqueness`, estimated `k_map`)
//! against a brute force written here: every node of a generated table run
//! with `--node`, its suppression and glm compared with ARX's rule followed
//! on the node's classes one by one; the searches' optima; the release
//! re-measured. Population uniqueness by Zayatz's estimator, re-derived
//! here (hypergeometric, no solver); Pitman's and SNB's are compared with
//! ARX in bench/limits.sh and src/measure/risk.rs.

use crate::util::{brute_optimum, kanon, same, BruteForce, BruteMetrics, Class, Judged, Models, Row};
use kanon::options::Metric;
use std::collections::HashMap;
use std::path::Path;

const ROWS: usize = 400;
const BUDGET: u64 = 40;

/// The generated table (age, zip, sex), its hierarchies (files), and the rows as the brute force reads them.
fn generated(dir: &Path) -> (Vec<Row>, Vec<Vec<Vec<String>>>) {
    let mut state: u64 = 0x2545F4914F6CDD1D;
    let mut next = |m: u64| {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (state >> 33) % m
    };
    let zips = ["53711", "53712", "53715", "53721", "53803", "53805", "54001", "54012"];
    let mut csv = String::from("id,age,zip,sex\n");
    let mut rows = Vec::new();
    for i in 0..ROWS {
        // Skewed: ages cluster in their twenties, zips in the first few.
        let age = if next(3) == 0 { next(60) } else { 20 + next(10) };
        let zip = zips[(next(8) * next(8) / 8) as usize];
        let sex = if next(2) == 0 { "M" } else { "F" };
        csv.push_str(&format!("{i},{age},{zip},{sex}\n"));
        rows.push(Row {
            qi: vec![age.to_string(), zip.into(), sex.into()],
            sensitive: String::new(),
            label: String::new(),
        });
    }
    std::fs::write(dir.join("people.csv"), csv).unwrap();
    let age: Vec<Vec<String>> = (0..60)
        .map(|a: u32| {
            let ten = format!("{}-{}", a / 10 * 10, a / 10 * 10 + 9);
            let thirty = format!("{}-{}", a / 30 * 30, a / 30 * 30 + 29);
            vec![a.to_string(), ten, thirty, "*".into()]
        })
        .collect();
    let zip: Vec<Vec<String>> = zips
        .iter()
        .map(|z| vec![z.to_string(), format!("{}*", &z[..4]), format!("{}**", &z[..3]), "*".into()])
        .collect();
    let sex: Vec<Vec<String>> = ["M", "F"].iter().map(|s| vec![s.to_string(), "*".into()]).collect();
    for (name, h) in [("age", &age), ("zip", &zip), ("sex", &sex)] {
        let text: String = h.iter().map(|r| r.join(";") + "\n").collect();
        std::fs::write(dir.join(format!("hierarchy_{name}.csv")), text).unwrap();
    }
    (rows, vec![age, zip, sex])
}

fn job(dir: &Path, limit: &str, metric: &str, algorithm: &str) -> std::path::PathBuf {
    let mut text = format!(
        "[source]\ncsv = \"people.csv\"\n[output]\ncsv = \"out.csv\"\nreport = \"report.json\"\nhistory = false\n\
         [privacy]\nk = 1\nmax_suppression = {BUDGET}\n{limit}\n[search]\nmetric = \"{metric}\"\nalgorithm = \"{algorithm}\"\n"
    );
    for q in ["age", "zip", "sex"] {
        text.push_str(&format!(
            "[[quasi_identifiers]]\ncolumn = \"{q}\"\nhierarchy = {{ file = \"hierarchy_{q}.csv\" }}\n"
        ));
    }
    let path = dir.join("job.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// A limit as the brute force judges it on the kept classes' sizes.
#[derive(Clone, Copy)]
enum Limit {
    Average(f64),
    /// (average, highest, records at risk): classes under `smallest` records are at risk.
    Relaxed(f64, u64, f64),
    Uniques(f64),
    /// Estimated k-map: its derived k (checked against ARX's formula in the unit tests).
    KMap(u64),
    /// Population uniqueness by Zayatz's estimator at most this share (N: the rows over 1%).
    Zayatz(f64),
}

/// Zayatz's estimate of the share of population uniques among N for kept
/// classes of these sizes (none: no estimate): the sample uniques times
/// P(a sample unique is a population unique) over the sampling fraction, a
/// class of sample size f taken as f population records, drawn without
/// replacement: P(exactly one of f in n draws from N).
fn zayatz(sizes: &[u64], big_n: u64) -> Option<f64> {
    let (u, n) = (sizes.len() as f64, sizes.iter().sum::<u64>());
    let c1 = sizes.iter().filter(|&&s| s == 1).count() as f64;
    let one_of = |f: u64| {
        // f · n · Π_{j<f-1} (N − n − j) / Π_{j<f} (N − j)
        let mut p = (f * n) as f64 / big_n as f64;
        for j in 0..f - 1 {
            p *= (big_n - n - j) as f64 / (big_n - 1 - j) as f64;
        }
        p
    };
    let all: f64 = sizes.iter().map(|&f| one_of(f) / u).sum();
    let uniques = c1 * (c1 / u * one_of(1) / all) / (n as f64 / big_n as f64);
    (uniques.is_finite() && uniques > 0.0).then(|| uniques / big_n as f64)
}

impl Limit {
    fn holds(self, sizes: &[u64]) -> bool {
        let records: u64 = sizes.iter().sum();
        if records == 0 {
            return true;
        }
        let share = |f: &dyn Fn(u64) -> bool| sizes.iter().filter(|&&s| f(s)).sum::<u64>() as f64 / records as f64;
        match self {
            Limit::Average(t) => sizes.len() as f64 / records as f64 <= t,
            Limit::Relaxed(t, smallest, r) => sizes.len() as f64 / records as f64 <= t && share(&|s| s < smallest) <= r,
            Limit::Uniques(t) => share(&|s| s == 1) <= t,
            Limit::KMap(_) => true,
            // ARX's PopulationUniqueness: an estimate in (0, T], or no sample uniques.
            Limit::Zayatz(t) => match zayatz(sizes, (ROWS as f64 / 0.01).round() as u64) {
                Some(share) => share <= t,
                None => !sizes.contains(&1),
            },
        }
    }
}

/// ARX's rule on one node, class by class: k (raised by k-map) first, then
/// the kept classes by ascending size (of one size, the least lossy first)
/// suppressed by ARX's binary search over prefixes, as HashGroupifyDistribution does it.
fn judge(bf: &BruteForce, levels: &[u8], k: u64, limit: Limit) -> Judged {
    let k = match limit {
        Limit::KMap(derived) => k.max(derived),
        _ => k,
    };
    let classes = bf.classes(levels);
    let mut entries: Vec<&Class> = classes.iter().filter(|c| c.size >= k).collect();
    entries.sort_by(|a, b| a.size.cmp(&b.size).then(a.glm_cost.total_cmp(&b.glm_cost)));
    let mut out = vec![false; entries.len()];
    let holds = |out: &[bool]| {
        let sizes: Vec<u64> = entries.iter().zip(out).filter(|(_, &o)| !o).map(|(c, _)| c.size).collect();
        limit.holds(&sizes)
    };
    let under_k: u64 = bf.rows - entries.iter().map(|c| c.size).sum::<u64>();
    let taken = |out: &[bool]| under_k + entries.iter().zip(out).filter(|(_, &o)| o).map(|(c, _)| c.size).sum::<u64>();
    if !entries.is_empty() && !holds(&out) {
        let (mut low, mut high) = (0i64, entries.len() as i64 - 1);
        let mut mid = (low + high) / 2;
        out[..=mid as usize].iter_mut().for_each(|o| *o = true);
        let mut aborted = false;
        while low <= high {
            let fulfilled = holds(&out);
            // ARX's RiskBasedCriterion: a failing step past the budget ends the search.
            if !fulfilled && taken(&out) > BUDGET {
                aborted = true;
                break;
            }
            if fulfilled {
                high = mid - 1;
                mid = (low + high) / 2;
                let mut i = (mid + 1) as usize;
                while i < out.len() && out[i] {
                    out[i] = false;
                    i += 1;
                }
            } else {
                low = mid + 1;
                mid = (low + high) / 2;
                for o in out.iter_mut().take(mid as usize + 1).skip(low as usize) {
                    *o = true;
                }
            }
        }
        let next = (mid + 1) as usize;
        if !aborted && !holds(&out) && next < out.len() && !out[next] {
            out[next] = true;
        }
    }
    let kept: Vec<&Class> = entries.iter().zip(&out).filter(|(_, &o)| !o).map(|(c, _)| *c).collect();
    let suppressed = bf.rows - kept.iter().map(|c| c.size).sum::<u64>();
    let metrics: BruteMetrics = bf.metrics(levels, &kept);
    Judged {
        levels: levels.to_vec(),
        feasible: suppressed <= BUDGET,
        suppressed,
        k: kept.iter().map(|c| c.size).min(),
        l: None,
        classes: kept.len() as u64,
        metrics,
    }
}

fn node_arg(levels: &[u8]) -> String {
    format!("age={},zip={},sex={}", levels[0], levels[1], levels[2])
}

/// The released rows' classes: sizes of the rows grouped by their QI values.
fn released_sizes(dir: &Path) -> Vec<u64> {
    released_sizes_of(&dir.join("out.csv"))
}

fn released_sizes_of(path: &Path) -> Vec<u64> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut header = text.lines().next().unwrap().split(',');
    let cols: Vec<usize> =
        ["age", "zip", "sex"].iter().map(|q| header.clone().position(|h| h == *q).unwrap()).collect();
    header.next();
    let mut sizes: HashMap<Vec<String>, u64> = HashMap::new();
    for line in text.lines().skip(1) {
        let cells: Vec<&str> = line.split(',').collect();
        *sizes.entry(cols.iter().map(|&c| cells[c].to_string()).collect()).or_default() += 1;
    }
    sizes.into_values().collect()
}

fn report(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap()
}

#[test]
fn every_node_suppresses_as_arxs_rule_and_the_searches_find_the_optimum() {
    let dir = tempfile::tempdir().unwrap();
    let (rows, hierarchies) = generated(dir.path());
    let bf = BruteForce::new(&rows, &hierarchies, false, Models::default());
    // k_map { k = 60 } at the default 1% sampling fraction: λ = 0.6, P(X ≤ 2) = 0.977, P(X ≤ 3) = 0.9966, so k' = 5.
    let limits = [
        ("average_risk = 0.1", Limit::Average(0.1)),
        ("average_risk = 0.25", Limit::Average(0.25)),
        ("average_risk = { average = 0.2, highest = 0.2, records_at_risk = 0.05 }", Limit::Relaxed(0.2, 5, 0.05)),
        ("sample_uniqueness = 0.01", Limit::Uniques(0.01)),
        ("k_map = { k = 60, significance = 0.01 }", Limit::KMap(5)),
        ("population_uniqueness = { threshold = 0.004, estimator = \"zayatz\" }", Limit::Zayatz(0.004)),
        ("population_uniqueness = { threshold = 0.0015, estimator = \"zayatz\" }", Limit::Zayatz(0.0015)),
    ];
    let mut partial = 0;
    for (toml, limit) in limits {
        let judged: Vec<Judged> = bf.nodes().iter().map(|l| judge(&bf, l, 1, limit)).collect();
        for (i, j) in judged.iter().enumerate() {
            // A glm job's histograms tell classes of one size apart by their
            // loss, a dm job's do not: both release what the rule takes.
            let metric = if i % 2 == 0 { "glm" } else { "dm" };
            let job = job(dir.path(), toml, metric, "auto");
            let out = kanon(dir.path(), &["run", job.to_str().unwrap(), "--node", &node_arg(&j.levels)]);
            if !j.feasible {
                assert_eq!(
                    out.code, 3,
                    "{toml} at {:?}: the brute force finds it infeasible\n{}",
                    j.levels, out.stderr
                );
                continue;
            }
            assert_eq!(out.code, 0, "{toml} at {:?}: {}", j.levels, out.stderr);
            let r = report(dir.path());
            assert_eq!(r["suppressed"], j.suppressed, "{toml} at {:?}", j.levels);
            let glm = r["metrics"]["glm"].as_f64().unwrap();
            assert!(
                same(glm, j.metrics.glm),
                "{toml} at {:?} ({metric}): glm {glm} against {}",
                j.levels,
                j.metrics.glm
            );
            let dm = r["metrics"]["dm"].as_f64().unwrap();
            assert!(same(dm, j.metrics.dm), "{toml} at {:?} ({metric}): dm {dm} against {}", j.levels, j.metrics.dm);
            // Re-measured: the released classes are the kept ones, and the limit holds on them.
            let sizes = released_sizes(dir.path());
            assert_eq!(sizes.iter().sum::<u64>(), bf.rows - j.suppressed);
            assert_eq!(sizes.len() as u64, j.classes, "{toml} at {:?}", j.levels);
            assert!(limit.holds(&sizes), "{toml} at {:?}: the release breaks the limit", j.levels);
            if r["risk_limits"]["holds"] == false {
                panic!("{toml} at {:?}: the report says the limit fails", j.levels);
            }
            let k_part: u64 = bf
                .classes(&j.levels)
                .iter()
                .filter(|c| c.size < if let Limit::KMap(d) = limit { d } else { 1 })
                .map(|c| c.size)
                .sum();
            if j.suppressed > k_part {
                partial += 1;
            }
        }
        for metric in [Metric::Glm, Metric::Dm] {
            let best = brute_optimum(&judged, metric).expect("a feasible node");
            let bottomup = if metric == Metric::Dm { &["bottomup"][..] } else { &[] };
            for &algorithm in ["auto", "topdown", "incognito", "exhaustive"].iter().chain(bottomup) {
                let job = job(dir.path(), toml, metric.name(), algorithm);
                let out = kanon(dir.path(), &["run", job.to_str().unwrap()]);
                assert_eq!(out.code, 0, "{toml} {algorithm}: {}", out.stderr);
                let r = report(dir.path());
                if algorithm == "auto" {
                    // k = 1: nothing prunes top-down, and dm's bound is from below
                    // (estimated k-map raises k to its derived k).
                    let k_is_1 = !matches!(limit, Limit::KMap(_));
                    let picked = if metric == Metric::Dm && k_is_1 { "bottomup" } else { "topdown" };
                    assert_eq!(r["algorithm"], picked, "{toml}, {}", metric.name());
                }
                let node: Vec<u8> = ["age", "zip", "sex"]
                    .iter()
                    .map(|q| r["node"][q].as_u64().unwrap_or_else(|| panic!("{toml} {algorithm}: {r}")) as u8)
                    .collect();
                assert_eq!(node, best.levels, "{toml}, {} with {algorithm}", metric.name());
                assert_eq!(r["suppressed"], best.suppressed);
            }
        }
    }
    // The rule took classes beyond k at some nodes (else the test would not test it).
    assert!(partial >= 10, "only {partial} nodes suppressed beyond k");
}

/// The generated table as `population.csv` and every second row of it as
/// the source (`people.csv`); the brute force over each.
fn sample_and_population(dir: &Path) -> (BruteForce, BruteForce) {
    let (rows, hierarchies) = generated(dir);
    let text = std::fs::read_to_string(dir.join("people.csv")).unwrap();
    std::fs::rename(dir.join("people.csv"), dir.join("population.csv")).unwrap();
    let subset: String =
        text.lines().enumerate().filter(|(i, _)| *i == 0 || i % 2 == 1).map(|(_, l)| format!("{l}\n")).collect();
    std::fs::write(dir.join("people.csv"), subset).unwrap();
    let sample: Vec<Row> = rows.iter().step_by(2).cloned().collect();
    let bf = BruteForce::new(&sample, &hierarchies, false, Models::default());
    (bf, BruteForce::new(&rows, &hierarchies, false, Models::default()))
}

/// Exact k-map and δ-presence: the source is every second row of the
/// generated table, the population all of it; each class of the source is
/// judged against the population's class of the same values.
#[test]
fn exact_k_map_and_delta_presence_judge_every_node_as_the_brute_force() {
    let dir = tempfile::tempdir().unwrap();
    let (bf, population) = sample_and_population(dir.path());
    let cases: [(&str, Box<dyn Fn(u64, u64) -> bool>); 3] = [
        ("k_map = { k = 6 }", Box::new(|_, big_f| big_f >= 6)),
        (
            "delta_presence = { min = 0.2, max = 0.6 }",
            Box::new(|f, big_f| (0.2..=0.6).contains(&(f as f64 / big_f as f64))),
        ),
        (
            "delta_presence = { min = 0.0, max = 0.5 }\nk_map = { k = 3 }",
            Box::new(|f, big_f| big_f >= 3 && f as f64 / big_f as f64 <= 0.5),
        ),
    ];
    let mut rejected = 0;
    for (toml, admits) in &cases {
        let limit = format!("{toml}\n[risk]\npopulation_table = {{ csv = \"population.csv\" }}");
        let judged: Vec<Judged> = bf
            .nodes()
            .iter()
            .map(|levels| {
                let big: HashMap<Vec<usize>, u64> =
                    population.classes(levels).into_iter().map(|c| (c.values.clone(), c.size)).collect();
                let classes = bf.classes(levels);
                let kept: Vec<&Class> = classes.iter().filter(|c| admits(c.size, big[&c.values])).collect();
                rejected += classes.len() - kept.len();
                let suppressed = bf.rows - kept.iter().map(|c| c.size).sum::<u64>();
                Judged {
                    levels: levels.clone(),
                    feasible: suppressed <= BUDGET,
                    suppressed,
                    k: kept.iter().map(|c| c.size).min(),
                    l: None,
                    classes: kept.len() as u64,
                    metrics: bf.metrics(levels, &kept),
                }
            })
            .collect();
        for j in &judged {
            let job = job(dir.path(), &limit, "glm", "auto");
            let out = kanon(dir.path(), &["run", job.to_str().unwrap(), "--node", &node_arg(&j.levels)]);
            if !j.feasible {
                assert_eq!(out.code, 3, "{toml} at {:?}\n{}", j.levels, out.stderr);
                continue;
            }
            assert_eq!(out.code, 0, "{toml} at {:?}: {}", j.levels, out.stderr);
            let r = report(dir.path());
            assert_eq!(r["suppressed"], j.suppressed, "{toml} at {:?}", j.levels);
            assert!(same(r["metrics"]["glm"].as_f64().unwrap(), j.metrics.glm), "{toml} at {:?}", j.levels);
            assert_eq!(released_sizes(dir.path()).len() as u64, j.classes, "{toml} at {:?}", j.levels);
        }
        for metric in [Metric::Glm, Metric::Dm] {
            let best = brute_optimum(&judged, metric).expect("a feasible node");
            let bottomup = if metric == Metric::Dm { &["bottomup"][..] } else { &[] };
            for &algorithm in ["auto", "incognito"].iter().chain(bottomup) {
                let job = job(dir.path(), &limit, metric.name(), algorithm);
                let out = kanon(dir.path(), &["run", job.to_str().unwrap()]);
                assert_eq!(out.code, 0, "{toml} {algorithm}: {}", out.stderr);
                let r = report(dir.path());
                let node: Vec<u8> =
                    ["age", "zip", "sex"].iter().map(|q| r["node"][q].as_u64().unwrap() as u8).collect();
                assert_eq!(node, best.levels, "{toml}, {} with {algorithm}", metric.name());
                assert_eq!(r["suppressed"], best.suppressed);
            }
        }
    }
    assert!(rejected > 50, "the models rejected only {rejected} classes over all nodes");
}

#[test]
fn check_audits_the_limits_on_a_release() {
    let dir = tempfile::tempdir().unwrap();
    let (rows, hierarchies) = generated(dir.path());
    let bf = BruteForce::new(&rows, &hierarchies, false, Models::default());
    // The first node where the limit suppresses within the budget.
    let j = (bf.nodes().iter().map(|l| judge(&bf, l, 1, Limit::Average(0.1))))
        .find(|j| j.feasible && j.suppressed > 0)
        .expect("a node where the limit suppresses");
    let levels = j.levels.clone();
    let job = job(dir.path(), "average_risk = 0.1", "glm", "auto");
    let out = kanon(dir.path(), &["run", job.to_str().unwrap(), "--node", &node_arg(&levels)]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    // The release read back as a source: its classes meet the limit, and not a stricter one.
    let release = dir.path().join("release.csv");
    std::fs::rename(dir.path().join("out.csv"), &release).unwrap();
    let audit = |limit: &str| {
        let text = std::fs::read_to_string(self::job(dir.path(), limit, "glm", "auto")).unwrap();
        let text = text.replacen("people.csv", "release.csv", 1);
        std::fs::write(dir.path().join("check.toml"), text).unwrap();
        kanon(dir.path(), &["check", "check.toml", "--json"])
    };
    let out = audit("average_risk = 0.1");
    assert_eq!(out.code, 0, "{}", out.stderr);
    let r: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let sizes = released_sizes_of(&release);
    let reached = sizes.len() as f64 / sizes.iter().sum::<u64>() as f64;
    assert!(same(r["risk_limits"]["average_risk"]["reached"].as_f64().unwrap(), reached));
    assert!(reached <= 0.1);
    let stricter = reached * 0.9;
    let out = audit(&format!("average_risk = {stricter}"));
    assert_eq!(out.code, 4, "{}", out.stderr);
    assert!(out.stderr.contains("average risk at most"), "{}", out.stderr);
    let uniques = sizes.iter().filter(|&&s| s == 1).count();
    if uniques > 0 {
        let out = audit("sample_uniqueness = 0.0");
        assert_eq!(out.code, 4, "{}", out.stderr);
        let r: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
        let failure = r["failures"].as_array().unwrap().iter().find(|f| f["model"] == "sample_uniqueness").unwrap();
        assert_eq!(failure["classes"], uniques as u64);
    }
}

/// `kanon check` of a release against the population: the population is
/// generalized to the release's levels (read off its values), so each
/// released class is matched with its population class.
#[test]
fn check_judges_a_release_against_the_population_at_its_levels() {
    let dir = tempfile::tempdir().unwrap();
    let (bf, population) = sample_and_population(dir.path());
    let with = |k: u64| format!("k_map = {{ k = {k} }}\n[risk]\npopulation_table = {{ csv = \"population.csv\" }}");
    let job = job(dir.path(), &with(3), "glm", "auto");
    let out = kanon(dir.path(), &["run", job.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let r = report(dir.path());
    let levels: Vec<u8> = ["age", "zip", "sex"].iter().map(|q| r["node"][q].as_u64().unwrap() as u8).collect();
    assert!(levels.iter().any(|&l| l > 0), "the release is generalized: {levels:?}");
    // The brute force's smallest population class among the released ones.
    let big: HashMap<Vec<usize>, u64> =
        population.classes(&levels).into_iter().map(|c| (c.values.clone(), c.size)).collect();
    let smallest = bf.classes(&levels).iter().map(|c| big[&c.values]).filter(|&f| f >= 3).min().unwrap();
    std::fs::rename(dir.path().join("out.csv"), dir.path().join("release.csv")).unwrap();
    let audit = |k: u64| {
        let text = std::fs::read_to_string(self::job(dir.path(), &with(k), "glm", "auto")).unwrap();
        std::fs::write(dir.path().join("check.toml"), text.replacen("people.csv", "release.csv", 1)).unwrap();
        kanon(dir.path(), &["check", "check.toml", "--json"])
    };
    let out = audit(smallest);
    assert_eq!(out.code, 0, "k-map {smallest} holds on the release: {}", out.stderr);
    let out = audit(smallest + 1);
    assert_eq!(out.code, 4, "k-map {} fails on the release: {}", smallest + 1, out.stderr);
    assert!(out.stderr.contains("k-map"), "{}", out.stderr);
}

#[test]
fn reuse_keeps_the_node_while_the_limit_holds() {
    let dir = tempfile::tempdir().unwrap();
    let (rows, hierarchies) = generated(dir.path());
    let bf = BruteForce::new(&rows, &hierarchies, false, Models::default());
    let run = |limit: &str| {
        let job = job(dir.path(), limit, "glm", "auto");
        let text = std::fs::read_to_string(&job).unwrap().replace("[search]\n", "[search]\nreuse = \"previous\"\n");
        std::fs::write(&job, text).unwrap();
        let out = kanon(dir.path(), &["run", job.to_str().unwrap(), "--quiet"]);
        assert_eq!(out.code, 0, "{limit}: {}", out.stderr);
        report(dir.path())
    };
    let node = |r: &serde_json::Value| -> Vec<u8> {
        ["age", "zip", "sex"].iter().map(|q| r["node"][q].as_u64().unwrap() as u8).collect()
    };
    let optimum =
        |limit| brute_optimum(&bf.nodes().iter().map(|l| judge(&bf, l, 1, limit)).collect::<Vec<_>>(), Metric::Glm);
    let first = run("average_risk = 0.25");
    assert_eq!(node(&first), optimum(Limit::Average(0.25)).unwrap().levels);
    let again = run("average_risk = 0.25");
    assert_eq!(again["reused"], true, "{again}");
    assert_eq!(node(&again), node(&first));
    // A stricter limit the node no longer meets: searched again, today's optimum.
    let strict = optimum(Limit::Average(0.1)).unwrap();
    let after = run("average_risk = 0.1");
    if judge(&bf, &node(&first), 1, Limit::Average(0.1)).feasible {
        assert_eq!(after["reused"], true);
    } else {
        assert_eq!(after["reused"], false);
        assert_eq!(node(&after), strict.levels);
    }
}

#[test]
fn risk_limits_refuse_what_they_do_not_combine_with() {
    let dir = tempfile::tempdir().unwrap();
    generated(dir.path());
    let job = job(dir.path(), "average_risk = 0.1\nperson = \"id\"", "glm", "auto");
    let text = std::fs::read_to_string(&job).unwrap().replace("history = false", "history = false\ndrop = [\"id\"]");
    std::fs::write(&job, text).unwrap();
    let out = kanon(dir.path(), &["run", job.to_str().unwrap()]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("average_risk") && out.stderr.contains("person"), "{}", out.stderr);
    let job = self::job(dir.path(), "sample_uniqueness = 2.0", "glm", "auto");
    let out = kanon(dir.path(), &["run", job.to_str().unwrap()]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("sample_uniqueness must be in [0, 1]"), "{}", out.stderr);
    let job = self::job(
        dir.path(),
        "average_risk = 0.1\ndifferential_privacy = { epsilon = 2.0, delta = 1e-6 }",
        "glm",
        "auto",
    );
    let text = std::fs::read_to_string(&job)
        .unwrap()
        .replace("k = 1\n", "")
        .replace(&format!("max_suppression = {BUDGET}\n"), "");
    std::fs::write(&job, text).unwrap();
    let out = kanon(dir.path(), &["run", job.to_str().unwrap()]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("risk limits"), "{}", out.stderr);
    let job = self::job(dir.path(), "average_risk = 0.1", "glm", "auto");
    let out = kanon(dir.path(), &["pareto", job.to_str().unwrap()]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("average_risk"), "{}", out.stderr);
    // Bottom-up's bound is dm's.
    let job = self::job(dir.path(), "average_risk = 0.1", "glm", "bottomup");
    let out = kanon(dir.path(), &["run", job.to_str().unwrap()]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("bottomup") && out.stderr.contains("dm"), "{}", out.stderr);
}

/// A population table must code through the hierarchies: a value a
/// hierarchy does not list, or a QI column it lacks, exits 2 naming it.
#[test]
fn a_population_outside_the_hierarchies_exits_2_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    generated(dir.path());
    let people = std::fs::read_to_string(dir.path().join("people.csv")).unwrap();
    let limit = "k_map = { k = 3 }\n[risk]\npopulation_table = { csv = \"population.csv\" }";
    let job = job(dir.path(), limit, "glm", "auto");
    // Covered: the run passes.
    std::fs::write(dir.path().join("population.csv"), &people).unwrap();
    let out = kanon(dir.path(), &["run", job.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    // A zip the hierarchy does not list.
    std::fs::write(dir.path().join("population.csv"), format!("{people}99999,25,99999,M\n")).unwrap();
    let out = kanon(dir.path(), &["run", job.to_str().unwrap()]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("\"zip\"") && out.stderr.contains("99999"), "{}", out.stderr);
    // No sex column.
    let without: String = people.lines().map(|l| l.rsplit_once(',').unwrap().0.to_string() + "\n").collect();
    std::fs::write(dir.path().join("population.csv"), without).unwrap();
    let out = kanon(dir.path(), &["run", job.to_str().unwrap()]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("\"sex\" is not a column of [risk] population_table"), "{}", out.stderr);
}
