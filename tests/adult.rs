//! Incognito against exhaustive evaluation on UCI Adult (../shared/data/adult):
//! the feasible sets and the optima must be equal, and releases must re-measure
//! as k-anonymous. Skipped, with a notice, when the data is absent.

use kanon::evaluator::Evaluator;
use kanon::job::{Budget, Job};
use kanon::lattice::{Lattice, Node};
use kanon::load::{load, Loaded};
use kanon::metrics::Requirement;
use kanon::options::Metric;
use kanon::release;
use kanon::search::{self, incognito, Problem, Silent};
use std::path::Path;

const QIS: [&str; 8] =
    ["age", "education", "marital-status", "native-country", "race", "sex", "workclass", "salary-class"];

use crate::util::adult_dir;

/// A job over Adult's 8 usual QIs, writing into `out`.
fn adult_job(adult: &Path, out: &Path, diversity: bool) -> Job {
    let mut text = format!(
        "[source]\ncsv = \"{}\"\ndelimiter = \";\"\n[output]\ndatabase = \"{}\"\ntable = \"adult_release\"\n\
         [privacy]\nk = 2\nmax_suppression = 0.0\n",
        adult.join("adult.csv").display(),
        out.join("release.duckdb").display()
    );
    if diversity {
        text.push_str("l_diversity = { column = \"occupation\", l = 3 }\n");
    }
    for q in QIS {
        text.push_str(&format!(
            "[[quasi_identifiers]]\ncolumn = \"{q}\"\nhierarchy = {{ file = \"{}\" }}\n",
            adult.join(format!("hierarchy_{q}.csv")).display()
        ));
    }
    Job::parse(&out.join("adult.toml"), &text).unwrap()
}

/// Every node's histogram, once, for all cases.
fn all_feasible(ev: &mut Evaluator, lattice: &Lattice, req: &Requirement) -> Vec<Vec<u8>> {
    let nodes = lattice.nodes();
    let hists = ev.histograms(&nodes.iter().map(|l| Node::full(l.clone())).collect::<Vec<_>>()).unwrap();
    nodes.into_iter().zip(hists).filter(|(_, h)| h.feasible(req)).map(|(l, _)| l).collect()
}

fn remeasure_k(db: &Path, table: &str) -> i64 {
    let conn = duckdb::Connection::open(db).unwrap();
    let cols = QIS.iter().map(|q| format!("\"{q}\"")).collect::<Vec<_>>().join(", ");
    conn.query_row(&format!("SELECT min(c) FROM (SELECT count(*) c FROM \"{table}\" GROUP BY {cols})"), [], |r| {
        r.get(0)
    })
    .unwrap()
}

fn compare_cases(loaded: &Loaded, job: &Job, ks: &[u64], budgets: &[f64], l: Option<u64>) {
    let lattice = Lattice::new(loaded.data.heights.clone());
    assert_eq!(lattice.size(), 4320);
    let mut reference = loaded.evaluator().unwrap();
    for &k in ks {
        for &fraction in budgets {
            let req = Requirement { k, l, budget: Budget::Fraction(fraction).rows(loaded.data.rows) };
            let truth = all_feasible(&mut reference, &lattice, &req);
            for metric in [Metric::Glm, Metric::Dm] {
                let exact = search::score(&mut reference, &lattice, truth.clone(), &req, metric, 0, &Silent).unwrap();
                let mut ev = loaded.evaluator().unwrap();
                let found =
                    incognito::search(&mut ev, &Problem { lattice: &lattice, req: &req, metric }, &Silent).unwrap();
                let case = format!("k={k} suppression={fraction} l={l:?} metric={}", metric.name());
                assert_eq!(found.feasible, exact.feasible, "{case}: feasible sets differ");
                let (a, b) = (found.best.clone().unwrap(), exact.best.clone().unwrap());
                assert_eq!(a.levels, b.levels, "{case}: optima differ");
                assert_eq!(a.outcome, b.outcome, "{case}");
                assert!(a.outcome.suppressed <= req.budget, "{case}");
                assert!(a.outcome.k.unwrap() >= k, "{case}");
                let m = a.outcome.metrics;
                println!(
                    "{case}: node {:?} glm {:.2} ({:.4}) dm {} suppressed {} feasible {} minimal {} checked {} evaluated {} / {}",
                    a.levels, m.glm, m.glm_normalized, m.dm, a.outcome.suppressed, found.feasible.len(),
                    found.minimal, found.checked, ev.evaluations(), lattice.size()
                );
                if metric == Metric::Glm {
                    // Write the release and re-measure it independently.
                    let mut job = job.clone();
                    job.output.table.as_mut().unwrap().name = format!("r_k{k}_{}", (fraction * 100.0) as u32);
                    let recoding = release::Recoding::levels(&loaded, &a.levels, &req).unwrap();
                    let w = release::write(&loaded, &job, &job.output, &recoding, None, None).unwrap();
                    assert_eq!(w.rows + a.outcome.suppressed, loaded.data.rows, "{case}");
                    loaded.conn.execute_batch("DETACH kanon_out").unwrap();
                    let out = job.output.table.as_ref().unwrap();
                    let measured = remeasure_k(&out.database, &out.name);
                    assert!(measured >= k as i64, "{case}: release re-measures k = {measured}");
                }
            }
        }
    }
}

#[test]
fn incognito_equals_exhaustive_on_adult() {
    let Some(adult) = adult_dir() else { return };
    let out = tempfile::tempdir().unwrap();
    let job = adult_job(&adult, out.path(), false);
    let loaded = load(&job).unwrap();
    assert_eq!(loaded.data.rows, 30162);
    compare_cases(&loaded, &job, &[2, 5, 10, 100], &[0.0, 0.01], None);
}

