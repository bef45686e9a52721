//! Frequency sets: the source's per-column marginals (a light first scan), the
//! base frequency set (one `GROUP BY` of the source by integer codes; or the
//! coded rows, for the in-memory evaluator to group), and rollup of frequency
//! sets to nodes above them.
//!
//! A frequency set has a code `g{a}` per QI `a` (at the node's level; NULL for
//! a QI the node leaves out), the extra columns `s` (sensitive value code, when
//! ℓ-diversity or t-closeness is asked), `t` (t-closeness's column, when it is
//! not ℓ's), `y` (class label code, when a class column is given), and `cnt`.
//! `kanon_f0` is the zero-generalization frequency set over all QIs.

use crate::data::hierarchy::dim_table;
use crate::engine::remote::{Remote, WorkUse};
use crate::job::EvaluatorSide;
use crate::sql::{self, ident, list, render};
use anyhow::{Context, Result};
use duckdb::Connection;
use std::cell::{Cell, RefCell};

/// Columns a frequency set carries beside the QI codes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Extras {
    /// `s`: the sensitive column, for ℓ-diversity.
    pub(crate) sensitive: bool,
    /// `t`: t-closeness's column, when it is not the sensitive column.
    pub(crate) closeness: bool,
    /// `y`: the class label, for the classification metric.
    pub(crate) label: bool,
    /// Also sum the squared counts of each class's sensitive values (the sl
    /// spread of `kanon pareto`); needs `sensitive`.
    pub spread: bool,
}

impl Extras {
    /// `, p.s, p.t, p.y` (as present), for select lists.
    pub(crate) fn columns(&self, alias: &str) -> String {
        list(self.names(), "", |c| format!(", {alias}.{c}"))
    }

    /// The extra columns present: `s`, `t`, `y` in that order.
    pub(crate) fn names(&self) -> Vec<&'static str> {
        [(self.sensitive, "s"), (self.closeness, "t"), (self.label, "y")]
            .into_iter()
            .filter_map(|(on, c)| on.then_some(c))
            .collect()
    }

    /// Does a frequency set have more rows than classes?
    pub(crate) fn any(&self) -> bool {
        self.sensitive || self.closeness || self.label
    }
}

/// A statement of `sql/frequency_sets.sql`.
fn statement(name: &str) -> &'static str {
    sql::fragment(sql::FREQUENCY_SETS, name)
}

/// Extra column tables (sensitive `s`, t-closeness `t`, label `y`): the value → code map.
pub(crate) fn extra_codes(col: &str) -> String {
    format!("kanon_codes_{col}")
}

/// What the marginal scan and the base frequency set read: the source itself,
/// a row per record; or, for a small file, the source grouped once by the
/// columns the search reads, a row per distinct combination with its count
/// (parsing a file costs more than scanning a table, and the grouped rows are
/// no more than the file's).
pub(crate) struct Input {
    relation: String,
    /// The count column of a grouped input.
    weight: Option<String>,
}

impl Input {
    /// The source as it is.
    pub(crate) fn source() -> Input {
        Input { relation: "kanon_source".into(), weight: None }
    }

    /// Group the source once by `columns` (QIs, then the sensitive and label
    /// columns) into `kanon_source_grouped`, counting records in a column
    /// named apart from them.
    pub(crate) fn grouped(conn: &Connection, columns: &[&str], source: &str) -> Result<Input> {
        let weight = weight_name(columns.iter().copied());
        conn.execute_batch(&render(
            sql::SOURCE_GROUPED,
            &[("columns", &list(columns, ", ", |c| ident(c))), ("count", &ident(&weight))],
        ))
        .map_err(|e| {
            // The first full parse of the file: a row that does not parse is bad input;
            // running out of memory or disk is not.
            let e = anyhow::Error::new(e).context(format!("reading source {source}"));
            if crate::error::resource_hint(&e).is_some() {
                e
            } else {
                crate::error::bad(format!("{e:#}"))
            }
        })?;
        Ok(Input { relation: "kanon_source_grouped".into(), weight: Some(weight) })
    }

    /// Records per group, as an aggregate over rows of this input aliased `alias`.
    fn count(&self, alias: &str) -> String {
        match &self.weight {
            None => "count(*)".into(),
            Some(w) => format!("sum({alias}{})::BIGINT", ident(w)),
        }
    }
}

/// A name for a grouped table's count column, apart from its `columns`.
pub(crate) fn weight_name<'a>(columns: impl Iterator<Item = &'a str> + Clone) -> String {
    (0..)
        .map(|i| format!("kanon_count{i}"))
        .find(|w| !columns.clone().any(|c| c.eq_ignore_ascii_case(w)))
        .unwrap_or_default()
}

