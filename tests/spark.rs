//! The same jobs on both engines: embedded DuckDB, and Spark through Spark
//! Connect (`[engine] kind = "spark"`). Each job runs once per engine on the
//! same rows (a Parquet file both read, or a table of Spark's catalog made
//! from it); the node, the report (timings and output location aside) and the
//! released rows must be identical. A run killed at any moment leaves the
//! previous release (never a partial one) under the release's name, or under
//! its `__kanon_previous` name for the next run to put back.
//!
//! Needs a Spark Connect server: `tests/spark.sh` starts one and sets
//! KANON_SPARK_URL. Without it these tests print a notice and pass.

use crate::util::{engine_report as report, sorted_rows};
use duckdb::Connection;
use std::path::{Path, PathBuf};
use std::process::Command;

fn spark_url() -> Option<String> {
    let url = std::env::var("KANON_SPARK_URL").ok().filter(|u| !u.is_empty());
    if url.is_none() {
        crate::util::missing("a Spark Connect server (KANON_SPARK_URL, which tests/spark.sh sets)");
    }
    url
}

/// The pseudonymization key of the runs here (read by jobs that pseudonymize).
const KEY: &str = "spark-test-key";

/// The exit code and stdout + stderr of `kanon ARGS` in `cwd`.
fn kanon(cwd: &Path, args: &[&str]) -> (i32, String) {
    let out = crate::util::kanon_env(cwd, args, &[("KANON_KEY", KEY)]);
    (out.code, out.both())
}

fn ok(cwd: &Path, args: &[&str]) -> String {
    let (code, out) = kanon(cwd, args);
    assert_eq!(code, 0, "kanon {args:?} failed:\n{out}");
    out
}

/// A job's body below `[source]` / `[output]` / `[engine]`: privacy, search, QIs.
struct Case {
    name: &'static str,
    /// The rows, as a Parquet file both engines read.
    parquet: PathBuf,
    body: String,
    /// The [output] lines beside the table and report (drop, pseudonymize).
    output: String,
    /// [engine] lines beside the kind and url (Spark's job only).
    engine: &'static str,
}

/// A session of our own, for what the tests do on Spark themselves.
fn session(dir: &Path, url: &str) -> kanon::engine::spark::Spark {
    let job = crate::util::engine_job(dir, "spark", url);
    kanon::engine::spark::Spark::connect(&job, job.engine.kind.url().unwrap()).unwrap()
}

/// Write the two jobs of `case`: (DuckDB, Spark) with `source` the Spark source lines.
fn jobs(dir: &Path, case: &Case, url: &str, spark_source: &str, spark_table: &str) -> (PathBuf, PathBuf) {
    let duck = format!(
        "[source]\nparquet = \"{}\"\n[output]\ndatabase = \"{}\"\ntable = \"release\"\nreport = \"{}\"\n{}\n{}",
        case.parquet.display(),
        dir.join(format!("{}.duckdb", case.name)).display(),
        dir.join(format!("{}-duckdb.json", case.name)).display(),
        case.output,
        case.body
    );
    let spark = format!(
        "[engine]\nkind = \"spark\"\nurl = \"{url}\"\n{}\n[source]\n{spark_source}\n[output]\ntable = \"{spark_table}\"\n\
         report = \"{}\"\n{}\n{}",
        case.engine,
        dir.join(format!("{}-spark.json", case.name)).display(),
        case.output,
        case.body
    );
    let (a, b) = (dir.join(format!("{}-duckdb.toml", case.name)), dir.join(format!("{}-spark.toml", case.name)));
    std::fs::write(&a, duck).unwrap();
    std::fs::write(&b, spark).unwrap();
    (a, b)
}

/// The rows of Spark table `table`, sorted.
fn spark_rows(spark: &kanon::engine::spark::Spark, table: &str) -> Vec<String> {
    let conn = Connection::open_in_memory().unwrap();
    // Another session (the run's) replaced the table: drop this session's cached file list.
    spark.execute(&format!("REFRESH TABLE {}", kanon::engine::spark::qualified(table))).unwrap();
    spark.fetch(&conn, &format!("SELECT * FROM {}", kanon::engine::spark::qualified(table)), "fetched").unwrap();
    sorted_rows(&conn, "fetched")
}

fn duckdb_rows(dir: &Path, case: &Case) -> Vec<String> {
    let conn = Connection::open(dir.join(format!("{}.duckdb", case.name))).unwrap();
    sorted_rows(&conn, "release")
}

/// Run `case` on both engines and compare; `table_source`: read it on Spark
/// as a catalog table made from the Parquet file, else as the file.
fn same_on_both(dir: &Path, url: &str, spark: &kanon::engine::spark::Spark, case: &Case, table_source: bool) {
    let out_table = format!("kanon_test_{}", case.name);
    let source = if table_source {
        let t = format!("kanon_test_{}_source", case.name);
        spark.execute(&format!("DROP TABLE IF EXISTS {t}")).unwrap();
        spark
            .execute(&format!("CREATE TABLE {t} USING parquet AS SELECT * FROM parquet.`{}`", case.parquet.display()))
            .unwrap();
        format!("table = \"{t}\"")
    } else {
        format!("parquet = \"{}\"", case.parquet.display())
    };
    let (duck, on_spark) = jobs(dir, case, url, &source, &out_table);
    let said_duck = ok(dir, &["run", duck.to_str().unwrap(), "--quiet"]);
    let said_spark = ok(dir, &["run", on_spark.to_str().unwrap(), "--quiet"]);
    let node = |s: &str| s.split(" at node ").nth(1).map(|t| t.split(':').next().unwrap().to_string());
    assert_eq!(node(&said_duck), node(&said_spark), "{}: nodes differ:\n{said_duck}\n{said_spark}", case.name);
    let (mut a, mut b) = (
        report(&dir.join(format!("{}-duckdb.json", case.name))),
        report(&dir.join(format!("{}-spark.json", case.name))),
    );
    if !case.engine.is_empty() {
        // Where the evaluator ran is all that may differ.
        let side = |r: &mut serde_json::Value| r.as_object_mut().and_then(|o| o.remove("evaluator"));
        assert_eq!(side(&mut b), Some("engine".into()), "{}: the evaluator on Spark", case.name);
        side(&mut a);
    }
    assert_eq!(a, b, "{}: reports differ", case.name);
    let (x, y) = (duckdb_rows(dir, case), spark_rows(spark, &out_table));
    assert!(!x.is_empty(), "{}: an empty release", case.name);
    assert_eq!(x.len(), y.len(), "{}: row counts differ", case.name);
    assert!(x == y, "{}: released rows differ (first: {:?} / {:?})", case.name, x.first(), y.first());
}

