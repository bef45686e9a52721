//! `[privacy] person` (docs/semantics.md, "Person-level k") against a brute
//! force written here: a generated visits table with 1 to 15 rows per person,
//! person-level QIs (birth year, sex) and event-level ones (month, ward).
//! Every node's suppressed persons and rows, glm and dm on the memory and
//! SQL evaluators; every search's glm and dm optimum; the release re-measured
//! over persons; the refusals.

use crate::util::{intervals_hierarchy, kanon_env, read_delimited, suppress_hierarchy, Hierarchy};
use kanon::evaluator::Backend;
use kanon::job::Job;
use kanon::lattice::{Lattice, Node};
use kanon::load::load;
use kanon::measure::metrics::Requirement;
use kanon::options::Metric;
use kanon::search::{exhaustive, incognito, topdown, Problem, Silent};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write;
use std::path::Path;

const QIS: [&str; 4] = ["birth", "sex", "month", "ward"];

/// `persons` persons with 1 to 15 visits each; birth and sex fixed per person,
/// month and ward per visit (a person keeps to few wards).
fn write_visits(dir: &Path, persons: usize, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut csv = String::from("member,birth,sex,month,ward,cost\n");
    for p in 0..persons {
        let birth = 1940 + rng.random_range(0..12u32).pow(2) / 2;
        let sex = if rng.random_bool(0.5) { "F" } else { "M" };
        let home = rng.random_range(0..4usize);
        for _ in 0..rng.random_range(1..=15) {
            let month = 1 + rng.random_range(0..12u32);
            let ward = ["A", "B", "C", "D", "E", "F"][(home + rng.random_range(0..2usize)) % 6];
            writeln!(csv, "m{p:04},{birth},{sex},{month},{ward},{}", rng.random_range(10..500)).unwrap();
        }
    }
    std::fs::write(dir.join("visits.csv"), csv).unwrap();
}

/// The birth year's interval widths in [`QI_TOML`].
const BIRTH_WIDTHS: [f64; 3] = [5.0, 10.0, 20.0];

const QI_TOML: &str = "[[quasi_identifiers]]\ncolumn = \"birth\"\nhierarchy = { intervals = [5, 10, 20] }\n\
    [[quasi_identifiers]]\ncolumn = \"sex\"\nhierarchy = \"suppress\"\n\
    [[quasi_identifiers]]\ncolumn = \"month\"\nhierarchy = { intervals = [3, 6] }\n\
    [[quasi_identifiers]]\ncolumn = \"ward\"\nhierarchy = \"suppress\"\n";

fn job_text(privacy: &str, output: &str) -> String {
    format!("[source]\ncsv = \"visits.csv\"\n[output]\n{output}\n[privacy]\n{privacy}\n{QI_TOML}")
}

fn job(dir: &Path, k: u64, budget: &str) -> Job {
    let text = job_text(
        &format!("k = {k}\nmax_suppression = {budget}\nperson = \"member\""),
        "database = \"out.duckdb\"\ntable = \"r\"\ndrop = [\"member\"]",
    );
    Job::parse(&dir.join("job.toml"), &text).unwrap()
}

/// The visits read back, and the brute force's hierarchies (as docs/job.md defines them).
struct Brute {
    /// Per row: person, leaf per QI.
    rows: Vec<(String, Vec<String>)>,
    hierarchies: Vec<Hierarchy>,
    /// Per QI, level and label: the leaves under it.
    under: Vec<Vec<HashMap<String, u64>>>,
    /// Per QI: leaf → its hierarchy row.
    of_leaf: Vec<HashMap<String, usize>>,
}

/// What the brute force finds at a node for k.
#[derive(Debug, Clone)]
struct Point {
    levels: Vec<u8>,
    persons: u64,
    rows: u64,
    glm: f64,
    dm: f64,
}

impl Brute {
    fn new(dir: &Path) -> Brute {
        Brute::with_birth(dir, &BIRTH_WIDTHS)
    }

    /// The brute force with the birth year in intervals of `widths`.
    fn with_birth(dir: &Path, widths: &[f64]) -> Brute {
        let (header, cells) = read_delimited(&dir.join("visits.csv"), ',');
        let col = |name: &str| header.iter().position(|h| h == name).unwrap();
        let rows: Vec<(String, Vec<String>)> =
            cells.iter().map(|r| (r[col("member")].clone(), QIS.iter().map(|q| r[col(q)].clone()).collect())).collect();
        let column = |a: usize| rows.iter().map(|r| r.1[a].clone()).collect::<Vec<_>>();
        let hierarchies = vec![
            intervals_hierarchy(&column(0), widths),
            suppress_hierarchy(&column(1)),
            intervals_hierarchy(&column(2), &[3.0, 6.0]),
            suppress_hierarchy(&column(3)),
        ];
        let under = (hierarchies.iter())
            .map(|h| {
                (0..h[0].len())
                    .map(|l| {
                        let mut m: HashMap<String, u64> = HashMap::new();
                        h.iter().for_each(|r| *m.entry(r[l].clone()).or_default() += 1);
                        m
                    })
                    .collect()
            })
            .collect();
        let of_leaf =
            hierarchies.iter().map(|h| h.iter().enumerate().map(|(i, r)| (r[0].clone(), i)).collect()).collect();
        Brute { rows, hierarchies, under, of_leaf }
    }

