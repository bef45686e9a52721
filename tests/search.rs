//! Incognito, the top-down search and exhaustive evaluation against a brute
//! force over the source rows (`crate::util::BruteForce`, which groups the
//! rows itself and scores by the documented definitions) on generated
//! tables: every feasible set and optimum must agree, across k, budgets, ℓ
//! and metrics; the Pareto fronts likewise.

use crate::util::{
    brute_feasible, brute_front, brute_optimum, brute_rows, intervals_hierarchy, mask_hierarchy, read_delimited,
    suppress_hierarchy, BruteForce, Judged, Models, Req,
};
use kanon::evaluator::Backend;
use kanon::job::Job;
use kanon::lattice::Lattice;
use kanon::load::load;
use kanon::measure::metrics::Requirement;
use kanon::options::Metric;
use kanon::search::{self, exhaustive, incognito, topdown, Problem, Silent};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::fmt::Write;
use std::path::Path;

/// A skewed table: zip (mask), age (intervals), sex (suppress), diagnosis (sensitive).
fn write_table(dir: &Path, rows: usize, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut csv = String::from("zip,age,sex,diagnosis\n");
    for _ in 0..rows {
        let zip = 53700 + (rng.random_range(0..30u32).pow(2) / 30);
        let age = 18 + rng.random_range(0..60u32) * rng.random_range(0..=1u32) + rng.random_range(0..10u32);
        let sex = if rng.random_bool(0.5) { "F" } else { "M" };
        let diag = ["flu", "asthma", "ulcer", "angina", "bronchitis"][rng.random_range(0..5usize)];
        writeln!(csv, "{zip},{age},{sex},{diag}").unwrap();
    }
    std::fs::write(dir.join("t.csv"), csv).unwrap();
}

/// The brute force over `write_table`'s rows with `job`'s hierarchies built from the
/// column's values as docs/job.md defines them (zip mask 3, age intervals 5, 10, 20, sex
/// suppressed); diagnosis the sensitive column, and the label when `label`.
fn brute(dir: &Path, label: bool, models: Models) -> BruteForce {
    let (header, cells) = read_delimited(&dir.join("t.csv"), ',');
    let rows = brute_rows(&header, &cells, &["zip", "age", "sex"], Some("diagnosis"), label.then_some("diagnosis"));
    let column = |a: usize| rows.iter().map(|r| r.qi[a].clone()).collect::<Vec<_>>();
    let hierarchies = [
        mask_hierarchy(&column(0), 3),
        intervals_hierarchy(&column(1), &[5.0, 10.0, 20.0]),
        suppress_hierarchy(&column(2)),
    ];
    BruteForce::new(&rows, &hierarchies, label, models)
}

/// A search's optimum against the brute force's: the same node, and the same suppression,
/// k, ℓ, classes and metrics.
fn assert_best(got: &Option<search::Found>, want: &Option<Judged>, case: &str) {
    match (got, want) {
        (None, None) => {}
        (Some(g), Some(w)) => {
            assert_eq!(g.levels, w.levels, "{case}: optimum");
            let o = &g.outcome;
            assert!(o.feasible, "{case}");
            assert_eq!((o.suppressed, o.k, o.l, o.classes), (w.suppressed, w.k, w.l, w.classes), "{case}");
            let m = &o.metrics;
            let pairs = [
                (m.glm, w.metrics.glm),
                (m.glm_normalized, w.metrics.glm_normalized),
                (m.dm, w.metrics.dm),
                (m.precision, w.metrics.precision),
                (m.height, w.metrics.height),
                (m.cm.unwrap_or(f64::NAN), w.metrics.cm),
            ];
            for (i, (a, b)) in pairs.into_iter().enumerate() {
                assert!(
                    crate::util::same(a, b),
                    "{case}: metric {i} of glm, glm_normalized, dm, precision, height, cm: {a} != {b}"
                );
            }
        }
        _ => panic!(
            "{case}: kanon's optimum {:?}, the brute force's {:?}",
            got.as_ref().map(|g| &g.levels),
            want.as_ref().map(|w| &w.levels)
        ),
    }
}

/// The feasible nodes none of whose direct specializations (one QI a level lower) is feasible.
fn brute_minimal(feasible: &[Vec<u8>]) -> usize {
    let has_feasible_below = |l: &Vec<u8>| {
        (0..l.len()).filter(|&a| l[a] > 0).any(|a| {
            let mut d = l.clone();
            d[a] -= 1;
            feasible.contains(&d)
        })
    };
    feasible.iter().filter(|l| !has_feasible_below(l)).count()
}

/// A front (levels when they must match too, k, loss) against the brute force's, in order.
fn assert_same_front(got: &[(Option<Vec<u8>>, u64, f64)], want: &[crate::util::BrutePoint], case: &str) {
    let show = |f: &[(Option<Vec<u8>>, u64, f64)]| {
        f.iter().map(|(l, k, loss)| format!("{l:?} k {k} loss {loss}")).collect::<Vec<_>>()
    };
    let wanted: Vec<_> = want.iter().map(|p| (Some(p.levels.clone()), p.k, p.loss)).collect();
    let equal = got.len() == want.len()
        && got.iter().zip(want).all(|((l, k, loss), w)| {
            l.as_ref().is_none_or(|l| *l == w.levels) && *k == w.k && crate::util::same(*loss, w.loss)
        });
    assert!(equal, "{case}:\n  kanon {:?}\n  brute {:?}", show(got), show(&wanted));
}

fn sorted(mut nodes: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    nodes.sort();
    nodes
}

fn job(dir: &Path, diversity: bool) -> Job {
    let mut text = String::from(
        "[source]\ncsv = \"t.csv\"\n[output]\ndatabase = \"out.duckdb\"\ntable = \"r\"\n[privacy]\nk = 2\n",
    );
    if diversity {
        text.push_str("l_diversity = { column = \"diagnosis\", l = 2 }\n");
    }
    text.push_str(
        "[[quasi_identifiers]]\ncolumn = \"zip\"\nhierarchy = { mask = 3 }\n\
         [[quasi_identifiers]]\ncolumn = \"age\"\nhierarchy = { intervals = [5, 10, 20] }\n\
         [[quasi_identifiers]]\ncolumn = \"sex\"\nhierarchy = \"suppress\"\n",
    );
    Job::parse(&dir.join("job.toml"), &text).unwrap()
}

