//! A recoding's value maps, read into kanon: per QI each source value (keyed
//! as the release statement hands it over) → its group and the group's label,
//! and the dropped classes as group tuples. Small: one entry per QI value
//! and per dropped class, never one per source row.

use crate::database::SourceColumn;
use crate::hierarchy::{code_table, dim_table, node_table};
use crate::job::Job;
use crate::sql::{self, ident, render};
use anyhow::{anyhow, Result};
use duckdb::types::ValueRef;
use duckdb::Connection;
use rustc_hash::{FxHashMap, FxHashSet};

/// One QI's groups: each source value → the index of its group, and each
/// group's label. Values are keyed as [`key_expr`] turns them into BIGINT
/// (integer columns) or text (any other type); `null` is NULL's group.
#[derive(Debug, Default, Clone)]
pub(super) struct Groups {
    pub(super) by_int: FxHashMap<i64, u32>,
    /// Text of up to 15 bytes, packed into the key itself ([`short_key`]): a
    /// lookup then reads no key from the heap.
    by_short: FxHashMap<u128, u32>,
    by_text: FxHashMap<Box<[u8]>, u32>,
    pub(super) null: Option<u32>,
    /// None for a NULL leaf's own group at level 0.
    pub(super) labels: Vec<Option<String>>,
}

impl Groups {
    pub(super) fn text(&self, bytes: &[u8]) -> Option<u32> {
        match short_key(bytes) {
            Some(k) => self.by_short.get(&k).copied(),
            None => self.by_text.get(bytes).copied(),
        }
    }

    fn insert_text(&mut self, bytes: &[u8], group: u32) {
        match short_key(bytes) {
            Some(k) => self.by_short.insert(k, group),
            None => self.by_text.insert(bytes.into(), group),
        };
    }
}

/// Text of at most 15 bytes as one integer: the bytes, then the length in the top byte.
fn short_key(bytes: &[u8]) -> Option<u128> {
    (bytes.len() < 16).then(|| {
        let mut k = [0u8; 16];
        k[..bytes.len()].copy_from_slice(bytes);
        k[15] = bytes.len() as u8;
        u128::from_le_bytes(k)
    })
}

/// How the release hands a QI's values of DuckDB type `type_name` to kanon: as
/// BIGINT for integer types and dates (hashing an integer is cheaper than formatting it),
/// as they are for VARCHAR, else cast to text. The value maps use the same
/// expression, so both sides agree on every value.
pub(super) fn key_expr(type_name: &str, x: &str) -> String {
    match type_name {
        "TINYINT" | "SMALLINT" | "INTEGER" | "BIGINT" | "UTINYINT" | "USMALLINT" | "UINTEGER" => {
            format!("CAST({x} AS BIGINT)")
        }
        // Days since 1970 (BIGINT); ±infinity are the int32 extremes, which no finite date reaches.
        "DATE" => format!("({x} - DATE '1970-01-01')"),
        "VARCHAR" => x.to_string(),
        _ => format!("CAST({x} AS VARCHAR)"),
    }
}

/// What the release writes: per QI the groups and their labels, and the
/// classes (one group index per QI) whose rows are dropped.
#[derive(Debug, Default)]
pub(super) struct GroupMaps {
    pub(super) groups: Vec<Groups>,
    pub(super) dropped: FxHashSet<Box<[u32]>>,
}

