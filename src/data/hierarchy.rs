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
use crate::job::{DateUnit, HierarchySpec, Job};
use crate::sql::{self, list, render};
use anyhow::{Context, Result};
use duckdb::Connection;
use rustc_hash::FxHashMap;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::sync::Arc;

/// A materialized hierarchy.
#[derive(Debug, Clone)]
pub(crate) struct Hierarchy {
    pub(crate) column: String,
    /// Number of levels above the leaves.
    pub(crate) height: u8,
    /// Leaves the hierarchy lists (glm's denominator counts these).
    pub(crate) leaves: u64,
}

pub(crate) fn h_table(a: usize) -> String {
    format!("kanon_h{a}")
}
pub(crate) fn node_table(a: usize) -> String {
    format!("kanon_hnode_{a}")
}
/// QI `a`'s marginal of the base frequency set: `v{a}`, `cnt`. The hierarchy
/// checks and generators read it instead of the (source-sized) base.
pub(crate) fn marginal_table(a: usize) -> String {
    format!("kanon_marg_{a}")
}
/// QI `a`'s values as the source has them (`n`) with their leaf codes (`c0`).
pub(crate) fn code_table(a: usize) -> String {
    format!("kanon_code_{a}")
}
pub(crate) fn dim_table(a: usize) -> String {
    format!("kanon_hdim_{a}")
}

/// A hierarchy's rows as text: one per leaf (`None` for a NULL leaf), the
/// leaf's value at every level, top last. Hierarchies are small, so their
/// checks and codes are computed here rather than by many small queries.
type Rows = Vec<Vec<Option<String>>>;

/// The job's hierarchy files, read and checked (None for built-in hierarchies).
pub(crate) struct Files(Vec<Option<Rows>>);

impl Files {
    /// Per QI, the leaves of its file hierarchy (None for a built-in one):
    /// the most values a valid source column has.
    pub(crate) fn leaves(&self) -> Vec<Option<u64>> {
        self.0.iter().map(|f| f.as_ref().map(|rows| rows.len() as u64)).collect()
    }
}

/// Load and check the hierarchy files of the job, before any scan of the source.
pub(crate) fn load_files(conn: &Connection, job: &Job) -> Result<Files> {
    let mut out = Vec::new();
    for (a, qi) in job.quasi_identifiers.iter().enumerate() {
        if let HierarchySpec::File(path) = &qi.hierarchy {
            let at = || format!("{}: hierarchy of \"{}\"", job.at(&qi.column), qi.column.name);
            let mut rows = read_arx(path).with_context(at)?;
            // Identical duplicate rows are harmless (differing ones are caught
            // as two parents). The rest keep file order: the schemes' order
            // is the file's depth-first order (docs/schemes.md).
            let mut seen = std::collections::HashSet::new();
            rows.retain(|r| seen.insert(r.clone()));
            check_structure(&rows).map_err(|e| bad(format!("{}: {e}", at())))?;
            load_rows(conn, a, &rows)?;
            out.push(Some(rows));
        } else {
            out.push(None);
        }
    }
    Ok(Files(out))
}

/// Build the generated hierarchies (they need the source's values), check
/// that every value of every QI is a leaf, and build the code tables.
pub(crate) fn finish(conn: &Connection, job: &Job, files: Files) -> Result<Vec<Hierarchy>> {
    let mut out = Vec::new();
    conn.execute_batch(statement("levels_table"))?;
    for ((a, qi), file) in job.quasi_identifiers.iter().enumerate().zip(files.0) {
        let at = || format!("{}: quasi-identifier \"{}\"", job.at(&qi.column), qi.column.name);
        if !matches!(qi.hierarchy, HierarchySpec::File(_)) {
            let nulls = nulls(conn, a)?;
            if nulls > 0 {
                return Err(bad(format!(
                    "{}: {nulls} rows have NULL, which a built-in hierarchy does not list (use a file hierarchy with a NULL leaf)",
                    at()
                )));
            }
            generate(conn, a, &qi.hierarchy).with_context(at)?;
            crate::trace(|| format!("hierarchy {a} generated"));
        }
        // File hierarchies were checked by load_files, before the scan.
        let rows = match file {
            Some(rows) => rows,
            None => {
                let rows = read_rows(conn, a)?;
                let what = format!("{}: hierarchy of \"{}\"", job.at(&qi.column), qi.column.name);
                check_structure(&rows).map_err(|e| bad(format!("{what}: {e}")))?;
                rows
            }
        };
        let height = u8::try_from(rows[0].len() - 1).map_err(|_| bad(format!("{}: too many levels", at())))?;
        crate::trace(|| format!("hierarchy {a} read"));
        build_codes(conn, a, &rows).with_context(at)?;
        crate::trace(|| format!("hierarchy {a} coded"));
        out.push(Hierarchy { column: qi.column.name.clone(), height, leaves: rows.len() as u64 });
    }
    if let Some(a) =
        check_coverage(conn, job.quasi_identifiers.len()).context("checking that the hierarchies cover every value")?
    {
        let qi = &job.quasi_identifiers[a.0];
        return Err(bad(format!("{}: quasi-identifier \"{}\": {}", job.at(&qi.column), qi.column.name, a.1)));
    }
    Ok(out)
}

