//! The base frequency set held by kanon for the SQL backend, when the memory
//! backend cannot hold it: each coded row packed into one key (its QIs' leaf
//! codes, the QI with the widest codes in the top bits), the keys bucketed by
//! their top bits as they stream in and sorted within their bucket. A row keeps
//! only its key's low bits, 4 bytes, and is not grouped: a class is a run of
//! equal keys.
//!
//! A node rolled up from the base is counted here and appended to the SQL
//! backend's table. Rows come in the order of the lead QI's leaf codes, so the
//! classes of a node that keeps the lead QI come one lead value at a time and
//! are counted in a table the size of the node's other QIs' codes, not of its
//! classes. DuckDB's `GROUP BY` of a near-unique base spills the base and hashes
//! it into tens of millions of groups each pass (docs/benchmarks.md).

use crate::data::frequency::Kid;
use crate::sql::render;
use anyhow::Result;
use duckdb::arrow::array::{ArrayRef, AsArray, Int64Array};
use duckdb::arrow::datatypes::{DataType, Int64Type};
use duckdb::arrow::record_batch::RecordBatch;
use duckdb::Connection;
use rayon::prelude::*;
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::{mpsc, Arc};

/// The widest key a row packs into (frequency.rs decides on it when it reads the source).
const KEY_BITS: u32 = crate::data::frequency::SORTED_KEY_BITS;

/// A field (one QI's leaf codes) this wide or narrower is lifted by table.
const TABLE_BITS: u32 = 22;

/// Adjacent narrow fields are lifted together by one table of this many bits
/// (256 KB, within L2).
const SPAN_BITS: u32 = 16;

/// The most codes a node's classes within one lead value are counted in at a
/// time (64 MB of counts a thread); a node with more takes one pass over the
/// rows per window. Counted a part at a time ([`Tally`]), a wide table costs
/// little more than a narrow one: windows of 2²⁰ codes took 15 passes and
/// 20.1 s for a hub of 15.5M codes at 10⁸ rows, one window 8.5 s.
const WINDOW: u64 = 1 << 24;

/// Slots counted per part of a wide table: 256 KB of counts, within L2.
const PART_SLOTS: usize = 1 << 16;

/// A table of fewer parts (up to 1 MB, L2) is counted directly.
const MIN_PARTS: usize = 4;

/// A chunk is grouped by part when it has this many slots per part.
const PART_MIN_SLOTS: usize = 256;

/// Slots collected before they are counted (4 bytes each, twice).
const CHUNK: usize = 1 << 22;

/// How many slots ahead a count is fetched.
const AHEAD: usize = 16;

/// The most codes of a node's other QIs counted here (in windows of
/// [`WINDOW`], a pass over the rows each); beyond, the SQL backend rolls it
/// up itself.
const MAX_CODES: u64 = 1 << 26;

/// Classes sent to the table per batch: small enough that a batch's memory
/// is reused, not faulted in anew.
const BATCH: usize = 1 << 16;

/// Where each QI's leaf code sits in a packed row key.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Layout {
    /// The QI in the top bits: the one with the widest codes.
    pub(crate) lead: usize,
    /// Per QI: bits of its field (its codes are below its top divisor).
    pub(crate) bits: Vec<u32>,
    /// Per QI: its field's lowest bit.
    pub(crate) shift: Vec<u32>,
}

impl Layout {
    /// The layout for QIs whose leaf codes are below `tops`, if the key fits
    /// in [`KEY_BITS`].
    pub(crate) fn new(tops: &[i64]) -> Option<Layout> {
        let bits: Vec<u32> = tops.iter().map(|&t| u64::BITS - (t.max(1) as u64 - 1).leading_zeros()).collect();
        let total: u32 = bits.iter().sum();
        if total > KEY_BITS || tops.is_empty() {
            return None;
        }
        let lead = (0..bits.len()).fold(0, |best, a| if bits[a] > bits[best] { a } else { best });
        let mut shift = vec![0; bits.len()];
        let mut at = total;
        for a in std::iter::once(lead).chain((0..bits.len()).filter(|&a| a != lead)) {
            at -= bits[a];
            shift[a] = at;
        }
        Some(Layout { lead, bits, shift })
    }

    fn total(&self) -> u32 {
        self.bits.iter().sum()
    }

    /// The packed key of a coded row, as a SQL expression over `g0` … (BIGINT).
    pub(crate) fn key_sql(&self) -> String {
        let parts: Vec<String> = (0..self.bits.len())
            .filter(|&a| self.bits[a] > 0)
            .map(|a| format!("(g{a}::BIGINT << {})", self.shift[a]))
            .collect();
        if parts.is_empty() {
            "0::BIGINT".to_string()
        } else {
            parts.join(" | ")
        }
    }

    fn field(&self, key: u64, a: usize) -> u64 {
        (key >> self.shift[a]) & ((1u64 << self.bits[a]) - 1)
    }
}

