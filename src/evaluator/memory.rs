//! The in-memory backend: the base frequency set is read once through Arrow
//! into dense columns (grouped here from the source's coded rows when the
//! engine left them ungrouped, [`group_rows`]; else as the engine grouped it),
//! and nodes are evaluated in Rust.
//!
//! Every value of a QI at a level gets a dense index (0..distinct values of the
//! data at that level); `lift` tables turn an index at one level into the index
//! of its ancestor at a higher one. A node's class key is its QIs' indices
//! packed into one integer (mixed radix over the distinct counts), and classes
//! are counted by key in a reused array (small key spaces) or hash table.
//! A node rolls up from the smallest frequency set held that specializes it
//! (the rollup property Incognito rests on); sets are held up to a memory
//! budget, least recently used dropped first. Nodes of one batch that do not
//! depend on each other run in parallel.

use crate::data::frequency::{BaseForm, Extras};
use crate::data::hierarchy;
use crate::lattice::Node;
use crate::measure::metrics::{Bucket, Histogram};
use crate::measure::privacy::ClassModels;
use crate::sql::render;
use anyhow::{bail, Result};
use duckdb::arrow::array::{Array, AsArray};
use duckdb::arrow::datatypes::{DataType, Int16Type, Int32Type, Int64Type, Int8Type};
use duckdb::Connection;
use rayon::prelude::*;
use rustc_hash::FxHashMap;
use std::sync::Arc;

/// Key spaces up to this many slots (or twice the rows rolled up, up to
/// [`MAX_SLOTS`]) are counted in a plain array, larger ones in a hash table.
const DENSE_SLOTS: u64 = 1 << 22;
const MAX_SLOTS: u64 = 1 << 25;

/// [`MemorySets::refutes`] samples a node's classes in this many parts (a
/// power of two) and tries at most the first `REFUTE_PARTS` (a power of two).
pub(super) const SAMPLE_PARTS: u64 = 64;
const REFUTE_PARTS: u64 = 16;
/// A [`RowSample`] is drawn from a node's most spread QIs until they have at
/// least this many distinct values together at the node's levels: the
/// default `sample_spread`. Fewer would make a part's share of the classes
/// too lumpy to settle much.
pub(crate) const SAMPLE_SPREAD: u64 = 1024;
/// The parts of [`SAMPLE_PARTS`] a [`RowSample`] holds (a power of two): a
/// sixteenth of the rows, which settles nearly every near-unique node; a
/// node it leaves open is tried on its keys.
const ROW_SAMPLE_PARTS: u64 = 4;
/// Sets of fewer rows are rolled up whole rather than sampled: the default
/// `refute_from`.
pub(crate) const REFUTE_FROM: u64 = 1 << 16;

/// Rows whose class keys are built together, column by column (fits in L1).
const KEY_BLOCK: usize = 2048;
/// Rows per parallel task of the key building.
const KEY_CHUNK: usize = 64 * KEY_BLOCK;

thread_local! {
    /// Each worker's buffers, kept from node to node and batch to batch.
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::default());
}

/// `f` with this worker's buffers; fresh ones when they are in use: a worker
/// waiting inside a rollup's parallel loop may be handed another rollup of
/// the same batch.
fn with_scratch<R>(f: impl FnOnce(&mut Scratch) -> R) -> R {
    SCRATCH.with(|sc| match sc.try_borrow_mut() {
        Ok(mut sc) => f(&mut sc),
        Err(_) => f(&mut Scratch::default()),
    })
}

/// Per QI: what the data holds at every level of its hierarchy.
struct Qi {
    /// Per level: distinct values of the data there.
    distinct: Vec<u32>,
    /// `lift[lf][lt - lf][i]`: the index at level `lt` of index `i` at level `lf`.
    lift: Vec<Vec<Vec<u32>>>,
    /// Per level and index: hierarchy leaves under the value, minus one (glm).
    leaves_m1: Vec<Vec<u64>>,
    /// Per level and index: the value's code in the hierarchy tables.
    code: Vec<Vec<i64>>,
}

impl Qi {
    fn lift(&self, from: u8, to: u8) -> &[u32] {
        &self.lift[from as usize][(to - from) as usize]
    }
}

/// A frequency set: its node's classes (an index per QI of the node, at the
/// node's level; a size), and what ℓ-diversity and cm need per class. Its
/// classes need not be distinct (the base's are not when it carries extra
/// codes); a rollup merges equal ones.
pub(crate) struct Set {
    node: Node,
    codes: Vec<Vec<u32>>,
    size: Vec<u64>,
    /// (class, sensitive code) pairs with their counts.
    sensitive: Option<Pairs>,
    /// (class, t-closeness code) pairs, when t-closeness reads a column of its own.
    closeness: Option<Pairs>,
    /// (class, label code) pairs with their counts.
    labels: Option<Pairs>,
}

/// Distinct (class, code) pairs of an extra column, with their records.
pub(crate) struct Pairs {
    class: Vec<u32>,
    value: Vec<u32>,
    count: Vec<u64>,
}

impl Pairs {
    /// The pairs once classes are renumbered by `class_of` (into `classes`
    /// classes; values at most `codes`), grouped by class. The source pairs are
    /// bucketed by their new class, then each class's values merged through a
    /// per-value stamp: no pair is hashed (a hash map of (class, value) keys
    /// missed the cache on every pair of a near-unique set).
    fn roll(&self, class_of: &[u32], classes: usize, codes: u64, b: &mut PairScratch) -> Pairs {
        let pairs = self.class.len();
        // Per new class its first pair's offset in `grouped`; after the scatter, its end.
        b.ends.clear();
        b.ends.resize(classes + 1, 0);
        for &c in &self.class {
            b.ends[class_of[c as usize] as usize + 1] += 1;
        }
        for c in 0..classes {
            b.ends[c + 1] += b.ends[c];
        }
        b.grouped.clear();
        b.grouped.resize(pairs, (0, 0));
        for ((&c, &v), &k) in self.class.iter().zip(&self.value).zip(&self.count) {
            let at = &mut b.ends[class_of[c as usize] as usize];
            b.grouped[*at as usize] = (v, k);
            *at += 1;
        }
        b.stamp.clear();
        b.stamp.resize(codes as usize + 1, u32::MAX);
        b.slot.clear();
        b.slot.resize(codes as usize + 1, 0);
        let mut out = Pairs {
            class: Vec::with_capacity(pairs),
            value: Vec::with_capacity(pairs),
            count: Vec::with_capacity(pairs),
        };
        let mut begin = 0;
        for c in 0..classes {
            let end = b.ends[c] as usize;
            for &(v, k) in &b.grouped[begin..end] {
                let v = v as usize;
                if b.stamp[v] == c as u32 {
                    out.count[b.slot[v] as usize] += k;
                } else {
                    b.stamp[v] = c as u32;
                    b.slot[v] = out.class.len() as u32;
                    out.class.push(c as u32);
                    out.value.push(v as u32);
                    out.count.push(k);
                }
            }
            begin = end;
        }
        out.class.shrink_to_fit();
        out.value.shrink_to_fit();
        out.count.shrink_to_fit();
        out
    }
}

/// Buffers [`Pairs::roll`] reuses from node to node.
#[derive(Default)]
struct PairScratch {
    /// Per new class: where its pairs start in `grouped`, then where they end.
    ends: Vec<u32>,
    /// The source pairs' (value, records), grouped by new class.
    grouped: Vec<(u32, u64)>,
    /// Per value: the last class that had it (u32::MAX: none yet) and its pair there.
    stamp: Vec<u32>,
    slot: Vec<u32>,
}