    fn heights(&self) -> Vec<u8> {
        self.hierarchies.iter().map(|h| h[0].len() as u8 - 1).collect()
    }

    fn label(&self, a: usize, level: u8, leaf: &str) -> String {
        self.hierarchies[a][self.of_leaf[a][leaf]][level as usize].clone()
    }

    /// The definitions: signatures, classes of persons, persons of classes
    /// under k suppressed with all their rows; glm and dm over rows.
    fn point(&self, levels: &[u8], k: u64) -> Point {
        let (generalized, class_size) = self.classes(levels);
        let dropped = |person: &str| class_size[person] < k;
        let persons = class_size.keys().filter(|p| dropped(p)).count() as u64;
        let (mut rows, mut glm) = (0u64, 0.0);
        let mut released: HashMap<&Vec<String>, u64> = HashMap::new();
        for ((person, _), g) in self.rows.iter().zip(&generalized) {
            if dropped(person) {
                rows += 1;
                glm += QIS.len() as f64;
                continue;
            }
            *released.entry(g).or_default() += 1;
            for (a, label) in g.iter().enumerate() {
                let leaves = self.hierarchies[a].len() as f64;
                if leaves > 1.0 {
                    glm += (self.under[a][levels[a] as usize][label] as f64 - 1.0) / (leaves - 1.0);
                }
            }
        }
        let total = self.rows.len() as f64;
        let dm = released.values().map(|&n| (n * n) as f64).sum::<f64>() + rows as f64 * total;
        Point { levels: levels.to_vec(), persons, rows, glm, dm }
    }

    fn points(&self, k: u64) -> Vec<Point> {
        Lattice::new(self.heights()).nodes().iter().map(|l| self.point(l, k)).collect()
    }

    /// The largest k whose suppressed persons fit `budget` (the Pareto fronts' k).
    fn achieved_k(&self, levels: &[u8], budget: u64) -> u64 {
        // Persons per class size, then each class in turn, smallest first.
        let mut per_size: BTreeMap<u64, u64> = BTreeMap::new();
        self.classes(levels).1.values().for_each(|&s| *per_size.entry(s).or_default() += 1);
        let (mut below, mut k) = (0, 0);
        for (size, persons) in per_size {
            for _ in 0..persons / size {
                if below > budget {
                    return k;
                }
                k = size;
                below += size;
            }
        }
        k
    }

    /// The rows' generalized tuples at `levels`, and per person the size of
    /// its class: the persons whose sets of tuples equal its own.
    fn classes(&self, levels: &[u8]) -> (Vec<Vec<String>>, HashMap<String, u64>) {
        let generalized: Vec<Vec<String>> = (self.rows.iter())
            .map(|(_, leaves)| leaves.iter().enumerate().map(|(a, v)| self.label(a, levels[a], v)).collect())
            .collect();
        let mut signature: BTreeMap<&str, BTreeSet<&Vec<String>>> = BTreeMap::new();
        for ((person, _), g) in self.rows.iter().zip(&generalized) {
            signature.entry(person).or_default().insert(g);
        }
        let mut class_size: HashMap<&BTreeSet<&Vec<String>>, u64> = HashMap::new();
        signature.values().for_each(|s| *class_size.entry(s).or_default() += 1);
        let sizes = signature.iter().map(|(p, s)| (p.to_string(), class_size[s])).collect();
        (generalized, sizes)
    }

    fn persons(&self) -> u64 {
        self.rows.iter().map(|r| &r.0).collect::<BTreeSet<_>>().len() as u64
    }
}

fn close(x: f64, y: f64) -> bool {
    (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0)
}

/// The brute force's optimum: least loss, then the lower sum of levels, then the smaller levels.
fn optimum(points: &[Point], budget: u64, metric: Metric) -> Option<&Point> {
    let loss = |p: &Point| if metric == Metric::Dm { p.dm } else { p.glm };
    let sum = |p: &Point| p.levels.iter().map(|&l| l as u32).sum::<u32>();
    points.iter().filter(|p| p.persons <= budget).min_by(|a, b| {
        let by_loss = if close(loss(a), loss(b)) { std::cmp::Ordering::Equal } else { loss(a).total_cmp(&loss(b)) };
        by_loss.then(sum(a).cmp(&sum(b))).then(a.levels.cmp(&b.levels))
    })
}

