//! The per-class privacy models (entropy and recursive ℓ, t-closeness under
//! the equal, hierarchical and ordered distances) against a brute force
//! written here from the source rows: every node's verdict, on both evaluator
//! backends, and the glm and dm optima of the default search and Incognito.

use kanon::evaluator::Backend;
use kanon::job::{Budget, Job};
use kanon::lattice::{Lattice, Node};
use kanon::load::{load, Loaded};
use kanon::measure::metrics::Requirement;
use kanon::options::Metric;
use kanon::search::{bottomup, incognito, topdown, Problem, Silent};
use num_bigint::BigUint;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;
use std::path::Path;

use crate::util::{adult_dir, hierarchy_rows};

/// A model as the brute force decides it (t as num/den, exactly).
#[derive(Debug, Clone)]
enum Model {
    Entropy { column: &'static str, l: u64 },
    Recursive { column: &'static str, c: (u64, u64), l: u64 },
    Equal { column: &'static str, t: (u64, u64) },
    Hierarchical { column: &'static str, t: (u64, u64), file: String },
    Ordered { column: &'static str, t: (u64, u64) },
}

impl Model {
    /// The job's `[privacy]` line.
    fn toml(&self) -> String {
        let t = |(n, d): (u64, u64)| format!("{}", n as f64 / d as f64);
        match self {
            Model::Entropy { column, l } => {
                format!("l_diversity = {{ column = \"{column}\", l = {l}, kind = \"entropy\" }}")
            }
            Model::Recursive { column, c, l } => {
                format!("l_diversity = {{ column = \"{column}\", l = {l}, kind = \"recursive\", c = {} }}", t(*c))
            }
            Model::Equal { column, t: x } => format!("t_closeness = {{ column = \"{column}\", t = {} }}", t(*x)),
            Model::Hierarchical { column, t: x, file } => format!(
                "t_closeness = {{ column = \"{column}\", t = {}, distance = \"hierarchical\", hierarchy = {{ file = \"{file}\" }} }}",
                t(*x)
            ),
            Model::Ordered { column, t: x } => {
                format!("t_closeness = {{ column = \"{column}\", t = {}, distance = \"ordered\" }}", t(*x))
            }
        }
    }

    fn column(&self) -> &'static str {
        match self {
            Model::Entropy { column, .. }
            | Model::Recursive { column, .. }
            | Model::Equal { column, .. }
            | Model::Hierarchical { column, .. }
            | Model::Ordered { column, .. } => column,
        }
    }
}

/// The source as the brute force reads it: per row, each QI's value at
/// every level numbered, and glm's share of it.
struct Source {
    /// Per QI and level: each row's value there, numbered; and the count of numbers.
    ids: Vec<Vec<Vec<u32>>>,
    radix: Vec<Vec<u64>>,
    /// Per QI and level: each row's (leaves under its value − 1) / (leaves − 1).
    loss: Vec<Vec<Vec<f64>>>,
    rows: Vec<HashMap<String, String>>,
}

impl Source {
    fn read(csv: &Path, delimiter: char, qis: &[(&str, &Path)]) -> Source {
        let text = std::fs::read_to_string(csv).unwrap();
        let mut lines = text.lines();
        let header: Vec<String> = lines.next().unwrap().split(delimiter).map(String::from).collect();
        let rows: Vec<HashMap<String, String>> = lines
            .filter(|l| !l.is_empty())
            .map(|l| header.iter().cloned().zip(l.split(delimiter).map(String::from)).collect())
            .collect();
        let mut out = Source { ids: Vec::new(), radix: Vec::new(), loss: Vec::new(), rows };
        for (column, file) in qis {
            let hierarchy = hierarchy_rows(file);
            let height = hierarchy[0].len() - 1;
            let mut leaves = vec![HashMap::new(); height + 1];
            for r in &hierarchy {
                for (l, v) in r.iter().enumerate() {
                    *leaves[l].entry(v.clone()).or_insert(0u64) += 1;
                }
            }
            let path: HashMap<&String, &Vec<String>> = hierarchy.iter().map(|r| (&r[0], r)).collect();
            let all = leaves[0].len() as f64;
            let (mut ids, mut radix, mut loss) = (Vec::new(), Vec::new(), Vec::new());
            for l in 0..=height {
                let mut number: HashMap<&String, u32> = HashMap::new();
                let (mut i, mut x) = (Vec::new(), Vec::new());
                for row in &out.rows {
                    let v = &path[&row[*column]][l];
                    let next = number.len() as u32;
                    i.push(*number.entry(v).or_insert(next));
                    x.push(if all > 1.0 { (leaves[l][v] as f64 - 1.0) / (all - 1.0) } else { 0.0 });
                }
                radix.push(number.len() as u64);
                ids.push(i);
                loss.push(x);
            }
            out.ids.push(ids);
            out.radix.push(radix);
            out.loss.push(loss);
        }
        out
    }

    /// The rows of each equivalence class at a node.
    fn classes(&self, levels: &[u8]) -> Vec<Vec<usize>> {
        let mut classes: HashMap<u64, Vec<usize>> = HashMap::new();
        for r in 0..self.rows.len() {
            let mut key = 0u64;
            for (a, &l) in levels.iter().enumerate() {
                key = key * self.radix[a][l as usize] + self.ids[a][l as usize][r] as u64;
            }
            classes.entry(key).or_default().push(r);
        }
        classes.into_values().collect()
    }
}

/// Counts per value.
fn counts<'a>(values: impl Iterator<Item = &'a String>) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for v in values {
        *out.entry(v.clone()).or_insert(0) += 1;
    }
    out
}

/// Does one class meet one model? `class`: the class's values of the model's
/// column; `all`: the column over every source row.
/// `tree`: the hierarchy's rows, for the hierarchical distance.
fn meets(model: &Model, class: &[&String], all: &BTreeMap<String, u64>, tree: &[Vec<String>]) -> bool {
    let c = counts(class.iter().copied());
    let n = class.len() as i128;
    let big_n: i128 = all.values().sum::<u64>() as i128;
    // Σ ≤ (num/den) · scale, in integers.
    let within = |sum: i128, (num, den): (u64, u64), scale: i128| sum * den as i128 <= num as i128 * scale;
    match model {
        Model::Entropy { l, .. } => {
            let h: f64 = -c.values().map(|&x| x as f64 / n as f64).map(|p| p * p.ln()).sum::<f64>();
            let bound = (*l as f64).ln();
            if (h - bound).abs() > 1e-9 {
                h > bound
            } else {
                // n^n ≥ ℓ^n · Π c^c, in integers.
                let pow = |b: u64, e: u64| BigUint::from(b).pow(e as u32);
                let rhs = c.values().fold(pow(*l, n as u64), |acc, &x| acc * pow(x, x));
                pow(n as u64, n as u64) >= rhs
            }
        }
        Model::Recursive { c: (num, den), l, .. } => {
            let mut r: Vec<u64> = c.values().copied().collect();
            r.sort_by(|a, b| b.cmp(a));
            if (r.len() as u64) < *l {
                return false;
            }
            let tail: u64 = r[*l as usize - 1..].iter().sum();
            (r[0] as u128 * *den as u128) < *num as u128 * tail as u128
        }
        Model::Equal { t, .. } => {
            let sum: i128 =
                all.iter().map(|(v, &q)| (*c.get(v).unwrap_or(&0) as i128 * big_n - q as i128 * n).abs()).sum();
            within(sum, *t, 2 * n * big_n)
        }
        Model::Ordered { t, .. } => {
            let mut values: Vec<(&String, &u64)> = all.iter().collect();
            values.sort_by_key(|(v, _)| v.parse::<i64>().unwrap());
            let mut acc = 0i128;
            let mut sum = 0i128;
            for (v, &q) in &values {
                acc += *c.get(*v).unwrap_or(&0) as i128 * big_n - q as i128 * n;
                sum += acc.abs();
            }
            within(sum, *t, (values.len() as i128 - 1) * n * big_n)
        }
        Model::Hierarchical { t, .. } => {
            let rows = tree;
            let height = rows[0].len() - 1;
            // Extra of every node, leaves up: level → value → extra (units of 1/(nN)).
            let mut extra: BTreeMap<String, i128> = rows
                .iter()
                .map(|r| {
                    let q = *all.get(&r[0]).unwrap_or(&0) as i128;
                    (r[0].clone(), *c.get(&r[0]).unwrap_or(&0) as i128 * big_n - q * n)
                })
                .collect();
            let mut sum = 0i128;
            for h in 1..=height {
                let mut children: BTreeMap<String, Vec<i128>> = BTreeMap::new();
                let mut seen = std::collections::BTreeSet::new();
                for r in rows {
                    if seen.insert(r[h - 1].clone()) {
                        children.entry(r[h].clone()).or_default().push(extra[&r[h - 1]]);
                    }
                }
                extra = BTreeMap::new();
                for (node, xs) in children {
                    let pos: i128 = xs.iter().filter(|&&x| x > 0).sum();
                    let neg: i128 = -xs.iter().filter(|&&x| x < 0).sum::<i128>();
                    sum += h as i128 * pos.min(neg);
                    extra.insert(node, pos - neg);
                }
            }
            within(sum, *t, height as i128 * n * big_n)
        }
    }
}

/// Per node (lattice order): suppressed records, glm and dm under k and the
/// models, from the source rows.
fn brute(source: &Source, lattice: &Lattice, k: u64, models: &[Model]) -> Vec<(Vec<u8>, u64, f64, f64)> {
    let all: Vec<BTreeMap<String, u64>> =
        models.iter().map(|m| counts(source.rows.iter().map(|r| &r[m.column()]))).collect();
    let trees: Vec<Vec<Vec<String>>> = models
        .iter()
        .map(|m| match m {
            Model::Hierarchical { file, .. } => hierarchy_rows(Path::new(file)),
            _ => Vec::new(),
        })
        .collect();
    // Each model's column, row by row.
    let columns: Vec<Vec<&String>> =
        models.iter().map(|m| source.rows.iter().map(|r| &r[m.column()]).collect()).collect();
    let total = source.rows.len() as u64;
    let nqi = source.ids.len() as f64;
    let mut out = Vec::new();
    for levels in lattice.nodes() {
        let (mut suppressed, mut glm, mut dm) = (0u64, 0.0, 0.0);
        for rows in source.classes(&levels) {
            let size = rows.len() as u64;
            let kept = size >= k
                && (models.iter().zip(&all).zip(&trees).zip(&columns)).all(|(((m, all), tree), column)| {
                    let values: Vec<&String> = rows.iter().map(|&r| column[r]).collect();
                    meets(m, &values, all, tree)
                });
            if kept {
                for &r in &rows {
                    glm += (levels.iter().enumerate()).map(|(a, &l)| source.loss[a][l as usize][r]).sum::<f64>();
                }
                dm += (size * size) as f64;
            } else {
                suppressed += size;
            }
        }
        glm += suppressed as f64 * nqi;
        dm += (suppressed * total) as f64;
        out.push((levels, suppressed, glm, dm));
    }
    out
}

/// Compare kanon with the brute force on one job: every node's verdict on
/// both backends (or memory only), and the optima of top-down and Incognito.
fn compare(loaded: &Loaded, source: &Source, k: u64, models: &[Model], fractions: &[f64], sql_too: bool) -> usize {
    let lattice = Lattice::new(loaded.data.heights.clone());
    let nodes: Vec<Node> = lattice.nodes().into_iter().map(Node::full).collect();
    let hists = loaded.evaluator_on(Backend::Memory).unwrap().histograms(&nodes).unwrap();
    if sql_too {
        let on_sql = loaded.evaluator_on(Backend::Sql).unwrap().histograms(&nodes).unwrap();
        assert_eq!(on_sql, hists, "{models:?}: the SQL backend's histograms differ from memory's");
        let in_sets = loaded.evaluator_on(Backend::Sql).unwrap().grouping_sets_from(0).histograms(&nodes).unwrap();
        assert_eq!(in_sets, hists, "{models:?}: GROUPING SETS batches differ");
    }
    let truth = brute(source, &lattice, k, models);
    let mut feasible_somewhere = 0;
    for &fraction in fractions {
        let req = Requirement { k, l: None, budget: Budget::Fraction(fraction).rows(loaded.data.rows), risk: None };
        let case = format!("{models:?} k {k} budget {fraction}");
        let mut feasible = 0;
        for ((levels, suppressed, _, _), h) in truth.iter().zip(&hists) {
            assert_eq!(h.suppressed(&req), *suppressed, "{case}: node {levels:?} suppresses");
            feasible += (*suppressed <= req.budget) as usize;
        }
        println!("{case}: {feasible} of {} nodes feasible", truth.len());
        feasible_somewhere += feasible;
        for metric in [Metric::Glm, Metric::Dm] {
            let value = |t: &(Vec<u8>, u64, f64, f64)| if metric == Metric::Glm { t.2 } else { t.3 };
            let best = truth.iter().filter(|t| t.1 <= req.budget).map(value).fold(f64::INFINITY, f64::min);
            let problem = Problem { lattice: &lattice, req: &req, metric };
            let mut ev = loaded.evaluator().unwrap().leaf_sums_from(k);
            let td = topdown::search(&mut ev, &problem, &Silent).unwrap();
            // Large nodes tried on samples first, on every set however small.
            let mut ev = loaded.evaluator().unwrap().leaf_sums_from(k).refute_from(0);
            let td_sampled = topdown::search(&mut ev, &problem, &Silent).unwrap();
            assert_eq!(td_sampled.feasible, td.feasible, "{case}: top-down on samples");
            let mut ev = loaded.evaluator().unwrap();
            let inc = incognito::search(&mut ev, &problem, &Silent).unwrap();
            // Bottom-up ranks by dm: exact whatever the requirement prunes.
            let bu = (metric == Metric::Dm)
                .then(|| bottomup::search(&mut loaded.evaluator().unwrap(), &problem, &Silent).unwrap());
            // And on the SQL backend, whose sets are tables (HELD of a height kept).
            let bu_sql = (metric == Metric::Dm && sql_too)
                .then(|| bottomup::search(&mut loaded.evaluator_on(Backend::Sql).unwrap(), &problem, &Silent).unwrap());
            let mut searches =
                vec![("topdown", &td.best), ("topdown on samples", &td_sampled.best), ("incognito", &inc.best)];
            searches.extend(bu.as_ref().map(|b| ("bottomup", &b.best)));
            searches.extend(bu_sql.as_ref().map(|b| ("bottomup on SQL", &b.best)));
            for (name, found) in searches {
                match found {
                    None => assert!(best.is_infinite(), "{case} {}: {name} found nothing", metric.name()),
                    Some(f) => {
                        let t = truth.iter().find(|t| t.0 == f.levels).unwrap();
                        assert!(t.1 <= req.budget, "{case}: {name}'s node {:?} is not feasible", f.levels);
                        let got = f.outcome.metrics.get(metric);
                        assert!(
                            (got - best).abs() <= 1e-9 * best.max(1.0),
                            "{case} {}: {name} {got} vs {best}",
                            metric.name()
                        );
                        assert!((value(t) - best).abs() <= 1e-9 * best.max(1.0), "{case}: {name}'s node");
                    }
                }
            }
        }
    }
    feasible_somewhere
}

/// A skewed table with a text sensitive column (diagnosis, with a hierarchy)
/// and a numeric one (cost), and file hierarchies for its QIs.
fn generated(dir: &Path, rows: usize, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut csv = String::from("zip,age,sex,diagnosis,cost\n");
    let diagnoses = ["flu", "bronchitis", "asthma", "ulcer", "gastritis", "angina", "stroke"];
    for _ in 0..rows {
        let zip = 53700 + (rng.random_range(0..20u32).pow(2) / 20);
        let age = 20 + rng.random_range(0..40u32) * rng.random_range(0..=1u32) + rng.random_range(0..10u32);
        let sex = if rng.random_bool(0.5) { "F" } else { "M" };
        // Skewed by zip, so classes differ from the whole.
        let d = (rng.random_range(0..diagnoses.len()) + if zip % 3 == 0 { 0 } else { rng.random_range(0..2) }) % 7;
        let cost = 100 * (1 + d as u32) + 50 * rng.random_range(0..3u32);
        writeln!(csv, "{zip},{age},{sex},{},{cost}", diagnoses[d]).unwrap();
    }
    std::fs::write(dir.join("t.csv"), csv).unwrap();
    let mut zip = String::new();
    for z in 53700..53720 {
        writeln!(zip, "{z};{}*;{}**;*", z / 10, z / 100).unwrap();
    }
    let mut age = String::new();
    for a in 0..100 {
        writeln!(age, "{a};{}-{};{}-{};*", a / 5 * 5, a / 5 * 5 + 4, a / 20 * 20, a / 20 * 20 + 19).unwrap();
    }
    std::fs::write(dir.join("zip.csv"), zip).unwrap();
    std::fs::write(dir.join("age.csv"), age).unwrap();
    std::fs::write(dir.join("sex.csv"), "F;*\nM;*\n").unwrap();
    std::fs::write(
        dir.join("diagnosis.csv"),
        "flu;respiratory;*\nbronchitis;respiratory;*\nasthma;respiratory;*\nulcer;digestive;*\n\
         gastritis;digestive;*\nangina;circulatory;*\nstroke;circulatory;*\n",
    )
    .unwrap();
}

fn generated_job(dir: &Path, k: u64, models: &[Model]) -> Job {
    let mut text =
        format!("[source]\ncsv = \"t.csv\"\n[output]\ndatabase = \"out.duckdb\"\ntable = \"r\"\n[privacy]\nk = {k}\n");
    for m in models {
        writeln!(text, "{}", m.toml()).unwrap();
    }
    for q in ["zip", "age", "sex"] {
        write!(text, "[[quasi_identifiers]]\ncolumn = \"{q}\"\nhierarchy = {{ file = \"{q}.csv\" }}\n").unwrap();
    }
    Job::parse(&dir.join("job.toml"), &text).unwrap()
}

#[test]
fn every_node_meets_the_models_as_the_brute_force_says_on_a_generated_table() {
    let dir = tempfile::tempdir().unwrap();
    generated(dir.path(), 600, 7);
    let d = dir.path();
    let source = Source::read(
        &d.join("t.csv"),
        ',',
        &[("zip", &d.join("zip.csv")), ("age", &d.join("age.csv")), ("sex", &d.join("sex.csv"))],
    );
    let tree = d.join("diagnosis.csv").display().to_string();
    let cases: Vec<Vec<Model>> = vec![
        vec![Model::Entropy { column: "diagnosis", l: 3 }],
        vec![Model::Entropy { column: "diagnosis", l: 5 }],
        vec![Model::Recursive { column: "diagnosis", c: (3, 2), l: 3 }],
        vec![Model::Recursive { column: "diagnosis", c: (4, 1), l: 4 }],
        vec![Model::Equal { column: "diagnosis", t: (1, 5) }],
        vec![Model::Equal { column: "diagnosis", t: (35, 100) }],
        vec![Model::Hierarchical { column: "diagnosis", t: (15, 100), file: tree.clone() }],
        vec![Model::Ordered { column: "cost", t: (1, 10) }],
        // Both models, on two columns (the frequency sets carry s and t).
        vec![Model::Entropy { column: "diagnosis", l: 3 }, Model::Ordered { column: "cost", t: (15, 100) }],
        vec![
            Model::Recursive { column: "diagnosis", c: (2, 1), l: 2 },
            Model::Equal { column: "diagnosis", t: (3, 10) },
        ],
    ];
    let mut feasible = 0;
    for models in &cases {
        for k in [1, 4] {
            let loaded = load(&generated_job(d, k, models)).unwrap();
            assert_eq!(loaded.data.heights, vec![3, 3, 1]);
            feasible += compare(&loaded, &source, k, models, &[0.01, 0.05, 0.2], true);
        }
    }
    assert!(feasible > 0);
}

/// Entropy ℓ rejects a class whose pieces it accepts: at (A, *) the class A
/// (x and y: a×8, b, c) fails ℓ = 2, while under it x's a×7 fails and y's
/// a, b, c passes. So with 7 records to spare (A, *) is infeasible and its
/// specializations are feasible: no search may prune under it, and
/// Incognito may not mark a feasible node's generalizations feasible.
#[test]
fn a_class_a_model_rejects_may_split_into_classes_it_accepts() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut csv = String::from("grp,sex,diagnosis\n");
    let rows: [(&str, &str, &str, usize); 10] = [
        ("x", "F", "a", 7),
        ("y", "M", "a", 1),
        ("y", "M", "b", 1),
        ("y", "M", "c", 1),
        ("z", "F", "a", 1),
        ("z", "F", "b", 1),
        ("z", "M", "c", 1),
        ("z", "M", "d", 1),
        ("w", "F", "a", 3),
        ("w", "F", "b", 3),
    ];
    for (g, s, v, times) in rows {
        for _ in 0..times {
            writeln!(csv, "{g},{s},{v}").unwrap();
        }
    }
    std::fs::write(d.join("t.csv"), csv).unwrap();
    std::fs::write(d.join("grp.csv"), "x;A;*\ny;A;*\nz;B;*\nw;B;*\n").unwrap();
    std::fs::write(d.join("sex.csv"), "F;*\nM;*\n").unwrap();
    let source = Source::read(&d.join("t.csv"), ',', &[("grp", &d.join("grp.csv")), ("sex", &d.join("sex.csv"))]);
    let models = [Model::Entropy { column: "diagnosis", l: 2 }];
    let mut text = format!(
        "[source]\ncsv = \"t.csv\"\n[output]\ndatabase = \"out.duckdb\"\ntable = \"r\"\n[privacy]\nk = 2\n{}\n",
        models[0].toml()
    );
    for q in ["grp", "sex"] {
        write!(text, "[[quasi_identifiers]]\ncolumn = \"{q}\"\nhierarchy = {{ file = \"{q}.csv\" }}\n").unwrap();
    }
    let loaded = load(&Job::parse(&d.join("job.toml"), &text).unwrap()).unwrap();
    let lattice = Lattice::new(loaded.data.heights.clone());
    let truth = brute(&source, &lattice, 2, &models);
    let suppressed: HashMap<Vec<u8>, u64> = truth.iter().map(|t| (t.0.clone(), t.1)).collect();
    assert_eq!((suppressed[&vec![1, 1]], suppressed[&vec![1, 0]], suppressed[&vec![0, 0]]), (10, 7, 7));
    assert!(compare(&loaded, &source, 2, &models, &[0.36, 0.5], true) > 0);
    // Incognito's feasible nodes are the brute force's, no more.
    let req = Requirement { k: 2, l: None, budget: 7, risk: None };
    let problem = Problem { lattice: &lattice, req: &req, metric: Metric::Glm };
    let found = incognito::search(&mut loaded.evaluator().unwrap(), &problem, &Silent).unwrap();
    let mut expected: Vec<Vec<u8>> = truth.iter().filter(|t| t.1 <= 7).map(|t| t.0.clone()).collect();
    kanon::lattice::sort(&mut expected);
    assert_eq!(found.feasible, expected);
    assert_eq!(found.best.map(|b| b.levels), Some(vec![0, 0]));
    // k may rise under specialization here, so the exact front bounds a
    // node's k by its generalizations' surely suppressed records: the same
    // front as every node's points, with (0, 0) on it where the budget
    // leaves room for its 7 suppressed records and not for (1, 0)'s.
    use kanon::search::exact_front::exact_front;
    use kanon::search::front;
    let key = |p: &front::Point| (p.levels.clone(), p.k, p.loss);
    let mut with_bottom = 0;
    for metric in [Metric::Glm, Metric::Dm] {
        for budget in [0, 7, 9, 10, 20] {
            let mut ev = loaded.evaluator().unwrap();
            let truth = front::front(&front::points(&mut ev, &lattice.nodes(), budget, metric).unwrap());
            let found = exact_front(&mut loaded.evaluator().unwrap(), &lattice, budget, metric).unwrap();
            let case = format!("{} budget {budget}", metric.name());
            assert_eq!(
                found.front.iter().map(key).collect::<Vec<_>>(),
                truth.iter().map(key).collect::<Vec<_>>(),
                "{case}"
            );
            with_bottom += truth.iter().any(|p| p.levels == vec![0, 0]) as usize;
        }
    }
    assert!(with_bottom > 0, "no front holds the node a rejected class's pieces make feasible");
}

#[test]
fn every_node_meets_the_models_as_the_brute_force_says_on_adult() {
    let Some(adult) = adult_dir() else { return };
    let qis = ["age", "education", "marital-status", "native-country", "race", "sex", "workclass", "salary-class"];
    let files: Vec<(String, std::path::PathBuf)> =
        qis.iter().map(|q| (q.to_string(), adult.join(format!("hierarchy_{q}.csv")))).collect();
    let source = Source::read(
        &adult.join("adult.csv"),
        ';',
        &files.iter().map(|(q, f)| (q.as_str(), f.as_path())).collect::<Vec<_>>(),
    );
    let tree = adult.join("hierarchy_occupation.csv").display().to_string();
    let cases: Vec<Vec<Model>> = vec![
        vec![Model::Entropy { column: "occupation", l: 3 }],
        vec![Model::Recursive { column: "occupation", c: (4, 1), l: 3 }],
        vec![Model::Equal { column: "occupation", t: (2, 10) }],
        vec![Model::Hierarchical { column: "occupation", t: (15, 100), file: tree }],
    ];
    let out = tempfile::tempdir().unwrap();
    for models in &cases {
        let mut text = format!(
            "[source]\ncsv = \"{}\"\ndelimiter = \";\"\n[output]\ndatabase = \"{}\"\ntable = \"r\"\n[privacy]\nk = 5\n",
            adult.join("adult.csv").display(),
            out.path().join("r.duckdb").display()
        );
        for m in models {
            writeln!(text, "{}", m.toml()).unwrap();
        }
        for (q, f) in &files {
            write!(text, "[[quasi_identifiers]]\ncolumn = \"{q}\"\nhierarchy = {{ file = \"{}\" }}\n", f.display())
                .unwrap();
        }
        let loaded = load(&Job::parse(&out.path().join("job.toml"), &text).unwrap()).unwrap();
        let feasible = compare(&loaded, &source, 5, models, &[0.01, 0.05], false);
        assert!(feasible > 0, "{models:?}: no node feasible at all, the case tests nothing");
    }
}

/// The run report's `risk`: the source's and the release's figures equal the
/// ones computed here from the source rows and from the written release, and
/// with a population table (every source row four times) the journalist and
/// marketer figures follow F_j = 4 f_j.
#[test]
fn the_run_report_measures_risk_before_and_after() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    generated(d, 500, 11);
    let source = std::fs::read_to_string(d.join("t.csv")).unwrap();
    let mut population = source.clone();
    for line in source.lines().skip(1) {
        for _ in 0..3 {
            writeln!(population, "{line}").unwrap();
        }
    }
    std::fs::write(d.join("population.csv"), population).unwrap();
    // The same rows as a DuckDB table: there the in-memory evaluator groups the rows itself.
    let conn = duckdb::Connection::open(d.join("t.duckdb")).unwrap();
    conn.execute("CREATE TABLE t AS SELECT * FROM read_csv(?)", [d.join("t.csv").to_str().unwrap()]).unwrap();
    drop(conn);
    let cases = [(false, "", false), (true, "", false), (false, "", true), (true, "", true), (false, "ghs", true)];
    for (with_population, scheme, database) in cases {
        let input = if database { "database = \"t.duckdb\"\ntable = \"t\"" } else { "csv = \"t.csv\"" };
        // A database source releases to a table, copied to out.csv below.
        let output = if database { "database = \"out.duckdb\"\ntable = \"r\"" } else { "csv = \"out.csv\"" };
        let mut text = format!(
            "[source]\n{input}\n[output]\n{output}\nreport = \"report.json\"\n\
             [privacy]\nk = 3\nmax_suppression = 0.05\n",
        );
        if !scheme.is_empty() {
            writeln!(text, "[search]\nscheme = \"{scheme}\"").unwrap();
        }
        for q in ["zip", "age", "sex"] {
            write!(text, "[[quasi_identifiers]]\ncolumn = \"{q}\"\nhierarchy = {{ file = \"{q}.csv\" }}\n").unwrap();
        }
        text.push_str("[risk]\nthreshold = 0.25\n");
        if with_population {
            text.push_str("population_table = { csv = \"population.csv\" }\n");
        }
        std::fs::write(d.join("job.toml"), text).unwrap();
        let out = crate::util::kanon(d, &["run", "job.toml"]);
        assert_eq!(out.code, 0, "{}", out.show());
        if database {
            let conn = duckdb::Connection::open(d.join("out.duckdb")).unwrap();
            conn.execute("COPY r TO ? (HEADER)", [d.join("out.csv").to_str().unwrap()]).unwrap();
        }
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(d.join("report.json")).unwrap()).unwrap();
        let scale = if with_population { 4.0 } else { 1.0 };
        for (side, file) in [("source", "t.csv"), ("release", "out.csv")] {
            // Class sizes of the file over its QI columns.
            let text = std::fs::read_to_string(d.join(file)).unwrap();
            let mut lines = text.lines();
            let header: Vec<&str> = lines.next().unwrap().split(',').collect();
            let at: Vec<usize> =
                ["zip", "age", "sex"].iter().map(|q| header.iter().position(|h| h == q).unwrap()).collect();
            let mut classes: HashMap<Vec<String>, u64> = HashMap::new();
            for line in lines {
                let cells: Vec<&str> = line.split(',').collect();
                *classes.entry(at.iter().map(|&i| cells[i].to_string()).collect()).or_default() += 1;
            }
            let n: u64 = classes.values().sum();
            let u = classes.len() as f64;
            let risk = &report["risk"][side];
            let close = |key: &str, got: &serde_json::Value, want: f64| {
                let got = got.as_f64().unwrap();
                let case = format!("{side} population {with_population} scheme {scheme:?} database {database}");
                assert!((got - want).abs() < 1e-12, "{case} {key}: {got} vs {want}");
            };
            assert_eq!(risk["records"].as_u64(), Some(n), "{side}");
            assert_eq!(risk["classes"].as_u64(), Some(classes.len() as u64), "{side}");
            let at_risk = |f: &dyn Fn(u64) -> f64| {
                classes.values().filter(|&&x| 1.0 / f(x) > 0.25).sum::<u64>() as f64 / n as f64
            };
            let min = *classes.values().min().unwrap() as f64;
            close("prosecutor records at risk", &risk["prosecutor"]["records_at_risk"], at_risk(&|f| f as f64));
            close("prosecutor highest risk", &risk["prosecutor"]["highest_risk"], 1.0 / min);
            close("prosecutor success rate", &risk["prosecutor"]["success_rate"], u / n as f64);
            close("journalist records at risk", &risk["journalist"]["records_at_risk"], at_risk(&|f| scale * f as f64));
            close("journalist highest risk", &risk["journalist"]["highest_risk"], 1.0 / (scale * min));
            // max(u / Σ F, (1/n) Σ_j f_j / F_j) = u / (4n) with F_j = 4 f_j; without a
            // population table F_j = f_j and journalist equals prosecutor (as in ARX).
            close("journalist success rate", &risk["journalist"]["success_rate"], u / (scale * n as f64));
            close("marketer", &risk["marketer"]["success_rate"], u / (scale * n as f64));
            let uniques = classes.values().filter(|&&x| x == 1).count() as f64;
            close("sample uniqueness", &risk["sample_uniqueness"], uniques / n as f64);
        }
    }
}

