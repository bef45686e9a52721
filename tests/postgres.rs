//! The same jobs on embedded DuckDB and on PostgreSQL (`[engine] kind =
//! "postgres"`): each job runs once per engine on the same rows (a Parquet
//! file DuckDB reads, loaded into a PostgreSQL table); the node, the report
//! (timings, the output's location and the job's hash aside) and the
//! released rows must be identical. A run killed at any moment leaves the
//! previous release or the new one, never a partial table.
//!
//! Needs a PostgreSQL server: `tests/spark.sh` starts a throwaway cluster
//! and sets KANON_PG_URL. Without it these tests print a notice and pass.

use crate::util::{engine_report as report, kanon_env, manifest_dir, sorted_rows, Out};
use duckdb::Connection;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn pg_url() -> Option<String> {
    let url = std::env::var("KANON_PG_URL").ok().filter(|u| !u.is_empty());
    if url.is_none() {
        crate::util::missing("a PostgreSQL server (KANON_PG_URL, which tests/spark.sh sets)");
    }
    url
}

/// The password in the test server's URL, which nothing kanon prints or writes may hold.
fn password(url: &str) -> String {
    url.split("://").nth(1).unwrap().split('@').next().unwrap().split(':').nth(1).unwrap().to_string()
}

const KEY: &str = "pg-test-key";

fn run(dir: &Path, args: &[&str]) -> Out {
    kanon_env(dir, args, &[("KANON_KEY", KEY)])
}

fn ok(dir: &Path, args: &[&str]) -> Out {
    let out = run(dir, args);
    assert_eq!(out.code, 0, "kanon {args:?}:\n{}", out.show());
    out
}

/// A session of our own, for loading sources and reading releases.
fn session(dir: &Path, url: &str) -> kanon::engine::postgres::Postgres {
    let job = crate::util::engine_job(dir, "postgres", url);
    kanon::engine::postgres::Postgres::connect(&job, job.engine.kind.url().unwrap()).unwrap()
}

/// The rows of PostgreSQL table `table`, brought into DuckDB, sorted.
fn pg_rows(pg: &kanon::engine::postgres::Postgres, table: &str) -> Vec<String> {
    let conn = Connection::open_in_memory().unwrap();
    pg.fetch(&conn, &format!("SELECT * FROM {}", kanon::engine::postgres::qualified(table)), "fetched").unwrap();
    sorted_rows(&conn, "fetched")
}

/// A job's rows (a Parquet file) and its body below [output].
#[derive(Clone)]
struct Case {
    name: String,
    parquet: PathBuf,
    /// [output] lines beside the table and report.
    output: String,
    body: String,
    /// [engine] lines beside the kind and url (PostgreSQL's job only).
    engine: String,
}

/// Load `case` into PostgreSQL as `schema.table` (quoted names with spaces
/// and mixed case), run it on both engines and compare. Returns the
/// PostgreSQL job's path.
fn same_on_both(dir: &Path, url: &str, pg: &kanon::engine::postgres::Postgres, case: &Case) -> PathBuf {
    // A schema per case (tests run at once), its names quoted, spaced and mixed case.
    let schema = format!("Kanon {}", case.name);
    let source = format!("{schema}.Source Table");
    pg.execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE; CREATE SCHEMA \"{schema}\"")).unwrap();
    load(pg, &case.parquet, &source);
    let release = format!("{schema}.Release");
    both_engines(dir, url, pg, case, &source, &release, &release)
}

/// The rows of a Parquet file as the PostgreSQL table `table` (replaced).
fn load(pg: &kanon::engine::postgres::Postgres, parquet: &Path, table: &str) {
    let conn = Connection::open_in_memory().unwrap();
    pg.create_table(&conn, &format!("SELECT * FROM '{}'", parquet.display()), table).unwrap();
}

/// Run `case` on DuckDB and on PostgreSQL (from `source`, into `release` as
/// the job names it, which PostgreSQL holds as `lands`) and compare the
/// nodes, reports and released rows. Returns the PostgreSQL job's path.
fn both_engines(
    dir: &Path,
    url: &str,
    pg: &kanon::engine::postgres::Postgres,
    case: &Case,
    source: &str,
    release: &str,
    lands: &str,
) -> PathBuf {
    let duck = dir.join(format!("{}-duckdb.toml", case.name));
    std::fs::write(
        &duck,
        format!(
            "[source]\nparquet = \"{}\"\n[output]\ndatabase = \"{}.duckdb\"\ntable = \"release\"\nreport = \"{}-duckdb.json\"\n{}\n{}",
            case.parquet.display(),
            case.name,
            case.name,
            case.output,
            case.body
        ),
    )
    .unwrap();
    let on_pg = dir.join(format!("{}-pg.toml", case.name));
    std::fs::write(
        &on_pg,
        format!(
            "[engine]\nkind = \"postgres\"\nurl = \"{url}\"\n{}\n[source]\ntable = \"{source}\"\n[output]\ntable = \"{release}\"\nreport = \"{}-pg.json\"\n{}\n{}",
            case.engine, case.name, case.output, case.body
        ),
    )
    .unwrap();
    let said_duck = ok(dir, &["run", duck.to_str().unwrap(), "--quiet"]);
    let said_pg = ok(dir, &["run", on_pg.to_str().unwrap(), "--quiet"]);
    let node = |s: &str| s.split(" at node ").nth(1).map(|t| t.split(':').next().unwrap().to_string());
    assert_eq!(node(&said_duck.stdout), node(&said_pg.stdout), "{}: nodes differ", case.name);
    let (mut a, mut b) =
        (report(&dir.join(format!("{}-duckdb.json", case.name))), report(&dir.join(format!("{}-pg.json", case.name))));
    if !case.engine.is_empty() {
        // Where the evaluator ran is all that may differ.
        let side = |r: &mut Value| r.as_object_mut().and_then(|o| o.remove("evaluator"));
        assert_eq!(side(&mut b), Some(Value::from("engine")), "{}: the evaluator on PostgreSQL", case.name);
        side(&mut a);
    }
    assert_eq!(a, b, "{}: reports differ", case.name);
    let local = Connection::open(dir.join(format!("{}.duckdb", case.name))).unwrap();
    let (x, y) = (sorted_rows(&local, "release"), pg_rows(pg, lands));
    assert!(!x.is_empty(), "{}: an empty release", case.name);
    assert_eq!(x.len(), y.len(), "{}: row counts differ", case.name);
    assert!(x == y, "{}: released rows differ (first: {:?} / {:?})", case.name, x.first(), y.first());
    // The password is in nothing kanon printed or wrote.
    let secret = password(url);
    for out in [&said_duck, &said_pg] {
        assert!(!out.both().contains(&secret));
    }
    assert!(!std::fs::read_to_string(dir.join(format!("{}-pg.json", case.name))).unwrap().contains(&secret));
    on_pg
}

/// The demo's patients as Parquet.
fn demo(dir: &Path) -> Case {
    let fixtures = manifest_dir().join("fixtures/demo");
    let parquet = dir.join("patients.parquet");
    Connection::open_in_memory()
        .unwrap()
        .execute_batch(&format!(
            "COPY (SELECT * FROM read_csv('{}', header = true)) TO '{}' (FORMAT PARQUET)",
            fixtures.join("patients.csv").display(),
            parquet.display()
        ))
        .unwrap();
    let job = std::fs::read_to_string(fixtures.join("job.toml")).unwrap();
    let body = job[job.find("[privacy]").unwrap()..]
        .replace("hierarchies/education.csv", &fixtures.join("hierarchies/education.csv").display().to_string());
    Case { name: "demo".into(), parquet, output: "drop = [\"name\", \"ssn\"]".into(), body, engine: String::new() }
}

/// `kanon generate`'s extract of `rows` rows as Parquet, with its job's QIs
/// and ℓ-diversity on the diagnosis.
fn generated(dir: &Path, rows: u64) -> Case {
    let db = dir.join("people.duckdb");
    let job = dir.join("people.toml");
    let rows = rows.to_string();
    let args = ["generate", "--rows", &rows, "--seed", "7", "--database", db.to_str().unwrap(), "--table", "people"];
    ok(dir, &[&args[..], &["--job", job.to_str().unwrap()]].concat());
    let parquet = dir.join("people.parquet");
    Connection::open(&db)
        .unwrap()
        .execute_batch(&format!("COPY people TO '{}' (FORMAT PARQUET)", parquet.display()))
        .unwrap();
    let text = std::fs::read_to_string(&job).unwrap();
    let qis = &text[text.find("[[quasi_identifiers]]").unwrap()..];
    let qis = qis.replace("\"hierarchies/", &format!("\"{}/hierarchies/", dir.display()));
    let body = format!(
        "[privacy]\nk = 5\nmax_suppression = 0.02\nl_diversity = {{ column = \"diagnosis\", l = 2 }}\n[search]\nmetric = \"glm\"\n{qis}"
    );
    Case { name: "generated".into(), parquet, output: "drop = [\"row_id\"]".into(), body, engine: String::new() }
}