/// The maps of a full-domain node: per QI, value → group and label at the
/// node's level; `dropped` the classes (codes at the node's levels) suppressed.
pub(super) fn levels(
    conn: &Connection,
    job: &Job,
    columns: &[SourceColumn],
    levels: &[u8],
    dropped: &[Box<[i64]>],
) -> Result<GroupMaps> {
    let n = levels.len();
    let types = qi_types(job, columns);
    let mut rec = GroupMaps::default();
    // Per QI: the node-level code → group index.
    let mut index: Vec<FxHashMap<i64, u32>> = vec![FxHashMap::default(); n];
    for (a, &l) in levels.iter().enumerate() {
        let q = render(
            sql::fragment(sql::RELEASE_MAP, "value_map"),
            &[
                ("n", &key_expr(types[a], "k.n")),
                ("code", &format!("c{l}")),
                ("codes", &code_table(a)),
                ("dim", &dim_table(a)),
                ("nodes", &node_table(a)),
                ("level", &l.to_string()),
            ],
        );
        let mut g = Groups::default();
        let mut stmt = conn.prepare(&q)?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let code: i64 = r.get(1)?;
            let next = g.labels.len() as u32;
            let group = *index[a].entry(code).or_insert_with(|| {
                g.labels.push(None);
                next
            });
            g.labels[group as usize] = r.get(2)?;
            match r.get_ref(0)? {
                ValueRef::Null => g.null = Some(group),
                ValueRef::BigInt(v) => _ = g.by_int.insert(v, group),
                ValueRef::Text(v) => g.insert_text(v, group),
                v => return Err(anyhow!("value map of QI {a}: unexpected {:?}", v.data_type())),
            }
        }
        rec.groups.push(g);
    }
    for codes in dropped {
        let mut class = Vec::with_capacity(n);
        for (a, (index, &code)) in index.iter().zip(codes.iter()).enumerate() {
            class
                .push(*index.get(&code).ok_or_else(|| anyhow!("suppressed class code {code} of QI {a} has no group"))?);
        }
        rec.dropped.insert(class.into_boxed_slice());
    }
    Ok(rec)
}

/// The maps of one partition per QI (the scheme search): per QI,
/// `blocks[a][i]` is the block of leaf index `i` (the rank of the leaf code in
/// `leaf_codes[a]`) and `labels[a]` the blocks' labels; `dropped` the classes
/// (block ids per QI) whose rows are suppressed. Each QI's leaf → block map is
/// written as table `kanon_block_{a}` and read back keyed as the release keys
/// values, so the write is the same one pass as for a full-domain node.
pub(super) fn partitions(
    conn: &Connection,
    job: &Job,
    columns: &[SourceColumn],
    leaf_codes: &[Vec<i64>],
    blocks: &[Vec<u32>],
    labels: &[Vec<Option<String>>],
    dropped: &[Vec<u32>],
) -> Result<GroupMaps> {
    let types = qi_types(job, columns);
    let mut rec = GroupMaps::default();
    for a in 0..blocks.len() {
        let table = format!("kanon_block_{a}");
        conn.execute_batch(&format!(
            "CREATE OR REPLACE TEMP TABLE {} (c0 BIGINT, block INTEGER, label VARCHAR)",
            ident(&table)
        ))?;
        let mut app = conn.appender_to_catalog_and_db(&table, "temp", "main")?;
        for (i, &b) in blocks[a].iter().enumerate() {
            app.append_row(duckdb::params![leaf_codes[a][i], b as i32, labels[a][b as usize]])?;
        }
        app.flush()?;
        drop(app);
        let q = render(
            sql::fragment(sql::RELEASE_MAP, "block_map"),
            &[("n", &key_expr(types[a], "k.n")), ("codes", &code_table(a)), ("blocks", &ident(&table))],
        );
        let mut g = Groups { labels: labels[a].clone(), ..Groups::default() };
        let mut stmt = conn.prepare(&q)?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let group = r.get::<_, i32>(1)? as u32;
            match r.get_ref(0)? {
                ValueRef::Null => g.null = Some(group),
                ValueRef::BigInt(v) => _ = g.by_int.insert(v, group),
                ValueRef::Text(v) => g.insert_text(v, group),
                v => return Err(anyhow!("block map of QI {a}: unexpected {:?}", v.data_type())),
            }
        }
        rec.groups.push(g);
    }
    rec.dropped = dropped.iter().map(|c| c.clone().into_boxed_slice()).collect();
    Ok(rec)
}

/// The QIs' DuckDB types, in QI order.
pub(super) fn qi_types<'a>(job: &Job, columns: &'a [SourceColumn]) -> Vec<&'a str> {
    job.qi_names()
        .iter()
        .map(|q| columns.iter().find(|c| c.name == *q).map_or("VARCHAR", |c| c.type_name.as_str()))
        .collect()
}