/// The product of the leaves of the QIs [`scan_source`] groups together, at
/// most: their combinations come back as one small aggregate, one scan
/// where each would have had its own.
const FUSED_COMBINATIONS: u64 = 4096;

/// The light first scan: per-column marginals of the source in one pass, into
/// `kanon_marg_{a}` per QI (and `kanon_marg_s` / `_t` / `_y` for the `extra`
/// columns, (alias, column)). `leaves`: per QI its file hierarchy's leaves
/// (None for a built-in hierarchy), on an engine that scans a column at a
/// time. Returns the number of rows.
pub(crate) fn scan_source(
    conn: &Connection,
    remote: Option<&Remote>,
    input: &Input,
    qis: &[String],
    leaves: &[Option<u64>],
    extra: &[(&str, &str)],
) -> Result<u64> {
    let mut cols: Vec<(String, String)> = qis.iter().enumerate().map(|(a, c)| (ident(c), format!("v{a}"))).collect();
    for (alias, c) in extra {
        cols.push((ident(c), alias.to_string()));
    }
    let m = cols.len();
    let all = list(cols.iter(), ", ", |(_, v)| v.clone());
    let mut columns = list(cols.iter(), ", ", |(c, v)| format!("{c} AS {v}"));
    if let Some(w) = &input.weight {
        columns.push_str(&format!(", {}", ident(w)));
    }
    // GROUPING(): a bit per column not grouped, the first column the highest bit.
    let gid = |j: usize| -> u64 { ((1u64 << m) - 1) & !(1u64 << (m - 1 - j)) };
    let split = |j: usize| -> Result<()> {
        let v = &cols[j].1;
        let target = if j < qis.len() { crate::data::hierarchy::marginal_table(j) } else { format!("kanon_marg_{v}") };
        conn.execute_batch(&render(
            sql::fragment(sql::SOURCE_MARGINALS, "split"),
            &[("target", &target), ("col", v), ("gid", &gid(j).to_string())],
        ))?;
        Ok(())
    };
    if remote.is_some() {
        // One aggregate per column, each in parallel there: the same rows
        // (GROUPING()'s gid), one column's at a time; QIs whose hierarchy files
        // bound their combinations in one aggregate, split here. PostgreSQL
        // never runs grouping sets in parallel; Spark expands every row once
        // per set, where one column's aggregate reads only that column of a
        // columnar table (10M Parquet rows: 3.8-4.8 s against 6.2-9.5 s).
        let fused = fused_columns(leaves);
        if !fused.is_empty() {
            let mut columns = list(&fused, ", ", |&j| format!("{} AS {}", cols[j].0, cols[j].1));
            if let Some(w) = &input.weight {
                columns.push_str(&format!(", {}", ident(w)));
            }
            let fused_scan = render(
                sql::fragment(sql::SOURCE_MARGINALS, "scan_fused"),
                &[
                    ("all", &list(&fused, ", ", |&j| cols[j].1.clone())),
                    ("columns", &columns),
                    ("relation", &input.relation),
                    ("count", &input.count("")),
                ],
            );
            materialize(conn, remote, "kanon_marginals_fused", &fused_scan).context("scanning the source")?;
            for &j in &fused {
                conn.execute_batch(&render(
                    sql::fragment(sql::SOURCE_MARGINALS, "fused_part"),
                    &[("v", &cols[j].1), ("gid", &gid(j).to_string())],
                ))?;
                split(j)?;
            }
            conn.execute_batch(sql::fragment(sql::SOURCE_MARGINALS, "drop_fused"))?;
        }
        for (j, (c, v)) in cols.iter().enumerate().filter(|(j, _)| !fused.contains(j)) {
            let mut columns = format!("{c} AS {v}");
            if let Some(w) = &input.weight {
                columns.push_str(&format!(", {}", ident(w)));
            }
            let part = render(
                sql::fragment(sql::SOURCE_MARGINALS, "scan_part"),
                &[
                    ("v", v),
                    ("gid", &gid(j).to_string()),
                    ("columns", &columns),
                    ("relation", &input.relation),
                    ("count", &input.count("")),
                ],
            );
            materialize(conn, remote, "kanon_marginals", &part).context("scanning the source")?;
            split(j)?;
        }
    } else {
        let scan = render(
            sql::fragment(sql::SOURCE_MARGINALS, "scan"),
            &[
                ("all", &all),
                ("columns", &columns),
                ("relation", &input.relation),
                ("count", &input.count("")),
                ("sets", &list(cols.iter(), ", ", |(_, v)| format!("({v})"))),
            ],
        );
        materialize(conn, remote, "kanon_marginals", &scan).context("scanning the source")?;
        for j in 0..m {
            split(j)?;
        }
    }
    conn.execute_batch(sql::fragment(sql::SOURCE_MARGINALS, "drop"))?;
    source_rows(conn)
}

