//! Value generalization hierarchies as DuckDB dimension tables.
//!
//! For QI number `a` (job order) kanon keeps:
//! - `kanon_h{a}`: one row per leaf, text value at each level (`v0` = leaf);
//! - `kanon_hdim_{a}`: each leaf with its code at every level (`c0..ch`): the
//!   mapping "value → group" a node applies to this QI at level l;
//! - `kanon_hnode_{a}`: each generalized value: level, code (unique within the
//!   level), label, leaves under it;
//! - `kanon_hlevels`: per QI and level the divisor with `c_l = c_0 // divisor`.
//!   Leaf codes are mixed-radix numbers (sibling number per level), so rolling
//!   a frequency set up is integer division, with no join per row.

use crate::error::bad;
use crate::job::{DateUnit, HierarchySpec, Job, QuasiIdentifier};
use crate::sql::{self, list, render};
use anyhow::{Context, Result};
use duckdb::Connection;
use std::path::Path;

/// A materialized hierarchy.
#[derive(Debug, Clone)]
pub struct Hierarchy {
    pub column: String,
    /// Number of levels above the leaves.
    pub height: u8,
    /// Leaves the hierarchy lists (glm's denominator counts these).
    pub leaves: u64,
}

pub fn h_table(a: usize) -> String {
    format!("kanon_h{a}")
}
pub fn node_table(a: usize) -> String {
    format!("kanon_hnode_{a}")
}
/// QI `a`'s marginal of the base frequency set: `v{a}`, `cnt`. The hierarchy
/// checks and generators read it instead of the (source-sized) base.
pub fn marginal_table(a: usize) -> String {
    format!("kanon_marg_{a}")
}
/// QI `a`'s values as the source has them (`n`) with their leaf codes (`c0`).
pub fn code_table(a: usize) -> String {
    format!("kanon_code_{a}")
}
pub fn dim_table(a: usize) -> String {
    format!("kanon_hdim_{a}")
}

/// Load and check the hierarchy files of the job, before any scan of the source.
pub fn load_files(conn: &Connection, job: &Job) -> Result<()> {
    for (a, qi) in job.quasi_identifiers.iter().enumerate() {
        if let HierarchySpec::File(path) = &qi.hierarchy {
            let rows = read_arx(path)
                .with_context(|| format!("{}: hierarchy of \"{}\"", job.at(&qi.column), qi.column.name))?;
            load_rows(conn, a, &rows)?;
            check_structure(conn, job, a, qi)?;
        }
    }
    Ok(())
}

/// Build the generated hierarchies (they need the base frequency set's values),
/// check that every value of every QI is a leaf, and build the code tables.
pub fn finish(conn: &Connection, job: &Job) -> Result<Vec<Hierarchy>> {
    let mut out = Vec::new();
    for (a, qi) in job.quasi_identifiers.iter().enumerate() {
        let at = || format!("{}: quasi-identifier \"{}\"", job.at(&qi.column), qi.column.name);
        if !matches!(qi.hierarchy, HierarchySpec::File(_)) {
            let nulls: i64 = conn.query_row(
                &render(
                    sql::fragment(sql::HIERARCHY_LEVELS, "nulls"),
                    &[("col", &format!("v{a}")), ("base", &marginal_table(a))],
                ),
                [],
                |r| r.get(0),
            )?;
            if nulls > 0 {
                return Err(bad(format!(
                    "{}: {nulls} rows have NULL, which a built-in hierarchy does not list (use a file hierarchy with a NULL leaf)",
                    at()
                )));
            }
            generate(conn, a, &qi.hierarchy).with_context(at)?;
        }
        // File hierarchies were checked by load_files, before the scan.
        let (height, leaves) = match qi.hierarchy {
            HierarchySpec::File(_) => {
                let leaves: i64 = conn.query_row(&format!("SELECT count(*) FROM {}", h_table(a)), [], |r| r.get(0))?;
                (height_of(conn, a)?, leaves as u64)
            }
            _ => check_structure(conn, job, a, qi)?,
        };
        check_coverage(conn, a).with_context(at)?;
        build_codes(conn, a, height)?;
        out.push(Hierarchy { column: qi.column.name.clone(), height, leaves });
    }
    Ok(out)
}