#[test]
fn the_demo_adult_and_a_generated_extract_are_the_same_on_postgres() {
    let Some(url) = pg_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let pg = session(dir.path(), &url);
    same_on_both(dir.path(), &url, &pg, &demo(dir.path()));
    same_on_both(dir.path(), &url, &pg, &generated(dir.path(), 100_000));
    if let Some(root) = crate::util::adult_dir() {
        let parquet = dir.path().join("adult.parquet");
        Connection::open_in_memory()
            .unwrap()
            .execute_batch(&format!(
                "COPY (SELECT * FROM read_csv('{}', header = true, delim = ';')) TO '{}' (FORMAT PARQUET)",
                root.join("adult.csv").display(),
                parquet.display()
            ))
            .unwrap();
        let mut body = "[privacy]\nk = 5\nmax_suppression = 0.01\n[search]\nmetric = \"glm\"\n".to_string();
        for q in ["age", "education", "marital-status", "native-country", "occupation", "race", "sex", "workclass"] {
            body.push_str(&format!(
                "[[quasi_identifiers]]\ncolumn = \"{q}\"\nhierarchy = {{ file = \"{}\" }}\n",
                root.join(format!("hierarchy_{q}.csv")).display()
            ));
        }
        same_on_both(
            dir.path(),
            &url,
            &pg,
            &Case { name: "adult".into(), parquet, output: String::new(), body, engine: String::new() },
        );
    }
}

/// With `[engine] evaluator = "engine"` the base frequency set stays in
/// PostgreSQL and the search runs there (only histograms come back): the
/// same node, report and rows as DuckDB's in-memory search, for each search,
/// with distinct and entropy ℓ-diversity, t-closeness and suppressed classes.
#[test]
fn the_search_on_postgres_itself_gives_duckdbs_node_report_and_rows() {
    let Some(url) = pg_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let pg = session(dir.path(), &url);
    let there = "evaluator = \"engine\"".to_string();
    // The demo by each search (a node is a query there), then top-down on a larger extract.
    let demo = demo(dir.path());
    for algorithm in ["incognito", "exhaustive", "topdown"] {
        let body = demo.body.replace("algorithm = \"incognito\"", &format!("algorithm = \"{algorithm}\""));
        let case = Case { name: format!("demo_{algorithm}"), body, engine: there.clone(), ..demo.clone() };
        same_on_both(dir.path(), &url, &pg, &case);
    }
    // Entropy ℓ and t-closeness: each class's value list judged from the engine's text.
    let mut models = demo.clone();
    models.body = models.body.replace(
        "l_diversity = { column = \"diagnosis\", l = 2 }",
        "l_diversity = { column = \"diagnosis\", l = 2, kind = \"entropy\" }\n\
         t_closeness = { column = \"diagnosis\", t = 0.4 }",
    );
    assert!(models.body.contains("t_closeness"));
    // The same models with k = 1 and dm: auto picks bottom-up, each height's sets kept there.
    let mut bottom_up = models.clone();
    bottom_up.body =
        bottom_up.body.replace("k = 3", "k = 1").replace("algorithm = \"incognito\"", "algorithm = \"auto\"");
    bottom_up.body = bottom_up.body.replace("metric = \"glm\"", "metric = \"dm\"");
    assert!(bottom_up.body.contains("k = 1") && bottom_up.body.contains("metric = \"dm\""));
    same_on_both(
        dir.path(),
        &url,
        &pg,
        &Case { name: "demo_bottomup_there".into(), engine: there.clone(), ..bottom_up },
    );
    assert_eq!(report(&dir.path().join("demo_bottomup_there-pg.json"))["algorithm"], "bottomup");
    same_on_both(dir.path(), &url, &pg, &Case { name: "demo_models_there".into(), engine: there.clone(), ..models });
    let generated = generated(dir.path(), 20_000);
    same_on_both(dir.path(), &url, &pg, &Case { name: "generated_there".into(), engine: there, ..generated });
}

/// The engine backend (the base set left in PostgreSQL) against the memory
/// backend on the same rows, node by node: every full node's histogram
/// (sizes, distinct sensitive values, glm's leaf sums), nodes over a subset
/// of the QIs, nodes rolled up from a set kept there, the combinations and
/// the source's class sizes; and a node refuted on a sample is infeasible.
#[test]
fn postgres_evaluates_every_node_as_the_memory_backend_does() {
    use kanon::lattice::{Lattice, Node};
    let Some(url) = pg_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let pg = session(dir.path(), &url);
    let case = generated(dir.path(), 3_000);
    pg.execute("DROP SCHEMA IF EXISTS \"Kanon nodes\" CASCADE; CREATE SCHEMA \"Kanon nodes\"").unwrap();
    load(&pg, &case.parquet, "Kanon nodes.source");
    let write = |name: &str, head: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, format!("{head}\n{}\n{}", case.output, case.body)).unwrap();
        kanon::job::Job::load(&path).unwrap()
    };
    let there = write(
        "there.toml",
        &format!("[engine]\nkind = \"postgres\"\nurl = \"{url}\"\nevaluator = \"engine\"\n[source]\ntable = \"Kanon nodes.source\"\n[output]\ntable = \"o\""),
    );
    let here = write(
        "here.toml",
        &format!(
            "[source]\nparquet = \"{}\"\n[output]\ndatabase = \"here.duckdb\"\ntable = \"o\"",
            case.parquet.display()
        ),
    );
    let (there, here) = (kanon::load::load(&there).unwrap(), kanon::load::load(&here).unwrap());
    let mut engine = there.evaluator().unwrap();
    let mut memory = here.evaluator_on(kanon::evaluator::Backend::Memory).unwrap();
    assert_eq!(engine.backend(), "engine");
    let heights = here.data.heights.clone();
    // Every 29th node of the lattice (a query each there), the bottom and the top among them.
    let all = Lattice::new(heights.clone()).nodes();
    let mut nodes: Vec<Node> = all.iter().step_by(29).cloned().map(Node::full).collect();
    nodes.push(Node::full(all.last().unwrap().clone()));
    // Nodes over two QIs, as Incognito asks.
    for (a, b) in [(0, 1), (1, 3), (2, 4)] {
        for la in 0..=heights[a] {
            nodes.push(Node { attrs: vec![a, b], levels: vec![la, heights[b].min(1)] });
        }
    }
    assert!(nodes.len() > 50);
    let expected = memory.histograms(&nodes).unwrap();
    assert_eq!(engine.histograms(&nodes).unwrap(), expected);
    // A node a sample of its classes proves infeasible there is infeasible, and some are.
    let req = kanon::measure::metrics::Requirement { k: 5, l: None, budget: 10, risk: None };
    let mut sampled = there.evaluator().unwrap().refute_from(0);
    let refuted = sampled.refuted(&nodes, &req).unwrap();
    for ((node, r), h) in nodes.iter().zip(&refuted).zip(&expected) {
        assert!(!r || h.suppressed(&req) > req.budget, "{node:?} refuted but feasible");
    }
    assert!(refuted.iter().any(|&r| r), "no node refuted");
    drop(sampled);
    // Full nodes in batches share one sample, keyed on each batch's join.
    let full: Vec<usize> = (0..nodes.len()).filter(|&i| nodes[i].attrs.len() == heights.len()).collect();
    let mut shared = there.evaluator().unwrap().refute_from(0).sample_spread(1);
    let full_nodes: Vec<Node> = full.iter().map(|&i| nodes[i].clone()).collect();
    let refuted_there = shared.refuted(&full_nodes, &req).unwrap();
    for (&i, r) in full.iter().zip(&refuted_there) {
        assert!(
            !r || expected[i].suppressed(&req) > req.budget,
            "{:?} refuted on a shared sample but feasible",
            nodes[i]
        );
    }
    assert!(refuted_there.iter().any(|&r| r), "no node refuted on a shared sample");
    drop(shared);
    assert_eq!(engine.combinations().unwrap(), memory.combinations().unwrap());
    assert_eq!(engine.source_sizes().unwrap(), memory.source_sizes().unwrap());
    // Rolled up from a set kept there: the same again.
    drop(engine);
    let mut engine = there.evaluator().unwrap();
    let hub = Node::full(vec![1; heights.len()]);
    engine.materialize(&[(hub.clone(), None)]).unwrap();
    let above: Vec<Node> = nodes.iter().filter(|n| n.generalizes(&hub)).cloned().collect();
    assert!(above.len() > 5);
    assert_eq!(engine.histograms(&above).unwrap(), memory.histograms(&above).unwrap());
    assert_eq!(engine.sets_brought_back(), 0, "forced to the engine's side, every set stays there");
    // With memory_rows under the base's rows but over a hub's (a row per
    // class and sensitive value), the base stays there, the hub's set comes
    // back, and the nodes above it are rolled up here: the same again.
    drop(engine);
    let hub = Node::full(heights.iter().map(|&h| h.div_ceil(2)).collect());
    let above: Vec<Node> = nodes.iter().filter(|n| n.generalizes(&hub)).cloned().collect();
    assert!(above.len() > 5);
    let hub_rows = memory.histograms(std::slice::from_ref(&hub)).unwrap()[0].classes();
    let combinations = memory.combinations().unwrap();
    assert!(hub_rows < combinations, "the hub has {hub_rows} classes, the base {combinations}");
    let auto = write(
        "auto.toml",
        &format!("[engine]\nkind = \"postgres\"\nurl = \"{url}\"\nmemory_rows = {}\n[source]\ntable = \"Kanon nodes.source\"\n[output]\ntable = \"o\"", combinations - 1),
    );
    let auto = kanon::load::load(&auto).unwrap();
    let mut engine = auto.evaluator().unwrap();
    assert_eq!(engine.backend(), "engine");
    // PostgreSQL tells the hub's rows: its set comes back first, its histogram read here.
    let at_hub = engine.materialize(&[(hub.clone(), None)]).unwrap();
    assert_eq!(engine.sets_brought_back(), 1);
    assert_eq!(at_hub, memory.materialize(&[(hub.clone(), None)]).unwrap());
    assert_eq!(engine.histograms(&above).unwrap(), memory.histograms(&above).unwrap());
    drop(engine);
    // A shared sample within memory_rows comes back and is grouped here: the same verdicts.
    let mut shared = auto.evaluator().unwrap().refute_from(0).sample_spread(1);
    assert_eq!(shared.refuted(&full_nodes, &req).unwrap(), refuted_there);
    drop(shared);
    // memory_rows about a sixteenth of the base: a sample expected within it
    // may have more rows, and then it is made there instead. The same verdicts.
    for rows in [combinations / 16, combinations / 16 + combinations / 160, combinations / 14] {
        let job = write(
            &format!("tight-{rows}.toml"),
            &format!("[engine]\nkind = \"postgres\"\nurl = \"{url}\"\nmemory_rows = {rows}\n[source]\ntable = \"Kanon nodes.source\"\n[output]\ntable = \"o\""),
        );
        let tight = kanon::load::load(&job).unwrap();
        let mut shared = tight.evaluator().unwrap().refute_from(0).sample_spread(1);
        assert_eq!(shared.refuted(&full_nodes, &req).unwrap(), refuted_there, "memory_rows {rows}");
    }
}