/// Every node on both evaluators (and every node over QI subsets, memory against SQL):
/// the suppressed persons and rows, glm and dm of the brute force, for several k.
#[test]
fn every_node_suppresses_the_brute_forces_persons_on_both_evaluators() {
    use itertools::Itertools;
    for (seed, persons) in [(1, 120), (2, 60), (3, 200)] {
        let dir = tempfile::tempdir().unwrap();
        write_visits(dir.path(), persons, seed);
        let brute = Brute::new(dir.path());
        let loaded = load(&job(dir.path(), 2, "0")).unwrap();
        assert_eq!(loaded.data.persons, Some(brute.persons()));
        assert_eq!(loaded.data.rows, brute.rows.len() as u64);
        let lattice = Lattice::new(loaded.data.heights.clone());
        assert_eq!(lattice.heights, brute.heights());
        let full: Vec<Node> = lattice.nodes().into_iter().map(Node::full).collect();
        let mut partial = Vec::new();
        for size in 1..QIS.len() {
            for attrs in (0..QIS.len()).combinations(size) {
                for levels in attrs.iter().map(|&a| 0..=lattice.heights[a]).multi_cartesian_product() {
                    partial.push(Node { attrs: attrs.clone(), levels });
                }
            }
        }
        let mut mem = loaded.evaluator_on(Backend::Memory).unwrap();
        let mut sql = loaded.evaluator_on(Backend::Sql).unwrap();
        assert_eq!((mem.backend(), sql.backend()), ("memory", "sql"));
        assert_eq!(sql.histograms(&partial).unwrap(), mem.histograms(&partial).unwrap(), "seed {seed}: subsets");
        let histograms = mem.histograms(&full).unwrap();
        assert_eq!(sql.histograms(&full).unwrap(), histograms, "seed {seed}");
        for k in [1, 2, 3, 5] {
            let req = Requirement { k, l: None, budget: u64::MAX, risk: None };
            for (want, h) in brute.points(k).iter().zip(&histograms) {
                let got = h.outcome(&want.levels, &req, &loaded.data);
                let case = format!("seed {seed} k {k} node {:?}", want.levels);
                assert_eq!((got.suppressed, got.suppressed_rows), (want.persons, want.rows), "{case}");
                assert!(close(got.metrics.glm, want.glm), "{case}: glm {} vs {}", got.metrics.glm, want.glm);
                assert!(close(got.metrics.dm, want.dm), "{case}: dm {} vs {}", got.metrics.dm, want.dm);
            }
        }
    }
}

/// The memory evaluator's sample (whole classes: persons by their least values
/// of the node's most spread QIs) proves a node infeasible only when the brute
/// force suppresses more persons than the budget there, and it proves some.
#[test]
fn the_person_sample_refutes_only_infeasible_nodes() {
    let mut proved = 0;
    for (seed, persons) in [(1, 120), (3, 200), (8, 400)] {
        let dir = tempfile::tempdir().unwrap();
        write_visits(dir.path(), persons, seed);
        let brute = Brute::new(dir.path());
        let loaded = load(&job(dir.path(), 2, "0")).unwrap();
        let nodes: Vec<Node> = Lattice::new(loaded.data.heights.clone()).nodes().into_iter().map(Node::full).collect();
        for (k, budget) in [(2, 0), (3, 2), (5, 4), (5, 40)] {
            let req = Requirement { k, l: None, budget, risk: None };
            let mut ev = loaded.evaluator_on(Backend::Memory).unwrap().refute_from(0).sample_spread(4);
            for ((node, refuted), want) in nodes.iter().zip(ev.refuted(&nodes, &req).unwrap()).zip(brute.points(k)) {
                assert!(!refuted || want.persons > budget, "seed {seed} k {k} budget {budget} node {:?}", node.levels);
                proved += refuted as usize;
            }
        }
    }
    assert!(proved > 0, "the sample proved no node infeasible");
}

/// A Parquet source is not grouped on reading: the in-memory evaluator groups the
/// coded rows itself, and gives the histograms of the CSV's grouped set.
#[test]
fn coded_rows_grouped_in_memory_equal_the_grouped_set() {
    let dir = tempfile::tempdir().unwrap();
    write_visits(dir.path(), 150, 5);
    let (csv_path, pq_path) = (dir.path().join("visits.csv"), dir.path().join("visits.parquet"));
    let copy =
        format!("COPY (SELECT * FROM read_csv('{}')) TO '{}' (FORMAT parquet)", csv_path.display(), pq_path.display());
    duckdb::Connection::open_in_memory().unwrap().execute_batch(&copy).unwrap();
    let csv = load(&job(dir.path(), 3, "4")).unwrap();
    let parquet_job = Job::parse(
        &dir.path().join("job.toml"),
        &job_text(
            "k = 3\nmax_suppression = 4\nperson = \"member\"",
            "database = \"out.duckdb\"\ntable = \"r\"\ndrop = [\"member\"]",
        )
        .replace("csv = \"visits.csv\"", "parquet = \"visits.parquet\""),
    )
    .unwrap();
    let parquet = load(&parquet_job).unwrap();
    assert!(parquet.base.has_rows(), "a Parquet source gives coded rows");
    assert!(!csv.base.has_rows(), "a small CSV is grouped on reading");
    let nodes: Vec<Node> = Lattice::new(csv.data.heights.clone()).nodes().into_iter().map(Node::full).collect();
    let (mut a, mut b) = (csv.evaluator_on(Backend::Memory).unwrap(), parquet.evaluator_on(Backend::Memory).unwrap());
    assert_eq!(a.histograms(&nodes).unwrap(), b.histograms(&nodes).unwrap());
    assert_eq!(a.combinations().unwrap(), b.combinations().unwrap());
    assert_eq!(a.combinations().unwrap(), parquet.evaluator_on(Backend::Sql).unwrap().combinations().unwrap());
}