/// A CSV file (with a header) copied to Parquet by DuckDB; returns `parquet`.
fn csv_to_parquet(csv: &Path, delim: &str, parquet: &Path) -> PathBuf {
    Connection::open_in_memory()
        .unwrap()
        .execute_batch(&format!(
            "COPY (SELECT * FROM read_csv('{}', header = true, delim = '{delim}')) TO '{}' (FORMAT PARQUET)",
            csv.display(),
            parquet.display()
        ))
        .unwrap();
    parquet.to_path_buf()
}

/// The demo's patients as Parquet (DuckDB reads the CSV once).
fn demo(dir: &Path) -> Case {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/demo");
    let parquet = csv_to_parquet(&fixtures.join("patients.csv"), ",", &dir.join("patients.parquet"));
    let job = std::fs::read_to_string(fixtures.join("job.toml")).unwrap();
    let body = job[job.find("[privacy]").unwrap()..]
        .replace("hierarchies/education.csv", &fixtures.join("hierarchies/education.csv").display().to_string());
    Case { name: "demo", parquet, body, output: "drop = [\"name\", \"ssn\"]".into(), engine: "" }
}

/// `kanon generate`'s extract of `rows` rows as Parquet, with its job's QIs;
/// ℓ-diversity on the diagnosis and a class column.
fn generated(dir: &Path, rows: u64) -> Case {
    let db = dir.join("people.duckdb");
    let job = dir.join("people.toml");
    ok(
        dir,
        &[
            "generate",
            "--rows",
            &rows.to_string(),
            "--seed",
            "7",
            "--database",
            db.to_str().unwrap(),
            "--table",
            "people",
            "--job",
            job.to_str().unwrap(),
            "--quiet",
        ],
    );
    let parquet = dir.join("people.parquet");
    Connection::open(&db)
        .unwrap()
        .execute_batch(&format!("COPY people TO '{}' (FORMAT PARQUET)", parquet.display()))
        .unwrap();
    let text = std::fs::read_to_string(&job).unwrap();
    let qis = &text[text.find("[[quasi_identifiers]]").unwrap()..];
    let qis = qis.replace("\"hierarchies/", &format!("\"{}/hierarchies/", dir.display()));
    let body = format!(
        "[privacy]\nk = 5\nmax_suppression = 0.02\nl_diversity = {{ column = \"diagnosis\", l = 2 }}\n\
         [search]\nmetric = \"glm\"\nclass_column = \"sex\"\n{qis}"
    );
    Case { name: "generated", parquet, body, output: "drop = [\"row_id\"]".into(), engine: "" }
}

/// UCI Adult with its ARX hierarchies, when `../shared` has it.
fn adult(dir: &Path) -> Option<Case> {
    let root = crate::util::adult_dir()?;
    let parquet = csv_to_parquet(&root.join("adult.csv"), ";", &dir.join("adult.parquet"));
    let mut body = "[privacy]\nk = 5\nmax_suppression = 0.01\n[search]\nmetric = \"glm\"\n".to_string();
    for q in ["age", "education", "marital-status", "native-country", "occupation", "race", "sex", "workclass"] {
        body.push_str(&format!(
            "[[quasi_identifiers]]\ncolumn = \"{q}\"\nhierarchy = {{ file = \"{}\" }}\n",
            root.join(format!("hierarchy_{q}.csv")).display()
        ));
    }
    Some(Case { name: "adult", parquet, body, output: String::new(), engine: "" })
}

#[test]
fn the_demo_and_adult_are_the_same_on_spark() {
    let Some(url) = spark_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let spark = session(dir.path(), &url);
    same_on_both(dir.path(), &url, &spark, &demo(dir.path()), false);
    if let Some(case) = adult(dir.path()) {
        same_on_both(dir.path(), &url, &spark, &case, true);
    }
}

/// With `[engine] evaluator = "engine"` the base frequency set stays in
/// Spark and the search runs there (only histograms come back): the same
/// node, report and rows as DuckDB's in-memory search (top-down), with distinct and entropy ℓ-diversity, t-closeness, a class
/// label and suppressed classes.
#[test]
fn the_search_on_spark_itself_gives_duckdbs_node_report_and_rows() {
    let Some(url) = spark_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let spark = session(dir.path(), &url);
    // The demo by top-down (a query there costs Spark a second). Entropy ℓ and
    // t-closeness: each class's value list judged from the engine's text.
    let mut models = Case { name: "demo_models_there", engine: "evaluator = \"engine\"", ..demo(dir.path()) };
    models.body = models.body.replace("algorithm = \"incognito\"", "algorithm = \"topdown\"");
    models.body = models.body.replace(
        "l_diversity = { column = \"diagnosis\", l = 2 }",
        "l_diversity = { column = \"diagnosis\", l = 2, kind = \"entropy\" }\n\
         t_closeness = { column = \"diagnosis\", t = 0.4 }",
    );
    assert!(models.body.contains("t_closeness"));
    same_on_both(dir.path(), &url, &spark, &models, false);
    // The demo with a class label (cm's minority) from a catalog table.
    let mut demo = demo(dir.path());
    demo.body = demo.body.replace("algorithm = \"incognito\"", "algorithm = \"topdown\"\nclass_column = \"diagnosis\"");
    assert!(demo.body.contains("class_column"));
    same_on_both(
        dir.path(),
        &url,
        &spark,
        &Case { name: "demo_there", engine: "evaluator = \"engine\"", ..demo },
        true,
    );
}

#[test]
fn pseudonyms_are_the_same_on_spark_as_on_duckdb() {
    let Some(url) = spark_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let spark = session(dir.path(), &url);
    let mut case = demo(dir.path());
    case.name = "pseudonyms";
    case.output = "drop = [\"name\"]\npseudonymize = [\"id\", \"ssn\"]".into();
    same_on_both(dir.path(), &url, &spark, &case, false);
    // And they are HMAC-SHA-256 under the key (RFC 2104), as kanon's own crate computes it.
    let key = kanon::pseudonym::Key::new(KEY.as_bytes());
    let rows = duckdb_rows(dir.path(), &case);
    let first = rows.iter().find(|r| r.starts_with(&key.pseudonym(b"1"))).expect("id 1 is released");
    assert!(first.contains(&key.pseudonym(b"956-59-8119")), "{first}");
}

