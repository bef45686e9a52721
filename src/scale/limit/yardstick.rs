//! The first half of the limit: one plain GROUP BY of the QI columns, or,
//! when it does not fit in memory (or the flags ask), the GROUP BY of one
//! hash of the QI values, or one scan hashing them.

use crate::error::resource_hint;
use crate::sql::{self, fragment, ident, list, render};
use anyhow::{Context, Result};
use duckdb::Connection;
use indicatif::ProgressBar;
use std::time::Instant;

/// What to time first.
#[derive(Clone, Copy)]
pub(crate) enum First {
    /// The plain GROUP BY, falling back to the hashed one, then the scan.
    GroupBy,
    /// The GROUP BY of the values' hash.
    Hashed,
    /// One scan hashing every QI value.
    Scan,
}

/// The timed first half.
pub(super) struct Timed {
    /// The statement timed: `group_by`, `hashed` or `scan`.
    pub(super) kind: &'static str,
    pub(super) seconds: f64,
    /// Distinct QI combinations (only the plain GROUP BY keeps them).
    pub(super) combinations: Option<i64>,
    /// The source's rows.
    pub(super) rows: i64,
    /// How long a GROUP BY that ran out of memory or disk ran before it failed.
    pub(super) failed_after: Option<f64>,
}

/// Time `first` (and its fallbacks) over the source's QI columns `qis`.
pub(super) fn time(conn: &Connection, qis: &[String], first: First, bar: &ProgressBar) -> Result<Timed> {
    bar.set_message("GROUP BY of the quasi-identifiers");
    let cols = list(qis.iter(), ", ", |q| ident(q));
    let start = Instant::now();
    let by = list(qis.iter().enumerate(), ", ", |(a, q)| format!("{} AS g{a}", ident(q)));
    let grouped = matches!(first, First::GroupBy).then(|| {
        conn.execute_batch(&render(fragment(sql::LIMIT, "group_by"), &[("columns", &by)]))
            .context("grouping the source by its quasi-identifiers")
    });
    let scan = || fallback(conn, bar, &cols, "scan", "a scan of the quasi-identifiers", 0);
    let hashed = || fallback(conn, bar, &cols, "hashed", "a GROUP BY of the quasi-identifiers' hash", 1);
    let timed = match grouped {
        Some(Ok(())) => {
            let (combinations, rows): (i64, i64) =
                conn.query_row(fragment(sql::LIMIT, "groups_counted"), [], |r| Ok((r.get(0)?, r.get(1)?)))?;
            let seconds = start.elapsed().as_secs_f64();
            Timed { kind: "group_by", seconds, combinations: Some(combinations), rows, failed_after: None }
        }
        Some(Err(e)) if resource_hint(&e).is_some() => {
            let failed_after = Some(start.elapsed().as_secs_f64());
            let timed = match hashed() {
                Ok(timed) => timed,
                Err(e) if resource_hint(&e).is_some() => scan()?,
                Err(e) => return Err(e),
            };
            Timed { failed_after, ..timed }
        }
        Some(Err(e)) => return Err(e),
        None if matches!(first, First::Hashed) => hashed()?,
        None => scan()?,
    };
    conn.execute_batch(fragment(sql::LIMIT, "drop_groups"))?;
    Ok(timed)
}

/// DuckDB's GROUP BY of the raw values may not fit in [engine] memory_limit
/// and its spill folder (at 10⁹ near-unique rows in 8 GB it does not): the
/// yardstick is then the GROUP BY of one hash of the values (8-byte keys,
/// not strings), or one scan hashing every QI value; any GROUP BY of them
/// costs at least either. `kind` names the statement, `rows` its column of
/// the source's rows.
fn fallback(
    conn: &Connection,
    bar: &ProgressBar,
    cols: &str,
    kind: &'static str,
    what: &'static str,
    rows: usize,
) -> Result<Timed> {
    bar.set_message(what);
    conn.execute_batch(fragment(sql::LIMIT, "drop_groups"))?;
    // Timed from here: a failed attempt is no part of the yardstick.
    let start = Instant::now();
    let rows: i64 = conn
        .query_row(&render(fragment(sql::LIMIT, kind), &[("columns", cols)]), [], |r| r.get(rows))
        .with_context(|| format!("timing {what}"))?;
    Ok(Timed { kind, seconds: start.elapsed().as_secs_f64(), combinations: None, rows, failed_after: None })
}
