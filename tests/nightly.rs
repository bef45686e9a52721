//! The nightly job's features (docs/nightly.md): pseudonymized columns, the
//! previous node reused while it holds, and the run history in the output
//! database.

use crate::util::{kanon_env, manifest_dir, Out};
use duckdb::Connection;
use serde_json::Value;
use std::path::{Path, PathBuf};

const KEY: &str = "kanon-test-key";

/// HMAC-SHA-256 under KEY of the values' text, from Python 3.11's standard
/// library: `hmac.new(b'kanon-test-key', v.encode(), hashlib.sha256).hexdigest()`.
const PYTHON_HMAC: [(&str, &str); 4] = [
    ("1", "0f85bfa6ff7304e3e41226f260930ad6e179fd97ce77fb737cf9cd65bbddcddb"),
    ("2", "2ba56fc2f15ed8f75414cc7617c0b10caa8258264d71ed0ad7842f9d798d1f8a"),
    ("956-59-8119", "ed7e58c6dd606da65a9f74d31d60b261c4f35ce24bdd878a146d572620ada747"),
    ("956-65-4253", "7767a8b5eb80ffe4a741eb032c863ea8568573e5abee9c35c227358e41275db3"),
];

fn run(dir: &Path, args: &[&str], key: Option<&str>) -> Out {
    let env: Vec<(&str, &str)> = key.map(|k| ("KANON_KEY", k)).into_iter().collect();
    kanon_env(dir, args, &env)
}

fn ok(dir: &Path, args: &[&str], key: Option<&str>) -> Out {
    let out = run(dir, args, key);
    assert_eq!(out.code, 0, "kanon {args:?}:\n{}", out.show());
    out
}

fn report(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The first column of `query` on the DuckDB file `db`, as text.
fn texts(db: &Path, query: &str) -> Vec<String> {
    let conn = Connection::open(db).unwrap();
    let mut stmt = conn.prepare(query).unwrap();
    stmt.query_map([], |r| r.get::<_, Option<String>>(0))
        .unwrap()
        .map(|r| r.unwrap().unwrap_or_else(|| "NULL".into()))
        .collect()
}

fn count(db: &Path, table: &str) -> i64 {
    texts(db, &format!("SELECT count(*)::VARCHAR FROM {table}"))[0].parse().unwrap()
}

/// The demo job in `dir` (its CSV and hierarchy copied), with `output` as
/// the [output] section's extra lines; returns the job's path.
fn demo(dir: &Path, output: &str) -> PathBuf {
    let fixtures = manifest_dir().join("fixtures/demo");
    std::fs::create_dir_all(dir.join("hierarchies")).unwrap();
    std::fs::create_dir_all(dir.join("out")).unwrap();
    std::fs::copy(fixtures.join("patients.csv"), dir.join("patients.csv")).unwrap();
    std::fs::copy(fixtures.join("hierarchies/education.csv"), dir.join("hierarchies/education.csv")).unwrap();
    let job = std::fs::read_to_string(fixtures.join("job.toml"))
        .unwrap()
        .replace("drop = [\"name\", \"ssn\"]", &format!("drop = [\"name\"]\n{output}"));
    let path = dir.join("job.toml");
    std::fs::write(&path, job).unwrap();
    path
}

/// Every file under `dir`, recursively.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn pseudonyms_are_python_s_hmac_the_same_every_run_and_the_key_is_written_nowhere() {
    let dir = tempfile::tempdir().unwrap();
    let job = demo(dir.path(), "pseudonymize = [\"id\", \"ssn\"]");
    let job = job.to_str().unwrap();
    let db = dir.path().join("out/demo.duckdb");
    let release = |db: &Path| texts(db, "SELECT id || '|' || ssn FROM patients_k3 ORDER BY id");

    let first = ok(dir.path(), &["run", job, "--quiet"], Some(KEY));
    let rows = release(&db);
    assert_eq!(rows.len(), 72);
    // The first two source rows (id 1 and 2, ssn 956-59-8119 and 956-65-4253) are kept.
    let pseudonym = |v: &str| PYTHON_HMAC.iter().find(|(x, _)| *x == v).unwrap().1;
    let released: Vec<(String, String)> =
        rows.iter().map(|r| r.split_once('|').map(|(a, b)| (a.into(), b.into())).unwrap()).collect();
    assert!(released.contains(&(pseudonym("1").into(), pseudonym("956-59-8119").into())), "{:?}", &released[..2]);
    assert!(released.contains(&(pseudonym("2").into(), pseudonym("956-65-4253").into())));
    assert!(released.iter().all(|(a, b)| a.len() == 64 && b.len() == 64));
    // The CSV copy holds the same pseudonyms.
    let csv = std::fs::read_to_string(dir.path().join("out/patients_k3.csv")).unwrap();
    assert!(csv.contains(pseudonym("956-59-8119")) && !csv.contains("956-59-8119,"));

    // A second run gives the same pseudonyms.
    let second = ok(dir.path(), &["run", job, "--quiet"], Some(KEY));
    assert_eq!(release(&db), rows);
    // Another key gives others.
    ok(dir.path(), &["run", job, "--quiet"], Some("another key"));
    assert_ne!(release(&db), rows);

    // The key is nowhere: not in any file of the run's folder (outputs,
    // report, DuckDB's temporary files), nor in what it printed. Nor are
    // HMAC's padded keys (what Spark is sent), which are the key's equal.
    let (inner, outer) = kanon::pseudonym::Key::new(KEY.as_bytes()).pads_hex();
    for path in files(dir.path()) {
        let bytes = std::fs::read(&path).unwrap();
        for secret in [KEY, &inner, &outer] {
            assert!(!bytes.windows(secret.len()).any(|w| w == secret.as_bytes()), "{} holds the key", path.display());
        }
    }
    for out in [&first, &second] {
        assert!(!out.both().contains(KEY));
    }
}

