//! The audit on Spark and PostgreSQL: the audited table's classes are
//! measured there (`check_engine.sql`) and only aggregates come back, a row
//! per (class size, value lists) with its classes, the value lists being the
//! (sensitive code, records) pairs of a class as the engine evaluator spells
//! them (with ℓ's column and t-closeness's apart, a row per (size, s list)
//! and a row per (size, t list): each model reads its own). kanon judges each
//! row once for all its classes ([`Audit::classes_alike`]), so the report is
//! the one the pass over every class gives. The source's marginals of the
//! sensitive columns come back and its code tables go there first; a value the source does not have sends its
//! code as -1, and then one row, its class, comes back to name it.

use super::classes::{quoted, Audited};
use super::tally::{Audit, Class, Part};
use super::S;
use crate::data::frequency;
use crate::engine::embedded::SourceColumn;
use crate::engine::remote::RemoteEngine;
use crate::error::bad;
use crate::job::{Column, Job};
use crate::measure::risk::ClassSizes;
use crate::sql::{self, ident, list, render};
use anyhow::{Context, Result};
use duckdb::types::Value;
use duckdb::Connection;

/// The local table what comes back lands in.
const BACK: &str = "kanon_check_back";

fn statement(name: &str) -> &'static str {
    sql::fragment(sql::CHECK_ENGINE, name)
}

/// The audit's view of the engine: where it runs, where results land, the
/// job, the sensitive columns (alias, column) and the source's columns.
pub(super) struct There<'a> {
    pub(super) remote: &'a dyn RemoteEngine,
    pub(super) conn: &'a Connection,
    pub(super) job: &'a Job,
    pub(super) extra: &'a [(&'static str, &'a Column)],
    pub(super) columns: &'a [SourceColumn],
}

/// The source's code table of sensitive column `alias`, there.
fn codes_there(alias: &str) -> String {
    format!("kanon_check_codes_{alias}")
}

/// One row of the histogram: class size, value lists (s, t), classes, what
/// the row counts for; and whether a list has a value the source does not have.
struct Row {
    class: Class,
    classes: u64,
    part: Part,
    unknown: bool,
}