impl Set {
    fn bytes(&self) -> u64 {
        let classes = self.size.len() as u64 * (4 * self.codes.len() as u64 + 8);
        let pairs = |p: &Option<Pairs>| p.as_ref().map_or(0, |p| p.class.len() as u64 * 16);
        classes + pairs(&self.sensitive) + pairs(&self.closeness) + pairs(&self.labels)
    }
}

/// A full node's classes, as the release and the report's am read them.
pub struct NodeClasses {
    /// Per class: its value's code at the node's level on each QI (the hierarchy tables' codes).
    pub(crate) codes: Vec<Box<[i64]>>,
    pub(crate) size: Vec<u64>,
    /// Per class: its distinct sensitive values; empty without a sensitive column.
    pub(crate) ldiv: Vec<u64>,
    /// Per class: Π over QIs of the hierarchy leaves under its value.
    pub(crate) leaves: Vec<f64>,
    /// Per class, with per-class models (entropy or recursive ℓ,
    /// t-closeness; else empty): its (code, records) lists of the sensitive
    /// and the t-closeness column, by code (the t list empty unless
    /// t-closeness reads a column of its own).
    pub(crate) lists: Vec<[Vec<(u32, u64)>; 2]>,
    /// Per class, with risk limits (else empty): its shape ([`Bucket::shape`]).
    pub(crate) shapes: Vec<Box<[u64]>>,
}

/// One attribute of a node being rolled up: its column in the source set,
/// the lift from the source's level to the node's, its QI and the node's level.
type Column<'s> = (&'s [u32], &'s [u32], &'s Qi, u8);

/// Buffers one worker reuses from node to node.
#[derive(Default)]
struct Scratch {
    keys: Vec<u64>,
    class_of: Vec<u32>,
    first: Vec<u32>,
    sizes: Vec<u64>,
    slots: Vec<u32>,
    map: FxHashMap<u64, u32>,
    /// A sample's classes by key, with their records ([`MemorySets::refutes`]).
    sample: FxHashMap<u64, u64>,
    pairs: PairScratch,
    ldiv: Vec<u64>,
    squares: Vec<u64>,
    majority: Vec<u64>,
    buckets: FxHashMap<(u64, u64, bool), usize>,
    /// Per class: does it meet the per-class models; its pairs grouped (CSR).
    admitted: Vec<bool>,
    starts: Vec<u32>,
    grouped: Vec<(u32, u64)>,
    starts_t: Vec<u32>,
    grouped_t: Vec<(u32, u64)>,
}

/// A sample of the base holding whole classes of every node that keeps each
/// QI of `by` at its level or below (a class has one value there): the rows
/// whose values of `by` hash into the first [`ROW_SAMPLE_PARTS`] of
/// [`SAMPLE_PARTS`] parts, by part, copied with every QI's code and their
/// sizes, so that a node is tried on it reading nothing else. One sample
/// serves the nodes of many heights.
struct RowSample {
    /// (QI, level) pairs the parts are drawn from.
    by: Vec<(usize, u8)>,
    /// Per base column, the sampled rows' codes.
    codes: Vec<Vec<u32>>,
    size: Vec<u64>,
    /// The end of parts [0, 1), [0, 2), [0, 4) … in the rows: the stages.
    ends: Vec<usize>,
}

impl RowSample {
    fn bytes(&self) -> u64 {
        (self.size.len() * (8 + 4 * self.codes.len())) as u64
    }

    /// Are `node`'s classes whole in each part: does it keep every QI of `by`
    /// at its level or below?
    fn serves(&self, node: &Node) -> bool {
        self.by.iter().all(|&(a, l)| node.attrs.iter().position(|&b| b == a).is_some_and(|p| node.levels[p] <= l))
    }
}

/// The part of a hashed value or key (the high bits of a multiplicative hash).
fn sample_part(v: u64) -> u64 {
    v.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SAMPLE_PARTS.trailing_zeros())
}

/// The QIs of `cols` that split classes (more than one value at the node's
/// level): column, lift and radix, in key order.
fn splitting<'s>(cols: &[Column<'s>]) -> Vec<(&'s [u32], &'s [u32], u64)> {
    cols.iter()
        .map(|&(col, lift, q, l)| (col, lift, q.distinct[l as usize] as u64))
        .filter(|&(_, _, radix)| radix > 1)
        .collect()
}

/// Row `row`'s class key over `qis` (column, lift, radix), mixed radix.
fn key_of(qis: &[(&[u32], &[u32], u64)], row: usize) -> u64 {
    qis.iter().fold(0u64, |key, &(col, lift, radix)| key * radix + lift[col[row] as usize] as u64)
}

/// One stage of a sample: its (class key, records) pairs counted into
/// `classes` (empty); the records in classes under `k`.
fn under_k(classes: &mut FxHashMap<u64, u64>, pairs: impl Iterator<Item = (u64, u64)>, k: u64) -> u64 {
    for (key, size) in pairs {
        *classes.entry(key).or_insert(0) += size;
    }
    classes.values().filter(|&&s| s < k).sum()
}

/// `pairs` grouped by class into `starts` (classes + 1 offsets) and `grouped`.
fn group_pairs(p: &Pairs, classes: usize, starts: &mut Vec<u32>, grouped: &mut Vec<(u32, u64)>) {
    starts.clear();
    starts.resize(classes + 1, 0);
    for &c in &p.class {
        starts[c as usize + 1] += 1;
    }
    for i in 0..classes {
        starts[i + 1] += starts[i];
    }
    grouped.clear();
    grouped.resize(p.class.len(), (0, 0));
    let mut at: Vec<u32> = starts[..classes].to_vec();
    for ((&c, &v), &k) in p.class.iter().zip(&p.value).zip(&p.count) {
        grouped[at[c as usize] as usize] = (v, k);
        at[c as usize] += 1;
    }
}

impl Scratch {
    /// Dense ids for `self.keys` (in `class_of`), first row and count of
    /// each; `space` bounds the keys.
    fn group(&mut self, space: u64) {
        let m = self.keys.len();
        self.class_of.clear();
        self.class_of.reserve(m);
        self.first.clear();
        if space <= DENSE_SLOTS.max(2 * m as u64).min(MAX_SLOTS) {
            if self.slots.len() < space as usize {
                self.slots.resize(space as usize, u32::MAX);
            }
            for (i, &k) in self.keys.iter().enumerate() {
                let slot = &mut self.slots[k as usize];
                if *slot == u32::MAX {
                    *slot = self.first.len() as u32;
                    self.first.push(i as u32);
                }
                self.class_of.push(*slot);
            }
            // Leave the slots as they were found.
            for &f in &self.first {
                self.slots[self.keys[f as usize] as usize] = u32::MAX;
            }
        } else {
            self.map.clear();
            for (i, &k) in self.keys.iter().enumerate() {
                let next = self.first.len() as u32;
                let id = *self.map.entry(k).or_insert(next);
                if id == next {
                    self.first.push(i as u32);
                }
                self.class_of.push(id);
            }
        }
    }
}

