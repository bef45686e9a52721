//! A recoding's value maps, read into kanon: per QI each source value (keyed
//! as the release statement hands it over) → its group and the group's label,
//! and the dropped classes as group tuples. Small: one entry per QI value
//! and per dropped class, never one per source row.

use crate::data::hierarchy::{code_table, dim_table, node_table};
use crate::engine::embedded::SourceColumn;
use crate::engine::types::ColumnType;
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
    by_int: FxHashMap<i64, u32>,
    /// Integers in a range not much wider than their count (days, ages,
    /// years): the smallest, and each one's group by offset (u32::MAX: none).
    dense: Option<(i64, Vec<u32>)>,
    /// Text of up to 7 bytes, packed with its length into one u64 (half the
    /// table of `by_inline`, so more of it stays in cache).
    by_short: FxHashMap<u64, u32>,
    /// Text of 8 to 12 bytes, keyed as DuckDB holds it inline ([`inline_key`]):
    /// a lookup then copies no bytes and reads no key from the heap.
    by_inline: FxHashMap<u128, u32>,
    by_text: FxHashMap<Box<[u8]>, u32>,
    pub(super) null: Option<u32>,
    /// None for a NULL leaf's own group at level 0.
    pub(super) labels: Vec<Option<String>>,
    /// Every text value's label is the value itself (a text QI at its
    /// leaves): the release writes the column as it is.
    pub(super) identity: bool,
}

// The inline keys read DuckDB's string values as little-endian integers.
const _: () = assert!(cfg!(target_endian = "little"));

/// Strings up to this many bytes are stored inside DuckDB's 16-byte string value.
pub(super) const INLINE_BYTES: usize = 12;

/// Text up to this many bytes goes to `by_short`.
const SHORT_BYTES: u32 = 7;

impl Groups {
    /// The group of an integer value.
    #[inline]
    pub(super) fn int(&self, v: i64) -> Option<u32> {
        match &self.dense {
            Some((min, groups)) => {
                let g = *groups.get(usize::try_from(v.wrapping_sub(*min)).ok()?)?;
                (g != u32::MAX).then_some(g)
            }
            None => self.by_int.get(&v).copied(),
        }
    }

    fn insert_int(&mut self, v: i64, group: u32) {
        self.by_int.insert(v, group);
    }

    /// The group of text of at most [`INLINE_BYTES`], given as [`inline_key`]
    /// makes it (padding zeroed).
    #[inline]
    pub(super) fn inline(&self, key: u128) -> Option<u32> {
        let len = key as u32;
        match len <= SHORT_BYTES {
            true => self.by_short.get(&short_key(key)).copied(),
            false => self.by_inline.get(&key).copied(),
        }
    }

    /// Done inserting: integers in a dense enough range get a direct table.
    fn seal(&mut self) {
        let (Some(&min), Some(&max)) = (self.by_int.keys().min(), self.by_int.keys().max()) else { return };
        let span = max.checked_sub(min).and_then(|s| u64::try_from(s).ok()).map_or(u64::MAX, |s| s + 1);
        if span <= (4 * self.by_int.len() as u64).max(1 << 16).min(1 << 24) {
            let mut groups = vec![u32::MAX; span as usize];
            for (&v, &g) in &self.by_int {
                groups[(v - min) as usize] = g;
            }
            self.dense = Some((min, groups));
        }
    }

    /// The group of any text, by its bytes (short text through [`inline_key`]).
    pub(super) fn text(&self, bytes: &[u8]) -> Option<u32> {
        match bytes.len() <= INLINE_BYTES {
            true => self.inline(inline_key(bytes)),
            false => self.by_text.get(bytes).copied(),
        }
    }

    fn insert_text(&mut self, bytes: &[u8], group: u32) {
        if bytes.len() <= SHORT_BYTES as usize {
            self.by_short.insert(short_key(inline_key(bytes)), group);
        } else if bytes.len() <= INLINE_BYTES {
            self.by_inline.insert(inline_key(bytes), group);
        } else {
            self.by_text.insert(bytes.into(), group);
        }
    }
}

/// An [`inline_key`] of at most [`SHORT_BYTES`] as one u64: the bytes, then the length in the top byte.
fn short_key(inline: u128) -> u64 {
    ((inline >> 32) as u64) | (inline as u32 as u64) << 56
}

/// Text of at most [`INLINE_BYTES`] as one integer, laid out as DuckDB's inlined
/// `duckdb_string_t`: the length (u32, little-endian), then the bytes, zero-padded.
pub(super) fn inline_key(bytes: &[u8]) -> u128 {
    let mut k = [0u8; 16];
    k[..4].copy_from_slice(&(bytes.len() as u32).to_le_bytes());
    k[4..4 + bytes.len()].copy_from_slice(bytes);
    u128::from_le_bytes(k)
}