#[test]
fn incognito_equals_exhaustive_on_generated_tables() {
    for (seed, diversity) in [(1, false), (2, true)] {
        let dir = tempfile::tempdir().unwrap();
        write_table(dir.path(), 400, seed);
        let loaded = load(&job(dir.path(), diversity)).unwrap();
        let lattice = Lattice::new(loaded.data.heights.clone());
        assert_eq!(lattice.heights, vec![3, 4, 1]);
        let mut reference = loaded.evaluator().unwrap();
        let truth = brute(dir.path(), false, Models::default());
        assert_eq!(truth.heights, lattice.heights);
        let ls: &[Option<u64>] = if diversity { &[Some(2), Some(3)] } else { &[None] };
        let (mut refutations, mut refutations_sql, mut refutations_by_values, mut refutations_by_qis) = (0, 0, 0, 0);
        for &l in ls {
            for k in [1, 3, 8, 60] {
                for budget in [0, 20] {
                    let req = Requirement { k, l, budget, risk: None };
                    let metrics: &[Metric] = if k == 3 {
                        &[Metric::Glm, Metric::Dm, Metric::Precision, Metric::Height]
                    } else {
                        &[Metric::Glm, Metric::Dm]
                    };
                    for &metric in metrics {
                        let exact = exhaustive::search(
                            &mut reference,
                            &Problem { lattice: &lattice, req: &req, metric },
                            &Silent,
                        )
                        .unwrap();
                        let mut ev = loaded.evaluator().unwrap();
                        let found =
                            incognito::search(&mut ev, &Problem { lattice: &lattice, req: &req, metric }, &Silent)
                                .unwrap();
                        // The same search with frequency sets in DuckDB: the same result and evaluations.
                        let mut sql_ev = loaded.evaluator_on(Backend::Sql).unwrap();
                        let on_sql =
                            incognito::search(&mut sql_ev, &Problem { lattice: &lattice, req: &req, metric }, &Silent)
                                .unwrap();
                        assert_eq!(on_sql.feasible, found.feasible);
                        assert_eq!(sql_ev.evaluations(), ev.evaluations());
                        assert_eq!(on_sql.best.map(|b| b.levels), found.best.as_ref().map(|b| b.levels.clone()));
                        let mut sets_ev = loaded.evaluator_on(Backend::Sql).unwrap().grouping_sets_from(0);
                        let in_sets = exhaustive::search(
                            &mut sets_ev,
                            &Problem { lattice: &lattice, req: &req, metric },
                            &Silent,
                        )
                        .unwrap();
                        assert_eq!(in_sets.feasible, exact.feasible, "grouping sets {}", metric.name());
                        let case = format!("seed {seed} k {k} l {l:?} budget {budget} {}", metric.name());
                        // The brute force's feasible set, minimal nodes and optimum.
                        let judged = truth.judge_all(&Req { k, l, budget });
                        let (feasible, optimum) = (brute_feasible(&judged), brute_optimum(&judged, metric));
                        assert_eq!(sorted(exact.feasible.clone()), feasible, "exhaustive {case}");
                        assert_eq!(sorted(found.feasible.clone()), feasible, "incognito {case}");
                        assert_eq!(found.minimal, brute_minimal(&feasible), "incognito {case}");
                        assert_best(&exact.best, &optimum, &format!("exhaustive {case}"));
                        assert_best(&found.best, &optimum, &format!("incognito {case}"));
                        assert_best(&in_sets.best, &optimum, &format!("exhaustive on grouping sets {case}"));
                        assert_eq!(found.feasible, exact.feasible, "{case}");
                        assert_eq!(found.minimal, exact.minimal, "{case}");
                        match (&found.best, &exact.best) {
                            (Some(a), Some(b)) => {
                                assert_eq!((&a.levels, &a.outcome), (&b.levels, &b.outcome), "{case}");
                                assert!(a.outcome.suppressed <= budget);
                            }
                            (None, None) => assert!(exact.feasible.is_empty()),
                            _ => panic!("{case}: one search found an optimum, the other did not"),
                        }
                        // Top-down branch and bound: the same optimum; only truly feasible
                        // nodes reported, and all of them when no bound prunes (dm).
                        // Top-down as `run` evaluates on large tables: batches from the base through
                        // GROUPING SETS, glm terms only for classes of at least k.
                        let mut ev = loaded.evaluator_on(Backend::Sql).unwrap().grouping_sets_from(0).leaf_sums_from(k);
                        let td = topdown::search(&mut ev, &Problem { lattice: &lattice, req: &req, metric }, &Silent)
                            .unwrap();
                        let mut mem = loaded.evaluator_on(Backend::Memory).unwrap().leaf_sums_from(k);
                        let td_mem =
                            topdown::search(&mut mem, &Problem { lattice: &lattice, req: &req, metric }, &Silent)
                                .unwrap();
                        assert_eq!(td_mem.feasible, td.feasible, "topdown in memory {case}");
                        assert_eq!(mem.evaluations(), ev.evaluations(), "topdown in memory {case}");
                        // Large nodes proved infeasible on a sample of their classes first
                        // (on every set, however small): the same nodes found feasible.
                        let mut sampled =
                            loaded.evaluator_on(Backend::Memory).unwrap().leaf_sums_from(k).refute_from(0);
                        let td_sampled =
                            topdown::search(&mut sampled, &Problem { lattice: &lattice, req: &req, metric }, &Silent)
                                .unwrap();
                        assert_eq!(td_sampled.feasible, td_mem.feasible, "topdown on samples {case}");
                        assert_eq!(td_sampled.checked, td_mem.checked, "topdown on samples {case}");
                        refutations += sampled.refutations();
                        let same_best = |a: &Option<search::Found>, b: &Option<search::Found>| match (a, b) {
                            (Some(a), Some(b)) => (&a.levels, &a.outcome) == (&b.levels, &b.outcome),
                            (None, None) => true,
                            _ => false,
                        };
                        // Sampled by rows drawn from each node's most spread QIs instead: the one
                        // most spread (every QI qualifies at 2), then several together (no QI has
                        // 200 values). The same nodes found feasible and settled.
                        for (spread, count) in [(2, &mut refutations_by_values), (200, &mut refutations_by_qis)] {
                            let mut by_values = loaded
                                .evaluator_on(Backend::Memory)
                                .unwrap()
                                .leaf_sums_from(k)
                                .refute_from(0)
                                .sample_spread(spread);
                            let td_by_values = topdown::search(
                                &mut by_values,
                                &Problem { lattice: &lattice, req: &req, metric },
                                &Silent,
                            )
                            .unwrap();
                            assert_eq!(
                                td_by_values.feasible, td_mem.feasible,
                                "topdown on row samples {spread} {case}"
                            );
                            assert_eq!(td_by_values.checked, td_mem.checked, "topdown on row samples {spread} {case}");
                            assert!(
                                same_best(&td_by_values.best, &exact.best),
                                "topdown on row samples {spread} {case}"
                            );
                            assert_best(
                                &td_by_values.best,
                                &optimum,
                                &format!("topdown on row samples {spread} {case}"),
                            );
                            *count += by_values.row_refutations();
                        }
                        // The same on the SQL backend, whose samples are DuckDB's hashes.
                        let mut sampled_sql = loaded
                            .evaluator_on(Backend::Sql)
                            .unwrap()
                            .grouping_sets_from(0)
                            .leaf_sums_from(k)
                            .refute_from(0);
                        let td_sampled_sql = topdown::search(
                            &mut sampled_sql,
                            &Problem { lattice: &lattice, req: &req, metric },
                            &Silent,
                        )
                        .unwrap();
                        assert_eq!(td_sampled_sql.feasible, td_mem.feasible, "topdown on SQL samples {case}");
                        assert_eq!(td_sampled_sql.checked, td_mem.checked, "topdown on SQL samples {case}");
                        refutations_sql += sampled_sql.refutations();
                        assert!(same_best(&td.best, &exact.best), "topdown {case}");
                        assert!(same_best(&td_mem.best, &exact.best), "topdown in memory {case}");
                        assert!(same_best(&td_sampled.best, &exact.best), "topdown on samples {case}");
                        assert!(same_best(&td_sampled_sql.best, &exact.best), "topdown on SQL samples {case}");
                        assert_best(&td.best, &optimum, &format!("topdown {case}"));
                        assert_best(&td_mem.best, &optimum, &format!("topdown in memory {case}"));
                        assert_best(&td_sampled.best, &optimum, &format!("topdown on samples {case}"));
                        assert_best(&td_sampled_sql.best, &optimum, &format!("topdown on SQL samples {case}"));
                        assert!(td.feasible.iter().all(|f| feasible.contains(f)), "topdown {case}");
                        assert!(td.checked <= lattice.size(), "topdown {case}");
                    }
                }
            }
        }
        assert!(refutations > 0, "no node was proved infeasible on a sample");
        assert!(refutations_sql > 0, "no node was proved infeasible on a sample in SQL");
        assert!(refutations_by_values > 0, "no node was proved infeasible on a sample by a QI's values");
        assert!(refutations_by_qis > 0, "no node was proved infeasible on a sample by several QIs' values");
        // k = all rows: exactly the nodes that put every row in one class.
        let all = Requirement { k: 400, l: None, budget: 0, risk: None };
        let mut ev = loaded.evaluator().unwrap();
        let r = incognito::search(&mut ev, &Problem { lattice: &lattice, req: &all, metric: Metric::Glm }, &Silent)
            .unwrap();
        assert!(r.feasible.contains(&lattice.top()));
        let mut one_class = 0;
        for levels in truth.nodes() {
            let classes = truth.classes(&levels);
            one_class += (classes.len() == 1) as usize;
            assert_eq!(r.feasible.contains(&levels), classes.len() == 1, "{levels:?}");
        }
        assert_eq!(r.feasible.len(), one_class);
    }
}