/// An integer person column whose values span under 4 codes a person gets its
/// codes by arithmetic (value less the least, plus 1), not by a join; a
/// sparser one by a join, as a text column does. Each gives the text
/// column's histograms on both evaluators, and releases its rows.
#[test]
fn integer_persons_coded_by_offset_give_the_text_persons_histograms_and_release() {
    let dir = tempfile::tempdir().unwrap();
    write_visits(dir.path(), 150, 5);
    let csv = dir.path().join("visits.csv");
    let conn = duckdb::Connection::open_in_memory().unwrap();
    // m0007 → 1000 + 3·7 (dense enough), or 7·100000 (too sparse); "text" keeps m0007.
    let kinds = [
        ("text", "member"),
        ("offset", "1000 + 3 * substr(member, 2)::INTEGER"),
        ("sparse", "100000 * substr(member, 2)::BIGINT"),
    ];
    for (kind, member) in kinds {
        let copy = format!(
            "COPY (SELECT * REPLACE ({member} AS member) FROM read_csv('{}')) TO '{}' (FORMAT parquet)",
            csv.display(),
            dir.path().join(format!("{kind}.parquet")).display()
        );
        conn.execute_batch(&copy).unwrap();
    }
    let job_for = |kind: &str| {
        job_text(
            "k = 4\nmax_suppression = 40\nperson = \"member\"",
            &format!("database = \"{kind}.duckdb\"\ntable = \"r\"\ndrop = [\"member\"]"),
        )
        .replace("csv = \"visits.csv\"", &format!("parquet = \"{kind}.parquet\""))
    };
    let source_rows = std::fs::read_to_string(&csv).unwrap().lines().count() - 1;
    let mut want = None;
    let mut released = None;
    for (kind, _) in kinds {
        let loaded = load(&Job::parse(&dir.path().join("job.toml"), &job_for(kind)).unwrap()).unwrap();
        let persons = loaded.data.persons.unwrap();
        let largest: i64 = loaded.conn.query_row("SELECT max(code) FROM kanon_codes_p", [], |r| r.get(0)).unwrap();
        assert_eq!(largest as u64 > persons, kind == "offset", "{kind}: largest code {largest} of {persons} persons");
        let nodes: Vec<Node> = Lattice::new(loaded.data.heights.clone()).nodes().into_iter().map(Node::full).collect();
        let memory = loaded.evaluator_on(Backend::Memory).unwrap().histograms(&nodes).unwrap();
        assert_eq!(loaded.evaluator_on(Backend::Sql).unwrap().histograms(&nodes).unwrap(), memory, "{kind}");
        match &want {
            None => want = Some(memory),
            Some(w) => assert_eq!(&memory, w, "{kind}"),
        }
        drop(loaded);
        std::fs::write(dir.path().join("job.toml"), job_for(kind)).unwrap();
        let out = kanon_env(dir.path(), &["run", "job.toml"], &[]);
        assert_eq!(out.code, 0, "{kind}: {}", out.stderr);
        let out_db = duckdb::Connection::open(dir.path().join(format!("{kind}.duckdb"))).unwrap();
        let mut stmt =
            out_db.prepare("SELECT list(r ORDER BY r)::VARCHAR FROM (SELECT r::VARCHAR AS r FROM r)").unwrap();
        let rows: String = stmt.query_row([], |r| r.get(0)).unwrap();
        // Some persons suppressed: their rows left out through the person codes.
        let count: i64 = out_db.query_row("SELECT count(*) FROM r", [], |r| r.get(0)).unwrap();
        assert!(0 < count && (count as usize) < source_rows, "{kind}: {count} of {source_rows} rows released");
        match &released {
            None => released = Some(rows),
            Some(r) => assert_eq!(&rows, r, "{kind}: the released rows"),
        }
    }
}

/// Top-down, Incognito and exhaustive find the brute force's glm and dm optimum over
/// persons, on both evaluators, for budgets in persons.
#[test]
fn every_search_finds_the_brute_forces_optimum_over_persons() {
    let dir = tempfile::tempdir().unwrap();
    write_visits(dir.path(), 150, 7);
    let brute = Brute::new(dir.path());
    for (k, budget) in [(2, 0), (3, 5), (5, 12), (4, 40)] {
        let points = brute.points(k);
        let loaded = load(&job(dir.path(), k, &budget.to_string())).unwrap();
        let lattice = Lattice::new(loaded.data.heights.clone());
        let req = Requirement { k, l: None, budget, risk: None };
        for metric in [Metric::Glm, Metric::Dm] {
            let want = optimum(&points, budget, metric).map(|p| p.levels.clone());
            let problem = Problem { lattice: &lattice, req: &req, metric };
            for backend in [Backend::Memory, Backend::Sql] {
                for algorithm in ["topdown", "topdown sampled", "incognito", "exhaustive"] {
                    let mut ev = loaded.evaluator_on(backend).unwrap();
                    if algorithm == "topdown sampled" {
                        ev = ev.refute_from(0).sample_spread(4);
                    }
                    let found = match algorithm {
                        "topdown" | "topdown sampled" => topdown::search(&mut ev, &problem, &Silent),
                        "incognito" => incognito::search(&mut ev, &problem, &Silent),
                        _ => exhaustive::search(&mut ev, &problem, &Silent),
                    }
                    .unwrap();
                    let got = found.best.map(|b| b.levels);
                    assert_eq!(got, want, "k {k} budget {budget} {metric:?} {backend:?} {algorithm}");
                }
            }
        }
    }
}

