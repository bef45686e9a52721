//! Frequency sets: the one `GROUP BY` scan of the source, its integer encoding,
//! and rollup of any frequency set to a node above it.
//!
//! A frequency set table has columns `g{a}` (a code of QI `a`, at any level),
//! `s` (sensitive code, when ℓ-diversity is asked) and `cnt`. `kanon_f0` is the
//! zero-generalization frequency set over all QIs; it also keeps the raw values
//! `v{a}` the release writer joins back on.

use crate::hierarchy::{anc_table, dim_table};
use crate::sql::{self, ident, list, render};
use anyhow::{Context, Result};
use duckdb::Connection;

/// Scan the source once: distinct (QIs[, sensitive]) with counts, into `kanon_base`.
pub fn scan_source(conn: &Connection, qis: &[String], sensitive: Option<&str>) -> Result<u64> {
    let mut cols: Vec<String> =
        qis.iter().enumerate().map(|(a, c)| format!("CAST({} AS VARCHAR) AS v{a}", ident(c))).collect();
    if let Some(s) = sensitive {
        cols.push(format!("CAST({} AS VARCHAR) AS s", ident(s)));
    }
    let ordinals = list(1..=cols.len(), ", ", |i| i.to_string());
    conn.execute_batch(&render(sql::BASE_FREQUENCY_SET, &[("columns", &cols.join(", ")), ("ordinals", &ordinals)]))
        .context("scanning the source")?;
    let rows: i64 = conn.query_row("SELECT coalesce(sum(cnt), 0)::BIGINT FROM kanon_base", [], |r| r.get(0))?;
    Ok(rows as u64)
}

/// Encode `kanon_base` into `kanon_f0` with leaf codes (every value is a leaf by now).
pub fn encode(conn: &Connection, n: usize, sensitive: bool) -> Result<()> {
    let raw = list(0..n, ", ", |a| format!("b.v{a}"));
    let codes = list(0..n, ", ", |a| format!("l{a}.c0 AS g{a}"));
    let mut joins = list(0..n, " ", |a| {
        format!("JOIN {} l{a} ON b.v{a} IS NOT DISTINCT FROM l{a}.leaf", dim_table(a))
    });
    let mut sens = String::new();
    if sensitive {
        conn.execute_batch(
            "CREATE OR REPLACE TEMP TABLE kanon_sensitive AS \
             SELECT (row_number() OVER (ORDER BY s NULLS FIRST))::INTEGER AS code, s FROM (SELECT DISTINCT s FROM kanon_base)",
        )?;
        joins.push_str(" JOIN kanon_sensitive ks ON b.s IS NOT DISTINCT FROM ks.s");
        sens = ", ks.code AS s".into();
    }
    conn.execute_batch(&render(
        sql::ENCODE_FREQUENCY_SET,
        &[("raw", &raw), ("codes", &codes), ("sensitive", &sens), ("joins", &joins)],
    ))?;
    Ok(())
}

/// `JOIN kanon_anc_{a} x{a} ON …` for each (QI, level) of a node: the level is
/// a bound parameter, in this order.
pub fn ancestor_joins(attrs: &[usize]) -> String {
    list(attrs, " ", |&a| format!("JOIN {} x{a} ON x{a}.code = p.g{a} AND x{a}.level = ?", anc_table(a)))
}

/// Materialize the frequency set of a node (`attrs` at `levels`) as `target`,
/// rolled up from frequency set table `source` (any node below it).
pub fn rollup(conn: &Connection, target: &str, source: &str, attrs: &[usize], levels: &[u8], sensitive: bool) -> Result<()> {
    let groups = list(attrs, ", ", |&a| format!("x{a}.anc AS g{a}"));
    let sens = if sensitive { ", p.s" } else { "" };
    let q = render(
        sql::ROLLUP,
        &[("target", target), ("groups", &groups), ("sensitive", sens), ("source", source), ("joins", &ancestor_joins(attrs))],
    );
    conn.execute(&q, duckdb::params_from_iter(levels))?;
    Ok(())
}
