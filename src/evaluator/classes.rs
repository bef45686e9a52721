//! SQL over a chosen node's classes, for what the release measures: the
//! classes it leaves out, and the sums am reads (the formula is
//! [`crate::measure::metrics::ambiguity`]'s).

use crate::data::hierarchy::node_table;
use crate::measure::metrics::{ambiguity, Dataset, Requirement};
use crate::sql::{self, list, render};
use anyhow::Result;
use duckdb::Connection;

/// A statement of `sql/classes.sql`.
fn statement(name: &str) -> &'static str {
    sql::fragment(sql::CLASSES, name)
}

/// Hold `classes` (codes c0..c{n-1}) in temp table `table`: the condition
/// that a class `c` is not one of them, or None when there are none.
pub(crate) fn left_out(conn: &Connection, table: &str, classes: &[Box<[i64]>], n: usize) -> Result<Option<String>> {
    if classes.is_empty() {
        return Ok(None);
    }
    conn.execute_batch(&render(
        statement("left_out_table"),
        &[("table", table), ("columns", &list(0..n, ", ", |a| format!("c{a} BIGINT")))],
    ))?;
    let mut app = conn.appender(table)?;
    for class in classes {
        app.append_row(duckdb::appender_params_from_iter(class.iter()))?;
    }
    app.flush()?;
    Ok(Some(render(
        statement("left_out"),
        &[("table", table), ("same", &list(0..n, " AND ", |a| format!("x.c{a} = c.c{a}")))],
    )))
}

/// am of a full-domain release, over the node's classes written to
/// `kanon_node_classes` ([`crate::release::write_node_classes`]).
pub(crate) fn full_domain_ambiguity(
    conn: &Connection,
    levels: &[u8],
    req: &Requirement,
    rejected: &[Box<[i64]>],
    data: &Dataset,
) -> Result<f64> {
    let n = levels.len();
    // Classes the per-class models reject are suppressed too.
    let anti = left_out(conn, "kanon_rejected", rejected, n)?.map_or(String::new(), |c| format!(" AND {c}"));
    let q = render(
        sql::fragment(sql::RELEASE_MAP, "ambiguity"),
        &[
            (
                "joins",
                &list(0..n, " ", |a| {
                    format!("JOIN {} h{a} ON h{a}.level = {} AND h{a}.code = c.c{a}", node_table(a), levels[a])
                }),
            ),
            ("product", &list(0..n, " * ", |a| format!("h{a}.leaves::DOUBLE"))),
            ("rejected", &anti),
        ],
    );
    let (kept, records): (f64, i64) =
        conn.query_row(&q, duckdb::params![req.k as i64, req.l.unwrap_or(0) as i64], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(ambiguity(kept, records as f64, data))
}
