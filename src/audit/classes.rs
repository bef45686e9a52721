//! The one pass over the audited table: the class SQL (`check.sql`'s
//! `classes`), read back class by class into the [`Audit`] tallies; and the
//! source's own class sizes, for the risk chart.

use super::models::population_name;
use super::open::Records;
use super::tally::{Audit, Class};
use super::S;
use crate::data::frequency;
use crate::error::{bad, OrBadInput};
use crate::job::{Column, Job};
use crate::measure::risk::{self, ClassSizes, Risk};
use crate::sql::{self, fragment, ident, list, render};
use anyhow::{Context, Result};
use duckdb::arrow::array::{Array, ArrayRef, AsArray, StringArray};
use duckdb::arrow::compute::cast;
use duckdb::arrow::datatypes::{DataType, Int32Type, Int64Type};
use duckdb::Connection;

/// The audited table as the pass reads it: its name in messages, its
/// relation, and the population join (`models::population`) when there is one.
#[derive(Clone, Copy)]
pub(super) struct Audited<'a> {
    pub(super) target: &'a str,
    pub(super) relation: &'a str,
    pub(super) population: Option<&'a str>,
}

/// The `classes` statement over `relation`: the QIs as q0, q1, …, each
/// sensitive column's code and missing text, the records, the population's.
fn classes_sql(
    job: &Job,
    relation: &str,
    extra: &[(&str, &Column)],
    population: Option<&str>,
    records: &Records,
) -> String {
    let n = job.quasi_identifiers.len();
    let qis =
        list(job.quasi_identifiers.iter().enumerate(), ", ", |(a, q)| format!("src.{} AS q{a}", ident(&q.column.name)));
    let codes = list(extra, "", |(a, c)| {
        format!(
            ", k{a}.code AS {a}, CASE WHEN k{a}.code IS NULL THEN CAST(src.{} AS VARCHAR) END AS {a}_missing",
            ident(&c.name)
        )
    });
    let joins = list(extra, "", |(a, c)| {
        format!(" LEFT JOIN {} k{a} ON src.{} IS NOT DISTINCT FROM k{a}.n", frequency::extra_codes(a), ident(&c.name))
    });
    render(
        fragment(sql::CHECK, "classes"),
        &[
            ("qis", &qis),
            ("codes", &codes),
            ("table", relation),
            ("count", &records.count()),
            ("joins", &joins),
            ("names", &list(0..n, ", ", |a| format!("CAST(g.q{a} AS VARCHAR)"))),
            ("extras", &list(extra, "", |(a, _)| format!(", g.{a}, g.{a}_missing"))),
            ("population", if population.is_some() { ", p.cnt" } else { "" }),
            ("population_join", population.unwrap_or("")),
            ("order", &list(0..n, ", ", |a| format!("g.q{a}"))),
        ],
    )
}

/// The one pass over the audited table: each class's size, population size
/// and (code, records) pairs of the sensitive columns, into `audit`.
pub(super) fn classes(
    conn: &Connection,
    job: &Job,
    audited: &Audited,
    extra: &[(&str, &Column)],
    records: &Records,
    audit: &mut Audit,
) -> Result<()> {
    let Audited { target, relation, population } = *audited;
    let n = job.quasi_identifiers.len();
    let q = classes_sql(job, relation, extra, population, records);
    let mut stmt = conn.prepare(&q).or_bad_input(|| format!("measuring {target}"))?;
    let name = |values: &[Option<&str>]| {
        list(job.quasi_identifiers.iter().zip(values), ", ", |(q, v)| format!("{}={}", q.column.name, quoted(*v)))
    };
    // Columns: the QIs' text, (code, missing text) per extra, records, population records.
    let records_at = n + 2 * extra.len();
    let mut class = Class::default();
    let mut current: Option<Vec<Option<String>>> = None;
    for batch in stmt.stream_arrow([]).or_bad_input(|| format!("measuring {target}"))? {
        let batch = batch.or_bad_input(|| format!("measuring {target}"))?;
        let text = |i: usize| -> Result<ArrayRef> { Ok(cast(batch.column(i), &DataType::Utf8)?) };
        let names: Vec<ArrayRef> = (0..n).map(text).collect::<Result<_>>()?;
        let names: Vec<&StringArray> = names.iter().map(|a| a.as_string::<i32>()).collect();
        let records = batch.column(records_at).as_primitive::<Int64Type>();
        let big_f = population.map(|_| batch.column(records_at + 1).as_primitive::<Int64Type>());
        for i in 0..batch.num_rows() {
            let values: Vec<Option<&str>> = names.iter().map(|a| a.is_valid(i).then(|| a.value(i))).collect();
            let same = current.as_ref().is_some_and(|c| c.iter().map(|v| v.as_deref()).eq(values.iter().copied()));
            if !same {
                if current.is_some() {
                    audit.class(&mut class);
                }
                current = Some(values.iter().map(|v| v.map(String::from)).collect());
            }
            let f = records.value(i) as u64;
            for (j, (alias, column)) in extra.iter().enumerate() {
                let codes = batch.column(n + 2 * j).as_primitive::<Int32Type>();
                if codes.is_null(i) {
                    let missing = text(n + 2 * j + 1)?;
                    let missing = missing.as_string::<i32>();
                    return Err(bad(format!(
                        "{target}: the class {} has the value {} of \"{}\", which the source does not have",
                        name(&values),
                        quoted(missing.is_valid(i).then(|| missing.value(i))),
                        column.name
                    )));
                }
                let pairs = if *alias == S { &mut class.s } else { &mut class.t };
                pairs.push((codes.value(i) as u32, f));
            }
            class.records += f;
            if let Some(big_f) = big_f {
                if big_f.is_null(i) {
                    let what = job.risk.population_table.as_ref().map(population_name).unwrap_or_default();
                    return Err(bad(format!("{target}: the class {} is not in the {what}", name(&values))));
                }
                class.population = big_f.value(i) as u64;
            }
        }
    }
    if current.is_some() {
        audit.class(&mut class);
    }
    Ok(())
}

/// A value for a message: "text" in quotes, or NULL.
pub(super) fn quoted(v: Option<&str>) -> String {
    v.map_or("NULL".to_string(), |v| format!("\"{v}\""))
}

/// The source's risk (its class sizes over the QIs), for the chart; F = f
/// (the chart's bands read f only).
pub(super) fn source_risk(conn: &Connection, job: &Job, records: &Records) -> Result<Risk> {
    let q = render(
        sql::MEASURE_CLASSES,
        &[
            ("table", "kanon_source"),
            ("columns", &list(job.qi_names(), ", ", |c| ident(&c))),
            ("count", &records.count()),
            ("ldiv", "0"),
        ],
    );
    let mut stmt = conn.prepare(&q)?;
    let sizes: Vec<ClassSizes> = stmt
        .query_map([], |r| {
            let (size, classes): (i64, i64) = (r.get(0)?, r.get(2)?);
            Ok(ClassSizes { sample: size as u64, population: size as u64, classes: classes as u64 })
        })?
        .collect::<duckdb::Result<_>>()
        .context("measuring the source")?;
    Ok(risk::analyse(&sizes, &job.risk.settings))
}