#[test]
fn a_missing_or_empty_key_exits_2_with_nothing_written() {
    let dir = tempfile::tempdir().unwrap();
    let job = demo(dir.path(), "pseudonymize = [\"ssn\"]\nkey_env = \"DEMO_KEY\"");
    let job = job.to_str().unwrap();
    for env in [vec![], vec![("DEMO_KEY", "")], vec![("KANON_KEY", KEY)]] {
        let out = kanon_env(dir.path(), &["run", job, "--quiet"], &env);
        assert_eq!(out.code, 2, "{}", out.show());
        assert!(out.stderr.contains("DEMO_KEY"), "{}", out.stderr);
        assert_eq!(files(&dir.path().join("out")), Vec::<PathBuf>::new(), "written with env {env:?}");
    }
    let out = kanon_env(dir.path(), &["run", job, "--quiet"], &[("DEMO_KEY", KEY)]);
    assert_eq!(out.code, 0, "{}", out.show());
}

#[test]
fn a_pseudonymized_column_is_not_a_qi_the_sensitive_column_or_dropped() {
    let dir = tempfile::tempdir().unwrap();
    for (column, says) in [("zip", "a quasi-identifier"), ("diagnosis", "the sensitive column"), ("name", "dropped")] {
        let job = demo(dir.path(), &format!("pseudonymize = [\"{column}\"]"));
        let out = run(dir.path(), &["run", job.to_str().unwrap(), "--quiet"], Some(KEY));
        assert_eq!(out.code, 2, "{}", out.show());
        assert!(out.stderr.contains(&format!("column \"{column}\" is {says}")), "{}", out.stderr);
    }
    let job = demo(dir.path(), "pseudonymize = [\"no_such\"]");
    let out = run(dir.path(), &["run", job.to_str().unwrap(), "--quiet"], Some(KEY));
    assert_eq!(out.code, 2, "{}", out.show());
    assert!(out.stderr.contains("pseudonymized column \"no_such\" is not a column of the source"), "{}", out.stderr);
}

