//! The plain-SQL recoding of a full-domain node: each QI by the cheapest SQL
//! expression its hierarchy allows at its level (masks by `left`, intervals
//! by `floor(x / w) * w`, dates by their year or month, `'*'` at the top),
//! and a join to its value → label map only where no expression will do
//! (file hierarchies above their leaves). `kanon limit` times it on every
//! engine; on Spark and PostgreSQL the release writes it.
//!
//! Two spellings ([`Spelling`]): DuckDB's limit keeps the cheapest
//! expressions (a number for an interval, a date for a month: the limit's
//! yardstick, not labels); on a remote engine each expression is spelled
//! (sql/spark.sql, sql/postgres.sql `label_*`) to give exactly the labels
//! the hierarchy gives, so the release can write them. Where an engine's
//! text of a value could differ from DuckDB's (doubles, timestamps with a
//! zone, dates outside the years 1000–9999, fractional widths), the QI
//! falls back to its map.

use crate::data::hierarchy::{h_table, marginal_table};
use crate::engine::embedded::{has_null, SourceColumn};
use crate::engine::remote::RemoteEngine;
use crate::engine::types::ColumnType;
use crate::job::{DateUnit, HierarchySpec, Job};
use crate::sql::{self, fragment, ident, render};
use anyhow::{Context, Result};
use duckdb::Connection;

/// How a QI is recoded.
pub(crate) enum Recode {
    /// An SQL expression over the source row `s`.
    Expression(String),
    /// A join to the QI's value → label map.
    Map,
}

/// The cheapest SQL DuckDB's limit recodes QI `a` by at `level` (of
/// `height`): the value itself at the leaves, a constant at the top, an
/// expression for a built-in hierarchy (not its labels: `kanon limit`'s
/// yardstick), the map for a file.
pub(crate) fn duckdb_limit(job: &Job, columns: &[SourceColumn], a: usize, level: u8, height: u8) -> Recode {
    let qi = &job.quasi_identifiers[a];
    let col = ident(&qi.column.name);
    let type_name = type_of(columns, &qi.column.name);
    let typed = |kind: &str, cast: &str| {
        if type_name.to_ascii_uppercase().starts_with(kind) {
            format!("s.{col}")
        } else {
            format!("TRY_CAST(s.{col} AS {cast})")
        }
    };
    let l = level as usize;
    if l == 0 {
        return Recode::Expression(format!("s.{col}"));
    }
    if l == height as usize && !matches!(qi.hierarchy, HierarchySpec::File(_) | HierarchySpec::Mask(_)) {
        return Recode::Expression("'*'".into());
    }
    let frag = |name: &str, slots: &[(&str, &str)]| Recode::Expression(render(fragment(sql::LIMIT, name), slots));
    match &qi.hierarchy {
        // A mask's extra top level (values of several lengths) is one '*'.
        HierarchySpec::Mask(n) if l > *n => Recode::Expression("'*'".into()),
        HierarchySpec::Mask(_) => frag("mask", &[("col", &col), ("i", &l.to_string()), ("stars", &"*".repeat(l))]),
        HierarchySpec::Intervals(widths) => {
            let x = if ColumnType::of(type_name).is_number() {
                format!("s.{col}")
            } else {
                format!("TRY_CAST(s.{col} AS DOUBLE)")
            };
            frag("interval", &[("x", &x), ("width", &format!("{:?}", widths[l - 1]))])
        }
        HierarchySpec::Date(units) => {
            let d = typed("DATE", "DATE");
            let d = if d.starts_with("TRY_CAST") { typed("TIMESTAMP", "DATE") } else { d };
            frag(unit_name(units[l - 1]), &[("d", &d)])
        }
        HierarchySpec::Suppress => Recode::Expression("'*'".into()),
        HierarchySpec::File(_) => Recode::Map,
    }
}

fn unit_name(unit: DateUnit) -> &'static str {
    match unit {
        DateUnit::Month => "month",
        DateUnit::Quarter => "quarter",
        DateUnit::Year => "year",
        DateUnit::Decade => "decade",
        DateUnit::Century => "century",
    }
}

fn type_of<'a>(columns: &'a [SourceColumn], name: &str) -> &'a str {
    columns.iter().find(|c| c.name == name).map_or("", |c| c.type_name.as_str())
}

/// What a QI's values are, as far as the engines' text of them goes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Values {
    /// Every engine writes text as it is.
    Text,
    /// Every engine writes integers as DuckDB does.
    Integer,
    /// Dates: the same ISO text in the years 1000–9999 (checked on the marginal).
    Date,
    /// Timestamps without a zone: recoded by their date, never written as text.
    Timestamp,
    /// Doubles and decimals: intervals of integral widths, never written as text.
    Number,
    /// Anything else (floats, zoned timestamps, booleans…): the map.
    Other,
}

impl Values {
    fn of(type_name: &str) -> Values {
        match ColumnType::of(type_name) {
            ColumnType::Varchar => Values::Text,
            t if t.fits_bigint() => Values::Integer,
            ColumnType::Date => Values::Date,
            ColumnType::Timestamp if type_name.eq_ignore_ascii_case("TIMESTAMP") => Values::Timestamp,
            _ if type_name.eq_ignore_ascii_case("DOUBLE") || type_name.to_ascii_uppercase().starts_with("DECIMAL") => {
                Values::Number
            }
            _ => Values::Other,
        }
    }
}