#[test]
fn numbers_dates_timestamps_booleans_and_nulls_release_the_same_rows_on_postgres() {
    let Some(url) = pg_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let pg = session(dir.path(), &url);
    let parquet = dir.path().join("types.parquet");
    // Every class of the leaf node has 4 rows; NULLs in two QIs (whose file
    // hierarchies list a NULL leaf: built-in ones refuse NULL).
    Connection::open_in_memory()
        .unwrap()
        .execute_batch(&format!(
            "COPY (SELECT i AS id,
                   ((i % 50) * 1.25)::DECIMAL(6,2) AS d,
                   CASE WHEN i % 25 = 4 THEN NULL ELSE (i % 50)::INTEGER END AS n,
                   DATE '2024-02-29' + (i % 50)::INTEGER AS day,
                   TIMESTAMP '2024-02-29 13:45:00.123456' + INTERVAL (i % 50) HOUR AS ts,
                   (i % 50) / 7.0 AS f, CASE WHEN i % 25 = 4 THEN NULL ELSE i % 2 = 0 END AS b,
                   ['x', 'y'][1 + i % 2] AS t, 'p' || (i % 7) AS patient
                   FROM range(200) r(i)) TO '{}' (FORMAT PARQUET)",
            parquet.display()
        ))
        .unwrap();
    let n_file = dir.path().join("n.csv");
    let mut n_rows: Vec<String> = (0..50).map(|i| format!("{i};{}s;*", i / 10 * 10)).collect();
    n_rows.push("NULL;unknown;*".into());
    std::fs::write(&n_file, n_rows.join("\n")).unwrap();
    let b_file = dir.path().join("b.csv");
    std::fs::write(&b_file, "true;*\nfalse;*\nNULL;*\n").unwrap();
    let (n_h, b_h) =
        (format!("{{ file = \"{}\" }}", n_file.display()), format!("{{ file = \"{}\" }}", b_file.display()));
    let mut body = "[privacy]\nk = 4\nmax_suppression = 1.0\n".to_string();
    for (q, h) in [
        ("d", "{ intervals = [5, 10] }"),
        ("n", n_h.as_str()),
        ("day", "{ date = [\"month\", \"year\"] }"),
        ("ts", "\"suppress\""),
        ("f", "\"suppress\""),
        ("b", b_h.as_str()),
        ("t", "\"suppress\""),
    ] {
        body.push_str(&format!("[[quasi_identifiers]]\ncolumn = \"{q}\"\nhierarchy = {h}\n"));
    }
    let case = Case {
        name: "types".into(),
        parquet,
        output: "pseudonymize = [\"id\", \"patient\"]".into(),
        body,
        engine: String::new(),
    };
    let job = same_on_both(dir.path(), &url, &pg, &case);
    // At the leaves (--node), every value must find itself in the maps PostgreSQL joins.
    let leaves = "d=0,n=0,day=0,ts=0,f=0,b=0,t=0";
    assert!(case_has_nulls(&pg));
    for (name, path) in [("duckdb", dir.path().join("types-duckdb.toml")), ("pg", job)] {
        ok(
            dir.path(),
            &["run", path.to_str().unwrap(), "--quiet", "--node", leaves, "--report", &format!("{name}-leaves.json")],
        );
    }
    assert_eq!(report(&dir.path().join("duckdb-leaves.json")), report(&dir.path().join("pg-leaves.json")));
    // The pseudonyms are HMAC-SHA-256 under the key, computed there from its definition.
    let key = kanon::pseudonym::Key::new(KEY.as_bytes());
    let rows = pg_rows(&pg, "Kanon types.Release");
    assert!(rows.iter().any(|r| r.starts_with(&format!("{}|", key.pseudonym(b"0")))), "{:?}", rows.first());
    // A class of NULLs under k, suppressed by the search there: the release
    // leaves its rows out by their source values, NULL matching NULL.
    let nulls = Case {
        name: "nulls".into(),
        parquet: dir.path().join("nulls.parquet"),
        output: String::new(),
        body: format!(
            "[privacy]\nk = 5\nmax_suppression = 0.05\n[[quasi_identifiers]]\ncolumn = \"n\"\nhierarchy = {n_h}\n\
             [[quasi_identifiers]]\ncolumn = \"b\"\nhierarchy = {b_h}\n"
        ),
        engine: "evaluator = \"engine\"".into(),
    };
    Connection::open_in_memory()
        .unwrap()
        .execute_batch(&format!(
            "COPY (SELECT i AS id, CASE WHEN i < 2 THEN NULL ELSE (i % 10)::INTEGER END AS n,
                   CASE WHEN i < 2 THEN NULL ELSE i % 2 = 0 END AS b FROM range(200) r(i)) TO '{}' (FORMAT PARQUET)",
            nulls.parquet.display()
        ))
        .unwrap();
    same_on_both(dir.path(), &url, &pg, &nulls);
    let kept = pg_rows(&pg, "Kanon nulls.Release");
    assert_eq!(kept.len(), 198, "the two NULL rows suppressed: {:?}", &kept[..3]);
}

/// The types case's source has NULL QI values on PostgreSQL.
fn case_has_nulls(pg: &kanon::engine::postgres::Postgres) -> bool {
    let conn = Connection::open_in_memory().unwrap();
    pg.fetch(
        &conn,
        "SELECT count(*) AS c FROM \"Kanon types\".\"Source Table\" WHERE n IS NULL AND b IS NULL",
        "nulls",
    )
    .unwrap();
    conn.query_row("SELECT c FROM nulls", [], |r| r.get::<_, i64>(0)).unwrap() > 0
}