/// POkA against the brute force's front on a generated table: every node's
/// point (k under the budget, suppression, loss, the loss with nothing
/// suppressed, glm's per-QI terms) equals the brute force's, and so does the
/// front of those points; each node POkA reports has its true k and loss and
/// is on the true front or beaten by a node of it; with the depth search
/// reaching the bottom of the lattice it finds the whole front.
#[test]
fn poka_front_against_brute_force_on_a_generated_table() {
    use kanon::search::{front as pareto, poka};
    let dir = tempfile::tempdir().unwrap();
    write_table(dir.path(), 400, 3);
    let loaded = load(&job(dir.path(), false)).unwrap();
    let lattice = Lattice::new(loaded.data.heights.clone());
    let full_depth: u32 = lattice.heights.iter().map(|&h| h as u32).sum();
    let brute = brute(dir.path(), false, Models::default());
    let classes: Vec<_> = lattice.nodes().iter().map(|l| brute.classes(l)).collect();
    let close = crate::util::same;
    for metric in [Metric::Glm, Metric::Dm] {
        for budget in [0, 4, 20] {
            let mut all_ev = loaded.evaluator().unwrap();
            let all = pareto::points(&mut all_ev, &lattice.nodes(), budget, metric).unwrap();
            let points: Vec<_> =
                all.iter().zip(&classes).map(|(p, c)| brute.point(&p.levels, c, budget, metric)).collect();
            for ((x, b), c) in all.iter().zip(&points).zip(&classes) {
                assert_eq!((x.k, x.suppressed), (b.k, b.suppressed), "{:?} budget {budget}", x.levels);
                assert!(close(x.loss, b.loss) && close(x.floor, b.floor), "{x:?} against {b:?}");
                if metric == Metric::Glm {
                    let per_qi = brute.glm_per_qi(&x.levels, c);
                    assert!(x.per_qi.iter().zip(&per_qi).all(|(a, b)| close(*a, *b)), "{x:?}: {per_qi:?}");
                }
            }
            let truth = brute_front(&points);
            assert!(truth.len() >= 2, "{} budget {budget}: a front of one node tests little", metric.name());
            assert_same_front(
                &pareto::front(&all).iter().map(|p| (Some(p.levels.clone()), p.k, p.loss)).collect::<Vec<_>>(),
                &truth,
                &format!("front::front, {} budget {budget}", metric.name()),
            );
            // What POkA prunes with holds with suppression: k never falls under
            // generalization, the loss of a node and of each generalization is at
            // least the node's loss with nothing suppressed, and for glm that is a
            // sum of per-QI terms that depend only on the QI's level and grow with it
            // (the points are the brute force's, checked above).
            let no_less = |a: f64, b: f64| a >= b || close(a, b);
            for x in &all {
                assert!(no_less(x.loss, x.floor), "{x:?}");
                if metric == Metric::Glm {
                    assert!(close(x.per_qi.iter().sum(), x.floor), "{x:?}");
                }
                for y in all.iter().filter(|y| x.levels.iter().zip(&y.levels).all(|(a, b)| a <= b)) {
                    assert!(y.k >= x.k, "{x:?} {y:?}");
                    assert!(no_less(y.loss, x.floor), "{x:?} {y:?}");
                    for (a, (tx, ty)) in x.per_qi.iter().zip(&y.per_qi).enumerate() {
                        assert!(no_less(*ty, *tx), "{x:?} {y:?}");
                        if x.levels[a] == y.levels[a] {
                            assert!(close(*tx, *ty), "{x:?} {y:?}");
                        }
                    }
                }
            }
            for depth in [1, poka::default_depth(&lattice), full_depth] {
                let mut ev = loaded.evaluator().unwrap();
                let found = poka::poka(&mut ev, &lattice, budget, metric, Some(depth)).unwrap();
                let case = format!("{} budget {budget} depth {depth}", metric.name());
                let on_front =
                    found.front.iter().filter(|p| truth.iter().any(|t| t.k == p.k && close(t.loss, p.loss))).count();
                println!(
                    "{case}: {on_front} of {} reported on the true front of {}, {} of {} evaluated",
                    found.front.len(),
                    truth.len(),
                    ev.evaluations(),
                    lattice.size()
                );
                for p in &found.front {
                    let b = &points[lattice.nodes().iter().position(|l| *l == p.levels).unwrap()];
                    assert_eq!((p.k, p.suppressed), (b.k, b.suppressed), "{case}: {:?}", p.levels);
                    assert!(close(p.loss, b.loss), "{case}: {:?} loss {} != {}", p.levels, p.loss, b.loss);
                    assert!(
                        truth.iter().any(|t| t.k >= p.k && (t.loss <= p.loss || close(t.loss, p.loss))),
                        "{case}: {p:?} beats the true front"
                    );
                }
                assert_eq!(found.front[0].k, loaded.data.rows, "{case}: POkA starts with the one-class nodes");
                assert!(found.front.windows(2).all(|w| w[1].k < w[0].k && w[1].loss < w[0].loss), "{case}");
                if depth == full_depth {
                    // The whole front, nothing else (POkA may name another node of the same k and loss).
                    let got: Vec<_> = found.front.iter().map(|p| (None, p.k, p.loss)).collect();
                    assert_same_front(&got, &truth, &case);
                }
            }
        }
    }
}

