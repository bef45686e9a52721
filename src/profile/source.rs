//! Opening the source: a DuckDB table, a CSV or a Parquet file behind the
//! view `kanon_source`, read as `kanon run` will read it.

use crate::error::{bad, OrBadInput};
use crate::sql::{self, fragment, ident, list, literal, render};
use anyhow::Result;
use duckdb::Connection;
use std::path::Path;

/// What the source is, as the job's `[source]` names it.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Kind {
    Database { table: String },
    Csv { delimiter: String },
    Parquet,
}

/// The source behind the view `kanon_source`, read as `kanon run` will read it.
pub(super) fn open(conn: &Connection, path: &Path, table: Option<&str>) -> Result<Kind> {
    let shown = path.display().to_string();
    let mut head = [0u8; 12];
    let n = std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
        .map_err(|e| bad(format!("cannot read source {shown}: {e}")))?;
    let ext = path.extension().map(|e| e.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
    let is_duckdb = n >= 12 && &head[8..12] == b"DUCK";
    let is_parquet = n >= 4 && &head[..4] == b"PAR1";
    let lit = literal(&path.to_string_lossy());
    let (relation, kind) = if is_duckdb || ext == "duckdb" || ext == "db" {
        conn.execute_batch(&render(fragment(sql::INIT_PROFILE, "attach"), &[("path", &lit)]))
            .or_bad_input(|| format!("opening source database {shown}"))?;
        let chosen = choose_table(conn, &shown, table)?;
        (format!("kanon_src.main.{}", ident(&chosen)), Kind::Database { table: chosen })
    } else {
        if let Some(t) = table {
            return Err(bad(format!("--table \"{t}\" applies to a DuckDB database; {shown} is not one")));
        }
        if is_parquet || ext == "parquet" || ext == "pq" {
            (format!("read_parquet({lit})"), Kind::Parquet)
        } else {
            let delimiter: String = conn
                .query_row(fragment(sql::INIT_PROFILE, "sniff"), [path.to_string_lossy()], |r| r.get(0))
                .or_bad_input(|| format!("reading source {shown}"))?;
            // The same call as kanon's CSV source with `delimiter` set (engine/embedded.rs).
            let relation = format!("read_csv({lit}, delim = {}, header = true)", literal(&delimiter));
            (relation, Kind::Csv { delimiter })
        }
    };
    conn.execute_batch(&render(sql::SOURCE_VIEW, &[("relation", &relation)]))
        .or_bad_input(|| format!("reading source {shown}"))?;
    Ok(kind)
}

/// The attached database's table to read: `table`, or its only one.
fn choose_table(conn: &Connection, shown: &str, table: Option<&str>) -> Result<String> {
    let mut stmt = conn.prepare(fragment(sql::INIT_PROFILE, "tables"))?;
    let tables: Vec<String> = stmt.query_map(["kanon_src"], |r| r.get(0))?.collect::<duckdb::Result<_>>()?;
    match table {
        Some(t) => tables
            .iter()
            .find(|x| x.eq_ignore_ascii_case(t))
            .cloned()
            .ok_or_else(|| bad(format!("table \"{t}\" not found in {shown}; its tables: {}", names(&tables)))),
        None => match tables.as_slice() {
            [one] => Ok(one.clone()),
            [] => Err(bad(format!("{shown} has no tables"))),
            _ => Err(bad(format!("{shown} has {} tables; name one with --table: {}", tables.len(), names(&tables)))),
        },
    }
}

fn names(tables: &[String]) -> String {
    list(tables, ", ", |t| format!("\"{t}\""))
}
