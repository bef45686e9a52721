//! The run history: with an output database, every successful `kanon run`
//! appends one row to its `kanon_runs` table in the release's own
//! transaction, so a failed or killed run appends nothing; `kanon history`
//! reads it back. The row is taken from the run's report (one source of
//! truth for what was released).

use crate::database::{self, OUT};
use crate::error::bad;
use crate::job::Job;
use crate::sql::{self, ident, render};
use anyhow::{Context, Result};
use duckdb::Connection;
use serde_json::{Map, Value};

/// The table the history lives in, in the output database.
pub const RUNS: &str = "kanon_runs";

/// One run, as its history row holds it.
pub struct Run {
    /// When the run started, microseconds since the Unix epoch (UTC).
    pub started_micros: i64,
    /// The run's report (the model's section, risk, output), as JSON.
    pub report: Value,
    pub seconds: f64,
}

fn runs_table() -> String {
    format!("{}.main.{}", ident(OUT), ident(RUNS))
}

fn text(v: Option<&Value>) -> Option<String> {
    v.filter(|v| !v.is_null()).map(Value::to_string)
}

/// Append `run` to the attached output database's history (inside the caller's transaction).
pub fn append(conn: &Connection, job: &Job, run: &Run) -> Result<()> {
    let runs = runs_table();
    conn.execute_batch(&render(sql::fragment(sql::HISTORY, "create"), &[("runs", &runs)]))?;
    let r = &run.report;
    let int = |key: &str| r.get(key).and_then(Value::as_i64);
    let output = r.get("output");
    let output_table = output.and_then(|o| o.get("table")).and_then(Value::as_str).map(String::from);
    let model = r.get("algorithm").or_else(|| r.get("scheme")).and_then(Value::as_str).map(String::from);
    let risk = r.get("risk").and_then(|x| x.get("release"));
    let params: Vec<duckdb::types::Value> = vec![
        run.started_micros.into(),
        job.path.display().to_string().into(),
        job.sha256.clone().into(),
        job.source.describe().into(),
        output_table.into(),
        model.into(),
        int("rows_in").into(),
        int("rows_out").into(),
        int("suppressed").into(),
        text(r.get("node")).into(),
        int("k").or_else(|| int("k_requested")).into(),
        int("l").into(),
        text(r.get("metrics")).into(),
        r.get("reused").and_then(Value::as_bool).into(),
        text(r.get("drift")).into(),
        text(risk).into(),
        run.seconds.into(),
    ];
    conn.execute(&render(sql::fragment(sql::HISTORY, "insert"), &[("runs", &runs)]), duckdb::params_from_iter(params))
        .with_context(|| format!("appending the run to {RUNS}"))?;
    Ok(())
}

/// The job's history, oldest first (empty when no run has been recorded).
pub fn read(job: &Job) -> Result<Vec<Map<String, Value>>> {
    let file = job.path.display();
    let Some(out) = &job.output.table else {
        return Err(bad(format!(
            "{file}: the run history is kept in the output database; this job writes no [output] database"
        )));
    };
    if !out.database.exists() {
        return Ok(Vec::new());
    }
    let conn = Connection::open_in_memory()?;
    database::attach_output(&conn, job, out, true)?;
    if !database::table_exists(&conn, OUT, RUNS)? {
        return Ok(Vec::new());
    }
    let mut stmt = conn.prepare(&render(sql::fragment(sql::HISTORY, "read"), &[("runs", &runs_table())]))?;
    let mut rows = stmt.query([])?;
    let names: Vec<String> = rows.as_ref().context("the history's columns")?.column_names();
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        let mut m = Map::new();
        for (i, name) in names.iter().enumerate() {
            let v = match row.get_ref(i)? {
                duckdb::types::ValueRef::Null => Value::Null,
                duckdb::types::ValueRef::BigInt(x) => x.into(),
                duckdb::types::ValueRef::Double(x) => x.into(),
                duckdb::types::ValueRef::Boolean(x) => x.into(),
                duckdb::types::ValueRef::Text(t) => {
                    let t = String::from_utf8_lossy(t).into_owned();
                    // The JSON columns come back as JSON.
                    match ["node", "metrics", "drift", "risk"].contains(&name.as_str()) {
                        true => serde_json::from_str(&t).unwrap_or(Value::String(t)),
                        false => Value::String(t),
                    }
                }
                other => Value::String(format!("{other:?}")),
            };
            m.insert(name.clone(), v);
        }
        out.push(m);
    }
    Ok(out)
}