/// cm from the histograms equals cm re-measured on the written release with SQL.
#[test]
fn cm_matches_the_release() {
    let dir = tempfile::tempdir().unwrap();
    write_table(dir.path(), 400, 4);
    let mut job = job(dir.path(), false);
    job.class_column = Some(kanon::job::Column { name: "diagnosis".into(), line: 0 });
    let loaded = load(&job).unwrap();
    let mut ev = loaded.evaluator().unwrap();
    for (i, levels) in [vec![0u8, 0, 0], vec![1, 2, 1], vec![2, 4, 0], vec![3, 4, 1]].into_iter().enumerate() {
        let req = Requirement { k: 3, l: None, budget: 400, risk: None };
        let h = ev.histogram(&kanon::lattice::Node::full(levels.clone())).unwrap();
        let cm = h.outcome(&levels, &req, &loaded.data).metrics.cm.unwrap();
        let recoding = kanon::full_domain_recoding(&loaded, &levels, &req).unwrap();
        job.output.table.as_mut().unwrap().name = format!("r{i}");
        kanon::release::write(&loaded, &job, &job.output, &recoding, None, None).unwrap();
        let sql = format!(
            "SELECT (sum(size - top) + (400 - sum(size)))::DOUBLE / 400 FROM (
               SELECT sum(n) size, max(n) top FROM (
                 SELECT zip, age, sex, diagnosis, count(*) n FROM kanon_out.main.r{i} GROUP BY ALL)
               GROUP BY zip, age, sex)"
        );
        let measured: f64 = loaded.conn.query_row(&sql, [], |r| r.get(0)).unwrap();
        assert!((cm - measured).abs() < 1e-12, "{levels:?}: cm {cm} vs release {measured}");
    }
}

/// Histograms rolled up with GROUPING SETS (top-level QIs left out of the keys,
/// packed keys or a column per QI, alone or in batches, with and without
/// sensitive codes) equal those of the plain rollup, for every node.
#[test]
fn grouping_sets_histograms_equal_plain_rollup() {
    use kanon::lattice::Node;
    for diversity in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        write_table(dir.path(), 300, 5);
        let loaded = load(&job(dir.path(), diversity)).unwrap();
        let nodes: Vec<Node> = Lattice::new(loaded.data.heights.clone()).nodes().into_iter().map(Node::full).collect();
        let mut plain = loaded.evaluator_on(Backend::Sql).unwrap();
        let expected = plain.histograms(&nodes).unwrap();
        let mut batched = loaded.evaluator_on(Backend::Sql).unwrap().grouping_sets_from(0);
        assert_eq!(batched.histograms(&nodes).unwrap(), expected, "diversity {diversity}, batches");
        let mut columns = loaded.evaluator_on(Backend::Sql).unwrap().grouping_sets_from(0).packed_keys(false);
        assert_eq!(columns.histograms(&nodes).unwrap(), expected, "diversity {diversity}, a column per QI");
        let mut single = loaded.evaluator_on(Backend::Sql).unwrap().grouping_sets_from(0);
        for (node, h) in nodes.iter().zip(&expected) {
            assert_eq!(&single.histogram(node).unwrap(), h, "diversity {diversity}, node {node:?} alone");
        }
        assert!(expected.iter().all(|h| h.classes() > 0));
    }
}

/// The report's distinct QI combinations: with ℓ-diversity the base frequency
/// set has a row per (QIs, sensitive value), which must not be counted twice.
#[test]
fn combinations_are_distinct_qi_values() {
    for diversity in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        write_table(dir.path(), 400, 3);
        let loaded = load(&job(dir.path(), diversity)).unwrap();
        let q = |sql: &str| -> i64 { loaded.conn.query_row(sql, [], |r| r.get(0)).unwrap() };
        let want = q("SELECT count(*) FROM (SELECT DISTINCT zip, age, sex FROM kanon_source)");
        assert_eq!(kanon::data::frequency::combinations(&loaded.conn, 3, loaded.extras).unwrap() as i64, want);
        if diversity {
            assert!(q("SELECT count(*) FROM kanon_f0") > want, "the fixture should repeat QI combinations");
        }
    }
}