#[derive(Default)]
struct Bucket {
    chunks: Vec<Vec<u32>>,
    len: usize,
}

/// Keys read, before they go to their buckets.
struct Stage {
    keys: Vec<u64>,
    /// The keys in bucket order.
    grouped: Vec<u64>,
    /// Per bucket: where its keys start in `grouped`, then where the next goes.
    at: Vec<usize>,
}

/// Keys staged before they are put in their buckets (8 bytes each, twice).
const STAGE: usize = 1 << 20;

impl Stage {
    fn new(buckets: usize) -> Stage {
        Stage { keys: Vec::with_capacity(STAGE + 4096), grouped: Vec::new(), at: vec![0; buckets + 1] }
    }

    /// Put the staged keys in their buckets, keeping their `low` bits. Put one
    /// by one, each key would miss the cache on its bucket's chunk; grouped
    /// by bucket first (a counting sort, whose stores do not wait), each
    /// bucket gets its keys in one run.
    fn flush(&mut self, buckets: &mut [Bucket], low: u32, chunk: usize) {
        let mask = if low == 32 { u32::MAX as u64 } else { (1u64 << low) - 1 };
        group_by(&self.keys, |k| (k >> low) as usize, buckets.len(), &mut self.at, &mut self.grouped);
        // Each bucket's run now ends where the next one's starts.
        let mut start = 0;
        for (b, bucket) in buckets.iter_mut().enumerate() {
            let end = self.at[b];
            let mut run = &self.grouped[start..end];
            start = end;
            while !run.is_empty() {
                if bucket.len % chunk == 0 {
                    bucket.chunks.push(Vec::with_capacity(chunk));
                }
                let last = bucket.chunks.last_mut().expect("a chunk was pushed");
                let take = run.len().min(chunk - last.len());
                last.extend(run[..take].iter().map(|&k| (k & mask) as u32));
                bucket.len += take;
                run = &run[take..];
            }
        }
        self.keys.clear();
    }
}

/// The sorted base: see the module's comment.
pub(crate) struct SortedBase {
    layout: Layout,
    tops: Vec<i64>,
    /// Per QI and level: leaf code // divisor = code at that level.
    divisors: Vec<Vec<i64>>,
    heights: Vec<u8>,
    /// Key bits stored per row; the rest is the bucket.
    low: u32,
    buckets: Vec<Bucket>,
    rows: u64,
    /// The base's classes by size: (size, classes).
    sizes: Vec<(u64, u64)>,
    /// Per QI and level, by code: hierarchy leaves under the value, minus one (glm).
    leaves_m1: Vec<Vec<Leaves>>,
    /// The threads that sort and count: `[engine] threads` of them.
    pool: rayon::ThreadPool,
}

/// How a base of `rows` rows with keys of `total` bits is bucketed: the key
/// bits that choose a bucket, and the rows a bucket's chunk holds.
fn bucketing(rows: u64, total: u32) -> (u32, usize) {
    // Buckets of about 64K rows each, at most 2^20 of them; a row keeps 32 bits at most.
    let wanted = u64::BITS - (rows >> 16).leading_zeros();
    let prefix = wanted.min(20).min(total).max(total.saturating_sub(32));
    let per_bucket = (rows >> prefix).max(1);
    let chunk = (per_bucket / 4).next_power_of_two().clamp(256, 16_384) as usize;
    (prefix, chunk)
}

/// The most memory a sorted base of `rows` rows takes beside DuckDB's pool
/// with `threads` threads: its keys (4 bytes a row) and the larger of what
/// the read adds (the stage; each bucket's last chunk, half full on average)
/// and what counting adds (a thread's window of counts and its two chunks of
/// slots). Checked against the job's memory_limit before the base is read.
pub(crate) fn memory_needed(layout: &Layout, rows: u64, threads: usize) -> u64 {
    let (prefix, chunk) = bucketing(rows, layout.total());
    let read = (STAGE * 16) as u64 + (1u64 << prefix) * (chunk as u64 * 2 + std::mem::size_of::<Bucket>() as u64);
    let counting = threads as u64 * (WINDOW * 4 + CHUNK as u64 * 8);
    rows * 4 + read.max(counting)
}

/// A node's classes by size, as its histogram needs them: size → (classes,
/// per QI Σ size × (leaves under the class's value − 1), 0 for a QI the node
/// leaves out).
pub(crate) type SizeSums = BTreeMap<u64, (u64, Vec<u64>)>;

/// [`SizeSums`] as a counting thread adds to them.
type Sums = FxHashMap<u64, (u64, Vec<u64>)>;

/// Where a node's code of one QI comes from in a counted class.
#[derive(Clone, Copy)]
enum Code {
    Lead,
    Top,
    /// (place value, radix) in the inner code.
    Inner(u64, u64),
}