/// A level that merges none of the data's values (the birth year in
/// intervals of one year) gives a node the classes of its twin one level
/// down: top-down settles such a node by its twin, unevaluated, and still
/// finds the brute force's optimum.
#[test]
fn top_down_settles_a_node_by_its_twin_below_a_level_that_merges_nothing() {
    let dir = tempfile::tempdir().unwrap();
    write_visits(dir.path(), 150, 7);
    let widths = [1.0, 5.0, 10.0, 20.0];
    let brute = Brute::with_birth(dir.path(), &widths);
    let mut settled = 0;
    for (k, budget) in [(2, 0), (3, 5), (5, 12), (4, 40)] {
        let points = brute.points(k);
        let text = job_text(
            &format!("k = {k}\nmax_suppression = {budget}\nperson = \"member\""),
            "database = \"out.duckdb\"\ntable = \"r\"\ndrop = [\"member\"]",
        )
        .replace("intervals = [5, 10, 20]", "intervals = [1, 5, 10, 20]");
        let loaded = load(&Job::parse(&dir.path().join("job.toml"), &text).unwrap()).unwrap();
        let lattice = Lattice::new(loaded.data.heights.clone());
        assert_eq!(lattice.heights, brute.heights());
        let req = Requirement { k, l: None, budget, risk: None };
        for metric in [Metric::Glm, Metric::Dm] {
            let want = optimum(&points, budget, metric).map(|p| p.levels.clone());
            let problem = Problem { lattice: &lattice, req: &req, metric };
            for (backend, sampled) in [(Backend::Memory, false), (Backend::Memory, true), (Backend::Sql, false)] {
                let mut ev = loaded.evaluator_on(backend).unwrap();
                if sampled {
                    // Dives step on estimates: a twin is reached from beside, not through its node.
                    ev = ev.refute_from(0).sample_spread(4);
                }
                let found = topdown::search(&mut ev, &problem, &Silent).unwrap();
                let case = format!("k {k} budget {budget} {metric:?} {backend:?} sampled {sampled}");
                assert_eq!(found.best.map(|b| b.levels), want, "{case}");
                // Over persons each node checked is evaluated or refuted (which
                // counts as evaluated; hubs are not held), but for those settled by a twin.
                assert!(
                    ev.evaluations() <= found.checked,
                    "{case}: {} evaluated, {} checked",
                    ev.evaluations(),
                    found.checked
                );
                settled += found.checked - ev.evaluations();
            }
        }
    }
    assert!(settled > 0, "no node was settled by its twin");
}

/// The exact Pareto front of k over persons against glm and dm equals the brute force's.
#[test]
fn the_exact_front_is_k_over_persons() {
    use crate::util::{brute_front, BrutePoint};
    let dir = tempfile::tempdir().unwrap();
    write_visits(dir.path(), 120, 11);
    let brute = Brute::new(dir.path());
    let nodes = Lattice::new(brute.heights()).nodes();
    for budget in [0u64, 6, 30] {
        let loaded = load(&job(dir.path(), 2, &budget.to_string())).unwrap();
        let lattice = Lattice::new(loaded.data.heights.clone());
        for metric in [Metric::Glm, Metric::Dm] {
            let points: Vec<BrutePoint> = (nodes.iter())
                .map(|l| {
                    let k = brute.achieved_k(l, budget);
                    let (at, all) = (brute.point(l, k), brute.point(l, 1));
                    let loss = |p: &Point| if metric == Metric::Dm { p.dm } else { p.glm };
                    BrutePoint { levels: l.clone(), k, suppressed: at.persons, loss: loss(&at), floor: loss(&all) }
                })
                .collect();
            let truth = brute_front(&points);
            let mut ev = loaded.evaluator().unwrap();
            let found = kanon::search::exact_front::exact_front(&mut ev, &lattice, budget, metric).unwrap();
            let got: Vec<(Vec<u8>, u64, u64)> =
                found.front.iter().map(|p| (p.levels.clone(), p.k, p.suppressed)).collect();
            let want: Vec<(Vec<u8>, u64, u64)> = truth.iter().map(|p| (p.levels.clone(), p.k, p.suppressed)).collect();
            assert_eq!(got, want, "budget {budget} {metric:?}");
            for (g, w) in found.front.iter().zip(&truth) {
                assert!(close(g.loss, w.loss), "budget {budget} {metric:?} {:?}: {} vs {}", g.levels, g.loss, w.loss);
            }
        }
    }
}