/// A job over the generated table with ℓ-diversity and / or a class column.
fn job_with(dir: &Path, diversity: bool, label: bool) -> Job {
    let mut job = job(dir, diversity);
    if label {
        // The class column may not be the sensitive one only by convention; sex is a QI, so use diagnosis.
        job.class_column = Some(kanon::job::Column { name: "diagnosis".into(), line: 0 });
    }
    job
}

/// The two backends give the same histogram for every node of several
/// tables: every full node, and Incognito's nodes over QI subsets; with and
/// without ℓ-diversity and a class column; with glm's leaf sums for every
/// class or only for classes of at least k; one node at a time and in one batch.
#[test]
fn memory_and_sql_backends_agree_on_every_node() {
    use itertools::Itertools;
    use kanon::lattice::Node;
    use kanon::measure::metrics::Histogram;
    for (seed, rows, diversity, label) in [
        (11, 400, false, false),
        (12, 300, true, false),
        (13, 300, false, true),
        (14, 500, true, true),
        (15, 40, false, false),
    ] {
        let dir = tempfile::tempdir().unwrap();
        write_table(dir.path(), rows, seed);
        let mut loaded = load(&job_with(dir.path(), diversity, label)).unwrap();
        // With a sensitive column, also the squared counts (sl's spread).
        loaded.extras.spread = diversity;
        let lattice = Lattice::new(loaded.data.heights.clone());
        let mut nodes: Vec<Node> = lattice.nodes().into_iter().map(Node::full).collect();
        // Every node over every proper subset of the QIs.
        for size in 1..lattice.heights.len() {
            for attrs in (0..lattice.heights.len()).combinations(size) {
                let ranges = attrs.iter().map(|&a| 0..=lattice.heights[a]);
                for levels in ranges.multi_cartesian_product() {
                    nodes.push(Node { attrs: attrs.clone(), levels });
                }
            }
        }
        for leaf_sums_from in [0, 3] {
            let case = format!("seed {seed} l {diversity} label {label} leaf sums from {leaf_sums_from}");
            let mut sql = loaded.evaluator_on(Backend::Sql).unwrap().leaf_sums_from(leaf_sums_from);
            let mut mem = loaded.evaluator_on(Backend::Memory).unwrap().leaf_sums_from(leaf_sums_from);
            assert_eq!((sql.backend(), mem.backend()), ("sql", "memory"));
            let expected: Vec<Histogram> = sql.histograms(&nodes).unwrap();
            assert_eq!(mem.histograms(&nodes).unwrap(), expected, "{case}, one batch");
            // One at a time from the top down: each rolled up from whatever the backend holds then.
            let mut alone = loaded.evaluator_on(Backend::Memory).unwrap().leaf_sums_from(leaf_sums_from);
            for (node, h) in nodes.iter().zip(&expected).rev() {
                assert_eq!(&alone.histogram(node).unwrap(), h, "{case}, node {node:?} alone");
            }
            assert!(expected
                .iter()
                .all(|h| h.classes() > 0
                    && h.buckets.windows(2).all(|w| (w[0].size, w[0].ldiv) < (w[1].size, w[1].ldiv))));
            assert_eq!(
                expected.iter().map(|h| h.buckets.iter().map(|b| b.size * b.classes).sum::<u64>()).max(),
                Some(rows as u64)
            );
        }
    }
}

/// A table in a DuckDB database (not a file, which is grouped on reading):
/// the in-memory evaluator groups the coded rows itself, and its base set
/// gives the same histograms, combinations and class sizes as the engine's
/// GROUP BY, with a sensitive column too (its codes a field of the key).
/// With keys too wide for 64 bits the engine groups; the class sizes then
/// come from grouping the base set's rows by class (by packed keys, or for
/// the wide keys by a rollup to the bottom).
#[test]
fn the_base_set_grouped_in_memory_equals_the_engines() {
    use kanon::lattice::Node;
    // wide: that many QIs of 3000 distinct values each, 12 bits apiece: six
    // need a 128-bit key (five would fit 64 bits), eleven more than 128.
    for (seed, rows, diversity, wide) in
        [(21, 600, false, 0), (22, 400, true, 0), (23, 3000, false, 6), (24, 3000, true, 6), (25, 3000, true, 11)]
    {
        let case = format!("seed {seed} l {diversity} wide {wide}");
        let dir = tempfile::tempdir().unwrap();
        let conn = duckdb::Connection::open(dir.path().join("t.duckdb")).unwrap();
        let wide_qis: Vec<String> = (0..wide).map(|j| format!("q{j}")).collect();
        let qis: Vec<&str> = if wide > 0 {
            let primes = [1, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41];
            let columns: Vec<String> = (0..wide).map(|j| format!("(i * {}) % {rows} AS q{j}", primes[j])).collect();
            let columns = columns.join(", ");
            conn.execute_batch(&format!(
                "CREATE TABLE t AS SELECT {columns}, 'x' AS diagnosis FROM range({rows}) r(i)"
            ))
            .unwrap();
            wide_qis.iter().map(String::as_str).collect()
        } else {
            write_table(dir.path(), rows, seed);
            let csv = dir.path().join("t.csv");
            // A QI of one value: a field of no bits.
            conn.execute("CREATE TABLE t AS SELECT *, 'x' AS one FROM read_csv(?)", [csv.to_str().unwrap()]).unwrap();
            vec!["zip", "one", "age", "sex"]
        };
        drop(conn);
        let mut text = String::from(
            "[source]\ndatabase = \"t.duckdb\"\ntable = \"t\"\n[output]\ndatabase = \"out.duckdb\"\ntable = \"r\"\n[privacy]\nk = 2\n",
        );
        if diversity {
            text.push_str("l_diversity = { column = \"diagnosis\", l = 2 }\n");
        }
        for (j, q) in qis.iter().enumerate() {
            let hierarchy = match *q {
                "zip" => "{ mask = 3 }",
                "sex" | "one" => "\"suppress\"",
                "age" => "{ intervals = [5, 10, 20] }",
                // Of eleven, all but three at one level: the lattice stays small.
                _ if wide > 6 && j >= 3 => "\"suppress\"",
                _ => "{ intervals = [100, 1000] }",
            };
            writeln!(text, "[[quasi_identifiers]]\ncolumn = \"{q}\"\nhierarchy = {hierarchy}").unwrap();
        }
        let loaded = load(&Job::parse(&dir.path().join("job.toml"), &text).unwrap()).unwrap();
        assert_eq!(loaded.base.has_rows(), wide <= 6, "{case}");
        let lattice = Lattice::new(loaded.data.heights.clone());
        // Of eleven QIs' 4³ × 2⁸ nodes, every 127th.
        let step = if wide > 6 { 127 } else { 1 };
        let nodes: Vec<Node> = lattice.nodes().into_iter().step_by(step).map(Node::full).collect();
        // The memory evaluator first, while kanon_f0 may still be a view over the rows.
        let mut mem = loaded.evaluator_on(Backend::Memory).unwrap();
        let histograms = mem.histograms(&nodes).unwrap();
        let (combinations, sizes) = (mem.combinations().unwrap(), mem.source_sizes().unwrap());
        drop(mem);
        let mut sql = loaded.evaluator_on(Backend::Sql).unwrap();
        assert_eq!(sql.histograms(&nodes).unwrap(), histograms, "{case}");
        assert_eq!(sql.combinations().unwrap(), combinations, "{case}");
        let (distinct, counted) = source_classes(&loaded.conn, &qis);
        assert_eq!(combinations, distinct, "{case}");
        // A set with a sensitive code has a row per (class, value); the
        // evaluator groups those rows by class for the sizes.
        assert_eq!(sizes, Some(counted), "{case}");
    }
}