#[test]
fn incognito_equals_exhaustive_on_adult_with_l_diversity() {
    let Some(adult) = adult_dir() else { return };
    let out = tempfile::tempdir().unwrap();
    let job = adult_job(&adult, out.path(), true);
    let loaded = load(&job).unwrap();
    compare_cases(&loaded, &job, &[5], &[0.01], Some(3));
}

/// POkA on Adult, 8 QIs, 1% budget, at the paper's default depth d_avg = 2:
/// the front equals the exhaustive front for glm and dm. The paper's search
/// alone misses two nodes each at this depth (their meet with the base is 3
/// specializations below it); they are found because nodes evaluated for
/// earlier bases seed the search. At most the paper's 20% of the lattice is
/// evaluated (see the pareto benchmark for the measured shares).
#[test]
fn poka_front_equals_exhaustive_on_adult_at_d_avg() {
    use kanon::search::{front as pareto, poka};
    let Some(adult) = adult_dir() else { return };
    let out = tempfile::tempdir().unwrap();
    let job = adult_job(&adult, out.path(), false);
    let loaded = load(&job).unwrap();
    let lattice = Lattice::new(loaded.data.heights.clone());
    assert_eq!(poka::default_depth(&lattice), 2);
    let budget = Budget::Fraction(0.01).rows(loaded.data.rows);
    let mut all_ev = loaded.evaluator().unwrap();
    let nodes = lattice.nodes();
    for metric in [Metric::Glm, Metric::Dm] {
        let truth = pareto::front(&pareto::points(&mut all_ev, &nodes, budget, metric).unwrap());
        let mut ev = loaded.evaluator().unwrap();
        let found = poka::poka(&mut ev, &lattice, budget, metric, None).unwrap();
        let cmp = pareto::compare(&found.front, truth.clone());
        println!(
            "{}: true front {}, found {}, recall {:.3}, {} dominated, {} of {} evaluated",
            metric.name(),
            truth.len(),
            cmp.found,
            cmp.recall,
            cmp.dominated_reported.len(),
            ev.evaluations(),
            lattice.size()
        );
        assert_eq!(cmp.recall, 1.0, "{}: missed {:?}", metric.name(), cmp.missed);
        assert!(cmp.dominated_reported.is_empty(), "{}", metric.name());
        assert_eq!(found.front.len(), truth.len());
        assert!(
            ev.evaluations() as f64 <= 0.2 * lattice.size() as f64,
            "{}: {} evaluated",
            metric.name(),
            ev.evaluations()
        );
    }
}

/// The memory and SQL backends give the same histogram for every one of the
/// 4,320 nodes, with ℓ-diversity on occupation and salary-class as the class
/// column (for cm).
#[test]
fn memory_and_sql_backends_agree_on_every_adult_node() {
    use kanon::evaluator::Backend;
    let Some(adult) = adult_dir() else { return };
    let out = tempfile::tempdir().unwrap();
    let mut job = adult_job(&adult, out.path(), true);
    job.class_column = Some(kanon::job::Column { name: "salary-class".into(), line: 0 });
    let loaded = load(&job).unwrap();
    let nodes: Vec<Node> = Lattice::new(loaded.data.heights.clone()).nodes().into_iter().map(Node::full).collect();
    let mut sql = loaded.evaluator_on(Backend::Sql).unwrap().leaf_sums_from(5);
    let mut mem = loaded.evaluator_on(Backend::Memory).unwrap().leaf_sums_from(5);
    let expected = sql.histograms(&nodes).unwrap();
    let got = mem.histograms(&nodes).unwrap();
    for ((node, a), b) in nodes.iter().zip(&got).zip(&expected) {
        assert_eq!(a, b, "{:?}", node.levels);
    }
    assert_eq!(mem.evaluations(), 4320);
}

/// The exact front equals the exhaustive front on Adult for glm, dm and cm
/// (salary-class as the class column) at budgets 0, 1% and 5%: the same
/// nodes, k and loss, every node evaluated or excluded by a bound.
#[test]
fn exact_front_equals_exhaustive_on_adult() {
    use kanon::search::exact_front::exact_front;
    use kanon::search::front;
    let Some(adult) = adult_dir() else { return };
    let out = tempfile::tempdir().unwrap();
    let mut job = adult_job(&adult, out.path(), false);
    job.class_column = Some(kanon::job::Column { name: "salary-class".into(), line: 0 });
    let loaded = load(&job).unwrap();
    let lattice = Lattice::new(loaded.data.heights.clone());
    let mut all_ev = loaded.evaluator().unwrap();
    for fraction in [0.0, 0.01, 0.05] {
        let budget = Budget::Fraction(fraction).rows(loaded.data.rows);
        for metric in [Metric::Glm, Metric::Dm, Metric::Cm] {
            let truth = front::front(&front::points(&mut all_ev, &lattice.nodes(), budget, metric).unwrap());
            let mut ev = loaded.evaluator().unwrap();
            let found = exact_front(&mut ev, &lattice, budget, metric).unwrap();
            let case = format!("{} budget {fraction}", metric.name());
            println!("{case}: front {}, {} of {} evaluated", truth.len(), ev.evaluations(), lattice.size());
            let key = |p: &front::Point| (p.levels.clone(), p.k, p.loss);
            assert_eq!(
                found.front.iter().map(key).collect::<Vec<_>>(),
                truth.iter().map(key).collect::<Vec<_>>(),
                "{case}"
            );
            assert_eq!(ev.evaluations() + found.excluded, lattice.size(), "{case}");
        }
    }
}