/// How a node's classes are counted: its lead-QI value, then the rest as one
/// mixed-radix code.
struct Plan {
    /// The lead QI's divisor at the node's level, if the node keeps it below the top.
    lead_div: Option<u64>,
    /// Per other QI the node keeps below its top, most codes first: (QI,
    /// divisor, radix, place value).
    others: Vec<(usize, u64, u64, u64)>,
    /// Codes of the others together.
    space: u64,
}

/// One QI's code at a node's level times its place value, by leaf code.
enum Lift {
    Table(Vec<u32>),
    Divide(u64, u64),
}

impl Lift {
    #[inline]
    fn of(&self, leaf: u64) -> u64 {
        match self {
            Lift::Table(t) => t[leaf as usize] as u64,
            Lift::Divide(d, place) => leaf / d * place,
        }
    }
}

/// A node's lifts: its lead value's, then its inner code's as a sum over
/// spans of the key's lower bits.
struct Lifts {
    lead: Option<Lift>,
    spans: Vec<Span>,
}

/// Adjacent fields of the key below the lead, lifted by one table together
/// (or one wide field by division): the sum of their codes times their place values.
struct Span {
    shift: u32,
    mask: u64,
    lift: Lift,
}

impl Lifts {
    #[inline]
    fn inner(&self, key: u64) -> u64 {
        self.spans.iter().map(|s| s.lift.of((key >> s.shift) & s.mask)).sum()
    }
}

/// Class sizes within one lead value, by slot (inner code − window start).
struct Tally {
    counts: Vec<u32>,
    /// Slots counted since the last flush, each once.
    touched: Vec<u32>,
    /// Slots of a chunk, grouped by part.
    parted: Vec<u32>,
    /// Per part: where its slots go in `parted`.
    at: Vec<usize>,
}

impl Tally {
    fn new(width: usize) -> Tally {
        Tally { counts: vec![0; width], touched: Vec::new(), parted: Vec::new(), at: Vec::new() }
    }

    /// Count `slots`. A table wider than [`PART_SLOTS`] is counted a part at
    /// a time: its slots are first grouped by part, so that each part's
    /// counts are loaded into the cache once per chunk, not once per slot.
    fn add(&mut self, slots: &[u32]) {
        let parts = self.counts.len().div_ceil(PART_SLOTS);
        if parts < MIN_PARTS || slots.len() < parts * PART_MIN_SLOTS {
            return bump(&mut self.counts, &mut self.touched, slots);
        }
        group_by(slots, |s| s as usize / PART_SLOTS, parts, &mut self.at, &mut self.parted);
        bump(&mut self.counts, &mut self.touched, &self.parted);
    }

    /// Emit each counted class (lead code, inner code, size) and clear its count.
    fn flush(&mut self, group: u64, start: u64, emit: &mut dyn FnMut(u64, u64, u64)) {
        self.touched.sort_unstable();
        for &t in &self.touched {
            emit(group, start + t as u64, self.counts[t as usize] as u64);
            self.counts[t as usize] = 0;
        }
        self.touched.clear();
    }
}

/// `items` into `out` grouped by `part` (below `parts`), in their order
/// within a part: a counting sort. `at[p]` is left where part `p` ends.
fn group_by<T: Copy + Default>(
    items: &[T],
    part: impl Fn(T) -> usize,
    parts: usize,
    at: &mut Vec<usize>,
    out: &mut Vec<T>,
) {
    at.clear();
    at.resize(parts + 1, 0);
    for &x in items {
        at[part(x) + 1] += 1;
    }
    for p in 1..=parts {
        at[p] += at[p - 1];
    }
    out.resize(items.len(), T::default());
    for &x in items {
        let slot = &mut at[part(x)];
        out[*slot] = x;
        *slot += 1;
    }
}

/// Add one to each slot's count, noting slots counted for the first time.
/// Counts are fetched [`AHEAD`] slots early: the table is larger than the cache.
fn bump(counts: &mut [u32], touched: &mut Vec<u32>, slots: &[u32]) {
    let mut n = touched.len();
    touched.resize(n + slots.len(), 0);
    for (i, &s) in slots.iter().enumerate() {
        if let Some(&next) = slots.get(i + AHEAD) {
            prefetch(&counts[next as usize]);
        }
        let c = &mut counts[s as usize];
        // Branch-free: whether a slot is new is unpredictable.
        touched[n] = s;
        n += (*c == 0) as usize;
        *c += 1;
    }
    touched.truncate(n);
}

#[inline(always)]
fn prefetch(x: &u32) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint; it reads nothing and cannot fault.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>((x as *const u32).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}

impl Plan {
    /// The node's inner codes in windows of [`WINDOW`], a pass over the rows each.
    fn windows(&self) -> Vec<Range<u64>> {
        (0..self.space.div_ceil(WINDOW)).map(|w| w * WINDOW..((w + 1) * WINDOW).min(self.space)).collect()
    }
}