/// The QIs whose marginals one aggregate of their combinations gives: those
/// with a file hierarchy, fewest leaves first, while the product of their
/// leaves (a NULL leaf counted) stays within [`FUSED_COMBINATIONS`]; none
/// unless at least two. A value outside its file is an error the hierarchy
/// check reports anyway, so the bound holds for every source that passes.
fn fused_columns(leaves: &[Option<u64>]) -> Vec<usize> {
    let mut by_leaves: Vec<(u64, usize)> = leaves.iter().enumerate().filter_map(|(j, l)| l.map(|l| (l, j))).collect();
    by_leaves.sort();
    let mut product = 1u64;
    let mut fused = Vec::new();
    for (l, j) in by_leaves {
        match product.checked_mul(l.max(1)) {
            Some(p) if p <= FUSED_COMBINATIONS => {
                product = p;
                fused.push(j);
            }
            _ => break,
        }
    }
    if fused.len() < 2 {
        fused.clear();
    }
    fused.sort();
    fused
}

/// The source's records, off the first QI's marginal.
pub(crate) fn source_rows(conn: &Connection) -> Result<u64> {
    let q = render(
        sql::fragment(sql::SOURCE_MARGINALS, "records"),
        &[("marginal", &crate::data::hierarchy::marginal_table(0))],
    );
    Ok(conn.query_row(&q, [], |r| r.get::<_, i64>(0))? as u64)
}

/// The narrowest signed integer type holding 0..bound (exclusive).
pub(crate) fn int_type(bound: i64) -> &'static str {
    match bound {
        ..=0x80 => "TINYINT",
        ..=0x8000 => "SMALLINT",
        ..=0x8000_0000 => "INTEGER",
        _ => "BIGINT",
    }
}