/// `kanon run` releases the optimum's rows: re-measured over persons (the person column
/// pseudonymized), every class of signatures holds k persons; the report's persons and rows.
#[test]
fn the_release_keeps_k_persons_per_signature_and_reports_them() {
    let dir = tempfile::tempdir().unwrap();
    write_visits(dir.path(), 150, 9);
    let brute = Brute::new(dir.path());
    let (k, budget) = (3u64, 10u64);
    let text = job_text(
        &format!("k = {k}\nmax_suppression = {budget}\nperson = \"member\""),
        "database = \"out.duckdb\"\ntable = \"r\"\npseudonymize = [\"member\"]\nreport = \"report.json\"",
    );
    std::fs::write(dir.path().join("job.toml"), text).unwrap();
    let out = kanon_env(dir.path(), &["run", "job.toml"], &[("KANON_KEY", "a test key")]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let want = optimum(&brute.points(k), budget, Metric::Glm).unwrap().clone();
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("report.json")).unwrap()).unwrap();
    let node: Vec<u8> = QIS.iter().map(|q| report["node"][q].as_u64().unwrap() as u8).collect();
    assert_eq!(node, want.levels);
    let persons = brute.persons();
    assert_eq!(report["persons_in"], persons);
    assert_eq!(report["suppressed_persons"], want.persons);
    assert_eq!(report["persons_out"], persons - want.persons);
    assert_eq!(report["suppressed"], want.rows);
    assert_eq!(report["rows_out"], brute.rows.len() as u64 - want.rows);
    assert!(close(report["metrics"]["glm"].as_f64().unwrap(), want.glm));
    let mut per_person: BTreeMap<String, u64> = BTreeMap::new();
    brute.rows.iter().for_each(|r| *per_person.entry(r.0.clone()).or_default() += 1);
    let mut counts: Vec<u64> = per_person.values().copied().collect();
    counts.sort();
    let rpp = &report["rows_per_person"];
    assert_eq!((rpp["min"].as_u64(), rpp["max"].as_u64()), (counts.first().copied(), counts.last().copied()));
    assert_eq!(rpp["median"].as_u64(), Some(counts[(counts.len() - 1) / 2]));

    // The release re-measured: per pseudonymized person its set of released tuples.
    let conn = duckdb::Connection::open(dir.path().join("out.duckdb")).unwrap();
    let mut stmt =
        conn.prepare("SELECT member, birth::VARCHAR, sex::VARCHAR, month::VARCHAR, ward::VARCHAR FROM r").unwrap();
    let mut signature: BTreeMap<String, BTreeSet<Vec<String>>> = BTreeMap::new();
    let mut released = 0u64;
    for row in stmt.query_map([], |r| Ok((0..5).map(|i| r.get::<_, String>(i)).collect::<Vec<_>>())).unwrap() {
        let row: Vec<String> = row.unwrap().into_iter().collect::<Result<_, _>>().unwrap();
        assert_eq!(row[0].len(), 64, "the person column goes out pseudonymized");
        signature.entry(row[0].clone()).or_default().insert(row[1..].to_vec());
        released += 1;
    }
    assert_eq!(released, brute.rows.len() as u64 - want.rows);
    assert_eq!(signature.len() as u64, persons - want.persons);
    let mut classes: HashMap<&BTreeSet<Vec<String>>, u64> = HashMap::new();
    signature.values().for_each(|s| *classes.entry(s).or_default() += 1);
    assert!(classes.values().all(|&n| n >= k), "a released class under {k} persons: {classes:?}");
    // The released tuples are the brute force's labels at the node.
    let labels: BTreeSet<Vec<String>> = (brute.rows.iter())
        .map(|(_, leaves)| leaves.iter().enumerate().map(|(a, v)| brute.label(a, want.levels[a], v)).collect())
        .collect();
    assert!(signature.values().flatten().all(|t| labels.contains(t)));
    // The risk is over persons: the release's highest prosecutor risk is 1/k at most.
    let release = &report["risk"]["release"];
    assert_eq!(release["records"], persons - want.persons);
    assert_eq!(report["risk"]["source"]["records"], persons);
    let highest = release["prosecutor"]["highest_risk"].as_f64().unwrap();
    assert!(highest <= 1.0 / k as f64 + 1e-12, "{highest}");

    // kanon check audits persons: the release meets k over persons, with the classes counted here.
    drop(stmt);
    drop(conn);
    let key = [("KANON_KEY", "a test key")];
    let out = kanon_env(dir.path(), &["check", "job.toml", "--table", "r", "--json"], &key);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let audit: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(audit["persons"], persons - want.persons);
    assert_eq!(audit["rows"], released);
    assert_eq!(audit["classes"], classes.len());
    let mut histogram: BTreeMap<u64, u64> = BTreeMap::new();
    classes.values().for_each(|&n| *histogram.entry(n).or_default() += 1);
    let got: Vec<(u64, u64)> = (audit["histogram"].as_array().unwrap().iter())
        .map(|p| (p[0].as_u64().unwrap(), p[1].as_u64().unwrap()))
        .collect();
    assert_eq!(got, histogram.into_iter().collect::<Vec<_>>());
    assert_eq!(audit["k"].as_u64(), classes.values().min().copied());
    // The source fails k over persons (exit 4), its persons and rows counted.
    let out = kanon_env(dir.path(), &["check", "job.toml"], &key);
    assert_eq!(out.code, 4, "{}", out.stdout);
    let line = format!("source: {} rows of {persons} persons in", brute.rows.len());
    assert!(out.stdout.contains(&line), "{}", out.stdout);
}