#[test]
fn the_demo_with_entropy_l_and_t_closeness_is_the_same_on_spark() {
    let Some(url) = spark_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let spark = session(dir.path(), &url);
    let mut case = demo(dir.path());
    case.body = case.body.replace(
        "l_diversity = { column = \"diagnosis\", l = 2 }",
        "l_diversity = { column = \"diagnosis\", l = 2, kind = \"entropy\" }\n\
         t_closeness = { column = \"diagnosis\", t = 0.4 }",
    );
    assert!(case.body.contains("t_closeness"));
    case.name = "demo_models";
    same_on_both(dir.path(), &url, &spark, &case, false);
    // `kanon check` reads Spark's tables there: the source's figures and the
    // release's (ℓ, t, risk) are DuckDB's.
    let check = |job: &str, table: &str| -> (i32, serde_json::Value) {
        let job = dir.path().join(job);
        let out =
            crate::util::kanon_env(dir.path(), &["check", job.to_str().unwrap(), "--table", table, "--json"], &[]);
        assert!(out.code == 0 || out.code == 4, "{}", out.show());
        let mut audit: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
        audit.as_object_mut().unwrap().remove("table");
        (out.code, audit)
    };
    let (a, b) =
        (check("demo_models-duckdb.toml", "release"), check("demo_models-spark.toml", "kanon_test_demo_models"));
    assert_eq!(a.0, 0, "{}", a.1);
    assert!(a.1["t_closeness"]["equal"].as_f64().is_some(), "{}", a.1);
    assert_eq!(a, b, "check of the release differs");
    let source = |job: &str| {
        let job = dir.path().join(job);
        let out = crate::util::kanon_env(dir.path(), &["check", job.to_str().unwrap(), "--json"], &[]);
        (out.code, out.stdout)
    };
    assert_eq!(source("demo_models-duckdb.toml"), source("demo_models-spark.toml"), "check of the source differs");
    // `kanon pareto` loads through the same seam: the same exact front.
    let front = |job: &str| {
        let (job, path) = (dir.path().join(job), dir.path().join(format!("{job}.front.json")));
        ok(dir.path(), &["pareto", job.to_str().unwrap(), "--json", path.to_str().unwrap(), "--quiet"]);
        let mut front: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        front.as_object_mut().unwrap().remove("seconds");
        front
    };
    let (a, b) = (front("demo_models-duckdb.toml"), front("demo_models-spark.toml"));
    assert!(a["front"].as_array().is_some_and(|f| !f.is_empty()), "{a}");
    assert_eq!(a, b, "the fronts differ");
}

#[test]
fn a_generated_extract_with_l_diversity_and_a_class_column_is_the_same_on_spark() {
    let Some(url) = spark_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let spark = session(dir.path(), &url);
    same_on_both(dir.path(), &url, &spark, &generated(dir.path(), 100_000), true);
    // With memory_rows under the base's rows the search runs on Spark, and
    // the kept sets of at most that many rows come back: the nodes above them
    // are rolled up here. A set whose classes cannot outgrow memory_rows (the
    // top-down dive's first) comes straight back, never written there. The same node, report and rows (k alone: with the
    // extra columns a kept set has a row per class and value, and fewer come back).
    let mut case = Case { name: "generated_kept_back", engine: "memory_rows = 4000", ..generated(dir.path(), 20_000) };
    case.body = case
        .body
        .lines()
        .filter(|l| !l.starts_with("l_diversity") && !l.starts_with("class_column"))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(!case.body.contains("l_diversity") && !case.body.contains("class_column"));
    same_on_both(dir.path(), &url, &spark, &case, false);
    let source = format!("parquet = \"{}\"", case.parquet.display());
    let (_, on_spark) = jobs(dir.path(), &case, &url, &source, "kanon_test_generated_kept_back");
    let traced = crate::util::kanon_env(
        dir.path(),
        &["run", on_spark.to_str().unwrap(), "--quiet"],
        &[("KANON_KEY", KEY), ("KANON_TRACE", "1")],
    );
    assert_eq!(traced.code, 0, "{}", traced.both());
    assert!(traced.stderr.contains("left on the engine: true"), "{}", traced.stderr);
    assert!(traced.stderr.contains(" sets kept here in "), "no kept set came straight back:\n{}", traced.stderr);
    assert!(traced.stderr.contains(" nodes here "), "no node rolled up here:\n{}", traced.stderr);
    // DuckDB's node given: its set is kept and comes back, and its suppressed
    // classes are found here and their labels sent. The same rows again.
    let chosen = report(&dir.path().join("generated_kept_back-duckdb.json"))["node"].clone();
    let spec = chosen.as_object().unwrap().iter().map(|(q, l)| format!("{q}={l}")).collect::<Vec<_>>().join(",");
    let given = crate::util::kanon_env(
        dir.path(),
        &["run", on_spark.to_str().unwrap(), "--quiet", "--node", &spec],
        &[("KANON_KEY", KEY), ("KANON_TRACE", "1")],
    );
    assert_eq!(given.code, 0, "{}", given.both());
    assert!(given.stderr.contains(" suppressed classes here"), "{}", given.stderr);
    assert_eq!(spark_rows(&spark, "kanon_test_generated_kept_back"), duckdb_rows(dir.path(), &case));
}

#[test]
fn spark_settings_are_checked() {
    let Some(url) = spark_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let case = demo(dir.path());
    let job = |name: &str, engine: &str, source: &str, body: &str| {
        let path = dir.path().join(name);
        std::fs::write(
            &path,
            format!("{engine}\n[source]\n{source}\n[output]\ntable = \"kanon_test_checked\"\n{body}"),
        )
        .unwrap();
        path
    };
    let engine = format!("[engine]\nkind = \"spark\"\nurl = \"{url}\"");
    let parquet = format!("parquet = \"{}\"", case.parquet.display());
    // A list column: no hierarchy reads it.
    let lists = dir.path().join("lists.parquet");
    Connection::open_in_memory()
        .unwrap()
        .execute_batch(&format!("COPY (SELECT [1, 2] AS tags, 'a' AS x) TO '{}' (FORMAT PARQUET)", lists.display()))
        .unwrap();
    let listed = format!("parquet = \"{}\"", lists.display());
    let cases = [
        (
            job("down.toml", "[engine]\nkind = \"spark\"\nurl = \"sc://127.0.0.1:1\"", "table = \"x\"", &case.body),
            "[engine] url",
        ),
        (job("missing.toml", &engine, "table = \"kanon_no_such_table\"", &case.body), "not found in Spark's catalog"),
        (
            job("column.toml", &engine, &parquet, &case.body.replace("\"sex\"", "\"gender\"")),
            "\"gender\" is not a column",
        ),
        (
            job("scheme.toml", &engine, &parquet, &case.body.replace("[search]", "[search]\nscheme = \"gsps\"")),
            "full-domain",
        ),
        (
            job(
                "list.toml",
                &engine,
                &listed,
                "[privacy]\nk = 2\n[[quasi_identifiers]]\ncolumn = \"tags\"\nhierarchy = \"suppress\"\n",
            ),
            "quasi-identifier \"tags\" has Spark type array<int>,",
        ),
    ];
    for (path, says) in &cases {
        let (code, out) = kanon(dir.path(), &["run", path.to_str().unwrap(), "--quiet"]);
        assert_eq!(code, 2, "{}: {out}", path.display());
        assert!(out.contains(says), "{}: expected \"{says}\" in: {out}", path.display());
    }
}

