//! What the columns hold: the one aggregate pass over the source (rows; per
//! column non-NULL rows, distinct values, range, text lengths, digit strings,
//! white space, dates), then one small query per date column (distinct
//! values per date unit) and per mask candidate (distinct prefixes).

use super::words::{has_word, CODE_WORDS};
use crate::engine::types::ColumnType;
use crate::sql::{self, fragment, ident, render};
use duckdb::Connection;

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Class {
    Integer,
    Decimal,
    Temporal,
    Text,
    Boolean,
    Other,
}

pub(super) fn class_of(type_name: &str) -> Class {
    match ColumnType::of(type_name) {
        ColumnType::Integer { .. } => Class::Integer,
        ColumnType::Fractional => Class::Decimal,
        ColumnType::Date | ColumnType::Timestamp => Class::Temporal,
        ColumnType::Varchar | ColumnType::Uuid => Class::Text,
        ColumnType::Boolean => Class::Boolean,
        ColumnType::Time | ColumnType::Interval | ColumnType::Other => Class::Other,
    }
}

/// One column's statistics.
#[derive(Debug, Clone, Default)]
pub(super) struct Profile {
    pub(super) name: String,
    pub(super) type_name: String,
    /// Rows of the source.
    pub(super) rows: i64,
    pub(super) non_null: i64,
    pub(super) distinct: i64,
    /// Numbers: the range.
    pub(super) min: Option<f64>,
    pub(super) max: Option<f64>,
    /// Text: lengths, digit strings, white space, first and last value.
    pub(super) min_len: i64,
    pub(super) max_len: i64,
    pub(super) digits: bool,
    pub(super) spaces: bool,
    pub(super) first: Option<String>,
    pub(super) last: Option<String>,
    /// Text and dates: values that read as a date.
    pub(super) dates: i64,
    /// Date columns: first, last, distinct months, quarters, years, decades, centuries.
    pub(super) date_levels: Option<DateLevels>,
    /// Mask candidates: distinct prefixes one character past the common prefix.
    pub(super) prefixes: Option<i64>,
}

#[derive(Debug, Clone, Default)]
pub(super) struct DateLevels {
    pub(super) first: String,
    pub(super) last: String,
    pub(super) counts: [i64; 5],
}

/// The date hierarchy's units, finest first (the order of [`DateLevels::counts`]).
pub(super) const UNITS: [&str; 5] = ["month", "quarter", "year", "decade", "century"];

/// The source's columns: (name, type), in order.
pub(super) fn columns(conn: &Connection) -> duckdb::Result<Vec<(String, String)>> {
    let mut stmt = conn.prepare(sql::TABLE_COLUMNS)?;
    let columns = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect();
    columns
}

/// The one aggregate pass: the row count and every column's profile.
pub(super) fn pass(conn: &Connection, columns: &[(String, String)]) -> duckdb::Result<(i64, Vec<Profile>)> {
    let mut aggregates = String::new();
    for (name, type_name) in columns {
        let col = ident(name);
        let v = format!("CAST({col} AS VARCHAR)");
        let slots = [("col", col.as_str()), ("v", v.as_str())];
        aggregates.push_str(",\n");
        aggregates.push_str(&render(fragment(sql::INIT_PROFILE, "common"), &slots));
        let extra = match class_of(type_name) {
            Class::Integer | Class::Decimal => Some("numeric"),
            Class::Text => Some("text"),
            Class::Temporal => Some("temporal"),
            Class::Boolean | Class::Other => None,
        };
        if let Some(f) = extra {
            aggregates.push_str(",\n");
            aggregates.push_str(&render(fragment(sql::INIT_PROFILE, f), &slots));
        }
    }
    let q = render(fragment(sql::INIT_PROFILE, "pass"), &[("aggregates", &aggregates)]);
    conn.query_row(&q, [], |r| {
        let rows: i64 = r.get(0)?;
        let mut i = 1;
        let mut next = || {
            i += 1;
            i - 1
        };
        let mut out = Vec::new();
        for (name, type_name) in columns {
            let mut p = Profile { name: name.clone(), type_name: type_name.clone(), rows, ..Default::default() };
            p.non_null = r.get(next())?;
            p.distinct = r.get(next())?;
            match class_of(type_name) {
                Class::Integer | Class::Decimal => {
                    p.min = r.get(next())?;
                    p.max = r.get(next())?;
                }
                Class::Text => {
                    p.min_len = r.get::<_, Option<i64>>(next())?.unwrap_or(0);
                    p.max_len = r.get::<_, Option<i64>>(next())?.unwrap_or(0);
                    p.digits = r.get(next())?;
                    p.spaces = r.get(next())?;
                    p.first = r.get(next())?;
                    p.last = r.get(next())?;
                    p.dates = r.get(next())?;
                }
                Class::Temporal => p.dates = r.get(next())?,
                Class::Boolean | Class::Other => {}
            }
            out.push(p);
        }
        Ok((rows, out))
    })
}