/// Rows whose value of column `a` is NULL (its marginal's count).
fn nulls(conn: &Connection, a: usize) -> Result<i64> {
    let q = render(
        sql::fragment(sql::HIERARCHY_LEVELS, "nulls"),
        &[("col", &format!("v{a}")), ("base", &marginal_table(a))],
    );
    Ok(conn.query_row(&q, [], |r| r.get(0))?)
}

/// Rows of an ARX hierarchy file: `leaf;level1;…;top`, no header. A leaf
/// written `NULL` stands for a missing value.
pub(crate) fn read_arx(path: &Path) -> Result<Vec<Vec<Option<String>>>> {
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

/// `kanon_h{a}` (v0 … vh, text) from `rows`, through an appender.
fn load_rows(conn: &Connection, a: usize, rows: &Rows) -> Result<()> {
    let width = rows[0].len();
    conn.execute_batch(&render(
        statement("text_table"),
        &[("h", &h_table(a)), ("columns", &list(0..width, ", ", |i| format!("v{i} VARCHAR")))],
    ))?;
    let mut app = conn.appender_to_catalog_and_db(&h_table(a), "temp", "main")?;
    for row in rows {
        app.append_row(duckdb::appender_params_from_iter(row))?;
    }
    app.flush()?;
    Ok(())
}

/// The rows of `kanon_h{a}`, sorted (read through Arrow: one leaf per row).
fn read_rows(conn: &Connection, a: usize) -> Result<Rows> {
    use duckdb::arrow::array::{Array, AsArray};
    // Sorted by DuckDB too (NULL first, text bytewise, as Rust orders them), so
    // the sort below finds one run instead of chasing 100k strings.
    let mut stmt = conn.prepare(&render(statement("text_rows"), &[("h", &h_table(a))]))?;
    let mut rows: Rows = Vec::new();
    for batch in stmt.query_arrow([])? {
        let columns: Vec<_> = batch.columns().iter().map(|c| c.as_string::<i32>()).collect();
        for i in 0..batch.num_rows() {
            rows.push(columns.iter().map(|c| c.is_valid(i).then(|| c.value(i).to_string())).collect());
        }
    }
    if rows.is_empty() {
        return Err(bad(format!("hierarchy {a} has no leaves")));
    }
    rows.sort_unstable();
    Ok(rows)
}

fn quoted(v: &Option<String>) -> String {
    v.as_ref().map_or("NULL".to_string(), |v| format!("\"{v}\""))
}

/// Each value has exactly one parent and the top is a single value.
fn check_structure(rows: &Rows) -> std::result::Result<(), String> {
    let height = rows[0].len() - 1;
    for lo in 0..height {
        // Each value's first parent, in a hash map; only a level with a
        // second parent is mapped in order, to name its first such value.
        let mut parent: FxHashMap<&Option<String>, &Option<String>> = FxHashMap::default();
        parent.reserve(rows.len());
        if rows.iter().all(|row| *parent.entry(&row[lo]).or_insert(&row[lo + 1]) == &row[lo + 1]) {
            continue;
        }
        let mut parents: BTreeMap<&Option<String>, BTreeSet<&Option<String>>> = BTreeMap::new();
        for row in rows {
            parents.entry(&row[lo]).or_default().insert(&row[lo + 1]);
        }
        if let Some((v, ps)) = parents.iter().find(|(_, ps)| ps.len() > 1) {
            let what = if lo == 0 { "leaf".to_string() } else { format!("level-{lo} value") };
            let ps: Vec<String> = ps.iter().map(|p| quoted(p)).collect();
            return Err(format!(
                "{what} {} has more than one parent at level {} ({}); each value needs exactly one",
                quoted(v),
                lo + 1,
                ps.join(" and ")
            ));
        }
    }
    let tops: BTreeSet<&Option<String>> = rows.iter().map(|r| &r[height]).collect();
    if tops.len() != 1 {
        let sample: Vec<String> = tops.iter().take(3).map(|t| quoted(t)).collect();
        return Err(format!("the top level must be a single value, found {} ({})", tops.len(), sample.join(", ")));
    }
    Ok(())
}

/// Every value of every QI is a leaf (one query for all): the first QI with
/// values that are not, and what to say.
fn check_coverage(conn: &Connection, n: usize) -> Result<Option<(usize, String)>> {
    let per_qi = list(0..n, " UNION ALL ", |a| {
        let q = render(
            sql::HIERARCHY_COVERAGE,
            &[("v", &format!("v{a}")), ("dim", &dim_table(a)), ("base", &marginal_table(a))],
        );
        render(statement("coverage_qi"), &[("a", &a.to_string()), ("check", &q)])
    });
    let mut stmt = conn.prepare(&render(statement("coverage"), &[("per_qi", &per_qi)]))?;
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        let (a, rows, values, sample): (i64, i64, i64, Option<String>) = (r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?);
        if rows > 0 {
            let text = format!(
                "{rows} rows ({values} distinct values) are not covered by the hierarchy, e.g. {}",
                sample.unwrap_or_default()
            );
            return Ok(Some((a as usize, text)));
        }
    }
    Ok(None)
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
        let h = h_table(a);
        let tops: i64 =
            conn.query_row(&render(statement("mask_tops"), &[("h", &h), ("v", &format!("v{top}"))]), [], |r| r.get(0))?;
        if tops > 1 {
            conn.execute_batch(&render(statement("mask_star"), &[("h", &h), ("v", &format!("v{}", top + 1))]))?;
        }
    }
    Ok(())
}