#[test]
fn a_killed_postgres_run_leaves_the_old_release_or_the_new_one() {
    let Some(url) = pg_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let pg = session(dir.path(), &url);
    let mut case = generated(dir.path(), 300_000);
    case.name = "killed".into();
    let job = same_on_both(dir.path(), &url, &pg, &case);
    let release = "Kanon killed.Release";
    let full = pg_rows(&pg, release);
    pg.execute("CREATE TABLE \"Kanon killed\".full_copy AS SELECT * FROM \"Kanon killed\".\"Release\"").unwrap();
    // Previous releases to keep, in turn: a table of other columns (which a
    // new table replaces) and some of the release's rows (replaced in place).
    let previous_states = [
        ("other columns", "SELECT 1 AS previous"),
        ("the same columns", "SELECT * FROM \"Kanon killed\".full_copy LIMIT 1000"),
    ];
    let mut finished = [false; 2];
    for (i, delay_ms) in [100u64, 400, 800, 1200, 1600, 2000, 3000, 5000].into_iter().enumerate() {
        let (what, rows) = previous_states[i % 2];
        pg.execute(&format!(
            "DROP TABLE \"Kanon killed\".\"Release\"; CREATE TABLE \"Kanon killed\".\"Release\" AS {rows}"
        ))
        .unwrap();
        let previous = pg_rows(&pg, release);
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_kanon"))
            .args(["run", job.to_str().unwrap(), "--quiet"])
            .current_dir(dir.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        let _ = child.kill(); // SIGKILL
        child.wait().unwrap();
        // The server rolls back a killed client's transaction once it sees the
        // connection gone; until then the old release is what others see.
        let now = pg_rows(&pg, release);
        assert!(
            now == previous || now == full,
            "after a kill at {delay_ms} ms, over a release of {what}: a release neither old nor new"
        );
        finished[i % 2] |= now == full;
    }
    if finished != [true, true] {
        ok(dir.path(), &["run", job.to_str().unwrap(), "--quiet"]);
    }
    assert_eq!(pg_rows(&pg, release), full);
    assert_eq!(pg_value(&pg, "to_regclass('\"Kanon killed\".\"Release__kanon_tmp\"') IS NULL"), "true");
}

#[test]
fn postgres_settings_and_inputs_are_checked() {
    let Some(url) = pg_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let pg = session(dir.path(), &url);
    let mut case = demo(dir.path());
    case.name = "checked".into();
    let on_pg = same_on_both(dir.path(), &url, &pg, &case);
    // The run's history row, committed with the release in the release's schema.
    let out = ok(dir.path(), &["history", on_pg.to_str().unwrap(), "--json"]);
    let history: Vec<Value> = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(history.len(), 1, "{}", out.stdout);
    let reported = report(&dir.path().join("checked-pg.json"));
    assert_eq!(history[0]["node"], reported["node"]);
    assert_eq!(history[0]["rows_out"], reported["rows_out"]);
    assert_eq!(history[0]["output_table"], "Kanon checked.Release");
    assert!(!out.stdout.contains(&password(&url)));
    let source = "Kanon checked.Source Table";
    pg.execute("CREATE TABLE \"Kanon checked\".\"odd types\" AS SELECT '{}'::json AS doc, 1 AS x").unwrap();
    let job = |name: &str, url: &str, source: &str, body: &str| {
        let path = dir.path().join(name);
        std::fs::write(
            &path,
            format!(
                "[engine]\nkind = \"postgres\"\nurl = \"{url}\"\n[source]\ntable = \"{source}\"\n[output]\ntable = \"Kanon checked.out\"\n{body}"
            ),
        )
        .unwrap();
        path
    };
    let wrong = url.replace(&password(&url), "not-the-password");
    let closed = "postgresql://kanon@127.0.0.1:1/postgres";
    let body = &case.body;
    let cases = [
        (job("down.toml", closed, source, body), "[engine] url: cannot connect to PostgreSQL at 127.0.0.1:1/postgres"),
        (job("login.toml", &wrong, source, body), "password authentication failed"),
        (job("missing.toml", &url, "Kanon checked.no such table", body), "not found in PostgreSQL"),
        (job("column.toml", &url, source, &body.replace("\"sex\"", "\"gender\"")), "\"gender\" is not a column"),
        (
            job(
                "json.toml",
                &url,
                "Kanon checked.odd types",
                "[privacy]\nk = 1\n[[quasi_identifiers]]\ncolumn = \"doc\"\nhierarchy = \"suppress\"\n",
            ),
            "quasi-identifier \"doc\" has PostgreSQL type json,",
        ),
        (job("scheme.toml", &url, source, &body.replace("[search]", "[search]\nscheme = \"gsps\"")), "full-domain"),
        (
            job("cells.toml", &url, source, &body.replace("algorithm = \"incognito\"", "algorithm = \"cdgh\"")),
            "full-domain",
        ),
    ];
    for (path, says) in cases {
        let out = run(dir.path(), &["run", path.to_str().unwrap(), "--quiet"]);
        assert_eq!(out.code, 2, "{}: {}", path.display(), out.show());
        assert!(out.stderr.contains(says), "{}: expected \"{says}\" in: {}", path.display(), out.stderr);
        assert!(!out.both().contains(&password(&url)), "{}: the password was shown", path.display());
    }
    // A password from PGPASSWORD, and from a password file, as libpq takes them.
    let bare = url.replace(&format!(":{}@", password(&url)), "@");
    let from_env = job("env.toml", &bare, source, body);
    let out =
        kanon_env(dir.path(), &["run", from_env.to_str().unwrap(), "--quiet"], &[("PGPASSWORD", &password(&url))]);
    assert_eq!(out.code, 0, "{}", out.show());
    let pgpass = dir.path().join("pgpass");
    std::fs::write(&pgpass, format!("# test\n127.0.0.1:*:postgres:kanon:{}\n", password(&url))).unwrap();
    let out = kanon_env(
        dir.path(),
        &["run", from_env.to_str().unwrap(), "--quiet"],
        &[("PGPASSFILE", pgpass.to_str().unwrap())],
    );
    assert_eq!(out.code, 0, "{}", out.show());
}

/// `kanon check` (the source, and a release with `--table`, with ℓ, t,
/// risk and the chart) and `kanon pareto` read PostgreSQL tables there, and
/// give the figures DuckDB gives for the same rows.
#[test]
fn check_and_pareto_give_the_same_figures_on_postgres() {
    let Some(url) = pg_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let pg = session(dir.path(), &url);
    let mut case = generated(dir.path(), 20_000);
    case.name = "audited".into();
    let on_pg = same_on_both(dir.path(), &url, &pg, &case);
    let on_duck = dir.path().join("audited-duckdb.toml");
    // The audits add t-closeness (each distance) to the job's k and ℓ.
    let with_t = |job: &Path, distance: &str| {
        let path = job.with_extension(format!("{distance}.toml"));
        let text = std::fs::read_to_string(job).unwrap().replace(
            "[privacy]\n",
            &format!("[privacy]\nt_closeness = {{ column = \"diagnosis\", t = 0.3, distance = \"{distance}\" }}\n"),
        );
        std::fs::write(&path, text).unwrap();
        path
    };
    let check = |job: &Path, extra: &[&str]| -> (i32, Value) {
        let out = run(dir.path(), &[&["check", job.to_str().unwrap(), "--json"], extra].concat());
        assert!(out.code == 0 || out.code == 4, "check {}: {}", job.display(), out.show());
        assert!(!out.both().contains(&password(&url)), "the password was shown");
        let mut audit: Value = serde_json::from_str(&out.stdout).unwrap();
        audit.as_object_mut().unwrap().remove("table");
        (out.code, audit)
    };
    let release = "Kanon audited.Release";
    let mut checked = 0;
    for (duck, on_pg) in [(on_duck.clone(), on_pg.clone()), (with_t(&on_duck, "equal"), with_t(&on_pg, "equal"))] {
        // The source: near-unique, so it fails k on both.
        let (a, b) = (check(&duck, &[]), check(&on_pg, &[]));
        assert_eq!(a.0, 4, "{}", a.1);
        assert_eq!(a, b, "check of the source differs");
        // The release, with both distributions charted.
        let (svg_duck, svg_pg) = (dir.path().join("duck.svg"), dir.path().join("pg.svg"));
        let a = check(&duck, &["--table", "release", "--svg", svg_duck.to_str().unwrap()]);
        let b = check(&on_pg, &["--table", release, "--svg", svg_pg.to_str().unwrap()]);
        assert_eq!(a, b, "check of the release differs");
        assert_eq!(a.1["rows"], report(&dir.path().join("audited-duckdb.json"))["rows_out"]);
        assert_eq!(std::fs::read(&svg_duck).unwrap(), std::fs::read(&svg_pg).unwrap(), "the charts differ");
        checked += 1;
    }
    assert_eq!(checked, 2);
    let audit = check(&with_t(&on_pg, "equal"), &["--table", release]).1;
    assert!(audit["t_closeness"]["equal"].as_f64().is_some(), "{audit}");
    assert!(audit["l_diversity"]["entropy"].as_f64().is_some(), "{audit}");
    // A table PostgreSQL does not have, and one without the QIs.
    let out = run(dir.path(), &["check", on_pg.to_str().unwrap(), "--table", "Kanon audited.nothing"]);
    assert_eq!(out.code, 2, "{}", out.show());
    assert!(out.stderr.contains("table \"Kanon audited.nothing\" not found in PostgreSQL"), "{}", out.stderr);
    pg.execute("CREATE TABLE \"Kanon audited\".narrow AS SELECT 1 AS x").unwrap();
    let out = run(dir.path(), &["check", on_pg.to_str().unwrap(), "--table", "Kanon audited.narrow"]);
    assert_eq!(out.code, 2, "{}", out.show());
    assert!(out.stderr.contains("is not a column of table \"Kanon audited.narrow\""), "{}", out.stderr);

    // The exact front of k and the loss.
    let front = |job: &Path, name: &str| -> Value {
        let path = dir.path().join(name);
        ok(dir.path(), &["pareto", job.to_str().unwrap(), "--json", path.to_str().unwrap(), "--quiet"]);
        let mut front: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        front.as_object_mut().unwrap().remove("seconds");
        front
    };
    let (a, b) = (front(&on_duck, "duck-front.json"), front(&on_pg, "pg-front.json"));
    assert!(a["front"].as_array().is_some_and(|f| !f.is_empty()), "{a}");
    assert_eq!(a, b, "the fronts differ");
}

/// One value of a query on PostgreSQL, as text.
fn pg_value(pg: &kanon::engine::postgres::Postgres, select: &str) -> String {
    let conn = Connection::open_in_memory().unwrap();
    pg.fetch(&conn, &format!("SELECT ({select})::text AS v"), "value").unwrap();
    conn.query_row("SELECT v FROM value", [], |r| r.get::<_, String>(0)).unwrap()
}

/// A PostgreSQL job of the demo's body, from `source` into `release`, with
/// `extra` lines in [output].
fn pg_job(dir: &Path, file: &str, url: &str, source: &str, release: &str, extra: &str, body: &str) -> PathBuf {
    let path = dir.join(file);
    std::fs::write(
        &path,
        format!(
            "[engine]\nkind = \"postgres\"\nurl = \"{url}\"\n[source]\ntable = \"{source}\"\n[output]\ntable = \"{release}\"\n{extra}\n{body}"
        ),
    )
    .unwrap();
    path
}

/// A release is checked against the catalog, not the job's spelling: one
/// that is the source under another name (`fars` and `public.fars`), a
/// table the source (a view) reads, the run history or a view exits 2
/// before anything is read, and the source keeps its rows.
#[test]
fn a_postgres_release_never_replaces_its_source_under_another_spelling() {
    let Some(url) = pg_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let pg = session(dir.path(), &url);
    let case = demo(dir.path());
    // The source in the default schema (public), named without it.
    pg.execute("DROP TABLE IF EXISTS public.pgsafety_fars CASCADE").unwrap();
    load(&pg, &case.parquet, "pgsafety_fars");
    pg.execute(
        "DROP SCHEMA IF EXISTS \"Kanon spelled\" CASCADE; CREATE SCHEMA \"Kanon spelled\";
         CREATE VIEW \"Kanon spelled\".\"fars view\" AS SELECT * FROM public.pgsafety_fars;
         CREATE VIEW \"Kanon spelled\".\"a view\" AS SELECT 1 AS x",
    )
    .unwrap();
    let before = pg_rows(&pg, "public.pgsafety_fars");
    assert!(before.len() > 10);
    let drop = "drop = [\"name\", \"ssn\"]";
    let cases = [
        (
            "fars", "public.pgsafety_fars", drop,
            "[output] table \"public.pgsafety_fars\" is the source table \"pgsafety_fars\" (both are public.pgsafety_fars in PostgreSQL); kanon never overwrites its source",
        ),
        (
            "public.pgsafety_fars", "pgsafety_fars", drop,
            "[output] table \"pgsafety_fars\" is the source table \"public.pgsafety_fars\" (both are public.pgsafety_fars in PostgreSQL)",
        ),
        (
            "Kanon spelled.fars view", "public.pgsafety_fars", drop,
            "[output] table \"public.pgsafety_fars\" (public.pgsafety_fars) is read by the source \"Kanon spelled.fars view\", a view over it",
        ),
        (
            "pgsafety_fars", "Kanon spelled.kanon_runs", "drop = [\"name\", \"ssn\"]\nhistory = false",
            "[output] table \"Kanon spelled.kanon_runs\" is the run history's table (Kanon spelled.kanon_runs)",
        ),
        (
            "pgsafety_fars", "Kanon spelled.a view", drop,
            "[output] table \"Kanon spelled.a view\" (Kanon spelled.a view) is a view in PostgreSQL",
        ),
    ];
    for (i, (source, release, extra, says)) in cases.into_iter().enumerate() {
        let source = if source == "fars" { "pgsafety_fars" } else { source };
        let job = pg_job(dir.path(), &format!("spelled{i}.toml"), &url, source, release, extra, &case.body);
        let out = run(dir.path(), &["run", job.to_str().unwrap(), "--quiet"]);
        assert_eq!(out.code, 2, "{source} -> {release}: {}", out.show());
        assert!(out.stderr.contains(says), "{source} -> {release}: expected \"{says}\" in: {}", out.stderr);
        assert!(!out.both().contains(&password(&url)));
        assert_eq!(pg_rows(&pg, "public.pgsafety_fars"), before, "{source} -> {release}: the source changed");
    }
    assert_eq!(pg_value(&pg, "to_regclass('\"Kanon spelled\".kanon_runs') IS NULL"), "true");
    // The same source into another table of its schema is fine.
    let job = pg_job(dir.path(), "fine.toml", &url, "pgsafety_fars", "pgsafety_fars_k", drop, &case.body);
    ok(dir.path(), &["run", job.to_str().unwrap(), "--quiet"]);
    assert_eq!(pg_rows(&pg, "public.pgsafety_fars"), before);
    assert!(!pg_rows(&pg, "public.pgsafety_fars_k").is_empty());
    pg.execute("DROP TABLE public.pgsafety_fars CASCADE; DROP TABLE public.pgsafety_fars_k").unwrap();
}

/// A release named without a schema lands in the source's schema (with its
/// run history), whatever the search_path finds first: a table of the same
/// name in public is left alone.
#[test]
fn a_postgres_release_named_without_a_schema_lands_in_the_sources_schema() {
    let Some(url) = pg_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let pg = session(dir.path(), &url);
    let mut case = demo(dir.path());
    case.name = "schemed".into();
    let schema = "Kanon schemed";
    pg.execute(&format!(
        "DROP SCHEMA IF EXISTS \"{schema}\" CASCADE; CREATE SCHEMA \"{schema}\";
         DROP TABLE IF EXISTS public.pgsafety_schemed; CREATE TABLE public.pgsafety_schemed AS SELECT 1 AS decoy"
    ))
    .unwrap();
    let source = format!("{schema}.Source Table");
    load(&pg, &case.parquet, &source);
    let decoy = pg_rows(&pg, "public.pgsafety_schemed");
    let job =
        both_engines(dir.path(), &url, &pg, &case, &source, "pgsafety_schemed", &format!("{schema}.pgsafety_schemed"));
    assert_eq!(pg_rows(&pg, "public.pgsafety_schemed"), decoy, "the table in public was replaced");
    // The history beside it, and `kanon history` finds it there.
    assert_eq!(pg_value(&pg, "SELECT count(*) FROM \"Kanon schemed\".kanon_runs"), "1");
    let out = ok(dir.path(), &["history", job.to_str().unwrap(), "--json"]);
    let history: Vec<Value> = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(history.len(), 1, "{}", out.stdout);
    assert_eq!(history[0]["output_table"], "pgsafety_schemed");
    pg.execute("DROP TABLE public.pgsafety_schemed").unwrap();
}

/// Night after night into one release table: the views over it, its grants
/// and its indexes stay, the view reads the new rows, readers never see a
/// dropped table. With other columns, a view depending on it makes the run
/// exit 2 naming the view, nothing written; without one, a new table takes
/// its place with its grants.
#[test]
fn a_nightly_postgres_release_keeps_the_views_and_grants_on_it() {
    let Some(url) = pg_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let pg = session(dir.path(), &url);
    let mut case = generated(dir.path(), 4_000);
    case.name = "nightly".into();
    let (source, release) = ("Kanon nightly.Source Table", "Kanon nightly.Release");
    // Night one.
    let job = same_on_both(dir.path(), &url, &pg, &case);
    let night_one = pg_rows(&pg, release);
    pg.execute(
        "DROP ROLE IF EXISTS kanon_pgsafety_reader; CREATE ROLE kanon_pgsafety_reader;
         CREATE VIEW \"Kanon nightly\".night_count AS SELECT count(*) AS n FROM \"Kanon nightly\".\"Release\";
         GRANT SELECT ON \"Kanon nightly\".\"Release\" TO kanon_pgsafety_reader;
         GRANT USAGE ON SCHEMA \"Kanon nightly\" TO kanon_pgsafety_reader;
         CREATE INDEX release_diagnosis ON \"Kanon nightly\".\"Release\" (diagnosis)",
    )
    .unwrap();
    let view = || pg_value(&pg, "SELECT n FROM \"Kanon nightly\".night_count");
    let granted =
        || pg_value(&pg, "has_table_privilege('kanon_pgsafety_reader', '\"Kanon nightly\".\"Release\"', 'SELECT')");
    assert_eq!(view(), night_one.len().to_string());
    // Night two: a quarter of the rows gone (both engines read the new rows).
    let conn = Connection::open_in_memory().unwrap();
    let fewer = dir.path().join("fewer.parquet");
    conn.execute_batch(&format!(
        "COPY (SELECT * FROM '{}' WHERE row_id % 4 <> 0) TO '{}' (FORMAT PARQUET)",
        case.parquet.display(),
        fewer.display()
    ))
    .unwrap();
    std::fs::rename(&fewer, &case.parquet).unwrap();
    load(&pg, &case.parquet, source);
    both_engines(dir.path(), &url, &pg, &case, source, release, release);
    let night_two = pg_rows(&pg, release);
    assert_ne!(night_two, night_one);
    assert_eq!(view(), night_two.len().to_string(), "the view does not read the new release");
    assert_eq!(granted(), "true", "the grant is gone");
    assert_eq!(pg_value(&pg, "SELECT count(*) FROM pg_indexes WHERE indexname = 'release_diagnosis'"), "1");
    let history: Vec<Value> =
        serde_json::from_str(&ok(dir.path(), &["history", job.to_str().unwrap(), "--json"]).stdout).unwrap();
    assert_eq!(history.len(), 2);

    // The table's columns changed under it (a column added), and the view
    // depends on it: exit 2 naming the view, the release and history as they were.
    pg.execute("ALTER TABLE \"Kanon nightly\".\"Release\" ADD COLUMN note text").unwrap();
    let with_note = pg_rows(&pg, release);
    let out = run(dir.path(), &["run", job.to_str().unwrap(), "--quiet"]);
    assert_eq!(out.code, 2, "{}", out.show());
    assert!(
        out.stderr.contains(
            "[output] table \"Kanon nightly.Release\" (Kanon nightly.Release) has other columns than this release (no column \"note\" any more), and view \"Kanon nightly\".night_count depends on it"
        ),
        "{}",
        out.stderr
    );
    assert_eq!(pg_rows(&pg, release), with_note);
    let history: Vec<Value> =
        serde_json::from_str(&ok(dir.path(), &["history", job.to_str().unwrap(), "--json"]).stdout).unwrap();
    assert_eq!(history.len(), 2);
    // Without the view, a new table of the release's columns takes its place, with the grant.
    pg.execute("DROP VIEW \"Kanon nightly\".night_count").unwrap();
    ok(dir.path(), &["run", job.to_str().unwrap(), "--quiet"]);
    assert_eq!(pg_rows(&pg, release), night_two);
    assert_eq!(granted(), "true", "the grant did not follow the new table");
    assert_eq!(
        pg_value(&pg, "SELECT count(*) FROM information_schema.columns WHERE table_schema = 'Kanon nightly' AND table_name = 'Release' AND column_name = 'note'"),
        "0"
    );
    assert_eq!(pg_value(&pg, "to_regclass('\"Kanon nightly\".\"Release__kanon_tmp\"') IS NULL"), "true");
    pg.execute("DROP SCHEMA \"Kanon nightly\" CASCADE; DROP ROLE kanon_pgsafety_reader").unwrap();
}

/// `sslmode` and `sslrootcert` as libpq takes them (the URL's query, else
/// PGSSLMODE / PGSSLROOTCERT), against a cluster that refuses connections
/// without TLS (tools/pg-server.sh's start_pg_tls: its CA in KANON_PG_TLS_CA,
/// a server certificate for localhost and 127.0.0.1, also listening on
/// 127.0.0.2, which the certificate does not name).
#[test]
fn postgres_connects_over_tls_as_libpq_does() {
    let (Ok(url), Ok(ca)) = (std::env::var("KANON_PG_TLS_URL"), std::env::var("KANON_PG_TLS_CA")) else {
        crate::util::missing("a PostgreSQL TLS cluster (KANON_PG_TLS_URL, which tests/spark.sh sets)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let with = |query: &str| format!("{url}?{query}");
    let pg = session(dir.path(), &with("sslmode=require"));
    let mut case = demo(dir.path());
    case.name = "tls".into();
    // Encrypted, unverified: the same release as DuckDB's.
    let job = same_on_both(dir.path(), &with("sslmode=require"), &pg, &case);
    let body = &case.body;
    let tls_job = |file: &str, url: &str| {
        pg_job(dir.path(), file, url, "Kanon tls.Source Table", "Kanon tls.Release", "drop = [\"name\", \"ssn\"]", body)
    };
    // Another CA, which signed nothing the server has.
    let other = dir.path().join("other-ca.crt");
    let made = std::process::Command::new("openssl")
        .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=another CA", "-keyout"])
        .arg(dir.path().join("other-ca.key"))
        .arg("-out")
        .arg(&other)
        .output()
        .unwrap();
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let other = other.display().to_string();
    let missing = dir.path().join("missing.pem").display().to_string();
    let on_ip2 = url.replace("@127.0.0.1:", "@127.0.0.2:");
    let works = [
        ("verify-full.toml", with(&format!("sslmode=verify-full&sslrootcert={ca}")), vec![]),
        ("prefer.toml", url.clone(), vec![]),
        ("verify-ca-ip2.toml", format!("{on_ip2}?sslmode=verify-ca&sslrootcert={ca}"), vec![]),
        ("env.toml", url.clone(), vec![("PGSSLMODE", "verify-full"), ("PGSSLROOTCERT", ca.as_str())]),
    ];
    let released = pg_rows(&pg, "Kanon tls.Release");
    for (file, url, env) in works {
        let path = tls_job(file, &url);
        let env: Vec<(&str, &str)> = [("KANON_KEY", KEY)].into_iter().chain(env).collect();
        let out = kanon_env(dir.path(), &["run", path.to_str().unwrap(), "--quiet"], &env);
        assert_eq!(out.code, 0, "{file}: {}", out.show());
        assert_eq!(pg_rows(&pg, "Kanon tls.Release"), released, "{file}");
    }
    let host_ip2 = on_ip2.split('@').nth(1).unwrap().split(':').next().unwrap().to_string();
    let fails = [
        (
            "disable.toml",
            with("sslmode=disable"),
            vec![],
            "no encryption (sslmode=disable: the server may take TLS connections only)".to_string(),
        ),
        (
            "other-ca.toml",
            with(&format!("sslmode=verify-full&sslrootcert={other}")),
            vec![],
            format!("the server's certificate is not signed by a CA of sslrootcert ({other}) (sslmode=verify-full, sslrootcert={other})"),
        ),
        (
            "require-other-ca.toml",
            with(&format!("sslmode=require&sslrootcert={other}")),
            vec![],
            format!("the server's certificate is not signed by a CA of sslrootcert ({other})"),
        ),
        (
            "env-other-ca.toml",
            url.clone(),
            vec![("PGSSLMODE", "verify-ca"), ("PGSSLROOTCERT", other.as_str())],
            format!("the server's certificate is not signed by a CA of sslrootcert ({other}) (PGSSLMODE=verify-ca"),
        ),
        (
            "verify-full-ip2.toml",
            format!("{on_ip2}?sslmode=verify-full&sslrootcert={ca}"),
            vec![],
            format!("the server's certificate is not for host {host_ip2} (sslmode=verify-full"),
        ),
        ("bogus.toml", with("sslmode=bogus"), vec![], "[engine] url: sslmode \"bogus\" is not one of".to_string()),
        ("missing.toml", with(&format!("sslmode=verify-ca&sslrootcert={missing}")), vec![], format!("[engine] url: sslrootcert {missing}: ")),
        ("no-ca.toml", with("sslmode=verify-full"), vec![("HOME", dir.path().to_str().unwrap())], "sslmode=verify-full needs sslrootcert".to_string()),
    ];
    for (file, url, env, says) in fails {
        let path = tls_job(file, &url);
        let env: Vec<(&str, &str)> = [("KANON_KEY", KEY)].into_iter().chain(env).collect();
        let out = kanon_env(dir.path(), &["run", path.to_str().unwrap(), "--quiet"], &env);
        assert_eq!(out.code, 2, "{file}: {}", out.show());
        assert!(out.stderr.contains(&says), "{file}: expected \"{says}\" in: {}", out.stderr);
        assert!(!out.both().contains(&password(&url)), "{file}: the password was shown");
        assert!(!out.both().contains(&url), "{file}: the URL was shown");
    }
    assert_eq!(pg_rows(&pg, "Kanon tls.Release"), released);
    // `kanon history` connects the same way.
    let out = ok(dir.path(), &["history", job.to_str().unwrap(), "--json"]);
    assert!(out.stdout.contains("Kanon tls.Release"), "{}", out.stdout);
    // A server without TLS: require refuses it, naming the setting; prefer goes on in plain.
    if let Some(plain) = pg_url() {
        let path = tls_job("plain.toml", &format!("{plain}?sslmode=require"));
        let out = run(dir.path(), &["check", path.to_str().unwrap()]);
        assert_eq!(out.code, 2, "{}", out.show());
        assert!(out.stderr.contains("server does not support TLS (sslmode=require)"), "{}", out.stderr);
    }
}

/// `kanon limit` on PostgreSQL measures there: the GROUP BY of the QIs and the
/// plain recode-and-write run on the server, over the source's rows and QI
/// combinations as DuckDB's limit counts them on the same rows; its table is
/// dropped after; DuckDB's fallbacks are refused (exit 2, naming the flag).
#[test]
fn limit_runs_on_postgres_with_the_counts_of_duckdbs() {
    let Some(url) = pg_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let pg = session(dir.path(), &url);
    let case = demo(dir.path());
    let schema = "Kanon limit";
    pg.execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE; CREATE SCHEMA \"{schema}\"")).unwrap();
    let source = format!("{schema}.Source Table");
    load(&pg, &case.parquet, &source);
    let duck = dir.path().join("limit-duckdb.toml");
    std::fs::write(
        &duck,
        format!(
            "[source]\nparquet = \"{}\"\n[output]\ndatabase = \"limit.duckdb\"\ntable = \"release\"\n{}\n{}",
            case.parquet.display(),
            case.output,
            case.body
        ),
    )
    .unwrap();
    let on_pg =
        pg_job(dir.path(), "limit-pg.toml", &url, &source, &format!("{schema}.Release"), &case.output, &case.body);
    let node = "zip=2,age=3,birth_date=3,sex=0,education=2";
    let limit = |job: &Path, extra: &[&str]| {
        let out = run(dir.path(), &[&["limit", job.to_str().unwrap(), "--node", node, "--quiet"], extra].concat());
        assert_eq!(out.code, 0, "{}", out.show());
        serde_json::from_str::<Value>(out.stdout.trim()).unwrap()
    };
    let (a, b) = (limit(&duck, &[]), limit(&on_pg, &[]));
    assert_eq!(b["rows"], 74, "{b}");
    assert_eq!(a["rows"], b["rows"]);
    assert!(b["combinations"].as_i64().is_some_and(|c| c > 1), "{b}");
    assert_eq!(a["combinations"], b["combinations"]);
    assert_eq!((b["group_by"].as_str(), b["written_as"].as_str()), (Some("group_by"), Some("table")));
    let sum = b["group_by_seconds"].as_f64().unwrap() + b["write_seconds"].as_f64().unwrap();
    assert!((b["total_seconds"].as_f64().unwrap() - sum).abs() < 1e-9, "{b}");
    // No map-join figure on an engine; --plain-only says the same.
    assert!(b["maps_write_seconds"].is_null() && b["maps_total_seconds"].is_null(), "{b}");
    assert_eq!(limit(&on_pg, &["--plain-only"])["combinations"], a["combinations"]);
    // Nothing left beside the source: no release, no limit table.
    let left = "SELECT count(*) FROM pg_tables WHERE schemaname = 'Kanon limit' AND tablename <> 'Source Table'";
    assert_eq!(pg_value(&pg, left), "0");
    for flag in ["--hashed", "--scan"] {
        let out = run(dir.path(), &["limit", on_pg.to_str().unwrap(), "--node", node, "--quiet", flag]);
        assert_eq!(out.code, 2, "{flag}: {}", out.show());
        assert!(out.stderr.contains(flag) && out.stderr.contains("PostgreSQL"), "{flag}: {}", out.stderr);
    }
}

/// Every built-in hierarchy kind at every level, and a file hierarchy with a NULL leaf: the
/// labels PostgreSQL's release writes (by its expressions, or its maps where the trace says
/// so) are the ones DuckDB's release writes, row for row; and with suppressed classes (k > 1)
/// the anti-join on their labels leaves out the rows DuckDB leaves out, with the same report.
#[test]
fn every_hierarchy_kind_releases_duckdbs_labels_on_postgres() {
    use crate::util::{check_every_kind_recoding, every_kind, every_kind_node};
    let Some(url) = pg_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let pg = session(dir.path(), &url);
    let (parquet, qis) = every_kind(dir.path());
    let schema = "Kanon kinds";
    pg.execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE; CREATE SCHEMA \"{schema}\"")).unwrap();
    let (source, release) = (format!("{schema}.Source Table"), format!("{schema}.Release"));
    load(&pg, &parquet, &source);
    let jobs = |k: u64| {
        let body = format!("[privacy]\nk = {k}\nmax_suppression = 1.0\n{qis}");
        let duck = dir.path().join(format!("kinds{k}-duckdb.toml"));
        std::fs::write(
            &duck,
            format!(
                "[source]\nparquet = \"{}\"\n[output]\ndatabase = \"kinds.duckdb\"\ntable = \"release\"\nreport = \"kinds-duckdb.json\"\n{body}",
                parquet.display()
            ),
        )
        .unwrap();
        let on_pg = pg_job(
            dir.path(),
            &format!("kinds{k}-pg.toml"),
            &url,
            &source,
            &release,
            "report = \"kinds-pg.json\"",
            &body,
        );
        (duck, on_pg)
    };
    // Releases node by node: (k, node, the level the trace is checked at, whether the
    // suppressed classes are read from a work table there, as an engine-side evaluator leaves them).
    let mut nodes: Vec<(u64, String, Option<u8>, bool)> =
        (0..=6).map(|l| (1, every_kind_node(l), Some(l), false)).collect();
    let mixed = "code=2,zip=3,age=4,score=3,amount=1,day=6,ts=2,sex=0,grade=1";
    // By century and grade: the 2000s' two rows of a NULL grade are a suppressed class.
    let null_class = "code=4,zip=3,age=4,score=3,amount=3,day=5,ts=3,sex=1,grade=0";
    for there in [false, true] {
        nodes.push((30, every_kind_node(4), Some(4), there));
        nodes.push((2, mixed.into(), None, there));
        nodes.push((3, null_class.into(), None, there));
    }
    for (k, node, level, there) in nodes {
        let (duck, on_pg) = jobs(k);
        ok(dir.path(), &["run", duck.to_str().unwrap(), "--quiet", "--node", &node]);
        let out = kanon_env(
            dir.path(),
            &["run", on_pg.to_str().unwrap(), "--quiet", "--node", &node],
            &[("KANON_KEY", KEY), ("KANON_TRACE", "1"), ("KANON_DROPPED_THERE", if there { "1" } else { "" })],
        );
        assert_eq!(out.code, 0, "{node}: {}", out.show());
        if let Some(level) = level {
            check_every_kind_recoding(&out.stderr, level);
        }
        // Read there, each QI's labels of the suppressed classes come back by their codes.
        assert_eq!(out.stderr.contains("labels of QI 0 among the suppressed classes"), there, "{node}");
        let (a, b) = (report(&dir.path().join("kinds-duckdb.json")), report(&dir.path().join("kinds-pg.json")));
        assert_eq!(a, b, "k = {k}, {node}: reports differ");
        let suppressed = a["suppressed"].as_u64().unwrap();
        assert_eq!(suppressed == 0, k == 1, "k = {k}, {node}: {suppressed} suppressed");
        assert!(suppressed < 400, "k = {k}, {node}: everything suppressed");
        let x = sorted_rows(&Connection::open(dir.path().join("kinds.duckdb")).unwrap(), "release");
        let y = pg_rows(&pg, &release);
        assert_eq!(x.len() as u64, 400 - suppressed);
        assert!(x == y, "k = {k}, {node}: released rows differ (first: {:?} / {:?})", x.first(), y.first());
    }
}