/// The nightly job over persons: the second night reuses the node; new persons who
/// cannot share it make it drift ("k"), and the search releases a new one.
#[test]
fn reuse_and_drift_count_persons() {
    let dir = tempfile::tempdir().unwrap();
    write_visits(dir.path(), 150, 13);
    let text = job_text(
        "k = 3\nmax_suppression = 5\nperson = \"member\"",
        "database = \"out.duckdb\"\ntable = \"r\"\ndrop = [\"member\"]\nreport = \"report.json\"",
    ) + "[search]\nreuse = \"previous\"\n";
    std::fs::write(dir.path().join("job.toml"), text).unwrap();
    let report = || -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("report.json")).unwrap()).unwrap()
    };
    let first = kanon_env(dir.path(), &["run", "job.toml"], &[]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    let node = report()["node"].clone();
    let second = kanon_env(dir.path(), &["run", "job.toml"], &[]);
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert_eq!((report()["reused"].as_bool(), &report()["node"]), (Some(true), &node));
    // Six new persons, each alone in a decade of its own, one visit each.
    let mut csv = std::fs::read_to_string(dir.path().join("visits.csv")).unwrap();
    for p in 0..6 {
        writeln!(csv, "new{p},{},F,4,A,100", 1800 + 20 * p).unwrap();
    }
    std::fs::write(dir.path().join("visits.csv"), csv).unwrap();
    let third = kanon_env(dir.path(), &["run", "job.toml"], &[]);
    assert_eq!(third.code, 0, "{}", third.stderr);
    assert!(third.stderr.contains("persons to suppress, at most 5 allowed"), "{}", third.stderr);
    let r = report();
    assert_eq!((r["reused"].as_bool(), r["drift"]["failed"].as_str()), (Some(false), Some("k")));
    assert_eq!(r["drift"]["previous_node"], node);
    let brute = Brute::new(dir.path());
    let points = brute.points(3);
    let want = optimum(&points, 5, Metric::Glm).unwrap();
    let got: Vec<u8> = QIS.iter().map(|q| r["node"][q].as_u64().unwrap() as u8).collect();
    assert_eq!(got, want.levels);
}

/// When every QI is constant within each person, classes of persons are the classes of
/// the one-row-per-person table: every node suppresses the same count.
#[test]
fn constant_qis_per_person_equal_k_over_one_row_per_person() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = StdRng::seed_from_u64(21);
    let (mut visits, mut once) = (String::from("member,birth,sex\n"), String::from("member,birth,sex\n"));
    for p in 0..90 {
        let birth = 1940 + rng.random_range(0..30u32);
        let sex = if rng.random_bool(0.3) { "F" } else { "M" };
        writeln!(once, "m{p},{birth},{sex}").unwrap();
        for _ in 0..rng.random_range(1..=15) {
            writeln!(visits, "m{p},{birth},{sex}").unwrap();
        }
    }
    std::fs::write(dir.path().join("visits.csv"), visits).unwrap();
    std::fs::write(dir.path().join("once.csv"), once).unwrap();
    let qis = "[[quasi_identifiers]]\ncolumn = \"birth\"\nhierarchy = { intervals = [5, 10, 20] }\n\
        [[quasi_identifiers]]\ncolumn = \"sex\"\nhierarchy = \"suppress\"\n";
    let job_of = |csv: &str, person: &str| {
        let text = format!(
            "[source]\ncsv = \"{csv}\"\n[output]\ndatabase = \"o.duckdb\"\ntable = \"r\"\ndrop = [\"member\"]\n[privacy]\nk = 2\n{person}\n{qis}"
        );
        Job::parse(&dir.path().join("job.toml"), &text).unwrap()
    };
    let by_person = load(&job_of("visits.csv", "person = \"member\"")).unwrap();
    let by_row = load(&job_of("once.csv", "")).unwrap();
    let nodes: Vec<Node> = Lattice::new(by_row.data.heights.clone()).nodes().into_iter().map(Node::full).collect();
    let persons = by_person.evaluator().unwrap().histograms(&nodes).unwrap();
    let rows = by_row.evaluator().unwrap().histograms(&nodes).unwrap();
    for k in [2, 3, 6] {
        let req = Requirement { k, l: None, budget: u64::MAX, risk: None };
        for (node, (p, r)) in nodes.iter().zip(persons.iter().zip(&rows)) {
            let (p, r) = (p.outcome(&node.levels, &req, &by_person.data), r.outcome(&node.levels, &req, &by_row.data));
            assert_eq!((p.suppressed, p.classes, p.k), (r.suppressed, r.classes, r.k), "k {k} {node:?}");
        }
    }
}