/// The code tables of QI `a`: each value of a level is numbered among its
/// siblings (the values with the same parent, in text order, NULL first) from
/// 0, and a leaf's code is these numbers read as one mixed-radix integer, so
/// a code at level l is the leaf code integer-divided by that level's divisor
/// (rollup needs no join). Written: `kanon_hdim_{a}` (leaf, c0 … ch),
/// `kanon_hnode_{a}` (level, code, label, leaves under it) and the divisors in
/// `kanon_hlevels`.
fn build_codes(conn: &Connection, a: usize, rows: &Rows) -> Result<()> {
    use duckdb::arrow::array::{ArrayRef, Int32Array, Int64Array, StringArray};
    let height = rows[0].len() - 1;
    // Per level below the top: value → its number among its siblings; and the radix.
    let mut divisors: Vec<i64> = vec![1];
    let mut ranks: Vec<FxHashMap<&Option<String>, i64>> = Vec::with_capacity(height);
    for j in 0..height {
        // (parent, value) pairs, sorted and deduplicated: siblings are consecutive, in text order.
        let mut pairs: Vec<(&Option<String>, &Option<String>)> = rows.iter().map(|r| (&r[j + 1], &r[j])).collect();
        pairs.sort_unstable();
        pairs.dedup();
        let mut rank = FxHashMap::default();
        let (mut radix, mut i, mut parent) = (1i64, 0i64, None);
        for (p, v) in pairs {
            i = if parent == Some(p) { i + 1 } else { 0 };
            parent = Some(p);
            rank.insert(v, i);
            radix = radix.max(i + 1);
        }
        let next = divisors[j]
            .checked_mul(radix)
            .filter(|d| *d < 1 << 62)
            .ok_or_else(|| bad(format!("hierarchy {a} is too wide to encode in 64-bit codes")))?;
        divisors.push(next);
        ranks.push(rank);
    }
    let leaf_code = |row: &Vec<Option<String>>| -> i64 { (0..height).map(|j| ranks[j][&row[j]] * divisors[j]).sum() };
    conn.execute_batch(&render(
        statement("code_tables"),
        &[
            ("dim", &dim_table(a)),
            ("columns", &list(0..=height, ", ", |l| format!("c{l} BIGINT"))),
            ("nodes", &node_table(a)),
        ],
    ))?;
    let leaf_codes: Vec<i64> = rows.iter().map(leaf_code).collect();
    let mut dim: Vec<ArrayRef> = vec![Arc::new(rows.iter().map(|r| r[0].as_deref()).collect::<StringArray>())];
    for d in &divisors {
        dim.push(Arc::new(leaf_codes.iter().map(|c| c / d).collect::<Int64Array>()));
    }
    append_batch(conn, &dim_table(a), dim)?;
    // Per level, each code with its label and the leaves under it, by code.
    let (mut level, mut code, mut label, mut leaves) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (l, d) in divisors.iter().enumerate() {
        let mut nodes: Vec<(i64, &Option<String>)> = leaf_codes.iter().zip(rows).map(|(c, r)| (c / d, &r[l])).collect();
        nodes.sort_unstable_by_key(|&(c, _)| c);
        for group in nodes.chunk_by(|x, y| x.0 == y.0) {
            level.push(l as i32);
            code.push(group[0].0);
            label.push(group[0].1.as_deref());
            leaves.push(group.len() as i64);
        }
    }
    let node: Vec<ArrayRef> = vec![
        Arc::new(Int32Array::from(level)),
        Arc::new(Int64Array::from(code)),
        Arc::new(StringArray::from(label)),
        Arc::new(Int64Array::from(leaves)),
    ];
    append_batch(conn, &node_table(a), node)?;
    let mut app = conn.appender_to_catalog_and_db("kanon_hlevels", "temp", "main")?;
    for (l, d) in divisors.iter().enumerate() {
        app.append_row(duckdb::params![a as i32, l as i32, d])?;
    }
    app.flush()?;
    Ok(())
}