/// The in-memory frequency sets of one evaluator.
pub struct MemorySets {
    qis: Vec<Qi>,
    extras: Extras,
    /// Distinct sensitive, t-closeness and label codes (they are 1..=count).
    s_count: u64,
    t_count: u64,
    y_count: u64,
    pub(super) models: Arc<ClassModels>,
    base: Arc<Set>,
    /// Held sets with the time they were last used.
    held: Vec<(Arc<Set>, u64)>,
    held_bytes: u64,
    budget: u64,
    /// [`Self::base_sizes`], once asked for.
    source_sizes: std::sync::OnceLock<Vec<(u64, u64)>>,
    clock: u64,
    pub(super) leaf_sums_from: u64,
    /// Kept classes' buckets by shape too ([`Bucket::shape`], for risk limits).
    pub(super) shapes: bool,
    /// A full node's classes carry their shapes ([`Self::classes`]): risk limits are on.
    pub(super) class_shapes: bool,
    /// Full nodes' classes judged against the population (exact k-map, δ-presence).
    pub(super) population: Option<Arc<crate::measure::limits::Population>>,
    /// Nodes rolled up from sets of fewer rows are not tested on samples.
    pub(super) refute_from: u64,
    /// The least distinct values a [`RowSample`]'s QIs have together ([`SAMPLE_SPREAD`]).
    pub(super) sample_spread: u64,
    /// Row samples of the base, the most recently used last, within a
    /// quarter of `budget` ([`Self::row_samples_for`]).
    row_samples: Vec<Arc<RowSample>>,
    /// Nodes a [`RowSample`] proved infeasible (tests read it).
    pub(super) row_refutations: std::sync::atomic::AtomicU64,
    pool: rayon::ThreadPool,
}

/// Leaf code → leaf index (the rank among the sorted leaf codes present).
enum Lookup {
    Table(Vec<u32>),
    Sorted(Vec<i64>),
}

impl Lookup {
    fn new(sorted: &[i64]) -> Lookup {
        match sorted.last() {
            Some(&max) if max >= 0 && max < 1 << 24 && sorted[0] >= 0 => {
                let mut t = vec![u32::MAX; max as usize + 1];
                for (i, &c) in sorted.iter().enumerate() {
                    t[c as usize] = i as u32;
                }
                Lookup::Table(t)
            }
            _ => Lookup::Sorted(sorted.to_vec()),
        }
    }
}

/// One QI's leaf codes in an Arrow batch (the narrow integer types of
/// `kanon_f0`) appended to `col` as leaf indices.
fn push_indices(array: &dyn Array, lookup: &Lookup, a: usize, col: &mut Vec<u32>) -> Result<()> {
    fn go<T: Copy + Into<i64>>(values: &[T], lookup: &Lookup, a: usize, col: &mut Vec<u32>) -> Result<()> {
        let from = col.len();
        match lookup {
            // u32::MAX marks a code the table lacks: looked for once per batch, not per value.
            Lookup::Table(t) => col.extend(
                values
                    .iter()
                    .map(|&v| usize::try_from(v.into()).ok().and_then(|c| t.get(c)).copied().unwrap_or(u32::MAX)),
            ),
            Lookup::Sorted(s) => {
                col.extend(values.iter().map(|&v| s.binary_search(&v.into()).map_or(u32::MAX, |i| i as u32)))
            }
        }
        if let Some(at) = col[from..].iter().position(|&i| i == u32::MAX) {
            let c: i64 = values[at].into();
            bail!("leaf code {c} of QI {a} in the base frequency set has no code table entry");
        }
        Ok(())
    }
    match array.data_type() {
        DataType::Int8 => go(array.as_primitive::<Int8Type>().values(), lookup, a, col),
        DataType::Int16 => go(array.as_primitive::<Int16Type>().values(), lookup, a, col),
        DataType::Int32 => go(array.as_primitive::<Int32Type>().values(), lookup, a, col),
        DataType::Int64 => go(array.as_primitive::<Int64Type>().values(), lookup, a, col),
        t => bail!("unexpected column type {t} in the base frequency set"),
    }
}

/// One QI's column of an Arrow batch as i64 (DuckDB gives the narrow types of `kanon_f0`).
pub(super) fn ints(array: &dyn Array, out: &mut Vec<i64>) -> Result<()> {
    match array.data_type() {
        DataType::Int8 => out.extend(array.as_primitive::<Int8Type>().values().iter().map(|&v| v as i64)),
        DataType::Int16 => out.extend(array.as_primitive::<Int16Type>().values().iter().map(|&v| v as i64)),
        DataType::Int32 => out.extend(array.as_primitive::<Int32Type>().values().iter().map(|&v| v as i64)),
        DataType::Int64 => out.extend(array.as_primitive::<Int64Type>().values().iter().copied()),
        t => bail!("unexpected column type {t} in the base frequency set"),
    }
    Ok(())
}

/// Per QI column, extra column and size: the base frequency set `kanon_f0`
/// as the engine grouped it, QI codes as leaf indices.
type Fetched = (Vec<Vec<u32>>, Vec<Vec<u32>>, Vec<u64>);

/// `kanon_f0` read through Arrow: per QI its leaf indices, per extra column
/// (`extras`) its codes, and the counts.
fn fetch_groups(conn: &Connection, lookups: &[Lookup], extras: Extras) -> Result<Fetched> {
    let n = lookups.len();
    let mut select: Vec<String> = (0..n).map(|a| format!("g{a}")).collect();
    select.extend(extras.names().into_iter().map(String::from));
    select.push("cnt".into());
    let mut stmt = conn.prepare(&render(super::statement("read_base"), &[("columns", &select.join(", "))]))?;
    // Sized once: growing 10M-row columns by doubling copies each and touches fresh pages.
    let capacity = crate::data::frequency::base_rows(conn)? as usize;
    let mut codes: Vec<Vec<u32>> = (0..n).map(|_| Vec::with_capacity(capacity)).collect();
    let mut extra: Vec<Vec<u32>> = (0..select.len() - n - 1).map(|_| Vec::with_capacity(capacity)).collect();
    let mut size: Vec<u64> = Vec::with_capacity(capacity);
    let mut buf: Vec<i64> = Vec::new();
    for batch in stmt.query_arrow([])? {
        for (a, (col, lookup)) in codes.iter_mut().zip(lookups).enumerate() {
            push_indices(batch.column(a).as_ref(), lookup, a, col)?;
        }
        for (j, col) in extra.iter_mut().enumerate() {
            buf.clear();
            ints(batch.column(n + j).as_ref(), &mut buf)?;
            col.extend(buf.iter().map(|&v| v as u32));
        }
        buf.clear();
        ints(batch.column(select.len() - 1).as_ref(), &mut buf)?;
        size.extend(buf.iter().map(|&v| v as u64));
    }
    Ok((codes, extra, size))
}

/// A coded row's packed key: 64 bits, or 128 when its fields need more.
pub(super) trait PackedKey: Copy + Ord + Send + Sync + Default {
    /// Index `i` in the field at `shift` (none past the key's width, where
    /// only fields of one value, 0 bits, start).
    fn field(i: u32, shift: u32) -> Self;
    fn or(self, other: Self) -> Self;
    /// The `bits`-bit field at `shift`.
    fn get(self, shift: u32, bits: u32) -> u32;
    /// The key as 128 bits.
    fn wide(self) -> u128;
    /// The key's lowest `bits` bits.
    fn keep_low(self, bits: u32) -> Self;
}

macro_rules! packed_key {
    ($t:ty) => {
        impl PackedKey for $t {
            fn field(i: u32, shift: u32) -> Self {
                (i as $t).checked_shl(shift).unwrap_or(0)
            }
            fn or(self, other: Self) -> Self {
                self | other
            }
            fn get(self, shift: u32, bits: u32) -> u32 {
                let mask = <$t>::MAX.checked_shr(<$t>::BITS - bits).unwrap_or(0);
                (self.checked_shr(shift).unwrap_or(0) & mask) as u32
            }
            fn wide(self) -> u128 {
                self as u128
            }
            fn keep_low(self, bits: u32) -> Self {
                self & <$t>::MAX.checked_shr(<$t>::BITS - bits).unwrap_or(0)
            }
        }
    };
}
packed_key!(u64);
packed_key!(u128);