/// Group the source into `kanon_f0` by leaf codes (every value is a leaf by
/// now): the code tables come from the marginals and the hierarchies. Each
/// code and the count get the narrowest integer type that holds them: at 100M
/// rows that keeps the base frequency set in memory (about 15 bytes a row
/// instead of 64), where every pass from it would otherwise read spilled data.
#[allow(clippy::too_many_arguments)]
pub(crate) fn encode(
    conn: &Connection,
    remote: Option<&Remote>,
    input: &Input,
    qis: &[String],
    rows: u64,
    extra: &[(&str, &str)],
    columns: &[crate::engine::embedded::SourceColumn],
    memory_rows: u64,
    side: EvaluatorSide,
) -> Result<BaseForm> {
    let n = qis.len();
    // Source value = code table value, NULL matching NULL, as the engine joins fastest.
    let same = |left: &str, right: &str, column: &str, table: &str| -> Result<String> {
        Ok(match remote {
            Some(r) => {
                let t = columns.iter().find(|c| c.name == column).map_or("", |c| c.type_name.as_str());
                r.same_value(left, right, t, crate::engine::embedded::has_null(conn, table)?)
            }
            None if crate::engine::embedded::has_null(conn, table)? => format!("{left} IS NOT DISTINCT FROM {right}"),
            None => format!("{left} = {right}"),
        })
    };
    // A leaf code is below its hierarchy's top divisor (the top level has code 0).
    let divisors = crate::data::hierarchy::divisors(conn, n)?;
    let tops: Vec<i64> = divisors.iter().map(|d| *d.last().unwrap_or(&1)).collect();
    let aliases: Vec<&str> = extra.iter().map(|e| e.0).collect();
    let person_offset = code_tables(conn, n, &aliases)?;
    if let Some(remote) = remote {
        // The grouping runs where the source lives: it joins the code tables there.
        let mut tables: Vec<String> = (0..n).map(crate::data::hierarchy::code_table).collect();
        tables.extend(aliases.iter().map(|col| extra_codes(col)));
        for t in tables {
            remote.share(conn, &render(statement("share"), &[("table", &t)]), &[], &t)?;
        }
    }
    let mut codes = list(0..n, ", ", |a| format!("l{a}.c0::{} AS g{a}", int_type(tops[a])));
    // Each code's expression and name, for a packed key.
    let mut coded: Vec<(String, String)> = (0..n).map(|a| (format!("l{a}.c0"), format!("g{a}"))).collect();
    let mut joins = String::new();
    for (a, c) in qis.iter().enumerate() {
        let table = crate::data::hierarchy::code_table(a);
        let on = same(&format!("src.{}", ident(c)), &format!("l{a}.n"), c, &table)?;
        joins.push_str(&format!(" JOIN {table} l{a} ON {on}"));
    }
    for (col, c) in extra {
        if *col == "p" && person_offset && remote.is_none() {
            let column = format!("src.{}", ident(c));
            let code = render(sql::fragment(sql::BASE_FREQUENCY_SET, "person_offset"), &[("column", &column)]);
            codes.push_str(&format!(", {code} AS p"));
            continue;
        }
        let on = same(&format!("src.{}", ident(c)), &format!("k{col}.n"), c, &extra_codes(col))?;
        joins.push_str(&format!(" JOIN {} k{col} ON {on}", extra_codes(col)));
        codes.push_str(&format!(", k{col}.code AS {col}"));
        coded.push((format!("k{col}.code"), col.to_string()));
    }
    let count = int_type(rows.saturating_add(1).min(i64::MAX as u64) as i64);
    let frag = |name| sql::fragment(sql::BASE_FREQUENCY_SET, name);
    let local = remote.is_none() && input.weight.is_none();
    // Coded rows for kanon to group: the memory backend's when it is certain,
    // else a sorted base's (evaluator/sorted.rs) when the codes pack into one key.
    let in_memory =
        local && rows <= memory_rows && packed_bits(&key_widths(conn, n, &aliases)?, ROW_KEY_BITS).is_some();
    let top_counts: Vec<u64> = tops.iter().map(|&t| t.max(1) as u64).collect();
    let sorted = local && rows > memory_rows && extra.is_empty() && packed_bits(&top_counts, SORTED_KEY_BITS).is_some();
    let form = if in_memory {
        BaseForm::Rows
    } else if sorted {
        BaseForm::Sorted { divisors }
    } else {
        BaseForm::Grouped
    };
    if form == BaseForm::Grouped {
        // The codes grouped as they are (no packed key).
        let grouped = render(
            frag("grouped"),
            &[
                ("codes", &codes),
                ("joins", &joins),
                ("relation", &input.relation),
                ("count", &input.count("src.")),
                ("type", count),
                ("group_by", &list(1..=n + extra.len(), ", ", |i| i.to_string())),
            ],
        );
        if let Some(remote) = remote {
            // The codes grouped as one packed key, where they fit one: a leaf
            // code is under its top divisor, an extra code at most its largest.
            let widths = key_widths(conn, n, &aliases)?;
            let radices: Vec<u64> =
                (0..coded.len()).map(|i| if i < n { tops[i].max(1) as u64 } else { widths[i] }).collect();
            let exprs: Vec<String> = coded.iter().map(|(e, _)| e.clone()).collect();
            let select = match sql::packed_key(&exprs, &radices, "q.pk", remote.spelling("int_div")) {
                Some(key) => render(
                    frag("grouped_packed"),
                    &[
                        (
                            "codes",
                            &list(key.unpacked.iter().zip(&coded).enumerate(), ", ", |(i, (e, (_, name)))| {
                                // (`::`, as PostgreSQL's dialect respells TINYINT.)
                                let t = if i < n { int_type(tops[i]) } else { "INTEGER" };
                                format!("({e})::{t} AS {name}")
                            }),
                        ),
                        ("key", &key.key),
                        ("joins", &joins),
                        ("relation", &input.relation),
                        ("count", &input.count("src.")),
                        ("type", count),
                    ],
                ),
                None => grouped,
            };
            // The columns' values could make as many combinations as there are rows.
            let space = widths.iter().fold(1u64, |p, &w| p.saturating_mul(w));
            let work = WorkUse { near_unique: space >= rows, ..WorkUse::default() };
            return base_on_engine(conn, remote.as_ref(), &select, work, side, memory_rows);
        }
        materialize(conn, remote, "kanon_f0", &grouped).context("grouping the source")?;
    } else {
        conn.execute_batch(&render(
            frag("rows"),
            &[("codes", &codes), ("joins", &joins), ("relation", &input.relation)],
        ))?;
        let mut columns = list(0..n, ", ", |a| format!("g{a}"));
        columns.push_str(&list(&aliases, "", |col| format!(", {col}")));
        conn.execute_batch(&render(frag("rows_grouped"), &[("codes", &columns), ("type", count)]))?;
    }
    conn.execute_batch(sql::BASE_F0_NODE)?;
    Ok(form)
}

/// The base frequency set's work table on a remote engine.
pub(crate) const BASE_THERE: &str = "kanon_f0";