/// The exact front equals the brute force's Pareto front of k against loss
/// (the same nodes, k and loss) on generated tables, for every loss metric
/// and several budgets, with per-class models (entropy ℓ, t-closeness) on one
/// table; every node is evaluated or excluded by a bound.
#[test]
fn exact_front_equals_brute_force_front() {
    use kanon::search::exact_front::exact_front;
    // The last case with per-class models: the fronts then suppress the classes they reject.
    let models = "t_closeness = { column = \"diagnosis\", t = 0.25 }\n\
                  l_diversity = { column = \"diagnosis\", l = 2, kind = \"entropy\" }\n";
    let brute_models = Models { entropy_l: Some(2), t: Some((1, 4)) };
    for (seed, label, extra) in [(3, false, ""), (7, true, ""), (5, false, models)] {
        let dir = tempfile::tempdir().unwrap();
        write_table(dir.path(), 400, seed);
        let mut job = job_with(dir.path(), false, label);
        if !extra.is_empty() {
            let text = format!(
                "[source]\ncsv = \"t.csv\"\n[output]\ndatabase = \"out.duckdb\"\ntable = \"r\"\n[privacy]\nk = 2\n{extra}\
                 [[quasi_identifiers]]\ncolumn = \"zip\"\nhierarchy = {{ mask = 3 }}\n\
                 [[quasi_identifiers]]\ncolumn = \"age\"\nhierarchy = {{ intervals = [5, 10, 20] }}\n\
                 [[quasi_identifiers]]\ncolumn = \"sex\"\nhierarchy = \"suppress\"\n"
            );
            job = Job::parse(&dir.path().join("job.toml"), &text).unwrap();
        }
        let loaded = load(&job).unwrap();
        let lattice = Lattice::new(loaded.data.heights.clone());
        let brute = brute(dir.path(), label, if extra.is_empty() { Models::default() } else { brute_models });
        let classes: Vec<_> = lattice.nodes().iter().map(|l| brute.classes(l)).collect();
        if !extra.is_empty() {
            // The models must matter: some class of some node they reject, and some they accept.
            let verdicts: Vec<bool> = classes.iter().flatten().map(|c| brute.admitted(c)).collect();
            assert!(verdicts.contains(&true) && verdicts.contains(&false), "{extra}");
        }
        let metrics: &[Metric] = if label { &[Metric::Cm] } else { &[Metric::Glm, Metric::Dm, Metric::Height] };
        for &metric in metrics {
            for budget in [0, 4, 20, 400] {
                let points: Vec<_> =
                    lattice.nodes().iter().zip(&classes).map(|(l, c)| brute.point(l, c, budget, metric)).collect();
                let truth = brute_front(&points);
                let mut ev = loaded.evaluator().unwrap();
                let found = exact_front(&mut ev, &lattice, budget, metric).unwrap();
                let case = format!("seed {seed} {} budget {budget} {extra}", metric.name());
                let got: Vec<_> = found.front.iter().map(|p| (Some(p.levels.clone()), p.k, p.loss)).collect();
                assert_same_front(&got, &truth, &case);
                for p in &found.front {
                    let b = &points[lattice.nodes().iter().position(|l| *l == p.levels).unwrap()];
                    assert_eq!(p.suppressed, b.suppressed, "{case}: {:?}", p.levels);
                }
                assert_eq!(
                    ev.evaluations() + found.excluded,
                    lattice.size(),
                    "{case}: every node evaluated or excluded"
                );
                println!("{case}: front {}, {} of {} evaluated", truth.len(), ev.evaluations(), lattice.size());
            }
        }
    }
}