/// A release over a table large enough for a parallel scan is planned in parallel (its
/// `CREATE TABLE … AS` plan, which `KANON_TRACE` prints, starts with a Gather), into a new
/// table and over one of the same columns (built apart, then copied in place), and releases
/// the rows DuckDB releases from the same rows.
#[test]
fn a_large_postgres_release_is_planned_in_parallel() {
    let Some(url) = pg_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let pg = session(dir.path(), &url);
    let schema = "Kanon parallel";
    pg.execute(&format!(
        "DROP SCHEMA IF EXISTS \"{schema}\" CASCADE; CREATE SCHEMA \"{schema}\";
         CREATE TABLE \"{schema}\".source AS
         SELECT i AS id, lpad((i * 7919 % 100000)::text, 5, '0') AS zip,
                DATE '1940-01-01' + (i * 31 % 29220)::integer AS birth_date,
                (ARRAY['F', 'M'])[1 + i % 2] AS sex
         FROM generate_series(1::bigint, 300000) i;
         ANALYZE \"{schema}\".source"
    ))
    .unwrap();
    let db = dir.path().join("source.duckdb");
    let conn = Connection::open(&db).unwrap();
    pg.fetch(&conn, &format!("SELECT * FROM \"{schema}\".source"), "fetched").unwrap();
    conn.execute_batch("CREATE TABLE source AS SELECT * FROM fetched").unwrap();
    drop(conn);
    let body = "[privacy]\nk = 3\nmax_suppression = 1.0\n\
                [[quasi_identifiers]]\ncolumn = \"zip\"\nhierarchy = { mask = 5 }\n\
                [[quasi_identifiers]]\ncolumn = \"birth_date\"\nhierarchy = { date = [\"month\", \"year\", \"decade\"] }\n\
                [[quasi_identifiers]]\ncolumn = \"sex\"\nhierarchy = \"suppress\"\n";
    let duck = dir.path().join("parallel-duckdb.toml");
    std::fs::write(
        &duck,
        format!(
            "[source]\ndatabase = \"{}\"\ntable = \"source\"\n[output]\ndatabase = \"release.duckdb\"\ntable = \"release\"\n\
             report = \"parallel-duckdb.json\"\ndrop = [\"id\"]\n{body}",
            db.display()
        ),
    )
    .unwrap();
    let release = format!("{schema}.release");
    let extra = "report = \"parallel-pg.json\"\ndrop = [\"id\"]";
    let on_pg = pg_job(dir.path(), "parallel-pg.toml", &url, &format!("{schema}.source"), &release, extra, body);
    let node = "zip=2,birth_date=2,sex=0";
    ok(dir.path(), &["run", duck.to_str().unwrap(), "--quiet", "--node", node]);
    let expected = sorted_rows(&Connection::open(dir.path().join("release.duckdb")).unwrap(), "release");
    let suppressed = report(&dir.path().join("parallel-duckdb.json"))["suppressed"].as_u64().unwrap();
    assert!(suppressed > 0 && expected.len() as u64 == 300_000 - suppressed, "{suppressed} suppressed");
    // A new table, then one of the same columns.
    for time in ["first", "second"] {
        let out = kanon_env(
            dir.path(),
            &["run", on_pg.to_str().unwrap(), "--quiet", "--node", node],
            &[("KANON_KEY", KEY), ("KANON_TRACE", "1")],
        );
        assert_eq!(out.code, 0, "{time}: {}", out.show());
        let plan = out.stderr.split("postgres: the plan of ").nth(1).unwrap_or_default();
        assert!(
            plan.trim_start().lines().nth(1).is_some_and(|l| l.trim_start().starts_with("Gather")),
            "{time}: {plan}"
        );
        assert_eq!(report(&dir.path().join("parallel-duckdb.json")), report(&dir.path().join("parallel-pg.json")));
        assert!(pg_rows(&pg, &release) == expected, "{time}: released rows differ");
    }
}

