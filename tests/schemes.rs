//! The scheme search against a brute force written here: every valid
//! anonymization of small tables (hand-made, and Adult on a few small QIs),
//! its cost computed from the source rows, for dm and hdm and several k. The
//! optimal costs keep the schemes' order, and every release is re-measured.

use kanon::evaluator::memory::MemorySets;
use kanon::frequency::Extras;
use kanon::job::{Job, Metric};
use kanon::load::load;
use kanon::scheme::{numeric_type, Domain, HierarchyRows, Scheme, State};
use kanon::search::partitions::{dp_qi, search, DpChoice, Problem, Pruning};
use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::sync::Arc;

/// A table of `rows` records over three QIs (a categorical with a 3-level
/// hierarchy, a numeric one, a flat one), from a fixed linear congruential
/// sequence, with its hierarchy files, in `dir`.
fn hand_made(dir: &Path, rows: usize, seed: u64) {
    let mut x = seed;
    let mut next = |m: u64| {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (x >> 33) % m
    };
    let jobs = ["clerk", "nurse", "doctor", "baker", "cook"];
    let mut csv = String::from("id;job;age;city\n");
    for i in 0..rows {
        // Skewed so that some values are rare.
        let j = [0, 0, 0, 1, 1, 2, 3, 3, 4][next(9) as usize];
        let age = [20, 20, 25, 30, 30, 35, 40][next(7) as usize];
        let city = ["N", "N", "S", "W"][next(4) as usize];
        csv.push_str(&format!("{i};{};{age};{city}\n", jobs[j]));
    }
    std::fs::write(dir.join("t.csv"), csv).unwrap();
    std::fs::write(
        dir.join("job.csv"),
        "clerk;office;work\nnurse;care;work\ndoctor;care;work\nbaker;food;work\ncook;food;work\nchef;food;work\n",
    )
    .unwrap();
    // "chef" and 45 never occur: absent leaves a block may cover.
    std::fs::write(dir.join("age.csv"), "20;20-29;*\n25;20-29;*\n30;30-39;*\n35;30-39;*\n40;40-49;*\n45;40-49;*\n")
        .unwrap();
    std::fs::write(dir.join("city.csv"), "N;*\nS;*\nW;*\n").unwrap();
}

fn job_text(source: &str, qis: &[(&str, &str)]) -> String {
    let mut t = format!(
        "[source]\n{source}\ndelimiter = \";\"\n[output]\ncsv = \"out.csv\"\nreport = \"r.json\"\n[privacy]\nk = 2\n"
    );
    for (c, h) in qis {
        t.push_str(&format!("[[quasi_identifiers]]\ncolumn = \"{c}\"\nhierarchy = {{ file = \"{h}\" }}\n"));
    }
    t
}

/// The source's records as leaf indices per QI (through the domains' value
/// texts), equal ones counted together.
fn records(path: &Path, qis: &[String], domains: &[Domain]) -> Vec<(Vec<u32>, u64)> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(';').collect();
    let cols: Vec<usize> = qis.iter().map(|q| header.iter().position(|h| h == q).unwrap()).collect();
    let index: Vec<HashMap<String, u32>> = domains
        .iter()
        .map(|d| d.values.iter().enumerate().map(|(i, v)| (v.clone().unwrap(), i as u32)).collect())
        .collect();
    let mut counted: HashMap<Vec<u32>, u64> = HashMap::new();
    for l in lines {
        let f: Vec<&str> = l.split(';').collect();
        *counted.entry(cols.iter().enumerate().map(|(a, &c)| index[a][f[c]]).collect()).or_default() += 1;
    }
    let mut out: Vec<(Vec<u32>, u64)> = counted.into_iter().collect();
    out.sort();
    out
}

/// Every partition the domain's enumeration reaches (the enumeration itself
/// is checked against the schemes' definitions in scheme.rs).
fn partitions(d: &Domain) -> Vec<Arc<State>> {
    let mut out = Vec::new();
    let mut stack = vec![d.root()];
    while let Some(s) = stack.pop() {
        stack.extend(d.children(&s));
        out.push(s);
    }
    out
}

