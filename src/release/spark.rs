//! The full-domain release on the Spark engine.

use super::Written;
use crate::database::SourceColumn;
use crate::hierarchy::{code_table, dim_table, node_table};
use crate::job::Job;
use crate::spark::Spark;
use crate::sql::{self, ident, list, render};
use anyhow::{Context, Result};
use duckdb::Connection;

/// The full-domain release on Spark ([`crate::spark`]): the value maps (each
/// source value as it is, its group's code at the node and label) and the
/// suppressed classes go to the session as small views, and one statement of
/// joins ([`sql::RELEASE_JOINED`]) writes the release table there.
pub(super) fn write_levels(
    conn: &Connection,
    spark: &Spark,
    job: &Job,
    columns: &[SourceColumn],
    levels: &[u8],
    dropped: &[Box<[i64]>],
) -> Result<Written> {
    let n = levels.len();
    let table = job.output.spark_table.as_deref().context("a Spark job names its release table")?;
    for (a, &l) in levels.iter().enumerate() {
        let q = render(
            sql::fragment(sql::RELEASE_MAP, "value_map"),
            &[
                ("n", "k.n"),
                ("code", &format!("c{l}")),
                ("codes", &code_table(a)),
                ("dim", &dim_table(a)),
                ("nodes", &node_table(a)),
                ("level", &l.to_string()),
            ],
        );
        spark.share(
            conn,
            &format!("SELECT n, code::BIGINT AS code, label FROM ({q})"),
            &[],
            &format!("kanon_release_map_{a}"),
        )?;
    }
    // The dropped classes, as a local table of their codes sent over.
    conn.execute_batch(&format!(
        "CREATE OR REPLACE TEMP TABLE kanon_release_dropped ({})",
        list(0..n, ", ", |a| format!("c{a} BIGINT"))
    ))?;
    let mut app = conn.appender_to_catalog_and_db("kanon_release_dropped", "temp", "main")?;
    for class in dropped {
        app.append_row(duckdb::appender_params_from_iter(class.iter()))?;
    }
    app.flush()?;
    drop(app);
    spark.share(conn, "SELECT * FROM kanon_release_dropped", &[], "kanon_release_dropped")?;
    let qis = job.qi_names();
    let out = &job.output;
    let mut joins = list(qis.iter().enumerate(), "\n", |(a, q)| {
        format!("JOIN kanon_release_map_{a} m{a} ON s.{} IS NOT DISTINCT FROM m{a}.n", ident(q))
    });
    if !out.pseudonymize.is_empty() {
        // Spark has SHA-256 but no HMAC: HMAC from its definition, the padded
        // keys a one-row view of data (never the statement's text).
        let key = out.key.as_ref().context("[output] pseudonymize without a key")?;
        let (inner, outer) = key.pads_hex();
        spark.share_secret_row("kanon_release_key", &[("inner", inner), ("outer", outer)])?;
        joins.push_str("\nCROSS JOIN kanon_release_key kk");
    }
    let select = list(columns.iter().filter(|c| !out.drop.iter().any(|d| d.name == c.name)), ", ", |c| {
        let name = ident(&c.name);
        match qis.iter().position(|q| *q == c.name) {
            Some(a) => format!("m{a}.label AS {name}"),
            None if out.pseudonymize.iter().any(|p| p.name == c.name) => format!(
                "sha2(concat(unhex(kk.outer), unhex(sha2(concat(unhex(kk.inner), encode(CAST(s.{name} AS STRING), 'UTF-8')), 256))), 256) AS {name}"
            ),
            None => format!("s.{name}"),
        }
    });
    let select = render(
        sql::RELEASE_JOINED,
        &[("columns", &select), ("joins", &joins), ("match", &list(0..n, " AND ", |a| format!("d.c{a} = m{a}.code")))],
    );
    let rows = spark.write_table(table, &select)?;
    Ok(Written { rows })
}
