//! The limit on Spark or PostgreSQL, measured on the engine itself: the
//! GROUP BY of the QI columns as a work table there (counted, then dropped),
//! and every source row recoded at the node by the plain expressions the
//! release writes ([`crate::release::plain`]) into a table written as the
//! engine writes a release (then dropped).

use super::First;
use super::{check_rows, hierarchies, Plan, Report};
use crate::engine::remote::{RemoteEngine, WorkUse};
use crate::error::bad;
use crate::load::{check_columns, check_remote_types};
use crate::progress::spinner;
use crate::release::plain;
use crate::sql::{self, fragment, ident, list, render};
use anyhow::{Context, Result};
use std::time::Instant;

/// The work table of the GROUP BY there.
const GROUPS: &str = "kanon_limit_groups";

/// Time the GROUP BY and the plain write on the job's engine.
pub(super) fn run(plan: &Plan, quiet: bool) -> Result<Report> {
    let job = &plan.job;
    let name = job.engine.kind.name();
    let flag = match plan.first {
        First::GroupBy => None,
        First::Hashed => Some("--hashed"),
        First::Scan => Some("--scan"),
    };
    if let Some(flag) = flag {
        return Err(bad(format!(
            "{}: {flag} is DuckDB's fallback when its GROUP BY does not fit in memory; on {name} `kanon limit` times the plain GROUP BY",
            job.path.display()
        )));
    }
    let opened = crate::engine::open(job, false)?;
    let (conn, columns) = (&opened.conn, &opened.columns);
    let remote = opened.remote.as_ref().context("a job on a remote engine")?;
    check_columns(job, columns)?;
    check_remote_types(job, remote.as_ref(), columns)?;
    let qis = job.qi_names();
    let bar = spinner(quiet);

    bar.set_message(format!("GROUP BY of the quasi-identifiers on {name}"));
    let start = Instant::now();
    let (combinations, rows) = group_by(conn, remote.as_ref(), &super::grouped_columns(job))?;
    let group_by_seconds = start.elapsed().as_secs_f64();
    remote.drop_work(GROUPS)?;

    bar.set_message("building hierarchies");
    let start = Instant::now();
    let heights = hierarchies(conn, Some(remote), job, &qis, &plan.levels)?;
    let recoding = plain::recoding_on_engine(conn, remote.as_ref(), job, columns, &plan.levels, &heights)?;
    let hierarchy_seconds = start.elapsed().as_secs_f64();

    bar.set_message(format!("recode-and-write on {name}"));
    let select = list(columns.iter().filter(|c| !job.output.drop.iter().any(|d| d.name == c.name)), ", ", |c| {
        let column = ident(&c.name);
        match qis.iter().position(|q| *q == c.name) {
            Some(a) => format!("{} AS {column}", recoding.labels[a]),
            None => format!("s.{column}"),
        }
    });
    let select = render(fragment(sql::LIMIT, "engine_write"), &[("columns", &select), ("joins", &recoding.joins)]);
    let table = job.output.remote_table.as_deref().context("a remote job names its release table")?;
    let start = Instant::now();
    let written = remote.write_scratch(table, &select).context("recoding and writing the source")?;
    let write_seconds = start.elapsed().as_secs_f64();
    check_rows(written as i64, rows)?;
    bar.finish_and_clear();
    Ok(Report {
        group_by_seconds,
        group_by: "group_by",
        group_by_failed_after_seconds: None,
        write_seconds,
        total_seconds: group_by_seconds + write_seconds,
        maps_write_seconds: None,
        maps_total_seconds: None,
        written_as: "table",
        combinations: Some(combinations),
        rows,
        hierarchy_seconds,
        node: qis.iter().zip(&plan.levels).map(|(q, &l)| (q.clone(), l.into())).collect(),
    })
}

/// The GROUP BY of the QI columns as a work table there, its groups and
/// rows counted: (combinations, rows).
fn group_by(conn: &duckdb::Connection, remote: &dyn RemoteEngine, qis: &[String]) -> Result<(i64, i64)> {
    let select = render(
        fragment(sql::LIMIT, "engine_group_by"),
        &[
            ("columns", &list(qis.iter().enumerate(), ", ", |(a, q)| format!("{} AS g{a}", ident(q)))),
            ("by", &list(qis.iter(), ", ", |q| ident(q))),
        ],
    );
    remote.create_work(GROUPS, &select, WorkUse::default()).context("grouping the source by its quasi-identifiers")?;
    remote.fetch(
        conn,
        &render(fragment(sql::LIMIT, "engine_groups_counted"), &[("groups", &ident(GROUPS))]),
        "kanon_limit_counted",
    )?;
    Ok(conn.query_row(fragment(sql::LIMIT, "engine_counted"), [], |r| Ok((r.get(0)?, r.get(1)?)))?)
}