impl There<'_> {
    /// The source's code tables of the sensitive columns, sent there.
    pub(super) fn send_codes(&self) -> Result<()> {
        for (alias, _) in self.extra {
            let select =
                render(sql::fragment(sql::FREQUENCY_SETS, "share"), &[("table", &frequency::extra_codes(alias))]);
            self.remote.share(self.conn, &select, &[], &codes_there(alias)).context("sending the source's codes")?;
        }
        Ok(())
    }

    /// The joins of the audited rows `src` to the code tables there (k_s, k_t).
    fn joins(&self, extra: &[(&str, &Column)]) -> String {
        list(extra, "", |(a, c)| {
            let type_name = self.columns.iter().find(|s| s.name == c.name).map_or("", |s| s.type_name.as_str());
            let on = self.remote.same_value(&format!("src.{}", ident(&c.name)), &format!("k_{a}.n"), type_name, true);
            format!(" LEFT JOIN {} k_{a} ON {on}", codes_there(a))
        })
    }

    /// The class keys q0, q1, … of the audited rows `src`.
    fn keys(&self) -> String {
        list(self.job.quasi_identifiers.iter().enumerate(), ", ", |(a, q)| {
            format!("src.{} AS q{a}", ident(&q.column.name))
        })
    }

    /// The histogram of `relation`'s classes there: size, a value list per
    /// column of `extra` (`s_list`, `t_list`), classes.
    fn histogram_sql(&self, relation: &str, extra: &[(&str, &Column)]) -> String {
        let n = self.job.quasi_identifiers.len();
        let plain = list(0..n, ", ", |a| format!("q{a}"));
        let pairs = render(
            statement("pairs"),
            &[
                ("keys", &self.keys()),
                ("codes", &list(extra, "", |(a, _)| format!(", coalesce(k_{a}.code, -1) AS {a}"))),
                ("table", relation),
                ("joins", &self.joins(extra)),
                ("group_by", &list(1..=n + extra.len(), ", ", |i| i.to_string())),
            ],
        );
        let value_list = self.remote.spelling("value_list_of");
        let separate = extra.len() > 1;
        let (rows, size) = match separate {
            true => (
                render(statement("split"), &[("plain", &plain), ("pairs", &pairs)]),
                "CASE WHEN w = 1 THEN n ELSE 0 END",
            ),
            false => (pairs, "n"),
        };
        let lists = list(extra.iter().enumerate(), "", |(j, (a, _))| {
            let when = match (separate, j) {
                (false, _) => "1 = 1",
                (true, 0) => "w = 1",
                (true, _) => "w = 0",
            };
            format!(", {} AS {a}_list", render(value_list, &[("v", a), ("n", "n"), ("when", when)]))
        });
        let classes =
            render(statement("classes"), &[("size", size), ("lists", &lists), ("rows", &rows), ("plain", &plain)]);
        let lists = list(extra, "", |(a, _)| format!(", c.{a}_list"));
        let (which, sets) = match separate {
            true => (
                ", CASE WHEN c.t_list IS NULL THEN 1 ELSE 0 END AS w",
                "GROUPING SETS ((c.size, c.s_list), (c.size, c.t_list))".to_string(),
            ),
            false => ("", format!("c.size{lists}")),
        };
        render(statement("histogram"), &[("lists", &lists), ("classes", &classes), ("which", which), ("sets", &sets)])
    }

    /// Run `select` there; its rows, brought back, in a fixed order.
    fn back(&self, select: &str) -> Result<Vec<Vec<Value>>> {
        self.remote.fetch(self.conn, select, BACK)?;
        let rows = crate::engine::remote::read_rows(self.conn, &render(statement("read"), &[("table", BACK)]));
        self.conn.execute_batch(&render(statement("drop"), &[("table", BACK)]))?;
        rows
    }

    /// The histogram of `relation`'s classes, read.
    fn histogram(&self, relation: &str, extra: &[(&str, &Column)]) -> Result<Vec<Row>> {
        let rows = self.back(&self.histogram_sql(relation, extra))?;
        crate::trace(|| format!("check: {} (class size, value lists) rows back", rows.len()));
        rows.iter()
            .map(|r| {
                let mut class = Class { records: int(&r[0])?, ..Class::default() };
                class.population = class.records;
                let part = match extra.len() {
                    2 if int(&r[4])? == 1 => Part::S,
                    2 => Part::T,
                    _ => Part::All,
                };
                let mut unknown = false;
                for (j, (alias, _)) in extra.iter().enumerate() {
                    if r[1 + j] == Value::Null {
                        continue;
                    }
                    let (pairs, missing) = value_list(&r[1 + j])?;
                    unknown |= missing;
                    *(if *alias == S { &mut class.s } else { &mut class.t }) = pairs;
                }
                Ok(Row { class, classes: int(&r[1 + extra.len()])?, part, unknown })
            })
            .collect()
    }

    /// The audited table's classes into `audit`, measured there.
    pub(super) fn classes(&self, audited: &Audited, audit: &mut Audit) -> Result<()> {
        let rows = self.histogram(audited.relation, self.extra)?;
        if rows.iter().any(|r| r.unknown) {
            return Err(self.unknown(audited));
        }
        for row in rows {
            audit.classes_alike(row.class, row.classes, row.part);
        }
        Ok(())
    }

    /// The source's class sizes over the QIs (F = f), for the chart.
    pub(super) fn source_sizes(&self) -> Result<Vec<ClassSizes>> {
        let rows = self.histogram("kanon_source", &[])?;
        Ok(rows
            .into_iter()
            .map(|r| ClassSizes { sample: r.class.records, population: r.class.records, classes: r.classes })
            .collect())
    }

    /// The error naming the first class (by its QI values) with a value the
    /// source does not have, as the pass over every class words it.
    fn unknown(&self, audited: &Audited) -> anyhow::Error {
        match self.first_unknown(audited.relation) {
            Ok((values, value, column)) => {
                let name = list(self.job.quasi_identifiers.iter().zip(&values), ", ", |(q, v)| {
                    format!("{}={}", q.column.name, quoted(v.as_deref()))
                });
                bad(format!(
                    "{}: the class {name} has the value {} of \"{column}\", which the source does not have",
                    audited.target,
                    quoted(value.as_deref())
                ))
            }
            Err(e) => e.context(format!("naming a class of {} with a value the source does not have", audited.target)),
        }
    }

    /// That class's QI values, the value and its column, as text.
    fn first_unknown(&self, relation: &str) -> Result<(Vec<Option<String>>, Option<String>, String)> {
        let n = self.job.quasi_identifiers.len();
        let extra = self.extra;
        let select = render(
            statement("missing"),
            &[
                ("keys", &self.keys()),
                (
                    "values",
                    &list(extra.iter().enumerate(), "", |(j, (a, c))| {
                        format!(
                            ", src.{} AS x{j}, CASE WHEN k_{a}.code IS NULL THEN 1 ELSE 0 END AS m{j}",
                            ident(&c.name)
                        )
                    }),
                ),
                ("table", relation),
                ("joins", &self.joins(extra)),
                ("unknown", &list(extra, " OR ", |(a, _)| format!("k_{a}.code IS NULL"))),
                ("order", &list(0..n, ", ", |a| format!("q{a} NULLS LAST"))),
            ],
        );
        self.remote.fetch(self.conn, &select, BACK)?;
        let text = render(
            statement("missing_text"),
            &[
                ("names", &list(0..n, ", ", |a| format!("CAST(q{a} AS VARCHAR)"))),
                ("values", &list(0..extra.len(), "", |j| format!(", CAST(x{j} AS VARCHAR), CAST(m{j} AS BIGINT)"))),
                ("table", BACK),
            ],
        );
        let rows = crate::engine::remote::read_rows(self.conn, &text);
        self.conn.execute_batch(&render(statement("drop"), &[("table", BACK)]))?;
        let row = rows?.into_iter().next().context("no such class came back")?;
        let text = |v: &Value| match v {
            Value::Text(t) => Some(t.clone()),
            _ => None,
        };
        let j = (0..extra.len()).find(|j| int(&row[n + 2 * j + 1]).is_ok_and(|m| m == 1)).unwrap_or(0);
        Ok((row[..n].iter().map(text).collect(), text(&row[n + 2 * j]), extra[j].1.name.clone()))
    }
}

