//! `kanon check` with `[privacy] person`: the audited table's classes of
//! persons (docs/semantics.md, "Person-level k"). Each person's signature is
//! the set of its QI tuples; one statement groups the table by person there
//! (DuckDB, Spark or PostgreSQL: `sql/persons.sql` `audit`, with the engine's
//! hash spellings) and only a row per class size comes back. The figures
//! count persons (k, the histogram, the risk); the rows are reported beside.

use super::tally::{Audit, Class, Part};
use crate::engine::remote::RemoteEngine;
use crate::job::Job;
use crate::sql::{self, ident, list, render};
use anyhow::{Context, Result};
use duckdb::Connection;

/// The classes of persons of `relation` (local, or there when `remote`) into
/// `audit`, as classes whose records are persons. Returns the table's rows.
pub(super) fn classes(
    conn: &Connection,
    remote: Option<&dyn RemoteEngine>,
    job: &Job,
    relation: &str,
    audit: &mut Audit,
) -> Result<u64> {
    let person = job.privacy.person.as_ref().context("a person column")?;
    let qis = job.qi_names();
    let cols = list(0..qis.len(), ", ", |a| format!("q{a}"));
    let spelling = |name: &str| match remote {
        Some(r) => r.spelling(name),
        None => sql::fragment(sql::DUCKDB, name),
    };
    let hash = |name: &str, seed: &str| render(spelling(name), &[("cols", &cols), ("seed", seed)]);
    let mut columns = format!("{} AS p", ident(&person.name));
    columns.push_str(&list(qis.iter().enumerate(), "", |(a, q)| format!(", {} AS q{a}", ident(q))));
    let select = render(
        sql::fragment(sql::PERSONS, "audit"),
        &[
            ("hash", &hash("tuple_hash", "0")),
            ("bits", &hash("tuple_hash_bits", "1")),
            ("columns", &columns),
            ("relation", relation),
            ("group_by", &list(1..=qis.len() + 1, ", ", |i| i.to_string())),
        ],
    );
    let mut rows = 0;
    let mut take = |size: u64, classes: u64, r: u64| {
        rows += r;
        let class = Class { records: size, population: size, ..Class::default() };
        audit.classes_alike(class, classes, Part::All);
    };
    match remote {
        Some(r) => {
            r.fetch(conn, &select, "kanon_person_classes")?;
            let mut stmt = conn.prepare(sql::fragment(sql::PERSONS, "audit_fetched"))?;
            let mut got = stmt.query([])?;
            while let Some(row) = got.next()? {
                take(row.get::<_, i64>(0)? as u64, row.get::<_, i64>(1)? as u64, row.get::<_, i64>(2)? as u64);
            }
        }
        None => {
            let mut stmt = conn.prepare(&select)?;
            let mut got = stmt.query([])?;
            while let Some(row) = got.next()? {
                take(row.get::<_, i64>(0)? as u64, row.get::<_, i64>(1)? as u64, row.get::<_, i64>(2)? as u64);
            }
        }
    }
    Ok(rows)
}