/// Rows of an ARX hierarchy file: `leaf;level1;…;top`, no header. A leaf
/// written `NULL` stands for a missing value.
fn read_arx(path: &Path) -> Result<Vec<Vec<Option<String>>>> {
    let text = std::fs::read_to_string(path).map_err(|e| bad(format!("cannot read {}: {e}", path.display())))?;
    let mut rows: Vec<Vec<Option<String>>> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r').trim_start_matches('\u{feff}');
        if line.trim().is_empty() {
            continue;
        }
        let mut cells: Vec<Option<String>> = line.split(';').map(|c| Some(c.to_string())).collect();
        if cells[0].as_deref() == Some("NULL") {
            cells[0] = None;
        }
        if cells.len() < 2 {
            return Err(bad(format!(
                "{}:{}: a row needs a leaf and at least one level above it",
                path.display(),
                n + 1
            )));
        }
        if let Some(first) = rows.first() {
            if first.len() != cells.len() {
                return Err(bad(format!(
                    "{}:{}: {} levels, but the first row has {}",
                    path.display(),
                    n + 1,
                    cells.len(),
                    first.len()
                )));
            }
        }
        rows.push(cells);
    }
    if rows.is_empty() {
        return Err(bad(format!("{}: the hierarchy file is empty", path.display())));
    }
    Ok(rows)
}

/// Insert rows into `kanon_h{a}` with bound parameters, a few hundred at a time.
fn load_rows(conn: &Connection, a: usize, rows: &[Vec<Option<String>>]) -> Result<()> {
    let width = rows[0].len();
    let table = format!("kanon_hraw{a}");
    conn.execute_batch(&format!(
        "CREATE OR REPLACE TEMP TABLE {table} ({})",
        list(0..width, ", ", |i| format!("v{i} VARCHAR"))
    ))?;
    let tuple = format!("({})", vec!["?"; width].join(", "));
    for chunk in rows.chunks(500) {
        let stmt = format!("INSERT INTO {table} VALUES {}", vec![tuple.as_str(); chunk.len()].join(", "));
        conn.execute(&stmt, duckdb::params_from_iter(chunk.iter().flatten()))?;
    }
    // Identical duplicate rows are harmless; differing ones are caught as two parents.
    conn.execute_batch(&format!(
        "CREATE OR REPLACE TEMP TABLE {} AS SELECT DISTINCT * FROM {table}; DROP TABLE {table}",
        h_table(a)
    ))?;
    Ok(())
}

/// Height of `kanon_h{a}` (columns − 1).
fn height_of(conn: &Connection, a: usize) -> Result<u8> {
    let n: i64 = conn.query_row(
        "SELECT count(*) FROM duckdb_columns() WHERE database_name = 'temp' AND table_name = ?",
        [h_table(a)],
        |r| r.get(0),
    )?;
    u8::try_from(n - 1).map_err(|_| bad(format!("hierarchy {a} has too many levels")))
}