/// A count the engine sent back.
fn int(v: &Value) -> Result<u64> {
    match v {
        Value::BigInt(x) => Ok(*x as u64),
        Value::Int(x) => Ok(*x as u64),
        Value::HugeInt(x) => Ok(*x as u64),
        Value::UBigInt(x) => Ok(*x),
        other => anyhow::bail!("a count from the engine: {other:?}"),
    }
}

/// A value list as the engine spelled it (v:n,v:n…), and whether it has a
/// value the source does not have (code -1).
fn value_list(v: &Value) -> Result<(Vec<(u32, u64)>, bool)> {
    let Value::Text(text) = v else { anyhow::bail!("a value list from the engine: {v:?}") };
    let mut unknown = false;
    let mut pairs = Vec::new();
    for pair in text.split(',').filter(|p| !p.is_empty()) {
        let (code, n) = pair.split_once(':').context("a value list's pair")?;
        let code: i64 = code.parse()?;
        if code < 0 {
            unknown = true;
        } else {
            pairs.push((code as u32, n.parse()?));
        }
    }
    Ok((pairs, unknown))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_lists_read_with_unknown_values() {
        assert_eq!(value_list(&Value::Text("1:2,3:4".into())).unwrap(), (vec![(1, 2), (3, 4)], false));
        assert_eq!(value_list(&Value::Text("-1:1,2:5".into())).unwrap(), (vec![(2, 5)], true));
        assert_eq!(value_list(&Value::Text(String::new())).unwrap(), (vec![], false));
    }
}