/// `[privacy] person` on PostgreSQL: the (person, tuple) pairs come back to
/// the in-memory evaluator, the dropped persons go there as a table and the
/// release leaves their rows out: DuckDB's node, report and rows. Pairs
/// beyond `[engine] memory_rows` exit 2 naming the setting.
#[test]
fn persons_give_duckdbs_node_report_and_rows_on_postgres() {
    let Some(url) = pg_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let pg = session(dir.path(), &url);
    let (parquet, body) = crate::util::visits_case(dir.path());
    let case =
        Case { name: "persons".into(), parquet, output: "drop = [\"member\"]".into(), body, engine: String::new() };
    let job = same_on_both(dir.path(), &url, &pg, &case);
    let pg_report = report(&dir.path().join("persons-pg.json"));
    assert!(pg_report["suppressed_persons"].as_u64().unwrap() > 0, "some person is dropped: {pg_report}");
    // kanon check counts the source's persons there: DuckDB's audit.
    let duck = dir.path().join("persons-duckdb.toml");
    let (a, b) = (
        run(dir.path(), &["check", duck.to_str().unwrap(), "--json"]),
        run(dir.path(), &["check", job.to_str().unwrap(), "--json"]),
    );
    assert_eq!((a.code, &a.stdout), (b.code, &b.stdout), "{}", b.both());
    assert!(a.stdout.contains("\"persons\": 303"), "{}", a.stdout);
    // The release dropped the person column: it cannot be audited over persons.
    let release = run(dir.path(), &["check", job.to_str().unwrap(), "--table", "Kanon persons.Release"]);
    assert_eq!(release.code, 2, "{}", release.both());
    assert!(release.stderr.contains("person column"), "{}", release.both());
    let text = std::fs::read_to_string(&job).unwrap().replace("[source]", "memory_rows = 10\n[source]");
    std::fs::write(&job, text).unwrap();
    let out = run(dir.path(), &["run", job.to_str().unwrap(), "--quiet"]);
    assert_eq!(out.code, 2, "{}", out.both());
    assert!(out.stderr.contains("memory_rows") && out.stderr.contains("person"), "{}", out.both());
    // Integer persons (coded by arithmetic on DuckDB, by the code table there): DuckDB's too.
    let (parquet, body) = crate::util::visits_case_integer(dir.path());
    let case =
        Case { name: "persons_int".into(), parquet, output: "drop = [\"member\"]".into(), body, engine: String::new() };
    same_on_both(dir.path(), &url, &pg, &case);
    assert!(report(&dir.path().join("persons_int-pg.json"))["suppressed_persons"].as_u64().unwrap() > 0);
}