#[test]
fn a_killed_spark_run_leaves_the_previous_release() {
    let Some(url) = spark_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let spark = session(dir.path(), &url);
    let case = demo(dir.path());
    let table = "kanon_test_killed";
    let source = format!("parquet = \"{}\"", case.parquet.display());
    let (duck, on_spark) = jobs(dir.path(), &case, &url, &source, table);
    ok(dir.path(), &["run", duck.to_str().unwrap(), "--quiet"]);
    let full = duckdb_rows(dir.path(), &case);
    // A previous release to keep: a table of other rows.
    spark.execute(&format!("DROP TABLE IF EXISTS {table}")).unwrap();
    spark.execute(&format!("CREATE TABLE {table} USING parquet AS SELECT 1 AS previous")).unwrap();
    let previous = spark_rows(&spark, table);
    let mut finished = false;
    for delay_ms in [300u64, 1500, 3000, 4500, 6000, 9000, 15000] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_kanon"))
            .args(["run", on_spark.to_str().unwrap(), "--quiet"])
            .current_dir(dir.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        let _ = child.kill(); // SIGKILL
        let status = child.wait().unwrap();
        let exists = |t: &str| {
            let conn = Connection::open_in_memory().unwrap();
            spark.fetch(&conn, &format!("SHOW TABLES LIKE '{t}'"), "shown").unwrap();
            conn.query_row("SELECT count(*) FROM shown", [], |r| r.get::<_, i64>(0)).unwrap() > 0
        };
        if exists(table) {
            let now = spark_rows(&spark, table);
            assert!(now == previous || now == full, "after a kill at {delay_ms} ms: a release neither old nor new");
            finished |= now == full && status.success();
            if now == full {
                break;
            }
        } else {
            // Killed between the swap's two renames: the previous release waits under its own name.
            assert!(exists(&format!("{table}__kanon_previous")), "after a kill at {delay_ms} ms: no release at all");
            spark.recover(table).unwrap();
            assert_eq!(spark_rows(&spark, table), previous);
        }
    }
    // Whatever the kills left, a run to the end publishes the full release.
    if !finished {
        ok(dir.path(), &["run", on_spark.to_str().unwrap(), "--quiet"]);
    }
    assert_eq!(spark_rows(&spark, table), full);
    // As if killed between the swap's two renames: `kanon check` only reads
    // (it renames nothing back), nor does a run that stops before its
    // release (k above the rows: exit 2); the next release puts it back first.
    spark.execute(&format!("ALTER TABLE {table} RENAME TO {table}__kanon_previous")).unwrap();
    let (code, out) = kanon(dir.path(), &["check", on_spark.to_str().unwrap(), "--table", table]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("not found"), "{out}");
    let (code, out) = kanon(dir.path(), &["run", on_spark.to_str().unwrap(), "--quiet", "--k", "1000000"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("k = 1000000 is above the number of rows"), "{out}");
    assert!(!spark.exists(table).unwrap(), "a read-only or failed command renamed a table");
    assert_eq!(spark_rows(&spark, &format!("{table}__kanon_previous")), full);
    ok(dir.path(), &["run", on_spark.to_str().unwrap(), "--quiet"]);
    assert_eq!(spark_rows(&spark, table), full);
    assert!(!spark.exists(&format!("{table}__kanon_previous")).unwrap());
}

/// The release is compared with the source as Spark's catalog resolves both: another spelling
/// of the source (`spark_catalog.default.t`, other case) is refused with exit 2 before anything
/// is read, and so is a source named like the swap's own tables.
#[test]
fn a_spark_release_never_replaces_its_source() {
    let Some(url) = spark_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let spark = session(dir.path(), &url);
    let case = demo(dir.path());
    let source = "kanon_test_ident_source";
    spark.execute(&format!("DROP TABLE IF EXISTS {source}")).unwrap();
    spark
        .execute(&format!("CREATE TABLE {source} USING parquet AS SELECT * FROM parquet.`{}`", case.parquet.display()))
        .unwrap();
    let before = spark_rows(&spark, source);
    for release in
        [format!("spark_catalog.default.{source}"), format!("default.{}", source.to_uppercase()), source.to_string()]
    {
        let (_, job) = jobs(dir.path(), &case, &url, &format!("table = \"{source}\""), &release);
        let (code, out) = kanon(dir.path(), &["run", job.to_str().unwrap(), "--quiet"]);
        assert_eq!(code, 2, "{release}: {out}");
        assert!(out.contains("is the source table"), "{release}: {out}");
        assert_eq!(spark_rows(&spark, source), before, "{release}: the source changed");
    }
    let (_, job) = jobs(dir.path(), &case, &url, &format!("table = \"{source}\""), source.trim_end_matches("_source"));
    let side = format!("{}__kanon_previous", source.trim_end_matches("_source"));
    spark.execute(&format!("DROP TABLE IF EXISTS {side}")).unwrap();
    spark.execute(&format!("ALTER TABLE {source} RENAME TO {side}")).unwrap();
    std::fs::write(
        &job,
        std::fs::read_to_string(&job).unwrap().replace(&format!("\"{source}\""), &format!("\"{side}\"")),
    )
    .unwrap();
    let (code, out) = kanon(dir.path(), &["run", job.to_str().unwrap(), "--quiet"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("swap names its own tables"), "{out}");
    assert_eq!(spark_rows(&spark, &side), before);
    spark.execute(&format!("DROP TABLE IF EXISTS {side}")).unwrap();
}

/// A failure between the swap's two renames (injected: a connection lost there) renames the
/// previous release back: readers see it, whole, under the release's name; nothing is left
/// beside it. A failure after a complete swap is undone as well (the history's row: its table
/// made unwritable).
#[test]
fn a_failed_spark_swap_leaves_the_previous_release() {
    let Some(url) = spark_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let spark = session(dir.path(), &url);
    let case = demo(dir.path());
    // A namespace of its own: its kanon_runs is made unwritable below.
    spark.execute("CREATE DATABASE IF NOT EXISTS kanon_swap_ns").unwrap();
    let table = "kanon_swap_ns.kanon_test_swap_fails";
    let source = format!("parquet = \"{}\"", case.parquet.display());
    let (_, on_spark) = jobs(dir.path(), &case, &url, &source, table);
    spark.execute(&format!("DROP TABLE IF EXISTS {table}")).unwrap();
    spark.execute("DROP VIEW IF EXISTS kanon_swap_ns.kanon_runs").unwrap();
    spark.execute(&format!("CREATE TABLE {table} USING parquet AS SELECT 1 AS previous")).unwrap();
    let previous = spark_rows(&spark, table);
    let out = crate::util::kanon_env(
        dir.path(),
        &["run", on_spark.to_str().unwrap(), "--quiet"],
        &[("KANON_KEY", KEY), ("KANON_FAULT", "spark-between-renames")],
    );
    assert_eq!(out.code, 1, "{}", out.show());
    assert!(out.stderr.contains("injected fault"), "{}", out.show());
    assert_eq!(spark_rows(&spark, table), previous);
    let conn = Connection::open_in_memory().unwrap();
    spark.fetch(&conn, "SHOW TABLES IN kanon_swap_ns LIKE 'kanon_test_swap_fails*'", "shown").unwrap();
    let left: Vec<String> = {
        let mut stmt = conn.prepare("SELECT tableName FROM shown WHERE NOT isTemporary ORDER BY 1").unwrap();
        stmt.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
    };
    assert_eq!(left, ["kanon_test_swap_fails"], "the swap left tables beside the release");
    // The history's table in the way (a view of that name): its row cannot be appended, and the
    // finished swap is undone.
    spark.execute("DROP TABLE IF EXISTS kanon_swap_ns.kanon_runs").unwrap();
    spark.execute("CREATE OR REPLACE VIEW kanon_swap_ns.kanon_runs AS SELECT 1 AS x").unwrap();
    let (code, out) = kanon(dir.path(), &["run", on_spark.to_str().unwrap(), "--quiet"]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(spark_rows(&spark, table), previous, "{out}");
    spark.execute("DROP VIEW IF EXISTS kanon_swap_ns.kanon_runs").unwrap();
    // Without it, the run goes through.
    ok(dir.path(), &["run", on_spark.to_str().unwrap(), "--quiet"]);
    assert_ne!(spark_rows(&spark, table), previous);
}

/// Each run appends its row to `kanon_runs` beside the release on Spark, and `kanon history`
/// reads it back: the same figures as DuckDB's history of the same job. A view over the
/// release reads the new night's rows after the swap.
#[test]
fn the_run_history_is_kept_on_spark_and_views_follow_the_swap() {
    let Some(url) = spark_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let spark = session(dir.path(), &url);
    let mut case = demo(dir.path());
    case.name = "history";
    let table = "kanon_test_history";
    spark.execute("DROP TABLE IF EXISTS kanon_runs").unwrap();
    spark.execute(&format!("DROP TABLE IF EXISTS {table}")).unwrap();
    let source = format!("parquet = \"{}\"", case.parquet.display());
    let (duck, on_spark) = jobs(dir.path(), &case, &url, &source, table);
    for job in [&duck, &on_spark] {
        ok(dir.path(), &["run", job.to_str().unwrap(), "--quiet"]);
    }
    spark
        .execute(&format!("CREATE OR REPLACE VIEW kanon_test_history_count AS SELECT count(*) AS n FROM {table}"))
        .unwrap();
    for job in [&duck, &on_spark] {
        ok(dir.path(), &["run", job.to_str().unwrap(), "--quiet", "--k", "5"]);
    }
    let history = |job: &Path| -> Vec<serde_json::Value> {
        let out = ok(dir.path(), &["history", job.to_str().unwrap(), "--json"]);
        let runs: Vec<serde_json::Value> = serde_json::from_str(out.trim()).unwrap();
        runs.into_iter()
            .map(|mut r| {
                for key in ["started_at", "seconds", "job", "job_sha256", "source", "output_table"] {
                    r.as_object_mut().unwrap().remove(key);
                }
                r
            })
            .collect()
    };
    let (a, b) = (history(&duck), history(&on_spark));
    assert_eq!(a.len(), 2, "{a:?}");
    assert_eq!(a, b, "the histories differ");
    let conn = Connection::open_in_memory().unwrap();
    // This session read the release before the run replaced it: its cached file list goes.
    spark.execute(&format!("REFRESH TABLE {table}")).unwrap();
    spark.fetch(&conn, "SELECT n FROM kanon_test_history_count", "n").unwrap();
    let n: i64 = conn.query_row("SELECT n FROM n", [], |r| r.get(0)).unwrap();
    assert_eq!(n as usize, spark_rows(&spark, table).len());
    assert_eq!(n as usize, duckdb_rows(dir.path(), &case).len());
    spark.execute("DROP VIEW IF EXISTS kanon_test_history_count").unwrap();
    spark.execute("DROP TABLE IF EXISTS kanon_runs").unwrap();
}

/// The value maps and suppressed classes go to Spark in parts when they are larger than a
/// message may be (the part size lowered here to a few KB: dozens of parts): the same release.
#[test]
fn small_tables_go_to_spark_in_parts() {
    let Some(url) = spark_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let spark = session(dir.path(), &url);
    let mut case = generated(dir.path(), 20_000);
    case.name = "parts";
    let table = "kanon_test_parts";
    let source = format!("parquet = \"{}\"", case.parquet.display());
    let (duck, on_spark) = jobs(dir.path(), &case, &url, &source, table);
    ok(dir.path(), &["run", duck.to_str().unwrap(), "--quiet"]);
    let out = crate::util::kanon_env(
        dir.path(),
        &["run", on_spark.to_str().unwrap(), "--quiet"],
        &[("KANON_KEY", KEY), ("KANON_SPARK_MESSAGE_BYTES", "4096"), ("KANON_TRACE", "1")],
    );
    assert_eq!(out.code, 0, "{}", out.show());
    let suppressed = report(&dir.path().join("parts-duckdb.json"))["suppressed"].as_i64().unwrap();
    assert!(suppressed > 100, "too few suppressed classes to need parts: {suppressed}");
    assert_eq!(report(&dir.path().join("parts-duckdb.json")), report(&dir.path().join("parts-spark.json")));
    assert!(duckdb_rows(dir.path(), &case) == spark_rows(&spark, table), "released rows differ");
}

#[test]
fn decimals_timestamps_doubles_and_booleans_key_the_same_rows_on_spark() {
    let Some(url) = spark_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let spark = session(dir.path(), &url);
    // Every class of the leaf node has 4 rows: the release keeps them all only
    // if each value finds itself in the value maps Spark joins.
    let parquet = dir.path().join("types.parquet");
    Connection::open_in_memory()
        .unwrap()
        .execute_batch(&format!(
            "COPY (SELECT i AS id, ((i % 50) * 1.25)::DECIMAL(6,2) AS d,
                   TIMESTAMP '2024-02-29 13:45:00.123456' + INTERVAL (i % 50) HOUR AS ts,
                   to_timestamp(978307200 + (i % 50) * 86400.5) AS tz,
                   (i % 50) / 7.0 AS f, i % 2 = 0 AS b, ['x', 'y'][1 + i % 2] AS t
                   FROM range(200) r(i)) TO '{}' (FORMAT PARQUET)",
            parquet.display()
        ))
        .unwrap();
    let mut body = "[privacy]\nk = 4\nmax_suppression = 1.0\n".to_string();
    for q in ["d", "ts", "tz", "f", "b"] {
        body.push_str(&format!("[[quasi_identifiers]]\ncolumn = \"{q}\"\nhierarchy = \"suppress\"\n"));
    }
    let case = Case { name: "types", parquet, body, output: String::new(), engine: "" };
    let source = format!("parquet = \"{}\"", case.parquet.display());
    let (duck, on_spark) = jobs(dir.path(), &case, &url, &source, "kanon_test_types");
    for job in [&duck, &on_spark] {
        ok(dir.path(), &["run", job.to_str().unwrap(), "--quiet", "--node", "d=0,ts=0,tz=0,f=0,b=0"]);
    }
    let (x, y) = (duckdb_rows(dir.path(), &case), spark_rows(&spark, "kanon_test_types"));
    assert_eq!(x.len(), 200, "the leaf node keeps every row");
    assert_eq!(x, y);
    assert_eq!(report(&dir.path().join("types-duckdb.json")), report(&dir.path().join("types-spark.json")));
}

/// A Spark Connect URL's token is a secret: a message that quotes the URL masks it (here the
/// endpoint does not answer; no server is needed).
#[test]
fn a_spark_token_is_never_shown() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("job.toml");
    std::fs::write(
        &job,
        "[engine]\nkind = \"spark\"\nurl = \"sc://127.0.0.1:1/;token=sekrit-7f3a;user_id=kanon\"\n\
         [source]\ntable = \"t\"\n[output]\ntable = \"o\"\n[privacy]\nk = 2\n\
         [[quasi_identifiers]]\ncolumn = \"a\"\nhierarchy = \"suppress\"\n",
    )
    .unwrap();
    for args in [vec!["run", "job.toml"], vec!["check", "job.toml"], vec!["history", "job.toml"]] {
        let (code, out) = kanon(dir.path(), &args);
        assert_eq!(code, 2, "{args:?}: {out}");
        assert!(out.contains("[engine] url") && out.contains("token=***"), "{args:?}: {out}");
        assert!(!out.contains("sekrit-7f3a"), "{args:?}: the token was shown: {out}");
    }
    std::fs::write(&job, std::fs::read_to_string(&job).unwrap().replace("sc://", "http://")).unwrap();
    let (code, out) = kanon(dir.path(), &["run", "job.toml"]);
    assert_eq!(code, 2, "{out}");
    assert!(!out.contains("sekrit-7f3a"), "the token was shown: {out}");
    let parsed = kanon::job::Job::load(&dir.path().join("job.toml"));
    assert!(parsed.is_err());
    std::fs::write(&job, std::fs::read_to_string(&job).unwrap().replace("http://", "sc://")).unwrap();
    let parsed = kanon::job::Job::load(&job).unwrap();
    assert!(!format!("{parsed:?}").contains("sekrit-7f3a"), "Debug shows the token");
}

/// Spark ends a result stream after `senderMaxStreamDuration` (tests/spark.sh sets 1 s) without
/// its ResultComplete, for the client to reattach where it left off; the vendored Spark client
/// reattaches (vendor/apache-spark-connect-core). A query with nothing to send for seconds, one
/// whose rows come over several streams, and a command, each running seconds, arrive whole.
#[test]
fn a_result_longer_than_the_servers_stream_arrives_whole() {
    let Some(url) = spark_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let spark = session(dir.path(), &url);
    let conn = Connection::open_in_memory().unwrap();
    let local = |select: &str| -> String { conn.query_row(select, [], |r| r.get(0)).unwrap() };
    // One row, after seconds of counting 40,000² pairs.
    let pairs = "SELECT count(*) AS n FROM range(40000) a CROSS JOIN range(40000) b";
    assert_eq!(spark.fetch(&conn, pairs, "pairs").unwrap(), 1, "the count never came");
    assert_eq!(local("SELECT n::VARCHAR FROM pairs"), "1600000000");
    // 20 rows, each sent when its partition (10^8 ids scanned) is done: over several streams.
    let every = "SELECT id FROM range(0, 2000000000, 1, 20) WHERE id % 100000000 = 0";
    let whole = "20 20 19000000000";
    spark.fetch(&conn, every, "every").unwrap();
    assert_eq!(local("SELECT format('{} {} {}', count(*), count(DISTINCT id), sum(id)) FROM every"), whole);
    // A command returns when its table is whole.
    spark.execute("DROP TABLE IF EXISTS kanon_test_stream").unwrap();
    spark.execute(&format!("CREATE TABLE kanon_test_stream USING parquet AS {every}")).unwrap();
    let made = "SELECT count(*) AS n, count(DISTINCT id) AS d, sum(id) AS s FROM kanon_test_stream";
    spark.fetch(&conn, made, "made").unwrap();
    assert_eq!(local("SELECT format('{} {} {}', n, d, s) FROM made"), whole);
    spark.execute("DROP TABLE kanon_test_stream").unwrap();
}

/// `kanon limit` on Spark measures there: the GROUP BY of the QIs (a cached
/// work table) and the plain recode-and-write (a Parquet table of the
/// catalog, dropped after) run on Spark, over the source's rows and QI
/// combinations as DuckDB's limit counts them; DuckDB's fallbacks are
/// refused (exit 2, naming the flag).
#[test]
fn limit_runs_on_spark_with_the_counts_of_duckdbs() {
    let Some(url) = spark_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let spark = session(dir.path(), &url);
    let mut case = demo(dir.path());
    case.name = "limit";
    let table = "kanon_test_limit";
    let (duck, on_spark) = jobs(dir.path(), &case, &url, &format!("parquet = \"{}\"", case.parquet.display()), table);
    let node = "zip=2,age=3,birth_date=3,sex=0,education=2";
    let limit = |job: &Path| -> serde_json::Value {
        let out = ok(dir.path(), &["limit", job.to_str().unwrap(), "--node", node, "--quiet"]);
        serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
    };
    let (a, b) = (limit(&duck), limit(&on_spark));
    assert_eq!(b["rows"], 74, "{b}");
    assert_eq!(a["rows"], b["rows"]);
    assert!(b["combinations"].as_i64().is_some_and(|c| c > 1), "{b}");
    assert_eq!(a["combinations"], b["combinations"]);
    assert_eq!((b["group_by"].as_str(), b["written_as"].as_str()), (Some("group_by"), Some("table")));
    let sum = b["group_by_seconds"].as_f64().unwrap() + b["write_seconds"].as_f64().unwrap();
    assert!((b["total_seconds"].as_f64().unwrap() - sum).abs() < 1e-9, "{b}");
    assert!(b["maps_write_seconds"].is_null() && b["maps_total_seconds"].is_null(), "{b}");
    // The limit's table is gone, and no release was written.
    for name in [format!("{table}__kanon_limit"), table.to_string()] {
        assert!(!spark.exists(&name).unwrap(), "{name} left behind");
    }
    for flag in ["--hashed", "--scan"] {
        let (code, out) = kanon(dir.path(), &["limit", on_spark.to_str().unwrap(), "--node", node, "--quiet", flag]);
        assert_eq!(code, 2, "{flag}: {out}");
        assert!(out.contains(flag) && out.contains("Spark"), "{flag}: {out}");
    }
}

/// Every built-in hierarchy kind at every level, and a file hierarchy with a NULL leaf: the
/// labels Spark's release writes (by its expressions, or its maps where the trace says so) are
/// the ones DuckDB's release writes, row for row; and with suppressed classes (k > 1) the
/// anti-join on their labels leaves out the rows DuckDB leaves out, with the same report.
#[test]
fn every_hierarchy_kind_releases_duckdbs_labels_on_spark() {
    use crate::util::{check_every_kind_recoding, every_kind, every_kind_node};
    let Some(url) = spark_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let spark = session(dir.path(), &url);
    let (parquet, qis) = every_kind(dir.path());
    let table = "kanon_test_kinds";
    let source = format!("parquet = \"{}\"", parquet.display());
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
        let case = Case {
            name: "kinds",
            parquet: parquet.clone(),
            body: format!("[privacy]\nk = {k}\nmax_suppression = 1.0\n{qis}"),
            output: String::new(),
            engine: "",
        };
        let (duck, on_spark) = jobs(dir.path(), &case, &url, &source, table);
        ok(dir.path(), &["run", duck.to_str().unwrap(), "--quiet", "--node", &node]);
        let out = crate::util::kanon_env(
            dir.path(),
            &["run", on_spark.to_str().unwrap(), "--quiet", "--node", &node],
            &[("KANON_KEY", KEY), ("KANON_TRACE", "1"), ("KANON_DROPPED_THERE", if there { "1" } else { "" })],
        );
        assert_eq!(out.code, 0, "{node}: {}", out.show());
        if let Some(level) = level {
            check_every_kind_recoding(&out.stderr, level);
        }
        // Read there, each QI's labels of the suppressed classes come back by their codes.
        assert_eq!(out.stderr.contains("labels of QI 0 among the suppressed classes"), there, "{node}");
        let (a, b) = (report(&dir.path().join("kinds-duckdb.json")), report(&dir.path().join("kinds-spark.json")));
        assert_eq!(a, b, "k = {k}, {node}: reports differ");
        let suppressed = a["suppressed"].as_u64().unwrap();
        assert_eq!(suppressed == 0, k == 1, "k = {k}, {node}: {suppressed} suppressed");
        assert!(suppressed < 400, "k = {k}, {node}: everything suppressed");
        let (x, y) = (duckdb_rows(dir.path(), &case), spark_rows(&spark, table));
        assert_eq!(x.len() as u64, 400 - suppressed);
        assert!(x == y, "k = {k}, {node}: released rows differ (first: {:?} / {:?})", x.first(), y.first());
    }
}