/// Append `columns` (in the table's column order) to temporary table `table` as one Arrow batch.
fn append_batch(conn: &Connection, table: &str, columns: Vec<duckdb::arrow::array::ArrayRef>) -> Result<()> {
    let fields: Vec<duckdb::arrow::datatypes::Field> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| duckdb::arrow::datatypes::Field::new(format!("c{i}"), c.data_type().clone(), true))
        .collect();
    let schema = Arc::new(duckdb::arrow::datatypes::Schema::new(fields));
    let batch = duckdb::arrow::record_batch::RecordBatch::try_new(schema, columns)?;
    let mut app = conn.appender_to_catalog_and_db(table, "temp", "main")?;
    app.append_record_batch(batch)?;
    app.flush()?;
    Ok(())
}

/// Per QI, per level: the divisor that turns a leaf code into the code at that
/// level (`c_l = c_0 // divisor`), and so a code at level l into one at level
/// m ≥ l (`// (divisor_m / divisor_l)`).
pub(crate) fn divisors(conn: &Connection, n: usize) -> Result<Vec<Vec<i64>>> {
    let mut out = vec![Vec::new(); n];
    let mut stmt = conn.prepare(statement("divisors"))?;
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
pub(crate) fn rows(conn: &Connection, a: usize, height: u8) -> Result<Vec<Vec<String>>> {
    let cols = list(0..=height, ", ", |l| format!("coalesce(v{l}, 'NULL')"));
    let order = list(1..=height, ", ", |l| format!("v{}", height - l + 1));
    let q = render(statement("review"), &[("columns", &cols), ("h", &h_table(a)), ("order", &order)]);
    let mut stmt = conn.prepare(&q)?;
    let out = stmt
        .query_map([], |r| (0..=height as usize).map(|i| r.get::<_, String>(i)).collect::<duckdb::Result<Vec<_>>>())?
        .collect::<duckdb::Result<Vec<_>>>()?;
    Ok(out)
}

/// What the job's hierarchy tables hold for one QI, read for [`crate::search::scheme::ValueTree::new`] and cell-based CDGH.
pub struct HierarchyRows {
    /// Per hierarchy leaf in file order: its value and codes at every level.
    pub(crate) rows: Vec<(Option<String>, Vec<i64>)>,
    /// (level, code) → label.
    pub(crate) labels: FxHashMap<(usize, i64), Option<String>>,
    /// Leaf codes present in the data, sorted (the leaf index is the rank).
    pub(crate) present: Vec<i64>,
}

impl HierarchyRows {
    /// Read QI `a`'s hierarchy tables.
    pub fn read(conn: &Connection, a: usize, height: u8) -> Result<HierarchyRows> {
        Ok(HierarchyRows {
            rows: leaves(conn, a, height, LeafOrder::File)?,
            labels: labels(conn, a)?,
            present: present_codes(conn, a)?,
        })
    }
}

/// The order [`leaves`] gives the leaves in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LeafOrder {
    /// The hierarchy file's (a generated hierarchy's: its values').
    File,
    /// The leaf codes'.
    Code,
}

// The readers of the hierarchy tables: every other module reads them through these.

/// Per leaf of QI `a`'s hierarchy (of `height` levels above the leaves): its
/// value and its codes at every level, in `order`.
pub(crate) fn leaves(
    conn: &Connection,
    a: usize,
    height: u8,
    order: LeafOrder,
) -> Result<Vec<(Option<String>, Vec<i64>)>> {
    let h = height as usize;
    let order = match order {
        LeafOrder::File => "rowid",
        LeafOrder::Code => "c0",
    };
    let q = render(
        statement("leaves"),
        &[("columns", &list(0..=h, ", ", |l| format!("c{l}"))), ("dim", &dim_table(a)), ("order", order)],
    );
    let mut stmt = conn.prepare(&q)?;
    let rows = stmt
        .query_map([], |r| {
            let codes = (0..=h).map(|l| r.get::<_, i64>(l + 1)).collect::<duckdb::Result<Vec<_>>>()?;
            Ok((r.get::<_, Option<String>>(0)?, codes))
        })?
        .collect::<duckdb::Result<Vec<_>>>()?;
    Ok(rows)
}