/// Rows the engine sent back in a traced run (its `fetched N rows` lines).
fn rows_back(trace: &str) -> u64 {
    trace
        .lines()
        .filter_map(|l| l.split(": fetched ").nth(1))
        .map(|l| l.split(' ').next().unwrap().parse::<u64>().unwrap())
        .sum()
}

/// With the engine evaluator: `kanon check` measures the classes there
/// (a near-unique source, failing k, ℓ and t; the release, meeting them)
/// and brings back aggregates only, its text and exit-4 lines DuckDB's;
/// `kanon pareto`'s exact front, a reused node and a drift are DuckDB's.
#[test]
fn check_pareto_and_reuse_run_on_postgres_with_the_engine_evaluator() {
    let Some(url) = pg_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let pg = session(dir.path(), &url);
    let mut case = generated(dir.path(), 20_000);
    case.name = "there".into();
    case.engine = "evaluator = \"engine\"\nmemory_rows = 0".into();
    case.body = case.body.replace(
        "l_diversity = { column = \"diagnosis\", l = 2 }",
        "l_diversity = { column = \"diagnosis\", l = 2, kind = \"entropy\" }\n\
         t_closeness = { column = \"income\", t = 0.5, distance = \"ordered\" }",
    );
    assert!(case.body.contains("t_closeness"));
    let on_pg = same_on_both(dir.path(), &url, &pg, &case);
    let on_duck = dir.path().join("there-duckdb.toml");
    let release = "Kanon there.Release";
    let check = |job: &Path, extra: &[&str]| -> (i32, String, String, u64, String) {
        let out = kanon_env(
            dir.path(),
            &[&["check", job.to_str().unwrap()], extra].concat(),
            &[("KANON_KEY", KEY), ("KANON_TRACE", "1")],
        );
        assert!(out.code == 0 || out.code == 4, "check {}: {}", job.display(), out.show());
        let said: Vec<&str> = out.stderr.lines().filter(|l| !l.starts_with("TRACE")).collect();
        let text = out.stdout.replacen(release, "release", 1);
        let fetched: Vec<&str> =
            out.stderr.lines().filter(|l| l.contains(": fetched ") || l.contains("check:")).collect();
        (out.code, text, said.join("\n").replace(release, "release"), rows_back(&out.stderr), fetched.join("\n"))
    };
    // The source: near-unique (a class per row or so), failing every model.
    let (a, b) = (check(&on_duck, &[]), check(&on_pg, &[]));
    assert_eq!(a.0, 4, "{}", a.1);
    assert!(a.2.contains("fails k = 5") && a.2.contains("fails entropy l = 2"), "{}", a.2);
    assert_eq!((a.0, &a.1, &a.2), (b.0, &b.1, &b.2), "check of the source differs");
    // What came back: the sensitive columns' marginals, and a row per (class
    // size, value list) of each: bounded by their values, not by the rows.
    let classes: u64 = a.1.split(" rows in ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    assert!(classes > 10_000, "{}", a.1);
    let values: i64 = Connection::open_in_memory()
        .unwrap()
        .query_row(
            &format!("SELECT count(DISTINCT diagnosis) + count(DISTINCT income) FROM '{}'", case.parquet.display()),
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(b.3 > 0 && b.3 <= 2 * values as u64 + 50, "{} rows back for {values} values:\n{}", b.3, b.4);
    // The release meets the job, with its chart; its figures are DuckDB's too.
    let (svg_duck, svg_pg) = (dir.path().join("duck.svg"), dir.path().join("pg.svg"));
    let a = check(&on_duck, &["--table", "release", "--svg", svg_duck.to_str().unwrap()]);
    let b = check(&on_pg, &["--table", release, "--svg", svg_pg.to_str().unwrap()]);
    assert_eq!(a.0, 0, "{}", a.1);
    assert_eq!((a.0, &a.1, &a.2), (b.0, &b.1, &b.2), "check of the release differs");
    assert_eq!(std::fs::read(&svg_duck).unwrap(), std::fs::read(&svg_pg).unwrap(), "the charts differ");
    // A diagnosis the source does not have names its class, as DuckDB's pass does.
    let odd = "CREATE TABLE {odd} AS SELECT * FROM {release}; INSERT INTO {odd} (diagnosis, income) VALUES ('ZZZ', 0)";
    let local = Connection::open(dir.path().join("there.duckdb")).unwrap();
    local.execute_batch(&odd.replace("{odd}", "odd").replace("{release}", "release")).unwrap();
    drop(local);
    pg.execute(&odd.replace("{odd}", "\"Kanon there\".odd").replace("{release}", "\"Kanon there\".\"Release\""))
        .unwrap();
    let a = run(dir.path(), &["check", on_duck.to_str().unwrap(), "--table", "odd"]);
    let b = run(dir.path(), &["check", on_pg.to_str().unwrap(), "--table", "Kanon there.odd"]);
    assert_eq!(a.code, 2, "{}", a.show());
    assert!(
        a.stderr.contains("has the value \"ZZZ\" of \"diagnosis\", which the source does not have"),
        "{}",
        a.stderr
    );
    assert_eq!(
        (b.code, b.stderr.replace("Kanon there.odd", "odd")),
        (a.code, a.stderr),
        "the unknown value's messages differ"
    );

    // Pareto and reuse with distinct ℓ: the per-class value lists (entropy,
    // and t on income's 1,900 values) for every node of the lattice take
    // minutes there (tests/spark.rs runs a front with them on the demo).
    for job in [&on_duck, &on_pg] {
        let text = std::fs::read_to_string(job).unwrap().replace(", kind = \"entropy\"", "");
        let text: Vec<&str> = text.lines().filter(|l| !l.starts_with("t_closeness")).collect();
        std::fs::write(job, text.join("\n")).unwrap();
    }
    // The exact front of k and the loss, judged there.
    let front = |job: &Path, name: &str| -> Value {
        let path = dir.path().join(name);
        ok(dir.path(), &["pareto", job.to_str().unwrap(), "--json", path.to_str().unwrap(), "--quiet"]);
        let mut front: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        front.as_object_mut().unwrap().remove("seconds");
        front
    };
    let (a, b) = (front(&on_duck, "duck-front.json"), front(&on_pg, "pg-front.json"));
    assert!(a["front"].as_array().is_some_and(|f| f.len() > 1), "{a}");
    assert_eq!(a, b, "the fronts differ");

    // The next night, the same rows: the node is reused on both.
    for job in [&on_duck, &on_pg] {
        let text = std::fs::read_to_string(job).unwrap().replace("[search]\n", "[search]\nreuse = \"previous\"\n");
        assert!(text.contains("reuse"));
        std::fs::write(job, text).unwrap();
    }
    let night = |job: &Path, report: &str| -> Value {
        ok(dir.path(), &["run", job.to_str().unwrap(), "--quiet"]);
        let mut r = crate::util::engine_report(&dir.path().join(report));
        r.as_object_mut().unwrap().remove("evaluator");
        r
    };
    let (a, b) = (night(&on_duck, "there-duckdb.json"), night(&on_pg, "there-pg.json"));
    assert_eq!(a["reused"], true, "{a}");
    assert_eq!(a, b, "the reused nights differ");
    // Then a tenth of the rows: the node drifts (k fails), a search follows.
    let parquet = &case.parquet;
    let conn = Connection::open_in_memory().unwrap();
    conn.execute_batch(&format!(
        "COPY (SELECT * FROM '{0}' WHERE row_id % 10 = 0) TO '{0}.tenth' (FORMAT PARQUET)",
        parquet.display()
    ))
    .unwrap();
    std::fs::rename(format!("{}.tenth", parquet.display()), parquet).unwrap();
    load(&pg, parquet, "Kanon there.Source Table");
    let (a, b) = (night(&on_duck, "there-duckdb.json"), night(&on_pg, "there-pg.json"));
    assert_eq!(a["reused"], false, "{a}");
    assert_eq!(a["drift"]["failed"], "k", "{a}");
    assert_eq!(a, b, "the drifting nights differ");
}

/// Risk limits on PostgreSQL (the base set comes back: the memory evaluator
/// judges them): DuckDB's node, report and rows; a base left there refuses them.
#[test]
fn risk_limits_give_duckdbs_node_report_and_rows_on_postgres() {
    let Some(url) = pg_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let pg = session(dir.path(), &url);
    let mut case = generated(dir.path(), 3000);
    case.name = "limits".into();
    case.body = case.body.replace(
        "k = 5\nmax_suppression = 0.02\nl_diversity = { column = \"diagnosis\", l = 2 }\n",
        "k = 1\nmax_suppression = 0.05\naverage_risk = 0.1\nsample_uniqueness = 0.02\n",
    );
    assert!(case.body.contains("average_risk"), "{}", case.body);
    let job = same_on_both(dir.path(), &url, &pg, &case);
    let report = report(&dir.path().join("limits-pg.json"));
    assert_eq!(report["risk_limits"]["holds"], true, "{report}");
    let text = std::fs::read_to_string(&job).unwrap().replace("[source]", "memory_rows = 10\n[source]");
    std::fs::write(&job, text).unwrap();
    let out = run(dir.path(), &["run", job.to_str().unwrap(), "--quiet"]);
    assert_eq!(out.code, 2, "{}", out.both());
    assert!(out.stderr.contains("memory_rows") && out.stderr.contains("risk limits"), "{}", out.both());
}
