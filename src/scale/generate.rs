//! A synthetic, skewed person-level extract (row id, zip, birth date, sex,
//! race, marital status, education, occupation, income, diagnosis, visit
//! date; see `sql/generate.sql`) written into a DuckDB file, and a ready job
//! file with its hierarchies. The same seed gives the same table.

use crate::engine::embedded::write_atomically;
use crate::error::bad;
use crate::progress::spinner;
use crate::sql::{self, fragment, ident, list, render};
use anyhow::{Context, Result};
use duckdb::Connection;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Draws per row, `u1..`: one per independent choice in `sql/generate.sql`.
const DRAWS: usize = 13;

/// Hierarchy files written beside the job: (column, file stem, `leaf;…;*` lines).
const HIERARCHIES: &[(&str, &[&str])] = &[
    (
        "marital_status",
        &[
            "Never-married;Single;*",
            "Married;Partnered;*",
            "Divorced;Formerly-married;*",
            "Widowed;Formerly-married;*",
            "Separated;Formerly-married;*",
        ],
    ),
    (
        "education",
        &[
            "Primary;Compulsory;No-degree;*",
            "Middle-school;Compulsory;No-degree;*",
            "Some-high-school;Compulsory;No-degree;*",
            "High-school-grad;High-school;No-degree;*",
            "Some-college;High-school;No-degree;*",
            "Associate;Undergraduate;Degree;*",
            "Bachelors;Undergraduate;Degree;*",
            "Masters;Graduate;Degree;*",
            "Professional;Graduate;Degree;*",
            "Doctorate;Graduate;Degree;*",
        ],
    ),
    (
        "occupation",
        &[
            "Admin-clerical;White-collar;*",
            "Sales;White-collar;*",
            "Exec-managerial;White-collar;*",
            "Prof-specialty;White-collar;*",
            "Tech-support;White-collar;*",
            "Craft-repair;Blue-collar;*",
            "Machine-op;Blue-collar;*",
            "Transport;Blue-collar;*",
            "Farming-fishing;Blue-collar;*",
            "Handlers-cleaners;Blue-collar;*",
            "Other-service;Service;*",
            "Protective-service;Service;*",
        ],
    ),
];

/// What `kanon generate` is asked for.
pub(crate) struct Options {
    pub(crate) rows: u64,
    pub(crate) seed: u64,
    pub(crate) database: PathBuf,
    pub(crate) table: String,
    /// The job file; default `<database stem>.job.toml` beside the database.
    pub(crate) job: Option<PathBuf>,
}

/// What was generated, for the command's line.
pub(crate) struct Generated {
    /// The job file written.
    pub(crate) job: PathBuf,
    /// Seconds from the start to the job file written.
    pub(crate) seconds: f64,
}

/// Check the options, write the table, then the job file and its hierarchies.
pub(crate) fn run(opts: &Options, quiet: bool) -> Result<Generated> {
    if opts.rows == 0 {
        return Err(bad("--rows must be at least 1"));
    }
    if opts.table.is_empty() {
        return Err(bad("--table must not be empty"));
    }
    if let Some(dir) = opts.database.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.is_dir() {
            return Err(bad(format!("--database: folder {} does not exist", dir.display())));
        }
    }
    let job = opts.job.clone().unwrap_or_else(|| default_job_path(&opts.database));
    let start = Instant::now();
    let bar = spinner(quiet);
    bar.set_message(format!("generating {} rows into {}", opts.rows, opts.database.display()));
    write_table(&opts.database, &opts.table, opts.rows, opts.seed)
        .with_context(|| format!("writing table \"{}\" of {}", opts.table, opts.database.display()))?;
    bar.finish_and_clear();
    write_job(&job, &opts.database, &opts.table)?;
    Ok(Generated { job, seconds: start.elapsed().as_secs_f64() })
}

fn default_job_path(db: &Path) -> PathBuf {
    let stem = db.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "extract".into());
    db.with_file_name(format!("{stem}.job.toml"))
}