/// QI `a`'s hierarchy: (level, code) → the value's label.
pub(crate) fn labels(conn: &Connection, a: usize) -> Result<FxHashMap<(usize, i64), Option<String>>> {
    let mut labels = FxHashMap::default();
    let mut stmt = conn.prepare(&render(statement("labels"), &[("nodes", &node_table(a))]))?;
    let mut q = stmt.query([])?;
    while let Some(r) = q.next()? {
        labels.insert((r.get::<_, i32>(0)? as usize, r.get::<_, i64>(1)?), r.get::<_, Option<String>>(2)?);
    }
    Ok(labels)
}

/// QI `a`'s hierarchy: per value (level, code), the leaves under it.
pub(crate) fn node_leaves(conn: &Connection, a: usize) -> Result<Vec<(i64, i64, i64)>> {
    let mut stmt = conn.prepare(&render(statement("node_leaves"), &[("nodes", &node_table(a))]))?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?.collect::<duckdb::Result<Vec<_>>>()?;
    Ok(rows)
}

/// QI `a`'s leaf codes present in the data, sorted (the leaf index is the rank).
pub(crate) fn present_codes(conn: &Connection, a: usize) -> Result<Vec<i64>> {
    let mut stmt = conn.prepare(&render(statement("present"), &[("codes", &code_table(a))]))?;
    let present = stmt.query_map([], |r| r.get::<_, i64>(0))?.collect::<duckdb::Result<Vec<_>>>()?;
    Ok(present)
}

/// A statement of `sql/hierarchy_tables.sql`.
fn statement(name: &str) -> &'static str {
    sql::fragment(sql::HIERARCHY_TABLES, name)
}

/// The index under which a sensitive column's hierarchy is built (beside the
/// QIs' 0..n, with its own tables).
const SENSITIVE_TREE: usize = 9999;

/// A non-QI column's hierarchy (t-closeness's hierarchical distance), as a
/// tree over the codes of its value → code table `codes`: its height and, per code
/// 1..=m (index 0 unused), the index of the code's value at each level
/// 1..=height. Any hierarchy form a QI takes.
pub(crate) fn value_tree(
    conn: &Connection,
    spec: &HierarchySpec,
    alias: &str,
    codes: &str,
) -> Result<(u32, Vec<Vec<u32>>)> {
    let a = SENSITIVE_TREE;
    conn.execute_batch(&render(
        statement("column_marginal"),
        &[("target", &marginal_table(a)), ("alias", alias), ("v", &format!("v{a}"))],
    ))?;
    let mut rows = match spec {
        HierarchySpec::File(path) => read_arx(path)?,
        _ => {
            let nulls = nulls(conn, a)?;
            if nulls > 0 {
                return Err(bad(format!("{nulls} rows have NULL, which a built-in hierarchy does not list")));
            }
            generate(conn, a, spec)?;
            read_rows(conn, a)?
        }
    };
    let mut seen = std::collections::HashSet::new();
    rows.retain(|r| seen.insert(r.clone()));
    check_structure(&rows).map_err(|e| bad(format!("hierarchy: {e}")))?;
    let height = rows[0].len() - 1;
    // Per level ≥ 1: value → index (a value has one parent, so it names its node).
    let mut index: Vec<BTreeMap<&Option<String>, u32>> = vec![BTreeMap::new(); height + 1];
    for row in &rows {
        for (l, v) in row.iter().enumerate().skip(1) {
            let next = index[l].len() as u32;
            index[l].entry(v).or_insert(next);
        }
    }
    let leaf: HashMap<&Option<String>, &Vec<Option<String>>> = rows.iter().map(|r| (&r[0], r)).collect();
    let mut stmt = conn.prepare(&render(statement("column_values"), &[("alias", alias), ("codes", codes)]))?;
    let mut ancestors = vec![Vec::new()];
    for r in stmt.query_map([], |r| r.get::<_, Option<String>>(1))? {
        let value = r?;
        let Some(row) = leaf.get(&value) else {
            return Err(bad(format!("value {} is not a leaf of its hierarchy", quoted(&value))));
        };
        ancestors.push((1..=height).map(|l| index[l][&row[l]]).collect());
    }
    Ok((height as u32, ancestors))
}