impl SortedBase {
    /// Read the coded rows (`kanon_f0_rows`) as packed keys and sort them.
    /// `rows` (the source's) sizes the buckets.
    pub(crate) fn load(
        conn: &Connection,
        layout: Layout,
        divisors: Vec<Vec<i64>>,
        heights: &[u8],
        rows: u64,
        threads: usize,
    ) -> Result<Self> {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads.max(1)).build()?;
        let total = layout.total();
        let (prefix, chunk) = bucketing(rows, total);
        let low = total - prefix;
        let mut buckets: Vec<Bucket> = (0..1usize << prefix).map(|_| Bucket::default()).collect();
        let q = crate::sql::render(
            crate::sql::fragment(crate::sql::BASE_FREQUENCY_SET, "sorted_keys"),
            &[("key", &layout.key_sql())],
        );
        // The rows are sorted here, so the engine need not keep their order.
        super::unordered(conn, || -> Result<()> {
            let mut stmt = conn.prepare(&q)?;
            // Streamed: a buffered result would hold every key a second time.
            let mut stage = Stage::new(buckets.len());
            for batch in stmt.stream_arrow([])? {
                let batch = batch?;
                let keys = batch.column(0).as_primitive::<Int64Type>();
                for &k in keys.values().iter() {
                    stage.keys.push(k as u64);
                }
                if stage.keys.len() >= STAGE {
                    stage.flush(&mut buckets, low, chunk);
                }
            }
            stage.flush(&mut buckets, low, chunk);
            Ok(())
        })?;
        crate::trace(|| format!("sorted base: keys read into {} buckets", buckets.len()));
        // Sort each bucket through one buffer per worker; count its runs.
        let sizes: FxHashMap<u64, u64> = pool.install(|| {
            buckets
                .par_iter_mut()
                .map_init(Vec::new, |buf: &mut Vec<u32>, b| {
                    if let Some(last) = b.chunks.last_mut() {
                        last.shrink_to_fit();
                    }
                    buf.clear();
                    for c in &b.chunks {
                        buf.extend_from_slice(c);
                    }
                    buf.sort_unstable();
                    let mut at = 0;
                    for c in b.chunks.iter_mut() {
                        let len = c.len();
                        c.copy_from_slice(&buf[at..at + len]);
                        at += len;
                    }
                    let mut sizes: FxHashMap<u64, u64> = FxHashMap::default();
                    for run in buf.chunk_by(|x, y| x == y) {
                        *sizes.entry(run.len() as u64).or_default() += 1;
                    }
                    sizes
                })
                .reduce(FxHashMap::default, |mut a, b| {
                    for (s, c) in b {
                        *a.entry(s).or_default() += c;
                    }
                    a
                })
        });
        let mut sizes: Vec<(u64, u64)> = sizes.into_iter().collect();
        sizes.sort_unstable();
        let rows = buckets.iter().map(|b| b.len as u64).sum();
        let tops: Vec<i64> = heights.iter().zip(&divisors).map(|(&h, d)| d[h as usize]).collect();
        let leaves_m1 = leaves_m1(conn, &divisors, heights, &tops)?;
        Ok(SortedBase { layout, tops, divisors, heights: heights.to_vec(), low, buckets, rows, sizes, leaves_m1, pool })
    }

    /// Rows (records) held.
    pub(crate) fn rows(&self) -> u64 {
        self.rows
    }

    /// The base's classes (its distinct coded rows).
    pub(crate) fn classes(&self) -> u64 {
        self.sizes.iter().map(|&(_, c)| c).sum()
    }

    /// The base's classes by size: (size, classes), by size.
    pub(crate) fn sizes(&self) -> Vec<(u64, u64)> {
        self.sizes.clone()
    }

    /// Bytes held.
    pub(crate) fn bytes(&self) -> u64 {
        let chunks: usize = self.buckets.iter().flat_map(|b| &b.chunks).map(|c| c.capacity() * 4).sum();
        (chunks + self.buckets.len() * std::mem::size_of::<Bucket>()) as u64
    }

    fn plan(&self, levels: &[Option<u8>]) -> Plan {
        let lead = self.layout.lead;
        let kept = |a: usize| levels[a].filter(|&l| l < self.heights[a]);
        let lead_div = kept(lead).map(|l| self.divisors[lead][l as usize] as u64);
        let mut others: Vec<(usize, u64, u64, u64)> = Vec::new();
        for a in (0..levels.len()).filter(|&a| a != lead) {
            if let Some(l) = kept(a) {
                let d = self.divisors[a][l as usize] as u64;
                others.push((a, d, (self.tops[a] as u64).div_ceil(d), 0));
            }
        }
        // The QI with the most codes most significant: a window of the codes
        // then passes over most rows on its lookup alone (see count).
        others.sort_by_key(|o| std::cmp::Reverse(o.2));
        // Place values: the last QI's is 1.
        let mut space: u64 = 1;
        for o in others.iter_mut().rev() {
            o.3 = space;
            space = space.saturating_mul(o.2);
        }
        Plan { lead_div, others, space }
    }

    /// Can the node with these levels (per QI; None for one it leaves out) be
    /// counted here, within [`MAX_CODES`]?
    pub(crate) fn counts(&self, levels: &[Option<u8>]) -> bool {
        self.plan(levels).space <= MAX_CODES
    }

    fn lifts(&self, plan: &Plan) -> Lifts {
        let layout = &self.layout;
        let lead = plan.lead_div.map(|d| match layout.bits[layout.lead] <= TABLE_BITS {
            true => Lift::Table((0..1u64 << layout.bits[layout.lead]).map(|leaf| (leaf / d) as u32).collect()),
            false => Lift::Divide(d, 1),
        });
        // Per field below the lead, from the lowest bits: its divisor and
        // place value, if the node keeps it.
        let mut fields: Vec<usize> =
            (0..layout.bits.len()).filter(|&a| a != layout.lead && layout.bits[a] > 0).collect();
        fields.sort_by_key(|&a| layout.shift[a]);
        let kept = |a: usize| plan.others.iter().find(|o| o.0 == a).map(|&(_, d, _, place)| (d, place));
        // Fields joined into spans of at most SPAN_BITS: one lookup a row each.
        let mut spans = Vec::new();
        let mut i = 0;
        while i < fields.len() {
            let first = fields[i];
            let mut j = i + 1;
            while j < fields.len()
                && layout.shift[fields[j]] + layout.bits[fields[j]] - layout.shift[first] <= SPAN_BITS
            {
                j += 1;
            }
            let members = &fields[i..j];
            i = j;
            if members.iter().all(|&a| kept(a).is_none()) {
                continue;
            }
            let shift = layout.shift[first];
            let bits = members.iter().map(|&a| layout.bits[a]).sum::<u32>();
            let lift = match (members, kept(first)) {
                (&[_], Some((d, place))) if bits > TABLE_BITS => Lift::Divide(d, place),
                _ => Lift::Table(
                    (0..1u64 << bits)
                        .map(|v| {
                            let of = |a: usize| {
                                let leaf = (v >> (layout.shift[a] - shift)) & ((1u64 << layout.bits[a]) - 1);
                                kept(a).map_or(0, |(d, place)| leaf / d * place)
                            };
                            members.iter().map(|&a| of(a)).sum::<u64>() as u32
                        })
                        .collect(),
                ),
            };
            spans.push(Span { shift, mask: (1u64 << bits) - 1, lift });
        }
        Lifts { lead, spans }
    }

    fn group_of(&self, plan: &Plan, key: u64) -> u64 {
        plan.lead_div.map_or(0, |d| self.layout.field(key, self.layout.lead) / d)
    }

    /// Bucket ranges, cut where the lead value at `plan` changes, of about
    /// equal rows: up to `parts` of them.
    fn splits(&self, plan: &Plan, parts: usize) -> Vec<Range<usize>> {
        let nb = self.buckets.len();
        if plan.lead_div.is_none() || parts < 2 {
            return vec![0..nb];
        }
        let first = |b: usize| -> Option<u64> {
            self.buckets[b].chunks.first().map(|c| ((b as u64) << self.low) | c[0] as u64)
        };
        let last = |b: usize| -> Option<u64> {
            self.buckets[b].chunks.last().and_then(|c| c.last()).map(|&x| ((b as u64) << self.low) | x as u64)
        };
        let mut out = Vec::new();
        let (mut start, mut seen, mut prev_last) = (0usize, 0u64, None::<u64>);
        let share = self.rows / parts as u64 + 1;
        for b in 0..nb {
            if let Some(f) = first(b) {
                let cut = prev_last.is_some_and(|p| self.group_of(plan, p) != self.group_of(plan, f));
                if cut && seen >= share * (out.len() as u64 + 1) && b > start {
                    out.push(start..b);
                    start = b;
                }
                prev_last = last(b);
            }
            seen += self.buckets[b].len as u64;
        }
        out.push(start..nb);
        out
    }

    /// Count the classes of a node in `buckets`, inner codes in `window`:
    /// each class (lead code, inner code, size) to `emit`.
    fn count(&self, lifts: &Lifts, buckets: Range<usize>, window: Range<u64>, emit: &mut dyn FnMut(u64, u64, u64)) {
        let lead = self.layout.lead;
        let mut tally = Tally::new((window.end - window.start) as usize);
        let mut slots: Vec<u32> = Vec::with_capacity(CHUNK);
        let (mut group, mut field) = (u64::MAX, u64::MAX);
        for b in buckets {
            let high = (b as u64) << self.low;
            for chunk in &self.buckets[b].chunks {
                for &x in chunk {
                    let key = high | x as u64;
                    // Rows come sorted, so the lead field changes seldom.
                    let f = self.layout.field(key, lead);
                    if f != field {
                        field = f;
                        let g = lifts.lead.as_ref().map_or(0, |l| l.of(f));
                        if g != group {
                            tally.add(&slots);
                            slots.clear();
                            if group != u64::MAX {
                                tally.flush(group, window.start, emit);
                            }
                            group = g;
                        }
                    }
                    let inner = lifts.inner(key);
                    if window.contains(&inner) {
                        slots.push((inner - window.start) as u32);
                        if slots.len() == CHUNK {
                            tally.add(&slots);
                            slots.clear();
                        }
                    }
                }
            }
        }
        tally.add(&slots);
        if group != u64::MAX {
            tally.flush(group, window.start, emit);
        }
    }

    /// Work units of a node: (bucket range, inner window), disjoint in classes.
    fn units(&self, plan: &Plan) -> Vec<(Range<usize>, Range<u64>)> {
        let windows = plan.windows();
        let parts = 2 * self.pool.current_num_threads();
        let splits = self.splits(plan, parts.div_ceil(windows.len()));
        splits.iter().flat_map(|s| windows.iter().map(move |w| (s.clone(), w.clone()))).collect()
    }

    /// Roll `kids` (all from the base; see [`Self::counts`]) up into a new
    /// temporary table `target` of the SQL backend's shape: node, g0 … (BIGINT,
    /// 0 for a QI at its top, NULL for one left out), cnt. Returns each kid's
    /// classes by size, leaf sums for those of at least `leaf_sums_from` records.
    pub(crate) fn rollup_into(
        &self,
        conn: &Connection,
        target: &str,
        kids: &[Kid],
        leaf_sums_from: u64,
    ) -> Result<Vec<SizeSums>> {
        let n = self.heights.len();
        // Each code as narrow as its QI's codes allow: at scale the tables spill otherwise.
        let cols = crate::sql::list(0..n, ", ", |a| format!("g{a} {}", int_type(self.tops[a])));
        conn.execute_batch(&render(super::statement("sorted_rollup"), &[("target", target), ("columns", &cols)]))?;
        let mut app = conn.appender_to_catalog_and_db(target, "temp", "main")?;
        let mut out = Vec::with_capacity(kids.len());
        for kid in kids {
            let plan = self.plan(&kid.levels);
            let lifts = self.lifts(&plan);
            let units = self.units(&plan);
            crate::trace(|| format!("sorted rollup of {:?}: {} codes, {} units", kid.levels, plan.space, units.len()));
            let codes = self.codes(&plan, kid);
            // Batches are built on the counting threads: appending them is the slower side.
            let (tx, rx) = mpsc::sync_channel::<RecordBatch>(4);
            let sums = std::thread::scope(|s| -> Result<SizeSums> {
                let plan = &plan;
                let (lifts, codes) = (&lifts, &codes);
                let counter = s.spawn(move || {
                    self.pool.install(|| {
                        units
                            .into_par_iter()
                            .map_with(tx, |tx, (buckets, window)| {
                                let mut sums = Sums::default();
                                let mut classes: Vec<(u64, u64, u64)> = Vec::with_capacity(BATCH);
                                self.count(lifts, buckets, window, &mut |g, x, c| {
                                    self.add_sums(&mut sums, codes, (g, x, c), leaf_sums_from);
                                    classes.push((g, x, c));
                                    if classes.len() >= BATCH {
                                        // The receiver lives until every sender is gone.
                                        let _ = tx.send(self.batch(plan, kid, &classes));
                                        classes.clear();
                                    }
                                });
                                if !classes.is_empty() {
                                    let _ = tx.send(self.batch(plan, kid, &classes));
                                }
                                sums
                            })
                            .reduce(Sums::default, merge_sums)
                    })
                });
                for batch in rx {
                    app.append_record_batch(batch)?;
                }
                Ok(counter.join().expect("the counting threads do not panic").into_iter().collect())
            })?;
            out.push(sums);
        }
        app.flush()?;
        Ok(out)
    }

    /// Per QI, where a class of `kid` has its code ([`Code`]); None for a QI it leaves out.
    fn codes(&self, plan: &Plan, kid: &Kid) -> Vec<Option<(usize, Code)>> {
        (0..self.heights.len())
            .map(|a| {
                let l = kid.levels[a]? as usize;
                Some(match () {
                    _ if l >= self.heights[a] as usize => (self.heights[a] as usize, Code::Top),
                    _ if a == self.layout.lead => (l, Code::Lead),
                    _ => {
                        let &(_, _, radix, place) =
                            plan.others.iter().find(|o| o.0 == a).expect("a kept QI is planned");
                        (l, Code::Inner(place, radix))
                    }
                })
            })
            .collect()
    }

    /// Add a class (lead code, inner code, size) to `sums`.
    fn add_sums(&self, sums: &mut Sums, codes: &[Option<(usize, Code)>], (g, x, c): (u64, u64, u64), from: u64) {
        let (classes, leaf_sums) = sums.entry(c).or_insert_with(|| (0, vec![0; codes.len()]));
        *classes += 1;
        if c < from {
            return;
        }
        for (a, code) in codes.iter().enumerate() {
            let Some((l, code)) = *code else { continue };
            let at = match code {
                Code::Lead => g,
                Code::Top => 0,
                Code::Inner(place, radix) => x / place % radix,
            };
            leaf_sums[a] += c * self.leaves_m1[a][l].of(at);
        }
    }

    /// Classes (lead code, inner code, size) as a record batch of the table's columns.
    fn batch(&self, plan: &Plan, kid: &Kid, classes: &[(u64, u64, u64)]) -> RecordBatch {
        let n = self.heights.len();
        let lead = self.layout.lead;
        let rows = classes.len();
        let mut columns: Vec<(String, ArrayRef)> =
            vec![("node".into(), Arc::new(Int64Array::from_iter_values(std::iter::repeat_n(kid.child, rows))))];
        for a in 0..n {
            let bound = self.tops[a];
            let codes = match kid.levels[a] {
                None => duckdb::arrow::array::new_null_array(&narrow_type(bound), rows),
                Some(l) if l >= self.heights[a] => narrow(bound, std::iter::repeat_n(0, rows)),
                Some(_) if a == lead => narrow(bound, classes.iter().map(|&(g, _, _)| g)),
                Some(_) => {
                    let &(_, _, radix, place) = plan.others.iter().find(|o| o.0 == a).expect("a kept QI is planned");
                    narrow(bound, classes.iter().map(|&(_, x, _)| x / place % radix))
                }
            };
            columns.push((format!("g{a}"), codes));
        }
        columns.push(("cnt".into(), Arc::new(Int64Array::from_iter_values(classes.iter().map(|&(_, _, c)| c as i64)))));
        RecordBatch::try_from_iter(columns).expect("columns of equal length")
    }

    /// Write the base's classes (leaf codes, cnt) to `kanon_f0_table`, to
    /// stand for `kanon_f0` ([`crate::data::frequency::Base::take_classes`]):
    /// for a base with few classes after all, which the memory backend reads.
    pub(crate) fn write_base(&self, conn: &Connection) -> Result<()> {
        let n = self.heights.len();
        let cols = crate::sql::list(0..n, ", ", |a| format!("g{a} BIGINT"));
        conn.execute_batch(&render(super::statement("sorted_classes"), &[("columns", &cols)]))?;
        let mut app = conn.appender_to_catalog_and_db("kanon_f0_table", "temp", "main")?;
        let mut runs: Vec<(u64, u64)> = Vec::new();
        let mut send = |runs: &mut Vec<(u64, u64)>| -> Result<()> {
            let mut columns: Vec<(String, ArrayRef)> = Vec::with_capacity(n + 1);
            for a in 0..n {
                let codes: Int64Array = runs.iter().map(|&(key, _)| self.layout.field(key, a) as i64).collect();
                columns.push((format!("g{a}"), Arc::new(codes)));
            }
            columns.push(("cnt".into(), Arc::new(runs.iter().map(|&(_, c)| c as i64).collect::<Int64Array>())));
            app.append_record_batch(RecordBatch::try_from_iter(columns)?)?;
            runs.clear();
            Ok(())
        };
        for (b, bucket) in self.buckets.iter().enumerate() {
            let high = (b as u64) << self.low;
            for &x in bucket.chunks.iter().flatten() {
                let key = high | x as u64;
                match runs.last_mut() {
                    Some((k, c)) if *k == key => *c += 1,
                    _ => {
                        if runs.len() >= BATCH {
                            send(&mut runs)?;
                        }
                        runs.push((key, 1));
                    }
                }
            }
        }
        if !runs.is_empty() {
            send(&mut runs)?;
        }
        drop(app);
        Ok(())
    }

    /// Does a sample of the node's classes (those of the first lead values,
    /// about a sixteenth of the rows) hold more than `budget` records in
    /// classes under `k`? Nodes that leave the lead QI out are not tried.
    pub(crate) fn refutes(&self, levels: &[Option<u8>], k: u64, budget: u64) -> bool {
        let plan = self.plan(levels);
        if plan.lead_div.is_none() || !self.counts(levels) {
            return false;
        }
        let lifts = self.lifts(&plan);
        let splits = self.splits(&plan, 16);
        let sample = splits[0].clone();
        let windows = plan.windows();
        let under: u64 = self.pool.install(|| {
            windows
                .into_par_iter()
                .map(|w| {
                    let mut under = 0u64;
                    self.count(&lifts, sample.clone(), w, &mut |_, _, c| {
                        if c < k {
                            under += c
                        }
                    });
                    under
                })
                .sum()
        });
        under > budget
    }
}