/// Each value has exactly one parent and the top is a single value.
fn check_structure(conn: &Connection, job: &Job, a: usize, qi: &QuasiIdentifier) -> Result<(u8, u64)> {
    let at = format!("{}: hierarchy of \"{}\"", job.at(&qi.column), qi.column.name);
    let height = height_of(conn, a)?;
    let h = h_table(a);
    for lo in 0..height {
        let q =
            render(sql::HIERARCHY_PARENTS, &[("lo", &format!("v{lo}")), ("hi", &format!("v{}", lo + 1)), ("h", &h)]);
        let mut stmt = conn.prepare(&q)?;
        let bad_rows: Vec<(String, String)> =
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<duckdb::Result<_>>()?;
        if let Some((v, parents)) = bad_rows.first() {
            let what = if lo == 0 { "leaf".to_string() } else { format!("level-{lo} value") };
            return Err(bad(format!(
                "{at}: {what} {v} has more than one parent at level {} ({parents}); each value needs exactly one",
                lo + 1
            )));
        }
    }
    let q = render(sql::HIERARCHY_TOPS, &[("top", &format!("v{height}")), ("h", &h)]);
    let (tops, sample, leaves): (i64, Option<String>, i64) =
        conn.query_row(&q, [], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    if tops != 1 {
        return Err(bad(format!(
            "{at}: the top level must be a single value, found {tops} ({})",
            sample.unwrap_or_default()
        )));
    }
    Ok((height, leaves as u64))
}

/// Every value of the column is a leaf.
fn check_coverage(conn: &Connection, a: usize) -> Result<()> {
    // kanon_hdim_{a} is not built yet; cover against the text table's leaves.
    let dim = format!("(SELECT v0 AS leaf, 0 AS c0 FROM {})", h_table(a));
    let q = render(sql::HIERARCHY_COVERAGE, &[("v", &format!("v{a}")), ("dim", &dim), ("base", &marginal_table(a))]);
    let (rows, values, sample): (i64, i64, Option<String>) =
        conn.query_row(&q, [], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    if rows > 0 {
        return Err(bad(format!(
            "{rows} rows ({values} distinct values) are not covered by the hierarchy, e.g. {}",
            sample.unwrap_or_default()
        )));
    }
    Ok(())
}

/// Built-in hierarchies from the distinct values of QI `a` in the base frequency set.
fn generate(conn: &Connection, a: usize, spec: &HierarchySpec) -> Result<()> {
    let frag = |name| sql::fragment(sql::HIERARCHY_LEVELS, name);
    let col = format!("v{a}");
    let mut levels: Vec<String> = Vec::new();
    let mut params: Vec<f64> = Vec::new();
    let mut test = None;
    match spec {
        HierarchySpec::Suppress => {}
        HierarchySpec::Mask(n) => {
            for i in 1..=*n {
                levels.push(render(frag("mask"), &[("i", &i.to_string())]));
            }
        }
        HierarchySpec::Intervals(widths) => {
            test = Some(("a number", "TRY_CAST(v AS DOUBLE)"));
            for w in widths {
                params.push(*w);
                levels.push(render(frag("interval"), &[("p", &params.len().to_string())]));
            }
        }
        HierarchySpec::Date(units) => {
            test = Some(("a date", "TRY_CAST(TRY_CAST(v AS TIMESTAMP) AS DATE)"));
            for u in units {
                let name = match u {
                    DateUnit::Month => "month",
                    DateUnit::Quarter => "quarter",
                    DateUnit::Year => "year",
                    DateUnit::Decade => "decade",
                    DateUnit::Century => "century",
                };
                levels.push(frag(name).to_string());
            }
        }
        HierarchySpec::File(_) => unreachable!("file hierarchies are loaded, not generated"),
    }
    if let Some((kind, expr)) = test {
        let q = render(frag("unparsable"), &[("col", &col), ("test", expr), ("base", &marginal_table(a))]);
        let (n, sample): (i64, Option<String>) = conn.query_row(&q, [], |r| Ok((r.get(0)?, r.get(1)?)))?;
        if n > 0 {
            return Err(bad(format!("{n} values are not {kind}, e.g. {}", sample.unwrap_or_default())));
        }
    }
    let needs_star = !matches!(spec, HierarchySpec::Mask(_));
    if needs_star {
        levels.push("'*'".into());
    }
    let select = list(levels.iter().enumerate(), ", ", |(i, e)| format!("{e} AS v{}", i + 1));
    let q = render(
        frag("generate"),
        &[("h", &h_table(a)), ("levels", &select), ("col", &col), ("base", &marginal_table(a))],
    );
    conn.execute(&q, duckdb::params_from_iter(params))?;
    if !needs_star {
        // Masking every character may still leave values of different lengths.
        let top = levels.len();
        let tops: i64 =
            conn.query_row(&format!("SELECT count(DISTINCT v{top}) FROM {}", h_table(a)), [], |r| r.get(0))?;
        if tops > 1 {
            conn.execute_batch(&format!("ALTER TABLE {} ADD COLUMN v{} VARCHAR DEFAULT '*'", h_table(a), top + 1))?;
        }
    }
    Ok(())
}

/// The code tables of QI `a`: leaf dimension and nodes, with the level
/// divisors recorded in `kanon_hlevels`.
fn build_codes(conn: &Connection, a: usize, height: u8) -> Result<()> {
    let h = h_table(a);
    let ranks = |j: u8| format!("kanon_hrank_{a}_{j}");
    // divisor(l) = product of the sibling counts (radices) of levels below l.
    let mut divisors: Vec<i64> = vec![1];
    for j in 0..height {
        conn.execute_batch(&render(
            sql::HIERARCHY_RANKS,
            &[("ranks", &ranks(j)), ("lo_col", &format!("v{j}")), ("hi_col", &format!("v{}", j + 1)), ("h", &h)],
        ))?;
        let radix: i64 =
            conn.query_row(&format!("SELECT coalesce(max(idx), 0) + 1 FROM {}", ranks(j)), [], |r| r.get(0))?;
        let next = divisors[j as usize]
            .checked_mul(radix)
            .filter(|d| *d < 1 << 62)
            .ok_or_else(|| bad(format!("hierarchy {a} is too wide to encode in 64-bit codes")))?;
        divisors.push(next);
    }
    let leaf_code = if height == 0 {
        "0".to_string()
    } else {
        list(0..height, " + ", |j| format!("r{j}.idx * {}", divisors[j as usize]))
    };
    let codes = list(0..=height, ", ", |l| format!("({leaf_code})::BIGINT // {} AS c{l}", divisors[l as usize]));
    let rank_joins =
        list(0..height, " ", |j| format!("JOIN {} r{j} ON r{j}.label IS NOT DISTINCT FROM h.v{j}", ranks(j)));
    let levels =
        list(0..=height, " UNION ALL ", |l| format!("SELECT {l} AS level, c{l} AS code, v{l} AS label FROM x"));
    conn.execute_batch(&render(
        sql::HIERARCHY_NODES,
        &[
            ("dim", &dim_table(a)),
            ("codes", &codes),
            ("h", &h),
            ("rank_joins", &rank_joins),
            ("nodes", &node_table(a)),
            ("levels", &levels),
        ],
    ))?;
    for j in 0..height {
        conn.execute_batch(&format!("DROP TABLE {}", ranks(j)))?;
    }
    conn.execute_batch("CREATE TEMP TABLE IF NOT EXISTS kanon_hlevels (qi INTEGER, level INTEGER, divisor BIGINT)")?;
    conn.execute("DELETE FROM kanon_hlevels WHERE qi = ?", [a as i64])?;
    for (l, d) in divisors.iter().enumerate() {
        conn.execute("INSERT INTO kanon_hlevels VALUES (?, ?, ?)", duckdb::params![a as i64, l as i64, d])?;
    }
    Ok(())
}

/// Per QI, per level: the divisor that turns a leaf code into the code at that
/// level (`c_l = c_0 // divisor`), and so a code at level l into one at level
/// m ≥ l (`// (divisor_m / divisor_l)`).
pub fn divisors(conn: &Connection, n: usize) -> Result<Vec<Vec<i64>>> {
    let mut out = vec![Vec::new(); n];
    let mut stmt = conn.prepare("SELECT qi, divisor FROM kanon_hlevels ORDER BY qi, level")?;
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        let qi: i64 = r.get(0)?;
        if let Some(v) = out.get_mut(qi as usize) {
            v.push(r.get(1)?);
        }
    }
    Ok(out)
}

/// The materialized hierarchy of QI `a` as rows `leaf;level1;…;top`, for review.
pub fn rows(conn: &Connection, a: usize, height: u8) -> Result<Vec<Vec<String>>> {
    let cols = list(0..=height, ", ", |l| format!("coalesce(v{l}, 'NULL')"));
    let order = list(1..=height, ", ", |l| format!("v{}", height - l + 1));
    let q = format!("SELECT {cols} FROM {} ORDER BY {order}, v0 NULLS FIRST", h_table(a));
    let mut stmt = conn.prepare(&q)?;
    let out = stmt
        .query_map([], |r| (0..=height as usize).map(|i| r.get::<_, String>(i)).collect::<duckdb::Result<Vec<_>>>())?
        .collect::<duckdb::Result<Vec<_>>>()?;
    Ok(out)
}