/// A source larger than `memory_rows` whose codes pack into one key: the SQL
/// backend holds the base set sorted in kanon (evaluator/sorted.rs) and counts
/// the nodes from the base there. Every node's histogram equals the memory
/// evaluator's, in batches and alone; a node whose classes would take too
/// many passes is rolled up by the engine from the coded rows instead; nodes
/// proved infeasible on a sample are infeasible; combinations and class sizes
/// equal a plain GROUP BY's. With few classes after all, the base goes to the
/// memory evaluator as a table.
#[test]
fn the_sorted_base_equals_the_memory_evaluator() {
    use kanon::lattice::Node;
    // wide: that many QIs of `rows` distinct values each. Three of 6,000 at
    // their leaves count 6,000² codes beside the lead, in several windows;
    // four of 3,000 (12 bits each) would take too many passes.
    for (seed, rows, wide, memory_rows) in [(31, 900, 0, 0), (32, 6000, 3, 0), (33, 3000, 4, 0), (34, 3000, 0, 2999)] {
        let case = format!("seed {seed} wide {wide} memory_rows {memory_rows}");
        let dir = tempfile::tempdir().unwrap();
        let conn = duckdb::Connection::open(dir.path().join("t.duckdb")).unwrap();
        let qis: Vec<String> = if wide > 0 {
            let primes = [1, 7, 11, 13];
            let columns: Vec<String> = (0..wide).map(|j| format!("(i * {}) % {rows} AS q{j}", primes[j])).collect();
            let sql = format!("CREATE TABLE t AS SELECT {}, i % 3 AS sex FROM range({rows}) r(i)", columns.join(", "));
            conn.execute_batch(&sql).unwrap();
            (0..wide).map(|j| format!("q{j}")).chain(["sex".to_string()]).collect()
        } else {
            write_table(dir.path(), rows, seed);
            let csv = dir.path().join("t.csv");
            conn.execute("CREATE TABLE t AS SELECT *, 'x' AS one FROM read_csv(?)", [csv.to_str().unwrap()]).unwrap();
            ["zip", "one", "age", "sex"].map(String::from).to_vec()
        };
        drop(conn);
        let mut text = format!(
            "[source]\ndatabase = \"t.duckdb\"\ntable = \"t\"\n[output]\ndatabase = \"out.duckdb\"\ntable = \"r\"\n\
             [privacy]\nk = 2\n[engine]\nmemory_rows = {memory_rows}\n"
        );
        for q in &qis {
            let hierarchy = match q.as_str() {
                "zip" => "{ mask = 3 }",
                "sex" | "one" => "\"suppress\"",
                "age" => "{ intervals = [5, 10, 20] }",
                _ => "{ intervals = [10, 100, 1000] }",
            };
            writeln!(text, "[[quasi_identifiers]]\ncolumn = \"{q}\"\nhierarchy = {hierarchy}").unwrap();
        }
        let loaded = load(&Job::parse(&dir.path().join("job.toml"), &text).unwrap()).unwrap();
        let lattice = Lattice::new(loaded.data.heights.clone());
        let nodes: Vec<Node> = lattice.nodes().into_iter().map(Node::full).collect();
        // The memory evaluator first, while kanon_f0 is still a view over the rows.
        let mut mem = loaded.evaluator_on(Backend::Memory).unwrap();
        let expected = mem.histograms(&nodes).unwrap();
        drop(mem);
        let mut sorted = loaded.evaluator().unwrap();
        if memory_rows > 0 {
            // 3,000 rows, fewer classes: the memory evaluator after all.
            assert_eq!(sorted.backend(), "memory", "{case}");
            assert_eq!(sorted.histograms(&nodes).unwrap(), expected, "{case}");
            continue;
        }
        assert!(sorted.holds_sorted_base(), "{case}");
        let mut sorted = sorted.refute_from(0);
        let req = Requirement { k: 3, l: None, budget: rows as u64 / 50, risk: None };
        let refuted = sorted.refuted(&nodes, &req).unwrap();
        for ((node, r), h) in nodes.iter().zip(&refuted).zip(&expected) {
            assert!(!r || h.suppressed(&req) > req.budget, "{case}: {node:?} refuted but feasible");
        }
        if wide == 0 {
            assert!(refuted.iter().any(|&r| r), "{case}: no node refuted");
        }
        let mut sorted = loaded.evaluator().unwrap();
        assert_eq!(sorted.histograms(&nodes).unwrap(), expected, "{case}");
        let mut alone = loaded.evaluator().unwrap();
        for (node, h) in nodes.iter().zip(&expected).rev().step_by(7) {
            assert_eq!(&alone.histogram(node).unwrap(), h, "{case}, node {node:?} alone");
        }
        let (distinct, counted) = source_classes(&loaded.conn, &qis);
        assert_eq!(sorted.combinations().unwrap(), distinct, "{case}");
        assert_eq!(sorted.source_sizes().unwrap(), Some(counted), "{case}");
    }
}

/// The source's distinct QI combinations and its classes by size (size,
/// classes), by a plain GROUP BY of `qis`.
fn source_classes<S: AsRef<str>>(conn: &duckdb::Connection, qis: &[S]) -> (u64, Vec<(u64, u64)>) {
    let columns: Vec<&str> = qis.iter().map(|q| q.as_ref()).collect();
    let columns = columns.join(", ");
    let q = format!("SELECT count(*) FROM (SELECT DISTINCT {columns} FROM kanon_source)");
    let distinct: i64 = conn.query_row(&q, [], |r| r.get(0)).unwrap();
    let q = format!(
        "SELECT n::BIGINT, count(*) FROM (SELECT count(*) AS n FROM kanon_source GROUP BY {columns}) GROUP BY 1 ORDER BY 1"
    );
    let mut stmt = conn.prepare(&q).unwrap();
    let counted: Vec<(u64, u64)> = stmt
        .query_map([], |r| Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64)))
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    (distinct as u64, counted)
}