/// The SQL type of codes below `bound`, as the base set's (frequency.rs).
fn int_type(bound: i64) -> &'static str {
    crate::data::frequency::int_type(bound)
}

/// The Arrow type of [`int_type`].
fn narrow_type(bound: i64) -> DataType {
    match int_type(bound) {
        "TINYINT" => DataType::Int8,
        "SMALLINT" => DataType::Int16,
        "INTEGER" => DataType::Int32,
        _ => DataType::Int64,
    }
}

/// Codes below `bound` as an Arrow array of [`int_type`]'s width.
fn narrow(bound: i64, codes: impl Iterator<Item = u64>) -> ArrayRef {
    use duckdb::arrow::array::{Int16Array, Int32Array, Int8Array};
    match narrow_type(bound) {
        DataType::Int8 => Arc::new(Int8Array::from_iter_values(codes.map(|c| c as i8))),
        DataType::Int16 => Arc::new(Int16Array::from_iter_values(codes.map(|c| c as i16))),
        DataType::Int32 => Arc::new(Int32Array::from_iter_values(codes.map(|c| c as i32))),
        _ => Arc::new(Int64Array::from_iter_values(codes.map(|c| c as i64))),
    }
}

/// Add `b`'s classes and leaf sums to `a`'s.
fn merge_sums(mut a: Sums, b: Sums) -> Sums {
    for (size, (classes, sums)) in b {
        let (c, s) = a.entry(size).or_insert_with(|| (0, vec![0; sums.len()]));
        *c += classes;
        for (x, y) in s.iter_mut().zip(sums) {
            *x += y;
        }
    }
    a
}