/// A night's extract: `kanon generate`'s rows for `seed` into `night.duckdb`,
/// then `sql` run on it; the job (written once, on the first night) reuses
/// the previous node.
struct Nights {
    dir: tempfile::TempDir,
}

impl Nights {
    fn new(l_diversity: bool) -> Nights {
        let dir = tempfile::tempdir().unwrap();
        let nights = Nights { dir };
        nights.generate(1, 3000, "");
        let text = std::fs::read_to_string(nights.path("generated.toml")).unwrap();
        let mut text = text
            .replace("[search]", "[search]\nreuse = \"previous\"")
            .replace("database = \"night-release.duckdb\"", "database = \"release.duckdb\"");
        if l_diversity {
            text = text.replace("# l_diversity", "l_diversity");
        }
        assert!(text.contains("reuse = \"previous\""));
        std::fs::write(nights.path("job.toml"), text).unwrap();
        nights
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn generate(&self, seed: u64, rows: u64, sql: &str) {
        let db = self.path("night.duckdb");
        let (seed, rows) = (seed.to_string(), rows.to_string());
        let job = self.path("generated.toml");
        let args =
            ["generate", "--rows", &rows, "--seed", &seed, "--database", db.to_str().unwrap(), "--table", "people"];
        ok(self.dir.path(), &[&args[..], &["--job", job.to_str().unwrap(), "--quiet"]].concat(), None);
        if !sql.is_empty() {
            Connection::open(&db).unwrap().execute_batch(sql).unwrap();
        }
    }

    fn run(&self, extra: &[&str]) -> Out {
        let job = self.path("job.toml");
        run(self.dir.path(), &[&["run", job.to_str().unwrap(), "--quiet"][..], extra].concat(), None)
    }

    fn report(&self) -> Value {
        report(&self.path("night-report.json"))
    }

    fn runs(&self) -> i64 {
        count(&self.path("release.duckdb"), "kanon_runs")
    }

    /// A fresh search's node on tonight's data (no reuse), its report aside.
    fn searched_node(&self) -> Value {
        let other = self.path("searched.json");
        let out = self.run(&["--reuse=off", "--report", other.to_str().unwrap()]);
        assert_eq!(out.code, 0, "{}", out.show());
        report(&other)["node"].clone()
    }
}

#[test]
fn the_previous_node_is_kept_while_it_holds_and_drift_names_what_failed() {
    let nights = Nights::new(false);
    // Night 1: no previous report, so a search, and the report says so.
    let out = nights.run(&[]);
    assert_eq!(out.code, 0, "{}", out.show());
    assert!(out.stderr.contains("no previous report"), "{}", out.stderr);
    let first = nights.report();
    assert_eq!(first["reused"], false);
    assert!(first["reuse_note"].as_str().unwrap().starts_with("no previous report at"));
    let node = first["node"].clone();
    assert_eq!(nights.runs(), 1);

    // Night 2: every row twice. Each class doubles and so does the budget,
    // so the node provably still holds: it is released with no search.
    nights.generate(1, 3000, "INSERT INTO people SELECT * FROM people");
    let out = nights.run(&["--compare"]);
    assert_eq!(out.code, 0, "{}", out.show());
    let second = nights.report();
    assert_eq!(second["reused"], true, "{second}");
    assert_eq!(second["algorithm"], "reuse");
    assert_eq!(second["node"], node);
    assert_eq!(second["rows_out"].as_u64().unwrap() + second["suppressed"].as_u64().unwrap(), 6000);
    assert_eq!(count(&nights.path("release.duckdb"), "people_k5"), second["rows_out"].as_i64().unwrap());
    // --compare: today's optimum is the fresh search's, the excess its difference.
    let compare = &second["compare"];
    assert_eq!(compare["optimum"], nights.searched_node());
    let (kept, best) = (compare["kept_value"].as_f64().unwrap(), compare["optimum_value"].as_f64().unwrap());
    assert_eq!(kept, second["metrics"]["glm"].as_f64().unwrap());
    assert!((compare["excess"].as_f64().unwrap() - (kept - best)).abs() < 1e-9 && kept >= best);
    assert_eq!(nights.runs(), 3, "night 2 and the fresh search each add a row");

    // Night 3: a tenth of the rows. The node's classes shrink under k.
    nights.generate(5, 300, "");
    let released_before = texts(&nights.path("release.duckdb"), "SELECT count(*)::VARCHAR FROM people_k5");
    let report_before = std::fs::read_to_string(nights.path("night-report.json")).unwrap();
    // reuse = "required": exit 3, nothing written, nothing recorded.
    let out = nights.run(&["--reuse=required"]);
    assert_eq!(out.code, 3, "{}", out.show());
    assert!(out.stderr.contains("no longer meets the job (k fails)"), "{}", out.stderr);
    assert_eq!(texts(&nights.path("release.duckdb"), "SELECT count(*)::VARCHAR FROM people_k5"), released_before);
    assert_eq!(std::fs::read_to_string(nights.path("night-report.json")).unwrap(), report_before);
    assert_eq!(nights.runs(), 3);
    // reuse = "previous": a warning, a search, and the drift in the report.
    let out = nights.run(&[]);
    assert_eq!(out.code, 0, "{}", out.show());
    assert!(out.stderr.contains("warning: the previous node"), "{}", out.stderr);
    let third = nights.report();
    assert_eq!(third["reused"], false);
    assert_eq!(third["drift"]["failed"], "k");
    assert_eq!(third["drift"]["previous_node"], node);
    assert_eq!(third["drift"]["node"], third["node"]);
    assert_eq!(third["node"], nights.searched_node());
    assert_ne!(third["node"], node);
    // The history holds the drift.
    let drift = texts(&nights.path("release.duckdb"), "SELECT drift FROM kanon_runs WHERE drift IS NOT NULL");
    assert_eq!(drift.len(), 1);
    assert_eq!(serde_json::from_str::<Value>(&drift[0]).unwrap(), third["drift"]);
}

#[test]
fn drift_names_l_when_the_sensitive_values_stop_varying() {
    let nights = Nights::new(true);
    assert_eq!(nights.run(&[]).code, 0);
    let node = nights.report()["node"].clone();
    // The same rows, one diagnosis for all: k still holds, ℓ = 2 nowhere.
    nights.generate(1, 3000, "UPDATE people SET diagnosis = 'same'");
    let out = nights.run(&["--reuse=required"]);
    assert_eq!(out.code, 3, "{}", out.show());
    assert!(out.stderr.contains("(l fails)"), "{}", out.stderr);
    // Nothing is feasible at all now, so a search exits 3 too, after reporting the drift on stderr.
    let out = nights.run(&[]);
    assert_eq!(out.code, 3, "{}", out.show());
    assert!(out.stderr.contains("(l fails:"), "{}", out.stderr);
    assert_eq!(nights.report()["node"], node, "a failed run leaves the report");
}

#[test]
fn reuse_is_refused_where_it_cannot_apply() {
    let dir = tempfile::tempdir().unwrap();
    let job = demo(dir.path(), "");
    let job = job.to_str().unwrap();
    for (args, says) in [
        (vec!["--reuse", "--node", "zip=2,age=3,birth_date=3,sex=0,education=2"], "does not combine with --node"),
        (vec!["--reuse", "--scheme", "bhs"], "does not combine with a scheme"),
        (vec!["--reuse", "--algorithm", "cdgh"], "does not combine with algorithm cdgh"),
        (vec!["--compare"], "--compare compares the reused node"),
    ] {
        let out = run(dir.path(), &[&["run", job, "--quiet"][..], &args].concat(), None);
        assert_eq!(out.code, 2, "{args:?}: {}", out.show());
        assert!(out.stderr.contains(says), "{args:?}: {}", out.stderr);
    }
}

#[test]
fn kanon_runs_gains_one_row_per_successful_run_and_none_for_a_failed_or_killed_one() {
    let nights = Nights::new(false);
    nights.generate(3, 300_000, "");
    let job = nights.path("job.toml");
    let job = job.to_str().unwrap();
    let db = nights.path("release.duckdb");
    assert_eq!(nights.run(&["--reuse=off"]).code, 0);
    assert_eq!(nights.runs(), 1);
    // Infeasible (exit 3: the leaves with nothing suppressed): nothing appended.
    let leaves = "zip=0,birth_date=0,sex=0,race=0,marital_status=0,education=0,occupation=0";
    let out = nights.run(&["--reuse=off", "--max-suppression", "0", "--node", leaves]);
    assert_eq!(out.code, 3, "{}", out.show());
    assert!(out.stderr.contains("the given node is not feasible for k = "), "{}", out.show());
    assert!(out.stderr.contains("with at most 0 suppressed rows"), "{}", out.show());
    assert_eq!(nights.runs(), 1);
    // Killed at several moments, each run releasing under its own table name:
    // the table exists exactly when its run's row does (one transaction).
    let mut left_nothing = 0;
    for (i, delay_ms) in [20u64, 150, 400, 800, 1500, 3000].iter().enumerate() {
        let table = format!("people_kill_{i}");
        let text =
            std::fs::read_to_string(&job).unwrap().replace("table = \"people_k5\"", &format!("table = \"{table}\""));
        let killed_job = nights.path(&format!("kill_{i}.toml"));
        std::fs::write(&killed_job, text).unwrap();
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_kanon"))
            .args(["run", killed_job.to_str().unwrap(), "--quiet", "--reuse=off"])
            .current_dir(nights.dir.path())
            .env_remove("KANON_KEY")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(*delay_ms));
        let _ = child.kill(); // SIGKILL
        child.wait().unwrap();
        let exists = texts(
            &db,
            &format!("SELECT count(*)::VARCHAR FROM duckdb_tables() WHERE database_name = 'release' AND table_name = '{table}'"),
        )[0] == "1";
        let recorded = texts(&db, &format!("SELECT count(*)::VARCHAR FROM kanon_runs WHERE output_table = '{table}'"))
            [0]
        .parse::<i64>()
        .unwrap();
        assert_eq!(recorded, exists as i64, "killed after {delay_ms} ms: table {exists}, history rows {recorded}");
        left_nothing += !exists as usize;
    }
    assert!(left_nothing > 0, "no kill came before a commit");
    // kanon history lists the recorded runs, oldest first.
    let out = ok(nights.dir.path(), &["history", job, "--json"], None);
    let history: Vec<Value> = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(history.len() as i64, nights.runs());
    assert_eq!(history[0]["output_table"], "people_k5");
    assert_eq!(history[0]["rows_in"], 300_000);
    assert_eq!(history[0]["node"], report(&nights.path("night-report.json"))["node"]);
    let out = ok(nights.dir.path(), &["history", job], None);
    assert!(out.stdout.starts_with("started_at"), "{}", out.stdout);
    assert_eq!(out.stdout.lines().count() as i64, nights.runs() + 1);
}

#[test]
fn a_release_named_like_the_history_is_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let job = demo(dir.path(), "");
    let text = std::fs::read_to_string(&job).unwrap().replace("table = \"patients_k3\"", "table = \"KANON_RUNS\"");
    std::fs::write(&job, &text).unwrap();
    let out = run(dir.path(), &["run", job.to_str().unwrap(), "--quiet"], None);
    assert_eq!(out.code, 2, "{}", out.show());
    assert!(out.stderr.contains("is the run history's table"), "{}", out.stderr);
    assert_eq!(files(&dir.path().join("out")), Vec::<PathBuf>::new());
    // With the history off, the name is the user's to take.
    std::fs::write(&job, text.replace("[output]", "[output]\nhistory = false")).unwrap();
    assert_eq!(run(dir.path(), &["run", job.to_str().unwrap(), "--quiet"], None).code, 0);
}