/// The base frequency set grouped on the remote engine as its work table
/// `kanon_f0`; brought back (into the local `kanon_f0`) when it has at most
/// `memory_rows` rows or the job asks for the memory side, left there
/// otherwise (the engine backend, evaluator/engine.rs). Only its row count
/// comes back to decide.
fn base_on_engine(
    conn: &Connection,
    remote: &dyn crate::engine::remote::RemoteEngine,
    select: &str,
    work: WorkUse,
    side: EvaluatorSide,
    memory_rows: u64,
) -> Result<BaseForm> {
    let base = BASE_THERE;
    let rows = match remote.create_work(base, select, work).context("grouping the source")? {
        Some(rows) => rows,
        None => {
            remote.fetch(conn, sql::fragment(sql::ENGINE_EVALUATOR, "base_rows"), "kanon_engine_result")?;
            conn.query_row(statement("engine_rows"), [], |r| r.get::<_, i64>(0))? as u64
        }
    };
    let there = match side {
        EvaluatorSide::Engine => true,
        EvaluatorSide::Memory => false,
        EvaluatorSide::Auto => rows > memory_rows,
    };
    crate::trace(|| format!("base frequency set: {rows} rows, left on the engine: {there}"));
    if there {
        return Ok(BaseForm::OnEngine { rows });
    }
    remote.fetch(conn, &render(statement("share"), &[("table", base)]), "kanon_f0")?;
    remote.drop_work(base)?;
    conn.execute_batch(sql::BASE_F0_NODE)?;
    Ok(BaseForm::Grouped)
}

/// The values each field of a coded row's packed key takes: per QI its
/// distinct leaf codes, then per extra column (`aliases`) its codes 1..=count
/// and 0.
pub(crate) fn key_widths(conn: &Connection, n: usize, aliases: &[&str]) -> Result<Vec<u64>> {
    let mut widths = leaf_counts(conn, n)?;
    for col in aliases {
        let q = render(statement("extra_count"), &[("codes", &extra_codes(col))]);
        widths.push(conn.query_row(&q, [], |r| r.get::<_, i64>(0))? as u64 + 1);
    }
    Ok(widths)
}

/// Per QI, the distinct leaf codes of the data (its code table's).
pub(crate) fn leaf_counts(conn: &Connection, n: usize) -> Result<Vec<u64>> {
    (0..n)
        .map(|a| {
            let q = render(statement("leaf_count"), &[("codes", &crate::data::hierarchy::code_table(a))]);
            Ok(conn.query_row(&q, [], |r| r.get::<_, i64>(0))? as u64)
        })
        .collect()
}

/// The widest key the in-memory evaluator packs a coded row into
/// (`evaluator/memory.rs` `group_rows`: 64 bits, or 128 when the fields need
/// more); a row wider than that is grouped by the engine.
pub(crate) const ROW_KEY_BITS: u32 = u128::BITS;

/// The widest key the sorted base (`evaluator/sorted.rs`) packs a coded row
/// into: at most 20 bits of bucket and 32 stored.
pub(crate) const SORTED_KEY_BITS: u32 = 52;

/// Per QI, the bits of a leaf index below `counts[a]`, when all of them fit
/// in one key of `width` bits (the in-memory evaluator groups coded rows by
/// such keys, of 64 or 128 bits).
pub(crate) fn packed_bits(counts: &[u64], width: u32) -> Option<Vec<u32>> {
    let bits: Vec<u32> = counts.iter().map(|&c| u64::BITS - c.saturating_sub(1).leading_zeros()).collect();
    (bits.iter().sum::<u32>() <= width).then_some(bits)
}

/// The base frequency set's physical form, decided once by [`encode`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BaseForm {
    /// The source's coded rows (`kanon_f0_rows`, a record each) for the
    /// memory backend to group; `kanon_f0` a view grouping them.
    Rows,
    /// Coded rows, as [`BaseForm::Rows`], too many for the memory backend
    /// but packing into the sorted base's key (evaluator/sorted.rs): per QI
    /// the hierarchy's divisors, which lay the key out.
    Sorted { divisors: Vec<Vec<i64>> },
    /// `kanon_f0` a table the engine grouped.
    Grouped,
    /// No base frequency set: a pass over the records themselves.
    Absent,
    /// `kanon_f0` a work table of the remote engine, left there (`rows` rows):
    /// too large to bring back, or the job asked (`[engine] evaluator`).
    OnEngine { rows: u64 },
}

impl BaseForm {
    /// Are the source's coded rows there (`kanon_f0_rows`) for the in-memory
    /// evaluator to group?
    pub(crate) fn has_rows(&self) -> bool {
        matches!(self, BaseForm::Rows | BaseForm::Sorted { .. })
    }
}

/// The base frequency set through a session: the encoder's [`BaseForm`],
/// kept up to date as readers group it (`kanon_f0` made a table once, or the
/// coded rows replaced by the sorted base's classes).
#[derive(Debug)]
pub struct Base {
    form: RefCell<BaseForm>,
    /// Is `kanon_f0` a table (the coded rows grouped once by a reader)?
    table: Cell<bool>,
}

