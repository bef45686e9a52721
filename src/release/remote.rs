//! The full-domain release on a remote engine (Spark, PostgreSQL).

use super::Written;
use crate::data::hierarchy::{code_table, dim_table, node_table};
use crate::engine::embedded::{statement, SourceColumn};
use crate::engine::remote::RemoteEngine;
use crate::job::Job;
use crate::sql::{self, ident, list, render};
use anyhow::{Context, Result};
use duckdb::Connection;

/// The full-domain release where the source lives ([`crate::engine::remote`]): the
/// value maps (each source value as it is, its group's code at the node and
/// label) and the suppressed classes go to the session as small tables, and
/// one statement of joins ([`sql::RELEASE_JOINED`]) writes the release table there.
pub(super) fn write_levels(
    conn: &Connection,
    remote: &dyn RemoteEngine,
    job: &Job,
    columns: &[SourceColumn],
    levels: &[u8],
    dropped: &[Box<[i64]>],
    dropped_there: Option<&str>,
    before_commit: Option<&super::BeforeCommit>,
) -> Result<Written> {
    let n = levels.len();
    let table = job.output.remote_table.as_deref().context("a remote job names its release table")?;
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
        remote.share(conn, &statement("release_map_shared", &[("map", &q)]), &[], &format!("kanon_release_map_{a}"))?;
    }
    // The dropped classes: left there by the engine evaluator, or a local table of their codes sent over.
    let dropped = match dropped_there {
        Some(table) => table.to_string(),
        None => {
            conn.execute_batch(&statement(
                "release_dropped",
                &[("columns", &list(0..n, ", ", |a| format!("c{a} BIGINT")))],
            ))?;
            let mut app = conn.appender_to_catalog_and_db("kanon_release_dropped", "temp", "main")?;
            for class in dropped {
                app.append_row(duckdb::appender_params_from_iter(class.iter()))?;
            }
            app.flush()?;
            drop(app);
            let dropped = statement("select_all", &[("relation", "kanon_release_dropped")]);
            remote.share(conn, &dropped, &[], "kanon_release_dropped")?;
            "kanon_release_dropped".to_string()
        }
    };
    let qis = job.qi_names();
    let out = &job.output;
    let mut joins = String::new();
    for (a, q) in qis.iter().enumerate() {
        let t = columns.iter().find(|c| &c.name == q).map_or("", |c| c.type_name.as_str());
        let nullable = crate::engine::embedded::has_null(conn, &crate::data::hierarchy::code_table(a))?;
        let on = remote.same_value(&format!("s.{}", ident(q)), &format!("m{a}.n"), t, nullable);
        joins.push_str(&format!("\nJOIN kanon_release_map_{a} m{a} ON {on}"));
    }
    let pseudonym = match out.pseudonymize.is_empty() {
        true => None,
        false => {
            let key = out.key.as_ref().context("[output] pseudonymize without a key")?;
            joins.push_str("\nCROSS JOIN kanon_release_key kk");
            Some(remote.share_key(key)?)
        }
    };
    let select = list(columns.iter().filter(|c| !out.drop.iter().any(|d| d.name == c.name)), ", ", |c| {
        let name = ident(&c.name);
        match qis.iter().position(|q| *q == c.name) {
            Some(a) => format!("m{a}.label AS {name}"),
            None if out.pseudonymize.iter().any(|p| p.name == c.name) => {
                format!("{} AS {name}", pseudonym.expect("a key was shared")(&format!("s.{name}")))
            }
            None => format!("s.{name}"),
        }
    });
    let select = render(
        sql::RELEASE_JOINED,
        &[
            ("columns", &select),
            ("joins", &joins),
            ("match", &list(0..n, " AND ", |a| format!("d.c{a} = m{a}.code"))),
            ("dropped", &ident(&dropped)),
        ],
    );
    let rows = remote.write_table(table, &select, before_commit)?;
    Ok(Written { rows })
}