/// `[privacy] person` on Spark: DuckDB's node, report and rows (the pairs
/// come back, the dropped persons go there as a table).
#[test]
fn persons_give_duckdbs_node_report_and_rows_on_spark() {
    let Some(url) = spark_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let spark = session(dir.path(), &url);
    let (parquet, body) = crate::util::visits_case(dir.path());
    let case = Case { name: "persons", parquet, body, output: "drop = [\"member\"]".into(), engine: "" };
    same_on_both(dir.path(), &url, &spark, &case, true);
    let report = crate::util::engine_report(&dir.path().join("persons-spark.json"));
    assert!(report["suppressed_persons"].as_u64().unwrap() > 0, "some person is dropped: {report}");
    // kanon check counts the source's persons there: DuckDB's audit.
    let check = |job: &str| {
        let out = crate::util::kanon(dir.path(), &["check", job, "--json"]);
        (out.code, out.stdout)
    };
    let (a, b) = (check("persons-duckdb.toml"), check("persons-spark.toml"));
    assert_eq!(a, b);
    assert!(a.1.contains("\"persons\": 303"), "{}", a.1);
    // Integer persons (coded by arithmetic on DuckDB, by the code table there): DuckDB's too.
    let (parquet, body) = crate::util::visits_case_integer(dir.path());
    let case = Case { name: "persons_int", parquet, body, output: "drop = [\"member\"]".into(), engine: "" };
    same_on_both(dir.path(), &url, &spark, &case, true);
    let report = crate::util::engine_report(&dir.path().join("persons_int-spark.json"));
    assert!(report["suppressed_persons"].as_u64().unwrap() > 0, "some person is dropped: {report}");
}

