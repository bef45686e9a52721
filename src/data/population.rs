//! `[risk] population_table` against the hierarchies: each population row's
//! QI values as the hierarchies' codes (every value must be a leaf), and the
//! population's base: its records per combination of leaf codes.

use super::hierarchy::dim_table;
use crate::error::bad;
use crate::job::Job;
use crate::sql::{self, ident, list, render};
use anyhow::Result;
use duckdb::Connection;

/// The joins that code `relation`'s rows (alias `q`) through each QI's
/// hierarchy (alias `d{a}`), after checking that every value is a leaf
/// (exit 2 naming the QI and a value otherwise).
pub(crate) fn coded_joins(conn: &Connection, job: &Job, relation: &str) -> Result<String> {
    check_covered(conn, job, relation)?;
    Ok(joins(job))
}

/// Exit 2 naming the first QI of which `relation` has a value its hierarchy
/// does not list, and a value.
fn check_covered(conn: &Connection, job: &Job, relation: &str) -> Result<()> {
    for (a, qi) in job.quasi_identifiers.iter().enumerate() {
        let at = || format!("{}: [risk] population_table, quasi-identifier \"{}\"", job.at(&qi.column), qi.column.name);
        let q = render(
            sql::fragment(sql::RISK, "uncovered"),
            &[("relation", relation), ("col", &ident(&qi.column.name)), ("dim", &dim_table(a))],
        );
        let (missing, sample): (i64, Option<String>) =
            conn.query_row(&q, [], |r| Ok((r.get(0)?, r.get(1)?))).map_err(|e| bad(format!("{}: {e}", at())))?;
        if missing > 0 {
            return Err(bad(format!(
                "{}: {missing} rows have values the hierarchy does not list, e.g. {} (give a hierarchy file that covers the population)",
                at(),
                sample.unwrap_or_else(|| "NULL".into())
            )));
        }
    }
    Ok(())
}

/// The joins of [`coded_joins`], unchecked.
fn joins(job: &Job) -> String {
    list(job.quasi_identifiers.iter().enumerate(), " ", |(a, qi)| {
        format!(
            "JOIN {} d{a} ON CAST(q.{} AS VARCHAR) IS NOT DISTINCT FROM d{a}.leaf",
            dim_table(a),
            ident(&qi.column.name)
        )
    })
}

/// The population's records per combination of the QIs' leaf codes. Every
/// record must be coded: when the joins lose some, the check names a value.
pub(crate) fn base(conn: &Connection, job: &Job, relation: &str) -> Result<Vec<(Box<[i64]>, u64)>> {
    let n = job.quasi_identifiers.len();
    let q = render(
        sql::fragment(sql::RISK, "population_base"),
        &[
            ("codes", &list(0..n, ", ", |a| format!("d{a}.c0::BIGINT AS g{a}"))),
            ("relation", relation),
            ("joins", &joins(job)),
        ],
    );
    let mut stmt = conn.prepare(&q)?;
    let mut rows = stmt.query([])?;
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        let codes = (0..n).map(|a| r.get::<_, i64>(a)).collect::<duckdb::Result<Box<[i64]>>>()?;
        out.push((codes, r.get::<_, i64>(n)? as u64));
    }
    let records: i64 =
        conn.query_row(&render(sql::fragment(sql::RISK, "population_records"), &[("relation", relation)]), [], |r| {
            r.get(0)
        })?;
    if out.iter().map(|(_, c)| c).sum::<u64>() != records as u64 {
        check_covered(conn, job, relation)?;
        anyhow::bail!("the population's records and its coded records differ, though every value is a leaf");
    }
    Ok(out)
}