impl Base {
    pub(crate) fn new(form: BaseForm) -> Base {
        let table = matches!(form, BaseForm::Grouped);
        Base { form: RefCell::new(form), table: Cell::new(table) }
    }

    /// The form as it is now.
    pub fn form(&self) -> BaseForm {
        self.form.borrow().clone()
    }

    /// Are the source's coded rows there (`kanon_f0_rows`)?
    pub fn has_rows(&self) -> bool {
        self.form.borrow().has_rows()
    }

    /// Is `kanon_f0` a view over the coded rows (not yet grouped into a table)?
    fn is_view(&self) -> bool {
        self.has_rows() && !self.table.get()
    }

    /// `kanon_f0` as a table, for a reader that reads it more than once: a view
    /// over the coded rows is grouped once, here.
    pub(crate) fn as_table(&self, conn: &Connection) -> Result<()> {
        if self.is_view() {
            conn.execute_batch(sql::fragment(sql::BASE_FORM, "as_table")).context("grouping the source")?;
            self.table.set(true);
        }
        Ok(())
    }

    /// The classes the sorted base wrote to `kanon_f0_table` become `kanon_f0`
    /// in place of the view over the coded rows, and that view goes.
    pub(crate) fn take_classes(&self, conn: &Connection) -> Result<()> {
        conn.execute_batch(sql::fragment(sql::BASE_FORM, "take_classes"))?;
        *self.form.borrow_mut() = BaseForm::Grouped;
        self.table.set(true);
        Ok(())
    }

    /// Drop the base frequency set once nothing reads it any more: at scale it is
    /// the largest table, and the release's sort wants the memory.
    pub(crate) fn drop_tables(&self, conn: &Connection) -> Result<()> {
        let name = if self.is_view() { "drop_view" } else { "drop_table" };
        conn.execute_batch(sql::fragment(sql::BASE_FORM, name))?;
        Ok(())
    }
}

/// The code tables from the marginals and the hierarchies: per QI value →
/// leaf code (`kanon_code_{a}`), and the value → code maps of the extra
/// columns (`aliases`: `s`, `t`, `y`, `p`), codes 1.. in the column type's
/// order. Whether the person codes (`p`) are offsets: an integer column's
/// values less the least, plus 1, which a row's code is computed as.
pub(crate) fn code_tables(conn: &Connection, n: usize, aliases: &[&str]) -> Result<bool> {
    for a in 0..n {
        conn.execute_batch(&render(
            sql::fragment(sql::BASE_CODES, "qi"),
            &[
                ("target", &crate::data::hierarchy::code_table(a)),
                ("marginal", &crate::data::hierarchy::marginal_table(a)),
                ("dim", &dim_table(a)),
                ("col", &format!("v{a}")),
            ],
        ))?;
    }
    let mut offset = false;
    for col in aliases {
        // Only the person column has codes enough for a join to cost.
        let fits = *col == "p" && {
            let q = render(sql::fragment(sql::BASE_CODES, "offset_fits"), &[("col", col)]);
            conn.query_row(&q, [], |r| r.get::<_, bool>(0))?
        };
        offset |= fits;
        // NULL is a value like any other: it gets a code of its own.
        conn.execute_batch(&render(
            sql::fragment(sql::BASE_CODES, if fits { "offset" } else { "extra" }),
            &[("target", &extra_codes(col)), ("col", col)],
        ))?;
    }
    Ok(offset)
}

/// The join giving source rows (aliased `src`) the code `k{col}.code` of
/// their `column` value, in DuckDB: `col` is `s` (sensitive) or `y` (label).
pub(crate) fn extra_join(col: &str, column: &str) -> String {
    format!("JOIN {} k{col} ON src.{} IS NOT DISTINCT FROM k{col}.n", extra_codes(col), ident(column))
}

/// Rows of the base frequency set `kanon_f0`.
pub(crate) fn base_rows(conn: &Connection) -> Result<u64> {
    Ok(conn.query_row(sql::fragment(sql::BASE_FORM, "rows"), [], |r| r.get::<_, i64>(0))? as u64)
}

/// Distinct QI combinations of the source: rows of `kanon_f0`, or of its
/// QI codes when it also carries sensitive or label codes.
pub fn combinations(conn: &Connection, n: usize, extras: Extras) -> Result<u64> {
    if !extras.any() {
        return base_rows(conn);
    }
    let q = render(sql::fragment(sql::BASE_FORM, "combinations"), &[("codes", &list(0..n, ", ", |a| format!("g{a}")))]);
    let rows: i64 = conn.query_row(&q, [], |r| r.get(0))?;
    Ok(rows as u64)
}

