//! Incognito and the top-down search against exhaustive evaluation on
//! generated tables: every feasible set and optimum must agree, across k,
//! budgets, ℓ and metrics.

use kanon::evaluator::Backend;
use kanon::job::Job;
use kanon::lattice::Lattice;
use kanon::load::load;
use kanon::metrics::Requirement;
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
        let ls: &[Option<u64>] = if diversity { &[Some(2), Some(3)] } else { &[None] };
        let (mut refutations, mut refutations_sql, mut refutations_by_values, mut refutations_by_qis) = (0, 0, 0, 0);
        for &l in ls {
            for k in [1, 3, 8, 60] {
                for budget in [0, 20] {
                    let req = Requirement { k, l, budget };
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
                        assert!(td.feasible.iter().all(|f| exact.feasible.contains(f)), "topdown {case}");
                        if metric == Metric::Dm {
                            assert_eq!(td.feasible, exact.feasible, "topdown {case}");
                        }
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
        let all = Requirement { k: 400, l: None, budget: 0 };
        let mut ev = loaded.evaluator().unwrap();
        let r = incognito::search(&mut ev, &Problem { lattice: &lattice, req: &all, metric: Metric::Glm }, &Silent)
            .unwrap();
        assert!(r.feasible.contains(&lattice.top()));
        for levels in lattice.nodes() {
            let h = reference.histogram(&kanon::lattice::Node::full(levels.clone())).unwrap();
            let one_class = h.buckets.len() == 1 && h.buckets[0].classes == 1;
            assert_eq!(r.feasible.contains(&levels), one_class, "{levels:?}");
        }
    }
}

/// POkA against the exhaustive front on a generated table: with the depth
/// search reaching the bottom of the lattice it must find the whole front;
/// at any depth it reports only nodes of the true front or nodes it dominates.
#[test]
fn poka_front_against_exhaustive_on_a_generated_table() {
    use kanon::search::{front as pareto, poka};
    let dir = tempfile::tempdir().unwrap();
    write_table(dir.path(), 400, 3);
    let loaded = load(&job(dir.path(), false)).unwrap();
    let lattice = Lattice::new(loaded.data.heights.clone());
    let full_depth: u32 = lattice.heights.iter().map(|&h| h as u32).sum();
    for metric in [Metric::Glm, Metric::Dm] {
        for budget in [0, 4, 20] {
            let mut all_ev = loaded.evaluator().unwrap();
            let all = pareto::points(&mut all_ev, &lattice.nodes(), budget, metric).unwrap();
            let truth = pareto::front(&all);
            // The true front: nothing dominates a front node, every other node is dominated or ties one.
            for t in &truth {
                assert!(!all.iter().any(|p| pareto::dominates(p, t)), "{t:?} is dominated");
            }
            for p in &all {
                assert!(truth
                    .iter()
                    .any(|t| pareto::dominates(t, p) || (t.k == p.k && kanon::metrics::same(t.loss, p.loss))));
            }
            // What POkA prunes with holds with suppression: k never falls under
            // generalization, the loss of a node and of each generalization is at
            // least the node's loss with nothing suppressed, and for glm that is a
            // sum of per-QI terms that depend only on the QI's level and grow with it.
            let no_less = |a: f64, b: f64| a >= b || kanon::metrics::same(a, b);
            for x in &all {
                assert!(no_less(x.loss, x.floor), "{x:?}");
                if metric == Metric::Glm {
                    assert!(kanon::metrics::same(x.per_qi.iter().sum(), x.floor), "{x:?}");
                }
                for y in all.iter().filter(|y| x.levels.iter().zip(&y.levels).all(|(a, b)| a <= b)) {
                    assert!(y.k >= x.k, "{x:?} {y:?}");
                    assert!(no_less(y.loss, x.floor), "{x:?} {y:?}");
                    for (a, (tx, ty)) in x.per_qi.iter().zip(&y.per_qi).enumerate() {
                        assert!(no_less(*ty, *tx), "{x:?} {y:?}");
                        if x.levels[a] == y.levels[a] {
                            assert!(kanon::metrics::same(*tx, *ty), "{x:?} {y:?}");
                        }
                    }
                }
            }
            for depth in [1, poka::default_depth(&lattice), full_depth] {
                let mut ev = loaded.evaluator().unwrap();
                let found = poka::poka(&mut ev, &lattice, budget, metric, Some(depth)).unwrap();
                let cmp = pareto::compare(&found.front, truth.clone());
                let case = format!("{} budget {budget} depth {depth}", metric.name());
                println!(
                    "{case}: recall {:.3} ({} of {}), {} dominated, {} of {} evaluated",
                    cmp.recall,
                    cmp.found,
                    truth.len(),
                    cmp.dominated_reported.len(),
                    ev.evaluations(),
                    lattice.size()
                );
                assert_eq!(found.front[0].k, loaded.data.rows, "{case}: POkA starts with the one-class nodes");
                assert!(found.front.windows(2).all(|w| w[1].k < w[0].k && w[1].loss < w[0].loss), "{case}");
                if depth == full_depth && cmp.recall < 1.0 {
                    for p in &found.front {
                        println!("  found {:?} k {} loss {}", p.levels, p.k, p.loss);
                    }
                    for p in &truth {
                        println!("  true  {:?} k {} loss {}", p.levels, p.k, p.loss);
                    }
                }
                if depth == full_depth {
                    assert_eq!(cmp.recall, 1.0, "{case}: missed {:?}", cmp.missed);
                    assert!(cmp.dominated_reported.is_empty(), "{case}");
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
        let req = Requirement { k: 3, l: None, budget: 400 };
        let h = ev.histogram(&kanon::lattice::Node::full(levels.clone())).unwrap();
        let cm = h.outcome(&levels, &req, &loaded.data).metrics.cm.unwrap();
        let recoding = kanon::release::Recoding::levels(&loaded, &levels, &req).unwrap();
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
        assert_eq!(kanon::frequency::combinations(&loaded.conn, 3, loaded.extras).unwrap() as i64, want);
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
    use kanon::metrics::Histogram;
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
    use kanon::frequency::base_as_rows;
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
        assert_eq!(base_as_rows(&loaded.conn).unwrap(), wide <= 6, "{case}");
        let lattice = Lattice::new(loaded.data.heights.clone());
        // Of eleven QIs' 4³ × 2⁸ nodes, every 127th.
        let step = if wide > 6 { 127 } else { 1 };
        let nodes: Vec<Node> = lattice.nodes().into_iter().step_by(step).map(Node::full).collect();
        // The memory evaluator first, while kanon_f0 may still be a view over the rows.
        let mut mem = loaded.evaluator_on(Backend::Memory).unwrap();
        let histograms = mem.histograms(&nodes).unwrap();
        let (combinations, sizes) = (mem.combinations().unwrap(), mem.source_sizes());
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

/// The exact front equals the exhaustive front (the same nodes, k and loss)
/// on generated tables, for every loss metric and several budgets, with
/// fewer evaluations than the lattice has nodes on the glm cases.
#[test]
fn exact_front_equals_exhaustive_front() {
    use kanon::search::exact_front::exact_front;
    use kanon::search::front;
    // The last case with per-class models: the fronts then suppress the classes they reject.
    let models = "t_closeness = { column = \"diagnosis\", t = 0.25 }\n\
                  l_diversity = { column = \"diagnosis\", l = 2, kind = \"entropy\" }\n";
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
        let metrics: &[Metric] = if label { &[Metric::Cm] } else { &[Metric::Glm, Metric::Dm, Metric::Height] };
        for &metric in metrics {
            for budget in [0, 4, 20, 400] {
                let mut all_ev = loaded.evaluator().unwrap();
                let truth = front::front(&front::points(&mut all_ev, &lattice.nodes(), budget, metric).unwrap());
                let mut ev = loaded.evaluator().unwrap();
                let found = exact_front(&mut ev, &lattice, budget, metric).unwrap();
                let case = format!("seed {seed} {} budget {budget} {extra}", metric.name());
                let key = |p: &front::Point| (p.levels.clone(), p.k, p.loss);
                assert_eq!(
                    found.front.iter().map(key).collect::<Vec<_>>(),
                    truth.iter().map(key).collect::<Vec<_>>(),
                    "{case}"
                );
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
        let req = Requirement { k: 3, l: None, budget: rows as u64 / 50 };
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
        assert_eq!(sorted.source_sizes(), Some(counted), "{case}");
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