/// How QI `a` is recoded at `level` (of `height`) on `engine` so that each
/// row gets exactly its hierarchy's label: an expression spelled for the
/// engine, or the map. Value ranges are checked on the QI's marginal (local).
pub(crate) fn on_engine(
    conn: &Connection,
    engine: &dyn RemoteEngine,
    job: &Job,
    columns: &[SourceColumn],
    a: usize,
    level: u8,
    height: u8,
) -> Result<Recode> {
    let qi = &job.quasi_identifiers[a];
    let x = format!("s.{}", ident(&qi.column.name));
    let spell = |name: &str, slots: &[(&str, &str)]| render(engine.spelling(name), slots);
    let values = Values::of(type_of(columns, &qi.column.name));
    let l = level as usize;
    let top = match &qi.hierarchy {
        HierarchySpec::File(_) => false,
        HierarchySpec::Mask(n) => l > *n,
        _ => l == height as usize,
    };
    if top && l > 0 {
        return Ok(Recode::Expression(sql::literal("*")));
    }
    // In range: (value kind, the years or magnitudes the expressions assume).
    let in_range = |check: &str| -> Result<bool> {
        let q = render(fragment(sql::RELEASE_MAP, check), &[("marginal", &marginal_table(a))]);
        let outside: i64 =
            conn.query_row(&q, [], |r| r.get(0)).with_context(|| format!("checking {}", qi.column.name))?;
        Ok(outside == 0)
    };
    let as_text = match values {
        Values::Text | Values::Integer => true,
        Values::Date => in_range("dates_outside")?,
        _ => false,
    };
    let text = || spell("label_text", &[("x", &x)]);
    // At the leaves a value's label is its text, a file's NULL leaf NULL.
    let expression = match (&qi.hierarchy, l) {
        (_, 0) => as_text.then(text),
        (HierarchySpec::Mask(_), _) => as_text.then(|| spell("label_mask", &[("v", &text()), ("i", &l.to_string())])),
        (HierarchySpec::Intervals(widths), _) => {
            let w = widths[l - 1];
            let integral = w.fract() == 0.0 && w < (1u64 << 52) as f64;
            let numbers = matches!(values, Values::Integer | Values::Number);
            (integral && numbers && in_range("numbers_outside")?)
                .then(|| spell("label_interval", &[("x", &x), ("w", &(w as i64).to_string())]))
        }
        (HierarchySpec::Date(units), _) => {
            let d = match values {
                Values::Date => Some(x.clone()),
                Values::Timestamp => Some(spell("as_date", &[("x", &x)])),
                _ => None,
            };
            match d {
                Some(d) if in_range("dates_outside")? => {
                    Some(spell(&format!("label_{}", unit_name(units[l - 1])), &[("d", &d)]))
                }
                _ => None,
            }
        }
        (HierarchySpec::Suppress | HierarchySpec::File(_), _) => None,
    };
    Ok(expression.map_or(Recode::Map, Recode::Expression))
}

/// A node's recoding on a remote engine: per QI the SQL of its label over
/// the source row `s`, and the joins of the QIs recoded by their maps.
pub(crate) struct EngineRecoding {
    pub(crate) labels: Vec<String>,
    pub(crate) joins: String,
}

/// Recode every QI at `levels` (hierarchies of `heights`) on `engine`
/// ([`on_engine`]); the maps the recoding joins go there as
/// `kanon_release_map_{a}` (the value as the source has it, its label).
pub(crate) fn recoding_on_engine(
    conn: &Connection,
    engine: &dyn RemoteEngine,
    job: &Job,
    columns: &[SourceColumn],
    levels: &[u8],
    heights: &[u8],
) -> Result<EngineRecoding> {
    let mut out = EngineRecoding { labels: Vec::new(), joins: String::new() };
    for (a, qi) in job.quasi_identifiers.iter().enumerate() {
        let recode = on_engine(conn, engine, job, columns, a, levels[a], heights[a])?;
        let name = &qi.column.name;
        crate::trace(|| {
            let how = if matches!(recode, Recode::Map) { "its map" } else { "an expression" };
            format!("recoding: {name} at level {} by {how} on {}", levels[a], engine.name())
        });
        match recode {
            Recode::Expression(e) => out.labels.push(e),
            Recode::Map => {
                let map = format!("kanon_release_map_{a}");
                let q = render(
                    fragment(sql::RELEASE_MAP, "value_label"),
                    &[
                        ("label", &format!("v{}", levels[a])),
                        ("marginal", &marginal_table(a)),
                        ("h", &h_table(a)),
                        ("col", &format!("v{a}")),
                    ],
                );
                engine.share(conn, &q, &[], &map).with_context(|| format!("sending the map of \"{name}\""))?;
                let nullable = has_null(conn, &marginal_table(a))?;
                let on = engine.same_value(
                    &format!("s.{}", ident(name)),
                    &format!("m{a}.n"),
                    type_of(columns, name),
                    nullable,
                );
                out.joins.push_str(&format!("\nJOIN {map} m{a} ON {on}"));
                out.labels.push(format!("m{a}.label"));
            }
        }
    }
    Ok(out)
}