/// A child to compute: its id, the id of the parent frequency set it rolls up
/// from, and per QI the divisor from the parent's codes to the child's (None
/// for a QI the child leaves out), and its level per QI.
pub(crate) struct Kid {
    pub(crate) child: i64,
    pub(crate) parent: i64,
    pub(crate) divide: Vec<Option<i64>>,
    pub(crate) levels: Vec<Option<u8>>,
}

/// Fill `kanon_kids` (child, parent, per QI divisor and level) for a rollup;
/// the histogram query joins it for the levels.
pub(crate) fn write_kids(conn: &Connection, kids: &[Kid], n: usize) -> Result<()> {
    conn.execute_batch(&render(
        statement("kids_table"),
        &[("columns", &list(0..n, ", ", |a| format!("d{a} BIGINT, l{a} INTEGER")))],
    ))?;
    let tuple = format!("({})", vec!["?"; 2 * n + 2].join(", "));
    for chunk in kids.chunks(400) {
        let q = render(statement("kids_insert"), &[("rows", &vec![tuple.as_str(); chunk.len()].join(", "))]);
        let params: Vec<Option<i64>> = chunk
            .iter()
            .flat_map(|k| {
                let per_qi = k.divide.iter().zip(&k.levels).flat_map(|(d, l)| [*d, l.map(i64::from)]);
                [Some(k.child), Some(k.parent)].into_iter().chain(per_qi)
            })
            .collect();
        conn.execute(&q, duckdb::params_from_iter(params))?;
    }
    Ok(())
}

/// Materialize the frequency sets of `kids` (all rolled up from the base
/// frequency set, parent 0) into `target` in one pass with GROUPING SETS.
///
/// A QI at the top of its hierarchy is one value, code 0: it is left out of
/// the grouping keys. With `packed`, each kid groups by one BIGINT, its codes
/// read as a mixed-radix number (QI `a` at divisor `d` has `tops[a] / d`
/// codes), unpacked once per output row: one narrow key hashes much faster
/// than a column per QI. Kids whose codes do not fit in 63 bits, or all kids
/// when `packed` is false, group by one column per QI instead.
/// Returns false, doing nothing, when two kids group by the same codes.
pub(crate) fn rollup_sets(
    conn: &Connection,
    target: &str,
    kids: &[Kid],
    sets: &RollupShape,
    extras: Extras,
) -> Result<bool> {
    let n = sets.heights.len();
    let at_top = |k: &Kid, a: usize| k.levels[a] == Some(sets.heights[a]);
    // Per kid: its key columns, (QI, divisor from the leaf codes).
    let keys: Vec<Vec<(usize, i64)>> = kids
        .iter()
        .map(|k| {
            k.divide.iter().enumerate().filter(|&(a, _)| !at_top(k, a)).filter_map(|(a, d)| d.map(|d| (a, d))).collect()
        })
        .collect();
    // Per kid: Some(radix per key column) when it groups by one packed key.
    let packing: Vec<Option<Vec<i64>>> = keys
        .iter()
        .map(|mine| {
            let radix: Vec<i64> = mine.iter().map(|&(a, d)| (sets.tops[a] + d - 1) / d).collect();
            let fits = radix.iter().try_fold(1i64, |acc, &r| acc.checked_mul(r)).is_some();
            (sets.packed && fits && mine.len() > 1).then_some(radix)
        })
        .collect();
    let name = |(a, d): (usize, i64)| format!("x{a}_{d}");
    // Key columns: x{a}_{d} (a code) or p{child} (a kid's packed codes).
    let mut cols: Vec<String> = Vec::new();
    let mut exprs: Vec<String> = Vec::new();
    for ((k, mine), radix) in kids.iter().zip(&keys).zip(&packing) {
        match radix {
            Some(radix) => {
                // Horner: ((c_1 * r_2 + c_2) * r_3 + c_3) …
                // BIGINT from the first term on: the codes may be narrower types.
                let mut e = format!("(g{} // {})::BIGINT", mine[0].0, mine[0].1);
                for (&(a, d), r) in mine.iter().zip(radix).skip(1) {
                    e = format!("({e}) * {r} + g{a} // {d}");
                }
                cols.push(format!("p{}", k.child));
                exprs.push(format!("{e} AS p{}", k.child));
            }
            None => {
                for &c in mine {
                    if !cols.contains(&name(c)) {
                        cols.push(name(c));
                        exprs.push(format!("g{} // {} AS {}", c.0, c.1, name(c)));
                    }
                }
            }
        }
    }
    if cols.len() > 62 {
        return Ok(false);
    }
    let m = cols.len();
    let extra_cols = extras.names();
    let mut masks = std::collections::HashSet::new();
    let mut cases = Vec::new();
    let mut groupings = Vec::new();
    // Per QI: (mask, expression of its code) for every kid that has it.
    let mut per_qi: Vec<Vec<(u64, String)>> = vec![Vec::new(); n];
    for ((k, mine), radix) in kids.iter().zip(&keys).zip(&packing) {
        let own: Vec<String> = match radix {
            Some(_) => vec![format!("p{}", k.child)],
            None => mine.iter().map(|&c| name(c)).collect(),
        };
        // GROUPING(): bit set for a column not grouped, the first column the highest bit.
        let mask: u64 = (0..m).filter(|&j| !own.contains(&cols[j])).map(|j| 1u64 << (m - 1 - j)).sum();
        if !masks.insert(mask) {
            return Ok(false);
        }
        cases.push(format!("WHEN {mask} THEN {}", k.child));
        for a in 0..n {
            let code = if at_top(k, a) {
                "0".to_string()
            } else if let Some(j) = mine.iter().position(|c| c.0 == a) {
                match radix {
                    // The place value of column j is the product of the radices after it.
                    Some(radix) => {
                        let place: i64 = radix[j + 1..].iter().product();
                        format!("p{} // {place} % {}", k.child, radix[j])
                    }
                    None => name(mine[j]),
                }
            } else {
                continue;
            };
            per_qi[a].push((mask, code));
        }
        let set: Vec<String> = own.into_iter().chain(extra_cols.iter().map(|c| c.to_string())).collect();
        groupings.push(format!("({})", set.join(", ")));
    }
    write_kids(conn, kids, n)?;
    // With no key column at all (one kid, every QI at the top) there is no GROUPING() to read.
    let grouping = format!("GROUPING({})", cols.join(", "));
    let node = if m == 0 { kids[0].child.to_string() } else { format!("CASE {grouping} {} END", cases.join(" ")) };
    let groups = list(0..n, ", ", |a| {
        let codes = &per_qi[a];
        if codes.is_empty() {
            format!("NULL::BIGINT AS g{a}")
        } else if codes.len() == kids.len() && codes.iter().all(|(_, c)| *c == codes[0].1) {
            format!("({})::BIGINT AS g{a}", codes[0].1)
        } else {
            let whens = list(codes, " ", |(mask, code)| format!("WHEN {mask} THEN {code}"));
            format!("(CASE {grouping} {whens} END)::BIGINT AS g{a}")
        }
    });
    let q = render(
        sql::ROLLUP_SETS,
        &[
            ("target", target),
            ("node", &node),
            ("groups", &groups),
            ("extras", &list(extra_cols.iter(), "", |c| format!(", {c}"))),
            ("columns", &list(exprs.iter(), "", |e| format!("{e}, "))),
            ("sets", &groupings.join(", ")),
        ],
    );
    conn.execute_batch(&q)?;
    Ok(true)
}