/// The small queries a QI candidate needs: date units, mask prefixes.
pub(super) fn detail(conn: &Connection, p: &mut Profile) -> duckdb::Result<()> {
    let v = format!("CAST({} AS VARCHAR)", ident(&p.name));
    if is_date(p) {
        let lv = |u| fragment(sql::HIERARCHY_LEVELS, u);
        let q = render(
            fragment(sql::INIT_PROFILE, "date_levels"),
            &[
                ("v", &v),
                ("month", lv("month")),
                ("quarter", lv("quarter")),
                ("year", lv("year")),
                ("decade", lv("decade")),
                ("century", lv("century")),
            ],
        );
        p.date_levels = Some(conn.query_row(&q, [], |r| {
            Ok(DateLevels {
                first: r.get::<_, Option<String>>(0)?.unwrap_or_default(),
                last: r.get::<_, Option<String>>(1)?.unwrap_or_default(),
                counts: [r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?],
            })
        })?);
    } else if let Some((_, lcp)) = mask_shape(p) {
        let q = render(fragment(sql::INIT_PROFILE, "prefixes"), &[("v", &v)]);
        p.prefixes = Some(conn.query_row(&q, [lcp as i64 + 1], |r| r.get(0))?);
    }
    Ok(())
}

/// Every non-NULL value reads as a date (a date or timestamp type, or ISO text).
pub(super) fn is_date(p: &Profile) -> bool {
    matches!(class_of(&p.type_name), Class::Temporal | Class::Text) && p.non_null > 0 && p.dates == p.non_null
}

/// A column masked from the right: text without white space that is of one
/// length, all digits, or named like a code; or an integer code (a code-like
/// name, every value with the same number of digits). Its longest value's
/// length and the prefix every value shares.
pub(super) fn mask_shape(p: &Profile) -> Option<(usize, usize)> {
    let (first, last) = match class_of(&p.type_name) {
        Class::Text
            if !p.spaces && p.max_len >= 2 && (p.min_len == p.max_len || p.digits || has_word(&p.name, CODE_WORDS)) =>
        {
            (p.first.clone()?, p.last.clone()?)
        }
        Class::Integer if has_word(&p.name, CODE_WORDS) => {
            let (lo, hi) = (p.min?, p.max?);
            let (lo, hi) = (format!("{lo:.0}"), format!("{hi:.0}"));
            if lo.len() != hi.len() || lo.len() < 2 || lo.starts_with('-') {
                return None;
            }
            (lo, hi)
        }
        _ => return None,
    };
    // min and max bound every value, so their common prefix is every value's.
    let lcp = first.chars().zip(last.chars()).take_while(|(a, b)| a == b).count();
    let len = first.chars().count().max(last.chars().count()).max(p.max_len.max(0) as usize);
    Some((len, lcp))
}