/// Generate into a temporary table, then replace `table` with it in one transaction.
fn write_table(db: &Path, table: &str, rows: u64, seed: u64) -> Result<()> {
    let conn = Connection::open(db)?;
    let tmp = format!("{table}__kanon_tmp");
    let draws = list(1..=DRAWS, ", ", |j| {
        // hash(a, b, …) mixes its arguments weakly (draws came out correlated);
        // a single-argument hash is a strong mixer, so combine by hashing twice.
        format!("(hash(xor(hash(i), hash(xor(hash($1::BIGINT), {j}::UBIGINT)))) >> 11)::DOUBLE / 9007199254740992.0 AS u{j}")
    });
    let q = render(sql::GENERATE, &[("target", &ident(&tmp)), ("draws", &draws)]);
    let (tmp, table) = (ident(&tmp), ident(table));
    let step = |name| fragment(sql::GENERATE_REPLACE, name);
    conn.execute_batch(step("begin"))?;
    let run = || -> Result<()> {
        conn.execute_batch(&render(step("drop"), &[("table", &tmp)]))?;
        conn.execute(&q, duckdb::params![seed as i64, rows as i64])?;
        conn.execute_batch(&render(step("drop"), &[("table", &table)]))?;
        conn.execute_batch(&render(step("rename"), &[("tmp", &tmp), ("table", &table)]))?;
        conn.execute_batch(step("commit"))?;
        Ok(())
    };
    run().inspect_err(|_| {
        let _ = conn.execute_batch(step("rollback"));
    })
}

/// The job file: k = 5 with a 1% budget over 7 QIs, diagnosis kept as the
/// sensitive column (add `l_diversity` to ask for ℓ), the row id dropped.
fn write_job(job: &Path, db: &Path, table: &str) -> Result<()> {
    let dir = job.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let hdir = dir.join("hierarchies");
    std::fs::create_dir_all(&hdir).with_context(|| format!("creating {}", hdir.display()))?;
    for (column, lines) in HIERARCHIES {
        write_atomically(&hdir.join(format!("{column}.csv")), (lines.join("\n") + "\n").as_bytes())?;
    }
    // Paths in a job file are relative to the job file.
    let base = std::path::absolute(dir)?;
    let rel = |p: &Path| -> Result<String> {
        let abs = std::path::absolute(p)?;
        Ok(abs.strip_prefix(&base).map(|r| r.to_path_buf()).unwrap_or(abs).to_string_lossy().into_owned())
    };
    let stem = db.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "extract".into());
    let toml_str = |s: &str| toml::Value::String(s.to_string()).to_string();
    let text = format!(
        r#"# Written by `kanon generate`: a synthetic extract, k = 5 with at most 1% suppressed.
#   kanon run {job}
# Paths are relative to this file.

[source]
database = {db}
table = {table}

[output]
database = {out}
table = {release}
report = {report}
drop = ["row_id"]

[privacy]
k = 5
max_suppression = 0.01
# l_diversity = {{ column = "diagnosis", l = 2 }}

[search]
# algorithm: none given, so kanon picks the fastest search for the optimum;
# name "incognito" for every feasible node too
metric = "glm"

# [engine]
# threads = 2
# memory_limit = "4GB"
# temp_directory = "/tmp/kanon-spill"

[[quasi_identifiers]]
column = "zip"
hierarchy = {{ mask = 4 }}

[[quasi_identifiers]]
column = "birth_date"
hierarchy = {{ date = ["month", "year", "decade"] }}

[[quasi_identifiers]]
column = "sex"
hierarchy = "suppress"

[[quasi_identifiers]]
column = "race"
hierarchy = "suppress"

[[quasi_identifiers]]
column = "marital_status"
hierarchy = {{ file = "hierarchies/marital_status.csv" }}

[[quasi_identifiers]]
column = "education"
hierarchy = {{ file = "hierarchies/education.csv" }}

[[quasi_identifiers]]
column = "occupation"
hierarchy = {{ file = "hierarchies/occupation.csv" }}
"#,
        job = job.display(),
        db = toml_str(&rel(db)?),
        table = toml_str(table),
        out = toml_str(&rel(&db.with_file_name(format!("{stem}-release.duckdb")))?),
        release = toml_str(&format!("{table}_k5")),
        report = toml_str(&rel(&db.with_file_name(format!("{stem}-report.json")))?),
    );
    write_atomically(job, text.as_bytes())
}
