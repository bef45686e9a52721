//! The run history: with an output database, every successful `kanon run`
//! appends one row to its `kanon_runs` table in the release's own
//! transaction, so a failed or killed run appends nothing; `kanon history`
//! reads it back. The row is taken from the run's report (one source of
//! truth for what was released).

use crate::engine::commit::CommitTarget;
use crate::engine::embedded::{self, OUT};
use crate::error::bad;
use crate::job::Job;
use crate::sql::{self, ident, render};
use anyhow::{Context, Result};
use duckdb::Connection;
use serde_json::{Map, Value};

/// The table the history lives in, in the output database.
pub use crate::engine::commit::RUNS;

/// One run, as its history row holds it.
pub(crate) struct Run {
    /// When the run started, microseconds since the Unix epoch (UTC).
    pub(crate) started_micros: i64,
    /// The run's report (the model's section, risk, output), as JSON.
    pub(crate) report: Value,
    pub(crate) seconds: f64,
}

fn runs_table() -> String {
    format!("{}.main.{}", ident(OUT), ident(RUNS))
}

fn text(v: Option<&Value>) -> Option<String> {
    v.filter(|v| !v.is_null()).map(Value::to_string)
}

/// Append `run` to the history where the release is about to commit (inside its transaction).
pub(crate) fn append(target: CommitTarget, job: &Job, run: &Run) -> Result<()> {
    let r = &run.report;
    let int = |key: &str| r.get(key).and_then(Value::as_i64);
    let output = r.get("output");
    let started = chrono::DateTime::from_timestamp_micros(run.started_micros)
        .map(|t| t.format("%Y-%m-%d %H:%M:%S%.6f").to_string())
        .context("the run's start time")?;
    let output_table = output.and_then(|o| o.get("table")).and_then(Value::as_str).map(String::from);
    let model = r.get("algorithm").or_else(|| r.get("scheme")).and_then(Value::as_str).map(String::from);
    let risk = text(r.get("risk").and_then(|x| x.get("release")));
    let (job_path, source) = (job.path.display().to_string(), job.source.describe());
    let (rows_in, rows_out, suppressed) = (int("rows_in"), int("rows_out"), int("suppressed"));
    let (node, k, l) = (text(r.get("node")), int("k").or_else(|| int("k_requested")), int("l"));
    let (metrics, reused, drift) =
        (text(r.get("metrics")), r.get("reused").and_then(Value::as_bool), text(r.get("drift")));
    let context = || format!("appending the run to {RUNS}");
    match target {
        CommitTarget::DuckDb(conn) => {
            let runs = runs_table();
            conn.execute_batch(&render(sql::fragment(sql::HISTORY, "create"), &[("runs", &runs)]))?;
            let params: Vec<duckdb::types::Value> = vec![
                started.into(),
                job_path.into(),
                job.sha256.clone().into(),
                source.into(),
                output_table.into(),
                model.into(),
                rows_in.into(),
                rows_out.into(),
                suppressed.into(),
                node.into(),
                k.into(),
                l.into(),
                metrics.into(),
                reused.into(),
                drift.into(),
                risk.into(),
                run.seconds.into(),
            ];
            conn.execute(
                &render(sql::fragment(sql::HISTORY, "insert"), &[("runs", &runs)]),
                duckdb::params_from_iter(params),
            )
            .with_context(context)?;
        }
        CommitTarget::Postgres { tx, schema } => {
            let runs = crate::engine::postgres::runs_place(schema);
            tx.batch_execute(&render(sql::fragment(sql::HISTORY, "create"), &[("runs", &runs)]))
                .with_context(context)?;
            tx.execute(
                &render(sql::fragment(sql::HISTORY, "insert"), &[("runs", &runs)]),
                &[
                    &started,
                    &job_path,
                    &job.sha256,
                    &source,
                    &output_table,
                    &model,
                    &rows_in,
                    &rows_out,
                    &suppressed,
                    &node,
                    &k,
                    &l,
                    &metrics,
                    &reused,
                    &drift,
                    &risk,
                    &run.seconds,
                ],
            )
            .with_context(context)?;
        }
        CommitTarget::Spark(spark) => {
            use spark_connect::row::Value as V;
            use spark_connect::types::DataType as T;
            let runs = crate::engine::spark::runs_name(job);
            let create = render(
                sql::fragment(sql::HISTORY, "create_spark"),
                &[("runs", &crate::engine::spark::qualified(&runs))],
            );
            let text = || T::String { collation: "UTF8_BINARY".into() };
            let s = |v: Option<String>| v.map_or(V::Null, V::String);
            let i = |v: Option<i64>| v.map_or(V::Null, V::Long);
            let row = vec![
                ("started_at", V::Timestamp(run.started_micros), T::TimestampNtz),
                ("job", V::String(job_path), text()),
                ("job_sha256", V::String(job.sha256.clone()), text()),
                ("source", V::String(source), text()),
                ("output_table", s(output_table), text()),
                ("model", s(model), text()),
                ("rows_in", i(rows_in), T::Long),
                ("rows_out", i(rows_out), T::Long),
                ("suppressed", i(suppressed), T::Long),
                ("node", s(node), text()),
                ("k", i(k), T::Long),
                ("l", i(l), T::Long),
                ("metrics", s(metrics), text()),
                ("reused", reused.map_or(V::Null, V::Bool), T::Boolean),
                ("drift", s(drift), text()),
                ("risk", s(risk), text()),
                ("seconds", V::Double(run.seconds), T::Double),
            ];
            spark.append_row(&runs, &create, row).with_context(context)?;
        }
    }
    Ok(())
}

/// The job's history, oldest first (empty when no run has been recorded).
pub(crate) fn read(job: &Job) -> Result<Vec<Map<String, Value>>> {
    let file = job.path.display();
    if let Some(remote) = crate::engine::connect(job)? {
        let conn = Connection::open_in_memory()?;
        let Some(runs) = remote.history(job)? else {
            return Ok(Vec::new());
        };
        remote.fetch(&conn, &embedded::statement("select_all", &[("relation", &runs)]), "kanon_runs_fetched")?;
        return rows(&conn, "kanon_runs_fetched");
    }
    let Some(out) = &job.output.table else {
        return Err(bad(format!(
            "{file}: the run history is kept in the output database; this job writes no [output] database"
        )));
    };
    if !out.database.exists() {
        return Ok(Vec::new());
    }
    let conn = Connection::open_in_memory()?;
    embedded::attach_output(&conn, job, out, true)?;
    if !embedded::table_exists(&conn, OUT, RUNS)? {
        return Ok(Vec::new());
    }
    rows(&conn, &runs_table())
}

/// The history table `runs` (on `conn`) as JSON objects, oldest first.
fn rows(conn: &Connection, runs: &str) -> Result<Vec<Map<String, Value>>> {
    let mut stmt = conn.prepare(&render(sql::fragment(sql::HISTORY, "read"), &[("runs", runs)]))?;
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
