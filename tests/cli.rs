//! End-to-end tests of the `kanon` binary.
//!
//! Every test works in its own temporary directory (tests run in parallel and must not share
//! outputs), runs the real binary, and checks its results independently: release tables are
//! re-measured with plain SQL through the `duckdb` crate, reports are read with `serde_json`.

use std::fs;
use std::path::{Path, PathBuf};

use duckdb::{AccessMode, Config, Connection};
use serde_json::Value as Json;
use tempfile::TempDir;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// Rows in `fixtures/demo/patients.csv`.
const DEMO_ROWS: i64 = 74;
/// The demo job's quasi-identifiers, in job order.
const DEMO_QIS: [&str; 5] = ["zip", "age", "birth_date", "sex", "education"];
/// A column name that breaks any SQL built by pasting identifiers without quoting them.
const HOSTILE: &str = r#"a"; DROP TABLE x; --"#;

use crate::util::{kanon, kanon_env, manifest_dir, Out};

fn assert_ok(out: &Out) {
    assert_eq!(out.code, 0, "kanon failed:\n{}", out.show());
}

/// Asserts the exit code and that stderr mentions every needle.
fn assert_fails(out: &Out, code: i32, needles: &[&str]) {
    assert_eq!(out.code, code, "expected exit {code}:\n{}", out.show());
    assert!(!out.stderr.trim().is_empty(), "a failure must explain itself on stderr:\n{}", out.show());
    for needle in needles {
        assert!(out.stderr.contains(needle), "stderr should mention {needle:?}:\n{}", out.show());
    }
}

fn write(path: &Path, contents: impl AsRef<[u8]>) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, contents).unwrap();
}

fn fixtures() -> PathBuf {
    manifest_dir().join("fixtures")
}

/// Copies `fixtures/<from>` to `<dir>/<to>`.
fn copy_fixture(from: &str, dir: &Path, to: &str) {
    write(&dir.join(to), fs::read(fixtures().join(from)).unwrap());
}

fn read_json(path: &Path) -> Json {
    let bytes = fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

fn int(v: &Json, key: &str) -> i64 {
    v[key].as_i64().unwrap_or_else(|| panic!("`{key}` should be an integer in {v}"))
}

/// A double-quoted SQL identifier.
fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A single-quoted SQL string literal.
fn lit(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// A TOML string (quoted and escaped by the toml crate).
fn toml_str(s: impl AsRef<str>) -> String {
    toml::Value::String(s.as_ref().to_owned()).to_string()
}

/// A TOML snippet as a table value, e.g. `tbl("file = \"h.csv\"")`.
fn tbl(snippet: &str) -> toml::Value {
    toml::Value::Table(snippet.parse().expect("bad TOML snippet in test"))
}

/// Sets `[section] key = value` in a parsed job.
fn set(job: &mut toml::Table, section: &str, key: &str, value: impl Into<toml::Value>) {
    job.get_mut(section)
        .and_then(|s| s.as_table_mut())
        .unwrap_or_else(|| panic!("job has no [{section}]"))
        .insert(key.to_owned(), value.into());
}

/// The `[[quasi_identifiers]]` entry of `column` in a parsed job.
fn qi<'a>(job: &'a mut toml::Table, column: &str) -> &'a mut toml::Table {
    job["quasi_identifiers"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .filter_map(|q| q.as_table_mut())
        .find(|q| q.get("column").and_then(|c| c.as_str()) == Some(column))
        .unwrap_or_else(|| panic!("job has no quasi-identifier {column}"))
}

/// Opens a database read-only, so that measuring cannot change what is measured.
fn open_ro(db: &Path) -> Connection {
    assert!(db.exists(), "{} does not exist", db.display());
    let config = Config::default().access_mode(AccessMode::ReadOnly).unwrap();
    Connection::open_with_flags(db, config).unwrap_or_else(|e| panic!("cannot open {}: {e}", db.display()))
}

fn table_exists(db: &Path, table: &str) -> bool {
    db.exists()
        && open_ro(db)
            .query_row(
                &format!("SELECT count(*) FROM information_schema.tables WHERE table_name = {}", lit(table)),
                [],
                |r| r.get::<_, i64>(0),
            )
            .unwrap()
            > 0
}

/// Column names and types of a table, in table order.
fn columns(db: &Path, table: &str) -> Vec<(String, String)> {
    let conn = open_ro(db);
    let mut stmt = conn
        .prepare(&format!(
            "SELECT column_name, data_type FROM information_schema.columns \
             WHERE table_name = {} ORDER BY ordinal_position",
            lit(table)
        ))
        .unwrap();
    let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))).unwrap();
    rows.collect::<Result<_, _>>().unwrap()
}

/// Strings returned by a one-column query.
fn strings(conn: &Connection, sql: &str) -> Vec<String> {
    let mut stmt = conn.prepare(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    let rows = stmt.query_map([], |r| r.get::<_, String>(0)).unwrap();
    rows.collect::<Result<_, _>>().unwrap()
}

fn scalar(conn: &Connection, sql: &str) -> i64 {
    conn.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// Every row of a table, rendered as text and sorted: a fingerprint of its contents.
fn table_rows(db: &Path, table: &str) -> Vec<String> {
    strings(
        &open_ro(db),
        &format!("SELECT s FROM (SELECT CAST(t AS VARCHAR) AS s FROM {} AS t) ORDER BY s", ident(table)),
    )
}

/// Equivalence classes of a relation, measured with plain SQL.
#[derive(Debug, PartialEq)]
struct Classes {
    rows: i64,
    classes: i64,
    /// smallest class
    k: i64,
    /// fewest distinct sensitive values in a class
    l: Option<i64>,
    /// (class size, number of classes of that size), by size
    histogram: Vec<(i64, i64)>,
}

fn measure(conn: &Connection, relation: &str, qis: &[&str], sensitive: Option<&str>) -> Classes {
    let by = qis.iter().map(|c| ident(c)).collect::<Vec<_>>().join(", ");
    let l = sensitive.map_or("NULL".to_owned(), |s| format!("count(DISTINCT {})", ident(s)));
    let classes = format!("SELECT count(*) AS c, {l} AS l FROM {relation} GROUP BY {by}");
    let (rows, n, k, l) = conn
        .query_row(&format!("SELECT CAST(sum(c) AS BIGINT), count(*), min(c), min(l) FROM ({classes})"), [], |r| {
            Ok((
                r.get::<_, Option<i64>>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, Option<i64>>(2)?,
                r.get::<_, Option<i64>>(3)?,
            ))
        })
        .unwrap_or_else(|e| panic!("measuring {relation}: {e}"));
    let mut stmt = conn.prepare(&format!("SELECT c, count(*) FROM ({classes}) GROUP BY c ORDER BY c")).unwrap();
    let histogram = stmt.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?))).unwrap();
    Classes {
        rows: rows.unwrap_or(0),
        classes: n,
        k: k.expect("relation is empty"),
        l,
        histogram: histogram.collect::<Result<_, _>>().unwrap(),
    }
}

/// Smallest equivalence class of `table` over `qis`: what k the table really has.
fn remeasure(db: &Path, table: &str, qis: &[&str]) -> i64 {
    let conn = open_ro(db);
    let by = qis.iter().map(|c| ident(c)).collect::<Vec<_>>().join(", ");
    let sql = format!("SELECT min(c) FROM (SELECT count(*) AS c FROM {} GROUP BY {by})", ident(table));
    conn.query_row(&sql, [], |r| r.get::<_, Option<i64>>(0)).unwrap().expect("release table is empty")
}

/// The histogram of a `kanon check --json` answer as (size, classes) pairs.
fn json_histogram(check: &Json) -> Vec<(i64, i64)> {
    let mut h: Vec<(i64, i64)> = check["histogram"]
        .as_array()
        .unwrap_or_else(|| panic!("`histogram` should be a list in {check}"))
        .iter()
        .map(|p| (p[0].as_i64().unwrap(), p[1].as_i64().unwrap()))
        .collect();
    h.sort();
    h
}

/// A private copy of `fixtures/demo`, laid out as in the repository (`<tmp>/demo/...`).
struct Demo {
    tmp: TempDir,
    dir: PathBuf,
}

impl Demo {
    fn new() -> Demo {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("demo");
        for f in ["job.toml", "patients.csv", "hierarchies/education.csv", "out/.gitkeep"] {
            copy_fixture(&format!("demo/{f}"), &dir, f);
        }
        Demo { tmp, dir }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.join(rel)
    }

    /// Adds one of the bad-input fixtures: `bad/<name>` → `<demo>/<name>`.
    fn add_bad(&self, name: &str) {
        copy_fixture(&format!("bad/{name}"), &self.dir, name);
    }

    /// Rewrites job.toml as the demo job changed by `edit`.
    fn job(&self, edit: impl FnOnce(&mut toml::Table)) {
        let text = fs::read_to_string(fixtures().join("demo/job.toml")).unwrap();
        let mut job: toml::Table = text.parse().unwrap();
        edit(&mut job);
        write(&self.path("job.toml"), toml::to_string(&job).unwrap());
    }