/// The person column never goes out in clear; models and searches person does not take
/// yet, and a NULL person, exit 2 naming `person`.
#[test]
fn person_refusals_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    write_visits(dir.path(), 20, 3);
    let run = |privacy: &str, output: &str| {
        std::fs::write(dir.path().join("job.toml"), job_text(privacy, output)).unwrap();
        kanon_env(dir.path(), &["run", "job.toml"], &[("KANON_KEY", "k")])
    };
    let table = "database = \"out.duckdb\"\ntable = \"r\"";
    let out = run("k = 2\nperson = \"member\"", table);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("would go out in clear"), "{}", out.stderr);
    let dropped = "database = \"out.duckdb\"\ntable = \"r\"\ndrop = [\"member\"]";
    for (privacy, what) in [
        ("k = 2\nperson = \"member\"\nl_diversity = { column = \"cost\", l = 2 }", "l-diversity"),
        ("k = 2\nperson = \"member\"\nt_closeness = { column = \"cost\", t = 0.5 }", "t-closeness"),
        ("k = 2\nperson = \"ward\"", "quasi-identifier"),
    ] {
        let out = run(privacy, dropped);
        assert_eq!(out.code, 2, "{what}: {}", out.stderr);
        assert!(out.stderr.contains(what) && out.stderr.contains("person"), "{what}: {}", out.stderr);
    }
    std::fs::write(dir.path().join("job.toml"), job_text("k = 2\nperson = \"member\"", dropped)).unwrap();
    let out = kanon_env(dir.path(), &["run", "job.toml", "--scheme", "bhs"], &[]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("scheme") && out.stderr.contains("person"), "{}", out.stderr);
    // A visit without its person.
    let csv = std::fs::read_to_string(dir.path().join("visits.csv")).unwrap();
    std::fs::write(dir.path().join("visits.csv"), format!("{csv},1950,F,3,A,12\n")).unwrap();
    let out = run("k = 2\nperson = \"member\"", dropped);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("NULL"), "{}", out.stderr);
}

/// Wide keys: persons and QIs whose leaf indexes pass 64 bits (u128 keys, the
/// codes read in two packed words), from a CSV (grouped) and a Parquet file
/// (coded rows): the memory evaluator's histograms equal the SQL one's.
#[test]
fn wide_keys_give_the_sql_evaluators_histograms() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = StdRng::seed_from_u64(9);
    let mut csv = String::from("member,a,b,c,d,e\n");
    for p in 0..3000 {
        let (a, b) = (rng.random_range(0..8192u32), rng.random_range(0..8192u32));
        for _ in 0..rng.random_range(1..=2) {
            let (c, d, e) = (rng.random_range(0..8192u32), rng.random_range(0..8192u32), rng.random_range(0..8192u32));
            writeln!(csv, "p{p},{a},{b},{c},{d},{e}").unwrap();
        }
    }
    std::fs::write(dir.path().join("wide.csv"), csv).unwrap();
    let (csv_path, pq_path) = (dir.path().join("wide.csv"), dir.path().join("wide.parquet"));
    let copy =
        format!("COPY (SELECT * FROM read_csv('{}')) TO '{}' (FORMAT parquet)", csv_path.display(), pq_path.display());
    duckdb::Connection::open_in_memory().unwrap().execute_batch(&copy).unwrap();
    let qis: String = ["a", "b", "c", "d", "e"]
        .iter()
        .map(|q| format!("[[quasi_identifiers]]\ncolumn = \"{q}\"\nhierarchy = {{ intervals = [512] }}\n"))
        .collect();
    for source in ["csv = \"wide.csv\"", "parquet = \"wide.parquet\""] {
        let text = format!(
            "[source]\n{source}\n[output]\ndatabase = \"out.duckdb\"\ntable = \"r\"\ndrop = [\"member\"]\n\
             [privacy]\nk = 2\nmax_suppression = 0\nperson = \"member\"\n{qis}"
        );
        let loaded = load(&Job::parse(&dir.path().join("job.toml"), &text).unwrap()).unwrap();
        let lattice = Lattice::new(loaded.data.heights.clone());
        let nodes: Vec<Node> = lattice.nodes().into_iter().step_by(7).map(Node::full).collect();
        let mut mem = loaded.evaluator_on(Backend::Memory).unwrap();
        let mut sql = loaded.evaluator_on(Backend::Sql).unwrap();
        assert_eq!((mem.backend(), sql.backend()), ("memory", "sql"), "{source}");
        assert_eq!(mem.histograms(&nodes).unwrap(), sql.histograms(&nodes).unwrap(), "{source}");
        assert_eq!(mem.combinations().unwrap(), sql.combinations().unwrap(), "{source}");
    }
}