/// The base frequency set grouped here from the source's coded rows
/// (`kanon_f0_rows`, a record each): each row's leaf indices (and extra
/// columns' codes) packed into one key of `bits[a]`-bit fields (64 bits, or
/// 128 when they need more), the keys sorted, and each run of equal keys a
/// row of the set. The rows come out in key order, whatever the threads. Per
/// QI its leaf indices, per extra column its codes, and the counts.
fn group_rows(
    conn: &Connection,
    lookups: &[Lookup],
    extras: Extras,
    bits: &[u32],
    pool: &rayon::ThreadPool,
) -> Result<Fetched> {
    if bits.iter().sum::<u32>() <= u64::BITS {
        group_rows_as::<u64>(conn, lookups, extras, bits, pool)
    } else {
        group_rows_as::<u128>(conn, lookups, extras, bits, pool)
    }
}

fn group_rows_as<K: PackedKey>(
    conn: &Connection,
    lookups: &[Lookup],
    extras: Extras,
    bits: &[u32],
    pool: &rayon::ThreadPool,
) -> Result<Fetched> {
    let n = lookups.len();
    let shifts: Vec<u32> = bits
        .iter()
        .scan(0, |at, &b| {
            *at += b;
            Some(*at - b)
        })
        .collect();
    let mut select: Vec<String> = (0..n).map(|a| format!("g{a}")).collect();
    select.extend(extras.names().into_iter().map(String::from));
    let select = render(super::statement("read_rows"), &[("columns", &select.join(", "))]);
    let read = |keys: &mut Vec<K>| -> Result<()> {
        let mut stmt = conn.prepare(&select)?;
        let mut buf: Vec<u32> = Vec::new();
        let mut ints_buf: Vec<i64> = Vec::new();
        for batch in stmt.query_arrow([])? {
            let from = keys.len();
            keys.resize(from + batch.num_rows(), K::default());
            for (f, &shift) in shifts.iter().enumerate() {
                buf.clear();
                match lookups.get(f) {
                    Some(lookup) => push_indices(batch.column(f).as_ref(), lookup, f, &mut buf)?,
                    // An extra column's codes (1..=count, below its field's bound) as they are.
                    None => {
                        ints_buf.clear();
                        ints(batch.column(f).as_ref(), &mut ints_buf)?;
                        buf.extend(ints_buf.iter().map(|&v| v as u32));
                    }
                }
                // A field of one value has 0 bits (its index is 0), and maybe a shift of the key's width.
                for (k, &i) in keys[from..].iter_mut().zip(&buf) {
                    *k = k.or(K::field(i, shift));
                }
            }
        }
        Ok(())
    };
    // Sized once (the records, off a marginal): growing by doubling copies and touches fresh pages.
    let rows = crate::data::frequency::source_rows(conn)?;
    let mut keys: Vec<K> = Vec::with_capacity(rows as usize);
    // The keys are sorted here, so the engine need not keep the rows' order.
    super::unordered(conn, || read(&mut keys))?;
    pool.install(|| keys.par_sort_unstable());
    // Equal keys merged in place, counted.
    let mut size: Vec<u64> = Vec::new();
    let mut classes = 0;
    for i in 0..keys.len() {
        if classes > 0 && keys[i] == keys[classes - 1] {
            size[classes - 1] += 1;
        } else {
            keys[classes] = keys[i];
            classes += 1;
            size.push(1);
        }
    }
    keys.truncate(classes);
    let mut fields: Vec<Vec<u32>> = pool.install(|| {
        (0..bits.len()).into_par_iter().map(|f| keys.iter().map(|&k| k.get(shifts[f], bits[f])).collect()).collect()
    });
    let extra = fields.split_off(n);
    Ok((fields, extra, size))
}