/// One level's leaves under each code, minus one: by index up to
/// [`DENSE_LEAVES`] codes, else only the codes a value has.
enum Leaves {
    Dense(Vec<u64>),
    Sparse(FxHashMap<u64, u64>),
}

/// Codes of a level held by index in [`Leaves`] (8 bytes each).
const DENSE_LEAVES: u64 = 1 << 22;

impl Leaves {
    /// 0 for a code no leaf has.
    fn of(&self, code: u64) -> u64 {
        match self {
            Leaves::Dense(v) => v.get(code as usize).copied().unwrap_or(0),
            Leaves::Sparse(m) => m.get(&code).copied().unwrap_or(0),
        }
    }
}

/// Per QI and level, by code (leaf code // divisor): the hierarchy's leaves
/// under it minus one, from its node table.
fn leaves_m1(conn: &Connection, divisors: &[Vec<i64>], heights: &[u8], tops: &[i64]) -> Result<Vec<Vec<Leaves>>> {
    let mut out = Vec::with_capacity(heights.len());
    for (a, &h) in heights.iter().enumerate() {
        let mut per_level: Vec<Leaves> = (0..=h as usize)
            .map(|l| match (tops[a] as u64).div_ceil(divisors[a][l] as u64) {
                codes if codes <= DENSE_LEAVES => Leaves::Dense(vec![0; codes as usize]),
                _ => Leaves::Sparse(FxHashMap::default()),
            })
            .collect();
        for (l, code, leaves) in crate::data::hierarchy::node_leaves(conn, a)? {
            let leaves = (leaves as u64).saturating_sub(1);
            match usize::try_from(l).ok().and_then(|l| per_level.get_mut(l)) {
                Some(Leaves::Dense(v)) => {
                    if let Some(slot) = usize::try_from(code).ok().and_then(|c| v.get_mut(c)) {
                        *slot = leaves;
                    }
                }
                Some(Leaves::Sparse(m)) => {
                    m.insert(code as u64, leaves);
                }
                None => {}
            }
        }
        out.push(per_level);
    }
    Ok(out)
}