/// `kanon run` with every full-domain algorithm (each `Algorithm` that is not
/// cell-based, `auto` included) on a generated table with ARX hierarchy files
/// (one leaf absent from the data), with and without distinct ℓ-diversity and
/// a class column: the report's node is the brute force's optimum for the
/// metric, and its suppression, k, ℓ, classes and metrics (glm, lm, dm,
/// precision, height, cm, am) are the brute force's; Incognito and exhaustive
/// evaluation report every feasible node and the minimal ones; the release
/// holds the rows kept.
#[test]
fn every_full_domain_algorithm_returns_the_brute_force_optimum() {
    use clap::ValueEnum;
    use kanon::options::Algorithm;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut rng = StdRng::seed_from_u64(17);
    let mut csv = String::from("zip,age,sex,diagnosis,outcome\n");
    for _ in 0..300 {
        let zip = 53700 + (rng.random_range(0..8u32) * rng.random_range(0..=1u32));
        let age = 20 + 10 * rng.random_range(0..6u32);
        let sex = ["F", "M"][rng.random_range(0..2usize)];
        let dx = ["flu", "asthma", "ulcer", "angina"][rng.random_range(0..4usize) * rng.random_range(0..=1usize)];
        let outcome = ["yes", "no"][(rng.random_range(0..3u32) == 0) as usize];
        writeln!(csv, "{zip},{age},{sex},{dx},{outcome}").unwrap();
    }
    std::fs::write(d.join("t.csv"), csv).unwrap();
    // 53708 is a leaf no row has: glm and am count the file's leaves.
    let zip: Vec<String> = (0..9).map(|i| format!("5370{i};537{}x;53xxx;*", i / 4)).collect();
    let age: Vec<String> = (0..6).map(|i| format!("{};{};*", 20 + 10 * i, ["young", "middle", "old"][i / 2])).collect();
    std::fs::write(d.join("zip.csv"), zip.join("\n") + "\n").unwrap();
    std::fs::write(d.join("age.csv"), age.join("\n") + "\n").unwrap();
    std::fs::write(d.join("sex.csv"), "F;*\nM;*\n").unwrap();
    let qis = ["zip", "age", "sex"];
    for diversity in [false, true] {
        let mut text = String::from("[source]\ncsv = \"t.csv\"\n[output]\ncsv = \"out.csv\"\n[privacy]\nk = 2\n");
        if diversity {
            text.push_str("l_diversity = { column = \"diagnosis\", l = 2 }\n");
        }
        text.push_str("[search]\nclass_column = \"outcome\"\n");
        for q in qis {
            writeln!(text, "[[quasi_identifiers]]\ncolumn = \"{q}\"\nhierarchy = {{ file = \"{q}.csv\" }}").unwrap();
        }
        std::fs::write(d.join("job.toml"), text).unwrap();
        let (header, cells) = read_delimited(&d.join("t.csv"), ',');
        let rows = brute_rows(&header, &cells, &qis, Some("diagnosis"), Some("outcome"));
        let hierarchies: Vec<_> =
            qis.iter().map(|q| crate::util::hierarchy_rows(&d.join(format!("{q}.csv")))).collect();
        let brute = BruteForce::new(&rows, &hierarchies, true, Models::default());
        assert_eq!(brute.leaves, vec![9, 6, 2]);
        let l = diversity.then_some(2);
        let cases = [
            (2, 0, Metric::Glm),
            (3, 10, Metric::Dm),
            (5, 30, Metric::Cm),
            (4, 5, Metric::Precision),
            (3, 15, Metric::Height),
            (10, 40, Metric::Glm),
            (25, 0, Metric::Dm),
            (1, 5, Metric::Dm),
        ];
        for (k, budget, metric) in cases {
            let judged = brute.judge_all(&Req { k, l, budget });
            let feasible = brute_feasible(&judged);
            let want = brute_optimum(&judged, metric).unwrap();
            // SafePub draws its node at random (tests/dp.rs); the others are exact.
            // Bottom-up ranks by dm only (other metrics exit 2, tests/limits.rs).
            let exact = |a: &&Algorithm| {
                !a.cell_based() && **a != Algorithm::Safepub && (**a != Algorithm::Bottomup || metric == Metric::Dm)
            };
            for algorithm in Algorithm::value_variants().iter().filter(exact) {
                let case = format!("{} k {k} budget {budget} l {l:?} {}", algorithm.name(), metric.name());
                let (k_arg, budget_arg) = (k.to_string(), budget.to_string());
                let out = crate::util::kanon(
                    d,
                    &[
                        "run",
                        "job.toml",
                        "--algorithm",
                        algorithm.name(),
                        "--k",
                        &k_arg,
                        "--max-suppression",
                        &budget_arg,
                        "--metric",
                        metric.name(),
                        "--report",
                        "report.json",
                        "--quiet",
                    ],
                );
                assert_eq!(out.code, 0, "{case}: {}", out.show());
                let r: serde_json::Value =
                    serde_json::from_str(&std::fs::read_to_string(d.join("report.json")).unwrap()).unwrap();
                let node: Vec<u8> = qis.iter().map(|q| r["node"][q].as_u64().unwrap() as u8).collect();
                assert_eq!(node, want.levels, "{case}: the optimum");
                // Nothing prunes top-down at k = 1 without distinct ℓ: dm's bound from below does.
                let auto = if metric == Metric::Dm && k == 1 && l.is_none() { "bottomup" } else { "topdown" };
                let ran = if *algorithm == Algorithm::Auto { auto } else { algorithm.name() };
                assert_eq!(r["algorithm"], ran, "{case}");
                assert_eq!(r["metric"], metric.name(), "{case}");
                let int = |key: &str| r[key].as_u64();
                assert_eq!(int("budget"), Some(budget), "{case}");
                assert_eq!(int("suppressed"), Some(want.suppressed), "{case}");
                assert_eq!(int("rows_out"), Some(brute.rows - want.suppressed), "{case}");
                assert_eq!((int("k"), int("l"), int("classes")), (want.k, want.l, Some(want.classes)), "{case}");
                let m = &r["metrics"];
                let w = &want.metrics;
                for (key, value) in [
                    ("glm", w.glm),
                    ("glm_normalized", w.glm_normalized),
                    ("lm", w.glm_normalized),
                    ("dm", w.dm),
                    ("precision", w.precision),
                    ("height", w.height),
                    ("cm", w.cm),
                    ("am", w.am),
                ] {
                    let got = m[key].as_f64().unwrap_or_else(|| panic!("{case}: no {key} in {m}"));
                    assert!(crate::util::same(got, value), "{case}: {key} {got}, brute force {value}");
                }
                if matches!(algorithm, Algorithm::Incognito | Algorithm::Exhaustive) {
                    assert_eq!(int("feasible_nodes"), Some(feasible.len() as u64), "{case}");
                    assert_eq!(int("minimal_nodes"), Some(brute_minimal(&feasible) as u64), "{case}");
                }
                // The release: the kept rows, in classes of at least k.
                let (columns, released) = read_delimited(&d.join("out.csv"), ',');
                assert_eq!(released.len() as u64, brute.rows - want.suppressed, "{case}");
                let at: Vec<usize> = qis.iter().map(|q| columns.iter().position(|c| c == q).unwrap()).collect();
                let mut sizes: std::collections::HashMap<Vec<&str>, u64> = Default::default();
                for row in &released {
                    *sizes.entry(at.iter().map(|&i| row[i].as_str()).collect()).or_insert(0) += 1;
                }
                assert_eq!(sizes.len() as u64, want.classes, "{case}: released classes");
                assert_eq!(sizes.values().min().copied(), want.k, "{case}: the smallest released class");
            }
        }
    }
}