impl MemorySets {
    /// Fetch the base frequency set and the hierarchies' level structure.
    pub fn new(
        conn: &Connection,
        base: &BaseForm,
        heights: &[u8],
        extras: Extras,
        threads: Option<usize>,
    ) -> Result<MemorySets> {
        let n = heights.len();
        let divisors = hierarchy::divisors(conn, n)?;
        let mut qis = Vec::with_capacity(n);
        // Per QI: leaf code → leaf index (sorted leaf codes, searched).
        let mut leaf_codes: Vec<Vec<i64>> = Vec::with_capacity(n);
        for (a, &h) in heights.iter().enumerate() {
            let codes = hierarchy::present_codes(conn, a)?;
            let leaves: FxHashMap<(u8, i64), u64> = hierarchy::node_leaves(conn, a)?
                .into_iter()
                .map(|(level, code, leaves)| ((level as u8, code), leaves as u64))
                .collect();
            // Codes are mixed-radix, so sorted leaf codes give sorted codes at every level.
            let mut index: Vec<Vec<u32>> = Vec::with_capacity(h as usize + 1);
            let mut leaves_m1 = Vec::with_capacity(h as usize + 1);
            let mut code_at = Vec::with_capacity(h as usize + 1);
            for l in 0..=h as usize {
                let d = divisors[a][l];
                let mut idx = Vec::with_capacity(codes.len());
                let mut lm1 = Vec::new();
                let mut at = Vec::new();
                for &c in &codes {
                    let code = c / d;
                    if at.last() != Some(&code) {
                        at.push(code);
                        lm1.push(leaves.get(&(l as u8, code)).copied().unwrap_or(1).saturating_sub(1));
                    }
                    idx.push(lm1.len() as u32 - 1);
                }
                index.push(idx);
                leaves_m1.push(lm1);
                code_at.push(at);
            }
            let distinct: Vec<u32> = leaves_m1.iter().map(|v| v.len() as u32).collect();
            let mut lift = Vec::with_capacity(h as usize + 1);
            for lf in 0..=h as usize {
                let mut per_to = Vec::with_capacity(h as usize + 1 - lf);
                for lt in lf..=h as usize {
                    let mut t = vec![0u32; distinct[lf] as usize];
                    for (from, to) in index[lf].iter().zip(&index[lt]) {
                        t[*from as usize] = *to;
                    }
                    per_to.push(t);
                }
                lift.push(per_to);
            }
            qis.push(Qi { distinct, lift, leaves_m1, code: code_at });
            leaf_codes.push(codes);
        }

        crate::trace(|| "evaluator: hierarchies read".into());
        // Leaf code → leaf index: a table when the codes are small enough, else a search.
        let lookups: Vec<Lookup> = leaf_codes.iter().map(|codes| Lookup::new(codes)).collect();
        let threads = threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |p| p.get()));
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads.max(1)).build()?;
        let widths = crate::data::frequency::key_widths(conn, n, &extras.names())?;
        let (codes, extra, size) =
            match crate::data::frequency::packed_bits(&widths, crate::data::frequency::ROW_KEY_BITS) {
                Some(bits) if base.has_rows() => group_rows(conn, &lookups, extras, &bits, &pool)?,
                _ => fetch_groups(conn, &lookups, extras)?,
            };
        crate::trace(|| "evaluator: base set fetched".into());
        let rows = size.len();
        let all: Vec<u32> = (0..rows as u32).collect();
        let mut extra = extra.into_iter();
        let mut pairs = |on: bool, what: &str| {
            on.then(|| Pairs { class: all.clone(), value: extra.next().expect(what), count: size.clone() })
        };
        let sensitive = pairs(extras.sensitive, "s column");
        let closeness = pairs(extras.closeness, "t column");
        let labels = pairs(extras.label, "y column");
        let count = |p: &Option<Pairs>| p.as_ref().map_or(0, |p| p.value.iter().copied().max().unwrap_or(0)) as u64 + 1;
        let (s_count, t_count, y_count) = (count(&sensitive), count(&closeness), count(&labels));
        let base = Arc::new(Set { node: Node::full(vec![0; n]), codes, size, sensitive, closeness, labels });
        let budget = (256u64 << 20).max(base.bytes());
        Ok(MemorySets {
            qis,
            extras,
            s_count,
            t_count,
            y_count,
            models: Arc::new(ClassModels::default()),
            base,
            held: Vec::new(),
            held_bytes: 0,
            budget,
            source_sizes: std::sync::OnceLock::new(),
            clock: 0,
            leaf_sums_from: 0,
            shapes: false,
            class_shapes: false,
            population: None,
            refute_from: REFUTE_FROM,
            sample_spread: SAMPLE_SPREAD,
            row_samples: Vec::new(),
            row_refutations: Default::default(),
            pool,
        })
    }

    /// The base frequency set as the scheme search reads it: per QI the leaf
    /// index of each row (the rank of its leaf code), and each row's count.
    /// A partition of a QI is then a leaf index → block array, as a level is
    /// (`lift` from level 0).
    pub fn base_columns(&self) -> (&[Vec<u32>], &[u64]) {
        (&self.base.codes, &self.base.size)
    }

    /// Rows of the base frequency set.
    pub(crate) fn base_rows(&self) -> u64 {
        self.base.size.len() as u64
    }

    /// The source's class sizes: (records, classes with that many), by
    /// records. The base set's rows when it carries no extra column (a row
    /// per class); else its rows grouped by their QI codes (the base set of a
    /// job with a sensitive or label column has a row per class and value),
    /// worked out once.
    pub(crate) fn base_sizes(&self) -> Vec<(u64, u64)> {
        self.source_sizes
            .get_or_init(|| {
                let mut by_size: std::collections::BTreeMap<u64, u64> = Default::default();
                if !self.extras.any() {
                    for &s in &self.base.size {
                        *by_size.entry(s).or_default() += 1;
                    }
                    return by_size.into_iter().collect();
                }
                let leaves: Vec<u64> = self.qis.iter().map(|q| q.distinct[0] as u64).collect();
                let sizes = match crate::data::frequency::packed_bits(&leaves, u64::BITS) {
                    // Rows keyed by their packed leaf indices and sorted: a run of equal keys is a class.
                    Some(bits) => {
                        let mut keyed: Vec<(u64, u64)> = self.base.size.iter().map(|&s| (0, s)).collect();
                        let mut shift = 0u32;
                        for (col, b) in self.base.codes.iter().zip(bits) {
                            for (k, &i) in keyed.iter_mut().zip(col) {
                                k.0 |= (i as u64).checked_shl(shift).unwrap_or(0);
                            }
                            shift += b;
                        }
                        self.pool.install(|| keyed.par_sort_unstable_by_key(|k| k.0));
                        keyed.chunk_by(|x, y| x.0 == y.0).map(|run| run.iter().map(|r| r.1).sum()).collect()
                    }
                    None => {
                        let node0 = Node::full(vec![0; self.qis.len()]);
                        with_scratch(|sc| self.rollup(sc, &self.base, &node0)).1.size
                    }
                };
                for s in sizes {
                    *by_size.entry(s).or_default() += 1;
                }
                by_size.into_iter().collect()
            })
            .clone()
    }

    /// Per QI and level: Σ over records of (leaves under the record's value − 1),
    /// the distinct values there, and the most values of the level below
    /// under one of them; from the base (no query).
    pub(crate) fn level_stats(&self) -> Vec<Vec<(f64, u64, u64)>> {
        self.qis
            .iter()
            .enumerate()
            .map(|(a, q)| {
                let mut per_leaf = vec![0u64; q.distinct[0] as usize];
                for (&c, &s) in self.base.codes[a].iter().zip(&self.base.size) {
                    per_leaf[c as usize] += s;
                }
                (0..q.distinct.len())
                    .map(|l| {
                        let lift = q.lift(0, l as u8);
                        let cost: u64 =
                            per_leaf.iter().enumerate().map(|(i, &s)| s * q.leaves_m1[l][lift[i] as usize]).sum();
                        let fanout = if l == 0 {
                            1
                        } else {
                            let mut children = vec![0u64; q.distinct[l] as usize];
                            for &p in q.lift(l as u8 - 1, l as u8) {
                                children[p as usize] += 1;
                            }
                            children.into_iter().max().unwrap_or(1)
                        };
                        (cost as f64, q.distinct[l] as u64, fanout)
                    })
                    .collect()
            })
            .collect()
    }

    /// The smallest held set (or the base) that `node` can roll up from.
    fn source(&mut self, node: &Node, hint: Option<&Node>) -> Arc<Set> {
        self.clock += 1;
        let hinted = hint.and_then(|h| self.held.iter().position(|(s, _)| &s.node == h));
        let best = hinted.or_else(|| {
            (self.held.iter().enumerate())
                .filter(|(_, (s, _))| node.generalizes(&s.node))
                .min_by_key(|(_, (s, _))| s.size.len())
                .map(|(i, _)| i)
        });
        match best {
            Some(i) if node.generalizes(&self.held[i].0.node) => {
                self.held[i].1 = self.clock;
                self.held[i].0.clone()
            }
            _ => self.base.clone(),
        }
    }

    /// Hold `set` for later rollups, dropping the least recently used beyond the budget.
    fn hold(&mut self, set: Set) {
        let bytes = set.bytes();
        if bytes > self.budget / 4 || self.held.iter().any(|(s, _)| s.node == set.node) {
            return;
        }
        self.clock += 1;
        self.held.push((Arc::new(set), self.clock));
        self.held_bytes += bytes;
        while self.held_bytes > self.budget {
            let oldest = (self.held.iter().enumerate()).min_by_key(|(_, (_, t))| *t).map(|(i, _)| i).expect("held");
            let (s, _) = self.held.swap_remove(oldest);
            self.held_bytes -= s.bytes();
        }
    }

    /// Histograms of `items` (node, a held node to roll up from if it still
    /// is), which do not depend on each other: in parallel; their sets are held.
    pub(crate) fn evaluate(&mut self, items: &[(Node, Option<Node>)]) -> Vec<(Node, Histogram)> {
        let jobs: Vec<(Node, Arc<Set>)> = items.iter().map(|(n, h)| (n.clone(), self.source(n, h.as_ref()))).collect();
        let this = &*self;
        let results: Vec<(Histogram, Set)> = self
            .pool
            .install(|| jobs.par_iter().map(|(node, src)| with_scratch(|sc| this.rollup(sc, src, node))).collect());
        let mut out = Vec::with_capacity(items.len());
        for ((node, _), (h, set)) in jobs.into_iter().zip(results) {
            self.hold(set);
            out.push((node, h));
        }
        out
    }

    /// Histograms of `nodes` (distinct, not cached), lower heights first so
    /// higher nodes roll up from them.
    pub(crate) fn histograms(&mut self, nodes: &[Node]) -> Vec<(Node, Histogram)> {
        let mut sorted: Vec<Node> = nodes.to_vec();
        sorted.sort_by_key(|n| n.height());
        let mut out = Vec::with_capacity(nodes.len());
        for wave in sorted.chunk_by(|a, b| a.height() == b.height()) {
            let items: Vec<(Node, Option<Node>)> = wave.iter().map(|n| (n.clone(), None)).collect();
            out.extend(self.evaluate(&items));
        }
        out
    }

    /// A node's histogram with kept classes told apart by their shape
    /// (not cached: the search's histograms may not have them).
    pub(crate) fn shaped_histogram(&mut self, node: &Node) -> Histogram {
        let src = self.source(node, None);
        let was = std::mem::replace(&mut self.shapes, true);
        let (h, _) = with_scratch(|sc| self.rollup(sc, &src, node));
        self.shapes = was;
        h
    }

    /// Drop the held sets of nodes `keep` rejects.
    pub(crate) fn retain(&mut self, keep: impl Fn(&Node) -> bool) {
        self.held.retain(|(s, _)| keep(&s.node));
        self.held_bytes = self.held.iter().map(|(s, _)| s.bytes()).sum();
    }

    /// A full node's classes, rolled up from the smallest held set, and its histogram.
    pub(crate) fn classes(&mut self, node: &Node) -> (NodeClasses, Histogram) {
        let src = self.source(node, None);
        let (histogram, set) = with_scratch(|sc| self.rollup(sc, &src, node));
        let count = set.size.len();
        let mut ldiv = vec![0u64; if set.sensitive.is_some() { count } else { 0 }];
        for &c in set.sensitive.as_ref().map_or(&[][..], |p| &p.class[..]) {
            ldiv[c as usize] += 1;
        }
        let qis: Vec<(&Qi, usize)> =
            node.attrs.iter().zip(&node.levels).map(|(&a, &l)| (&self.qis[a], l as usize)).collect();
        let codes = (0..count)
            .map(|c| qis.iter().zip(&set.codes).map(|(&(q, l), col)| q.code[l][col[c] as usize]).collect())
            .collect();
        let leaves = (0..count)
            .map(|c| {
                qis.iter().zip(&set.codes).map(|(&(q, l), col)| (q.leaves_m1[l][col[c] as usize] + 1) as f64).product()
            })
            .collect();
        let mut lists: Vec<[Vec<(u32, u64)>; 2]> = Vec::new();
        if !self.models.is_empty() {
            lists.resize_with(count, Default::default);
            for (j, pairs) in [&set.sensitive, &set.closeness].into_iter().enumerate() {
                if let Some(p) = pairs {
                    for ((&c, &v), &k) in p.class.iter().zip(&p.value).zip(&p.count) {
                        lists[c as usize][j].push((v, k));
                    }
                }
            }
            for [s, t] in &mut lists {
                s.sort_unstable();
                t.sort_unstable();
            }
        }
        let shapes = match self.class_shapes {
            true => (0..count)
                .map(|c| qis.iter().zip(&set.codes).map(|(&(q, l), col)| q.leaves_m1[l][col[c] as usize]).collect())
                .collect(),
            false => Vec::new(),
        };
        (NodeClasses { codes, size: set.size, ldiv, leaves, lists, shapes }, histogram)
    }

    /// Judge a full node's classes against the population (`admitted` off
    /// for those it rejects). Population classes no class reaches are not
    /// judged: as ARX with k-anonymity, they hold nothing to release.
    fn judge_population(
        &self,
        p: &crate::measure::limits::Population,
        set: &Set,
        cols: &[Column],
        admitted: &mut [bool],
    ) {
        let levels: Vec<u8> = cols.iter().map(|&(_, _, _, l)| l).collect();
        let population = p.classes_at(&levels);
        // Per QI: the data's values at the level (by index) to the population's.
        let index: Vec<Vec<Option<u32>>> =
            cols.iter().enumerate().map(|(a, &(_, _, q, l))| population.indexes(a, &q.code[l as usize])).collect();
        for (c, ok) in admitted.iter_mut().enumerate() {
            let of = population.of_indexes(index.iter().zip(&set.codes).map(|(index, codes)| index[codes[c] as usize]));
            *ok = *ok && p.admits(set.size[c], of);
        }
    }

    /// Per attribute of `node`: its column in `src`, the lift to the node's
    /// level, the QI and the level.
    fn columns<'s>(&'s self, src: &'s Set, node: &Node) -> Vec<Column<'s>> {
        node.attrs
            .iter()
            .zip(&node.levels)
            .map(|(&a, &l)| {
                let p = src.node.attrs.iter().position(|&b| b == a).expect("a rollup source covers the node");
                let q = &self.qis[a];
                (src.codes[p].as_slice(), q.lift(src.node.levels[p], l), q, l)
            })
            .collect()
    }

    /// Each row's class key at the node of `cols` in `sc.keys` (equal keys,
    /// the same class); returns a bound on the keys.
    fn keys(sc: &mut Scratch, cols: &[Column], m: usize) -> u64 {
        // The QIs that split classes, with their radices.
        let split = splitting(&cols);
        let mut space: u64 = 1;
        if split.iter().try_fold(1u64, |s, &(_, _, r)| s.checked_mul(r)).is_some() {
            // Every key is written below, so the buffer is not cleared first.
            sc.keys.resize(m, 0);
            sc.keys.truncate(m);
            // One block of keys at a time through every column, so the keys
            // stay in cache instead of streaming through memory once per QI;
            // large sets in parallel chunks.
            let keys_of = |start: usize, block: &mut [u64]| {
                block.fill(0);
                for &(col, lift, radix) in &split {
                    for (k, &c) in block.iter_mut().zip(&col[start..]) {
                        *k = *k * radix + lift[c as usize] as u64;
                    }
                }
            };
            sc.keys.par_chunks_mut(KEY_CHUNK).enumerate().for_each(|(i, chunk)| {
                for (j, block) in chunk.chunks_mut(KEY_BLOCK).enumerate() {
                    keys_of(i * KEY_CHUNK + j * KEY_BLOCK, block);
                }
            });
            space = split.iter().map(|&(_, _, r)| r).product();
        } else {
            sc.keys.clear();
            sc.keys.resize(m, 0);
            for &(col, lift, radix) in &split {
                if space.checked_mul(radix).is_none() {
                    // Renumber the keys so far densely (at most m of them), then go on.
                    sc.group(u64::MAX);
                    space = sc.first.len() as u64;
                    for (k, &c) in sc.keys.iter_mut().zip(&sc.class_of) {
                        *k = c as u64;
                    }
                }
                for (k, &c) in sc.keys.iter_mut().zip(col) {
                    *k = *k * radix + lift[c as usize] as u64;
                }
                space *= radix;
            }
        }
        space
    }

    /// Which of `nodes` a sample of their classes proves to have more than
    /// `budget` records in classes under `k` (then they and every
    /// specialization are infeasible, whatever the models). Each node rolls up
    /// from the smallest held set, in parallel; nodes whose set has fewer than
    /// `refute_from` rows are not tried (a full evaluation costs little there).
    pub(crate) fn refuted(&mut self, nodes: &[Node], k: u64, budget: u64) -> Vec<bool> {
        let jobs: Vec<(&Node, Arc<Set>)> = nodes.iter().map(|n| (n, self.source(n, None))).collect();
        // Nodes over the base are first tried on a row sample.
        let over_base: Vec<bool> = (jobs.iter())
            .map(|(_, src)| Arc::ptr_eq(src, &self.base) && src.size.len() as u64 >= self.refute_from)
            .collect();
        let samples = self.row_samples_for(nodes, &over_base);
        let this = &*self;
        self.pool.install(|| {
            jobs.par_iter()
                .zip(&samples)
                .map(|((node, src), sample)| {
                    // A node the row sample leaves open is tried on its keys: that sample
                    // differs, and costs less than evaluating the node whole.
                    let on_rows =
                        sample.as_ref().is_some_and(|s| with_scratch(|sc| this.refutes_on(sc, s, node, k, budget)));
                    if on_rows {
                        this.row_refutations.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    on_rows
                        || (src.size.len() as u64 >= this.refute_from
                            && with_scratch(|sc| this.refutes(sc, src, node, k, budget)))
                })
                .collect()
        })
    }

    /// Distinct values of QI `a` at level `l`: its radix in class keys.
    fn radix(&self, (a, l): (usize, u8)) -> u64 {
        self.qis[a].distinct[l as usize] as u64
    }

    /// QI `a` at level `l` over columns held like the base's (`codes`, one
    /// per base QI, at the base's levels): its column, the lift and the radix.
    fn at_level<'s>(&'s self, codes: &'s [Vec<u32>], (a, l): (usize, u8)) -> (&'s [u32], &'s [u32], u64) {
        let base = &self.base;
        let p = base.node.attrs.iter().position(|&b| b == a).expect("the base has every QI");
        (codes[p].as_slice(), self.qis[a].lift(base.node.levels[p], l), self.radix((a, l)))
    }

    /// The (QI, level) pairs a [`RowSample`] for `node` is drawn from: its
    /// QIs by distinct values at its levels, most first, until they have
    /// [`Self::sample_spread`] values together; none when all of them have
    /// fewer.
    fn sample_by(&self, node: &Node) -> Option<Vec<(usize, u8)>> {
        sample_key(node, |at| self.radix(at), self.sample_spread)
    }

    /// Per node of `nodes` that `over_base` marks, a [`RowSample`] that
    /// serves it: a held one (the most recently used first), or one drawn for
    /// it ([`Self::sample_by`]), the ones most nodes want first. Samples stay
    /// within a quarter of `budget`, those this batch does not use dropped
    /// first, the least recently used of them first; a node without one is
    /// tried on its keys alone.
    fn row_samples_for(&mut self, nodes: &[Node], over_base: &[bool]) -> Vec<Option<Arc<RowSample>>> {
        // A node whose class keys need more than 64 bits is tried on its keys alone.
        let fits = |node: &Node| {
            node.attrs
                .iter()
                .zip(&node.levels)
                .try_fold(1u64, |s, (&a, &l)| s.checked_mul(self.radix((a, l))))
                .is_some()
        };
        let over_base: Vec<bool> = nodes.iter().zip(over_base).map(|(node, &o)| o && fits(node)).collect();
        let held_for = |samples: &[Arc<RowSample>], node: &Node| samples.iter().rev().find(|s| s.serves(node)).cloned();
        let mut out: Vec<Option<Arc<RowSample>>> = (nodes.iter().zip(&over_base))
            .map(|(node, &try_it)| if try_it { held_for(&self.row_samples, node) } else { None })
            .collect();
        // What each node without a held sample would draw its own from.
        let wanted: Vec<Option<Vec<(usize, u8)>>> = (0..nodes.len())
            .map(|i| if over_base[i] && out[i].is_none() { self.sample_by(&nodes[i]) } else { None })
            .collect();
        let mut count: FxHashMap<&[(usize, u8)], usize> = FxHashMap::default();
        for by in wanted.iter().flatten() {
            *count.entry(by).or_default() += 1;
        }
        let mut order: Vec<(&[(usize, u8)], usize)> = count.into_iter().collect();
        order.sort_by(|(a, n), (b, m)| m.cmp(n).then_with(|| a.cmp(b)));
        // About what a new sample takes: its share of the rows, with every QI's code and the size.
        let rows = self.base.size.len() as u64;
        let estimate = rows * ROW_SAMPLE_PARTS / SAMPLE_PARTS * (8 + 4 * self.base.codes.len() as u64);
        for (by, _) in order {
            // Nodes it was wanted for may be served by a sample drawn for others of the batch.
            if !(0..nodes.len()).any(|i| out[i].is_none() && wanted[i].as_deref() == Some(by)) {
                continue;
            }
            // Make room: drop the least recently used samples no node of the batch uses.
            let mut held: u64 = self.row_samples.iter().map(|s| s.bytes()).sum();
            while held + estimate > self.budget / 4 {
                let used = |s: &Arc<RowSample>| out.iter().flatten().any(|u| Arc::ptr_eq(u, s));
                let Some(i) = self.row_samples.iter().position(|s| !used(s)) else { break };
                held -= self.row_samples.remove(i).bytes();
            }
            if held + estimate > self.budget / 4 {
                break;
            }
            let sample = Arc::new(self.row_sample(by.to_vec()));
            for (i, slot) in out.iter_mut().enumerate() {
                if over_base[i] && slot.is_none() && sample.serves(&nodes[i]) {
                    *slot = Some(sample.clone());
                }
            }
            self.row_samples.push(sample);
        }
        // The samples this batch uses become the most recently used.
        let (used, idle): (Vec<_>, Vec<_>) = std::mem::take(&mut self.row_samples)
            .into_iter()
            .partition(|s| out.iter().flatten().any(|u| Arc::ptr_eq(u, s)));
        self.row_samples = idle.into_iter().chain(used).collect();
        out
    }

    /// The base's [`RowSample`] drawn from the (QI, level) pairs `by`.
    fn row_sample(&self, by: Vec<(usize, u8)>) -> RowSample {
        let base = &self.base;
        let part_of: Vec<(&[u32], &[u32], u64)> = by.iter().map(|&at| self.at_level(&base.codes, at)).collect();
        let mut by_part: Vec<Vec<u32>> = vec![Vec::new(); ROW_SAMPLE_PARTS as usize];
        for row in 0..base.size.len() {
            if let Some(rows) = by_part.get_mut(sample_part(key_of(&part_of, row)) as usize) {
                rows.push(row as u32);
            }
        }
        let total = by_part.iter().map(Vec::len).sum();
        let mut codes: Vec<Vec<u32>> = vec![Vec::with_capacity(total); base.codes.len()];
        let mut size = Vec::with_capacity(total);
        let mut ends = Vec::new();
        for (part, rows) in by_part.into_iter().enumerate() {
            for (sampled, col) in codes.iter_mut().zip(&base.codes) {
                sampled.extend(rows.iter().map(|&row| col[row as usize]));
            }
            size.extend(rows.iter().map(|&row| base.size[row as usize]));
            // Stages end after parts 0, 1, 3, 7 …: [0, 1), [0, 2), [0, 4) …
            if (part + 1).is_power_of_two() {
                ends.push(size.len());
            }
        }
        RowSample { by, codes, size, ends }
    }

    /// [`Self::refutes`] on a [`RowSample`] of the base: each stage's rows
    /// keyed and counted, no other row touched.
    fn refutes_on(&self, sc: &mut Scratch, sample: &RowSample, node: &Node, k: u64, budget: u64) -> bool {
        let split: Vec<(&[u32], &[u32], u64)> = (node.attrs.iter().zip(&node.levels))
            .map(|(&a, &l)| self.at_level(&sample.codes, (a, l)))
            .filter(|&(_, _, radix)| radix > 1)
            .collect();
        let mut suppressed = 0u64;
        let mut from = 0;
        for &end in &sample.ends {
            let pairs = (from..end).map(|row| (key_of(&split, row), sample.size[row]));
            sc.sample.clear();
            suppressed += under_k(&mut sc.sample, pairs, k);
            if suppressed > budget {
                return true;
            }
            from = end;
        }
        false
    }

    /// Does a sample of `node`'s classes (rolled up from `src`) hold more than
    /// `budget` records in classes under `k`? Class keys are hashed into
    /// [`SAMPLE_PARTS`] parts; the sample is the first part, then the first
    /// two, four and so on up to [`REFUTE_PARTS`]. Each class is whole in its
    /// part, so its size there is its size. On a near-unique node the first
    /// part settles it, at the cost of building the keys and counting a
    /// sixty-fourth of them.
    fn refutes(&self, sc: &mut Scratch, src: &Set, node: &Node, k: u64, budget: u64) -> bool {
        let cols = self.columns(src, node);
        let m = src.size.len();
        Self::keys(sc, &cols, m);
        let part = sample_part;
        let mut suppressed = 0u64;
        let (mut from, mut to) = (0, 1);
        while from < REFUTE_PARTS {
            let sampled = from..to;
            sc.sample.clear();
            sc.sample.reserve(m * (to - from) as usize / SAMPLE_PARTS as usize);
            let pairs = sc.keys.iter().zip(&src.size).filter(|(&key, _)| sampled.contains(&part(key)));
            suppressed += under_k(&mut sc.sample, pairs.map(|(&key, &size)| (key, size)), k);
            if suppressed > budget {
                return true;
            }
            (from, to) = (to, 2 * to);
        }
        false
    }

    /// `node`'s frequency set rolled up from `src`, and its histogram.
    fn rollup(&self, sc: &mut Scratch, src: &Set, node: &Node) -> (Histogram, Set) {
        let m = src.size.len();
        let cols = self.columns(src, node);
        let space = Self::keys(sc, &cols, m);
        sc.group(space);
        let classes = sc.first.len();
        sc.sizes.clear();
        sc.sizes.resize(classes, 0);
        for (&c, &s) in sc.class_of.iter().zip(&src.size) {
            sc.sizes[c as usize] += s;
        }
        let codes: Vec<Vec<u32>> = cols
            .iter()
            .map(|&(col, lift, _, _)| sc.first.iter().map(|&f| lift[col[f as usize] as usize]).collect())
            .collect();
        // ℓ and sl: (class, sensitive) counts; cm: (class, label) counts.
        let sensitive = src.sensitive.as_ref().map(|p| p.roll(&sc.class_of, classes, self.s_count, &mut sc.pairs));
        let closeness = src.closeness.as_ref().map(|p| p.roll(&sc.class_of, classes, self.t_count, &mut sc.pairs));
        let labels = src.labels.as_ref().map(|p| p.roll(&sc.class_of, classes, self.y_count, &mut sc.pairs));
        let set = Set { node: node.clone(), codes, size: std::mem::take(&mut sc.sizes), sensitive, closeness, labels };
        let h = self.histogram(sc, &set, &cols);
        sc.sizes = Vec::new();
        (h, set)
    }

    /// A set's class-size histogram (what the SQL backend's histogram query gives).
    fn histogram(&self, sc: &mut Scratch, set: &Set, cols: &[Column]) -> Histogram {
        let classes = set.size.len();
        sc.ldiv.clear();
        sc.ldiv.resize(classes, 0);
        sc.squares.clear();
        sc.squares.resize(classes, 0);
        if let Some(p) = &set.sensitive {
            for (&c, &k) in p.class.iter().zip(&p.count) {
                sc.ldiv[c as usize] += 1;
                sc.squares[c as usize] += k * k;
            }
        }
        sc.majority.clear();
        sc.majority.resize(classes, 0);
        if let Some(p) = &set.labels {
            for (&c, &k) in p.class.iter().zip(&p.count) {
                let m = &mut sc.majority[c as usize];
                *m = (*m).max(k);
            }
        }
        sc.admitted.clear();
        sc.admitted.resize(classes, true);
        if !self.models.is_empty() {
            // Each class's value counts, grouped, judged by the models.
            let empty = Pairs { class: Vec::new(), value: Vec::new(), count: Vec::new() };
            let s = set.sensitive.as_ref().unwrap_or(&empty);
            group_pairs(s, classes, &mut sc.starts, &mut sc.grouped);
            let t = set.closeness.as_ref().unwrap_or(&empty);
            group_pairs(t, classes, &mut sc.starts_t, &mut sc.grouped_t);
            for c in 0..classes {
                let s = &sc.grouped[sc.starts[c] as usize..sc.starts[c + 1] as usize];
                let t = &sc.grouped_t[sc.starts_t[c] as usize..sc.starts_t[c + 1] as usize];
                sc.admitted[c] = self.models.admits(s, t);
            }
        }
        let width = cols.len();
        let mut buckets: Vec<Bucket> = Vec::new();
        if let Some(p) = self.population.as_ref().filter(|_| width == self.qis.len()) {
            self.judge_population(p, set, cols, &mut sc.admitted);
        }
        sc.buckets.clear();
        // With risk limits, kept classes are told apart by their shape too.
        // Keyed by the shape's hash (probing on a collision), so a class costs no allocation.
        let mut shaped: FxHashMap<(u64, u64, bool, u64), usize> = FxHashMap::default();
        let mut shape: Vec<u64> = Vec::with_capacity(width);
        for c in 0..classes {
            let size = set.size[c];
            let ldiv = sc.ldiv[c];
            let admitted = sc.admitted[c];
            let next = buckets.len();
            let with_shape = self.shapes && size >= self.leaf_sums_from;
            let b = if with_shape {
                shape.clear();
                shape.extend(
                    cols.iter().enumerate().map(|(j, &(_, _, q, l))| q.leaves_m1[l as usize][set.codes[j][c] as usize]),
                );
                let mut hash = shape.iter().fold(0xcbf29ce484222325u64, |h, &x| (h ^ x).wrapping_mul(0x100000001b3));
                loop {
                    match shaped.get(&(size, ldiv, admitted, hash)) {
                        Some(&b) if buckets[b].shape.as_deref() == Some(&shape[..]) => break b,
                        Some(_) => hash = hash.wrapping_add(1),
                        None => {
                            shaped.insert((size, ldiv, admitted, hash), next);
                            break next;
                        }
                    }
                }
            } else {
                *sc.buckets.entry((size, ldiv, admitted)).or_insert(next)
            };
            if b == next {
                buckets.push(Bucket {
                    size,
                    ldiv,
                    admitted,
                    classes: 0,
                    leaf_sums: vec![0; width],
                    minority: 0,
                    squares: 0,
                    rows: None,
                    shape: with_shape.then(|| shape.clone().into_boxed_slice()),
                });
            }
            let bucket = &mut buckets[b];
            bucket.classes += 1;
            if size >= self.leaf_sums_from {
                for (j, &(_, _, q, l)) in cols.iter().enumerate() {
                    bucket.leaf_sums[j] += size * q.leaves_m1[l as usize][set.codes[j][c] as usize];
                }
            }
            if self.extras.label {
                bucket.minority += size - sc.majority[c];
            }
            if self.extras.spread {
                bucket.squares += sc.squares[c];
            }
        }
        buckets.sort_by(|a, b| {
            (a.size, a.ldiv, a.admitted).cmp(&(b.size, b.ldiv, b.admitted)).then(a.shape.cmp(&b.shape))
        });
        Histogram { buckets }
    }
}

/// A node's sample key: its QIs (attribute, level) by their `values` at its
/// levels, most first (ties in attribute order), until they have `spread`
/// values together; None when all of them have fewer. A function of a class,
/// so a sample drawn by it keeps whole classes (memory rows, persons).
pub(super) fn sample_key(node: &Node, values: impl Fn((usize, u8)) -> u64, spread: u64) -> Option<Vec<(usize, u8)>> {
    let mut by: Vec<(usize, u8)> = node.attrs.iter().copied().zip(node.levels.iter().copied()).collect();
    by.retain(|&at| values(at) > 1);
    by.sort_by_key(|&at| (std::cmp::Reverse(values(at)), at));
    let mut together = 1u64;
    by.retain(|&at| {
        let take = together < spread;
        if take {
            together = together.saturating_mul(values(at));
        }
        take
    });
    (together >= spread).then_some(by)
}