    /// Runs kanon from the demo directory.
    fn run(&self, args: &[&str]) -> Out {
        kanon(&self.dir, args)
    }

    fn db(&self) -> PathBuf {
        self.path("out/demo.duckdb")
    }

    fn report(&self) -> Json {
        read_json(&self.path("out/report.json"))
    }

    /// A failed run must leave no release behind: no table, no csv copy, no report, no stray
    /// temporary files in out/.
    fn assert_nothing_written(&self) {
        assert!(!table_exists(&self.db(), "patients_k3"), "release table written by a failed run");
        assert!(!self.path("out/report.json").exists(), "report written by a failed run");
        assert!(!self.path("out/patients_k3.csv").exists(), "csv copy written by a failed run");
        for entry in fs::read_dir(self.path("out")).unwrap() {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            assert!(name == ".gitkeep" || name.starts_with("demo.duckdb"), "a failed run left out/{name} behind");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The demo job
// ---------------------------------------------------------------------------------------------

/// The demo runs from another working directory (paths resolve against the job file), its report
/// is complete and consistent, and the release really is 3-anonymous and 2-diverse.
#[test]
fn demo_release_is_k_anonymous_and_l_diverse() {
    let d = Demo::new();
    assert_ok(&kanon(d.tmp.path(), &["run", "demo/job.toml"]));

    let r = d.report();
    for key in [
        "kanon_version",
        "job_sha256",
        "rows_in",
        "rows_out",
        "suppressed",
        "budget",
        "quasi_identifiers",
        "node",
        "k",
        "k_requested",
        "l",
        "metric",
        "metrics",
        "feasible_nodes",
        "nodes_evaluated",
        "lattice_size",
        "algorithm",
        "seconds",
    ] {
        assert!(r.get(key).is_some(), "report lacks `{key}`: {r}");
    }
    assert_eq!(r["kanon_version"], env!("CARGO_PKG_VERSION"));
    let sha = r["job_sha256"].as_str().unwrap();
    assert!(sha.len() == 64 && sha.chars().all(|c| c.is_ascii_hexdigit()), "job_sha256 = {sha}");
    assert_eq!(r["metric"], "glm");
    assert_eq!(r["algorithm"], "incognito");
    assert_eq!(r["quasi_identifiers"].as_array().map(Vec::len), Some(DEMO_QIS.len()));
    for m in ["glm", "glm_normalized", "dm", "precision", "height"] {
        assert!(r["metrics"][m].is_number(), "metrics.{m} missing: {r}");
    }
    for s in ["load", "search", "release", "total"] {
        assert!(r["seconds"][s].as_f64().is_some_and(|t| t >= 0.0), "seconds.{s} missing: {r}");
    }

    // Row accounting: budget = floor(0.05 * rows), suppression within it.
    let (rows_in, rows_out, suppressed) = (int(&r, "rows_in"), int(&r, "rows_out"), int(&r, "suppressed"));
    assert_eq!(rows_in, DEMO_ROWS);
    assert_eq!(int(&r, "budget"), DEMO_ROWS * 5 / 100);
    assert_eq!(rows_in, rows_out + suppressed);
    assert!(suppressed <= int(&r, "budget"));
    assert_eq!(int(&r, "k_requested"), 3);
    assert!(int(&r, "k") >= 3);
    assert!(int(&r, "l") >= 2);
    let (lattice, evaluated, feasible) =
        (int(&r, "lattice_size"), int(&r, "nodes_evaluated"), int(&r, "feasible_nodes"));
    assert!(1 <= evaluated && evaluated <= lattice, "{evaluated} of {lattice} nodes evaluated");
    assert!(1 <= feasible && feasible <= lattice, "{feasible} of {lattice} nodes feasible");

    // The node names every QI with a level.
    let node = r["node"].as_object().expect("node should be an object");
    let mut names: Vec<&str> = node.keys().map(String::as_str).collect();
    names.sort();
    let mut expected = DEMO_QIS.to_vec();
    expected.sort();
    assert_eq!(names, expected);
    let level = |q: &str| node[q].as_i64().unwrap_or_else(|| panic!("node.{q} is not a level"));

    // Release table: source columns in source order minus the dropped ones, QIs as VARCHAR.
    let db = d.db();
    let cols = columns(&db, "patients_k3");
    let names: Vec<&str> = cols.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["id", "zip", "age", "birth_date", "sex", "education", "diagnosis"]);
    for (name, ty) in &cols {
        if DEMO_QIS.contains(&name.as_str()) {
            assert_eq!(ty, "VARCHAR", "QI column {name} should hold generalized labels");
        }
    }

    // Re-measured independently: suppression is applied, every class has ≥ 3 rows and ≥ 2 diagnoses.
    let k = remeasure(&db, "patients_k3", &DEMO_QIS);
    assert!(k >= 3, "release is only {k}-anonymous");
    let conn = open_ro(&db); // one connection at a time
    let m = measure(&conn, "patients_k3", &DEMO_QIS, Some("diagnosis"));
    assert_eq!(m.rows, rows_out);
    assert_eq!(m.k, k);
    assert_eq!(m.k, int(&r, "k"), "report k differs from the release");
    assert!(m.l.unwrap() >= 2, "release is only {:?}-diverse", m.l);
    assert_eq!(m.l.unwrap(), int(&r, "l"), "report l differs from the release");

    // Every released row is a truthful, full-domain generalization of its source row: same id and
    // diagnosis, zip masked with exactly node.zip stars (above `mask = 3` only '*' remains: the
    // masked tops 53*** and 60*** differ), sex kept or '*', education at its level.
    let src = lit(d.path("patients.csv").to_str().unwrap());
    let hier = lit(d.path("hierarchies/education.csv").to_str().unwrap());
    // `combinations` counts the source's distinct QI combinations, not (QIs, diagnosis) pairs.
    let distinct = format!("SELECT count(*) FROM (SELECT DISTINCT {} FROM read_csv({src}))", DEMO_QIS.join(", "));
    assert_eq!(int(&r, "combinations"), scalar(&conn, &distinct));
    let truthful = scalar(
        &conn,
        &format!(
            "SELECT count(*) FROM patients_k3 AS r
             JOIN read_csv({src}) AS s ON CAST(r.id AS VARCHAR) = CAST(s.id AS VARCHAR)
             JOIN read_csv({hier}, header = false, delim = ';', all_varchar = true) AS h
               ON h.column0 = s.education
             WHERE r.diagnosis = s.diagnosis
               AND CASE WHEN {zip} <= 3
                        THEN CAST(s.zip AS VARCHAR) LIKE replace(r.zip, '*', '_')
                             AND length(r.zip) - length(replace(r.zip, '*', '')) = {zip}
                        ELSE r.zip = '*' END
               AND r.sex = CASE WHEN {sex} = 0 THEN s.sex ELSE '*' END
               AND r.education = h.column{edu}",
            zip = level("zip"),
            sex = level("sex"),
            edu = level("education"),
        ),
    );
    assert_eq!(truthful, rows_out, "some released rows do not generalize their source row");
    assert_eq!(scalar(&conn, "SELECT count(DISTINCT id) FROM patients_k3"), rows_out);

    // The csv copy: a header and one line per released row.
    let csv = fs::read_to_string(d.path("out/patients_k3.csv")).unwrap();
    let mut lines = csv.lines().filter(|l| !l.is_empty());
    let header: Vec<&str> = lines.next().expect("csv copy is empty").split(',').collect();
    assert_eq!(header, ["id", "zip", "age", "birth_date", "sex", "education", "diagnosis"]);
    assert_eq!(lines.count() as i64, rows_out, "csv copy should have {rows_out} data lines");
}

/// The same job on the same data gives the same release, byte for byte.
#[test]
fn demo_is_deterministic() {
    let runs: Vec<(Vec<u8>, String, Vec<String>)> = (0..2)
        .map(|_| {
            let d = Demo::new();
            assert_ok(&d.run(&["run", "job.toml"]));
            let mut report = d.report();
            report.as_object_mut().unwrap().remove("seconds");
            // Paths in the report may name this run's own directory; nothing else may differ.
            let mut report = report.to_string();
            for dir in [d.tmp.path().to_path_buf(), d.tmp.path().canonicalize().unwrap()] {
                report = report.replace(dir.to_str().unwrap(), "<dir>");
            }
            (fs::read(d.path("out/patients_k3.csv")).unwrap(), report, table_rows(&d.db(), "patients_k3"))
        })
        .collect();
    assert!(runs[0].0 == runs[1].0, "csv copies differ");
    assert_eq!(runs[0].1, runs[1].1, "reports differ beyond `seconds`");
    assert_eq!(runs[0].2, runs[1].2, "release tables differ");
}

/// Command-line overrides reach the search, and the exhaustive search (the oracle) picks the same
/// node as Incognito for each metric.
#[test]
fn exhaustive_search_agrees_with_incognito() {
    let d = Demo::new();
    let cases: [(&str, &[&str], &str, i64); 3] = [
        ("job", &[], "glm", 3),
        ("k4", &["--k", "4", "--max-suppression", "0"], "glm", 4),
        ("dm", &["--metric", "dm"], "dm", 3),
    ];
    for (case, extra, metric, k) in cases {
        let mut reports = Vec::new();
        for algorithm in ["incognito", "exhaustive"] {
            let report = format!("out/{case}-{algorithm}.json");
            let mut args = vec!["run", "job.toml", "--algorithm", algorithm, "--report", report.as_str()];
            args.extend_from_slice(extra);
            assert_ok(&d.run(&args));
            let r = read_json(&d.path(&report));
            assert_eq!(r["algorithm"], algorithm, "{case}");
            assert_eq!(r["metric"], metric, "{case}: --metric not applied");
            assert_eq!(int(&r, "k_requested"), k, "{case}: --k not applied");
            assert!(int(&r, "k") >= k, "{case}");
            reports.push(r);
        }
        let (inc, exh) = (&reports[0], &reports[1]);
        assert_eq!(inc["node"], exh["node"], "{case}: incognito and exhaustive chose different nodes");
        for m in ["glm", "dm", "precision", "height"] {
            let (a, b) = (inc["metrics"][m].as_f64().unwrap(), exh["metrics"][m].as_f64().unwrap());
            assert!((a - b).abs() <= 1e-9 * a.abs().max(1.0), "{case}: metrics.{m} {a} vs {b}");
        }
        // Incognito finds every feasible node, not just the optimum.
        assert_eq!(inc["feasible_nodes"], exh["feasible_nodes"], "{case}: feasible node counts differ");
        if case == "k4" {
            assert_eq!(int(inc, "budget"), 0, "--max-suppression 0 not applied");
            assert_eq!(int(inc, "suppressed"), 0);
        }
    }
}

/// `check` measures the raw source and a release, agreeing with SQL, and changes
/// nothing; the raw source fails the job (exit 4), its release meets it.
#[test]
fn check_measures_source_and_release() {
    let d = Demo::new();

    let out = d.run(&["check", "job.toml", "--json"]);
    assert_eq!(out.code, 4, "{}", out.show());
    assert!(out.stderr.contains("source: fails k = 3 in 74 classes (74 records)"), "{}", out.show());
    let c: Json = serde_json::from_str(out.stdout.trim()).unwrap_or_else(|e| panic!("{e}:\n{}", out.show()));
    let conn = Connection::open_in_memory().unwrap();
    let src = format!("read_csv({})", lit(d.path("patients.csv").to_str().unwrap()));
    let want = measure(&conn, &src, &DEMO_QIS, Some("diagnosis"));
    assert_eq!(want.rows, DEMO_ROWS);
    assert_eq!(int(&c, "rows"), want.rows);
    assert_eq!(int(&c, "classes"), want.classes);
    assert_eq!(int(&c, "k"), want.k);
    assert_eq!(c["l"].as_i64(), want.l, "l should be measured on diagnosis");
    assert_eq!(json_histogram(&c), want.histogram);
    assert_eq!(fs::read_dir(d.path("out")).unwrap().count(), 1, "check on the source wrote into out/");

    assert_ok(&d.run(&["run", "job.toml"]));
    let report_before = fs::read(d.path("out/report.json")).unwrap();
    let rows_before = table_rows(&d.db(), "patients_k3");

    let out = d.run(&["check", "job.toml", "--table", "patients_k3", "--json"]);
    assert_ok(&out);
    let c: Json = serde_json::from_str(out.stdout.trim()).unwrap_or_else(|e| panic!("{e}:\n{}", out.show()));
    let want = measure(&open_ro(&d.db()), "patients_k3", &DEMO_QIS, Some("diagnosis"));
    assert!(int(&c, "k") >= 3, "release measured {}-anonymous", c["k"]);
    assert_eq!(int(&c, "k"), want.k);
    assert_eq!(int(&c, "rows"), int(&d.report(), "rows_out"));
    assert_eq!(int(&c, "classes"), want.classes);
    assert!(c["l"].as_i64().unwrap() >= 2);
    assert_eq!(json_histogram(&c), want.histogram);

    assert!(fs::read(d.path("out/report.json")).unwrap() == report_before, "check changed the report");
    assert_eq!(table_rows(&d.db(), "patients_k3"), rows_before, "check changed the release");
}

/// `hierarchy` prints the materialized levels of every QI and writes nothing.
#[test]
fn hierarchy_prints_materialized_levels() {
    let d = Demo::new();
    let out = d.run(&["hierarchy", "job.toml"]);
    assert_ok(&out);
    for needle in ["537**", "53***", "Undergraduate", "Secondary education"] {
        assert!(out.stdout.contains(needle), "hierarchy output lacks {needle:?}:\n{}", out.show());
    }
    d.assert_nothing_written();
}

// ---------------------------------------------------------------------------------------------
// Bad jobs and inputs: exit 2, a message that points at the problem, and no output at all
// ---------------------------------------------------------------------------------------------

#[test]
fn unknown_qi_column_is_rejected() {
    let d = Demo::new();
    d.job(|j| {
        qi(j, "zip").insert("column".into(), "postcode".into());
    });
    assert_fails(
        &d.run(&["run", "job.toml"]),
        2,
        &["quasi-identifier \"postcode\" is not a column of the source", "the source has \"id\", \"name\""],
    );
    d.assert_nothing_written();
}

/// education.csv without its `Masters` line, while the data has Masters.
#[test]
fn value_missing_from_hierarchy_file_is_rejected() {
    let d = Demo::new();
    d.add_bad("hierarchies/education_missing_value.csv");
    d.job(|j| {
        qi(j, "education").insert("hierarchy".into(), tbl(r#"file = "hierarchies/education_missing_value.csv""#));
    });
    let says =
        "quasi-identifier \"education\": 7 rows (1 distinct values) are not covered by the hierarchy, e.g. \"Masters\"";
    assert_fails(&d.run(&["run", "job.toml"]), 2, &[says]);
    d.assert_nothing_written();
}

/// A value that does not parse as its column's type, past the rows DuckDB samples to
/// sniff the types: found by the first full read of the file, reported as bad input
/// naming the file.
#[test]
fn unparsable_csv_value_is_rejected() {
    let d = Demo::new();
    let csv = fs::read_to_string(d.path("patients.csv")).unwrap();
    let mut lines = csv.lines();
    let header = lines.next().unwrap();
    let rows: Vec<&str> = lines.collect();
    let mut out = format!("{header}\n");
    for i in 0..30_000 {
        out.push_str(rows[i % rows.len()]);
        out.push('\n');
    }
    // age is the fifth field.
    let mut bad: Vec<&str> = rows[0].split(',').collect();
    bad[4] = "unknown";
    out.push_str(&bad.join(","));
    out.push('\n');
    write(&d.path("patients.csv"), out);
    assert_fails(&d.run(&["run", "job.toml"]), 2, &["patients.csv", "unknown"]);
    d.assert_nothing_written();
}

/// `Undergraduate` sits under `Higher education` on one line and `Secondary education` on another.
#[test]
fn inconsistent_hierarchy_is_rejected() {
    let d = Demo::new();
    d.add_bad("hierarchies/education_inconsistent.csv");
    d.job(|j| {
        qi(j, "education").insert("hierarchy".into(), tbl(r#"file = "hierarchies/education_inconsistent.csv""#));
    });
    assert_fails(&d.run(&["run", "job.toml"]), 2, &["Undergraduate", "education"]);
    d.assert_nothing_written();
}

/// The last line ends in `Any-education` instead of `*`: the top level has two values.
#[test]
fn hierarchy_with_two_top_values_is_rejected() {
    let d = Demo::new();
    d.add_bad("hierarchies/education_two_tops.csv");
    d.job(|j| {
        qi(j, "education").insert("hierarchy".into(), tbl(r#"file = "hierarchies/education_two_tops.csv""#));
    });
    assert_fails(&d.run(&["run", "job.toml"]), 2, &["Any-education", "education"]);
    d.assert_nothing_written();
}

/// No generalization can make classes larger than the table: a bad job, not a failed search.
#[test]
fn k_above_row_count_is_rejected() {
    let d = Demo::new();
    d.job(|j| set(j, "privacy", "k", 1000));
    assert_fails(&d.run(&["run", "job.toml"]), 2, &["1000", &DEMO_ROWS.to_string()]);
    d.assert_nothing_written();
}

#[test]
fn malformed_toml_is_rejected_with_its_line() {
    let d = Demo::new();
    d.add_bad("malformed.toml"); // `k = = 3` on line 10
    assert_fails(&d.run(&["run", "malformed.toml"]), 2, &["malformed.toml", "line 10"]);
    d.assert_nothing_written();
}

/// A job file that does not parse is refused by its line and column, never by quoting the
/// line: it may hold a password or a token.
#[test]
fn a_malformed_job_never_shows_its_secrets() {
    let d = Demo::new();
    for text in [
        "[engine]\nkind = \"postgres\"\nurl = \"postgresql://u:pw-9e1b@h/d\n[privacy]\nk = 3\n",
        "[engine]\nkind = \"spark\"\nurl = \"sc://h:1/;token=pw-9e1b\" x\n",
    ] {
        write(&d.path("job.toml"), text);
        let out = d.run(&["run", "job.toml"]);
        assert_fails(&out, 2, &["job.toml", "line 3"]);
        assert!(!out.show().contains("pw-9e1b"), "a secret was shown:\n{}", out.show());
    }
}

#[test]
fn missing_source_file_is_rejected() {
    let d = Demo::new();
    d.job(|j| set(j, "source", "csv", "nope.csv"));
    assert_fails(&d.run(&["run", "job.toml"]), 2, &["job.toml: source file nope.csv not found"]);
    d.assert_nothing_written();
}

/// A source with a header and no rows is bad input, said plainly.
#[test]
fn empty_source_is_rejected() {
    let d = Demo::new();
    let header = fs::read_to_string(d.path("patients.csv")).unwrap().lines().next().unwrap().to_string();
    fs::write(d.path("empty.csv"), header + "\n").unwrap();
    d.job(|j| set(j, "source", "csv", "empty.csv"));
    assert_fails(&d.run(&["run", "job.toml"]), 2, &["empty.csv", "has no rows"]);
    d.assert_nothing_written();
}

/// Rejected both in the job file and on the command line.
#[test]
fn unknown_metric_is_rejected() {
    let d = Demo::new();
    let values = "glm, dm, precision, height, cm, hdm";
    assert_fails(
        &d.run(&["run", "job.toml", "--metric", "entropy"]),
        2,
        &["invalid value 'entropy' for '--metric <METRIC>'", values],
    );
    d.assert_nothing_written();
    d.job(|j| set(j, "search", "metric", "entropy"));
    assert_fails(
        &d.run(&["run", "job.toml"]),
        2,
        &["job.toml: invalid job file", "unknown variant `entropy`, expected one of `glm`, `dm`"],
    );
    d.assert_nothing_written();
}

#[test]
fn zero_threads_is_rejected() {
    let d = Demo::new();
    d.job(|j| {
        j.insert("engine".into(), tbl("threads = 0"));
    });
    assert_fails(&d.run(&["run", "job.toml"]), 2, &["[engine] threads must be at least 1"]);
    d.assert_nothing_written();
}

/// An output whose folder is missing, or an output file that is the source
/// file, exits 2 before anything is written; the source is left as it was.
#[test]
fn missing_output_folder_and_output_over_the_source_are_rejected() {
    let d = Demo::new();
    d.job(|j| set(j, "output", "csv", "missing/patients_k3.csv"));
    assert_fails(&d.run(&["run", "job.toml"]), 2, &["[output] csv", "missing", "does not exist"]);
    d.assert_nothing_written();
    d.job(|j| set(j, "output", "report", "nowhere/report.json"));
    assert_fails(&d.run(&["run", "job.toml"]), 2, &["[output] report", "does not exist"]);
    d.assert_nothing_written();
    let before = fs::read(d.path("patients.csv")).unwrap();
    d.job(|j| set(j, "output", "csv", "patients.csv"));
    assert_fails(&d.run(&["run", "job.toml"]), 2, &["[output] csv", "is the source file"]);
    assert_eq!(fs::read(d.path("patients.csv")).unwrap(), before, "the source was changed");
}

/// A bad hierarchy table says what is wrong with it, on its line.
#[test]
fn bad_hierarchy_tables_say_what_is_wrong() {
    let d = Demo::new();
    for (hierarchy, needle) in [
        ("{ mask = \"x\" }", "invalid type: string \"x\""),
        ("{ foo = 1 }", "unknown field `foo`"),
        ("{ mask = 2, date = [\"year\"] }", "exactly one of mask, intervals, date, file"),
    ] {
        d.job(|j| {
            qi(j, "zip").insert("hierarchy".into(), tbl(&format!("h = {hierarchy}"))["h"].clone());
        });
        assert_fails(&d.run(&["run", "job.toml"]), 2, &["quasi-identifier \"zip\"", needle]);
    }
    d.job(|j| {
        qi(j, "zip").insert("hierarchy".into(), toml::Value::Integer(3));
    });
    assert_fails(&d.run(&["run", "job.toml"]), 2, &["a hierarchy is \"suppress\" or a table", "got 3"]);
    d.assert_nothing_written();
}

/// `--max-suppression` caps a scheme run as the job's key does (it did not count as given):
/// with the job's key removed, the uncapped scheme suppresses some records; capped on the
/// command line below that, the run suppresses at most the cap, or finds nothing (exit 3).
#[test]
fn max_suppression_flag_caps_scheme_runs() {
    let d = Demo::new();
    // zip, sex and education: a partition space the scheme search covers in a moment.
    d.job(|j| {
        let privacy = j["privacy"].as_table_mut().unwrap();
        privacy.remove("l_diversity");
        privacy.remove("max_suppression");
        privacy.insert("k".into(), 8.into());
        set(j, "search", "metric", "dm");
        let qis = j["quasi_identifiers"].as_array_mut().unwrap();
        qis.retain(|q| !["age", "birth_date"].contains(&q["column"].as_str().unwrap()));
    });
    assert_ok(&d.run(&["run", "job.toml", "--scheme", "gsps"]));
    let uncapped = int(&d.report(), "suppressed");
    assert!(uncapped > 0, "the uncapped scheme should suppress records here");
    let cap = (uncapped - 1).to_string();
    let out = d.run(&["run", "job.toml", "--scheme", "gsps", "--max-suppression", &cap]);
    match out.code {
        0 => assert!(int(&d.report(), "suppressed") <= uncapped - 1, "the cap was not kept"),
        3 => assert!(out.stderr.contains("max_suppression"), "{}", out.show()),
        other => panic!("exit {other}:\n{}", out.show()),
    }
}

/// A budget that is neither a fraction in [0, 1] nor a row count exits 2 and says what it got.
#[test]
fn bad_max_suppression_is_rejected() {
    let d = Demo::new();
    for (value, shown) in
        [(toml::Value::String("1%".into()), "got \"1%\""), (1.5.into(), "got 1.5"), ((-1).into(), "got -1")]
    {
        d.job(|j| set(j, "privacy", "max_suppression", value.clone()));
        assert_fails(
            &d.run(&["run", "job.toml"]),
            2,
            &["[privacy] max_suppression must be a fraction in [0, 1]", shown],
        );
        d.assert_nothing_written();
    }
}

/// A job over the CSV `csv` of `dir`: release `release` in out.duckdb, k = 2 with nothing
/// suppressed, QIs `zip` (masked) and sex, then `extra`.
fn small_job(dir: &Path, csv: &str, zip: &str, extra: &str) {
    let job = format!(
        r#"[source]
csv = {}

[output]
database = "out.duckdb"
table = "release"
report = "report.json"

[privacy]
k = 2
max_suppression = 0

[[quasi_identifiers]]
column = {}
hierarchy = {{ mask = 5 }}

[[quasi_identifiers]]
column = "sex"
hierarchy = "suppress"
{extra}"#,
        toml_str(csv),
        toml_str(zip)
    );
    write(&dir.join("job.toml"), job);
}

/// A directory with `fixtures/bad/hostile.csv`, whose second column is named HOSTILE, and a job
/// over it (QIs zip and sex) followed by `extra`.
fn hostile(extra: &str) -> TempDir {
    let tmp = tempfile::tempdir().unwrap();
    copy_fixture("bad/hostile.csv", tmp.path(), "hostile.csv");
    copy_fixture("bad/hierarchies/hostile_colors.csv", tmp.path(), "hierarchies/hostile_colors.csv");
    small_job(tmp.path(), "hostile.csv", "zip", extra);
    tmp
}

/// As a QI whose hierarchy lacks the value `it's`: rejected, naming the column, with no SQL
/// error or injection on the way.
#[test]
fn hostile_column_name_as_qi_is_quoted_in_errors() {
    let tmp = hostile(&format!(
        "\n[[quasi_identifiers]]\ncolumn = {}\nhierarchy = {{ file = \"hierarchies/hostile_colors.csv\" }}\n",
        toml_str(HOSTILE)
    ));
    // The tail of the name survives any quoting style the message may use.
    assert_fails(&kanon(tmp.path(), &["run", "job.toml"]), 2, &["DROP TABLE x; --", "it's"]);
    assert!(!table_exists(&tmp.path().join("out.duckdb"), "release"));
    assert!(!tmp.path().join("report.json").exists());
}

/// As a pass-through column it reaches the release under its exact name with its values intact.
#[test]
fn hostile_column_name_passes_through() {
    let tmp = hostile("");
    assert_ok(&kanon(tmp.path(), &["run", "job.toml"]));
    let db = tmp.path().join("out.duckdb");
    let names: Vec<String> = columns(&db, "release").into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["id", HOSTILE, "zip", "sex", "diagnosis"]);
    assert!(remeasure(&db, "release", &["zip", "sex"]) >= 2);
    let conn = open_ro(&db);
    let values = |relation: &str| {
        strings(&conn, &format!("SELECT CAST({} AS VARCHAR) AS v FROM {relation} ORDER BY v", ident(HOSTILE)))
    };
    let source = format!("read_csv({})", lit(tmp.path().join("hostile.csv").to_str().unwrap()));
    assert_eq!(values("release"), values(&source), "max_suppression = 0, so every value must survive");
}

/// Column names holding template braces (`{{relation}}`, `a}}{{b`) are names, not slots:
/// one passes through, one is a QI, and both reach the release intact (this panicked, exit 101).
#[test]
fn template_braces_in_column_names_are_text() {
    let tmp = tempfile::tempdir().unwrap();
    let mut csv = String::from("id,{{relation}},\"z{{ip}}\",sex\n");
    for i in 0..12 {
        csv.push_str(&format!("{i},v{},5371{},{}\n", i % 3, i % 2, ["F", "M"][i % 2]));
    }
    write(&tmp.path().join("braces.csv"), csv);
    small_job(tmp.path(), "braces.csv", "z{{ip}}", "");
    assert_ok(&kanon(tmp.path(), &["run", "job.toml"]));
    let db = tmp.path().join("out.duckdb");
    let names: Vec<String> = columns(&db, "release").into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["id", "{{relation}}", "z{{ip}}", "sex"]);
    assert!(remeasure(&db, "release", &["z{{ip}}", "sex"]) >= 2);
    let conn = open_ro(&db);
    let values = strings(&conn, "SELECT DISTINCT \"{{relation}}\" AS v FROM release ORDER BY v");
    assert_eq!(values, ["v0", "v1", "v2"]);
    let check = kanon(tmp.path(), &["check", "job.toml", "--table", "release"]);
    assert_ok(&check);
}

/// Releasing over the source table would destroy the data being anonymized.
#[test]
fn output_table_may_not_replace_the_source_table() {
    let d = Demo::new();
    let warehouse = d.path("warehouse.duckdb");
    {
        let conn = Connection::open(&warehouse).unwrap();
        let csv = lit(d.path("patients.csv").to_str().unwrap());
        conn.execute_batch(&format!("CREATE TABLE patients AS SELECT * FROM read_csv({csv})")).unwrap();
    } // closed: kanon needs the file lock
    let before = table_rows(&warehouse, "patients");
    assert_eq!(before.len() as i64, DEMO_ROWS);

    // Output database left to default to the source, then named explicitly.
    for explicit in [false, true] {
        d.job(|j| {
            j.insert("source".into(), tbl("database = \"warehouse.duckdb\"\ntable = \"patients\""));
            set(j, "output", "table", "patients");
            let output = j["output"].as_table_mut().unwrap();
            if explicit {
                output.insert("database".into(), "warehouse.duckdb".into());
            } else {
                output.remove("database");
            }
        });
        assert_fails(
            &d.run(&["run", "job.toml"]),
            2,
            &["[output] table \"patients\" is the source table; kanon never overwrites its source"],
        );
        assert_eq!(table_rows(&warehouse, "patients"), before, "source table changed");
        let tables = scalar(&open_ro(&warehouse), "SELECT count(*) FROM information_schema.tables");
        assert_eq!(tables, 1, "a table was added next to the source");
        d.assert_nothing_written();
    }
}

/// The source and the hierarchy files under other spellings (`./x`, `sub/../x`, a symlink) are
/// still the files the job reads: no release, report, reconstruction, SVG or front is written
/// over one. Each exits 2 before anything is read, naming the key and the file, and every
/// input is byte-identical afterwards.
#[test]
fn outputs_never_land_on_what_the_job_reads() {
    let d = Demo::new();
    std::os::unix::fs::symlink(d.path("patients.csv"), d.path("link.csv")).unwrap();
    std::os::unix::fs::symlink(d.path("hierarchies/education.csv"), d.path("edu-link.csv")).unwrap();
    let inputs = ["patients.csv", "hierarchies/education.csv", "job.toml"];
    let snapshot = |d: &Demo| inputs.map(|f| fs::read(d.path(f)).unwrap());
    for (key, path, needle) in [
        ("csv", "./patients.csv", "the source file"),
        ("csv", "hierarchies/../patients.csv", "the source file"),
        ("csv", "link.csv", "the source file"),
        ("parquet", "hierarchies/education.csv", "the hierarchy file of \"education\""),
        ("report", "edu-link.csv", "the hierarchy file of \"education\""),
        ("report", "./job.toml", "the job file"),
        ("database", "./patients.csv", "the source file"),
    ] {
        d.job(|j| set(j, "output", key, path));
        let before = snapshot(&d);
        assert_fails(&d.run(&["run", "job.toml"]), 2, &[&format!("[output] {key} {path}"), needle]);
        assert_eq!(snapshot(&d), before, "[output] {key} = {path} changed an input");
        d.assert_nothing_written();
    }
    // Two outputs that are one file.
    d.job(|j| {
        set(j, "output", "report", "out/same.json");
        set(j, "output", "csv", "out/./same.json");
    });
    assert_fails(&d.run(&["run", "job.toml"]), 2, &["[output] report out/same.json is also [output] csv"]);
    // A reconstruction over the source, cell-based.
    d.job(|j| {
        set(j, "search", "algorithm", "cdgh");
        set(j, "output", "reconstructed", "./patients.csv");
        j["privacy"].as_table_mut().unwrap().remove("l_diversity");
    });
    let before = snapshot(&d);
    assert_fails(&d.run(&["run", "job.toml"]), 2, &["[output] reconstructed ./patients.csv", "the source file"]);
    assert_eq!(snapshot(&d), before);
    // kanon check's SVG and kanon pareto's files.
    d.job(|_| {});
    let before = snapshot(&d);
    assert_fails(&d.run(&["check", "job.toml", "--svg", "link.csv"]), 2, &["--svg link.csv", "the source file"]);
    assert_fails(
        &d.run(&["pareto", "job.toml", "--json", "hierarchies/./education.csv"]),
        2,
        &["--json hierarchies/./education.csv", "the hierarchy file of \"education\""],
    );
    assert_fails(
        &d.run(&["pareto", "job.toml", "--svg", "out/f.svg", "--csv", "out/f.svg"]),
        2,
        &["--svg out/f.svg is also --csv"],
    );
    assert_eq!(snapshot(&d), before);
}

/// A DuckDB table named with its schema (`main.patients`) is the table `patients`: a release so
/// named over the source is refused (it was written as a new table literally named
/// "main.patients"), and a release named so lands in `patients_k3` itself.
#[test]
fn a_schema_qualified_table_is_the_table_itself() {
    let d = Demo::new();
    let warehouse = d.path("warehouse.duckdb");
    {
        let conn = Connection::open(&warehouse).unwrap();
        let csv = lit(d.path("patients.csv").to_str().unwrap());
        conn.execute_batch(&format!("CREATE TABLE patients AS SELECT * FROM read_csv({csv})")).unwrap();
    }
    let before = table_rows(&warehouse, "patients");
    for (source, release) in
        [("patients", "main.patients"), ("main.patients", "patients"), ("Patients", "MAIN.\"patients\"")]
    {
        d.job(|j| {
            j.insert("source".into(), tbl(&format!("database = \"warehouse.duckdb\"\ntable = {}", toml_str(source))));
            set(j, "output", "table", release);
            j["output"].as_table_mut().unwrap().remove("database");
        });
        assert_fails(&d.run(&["run", "job.toml"]), 2, &["is the source table"]);
        assert_eq!(table_rows(&warehouse, "patients"), before, "source table changed");
        let tables = strings(&open_ro(&warehouse), "SELECT table_name FROM information_schema.tables");
        assert_eq!(tables, ["patients"], "a table was added next to the source");
    }
    // Another schema is not where kanon writes: refused, naming the key.
    d.job(|j| {
        j.insert("source".into(), tbl("database = \"warehouse.duckdb\"\ntable = \"patients\""));
        set(j, "output", "table", "lake.patients_k3");
    });
    assert_fails(&d.run(&["run", "job.toml"]), 2, &["[output] table", "schema main"]);
    // main.patients_k3 is patients_k3.
    d.job(|j| {
        j.insert("source".into(), tbl("database = \"warehouse.duckdb\"\ntable = \"main.patients\""));
        set(j, "output", "table", "main.patients_k3");
        j["output"].as_table_mut().unwrap().remove("database");
        j["output"].as_table_mut().unwrap().remove("csv");
    });
    assert_ok(&d.run(&["run", "job.toml"]));
    let mut tables = strings(&open_ro(&warehouse), "SELECT table_name FROM information_schema.tables");
    tables.sort();
    assert_eq!(tables, ["kanon_runs", "patients", "patients_k3"]);
    assert!(remeasure(&warehouse, "patients_k3", &DEMO_QIS) >= 3);
}

/// A view over the release (and a view over the history) keeps working across nights: the swap
/// replaces the table the view names, and the view then reads the new night's rows.
#[test]
fn a_view_over_the_release_survives_the_nightly_swap() {
    let d = Demo::new();
    assert_ok(&d.run(&["run", "job.toml"]));
    {
        let conn = Connection::open(d.db()).unwrap();
        conn.execute_batch("CREATE VIEW night_count AS SELECT count(*) AS n, min(zip) AS z FROM patients_k3").unwrap();
    }
    let first = scalar(&open_ro(&d.db()), "SELECT n FROM night_count");
    assert_eq!(first, DEMO_ROWS - int(&d.report(), "suppressed"));
    // Night two, with more suppression allowed and k raised: other rows, same view.
    d.job(|j| set(j, "privacy", "k", 5));
    assert_ok(&d.run(&["run", "job.toml"]));
    let conn = open_ro(&d.db());
    let second = scalar(&conn, "SELECT n FROM night_count");
    assert_eq!(second, scalar(&conn, "SELECT count(*) FROM patients_k3"));
    assert_eq!(second, DEMO_ROWS - int(&d.report(), "suppressed"));
    assert_eq!(scalar(&conn, "SELECT count(*) FROM kanon_runs"), 2);
    let views = strings(&conn, "SELECT view_name FROM duckdb_views() WHERE NOT internal");
    assert_eq!(views, ["night_count"]);
}

/// A failed rerun leaves the previous release and report exactly as they were.
#[test]
fn failed_rerun_keeps_previous_release() {
    let d = Demo::new();
    assert_ok(&d.run(&["run", "job.toml"]));
    let rows = table_rows(&d.db(), "patients_k3");
    let report = fs::read(d.path("out/report.json")).unwrap();
    let csv = fs::read(d.path("out/patients_k3.csv")).unwrap();

    d.add_bad("hierarchies/education_missing_value.csv");
    d.job(|j| {
        set(j, "privacy", "k", 4); // would produce a different release if it got that far
        qi(j, "education").insert("hierarchy".into(), tbl(r#"file = "hierarchies/education_missing_value.csv""#));
    });
    let says =
        "quasi-identifier \"education\": 7 rows (1 distinct values) are not covered by the hierarchy, e.g. \"Masters\"";
    assert_fails(&d.run(&["run", "job.toml"]), 2, &[says]);

    assert_eq!(table_rows(&d.db(), "patients_k3"), rows, "previous release table changed");
    assert!(fs::read(d.path("out/report.json")).unwrap() == report, "previous report changed");
    assert!(fs::read(d.path("out/patients_k3.csv")).unwrap() == csv, "previous csv copy changed");
}

/// The data has 6 diagnoses, so no class can be 7-diverse, and nothing may be suppressed.
#[test]
fn infeasible_job_exits_3_and_writes_nothing() {
    let d = Demo::new();
    d.job(|j| {
        set(j, "privacy", "max_suppression", 0);
        set(j, "privacy", "l_diversity", tbl("column = \"diagnosis\"\nl = 7"));
    });
    let out = d.run(&["run", "job.toml"]);
    assert_fails(
        &out,
        3,
        &["no generalization is feasible for k = ", "l = 7 on \"diagnosis\"", "with at most 0 suppressed rows"],
    );
    d.assert_nothing_written();
}

// ---------------------------------------------------------------------------------------------
// The Adult benchmark (needs ../shared/data/adult, which is not part of the repository)
// ---------------------------------------------------------------------------------------------

const ADULT_QIS: [&str; 8] =
    ["age", "education", "marital-status", "native-country", "race", "sex", "workclass", "salary-class"];

#[test]
fn adult_is_5_anonymous_with_1_percent_suppression() {
    let Some(adult) = crate::util::adult_dir() else { return };
    let file = |name: String| toml_str(adult.join(name).to_str().unwrap());

    let tmp = tempfile::tempdir().unwrap();
    let mut job = format!(
        "[source]\ncsv = {}\ndelimiter = \";\"\n\n\
         [output]\ndatabase = \"adult.duckdb\"\ntable = \"adult_k5\"\nreport = \"report.json\"\n\n\
         [privacy]\nk = 5\nmax_suppression = 0.01\n\n\
         [search]\nalgorithm = \"incognito\"\nmetric = \"glm\"\n",
        file("adult.csv".into())
    );
    for q in ADULT_QIS {
        job += &format!(
            "\n[[quasi_identifiers]]\ncolumn = {}\nhierarchy = {{ file = {} }}\n",
            toml_str(q),
            file(format!("hierarchy_{q}.csv"))
        );
    }
    write(&tmp.path().join("adult.toml"), job);

    assert_ok(&kanon(tmp.path(), &["run", "adult.toml", "--quiet"]));
    let r = read_json(&tmp.path().join("report.json"));
    assert_eq!(int(&r, "rows_in"), 30162);
    assert_eq!(int(&r, "lattice_size"), 4320);
    assert_eq!(int(&r, "budget"), 301);
    assert!(int(&r, "suppressed") <= 301);
    assert_eq!(int(&r, "rows_in"), int(&r, "rows_out") + int(&r, "suppressed"));

    let db = tmp.path().join("adult.duckdb");
    let k = remeasure(&db, "adult_k5", &ADULT_QIS);
    assert!(k >= 5, "Adult release is only {k}-anonymous");
    assert_eq!(k, int(&r, "k"));
    assert_eq!(scalar(&open_ro(&db), "SELECT count(*) FROM adult_k5"), int(&r, "rows_out"));
}

/// `kanon pareto` on the demo: the front it prints and writes is the exhaustive one
/// (the demo lattice is small), its CSV has one row per front node, the SVG is drawn,
/// and a node read off the front can be released with `run --node`.
#[test]
fn pareto_front_outputs_and_release_of_a_front_node() {
    let demo = Demo::new();
    // POkA reaching the bottom of the lattice finds the whole front too.
    let out = demo.run(&[
        "pareto",
        "job.toml",
        "--method",
        "poka",
        "--depth",
        "18",
        "--exhaustive",
        "--json",
        "out/poka.json",
    ]);
    assert_ok(&out);
    let poka = read_json(&demo.path("out/poka.json"));
    assert_eq!((poka["method"].as_str(), poka["depth"].as_i64()), (Some("poka"), Some(18)));
    assert_eq!(poka["exhaustive"]["recall"].as_f64(), Some(1.0), "{poka}");
    assert_fails(&demo.run(&["pareto", "job.toml", "--depth", "3"]), 2, &["--depth applies to --method poka"]);
    // The default method: the exact front.
    let out = demo.run(&[
        "pareto",
        "job.toml",
        "--exhaustive",
        "--json",
        "out/front.json",
        "--csv",
        "out/front.csv",
        "--svg",
        "out/front.svg",
    ]);
    assert_ok(&out);
    let r = read_json(&demo.path("out/front.json"));
    assert_eq!(r["method"], "exact");
    assert_eq!(r["front"], poka["front"], "exact and POkA at full depth give the same front");
    let front = r["front"].as_array().unwrap();
    assert!(!front.is_empty());
    assert_eq!(int(&r, "lattice_size"), 1000);
    assert_eq!(r["exhaustive"]["recall"].as_f64(), Some(1.0), "{r}");
    assert_eq!(r["exhaustive"]["dominated_reported"].as_array().unwrap().len(), 0);
    assert_eq!(int(&front[0], "k"), DEMO_ROWS, "the front starts with one class of all rows");
    // k falls and loss falls along the front.
    for w in front.windows(2) {
        assert!(int(&w[1], "k") < int(&w[0], "k"));
        assert!(w[1]["metrics"]["glm"].as_f64().unwrap() < w[0]["metrics"]["glm"].as_f64().unwrap());
    }
    let csv = fs::read_to_string(demo.path("out/front.csv")).unwrap();
    assert_eq!(csv.lines().count(), front.len() + 1);
    assert!(csv.starts_with("zip,age,birth_date,sex,education,k,suppressed,glm"));
    assert!(fs::read_to_string(demo.path("out/front.svg")).unwrap().contains("<svg"));

    // Release the front node with the smallest k ≥ 3 at its own k and budget.
    let node = front.iter().rev().find(|p| int(p, "k") >= 3).unwrap();
    let spec: Vec<String> = DEMO_QIS.iter().map(|q| format!("{q}={}", node["node"][q])).collect();
    demo.job(|j| {
        j["privacy"].as_table_mut().unwrap().remove("l_diversity");
    });
    let k = int(node, "k").to_string();
    let out = demo.run(&["run", "job.toml", "--k", &k, "--node", &spec.join(",")]);
    assert_ok(&out);
    let report = demo.report();
    assert_eq!(report["node"], node["node"]);
    assert_eq!(int(&report, "suppressed"), int(node, "suppressed"));
    assert!(remeasure(&demo.db(), "patients_k3", &DEMO_QIS) >= int(node, "k"));
}

/// `kanon pareto --objectives` on the demo: PBG-EA's JSON, CSV and SVG; the
/// exhaustive method's minimal nodes; the comparison; the same seed, the same
/// output; and the exit-2 cases.
#[test]
fn pareto_objectives_outputs_and_errors() {
    let demo = Demo::new();
    let args = |extra: &[&'static str]| {
        let mut a = vec!["pareto", "job.toml", "--objectives", "k,l,glm", "--iterations", "20"];
        a.extend_from_slice(extra);
        a
    };
    let out = demo.run(&args(&["--exhaustive", "--json", "out/a.json", "--csv", "out/a.csv", "--svg", "out/a.svg"]));
    assert_ok(&out);
    let r = read_json(&demo.path("out/a.json"));
    assert_eq!((r["method"].as_str(), r["seed"].as_i64()), (Some("pbg-ea"), Some(0)));
    assert_eq!(r["objectives"], serde_json::json!(["k", "l", "glm"]));
    let solutions = r["solutions"].as_array().unwrap();
    assert!(!solutions.is_empty());
    for s in solutions {
        assert_eq!(s["levels"].as_array().unwrap().len(), DEMO_QIS.len());
        assert!(s["k"].as_i64().unwrap() >= 1 && s["l"].as_i64().unwrap() >= 1 && s["glm"].as_f64().is_some());
    }
    assert!(int(&r, "nodes_evaluated") <= int(&r, "lattice_size"));
    let c = &r["comparison"];
    assert!(int(c, "minimal") >= 1 && (0.0..=1.0).contains(&c["rr"].as_f64().unwrap()), "{c}");
    let csv = fs::read_to_string(demo.path("out/a.csv")).unwrap();
    assert!(csv.starts_with("zip,age,birth_date,sex,education,k,l,glm,suppressed"));
    assert_eq!(csv.lines().count(), solutions.len() + 1);
    assert!(fs::read_to_string(demo.path("out/a.svg")).unwrap().contains("<svg"));
    // The same seed gives the same archive and count.
    assert_ok(&demo.run(&args(&["--json", "out/b.json"])));
    let b = read_json(&demo.path("out/b.json"));
    assert_eq!((&b["solutions"], &b["nodes_evaluated"]), (&r["solutions"], &r["nodes_evaluated"]));
    // Every minimal node is reported by the exhaustive method, none dominated by another.
    assert_ok(&demo.run(&[
        "pareto",
        "job.toml",
        "--objectives",
        "k,glm",
        "--method",
        "exhaustive",
        "--json",
        "out/e.json",
    ]));
    let e = read_json(&demo.path("out/e.json"));
    assert_eq!(int(&e, "nodes_evaluated"), int(&e, "lattice_size"));
    let points: Vec<(i64, f64)> =
        e["solutions"].as_array().unwrap().iter().map(|s| (int(s, "k"), s["glm"].as_f64().unwrap())).collect();
    for &(k, glm) in &points {
        assert!(!points.iter().any(|&(k2, g2)| (k2 >= k && g2 < glm) || (k2 > k && g2 <= glm)));
    }
    // Bad requests exit 2 naming what is wrong.
    assert_fails(&demo.run(&["pareto", "job.toml", "--objectives", "k"]), 2, &["two or more"]);
    assert_fails(&demo.run(&["pareto", "job.toml", "--objectives", "k,x"]), 2, &["unknown objective"]);
    assert_fails(&demo.run(&["pareto", "job.toml", "--objectives", "k,glm,cm"]), 2, &["class_column"]);
    assert_fails(&demo.run(&args(&["--epsilon", "1"])), 2, &["one per objective"]);
    assert_fails(&demo.run(&args(&["--method", "poka"])), 2, &["only k plus one loss"]);
    assert_fails(&demo.run(&args(&["--sensitive", "zip"])), 2, &["quasi-identifier"]);
    demo.job(|j| {
        j["privacy"].as_table_mut().unwrap().remove("l_diversity");
    });
    assert_fails(&demo.run(&args(&[])), 2, &["sensitive column"]);
    assert_ok(&demo.run(&args(&["--sensitive", "diagnosis"])));
}

// ---------------------------------------------------------------------------------------------
// The synthetic extract (`kanon generate`) and the physical limit (`kanon limit`)
// ---------------------------------------------------------------------------------------------

/// The QIs of the job `kanon generate` writes, in job order.
const GENERATED_QIS: [&str; 7] = ["zip", "birth_date", "sex", "race", "marital_status", "education", "occupation"];

/// Generates `rows` rows with `seed` into `<dir>/<stem>.duckdb`, table `people`; returns the job file.
fn generate(dir: &Path, stem: &str, rows: u64, seed: u64) -> PathBuf {
    let (rows, seed) = (rows.to_string(), seed.to_string());
    let db = format!("{stem}.duckdb");
    assert_ok(&kanon(dir, &["generate", "--rows", &rows, "--seed", &seed, "--database", &db, "--table", "people"]));
    dir.join(format!("{stem}.job.toml"))
}

/// Distinct QI combinations of the generated source, measured with plain SQL.
fn generated_combinations(db: &Path) -> i64 {
    let by = GENERATED_QIS.map(ident).join(", ");
    scalar(&open_ro(db), &format!("SELECT count(*) FROM (SELECT DISTINCT {by} FROM people)"))
}

/// The same seed gives the same table, another seed another one; the job file and its
/// hierarchy files are written beside the database.
#[test]
fn generate_is_deterministic_and_writes_its_job() {
    let tmp = tempfile::tempdir().unwrap();
    let job = generate(tmp.path(), "a", 3000, 7);
    generate(tmp.path(), "b", 3000, 7);
    generate(tmp.path(), "c", 3000, 8);
    let a = table_rows(&tmp.path().join("a.duckdb"), "people");
    assert_eq!(a.len(), 3000);
    assert_eq!(a, table_rows(&tmp.path().join("b.duckdb"), "people"), "same seed, different tables");
    assert_ne!(a, table_rows(&tmp.path().join("c.duckdb"), "people"), "another seed, same table");

    let text = fs::read_to_string(&job).unwrap();
    let parsed: toml::Table = text.parse().unwrap_or_else(|e| panic!("job is not TOML: {e}\n{text}"));
    assert_eq!(parsed["privacy"]["k"].as_integer(), Some(5));
    assert_eq!(parsed["privacy"]["max_suppression"].as_float(), Some(0.01));
    let qis: Vec<&str> =
        parsed["quasi_identifiers"].as_array().unwrap().iter().map(|q| q["column"].as_str().unwrap()).collect();
    assert_eq!(qis, GENERATED_QIS);
    for h in ["marital_status", "education", "occupation"] {
        let file = tmp.path().join(format!("hierarchies/{h}.csv"));
        assert!(fs::read_to_string(&file).is_ok_and(|t| t.lines().count() > 1), "{} missing", file.display());
    }
}

/// `kanon run` on the generated job releases a table that really is 5-anonymous, within
/// the 1% budget, and reports the source's distinct QI combinations.
#[test]
fn generated_job_runs_to_a_5_anonymous_release() {
    let tmp = tempfile::tempdir().unwrap();
    let job = generate(tmp.path(), "p", 20000, 1);
    assert_ok(&kanon(tmp.path(), &["run", job.to_str().unwrap(), "--quiet"]));
    let r = read_json(&tmp.path().join("p-report.json"));
    assert_eq!(int(&r, "rows_in"), 20000);
    assert!(int(&r, "suppressed") <= 200, "{r}");
    assert_eq!(int(&r, "combinations"), generated_combinations(&tmp.path().join("p.duckdb")));
    let release = tmp.path().join("p-release.duckdb");
    let k = remeasure(&release, "people_k5", &GENERATED_QIS);
    assert!(k >= 5, "the release is only {k}-anonymous");
    assert_eq!(scalar(&open_ro(&release), "SELECT count(*) FROM people_k5"), int(&r, "rows_out"));
}

/// The release's rows in the order written (with their order-keeping the
/// release promises), as text.
fn table_rows_in_order(db: &Path, table: &str) -> Vec<String> {
    strings(&open_ro(db), &format!("SELECT CAST(t AS VARCHAR) FROM {} AS t ORDER BY rowid", ident(table)))
}

/// The in-memory evaluator reads the optimum's suppressed classes and am off
/// its own sets; the SQL one (`memory_rows = 0`) off the optimum's frequency
/// set it kept (top-down keeps it) or the base frequency set (forced node).
/// All release the same rows in the same order, with the same report, under
/// k alone, distinct ℓ and entropy ℓ.
#[test]
fn memory_and_sql_evaluators_release_the_same_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let job = generate(tmp.path(), "p", 20000, 3);
    let base: toml::Table = fs::read_to_string(&job).unwrap().parse().unwrap();
    let privacy = [
        "",
        "l_diversity = { column = \"diagnosis\", l = 2 }",
        "l_diversity = { column = \"diagnosis\", l = 2, kind = \"entropy\" }",
    ];
    for extra in privacy {
        let runs: Vec<(String, Vec<String>)> = [None, Some(0)]
            .iter()
            .map(|memory_rows| {
                let mut j = base.clone();
                if !extra.is_empty() {
                    let models: toml::Table = extra.parse().unwrap();
                    j["privacy"].as_table_mut().unwrap().extend(models);
                }
                if let Some(m) = memory_rows {
                    j.insert("engine".into(), tbl(&format!("memory_rows = {m}")));
                }
                write(&job, toml::to_string(&j).unwrap());
                let _ = fs::remove_file(tmp.path().join("p-release.duckdb"));
                let out = kanon_env(tmp.path(), &["run", job.to_str().unwrap(), "--quiet"], &[("KANON_TRACE", "1")]);
                assert_ok(&out);
                if memory_rows.is_some() {
                    assert!(out.stderr.contains("node classes from kanon_fs_"), "{}", out.stderr);
                }
                let mut r = read_json(&tmp.path().join("p-report.json"));
                let r = r.as_object_mut().unwrap();
                // The sorted base holds the coded rows when no column rides beside the QIs.
                let evaluator = match (memory_rows, extra.is_empty()) {
                    (None, _) => "memory",
                    (Some(_), true) => "sorted",
                    (Some(_), false) => "sql",
                };
                assert_eq!(r["evaluator"], evaluator, "{extra}");
                r.remove("seconds");
                r.remove("evaluator");
                r.remove("job_sha256");
                (
                    serde_json::to_string(r).unwrap(),
                    table_rows_in_order(&tmp.path().join("p-release.duckdb"), "people_k5"),
                )
            })
            .collect();
        assert!(runs[0].0.contains("\"suppressed\""), "{}", runs[0].0);
        assert_eq!(runs[0].0, runs[1].0, "reports differ ({extra})");
        assert!(runs[0].1 == runs[1].1, "releases differ ({extra})");
        assert!(!runs[0].1.is_empty());
    }
}

/// The sorted base counts in `[engine] threads` threads and is used only when it and their
/// buffers fit the job's memory_limit beside DuckDB's pool; otherwise DuckDB's own path runs,
/// and the report's `evaluator` says which. Both release the same rows with the same report.
#[test]
fn the_sorted_base_fits_the_memory_limit_or_gives_way() {
    let tmp = tempfile::tempdir().unwrap();
    let job = generate(tmp.path(), "p", 50_000, 5);
    let base = fs::read_to_string(&job).unwrap();
    // 200MB: room for the keys and one thread's window of counts (96 MB), not two.
    let runs: Vec<(String, Vec<String>)> = [(1, "sorted"), (2, "sql")]
        .iter()
        .map(|(threads, evaluator)| {
            let engine = format!("\n[engine]\nmemory_rows = 0\nmemory_limit = \"200MB\"\nthreads = {threads}\n");
            write(&job, base.clone() + &engine);
            let _ = fs::remove_file(tmp.path().join("p-release.duckdb"));
            let out = kanon_env(tmp.path(), &["run", job.to_str().unwrap(), "--quiet"], &[("KANON_TRACE", "1")]);
            assert_ok(&out);
            assert!(out.stderr.contains("sorted base: needs"), "{}", out.stderr);
            let mut r = read_json(&tmp.path().join("p-report.json"));
            let r = r.as_object_mut().unwrap();
            assert_eq!(r["evaluator"], *evaluator, "threads = {threads}");
            for key in ["seconds", "evaluator", "job_sha256"] {
                r.remove(key);
            }
            (serde_json::to_string(r).unwrap(), table_rows_in_order(&tmp.path().join("p-release.duckdb"), "people_k5"))
        })
        .collect();
    assert_eq!(runs[0].0, runs[1].0, "reports differ");
    assert!(runs[0].1 == runs[1].1 && !runs[0].1.is_empty(), "releases differ");
}

/// More rows, more distinct QI combinations: `kanon limit` counts each table's
/// as a plain `SELECT DISTINCT` over the QIs does.
#[test]
fn generated_combinations_grow_with_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let node = "zip=0,birth_date=0,sex=0,race=0,marital_status=0,education=0,occupation=0";
    let combinations: Vec<i64> = [5000, 20000]
        .iter()
        .map(|&rows| {
            let job = generate(tmp.path(), &format!("p{rows}"), rows, 1);
            let out = kanon(tmp.path(), &["limit", job.to_str().unwrap(), "--node", node, "--quiet"]);
            assert_ok(&out);
            let r: Json = serde_json::from_str(out.stdout.trim()).unwrap();
            assert_eq!(int(&r, "rows"), rows as i64);
            let measured = generated_combinations(&tmp.path().join(format!("p{rows}.duckdb")));
            assert_eq!(int(&r, "combinations"), measured, "{rows} rows");
            measured
        })
        .collect();
    assert!(combinations[0] < combinations[1], "combinations do not grow with rows: {combinations:?}");
}

#[test]
fn generate_zero_rows_is_rejected() {
    let tmp = tempfile::tempdir().unwrap();
    let out = kanon(tmp.path(), &["generate", "--rows", "0", "--database", "p.duckdb", "--table", "people"]);
    assert_fails(&out, 2, &["--rows"]);
    assert!(!tmp.path().join("p.duckdb").exists());
}

/// `kanon limit` prints its timings, the source's rows and QI combinations, and leaves no
/// scratch database behind; a level above a hierarchy's height is bad input.
#[test]
fn limit_times_group_by_and_write() {
    let tmp = tempfile::tempdir().unwrap();
    let job = generate(tmp.path(), "p", 3000, 1);
    let job = job.to_str().unwrap();
    let node = "zip=2,birth_date=2,sex=0,race=1,marital_status=1,education=2,occupation=0";
    let out = kanon(tmp.path(), &["limit", job, "--node", node, "--quiet"]);
    assert_ok(&out);
    let r: Json = serde_json::from_str(out.stdout.trim()).unwrap_or_else(|e| panic!("not JSON: {e}\n{}", out.show()));
    assert_eq!(int(&r, "rows"), 3000);
    assert_eq!(int(&r, "combinations"), generated_combinations(&tmp.path().join("p.duckdb")));
    for key in ["group_by_seconds", "write_seconds", "total_seconds", "maps_write_seconds", "maps_total_seconds"] {
        assert!(r[key].as_f64().is_some_and(|s| s >= 0.0), "`{key}` should be a time in {r}");
    }
    // Both totals: the GROUP BY plus a write (plain SQL expressions; value → label maps).
    for (write, total) in [("write_seconds", "total_seconds"), ("maps_write_seconds", "maps_total_seconds")] {
        let sum = r["group_by_seconds"].as_f64().unwrap() + r[write].as_f64().unwrap();
        assert!((r[total].as_f64().unwrap() - sum).abs() < 1e-9);
    }
    assert_eq!(r["written_as"].as_str(), Some("table"));
    assert_eq!(r["group_by"], "group_by");
    assert!(r["group_by_failed_after_seconds"].is_null());
    let names: Vec<String> =
        fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    assert!(
        !names.iter().any(|n| n.starts_with(".kanon-limit") || n.starts_with("p-release")),
        "left behind: {names:?}"
    );

    let out = kanon(tmp.path(), &["limit", job, "--node", &node.replace("zip=2", "zip=9"), "--quiet"]);
    assert_fails(&out, 2, &["zip", "height"]);

    // The yardsticks when the GROUP BY does not fit in memory: a GROUP BY of
    // the QIs' hash, else a scan of the QIs (forced here), no combinations;
    // the plain write alone.
    for (flag, kind) in [("--hashed", "hashed"), ("--scan", "scan")] {
        let out = kanon(tmp.path(), &["limit", job, "--node", node, "--quiet", flag, "--plain-only"]);
        assert_ok(&out);
        let r: Json = serde_json::from_str(out.stdout.trim()).unwrap();
        assert_eq!(r["group_by"], kind);
        assert_eq!(int(&r, "rows"), 3000, "{kind}");
        assert!(r["combinations"].is_null() && r["maps_write_seconds"].is_null() && r["maps_total_seconds"].is_null());
        // Forced, so no GROUP BY was tried.
        assert!(r["group_by_failed_after_seconds"].is_null());
        let sum = r["group_by_seconds"].as_f64().unwrap() + r["write_seconds"].as_f64().unwrap();
        assert!((r["total_seconds"].as_f64().unwrap() - sum).abs() < 1e-9);
    }
}

/// A run that exceeds DuckDB's memory limit fails with exit 1, says what ran out
/// and which setting to change, and releases nothing.
#[test]
fn memory_limit_exceeded_is_a_clear_failure() {
    let tmp = tempfile::tempdir().unwrap();
    let job = generate(tmp.path(), "p", 200_000, 1);
    let text = std::fs::read_to_string(&job).unwrap() + "\n[engine]\nmemory_limit = \"16MB\"\nthreads = 1\n";
    write(&job, text);
    let out = kanon(tmp.path(), &["run", job.to_str().unwrap(), "--quiet"]);
    assert_fails(&out, 1, &["ran out of memory", "memory_limit"]);
    assert!(!tmp.path().join("p-release.duckdb").exists());
    assert!(!tmp.path().join("p-report.json").exists());
}
