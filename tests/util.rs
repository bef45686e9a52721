//! What the test modules share: the binary runner, where Adult is (with the
//! one skip notice) and the hierarchy-file reader.

use std::path::{Path, PathBuf};
use std::process::Command;

/// What one run of the binary produced.
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Out {
    pub fn show(&self) -> String {
        format!("exit {}\n--- stdout\n{}\n--- stderr\n{}", self.code, self.stdout, self.stderr)
    }

    /// stdout then stderr, for tests that search both.
    pub fn both(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

/// Runs `kanon ARGS` with `cwd` as working directory.
pub fn kanon(cwd: &Path, args: &[&str]) -> Out {
    kanon_env(cwd, args, &[])
}

/// [`kanon`] with environment variables set; the pseudonymization key
/// (`KANON_KEY`) only when `env` gives it.
pub fn kanon_env(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Out {
    let out = Command::new(env!("CARGO_BIN_EXE_kanon"))
        .args(args)
        .current_dir(cwd)
        .env_remove("KANON_KEY")
        .envs(env.iter().copied())
        .output()
        .expect("cannot start kanon");
    Out {
        code: out.status.code().unwrap_or(-1), // -1: killed by a signal
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The repository's root.
pub fn manifest_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
}

/// What a test needs is missing (a server, the shared data). In CI (`CI`
/// is `true`, as `.ci/run` sets it) that fails the test, naming it: a green
/// CI has run every test. Elsewhere (a user's clone) the test skips: the
/// notice goes to stderr and to the run's list of skips (the file
/// `KANON_SKIPS` names), which `tests/spark.sh` prints in its summary.
pub fn missing(what: &str) {
    if std::env::var("CI").is_ok_and(|v| v == "true" || v == "1") {
        panic!("CI: {what} is missing, so this test cannot run (.ci/run installs and starts what the tests need)");
    }
    let test = std::thread::current().name().unwrap_or("a test").to_string();
    eprintln!("notice: {what} is missing; {test} skips");
    if let Some(path) = std::env::var_os("KANON_SKIPS") {
        use std::io::Write;
        if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
            let _ = writeln!(f, "{test}: {what}");
        }
    }
}

/// UCI Adult with its ARX hierarchies (`../shared/data/adult`, beside the
/// clone, never part of it), canonical; None after [`missing`] when absent.
pub fn adult_dir() -> Option<PathBuf> {
    let dir = manifest_dir().join("../shared/data/adult");
    if dir.join("adult.csv").is_file() {
        Some(dir.canonicalize().unwrap())
    } else {
        missing("../shared/data/adult (UCI Adult)");
        None
    }
}

/// A hierarchy file as written: rows `leaf;level1;…;top`, in file order.
pub fn hierarchy_rows(path: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(path).unwrap().lines().map(|l| l.split(';').map(String::from).collect()).collect()
}

/// A run's report without what differs by engine: timings, where the release
/// went, the job's hash.
pub fn engine_report(path: &Path) -> serde_json::Value {
    let mut r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    for key in ["seconds", "output", "job_sha256"] {
        r.as_object_mut().unwrap().remove(key);
    }
    r
}

/// Every row of the DuckDB relation `relation` as text, sorted (Spark and
/// PostgreSQL keep no row order).
pub fn sorted_rows(conn: &duckdb::Connection, relation: &str) -> Vec<String> {
    let texts = |q: &str| -> Vec<String> {
        conn.prepare(q).unwrap().query_map([], |r| r.get(0)).unwrap().collect::<duckdb::Result<_>>().unwrap()
    };
    let columns = texts(&format!("SELECT column_name FROM (DESCRIBE SELECT * FROM {relation})"));
    let text = columns
        .iter()
        .map(|c| format!("coalesce(CAST(\"{c}\" AS VARCHAR), '∅')"))
        .collect::<Vec<_>>()
        .join(" || '|' || ");
    let mut rows = texts(&format!("SELECT {text} FROM {relation}"));
    rows.sort();
    rows
}

/// A minimal job on engine `kind` at `url` (written in `dir`), for a test's
/// own session with a Spark or PostgreSQL server.
pub fn engine_job(dir: &Path, kind: &str, url: &str) -> kanon::job::Job {
    let path = dir.join("session.toml");
    std::fs::write(
        &path,
        format!(
            "[engine]\nkind = \"{kind}\"\nurl = \"{url}\"\n[source]\ntable = \"t\"\n[output]\ntable = \"o\"\n\
             [privacy]\nk = 2\n[[quasi_identifiers]]\ncolumn = \"a\"\nhierarchy = \"suppress\"\n"
        ),
    )
    .unwrap();
    kanon::job::Job::load(&path).unwrap()
}