/// The key a sorted base over leaf codes under these hierarchies' `divisors`
/// takes (None: too wide).
pub(crate) fn layout_of(divisors: &[Vec<i64>], heights: &[u8]) -> Option<Layout> {
    let tops: Vec<i64> = heights.iter().zip(divisors).map(|(&h, d)| d[h as usize]).collect();
    Layout::new(&tops)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counted a part at a time (chunks large enough) or directly, across
    /// several chunks and two flushes, a tally gives every slot's count once.
    #[test]
    fn a_tally_counts_by_part_as_directly() {
        let width = 16 * PART_SLOTS;
        let mut tally = Tally::new(width);
        let mut x: u64 = 7;
        for group in 0..2u64 {
            let mut expected = std::collections::BTreeMap::<u64, u64>::new();
            // A chunk grouped by part, one below the threshold, one of a single slot.
            for len in [16 * PART_MIN_SLOTS * 4, 16 * PART_MIN_SLOTS - 1, 1] {
                let slots: Vec<u32> = (0..len)
                    .map(|_| {
                        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                        // Skewed: half the slots fall in the first part.
                        let s = (x >> 33) as usize % width;
                        (if x & 1 == 0 { s % PART_SLOTS } else { s }) as u32
                    })
                    .collect();
                for &s in &slots {
                    *expected.entry(s as u64).or_default() += 1;
                }
                tally.add(&slots);
            }
            let mut got = Vec::new();
            tally.flush(group, 100, &mut |g, x, c| got.push((g, x, c)));
            let expected: Vec<(u64, u64, u64)> = expected.into_iter().map(|(s, c)| (group, 100 + s, c)).collect();
            assert_eq!(got, expected);
            assert!(tally.counts.iter().all(|&c| c == 0));
        }
    }
}