/// dm or hdm of one anonymization, from the records; the suppressed count;
/// the cost as the search compares it (docs/schemes.md): dm itself, hdm
/// times the QIs with each value's penalty rounded to 10⁻¹².
fn cost(recs: &[(Vec<u32>, u64)], parts: &[&State], k: u64, metric: Metric) -> (f64, u64, i128) {
    let n: f64 = recs.iter().map(|r| r.1 as f64).sum();
    let m = parts.len();
    let key = |r: &[u32]| -> Vec<u32> { r.iter().zip(parts).map(|(&v, p)| p.blocks[v as usize]).collect() };
    let mut classes: HashMap<Vec<u32>, u64> = HashMap::new();
    // hdm per QI value: (N_e − N_v) / (N − N_v).
    let mut nv: Vec<HashMap<u32, f64>> = vec![HashMap::new(); m];
    let mut ne: Vec<HashMap<u32, f64>> = vec![HashMap::new(); m];
    for (r, w) in recs {
        *classes.entry(key(r)).or_default() += w;
        for a in 0..m {
            *nv[a].entry(r[a]).or_default() += *w as f64;
            *ne[a].entry(parts[a].blocks[r[a] as usize]).or_default() += *w as f64;
        }
    }
    let mut total = 0.0;
    let mut compared: i128 = 0;
    let mut suppressed = 0;
    for (r, w) in recs {
        let size = classes[&key(r)];
        let (each, units) = if size < k {
            suppressed += w;
            if metric == Metric::Dm {
                (n, n as i128)
            } else {
                (1.0, m as i128 * 1_000_000_000_000)
            }
        } else if metric == Metric::Dm {
            (size as f64, size as i128)
        } else {
            let (mut c, mut u) = (0.0, 0i128);
            for a in 0..m {
                let v = nv[a][&r[a]];
                if v < n {
                    let pen = (ne[a][&parts[a].blocks[r[a] as usize]] - v) / (n - v);
                    c += pen;
                    u += (pen * 1e12).round() as i128;
                }
            }
            (c / m as f64, u)
        };
        total += *w as f64 * each;
        compared += *w as i128 * units;
    }
    (total, suppressed, compared)
}

/// The brute-force optimum: least cost as the search compares it, then more
/// blocks, then the smaller partition vector. Returns (cost, vectors).
fn brute_force(recs: &[(Vec<u32>, u64)], domains: &[Domain], k: u64, metric: Metric) -> (f64, Vec<Vec<u32>>) {
    let all: Vec<Vec<Arc<State>>> = domains.iter().map(partitions).collect();
    let mut idx = vec![0usize; all.len()];
    let mut best: Option<(i128, i64, Vec<Vec<u32>>, f64)> = None;
    loop {
        let parts: Vec<&State> = idx.iter().zip(&all).map(|(&i, l)| l[i].as_ref()).collect();
        let (c, _, compared) = cost(recs, &parts, k, metric);
        let blocks: i64 = parts.iter().map(|p| p.nblocks as i64).sum();
        let vector: Vec<Vec<u32>> = parts.iter().zip(domains).map(|(p, d)| d.canonical(&p.blocks)).collect();
        let key = (compared, -blocks, vector, c);
        if best.as_ref().is_none_or(|b| (key.0, key.1, &key.2) < (b.0, b.1, &b.2)) {
            best = Some(key);
        }
        let mut a = 0;
        while a < idx.len() {
            idx[a] += 1;
            if idx[a] < all[a].len() {
                break;
            }
            idx[a] = 0;
            a += 1;
        }
        if a == idx.len() {
            break;
        }
    }
    let b = best.unwrap();
    (b.3, b.2)
}

/// Load `job` and check every scheme, metric and k against the brute force;
/// returns the optimal cost per (scheme, metric, k).
fn check(job: &Job, source: &Path, ks: &[u64]) -> HashMap<(Scheme, &'static str, u64), f64> {
    let loaded = load(job).unwrap();
    let qis = job.qi_names();
    let sets = MemorySets::new(&loaded.conn, &loaded.data.heights, Extras::default(), Some(2)).unwrap();
    let (codes, counts) = sets.base_columns();
    let mut out = HashMap::new();
    for scheme in Scheme::ALL {
        let domains: Vec<Domain> = qis
            .iter()
            .enumerate()
            .map(|(a, q)| {
                let numeric = loaded.columns.iter().find(|c| c.name == *q).is_some_and(|c| numeric_type(&c.type_name));
                let h = HierarchyRows::read(&loaded.conn, a, loaded.data.heights[a]).unwrap();
                Domain::new(q, scheme, numeric, &h).unwrap()
            })
            .collect();
        let recs = records(source, &qis, &domains);
        for (metric, name) in [(Metric::Dm, "dm"), (Metric::Hdm, "hdm")] {
            for &k in ks {
                let (want_cost, want) = brute_force(&recs, &domains, k, metric);
                let p = Problem { codes, counts, domains: &domains, k, cap: None, metric, threads: None };
                let mut offs = vec![
                    Pruning::default(),
                    Pruning { seeding: false, modified_bfs: false, dp: DpChoice::Off, ..Pruning::default() },
                    Pruning { node_order: false, applicator_order: false, dp: DpChoice::Off, ..Pruning::default() },
                ];
                // The DP on each QI it can take, with and without the other techniques.
                for a in (0..domains.len()).filter(|&a| dp_qi(&p, DpChoice::Qi(a)).is_some()) {
                    offs.push(Pruning { dp: DpChoice::Qi(a), ..Pruning::default() });
                    offs.push(Pruning {
                        seeding: false,
                        modified_bfs: false,
                        node_order: false,
                        applicator_order: false,
                        dp: DpChoice::Qi(a),
                    });
                }
                for pruning in offs {
                    let got = search(&p, pruning, None).unwrap();
                    assert_eq!(got.dp_qi, dp_qi(&p, pruning.dp));
                    let parts: Vec<&State> = got.partitions.iter().map(|s| s.as_ref()).collect();
                    let (c, suppressed, _) = cost(&recs, &parts, k, metric);
                    let case = format!("{scheme:?} {name} k={k} {pruning:?}");
                    assert!((c - want_cost).abs() < 1e-6, "{case}: cost {c}, brute force {want_cost}");
                    let vector: Vec<Vec<u32>> =
                        parts.iter().zip(&domains).map(|(s, d)| d.canonical(&s.blocks)).collect();
                    assert_eq!(vector, want, "{case}: not the brute force's tie-break");
                    assert_eq!(got.measures.suppressed, suppressed, "{case}");
                    let reported = if metric == Metric::Dm { got.measures.dm } else { got.measures.hdm };
                    assert!((reported - c).abs() < 1e-6, "{case}: reported {reported}");
                }
                out.insert((scheme, name, k), want_cost);
            }
        }
    }
    out
}