/// Through `kanon run`: a class whose entropy is exactly ln 2 (counts 3 and 3)
/// is kept at ℓ = 2; `--node` at a node failing a model exits 3; the runs
/// that cannot honour a model, and a text column for the ordered distance,
/// exit 2 naming it.
#[test]
fn runs_honour_or_refuse_the_models() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Two classes at the leaves: zip 1 (3 flu, 3 cold) and zip 2 (4 flu, 2 cold).
    let mut csv = String::from("zip,diagnosis,cost\n");
    for (zip, flu, cold) in [(1, 3, 3), (2, 4, 2)] {
        for i in 0..flu + cold {
            writeln!(csv, "{zip},{},{}", if i < flu { "flu" } else { "cold" }, 10 * i).unwrap();
        }
    }
    std::fs::write(d.join("t.csv"), csv).unwrap();
    let job_with = |name: &str, budget: u64, privacy: &str, search: &str| {
        std::fs::write(
            d.join(format!("{name}.toml")),
            format!(
                "[source]\ncsv = \"t.csv\"\n[output]\ncsv = \"{name}.csv\"\nreport = \"{name}.json\"\n\
                 [privacy]\nk = 2\nmax_suppression = {budget}\n{privacy}\n[search]\n{search}\n\
                 [[quasi_identifiers]]\ncolumn = \"zip\"\nhierarchy = \"suppress\"\n"
            ),
        )
        .unwrap();
    };
    let job = |name: &str, privacy: &str, search: &str| job_with(name, 6, privacy, search);
    let run = |args: &[&str]| crate::util::kanon(d, args);
    let suppressed = |name: &str| -> u64 {
        let r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(d.join(format!("{name}.json"))).unwrap()).unwrap();
        r["suppressed"].as_u64().unwrap()
    };
    // Entropy ℓ = 2 at the leaves: zip 1 is exactly ln 2 (kept); zip 2 is below (suppressed, 6 rows).
    job("entropy", "l_diversity = { column = \"diagnosis\", l = 2, kind = \"entropy\" }", "");
    let out = run(&["run", "entropy.toml", "--node", "zip=0"]);
    assert_eq!(out.code, 0, "{}", out.show());
    assert_eq!(suppressed("entropy"), 6);
    let released = std::fs::read_to_string(d.join("entropy.csv")).unwrap();
    assert_eq!(released.lines().filter(|l| l.starts_with("1,")).count(), 6, "{released}");
    // With a budget of 5 the leaves are infeasible: --node exits 3.
    job_with("tight", 5, "l_diversity = { column = \"diagnosis\", l = 2, kind = \"entropy\" }", "");
    let out = run(&["run", "tight.toml", "--node", "zip=0"]);
    assert_eq!(out.code, 3, "{}", out.show());
    assert!(out.stderr.contains("entropy l = 2 on \"diagnosis\""), "{}", out.show());
    // At the top the one class (7 flu, 5 cold) has entropy 0.679 < ln 2: no node is feasible.
    let out = run(&["run", "tight.toml"]);
    assert_eq!(out.code, 3, "{}", out.show());
    let says =
        "no generalization is feasible for k = 2 and entropy l = 2 on \"diagnosis\" with at most 5 suppressed rows";
    assert!(out.stderr.contains(says), "{}", out.show());
    // Recursive (c, ℓ) = (2, 2): 3 < 2·3 and 4 < 2·2 fails; t-closeness equal: zip 1 is at
    // ½(|3/6 − 7/12| + |3/6 − 5/12|) = 1/12 from the whole, zip 2 at 1/12 too.
    job("recursive", "l_diversity = { column = \"diagnosis\", l = 2, kind = \"recursive\", c = 2 }", "");
    let out = run(&["run", "recursive.toml", "--node", "zip=0"]);
    assert_eq!(out.code, 0, "{}", out.show());
    assert_eq!(suppressed("recursive"), 6);
    // The report's figures over the kept class (3 flu, 3 cold).
    let figures = |name: &str| -> serde_json::Value {
        let r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(d.join(format!("{name}.json"))).unwrap()).unwrap();
        r["models"].clone()
    };
    assert_eq!(figures("recursive")["recursive_c"].as_f64(), Some(1.0));
    assert!(figures("recursive")["t"].is_null());
    assert!((figures("entropy")["entropy_l"].as_f64().unwrap() - 2.0).abs() < 1e-12);
    for (t, expected) in [("0.08", 12), ("0.0834", 0)] {
        job_with("close", 12, &format!("t_closeness = {{ column = \"diagnosis\", t = {t} }}"), "");
        let out = run(&["run", "close.toml", "--node", "zip=0"]);
        assert_eq!(out.code, 0, "{}", out.show());
        assert_eq!(suppressed("close"), expected, "t = {t}");
        let t = figures("close")["t"].as_f64();
        assert!(expected > 0 || (t.unwrap() - 1.0 / 12.0).abs() < 1e-12, "{t:?}");
    }
    // Refusals, exit 2, naming the model.
    job("scheme", "t_closeness = { column = \"diagnosis\", t = 0.2 }", "scheme = \"bhs\"");
    let out = run(&["run", "scheme.toml"]);
    assert_eq!(out.code, 2, "{}", out.show());
    assert!(out.stderr.contains("t-closeness"), "{}", out.show());
    job("cells", "l_diversity = { column = \"diagnosis\", l = 2, kind = \"entropy\" }", "algorithm = \"cdgh\"");
    let out = run(&["run", "cells.toml"]);
    assert_eq!(out.code, 2, "{}", out.show());
    assert!(out.stderr.contains("entropy l-diversity on \"diagnosis\""), "{}", out.show());
    job("ordered", "t_closeness = { column = \"diagnosis\", t = 0.2, distance = \"ordered\" }", "");
    let out = run(&["run", "ordered.toml"]);
    assert_eq!(out.code, 2, "{}", out.show());
    assert!(out.stderr.contains("\"diagnosis\"") && out.stderr.contains("numeric or date"), "{}", out.show());
    for (name, privacy, says) in [
        (
            "kind",
            "l_diversity = { column = \"diagnosis\", l = 2, kind = \"shannon\" }",
            "[privacy] l_diversity: unknown kind \"shannon\"",
        ),
        ("noc", "l_diversity = { column = \"diagnosis\", l = 2, kind = \"recursive\" }", "kind \"recursive\" needs c"),
        (
            "hier",
            "t_closeness = { column = \"diagnosis\", t = 0.2, distance = \"hierarchical\" }",
            "[privacy] t_closeness: distance \"hierarchical\" needs a hierarchy",
        ),
    ] {
        job(name, privacy, "");
        let out = run(&["run", &format!("{name}.toml")]);
        assert_eq!(out.code, 2, "{}", out.show());
        assert!(out.stderr.contains(&format!("{name}.toml:")) && out.stderr.contains(says), "{}", out.show());
    }
    // The ordered distance on a number is accepted: at t = 1 every class passes, so the
    // leaves (two classes of 6) are released whole.
    job("cost", "t_closeness = { column = \"cost\", t = 1.0, distance = \"ordered\" }", "");
    let out = run(&["run", "cost.toml"]);
    assert_eq!(out.code, 0, "{}", out.show());
    assert_eq!(suppressed("cost"), 0);
    let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(d.join("cost.json")).unwrap()).unwrap();
    assert_eq!((r["node"]["zip"].as_u64(), r["classes"].as_u64()), (Some(0), Some(2)), "{r}");
}