/// How the release hands a QI's values of DuckDB type `type_name` to kanon: as
/// BIGINT for integer types and dates (hashing an integer is cheaper than formatting it),
/// as they are for VARCHAR, else cast to text. The value maps use the same
/// expression, so both sides agree on every value.
pub(super) fn key_expr(type_name: &str, x: &str) -> String {
    match ColumnType::of(type_name) {
        t if t.fits_bigint() => format!("CAST({x} AS BIGINT)"),
        // Days since 1970 (BIGINT); ±infinity are the int32 extremes, which no finite date reaches.
        ColumnType::Date => format!("({x} - DATE '1970-01-01')"),
        ColumnType::Varchar => x.to_string(),
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

/// The dropped classes as the per-row test reads them: each class packed into
/// one integer (mixed radix over the QIs' groups) when the class space fits
/// in 64 bits, as it nearly always does; else as tuples.
pub(super) struct DroppedClasses {
    strides: Option<Vec<u64>>,
    packed: FxHashSet<u64>,
    tuples: FxHashSet<Box<[u32]>>,
}

impl DroppedClasses {
    /// `dropped` (a group per QI of `groups`), taken: the tuples are not kept
    /// beside their packed keys (at 10⁹ rows they can be millions).
    pub(super) fn new(groups: &[Groups], dropped: FxHashSet<Box<[u32]>>) -> DroppedClasses {
        let mut strides = Some(Vec::with_capacity(groups.len()));
        let mut space: u64 = 1;
        for g in groups {
            strides = strides.and_then(|mut s: Vec<u64>| {
                s.push(space);
                space = space.checked_mul(g.labels.len().max(1) as u64)?;
                Some(s)
            });
        }
        let pack = |s: &[u64], class: &[u32]| class.iter().zip(s).map(|(&g, &s)| g as u64 * s).sum();
        match strides {
            Some(s) => DroppedClasses {
                packed: dropped.iter().map(|c| pack(&s, c)).collect(),
                strides: Some(s),
                tuples: FxHashSet::default(),
            },
            None => DroppedClasses { strides: None, packed: FxHashSet::default(), tuples: dropped },
        }
    }

    /// Per row `i < kept.len()`, whether its class (group `columns[a][i]` on
    /// QI `a`) is kept; `keys` a buffer.
    pub(super) fn kept(&self, columns: &[&[u32]], kept: &mut [bool], keys: &mut Vec<u64>) {
        let Some(strides) = &self.strides else {
            let mut class = vec![0u32; columns.len()];
            for (i, k) in kept.iter_mut().enumerate() {
                for (c, col) in class.iter_mut().zip(columns) {
                    *c = col[i];
                }
                *k = !self.tuples.contains(&class[..]);
            }
            return;
        };
        keys.clear();
        keys.resize(kept.len(), 0);
        for (col, &stride) in columns.iter().zip(strides) {
            for (key, &g) in keys.iter_mut().zip(*col) {
                *key += g as u64 * stride;
            }
        }
        for (k, key) in kept.iter_mut().zip(keys.iter()) {
            *k = !self.packed.contains(key);
        }
    }
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
        let mut g = Groups { identity: ColumnType::of(types[a]) == ColumnType::Varchar, ..Groups::default() };
        let mut stmt = conn.prepare(&q)?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let code: i64 = r.get(1)?;
            let next = g.labels.len() as u32;
            let group = *index[a].entry(code).or_insert_with(|| {
                g.labels.push(None);
                next
            });
            let label: Option<String> = r.get(2)?;
            g.identity &= match r.get_ref(0)? {
                ValueRef::Text(v) => label.as_deref().map(str::as_bytes) == Some(v),
                ValueRef::Null => label.is_none(),
                _ => false,
            };
            g.labels[group as usize] = label;
            match r.get_ref(0)? {
                ValueRef::Null => g.null = Some(group),
                ValueRef::BigInt(v) => g.insert_int(v, group),
                ValueRef::Text(v) => g.insert_text(v, group),
                v => return Err(anyhow!("value map of QI {a}: unexpected {:?}", v.data_type())),
            }
        }
        g.seal();
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
        conn.execute_batch(&crate::engine::embedded::statement("block_table", &[("table", &ident(&table))]))?;
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
                ValueRef::BigInt(v) => g.insert_int(v, group),
                ValueRef::Text(v) => g.insert_text(v, group),
                v => return Err(anyhow!("block map of QI {a}: unexpected {:?}", v.data_type())),
            }
        }
        g.seal();
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