/// What [`rollup_sets`] needs to know of the hierarchies, and whether to pack.
pub(crate) struct RollupShape {
    /// Per QI: its height (the top level, one value).
    pub(crate) heights: Vec<u8>,
    /// Per QI: the divisor of its top level, which bounds every leaf code.
    pub(crate) tops: Vec<i64>,
    pub(crate) packed: bool,
}

/// Materialize the frequency sets of `kids` into `target` (column `node` = child
/// id), rolled up from `source` (column `node` = parent id). The kids stay in
/// `kanon_kids` until the next rollup.
pub(crate) fn rollup(
    conn: &Connection,
    target: &str,
    source: &str,
    kids: &[Kid],
    n: usize,
    extras: Extras,
) -> Result<()> {
    write_kids(conn, kids, n)?;
    // A QI no kid keeps is NULL for every kid; one all kids keep at the parent's level needs no division.
    let groups = list(0..n, ", ", |a| {
        let d: Vec<Option<i64>> = kids.iter().map(|k| k.divide[a]).collect();
        if d.iter().all(|x| x.is_none()) {
            format!("NULL::BIGINT AS g{a}")
        } else if d.iter().all(|x| *x == Some(1)) {
            format!("p.g{a}")
        } else {
            format!("p.g{a} // k.d{a} AS g{a}")
        }
    });
    let q = render(
        sql::ROLLUP,
        &[("target", target), ("groups", &groups), ("extras", &extras.columns("p")), ("source", source)],
    );
    conn.execute_batch(&q)?;
    Ok(())
}

/// Run `select` where the source lives, its result into the local temp table
/// `target`: in the embedded DuckDB, or on Spark with the rows brought back.
pub(crate) fn materialize(conn: &Connection, remote: Option<&Remote>, target: &str, select: &str) -> Result<()> {
    match remote {
        None => {
            conn.execute_batch(&render(statement("materialize"), &[("target", &ident(target)), ("select", select)]))?
        }
        Some(s) => _ = s.fetch(conn, select, target)?,
    }
    Ok(())
}