/// With the engine evaluator: `kanon check` measures the classes on Spark
/// (the source failing, the release meeting the job; ℓ and t on one column,
/// then on two, each with its own lists), its text and exit-4 lines
/// DuckDB's; `kanon pareto`'s exact front, a reused node and a drift are
/// DuckDB's.
#[test]
fn check_pareto_and_reuse_run_on_spark_with_the_engine_evaluator() {
    let Some(url) = spark_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let spark = session(dir.path(), &url);
    let mut case = Case { name: "audit_there", engine: "evaluator = \"engine\"\nmemory_rows = 0", ..demo(dir.path()) };
    case.body = case.body.replace("algorithm = \"incognito\"", "algorithm = \"topdown\"").replace(
        "l_diversity = { column = \"diagnosis\", l = 2 }",
        "l_diversity = { column = \"diagnosis\", l = 2, kind = \"entropy\" }\n\
         t_closeness = { column = \"diagnosis\", t = 0.4 }",
    );
    assert!(case.body.contains("t_closeness"));
    same_on_both(dir.path(), &url, &spark, &case, false);
    let (duck, on_spark) = (dir.path().join("audit_there-duckdb.toml"), dir.path().join("audit_there-spark.toml"));
    let check = |job: &Path, extra: &[&str]| -> (i32, String, String) {
        let out = crate::util::kanon_env(dir.path(), &[&["check", job.to_str().unwrap()], extra].concat(), &[]);
        assert!(out.code == 0 || out.code == 4, "{}", out.show());
        let text = out.stdout.replacen("kanon_test_audit_there", "release", 1);
        (out.code, text, out.stderr.replace("kanon_test_audit_there", "release"))
    };
    let same = |what: &str| {
        let a = check(&duck, &[]);
        assert_eq!(a.0, 4, "{}", a.1);
        assert_eq!(a, check(&on_spark, &[]), "{what}: check of the source differs");
        let a = check(&duck, &["--table", "release"]);
        assert_eq!(a, check(&on_spark, &["--table", "kanon_test_audit_there"]), "{what}: check of the release differs");
        a
    };
    let release = same("one column");
    assert_eq!(release.0, 0, "{}", release.1);
    // t-closeness on the ids: ℓ's lists and t's come back apart.
    for job in [&duck, &on_spark] {
        let text = std::fs::read_to_string(job).unwrap();
        std::fs::write(job.with_extension("one.toml"), &text).unwrap();
        let text = text
            .replace("t_closeness = { column = \"diagnosis\", t = 0.4 }", "t_closeness = { column = \"id\", t = 0.5 }");
        assert!(text.contains("column = \"id\""));
        std::fs::write(job, text).unwrap();
    }
    let release = same("two columns");
    assert!(release.1.contains("t on \"id\""), "{}", release.1);
    // Pareto and reuse with distinct ℓ: value lists for every node of the
    // lattice take Spark minutes (the memory evaluator's front with them is
    // the_demo_with_entropy_l_and_t_closeness_is_the_same_on_spark's).
    for job in [&duck, &on_spark] {
        let text = std::fs::read_to_string(job.with_extension("one.toml")).unwrap().replace(", kind = \"entropy\"", "");
        let text: Vec<&str> = text.lines().filter(|l| !l.starts_with("t_closeness")).collect();
        std::fs::write(job, text.join("\n")).unwrap();
    }

    // The exact front of k and the loss, judged there.
    let front = |job: &Path| {
        let path = job.with_extension("front.json");
        ok(dir.path(), &["pareto", job.to_str().unwrap(), "--json", path.to_str().unwrap(), "--quiet"]);
        let mut front: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        front.as_object_mut().unwrap().remove("seconds");
        front
    };
    let a = front(&duck);
    assert!(a["front"].as_array().is_some_and(|f| f.len() > 1), "{a}");
    assert_eq!(a, front(&on_spark), "the fronts differ");

    // The next night, the same rows: the node is reused on both.
    for job in [&duck, &on_spark] {
        let text = std::fs::read_to_string(job).unwrap().replace("[search]\n", "[search]\nreuse = \"previous\"\n");
        std::fs::write(job, text).unwrap();
    }
    let night = |job: &Path, report_file: &str| {
        ok(dir.path(), &["run", job.to_str().unwrap(), "--quiet"]);
        let mut r = report(&dir.path().join(report_file));
        r.as_object_mut().unwrap().remove("evaluator");
        r
    };
    let a = night(&duck, "audit_there-duckdb.json");
    assert_eq!(a["reused"], true, "{a}");
    assert_eq!(a, night(&on_spark, "audit_there-spark.json"), "the reused nights differ");
    // Then the first 12 rows (no record may be suppressed): the node drifts, a search follows.
    let first = dir.path().join("first.parquet");
    Connection::open_in_memory()
        .unwrap()
        .execute_batch(&format!(
            "COPY (SELECT * FROM '{}' WHERE id <= 12) TO '{}' (FORMAT PARQUET)",
            case.parquet.display(),
            first.display()
        ))
        .unwrap();
    std::fs::rename(&first, &case.parquet).unwrap();
    let a = night(&duck, "audit_there-duckdb.json");
    assert_eq!(a["reused"], false, "{a}");
    assert!(a["drift"]["failed"].is_string(), "{a}");
    assert_eq!(a, night(&on_spark, "audit_there-spark.json"), "the drifting nights differ");
}

/// Risk limits on Spark (the base set comes back: the memory evaluator judges
/// them): DuckDB's node, report and rows.
#[test]
fn risk_limits_give_duckdbs_node_report_and_rows_on_spark() {
    let Some(url) = spark_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let spark = session(dir.path(), &url);
    let mut case = generated(dir.path(), 3000);
    case.name = "limits";
    case.body = case.body.replace(
        "k = 5\nmax_suppression = 0.02\nl_diversity = { column = \"diagnosis\", l = 2 }\n",
        "k = 1\nmax_suppression = 0.05\naverage_risk = 0.1\nsample_uniqueness = 0.02\n",
    );
    assert!(case.body.contains("average_risk"), "{}", case.body);
    same_on_both(dir.path(), &url, &spark, &case, true);
    let report = crate::util::engine_report(&dir.path().join("limits-spark.json"));
    assert_eq!(report["risk_limits"]["holds"], true, "{report}");
}