/// BHS ⊂ GHS ⊂ GOPS ⊂ OPS ⊂ SPS and GOPS ⊂ GSPS ⊂ SPS: a larger space never costs more.
fn assert_order(costs: &HashMap<(Scheme, &'static str, u64), f64>) {
    use Scheme::*;
    for ((s, m, k), _) in costs.iter().filter(|(key, _)| key.0 == Sps) {
        let c = |s: Scheme| costs[&(s, *m, *k)];
        let _ = s;
        for (small, large) in [(Bhs, Ghs), (Ghs, Gops), (Gops, Ops), (Ops, Sps), (Gops, Gsps), (Gsps, Sps)] {
            assert!(c(large) <= c(small) + 1e-9, "{m} k={k}: {large:?} {} > {small:?} {}", c(large), c(small));
        }
    }
}

#[test]
fn schemes_equal_brute_force_on_hand_made_tables() {
    for (rows, seed) in [(40, 1), (60, 7)] {
        let dir = tempfile::tempdir().unwrap();
        hand_made(dir.path(), rows, seed);
        let text = job_text("csv = \"t.csv\"", &[("job", "job.csv"), ("age", "age.csv"), ("city", "city.csv")]);
        let job = Job::parse(&dir.path().join("job.toml"), &text).unwrap();
        let costs = check(&job, &dir.path().join("t.csv"), &[2, 3, 5]);
        assert_order(&costs);
    }
}

#[test]
fn schemes_equal_brute_force_on_adult_small_qis() {
    let adult = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/adult");
    if !adult.join("adult.csv").exists() {
        println!("skipped: ../shared/data/adult is absent");
        return;
    }
    let h = |q: &str| adult.join(format!("hierarchy_{q}.csv")).display().to_string();
    let (race, sex, marital) = (h("race"), h("sex"), h("marital-status"));
    let text = job_text(
        &format!("csv = \"{}\"", adult.join("adult.csv").display()),
        &[("race", &race), ("sex", &sex), ("marital-status", &marital)],
    );
    let dir = tempfile::tempdir().unwrap();
    let job = Job::parse(&dir.path().join("job.toml"), &text).unwrap();
    let costs = check(&job, &adult.join("adult.csv"), &[10, 100]);
    assert_order(&costs);
}

/// lm and am of a hand-made release, from the released rows (`id`, job, age,
/// city) and the report's partitions: a cell stands for its block's values
/// and for each absent hierarchy leaf whose nearest ancestor with present
/// values has all of them in the block; a suppressed row for every leaf.
fn lm_am(dir: &Path, source: &[Vec<String>], released: &[Vec<String>], report: &serde_json::Value) -> (f64, f64) {
    let suppressed = (source.len() - released.len()) as f64;
    let (mut lm, mut everything) = (0.0, 1.0);
    let mut products = vec![1.0; released.len()];
    for (a, q) in ["job", "age", "city"].iter().enumerate() {
        let hierarchy: HashMap<String, Vec<String>> = std::fs::read_to_string(dir.join(format!("{q}.csv")))
            .unwrap()
            .lines()
            .map(|l| l.split(';').map(String::from).collect::<Vec<_>>())
            .map(|r| (r[0].clone(), r))
            .collect();
        let present: BTreeSet<&String> = source.iter().map(|r| &r[a + 1]).collect();
        let blocks: Vec<Vec<String>> = serde_json::from_value(report["partitions"][q].clone()).unwrap();
        let covered = |v: &String| -> usize {
            let block = blocks.iter().find(|b| b.contains(v)).unwrap();
            let absent = hierarchy.iter().filter(|(leaf, _)| !present.contains(leaf)).filter(|(_, row)| {
                let under = (1..row.len())
                    .map(|l| present.iter().filter(|p| hierarchy[**p][l] == row[l]).collect::<Vec<_>>())
                    .find(|u| !u.is_empty())
                    .unwrap();
                under.iter().all(|p| block.contains(p))
            });
            block.len() + absent.count()
        };
        let leaves = hierarchy.len() as f64;
        for (r, product) in released.iter().zip(&mut products) {
            let c = covered(&source[r[0].parse::<usize>().unwrap()][a + 1]);
            lm += (c - 1) as f64 / (leaves - 1.0);
            *product *= c as f64;
        }
        lm += suppressed;
        everything *= leaves;
    }
    let am = products.iter().sum::<f64>() + suppressed * everything;
    (lm / (source.len() * 3) as f64, am / source.len() as f64)
}

/// `kanon run --scheme S` on a hand-made table: the release CSV is
/// k-anonymous over the QI labels, and each label stands for exactly one
/// block of the report's partition, the block holding the source value.
#[test]
fn releases_are_k_anonymous_and_label_their_blocks() {
    let dir = tempfile::tempdir().unwrap();
    hand_made(dir.path(), 60, 3);
    let k = 4;
    let text = job_text("csv = \"t.csv\"", &[("job", "job.csv"), ("age", "age.csv"), ("city", "city.csv")])
        .replace("k = 2", &format!("k = {k}"));
    std::fs::write(dir.path().join("job.toml"), text).unwrap();
    let source: Vec<Vec<String>> = std::fs::read_to_string(dir.path().join("t.csv"))
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.split(';').map(String::from).collect())
        .collect();
    for scheme in ["bhs", "ghs", "gops", "ops", "gsps", "sps"] {
        for metric in ["dm", "hdm"] {
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_kanon"))
                .args(["run", "job.toml", "--scheme", scheme, "--metric", metric, "--quiet"])
                .current_dir(dir.path())
                .output()
                .unwrap();
            assert!(out.status.success(), "{scheme} {metric}: {}", String::from_utf8_lossy(&out.stderr));
            let report: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(dir.path().join("r.json")).unwrap()).unwrap();
            let released = std::fs::read_to_string(dir.path().join("out.csv")).unwrap();
            let rows: Vec<Vec<String>> = released
                .lines()
                .skip(1)
                .map(|l| l.split(',').map(|f| f.trim_matches('"').to_string()).collect())
                .collect();
            assert_eq!(rows.len() as u64, report["rows_out"].as_u64().unwrap());
            let mut classes: HashMap<Vec<String>, u64> = HashMap::new();
            for r in &rows {
                *classes.entry(r[1..4].to_vec()).or_default() += 1;
            }
            assert!(classes.values().all(|&c| c >= k), "{scheme} {metric}: a released class under k");
            let (lm, am) = lm_am(dir.path(), &source, &rows, &report);
            let close = |x: f64, y: f64| (x - y).abs() <= 1e-9 * x.abs().max(1.0);
            let got = |m: &str| report["metrics"][m].as_f64().unwrap();
            assert!(close(got("lm"), lm), "{scheme} {metric}: lm {} against {lm}", got("lm"));
            assert!(close(got("am"), am), "{scheme} {metric}: am {} against {am}", got("am"));
            for (a, q) in ["job", "age", "city"].iter().enumerate() {
                let blocks = report["partitions"][q].as_array().unwrap();
                let block_of = |v: &str| {
                    blocks.iter().position(|b| b.as_array().unwrap().iter().any(|x| x.as_str() == Some(v))).unwrap()
                };
                // label → the one block its rows' source values lie in.
                let mut label_block: HashMap<&str, usize> = HashMap::new();
                for r in &rows {
                    let id: usize = r[0].parse().unwrap();
                    let b = block_of(&source[id][a + 1]);
                    let prev = *label_block.entry(r[a + 1].as_str()).or_insert(b);
                    assert_eq!(prev, b, "{scheme} {metric}: label {} covers two blocks of {q}", r[a + 1]);
                }
                let mut distinct: Vec<usize> = label_block.values().copied().collect();
                distinct.sort();
                distinct.dedup();
                assert_eq!(distinct.len(), label_block.len(), "{scheme} {metric}: two labels for one block of {q}");
            }
        }
    }
}
