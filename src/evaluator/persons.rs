//! With `[privacy] person`: a node's classes are persons. At a node every row
//! has its generalized tuple; a person's signature is the set of its rows'
//! tuples; persons of one signature form a class, whose size is its persons
//! (docs/semantics.md, "Person-level k").
//!
//! The base set `kanon_f0` holds (leaf codes, person code `p`, rows). In
//! memory its pairs are held grouped by person and each node is one pass
//! over them; a signature is the sorted set of a person's packed tuples,
//! hashed. In SQL (DuckDB) a node is one statement over `kanon_f0`
//! (`sql/persons.sql`), whose signature is an order-independent hash of the
//! tuples. Both give a bucket per class size with its rows, glm's leaf sums
//! over rows, and dm's share over the released rows ([`PersonRows`]).

use super::memory::{ints, PackedKey};
use super::Sampled;
use crate::data::hierarchy::{self, node_table};
use crate::lattice::Node;
use crate::measure::metrics::{Bucket, Dataset, Histogram, PersonRows};
use crate::sql::{self, list, render};
use anyhow::Result;
use duckdb::Connection;
use rayon::prelude::*;
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::sync::Arc;

/// One QI's levels: each leaf's index at every level, and per level and
/// index the leaves under that value less one (glm).
struct Levels {
    index: Vec<Vec<u32>>,
    leaves_m1: Vec<Vec<u64>>,
    /// Bits of an index at level 0 (the most values).
    bits: u32,
}

/// The pairs held in memory: per pair its person, leaf index per QI and rows;
/// sorted by person, `starts` where each person's pairs begin.
struct Pairs {
    person: Vec<u32>,
    leaf: Vec<Vec<u32>>,
    rows: Vec<u64>,
    starts: Vec<usize>,
    /// Per person, its rows.
    person_rows: Vec<u64>,
}

impl Pairs {
    /// Where person `p`'s pairs end.
    fn end(&self, p: usize) -> usize {
        self.starts.get(p + 1).copied().unwrap_or(self.person.len())
    }
}

pub(crate) struct PersonSets<'c> {
    conn: &'c Connection,
    divisors: Vec<Vec<i64>>,
    qis: Vec<Levels>,
    /// None: every node runs as SQL (asked, or tuples wider than 128 bits).
    pairs: Option<Pairs>,
    /// Distinct QI combinations, counted off the pairs in memory.
    combinations: Option<u64>,
    pool: rayon::ThreadPool,
    /// Compute dm's row squares (costly: a sort of every pair per node).
    pub(crate) dm: bool,
    /// glm's leaf sums only for classes of at least this many persons.
    pub(crate) leaf_sums_from: u64,
    /// [`Self::sampled`] tries nothing with fewer persons,
    pub(crate) refute_from: u64,
    /// and keys a node's sample on its most spread QIs when they have this
    /// many values together at its levels (else on its signatures).
    pub(crate) sample_values: u64,
    /// The persons' class sizes of the nodes evaluated last (the chosen
    /// node is often among them), least recent first.
    recent: std::sync::Mutex<Vec<(Node, Arc<Vec<u64>>)>>,
    /// What [`Self::sampled`] computed, for a search that asks again.
    kept: std::sync::Mutex<Kept>,
}

/// [`PersonSets::sampled`]'s work kept between calls.
#[derive(Default)]
struct Kept {
    /// The sampled persons per sample key (its QIs and levels), least recent
    /// first: nodes of one key share the pass that draws them.
    samples: Vec<(SampleKey, Arc<Vec<usize>>)>,
    /// Every person's signature at the last node sampled by its signatures:
    /// its evaluation, which often follows, needs them again.
    signatures: Option<(Node, Arc<Vec<Signature>>)>,
    /// The outcome per node, k and budget.
    outcomes: FxHashMap<(Node, u64, u64), Sampled>,
}

/// A sample key: its QIs and their levels.
type SampleKey = Vec<(usize, u8)>;

/// How many sample keys' persons [`Kept`] holds (8 bytes a sampled person).
const KEPT_SAMPLES: usize = 8;

/// How many nodes' class sizes [`PersonSets`] keeps (each 8 bytes a person).
const RECENT: usize = 4;

/// Class sizes below this are bucketed by index in [`PersonSets::by_size`].
const DENSE_SIZES: u64 = 1024;

/// The persons [`PersonSets::sampled`] samples: those whose sample key hashes
/// into the first this many of 64 parts (a sixteenth).
const SAMPLE_PARTS: u64 = 4;

/// Is a person whose sample key hashes to `hash` in the sample?
fn in_sample(hash: u64) -> bool {
    hash % 64 < SAMPLE_PARTS
}

/// A person's signature: two sums of hashes over its distinct tuples, the
/// second with their number mixed in.
type Signature = (u64, u64);

/// The signature of a person's sorted, distinct tuples.
fn signature<K: PackedKey>(tuples: &[K]) -> Signature {
    let (x, y) = tuples.iter().fold((0u64, 0u64), |(x, y), &t| {
        // Two 64-bit hashes of the tuple, the second chained from the first.
        let h = mix(t.wide(), 0x9e37_79b9_7f4a_7c15);
        (x.wrapping_add(h), y.wrapping_add(step(h ^ 0xd1b5_4a32_d192_ed03)))
    });
    (x, y ^ mix(tuples.len() as u128, 0x2545_f491_4f6c_dd1d))
}

/// A node's tuples of the pairs: per attribute its level's index of each
/// leaf, the leaf column, and the field's shift in a packed tuple.
struct Tuples<'a> {
    index: Vec<&'a [u32]>,
    leaf: Vec<&'a [u32]>,
    shifts: Vec<u32>,
}

impl<'a> Tuples<'a> {
    /// A QI of one value at its level is left out: its field is 0 in every tuple.
    fn new(sets: &'a PersonSets, pairs: &'a Pairs, node: &Node) -> Tuples<'a> {
        let (index, shifts) = (sets.node_index(node), sets.shifts(node));
        let varying: Vec<usize> = (0..node.attrs.len()).filter(|&j| !sets.constant(node, j)).collect();
        Tuples {
            index: varying.iter().map(|&j| index[j]).collect(),
            leaf: varying.iter().map(|&j| &pairs.leaf[node.attrs[j]][..]).collect(),
            shifts: varying.iter().map(|&j| shifts[j]).collect(),
        }
    }

    /// Pair `i`'s tuple, packed.
    fn key<K: PackedKey>(&self, i: usize) -> K {
        let mut key = K::default();
        for j in 0..self.index.len() {
            key = key.or(K::field(self.index[j][self.leaf[j][i] as usize], self.shifts[j]));
        }
        key
    }

    /// Person `p`'s signature (`tuples`: scratch space).
    fn signature<K: PackedKey>(&self, pairs: &Pairs, p: usize, tuples: &mut Vec<K>) -> Signature {
        tuples.clear();
        let (start, end) = (pairs.starts[p], pairs.end(p));
        for i in start..end {
            let key: K = self.key(i);
            // The signature is a sum over the distinct tuples: a few are
            // told apart by comparison, many by sorting.
            if end - start > 32 || !tuples.contains(&key) {
                tuples.push(key);
            }
        }
        if end - start > 32 {
            tuples.sort_unstable();
            tuples.dedup();
        }
        signature(tuples)
    }
}

/// What a node's classes add up to, per class.
#[derive(Default, Clone)]
struct Class {
    persons: u64,
    rows: u64,
    leaf_sums: Vec<u64>,
}

impl<'c> PersonSets<'c> {
    /// The sets over `kanon_f0` (a table by now); its pairs read into memory
    /// when `memory` and the tuples pack into 128 bits.
    pub(crate) fn new(
        conn: &'c Connection,
        base: &crate::data::frequency::Base,
        heights: &[u8],
        memory: bool,
        threads: Option<usize>,
    ) -> Result<PersonSets<'c>> {
        let n = heights.len();
        let divisors = hierarchy::divisors(conn, n)?;
        let mut qis = Vec::with_capacity(n);
        let mut lookups: Vec<Lookup> = Vec::with_capacity(n);
        for (a, &h) in heights.iter().enumerate() {
            let codes = hierarchy::present_codes(conn, a)?;
            let leaves: FxHashMap<(u8, i64), u64> = (hierarchy::node_leaves(conn, a)?.into_iter())
                .map(|(level, code, leaves)| ((level as u8, code), leaves as u64))
                .collect();
            let mut index = Vec::with_capacity(h as usize + 1);
            let mut leaves_m1 = Vec::with_capacity(h as usize + 1);
            for l in 0..=h as usize {
                // Codes are mixed-radix: sorted leaf codes give sorted codes at every level.
                let (mut idx, mut lm1, mut last) = (Vec::with_capacity(codes.len()), Vec::new(), None);
                for &c in &codes {
                    let code = c / divisors[a][l];
                    if last != Some(code) {
                        last = Some(code);
                        lm1.push(leaves.get(&(l as u8, code)).copied().unwrap_or(1).saturating_sub(1));
                    }
                    idx.push(lm1.len() as u32 - 1);
                }
                index.push(idx);
                leaves_m1.push(lm1);
            }
            let bits = u32::BITS - (codes.len().max(1) as u32 - 1).leading_zeros();
            lookups.push(Lookup::new(&codes));
            qis.push(Levels { index, leaves_m1, bits });
        }
        let threads = threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |p| p.get()));
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads.max(1)).build()?;
        let bits: Vec<u32> = qis.iter().map(|q| q.bits).collect();
        let read = if memory { read_pairs(conn, base.has_rows(), &lookups, &bits, &pool)? } else { None };
        let (pairs, combinations) = match read {
            Some((pairs, combinations)) => (Some(pairs), Some(combinations)),
            None => {
                // The SQL statements read kanon_f0 many times: a table.
                base.as_table(conn)?;
                (None, None)
            }
        };
        Ok(PersonSets {
            conn,
            divisors,
            qis,
            pairs,
            combinations,
            pool,
            dm: true,
            leaf_sums_from: 0,
            refute_from: super::memory::REFUTE_FROM,
            sample_values: super::memory::SAMPLE_SPREAD,
            recent: std::sync::Mutex::new(Vec::new()),
            kept: std::sync::Mutex::new(Kept::default()),
        })
    }

    /// In memory (true) or as SQL.
    pub(crate) fn in_memory(&self) -> bool {
        self.pairs.is_some()
    }

    /// Distinct QI combinations of the source.
    pub(crate) fn combinations(&self) -> Result<u64> {
        if let Some(c) = self.combinations {
            return Ok(c);
        }
        let codes = list(0..self.qis.len(), ", ", |a| format!("g{a}"));
        let q = render(sql::fragment(sql::PERSONS, "combinations"), &[("codes", &codes)]);
        Ok(self.conn.query_row(&q, [], |r| r.get::<_, i64>(0))? as u64)
    }

    pub(crate) fn histograms(&self, nodes: &[Node]) -> Result<Vec<(Node, Histogram)>> {
        nodes.iter().map(|node| Ok((node.clone(), self.histogram(node)?))).collect()
    }

    fn histogram(&self, node: &Node) -> Result<Histogram> {
        match &self.pairs {
            Some(pairs) => {
                let start = std::time::Instant::now();
                let sizes = self.sizes(pairs, node);
                let sized = start.elapsed().as_secs_f64();
                let histogram = self.memory_histogram(pairs, node, &sizes);
                crate::trace(|| {
                    let all = start.elapsed().as_secs_f64();
                    format!("persons: node {:?}: sizes {sized:.3}s, buckets {:.3}s", node.levels, all - sized)
                });
                Ok(histogram)
            }
            None => self.sql_histogram(node),
        }
    }

    /// The chosen node at `levels` for `k`: its histogram with dm, and am;
    /// the persons of its classes under k go to `kanon_dropped_persons`
    /// (by person code) for the release to leave out.
    pub(crate) fn chosen(&mut self, levels: &[u8], k: u64, data: &Dataset) -> Result<(Histogram, f64)> {
        let node = Node::full(levels.to_vec());
        self.dm = true;
        let (histogram, dropped, am) = match &self.pairs {
            Some(pairs) => {
                let start = std::time::Instant::now();
                let size = self.sizes(pairs, &node);
                let sized = start.elapsed().as_secs_f64();
                let histogram = self.memory_histogram(pairs, &node, &size);
                let measured = start.elapsed().as_secs_f64();
                let dropped: Vec<u32> =
                    (0..size.len()).filter(|&p| size[p] < k).map(|p| pairs.person[pairs.starts[p]]).collect();
                let am = self.memory_ambiguity(pairs, levels, |p| size[p] >= k, data);
                crate::trace(|| {
                    let all = start.elapsed().as_secs_f64();
                    format!(
                        "persons: the chosen node: sizes {sized:.3}s, buckets and dm {:.3}s, am {:.3}s",
                        measured - sized,
                        all - measured
                    )
                });
                (histogram, dropped, Some(am))
            }
            None => {
                let q =
                    format!("{}\n{}", self.signatures_sql(&node), render(sql::fragment(sql::PERSONS, "dropped"), &[]));
                let mut stmt = self.conn.prepare(&q)?;
                let rows = stmt.query_map([k as i64], |r| r.get::<_, i32>(0))?;
                let dropped = rows.map(|p| Ok(p? as u32)).collect::<Result<_>>()?;
                (self.sql_histogram(&node)?, dropped, None)
            }
        };
        self.conn.execute_batch(sql::fragment(sql::PERSONS, "dropped_table"))?;
        let mut app = self.conn.appender("kanon_dropped_persons")?;
        for &p in &dropped {
            app.append_row([p as i32])?;
        }
        app.flush()?;
        drop(app);
        let am = match am {
            Some(am) => am,
            None => self.sql_ambiguity(levels, data)?,
        };
        Ok((histogram, am))
    }

    /// am over the pairs of the persons `kept` accepts: Σ rows × Π leaves under the values.
    fn memory_ambiguity(
        &self,
        pairs: &Pairs,
        levels: &[u8],
        kept: impl Fn(usize) -> bool + Sync,
        data: &Dataset,
    ) -> f64 {
        let node = Node::full(levels.to_vec());
        // Per QI and leaf: the leaves under its value at the node.
        let factor: Vec<Vec<u64>> = (self.node_index(&node).iter().zip(levels).enumerate())
            .map(|(a, (index, &l))| index.iter().map(|&i| self.qis[a].leaves_m1[l as usize][i as usize] + 1).collect())
            .collect();
        // Whole numbers summed exactly (as classes_ambiguity does), as floats past
        // u128 (a second pass); per fixed chunk of persons in parallel, the
        // chunks added in order (the floats' sum does not depend on the threads).
        const CHUNK: usize = 1 << 16;
        let persons = pairs.starts.len();
        // Σ rows × Π factors, in 64 bits while it fits.
        let product = |i: usize| -> Option<u128> {
            let narrow = factor
                .iter()
                .enumerate()
                .try_fold(pairs.rows[i], |x, (a, f)| x.checked_mul(f[pairs.leaf[a][i] as usize]));
            match narrow {
                Some(x) => Some(x as u128),
                None => (factor.iter().enumerate())
                    .try_fold(pairs.rows[i] as u128, |x, (a, f)| x.checked_mul(f[pairs.leaf[a][i] as usize] as u128)),
            }
        };
        let exact = |c: usize| {
            let (mut sum, mut records) = (Some(0u128), 0u64);
            for p in (c * CHUNK..((c + 1) * CHUNK).min(persons)).filter(|&p| kept(p)) {
                for i in pairs.starts[p]..pairs.end(p) {
                    sum = sum.zip(product(i)).and_then(|(s, t)| s.checked_add(t));
                    records += pairs.rows[i];
                }
            }
            (sum, records)
        };
        let chunks: Vec<(Option<u128>, u64)> =
            self.pool.install(|| (0..persons.div_ceil(CHUNK)).into_par_iter().map(exact).collect());
        let records: u64 = chunks.iter().map(|c| c.1).sum();
        let sum = chunks.iter().try_fold(0u128, |s, c| c.0.and_then(|t| s.checked_add(t)));
        let sum = sum.map(|s| s as f64).unwrap_or_else(|| {
            let floats = |c: usize| -> f64 {
                (c * CHUNK..((c + 1) * CHUNK).min(persons))
                    .filter(|&p| kept(p))
                    .flat_map(|p| pairs.starts[p]..pairs.end(p))
                    .map(|i| {
                        let f = factor.iter().enumerate().map(|(a, f)| f[pairs.leaf[a][i] as usize] as f64);
                        f.product::<f64>() * pairs.rows[i] as f64
                    })
                    .sum()
            };
            let chunks: Vec<f64> =
                self.pool.install(|| (0..persons.div_ceil(CHUNK)).into_par_iter().map(floats).collect());
            chunks.into_iter().sum()
        });
        crate::measure::metrics::ambiguity(sum, records as f64, data)
    }

    /// am at `levels` with the persons of `kanon_dropped_persons` suppressed, in SQL.
    fn sql_ambiguity(&self, levels: &[u8], data: &Dataset) -> Result<f64> {
        let products = list(0..levels.len(), "", |a| format!(" * coalesce(n{a}.leaves, 1)"));
        let joins = list(levels.iter().enumerate(), " ", |(a, &l)| {
            format!(
                "LEFT JOIN {} n{a} ON n{a}.level = {l} AND n{a}.code = f.g{a} // {}",
                node_table(a),
                self.divisors[a][l as usize]
            )
        });
        let q = render(sql::fragment(sql::PERSONS, "ambiguity"), &[("products", &products), ("joins", &joins)]);
        let (kept, records) = self.conn.query_row(&q, [], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?;
        Ok(crate::measure::metrics::ambiguity(kept.parse::<f64>()?, records as f64, data))
    }

    /// Per attribute of `node`: leaf index → index at the node's level.
    fn node_index<'a>(&'a self, node: &Node) -> Vec<&'a [u32]> {
        node.attrs.iter().zip(&node.levels).map(|(&a, &l)| &self.qis[a].index[l as usize][..]).collect()
    }

    /// Per person (in person order): its signature at `node`.
    fn signatures(&self, pairs: &Pairs, node: &Node) -> Vec<Signature> {
        let bits: u32 = node.attrs.iter().map(|&a| self.qis[a].bits).sum();
        if bits <= u64::BITS {
            self.signatures_as::<u64>(pairs, node)
        } else {
            self.signatures_as::<u128>(pairs, node)
        }
    }

    fn signatures_as<K: PackedKey>(&self, pairs: &Pairs, node: &Node) -> Vec<Signature> {
        let tuples = Tuples::new(self, pairs, node);
        self.by_person_chunks(pairs.starts.len(), 1, |from, to, out: &mut [Signature]| {
            let mut scratch: Vec<K> = Vec::new();
            for p in from..to {
                out[p - from] = tuples.signature(pairs, p, &mut scratch);
            }
        })
    }

    /// What a sample of each node's classes tells of it: refuted when the
    /// sample alone suppresses more than `budget` persons at `k` (then the
    /// node and every specialization are infeasible), else the suppressed
    /// persons it scales up to. The sample keeps whole classes, a person
    /// being in it by a function of its signature: the least of its rows'
    /// values of the node's most spread QIs (at the node's levels, or higher
    /// for a kept sample), hashed into the first [`SAMPLE_PARTS`] of 64, when
    /// those QIs have `sample_values` values together (a pass over their
    /// columns, then the sampled persons' signatures); else its signature,
    /// hashed likewise (a pass over all the pairs, kept for the node's
    /// evaluation). Not tried in SQL, or with fewer than `refute_from` persons.
    pub(crate) fn sampled(&self, nodes: &[Node], k: u64, budget: u64) -> Vec<Sampled> {
        let Some(pairs) = &self.pairs else { return vec![Sampled::Untried; nodes.len()] };
        if (pairs.starts.len() as u64) < self.refute_from {
            return vec![Sampled::Untried; nodes.len()];
        }
        nodes.iter().map(|node| self.sample(pairs, node, k, budget)).collect()
    }

    fn sample(&self, pairs: &Pairs, node: &Node, k: u64, budget: u64) -> Sampled {
        let asked = (node.clone(), k, budget);
        if let Some(&outcome) = self.kept().outcomes.get(&asked) {
            return outcome;
        }
        let start = std::time::Instant::now();
        let values = |(a, l): (usize, u8)| self.qis[a].leaves_m1[l as usize].len() as u64;
        let key = || super::memory::sample_key(node, values, self.sample_values);
        let sample = self.kept_sample(node).or_else(|| key().map(|key| self.keyed_sample(pairs, key)));
        let keyed = sample.is_some();
        let signatures = match sample {
            Some(sample) => {
                let bits: u32 = node.attrs.iter().map(|&a| self.qis[a].bits).sum();
                match bits <= u64::BITS {
                    true => self.sample_signatures::<u64>(pairs, node, &sample),
                    false => self.sample_signatures::<u128>(pairs, node, &sample),
                }
            }
            None => {
                let all = Arc::new(self.signatures(pairs, node));
                let sampled = all.iter().filter(|s| in_sample(mix(s.0 as u128 | (s.1 as u128) << 64, 0))).copied();
                let sampled = sampled.collect();
                self.kept().signatures = Some((node.clone(), all));
                sampled
            }
        };
        let under_k = self.class_sizes(&signatures).iter().filter(|&&size| size < k).count() as u64;
        let outcome = match under_k > budget {
            true => Sampled::Refuted,
            false => Sampled::Estimate(under_k * 64 / SAMPLE_PARTS),
        };
        self.kept().outcomes.insert(asked, outcome);
        crate::trace(|| {
            let by = if keyed { "values" } else { "signatures" };
            format!(
                "persons: node {:?} sampled by {by}: {outcome:?}, {:.3}s",
                node.levels,
                start.elapsed().as_secs_f64()
            )
        });
        outcome
    }

    fn kept(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A kept sample whose key is a function of `node`'s signatures: its QIs
    /// at the node's levels or higher. The most recent.
    fn kept_sample(&self, node: &Node) -> Option<Arc<Vec<usize>>> {
        let level = |a: usize| node.attrs.iter().position(|&x| x == a).map(|j| node.levels[j]);
        let kept = self.kept();
        let valid = |key: &SampleKey| key.iter().all(|&(a, l)| level(a).is_some_and(|at| l >= at));
        kept.samples.iter().rev().find(|(key, _)| valid(key)).map(|(_, sample)| sample.clone())
    }

    /// The persons whose least value of the key's QIs (as one number,
    /// wrapping past 64 bits, which only hashes it differently) is in the
    /// sample; kept per key.
    fn keyed_sample(&self, pairs: &Pairs, id: SampleKey) -> Arc<Vec<usize>> {
        {
            let mut kept = self.kept();
            if let Some(at) = kept.samples.iter().position(|(key, _)| *key == id) {
                let hit = kept.samples.remove(at);
                kept.samples.push(hit.clone());
                return hit.1;
            }
        }
        let key: Vec<(&[u32], &[u32], u64)> = (id.iter())
            .map(|&(a, l)| {
                let index = &self.qis[a].index[l as usize];
                (&pairs.leaf[a][..], &index[..], self.qis[a].leaves_m1[l as usize].len() as u64)
            })
            .collect();
        let sampled: Vec<bool> = self.by_person_chunks(pairs.starts.len(), 1, |from, to, out: &mut [bool]| {
            for p in from..to {
                let least = (pairs.starts[p]..pairs.end(p))
                    .map(|i| {
                        key.iter().fold(0u64, |v, (leaf, index, radix)| {
                            v.wrapping_mul(*radix).wrapping_add(index[leaf[i] as usize] as u64)
                        })
                    })
                    .min()
                    .unwrap_or(0);
                out[p - from] = in_sample(mix(least as u128, 0x5851_f42d_4c95_7f2d));
            }
        });
        let sample = Arc::new((0..sampled.len()).filter(|&p| sampled[p]).collect::<Vec<usize>>());
        let mut kept = self.kept();
        if kept.samples.len() == KEPT_SAMPLES {
            kept.samples.remove(0);
        }
        kept.samples.push((id, sample.clone()));
        sample
    }

    /// The signatures at `node` of the persons `sample`, in its order.
    fn sample_signatures<K: PackedKey>(&self, pairs: &Pairs, node: &Node, sample: &[usize]) -> Vec<Signature> {
        let tuples = Tuples::new(self, pairs, node);
        self.by_person_chunks(sample.len(), 1, |from, to, out: &mut [Signature]| {
            let mut scratch: Vec<K> = Vec::new();
            for s in from..to {
                out[s - from] = tuples.signature(pairs, sample[s], &mut scratch);
            }
        })
    }

    /// Per attribute of `node`: the shift of its field in a packed tuple (the first highest).
    fn shifts(&self, node: &Node) -> Vec<u32> {
        let mut at: u32 = node.attrs.iter().map(|&a| self.qis[a].bits).sum();
        node.attrs
            .iter()
            .map(|&a| {
                at -= self.qis[a].bits;
                at
            })
            .collect()
    }

    /// The person classes' sizes at `node`, per person.
    fn sizes(&self, pairs: &Pairs, node: &Node) -> Arc<Vec<u64>> {
        let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(at) = recent.iter().position(|(n, _)| n == node) {
            let hit = recent.remove(at);
            recent.push(hit.clone());
            return hit.1;
        }
        drop(recent);
        let kept = self.kept().signatures.take_if(|(n, _)| n == node);
        let signatures = match kept {
            Some((_, signatures)) => signatures,
            None => Arc::new(self.signatures(pairs, node)),
        };
        let sizes = Arc::new(self.class_sizes(&signatures));
        let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        if recent.len() == RECENT {
            recent.remove(0);
        }
        recent.push((node.clone(), sizes.clone()));
        sizes
    }

    /// Per class size: the persons, rows and glm's leaf sums (per attribute
    /// of `node`; only for classes of at least `leaf_sums_from` persons, the
    /// others being suppressed by every requirement asked). One parallel
    /// pass, each chunk summing into its own buckets.
    fn by_size(&self, pairs: &Pairs, node: &Node, size: &[u64]) -> BTreeMap<u64, Class> {
        let width = node.attrs.len();
        let from = self.leaf_sums_from;
        // A QI of one value at its level costs the same on every row: its sum
        // is the bucket's rows times that, with no pass over the pairs.
        let varying: Vec<usize> = (0..width).filter(|&j| !self.constant(node, j)).collect();
        // Per varying QI: its leaf column and each leaf's cost.
        let columns: Vec<(usize, &[u32], Vec<u64>)> = (varying.iter())
            .map(|&j| {
                let (q, l) = (&self.qis[node.attrs[j]], node.levels[j] as usize);
                let cost = q.index[l].iter().map(|&i| q.leaves_m1[l][i as usize]).collect();
                (j, &pairs.leaf[node.attrs[j]][..], cost)
            })
            .collect();
        let persons = pairs.starts.len();
        let chunk = persons.div_ceil(self.pool.current_num_threads() * 8).max(1);
        let empty = || Class { leaf_sums: vec![0; width], ..Class::default() };
        let sum = |mut x: BTreeMap<u64, Class>, y: BTreeMap<u64, Class>| {
            for (s, c) in y {
                let b = x.entry(s).or_insert_with(empty);
                b.persons += c.persons;
                b.rows += c.rows;
                b.leaf_sums.iter_mut().zip(&c.leaf_sums).for_each(|(u, v)| *u += v);
            }
            x
        };
        let mut buckets = self.pool.install(|| {
            (0..persons.div_ceil(chunk))
                .into_par_iter()
                .map(|c| {
                    // Small sizes by index, the rest in a map: a lookup a person.
                    let mut dense: Vec<Option<Class>> = Vec::new();
                    let mut sparse: BTreeMap<u64, Class> = BTreeMap::new();
                    for p in c * chunk..((c + 1) * chunk).min(persons) {
                        let s = size[p];
                        let b = match s < DENSE_SIZES {
                            true => {
                                if dense.len() <= s as usize {
                                    dense.resize_with(s as usize + 1, || None);
                                }
                                dense[s as usize].get_or_insert_with(empty)
                            }
                            false => sparse.entry(s).or_insert_with(empty),
                        };
                        b.persons += 1;
                        b.rows += pairs.person_rows[p];
                        if s >= from {
                            for (j, leaf, cost) in &columns {
                                let sum: u64 = (pairs.starts[p]..pairs.end(p))
                                    .map(|i| pairs.rows[i] * cost[leaf[i] as usize])
                                    .sum();
                                b.leaf_sums[*j] += sum;
                            }
                        }
                    }
                    sparse.extend(dense.into_iter().enumerate().filter_map(|(s, b)| b.map(|b| (s as u64, b))));
                    sparse
                })
                .reduce(BTreeMap::new, sum)
        });
        for (_, b) in buckets.iter_mut().filter(|(&s, _)| s >= from) {
            for j in (0..width).filter(|j| !varying.contains(j)) {
                let (a, l) = (node.attrs[j], node.levels[j] as usize);
                b.leaf_sums[j] = b.rows * self.qis[a].leaves_m1[l][0];
            }
        }
        buckets
    }

    /// Has QI `j` of `node` one value at its level?
    fn constant(&self, node: &Node, j: usize) -> bool {
        self.qis[node.attrs[j]].leaves_m1[node.levels[j] as usize].len() == 1
    }

    /// `fill(from, to, out)` over chunks of the persons in parallel, `per`
    /// items a person written into `out` (the chunk's slice).
    fn by_person_chunks<T: Send + Default + Clone>(
        &self,
        persons: usize,
        per: usize,
        fill: impl Fn(usize, usize, &mut [T]) + Sync,
    ) -> Vec<T> {
        let chunk = persons.div_ceil(self.pool.current_num_threads() * 8).max(1);
        let mut out = vec![T::default(); persons * per];
        self.pool.install(|| {
            out.par_chunks_mut((chunk * per).max(1)).enumerate().for_each(|(c, slice)| {
                let from = c * chunk;
                fill(from, (from + chunk).min(persons), slice)
            })
        });
        out
    }

    /// Per person the size (persons) of its class, off the persons'
    /// signatures: in [`hash_buckets`] by signature (a hash already), each
    /// bucket sorted and each entry's signature replaced by its class's size.
    fn class_sizes(&self, signatures: &[Signature]) -> Vec<u64> {
        let n = signatures.len();
        let chunk = n.div_ceil(self.pool.current_num_threads() * 4).max(1);
        let sized = self.pool.install(|| {
            hash_buckets(
                n,
                n.div_ceil(chunk),
                |c, emit: &mut dyn FnMut((Signature, u32))| {
                    (c * chunk..((c + 1) * chunk).min(n)).for_each(|p| emit((signatures[p], p as u32)))
                },
                |e| e.0 .0,
                |slice| {
                    slice.sort_unstable();
                    let mut i = 0;
                    while i < slice.len() {
                        let j = i + slice[i..].iter().take_while(|x| x.0 == slice[i].0).count();
                        slice[i..j].iter_mut().for_each(|x| x.0 .0 = (j - i) as u64);
                        i = j;
                    }
                    std::mem::take(slice)
                },
            )
        });
        let mut size = vec![0u64; n];
        for ((class, _), p) in sized.into_iter().flatten() {
            size[p as usize] = class;
        }
        size
    }

    fn memory_histogram(&self, pairs: &Pairs, node: &Node, size: &[u64]) -> Histogram {
        let by_size = self.by_size(pairs, node, size);
        let squares = if self.dm { self.row_squares(pairs, node, size) } else { BTreeMap::new() };
        let buckets = by_size
            .into_iter()
            .map(|(size, b)| Bucket {
                size,
                ldiv: 0,
                admitted: true,
                // A class's persons are `size`: the bucket's persons over it are its classes.
                classes: b.persons / size,
                leaf_sums: b.leaf_sums,
                minority: 0,
                squares: 0,
                rows: Some(PersonRows { rows: b.rows, squares: squares.get(&size).copied().unwrap_or(0) }),
                shape: None,
            })
            .collect();
        Histogram { buckets }
    }

    /// dm's share per class size: per released tuple, its rows summed from
    /// the largest classes down; a size adds the growth of the square.
    fn row_squares(&self, pairs: &Pairs, node: &Node, size: &[u64]) -> BTreeMap<u64, u64> {
        let bits: u32 = node.attrs.iter().map(|&a| self.qis[a].bits).sum();
        let narrow = bits <= u64::BITS
            && size.iter().all(|&s| s <= u32::MAX as u64)
            && pairs.rows.iter().all(|&r| r <= u32::MAX as u64);
        match narrow {
            // 16 bytes a pair rather than 32: half the memory to fill and sort.
            true => self.row_squares_as::<u64, u32>(pairs, node, size),
            false => self.row_squares_as::<u128, u64>(pairs, node, size),
        }
    }

    /// [`Self::row_squares`] with tuples packed in `K` and class sizes and
    /// rows in `N` (each fits): every pair's (tuple, class size, rows), per
    /// chunk of persons in parallel, in [`hash_buckets`] by tuple; each
    /// bucket sorted by tuple and then class size from the largest down.
    fn row_squares_as<K: PackedKey + Send + Sync, N>(
        &self,
        pairs: &Pairs,
        node: &Node,
        size: &[u64],
    ) -> BTreeMap<u64, u64>
    where
        N: Copy + Ord + Send + Sync + TryFrom<u64> + Into<u64>,
    {
        let tuples = Tuples::new(self, pairs, node);
        let narrow = |x: u64| N::try_from(x).ok().expect("checked to fit");
        let persons = size.len();
        let chunk = persons.div_ceil(self.pool.current_num_threads() * 8).max(1);
        let per_bucket = self.pool.install(|| {
            hash_buckets(
                pairs.person.len(),
                persons.div_ceil(chunk),
                |c, emit: &mut dyn FnMut((K, std::cmp::Reverse<N>, N))| {
                    for p in c * chunk..((c + 1) * chunk).min(persons) {
                        for i in pairs.starts[p]..pairs.end(p) {
                            emit((tuples.key::<K>(i), std::cmp::Reverse(narrow(size[p])), narrow(pairs.rows[i])));
                        }
                    }
                },
                |e| mix(e.0.wide(), 0x94d0_49bb_1331_11eb),
                |held| {
                    held.sort_unstable_by(|x, y| (x.0, x.1).cmp(&(y.0, y.1)));
                    let mut squares: BTreeMap<u64, u64> = BTreeMap::new();
                    let mut i = 0;
                    while i < held.len() {
                        let (mut cum, mut j) = (0u64, i);
                        while j < held.len() && held[j].0 == held[i].0 {
                            let (class_size, before) = (held[j].1, cum);
                            while j < held.len() && held[j].0 == held[i].0 && held[j].1 == class_size {
                                cum += held[j].2.into();
                                j += 1;
                            }
                            *squares.entry(class_size.0.into()).or_default() += cum * cum - before * before;
                        }
                        i = j;
                    }
                    squares
                },
            )
        });
        let mut squares: BTreeMap<u64, u64> = BTreeMap::new();
        for (size, square) in per_bucket.into_iter().flatten() {
            *squares.entry(size).or_default() += square;
        }
        squares
    }

    /// The statement's head naming each person's signature at `node` (`ps`).
    fn signatures_sql(&self, node: &Node) -> String {
        let cols = list(0..node.attrs.len(), ", ", |j| format!("c{j}"));
        let gen = list(node.attrs.iter().zip(&node.levels).enumerate(), ", ", |(j, (&a, &l))| {
            format!("(f.g{a} // {})::BIGINT AS c{j}", self.divisors[a][l as usize])
        });
        let leaf_terms = list(0..node.attrs.len(), "", |j| format!(", t.r * (coalesce(n{j}.leaves, 1) - 1) AS ls{j}"));
        let leaf_joins = list(node.attrs.iter().zip(&node.levels).enumerate(), " ", |(j, (&a, &l))| {
            format!("LEFT JOIN {} n{j} ON n{j}.level = {l} AND n{j}.code = t.c{j}", node_table(a))
        });
        let leaf_sums = list(0..node.attrs.len(), "", |j| format!(", sum(ls{j})::BIGINT AS ls{j}"));
        render(
            sql::fragment(sql::PERSONS, "signatures"),
            &[
                ("gen", &gen),
                ("cols", &cols),
                ("leaf_terms", &leaf_terms),
                ("leaf_joins", &leaf_joins),
                ("leaf_sums", &leaf_sums),
            ],
        )
    }

    fn sql_histogram(&self, node: &Node) -> Result<Histogram> {
        let width = node.attrs.len();
        let cols = list(0..width, ", ", |j| format!("c{j}"));
        let q = format!(
            "{}\n{}",
            self.signatures_sql(node),
            render(
                sql::fragment(sql::PERSONS, "histogram"),
                &[
                    ("cols", &cols),
                    ("class_sums", &list(0..width, "", |j| format!(", sum(ls{j})::BIGINT AS ls{j}"))),
                    ("bucket_sums", &list(0..width, "", |j| format!(", sum(ls{j})::BIGINT"))),
                    ("zero_sums", &list(0..width, "", |_| ", 0".to_string())),
                ],
            )
        );
        let mut stmt = self.conn.prepare(&q)?;
        let mut rows = stmt.query([])?;
        let mut buckets: BTreeMap<u64, Bucket> = BTreeMap::new();
        while let Some(r) = rows.next()? {
            let size = r.get::<_, i64>(1)? as u64;
            let b = buckets.entry(size).or_insert_with(|| Bucket {
                size,
                ldiv: 0,
                admitted: true,
                classes: 0,
                leaf_sums: vec![0; width],
                minority: 0,
                squares: 0,
                shape: None,
                rows: Some(PersonRows::default()),
            });
            let big = |i: usize| -> Result<u64> { Ok(r.get::<_, String>(i)?.parse::<u64>()?) };
            let rows = b.rows.as_mut().expect("a person bucket");
            if r.get::<_, i32>(0)? == 0 {
                b.classes = r.get::<_, i64>(2)? as u64;
                rows.rows = big(3)?;
                for j in 0..width {
                    b.leaf_sums[j] = r.get::<_, i64>(5 + j)? as u64;
                }
            } else {
                rows.squares = big(4)?;
            }
        }
        Ok(Histogram { buckets: buckets.into_values().collect() })
    }
}

/// A 64-bit mix of a packed tuple (splitmix64's finalizer over its halves).
fn mix(t: u128, seed: u64) -> u64 {
    let low = step((t as u64) ^ seed);
    match (t >> 64) as u64 {
        0 => low,
        high => step(low ^ high),
    }
}

/// splitmix64's finalizer.
fn step(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The base set's (person, leaf tuple) pairs with their rows, sorted by
/// person: read unordered off the coded rows (`rows`: `kanon_f0_rows`, a row
/// each) or the grouped set (`kanon_f0`, with counts), each packed into one
/// key (person code high, leaf indexes below), sorted and merged in kanon.
/// None when the key would pass 128 bits. Also the distinct leaf tuples.
fn read_pairs(
    conn: &Connection,
    rows: bool,
    lookups: &[Lookup],
    bits: &[u32],
    pool: &rayon::ThreadPool,
) -> Result<Option<(Pairs, u64)>> {
    let n = lookups.len();
    let persons: i64 = conn.query_row(sql::fragment(sql::PERSONS, "person_codes"), [], |r| r.get(0))?;
    let low: u32 = bits.iter().sum();
    let person_bits = u64::BITS - (persons.max(1) as u64).leading_zeros();
    if low + person_bits > u128::BITS {
        return Ok(None);
    }
    // The codes travel packed into as few BIGINT words as they fit (the
    // person's code and each QI's): a column converted to Arrow per word
    // rather than per code.
    let mut widths = vec![person_bits];
    for lookup in lookups {
        match lookup.code_bits() {
            Some(b) => widths.push(b),
            None => return Ok(None),
        }
    }
    let words = Words::new(&widths);
    let names: Vec<String> = std::iter::once("p".to_string()).chain((0..n).map(|a| format!("g{a}"))).collect();
    let relation = if rows { "kanon_f0_rows" } else { "kanon_f0" };
    let count = if rows { String::new() } else { ", cnt".to_string() };
    let q = render(
        sql::fragment(sql::PERSONS, "pairs"),
        &[("words", &words.sql(&names)), ("relation", relation), ("count", &count)],
    );
    if low + person_bits <= u64::BITS {
        read_keyed::<u64>(conn, &q, &words, !rows, lookups, bits, pool).map(Some)
    } else {
        read_keyed::<u128>(conn, &q, &words, !rows, lookups, bits, pool).map(Some)
    }
}

/// Fields packed into BIGINT words of at most 63 bits, in order: per field
/// its word and its lowest bit there.
struct Words {
    at: Vec<(usize, u32)>,
    bits: Vec<u32>,
    count: usize,
}

impl Words {
    fn new(bits: &[u32]) -> Words {
        let (mut at, mut word, mut used) = (Vec::with_capacity(bits.len()), 0, 0);
        for &b in bits {
            if used + b > 63 && used > 0 {
                (word, used) = (word + 1, 0);
            }
            at.push((word, used));
            used += b;
        }
        Words { at, bits: bits.to_vec(), count: word + 1 }
    }

    /// The words as SQL over the fields' columns (each a BIGINT >= 0 below its width).
    fn sql(&self, names: &[String]) -> String {
        list(0..self.count, ", ", |w| {
            let parts = list((0..names.len()).filter(|&f| self.at[f].0 == w && self.bits[f] > 0), " | ", |f| {
                format!("({}::BIGINT << {})", names[f], self.at[f].1)
            });
            if parts.is_empty() {
                format!("0::BIGINT AS w{w}")
            } else {
                format!("({parts}) AS w{w}")
            }
        })
    }

    fn field(&self, words: &[&[i64]], f: usize, i: usize) -> i64 {
        let (w, shift) = self.at[f];
        let mask = u64::MAX.checked_shr(u64::BITS - self.bits[f]).unwrap_or(0);
        ((words[w][i] as u64 >> shift) & mask) as i64
    }
}

/// [`read_pairs`] with keys of type `K`: `counted` when the relation has `cnt`.
fn read_keyed<K: PackedKey>(
    conn: &Connection,
    q: &str,
    words: &Words,
    counted: bool,
    lookups: &[Lookup],
    bits: &[u32],
    pool: &rayon::ThreadPool,
) -> Result<(Pairs, u64)> {
    let low: u32 = bits.iter().sum();
    let start = std::time::Instant::now();
    // The words (and counts) streamed in as they come, a copy per column;
    // packed into keys afterwards in parallel (packing as they came, on the
    // one thread that reads, cost as much as the reading).
    let columns = words.count + usize::from(counted);
    let mut read: Vec<Vec<i64>> = vec![Vec::new(); columns];
    super::unordered(conn, || {
        let mut stmt = conn.prepare(q)?;
        // Streamed: a buffered result would hold every row a second time.
        for batch in stmt.stream_arrow([])? {
            let batch = batch?;
            for (c, column) in read.iter_mut().enumerate() {
                ints(batch.column(c).as_ref(), column)?;
            }
        }
        Ok(())
    })?;
    let n = read[0].len();
    let chunk = n.div_ceil(pool.current_num_threads() * 8).max(1);
    let mut keyed: Vec<(K, u64)> = vec![(K::default(), 0); n];
    pool.install(|| {
        keyed.par_chunks_mut(chunk).enumerate().try_for_each(|(c, out)| -> Result<()> {
            let packed: Vec<&[i64]> = read[..words.count].iter().map(|w| &w[c * chunk..]).collect();
            for (i, slot) in out.iter_mut().enumerate() {
                let mut key = K::field(words.field(&packed, 0, i) as u32, low);
                let mut shift = low;
                for (a, lookup) in lookups.iter().enumerate() {
                    shift -= bits[a];
                    let code = words.field(&packed, 1 + a, i);
                    let index =
                        lookup.get(code).ok_or_else(|| anyhow::anyhow!("leaf code {code} of QI {a} unknown"))?;
                    key = key.or(K::field(index, shift));
                }
                let count = if counted { read[words.count][c * chunk + i] as u64 } else { 1 };
                *slot = (key, count);
            }
            Ok(())
        })
    })?;
    drop(read);
    crate::trace(|| format!("persons: {} coded rows read, {:.3}s", keyed.len(), start.elapsed().as_secs_f64()));
    pool.install(|| keyed.par_sort_unstable_by_key(|k| k.0));
    crate::trace(|| format!("persons: sorted, {:.3}s", start.elapsed().as_secs_f64()));
    // The pairs split by field, beside the distinct leaf tuples (the keys
    // without their person) counted on the other thread.
    let (pairs, combinations) =
        pool.install(|| rayon::join(|| split_pairs(&keyed, low, bits), || distinct_tuples(&keyed, low)));
    crate::trace(|| format!("persons: pairs split, tuples counted, {:.3}s", start.elapsed().as_secs_f64()));
    Ok((pairs, combinations))
}

/// Sorted keys (person code above `low` bits of leaf indexes, of `bits` per
/// QI) with their rows as [`Pairs`], equal keys merged. In parallel over
/// chunks of whole persons: each counts its pairs and persons, then writes
/// them at its offsets.
fn split_pairs<K: PackedKey>(keyed: &[(K, u64)], low: u32, bits: &[u32]) -> Pairs {
    let person = |i: usize| keyed[i].0.get(low, u32::BITS);
    let parts = rayon::current_num_threads() * 8;
    let mut bounds = vec![0usize];
    for c in 1..parts {
        let mut at = (keyed.len() * c / parts).max(bounds[bounds.len() - 1]);
        while at > 0 && at < keyed.len() && person(at) == person(at - 1) {
            at += 1;
        }
        if at > bounds[bounds.len() - 1] && at < keyed.len() {
            bounds.push(at);
        }
    }
    bounds.push(keyed.len());
    let chunks: Vec<(usize, usize)> = bounds.windows(2).map(|w| (w[0], w[1])).collect();
    // Per chunk: its pairs (distinct keys) and persons.
    let counts: Vec<(usize, usize)> = (chunks.par_iter())
        .map(|&(from, to)| {
            let pairs = (from..to).filter(|&i| i == from || keyed[i].0 != keyed[i - 1].0).count();
            let persons = (from..to).filter(|&i| i == from || person(i) != person(i - 1)).count();
            (pairs, persons)
        })
        .collect();
    let (total, persons): (usize, usize) = counts.iter().fold((0, 0), |(x, y), &(a, b)| (x + a, y + b));
    let mut pairs = Pairs {
        person: vec![0; total],
        // Each zeroed by the allocator (a clone would write it).
        leaf: (0..bits.len()).map(|_| vec![0; total]).collect(),
        rows: vec![0; total],
        starts: vec![0; persons],
        person_rows: vec![0; persons],
    };
    let pair_lens: Vec<usize> = counts.iter().map(|c| c.0).collect();
    let person_lens: Vec<usize> = counts.iter().map(|c| c.1).collect();
    let mut person_col = split_lens(&mut pairs.person, &pair_lens).into_iter();
    let mut rows_col = split_lens(&mut pairs.rows, &pair_lens).into_iter();
    let mut starts_col = split_lens(&mut pairs.starts, &person_lens).into_iter();
    let mut person_rows_col = split_lens(&mut pairs.person_rows, &person_lens).into_iter();
    let mut leaf_cols: Vec<_> = pairs.leaf.iter_mut().map(|c| split_lens(c, &pair_lens).into_iter()).collect();
    let mut work = Vec::with_capacity(chunks.len());
    let mut offset = 0;
    for (c, &(from, to)) in chunks.iter().enumerate() {
        let leaves: Vec<&mut [u32]> = leaf_cols.iter_mut().map(|it| it.next().expect("a slice a chunk")).collect();
        let slices = (
            person_col.next().expect("a slice a chunk"),
            rows_col.next().expect("a slice a chunk"),
            starts_col.next().expect("a slice a chunk"),
            person_rows_col.next().expect("a slice a chunk"),
            leaves,
        );
        work.push((from, to, offset, slices));
        offset += pair_lens[c];
    }
    work.into_par_iter().for_each(|(from, to, offset, (persons, rows, starts, person_rows, mut leaves))| {
        let (mut j, mut q) = (0usize, 0usize);
        for i in from..to {
            let (key, count) = keyed[i];
            if i > from && key == keyed[i - 1].0 {
                rows[j - 1] += count;
                person_rows[q - 1] += count;
                continue;
            }
            if i == from || person(i) != person(i - 1) {
                starts[q] = offset + j;
                q += 1;
            }
            persons[j] = person(i);
            let mut shift = low;
            for (a, &b) in bits.iter().enumerate() {
                shift -= b;
                leaves[a][j] = key.get(shift, b);
            }
            rows[j] = count;
            person_rows[q - 1] += count;
            j += 1;
        }
    });
    pairs
}

/// The distinct leaf tuples of `keyed` (the keys' `low` bits), counted in
/// [`hash_buckets`].
fn distinct_tuples<K: PackedKey>(keyed: &[(K, u64)], low: u32) -> u64 {
    let chunk = keyed.len().div_ceil(rayon::current_num_threads() * 4).max(1);
    let counts = hash_buckets(
        keyed.len(),
        keyed.len().div_ceil(chunk),
        |c, emit: &mut dyn FnMut(K)| {
            keyed[c * chunk..((c + 1) * chunk).min(keyed.len())].iter().for_each(|&(key, _)| emit(key.keep_low(low)))
        },
        |t: &K| mix(t.wide(), 0x94d0_49bb_1331_11eb),
        |tuples: &mut Vec<K>| {
            tuples.sort_unstable();
            tuples.dedup();
            tuples.len() as u64
        },
    );
    counts.into_iter().sum()
}

/// The `n` items that `chunks` producers emit (`produce(c, emit)`, in
/// parallel), spread by their `hash`'s top bits over buckets of about a
/// thousand, each handed to `each` on its own, in cache and in parallel: a
/// sort of each bucket took half the time of one sort of all the items.
fn hash_buckets<T: Copy + Send + Sync, R: Send>(
    n: usize,
    chunks: usize,
    produce: impl Fn(usize, &mut dyn FnMut(T)) + Sync,
    hash: impl Fn(&T) -> u64 + Sync,
    each: impl Fn(&mut Vec<T>) -> R + Sync,
) -> Vec<R> {
    let bits = (n / 1024).max(1).ilog2().min(12);
    let bucket = |t: &T| if bits == 0 { 0 } else { (hash(t) >> (u64::BITS - bits)) as usize };
    let scattered: Vec<Vec<Vec<T>>> = (0..chunks)
        .into_par_iter()
        .map(|c| {
            let mut buckets: Vec<Vec<T>> = vec![Vec::new(); 1 << bits];
            produce(c, &mut |t| buckets[bucket(&t)].push(t));
            buckets
        })
        .collect();
    (0..1usize << bits)
        .into_par_iter()
        .map(|b| {
            let mut items: Vec<T> = Vec::with_capacity(scattered.iter().map(|chunk| chunk[b].len()).sum());
            scattered.iter().for_each(|chunk| items.extend_from_slice(&chunk[b]));
            each(&mut items)
        })
        .collect()
}

/// `v` cut into consecutive slices of `lens` (which sum to its length).
fn split_lens<'a, T>(mut v: &'a mut [T], lens: &[usize]) -> Vec<&'a mut [T]> {
    let mut out = Vec::with_capacity(lens.len());
    for &len in lens {
        let (head, tail) = v.split_at_mut(len);
        out.push(head);
        v = tail;
    }
    out
}

/// A QI's leaf code → leaf index: a table when the codes are few and dense
/// enough, else a hash map.
enum Lookup {
    Table(Vec<u32>),
    Map(FxHashMap<i64, u32>),
}

impl Lookup {
    fn new(codes: &[i64]) -> Lookup {
        match codes.last() {
            Some(&top) if top >= 0 && top < (1 << 24) && codes.first().is_some_and(|&c| c >= 0) => {
                let mut table = vec![u32::MAX; top as usize + 1];
                codes.iter().enumerate().for_each(|(i, &c)| table[c as usize] = i as u32);
                Lookup::Table(table)
            }
            _ => Lookup::Map(codes.iter().enumerate().map(|(i, &c)| (c, i as u32)).collect()),
        }
    }

    /// Bits of the widest code looked up; None when a code is below 0.
    fn code_bits(&self) -> Option<u32> {
        let top = match self {
            Lookup::Table(t) => t.len() as u64,
            Lookup::Map(m) if m.keys().any(|&c| c < 0) => return None,
            Lookup::Map(m) => m.keys().map(|&c| c as u64 + 1).max().unwrap_or(1),
        };
        Some(u64::BITS - (top.max(1) - 1).leading_zeros())
    }

    fn get(&self, code: i64) -> Option<u32> {
        match self {
            Lookup::Table(t) => t.get(usize::try_from(code).ok()?).copied().filter(|&i| i != u32::MAX),
            Lookup::Map(m) => m.get(&code).copied(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fields fill BIGINT words of at most 63 bits in order, and each reads back.
    #[test]
    fn words_pack_and_read_back_every_field() {
        let words = Words::new(&[21, 40, 3, 30, 0, 63]);
        assert_eq!(words.count, 3);
        assert_eq!(words.at, vec![(0, 0), (0, 21), (1, 0), (1, 3), (1, 33), (2, 0)]);
        let values: [i64; 6] = [(1 << 21) - 1, (1 << 40) - 2, 5, (1 << 30) - 1, 0, i64::MAX];
        let mut packed = vec![0i64; 3];
        for (f, &v) in values.iter().enumerate() {
            packed[words.at[f].0] |= v << words.at[f].1;
        }
        let columns: Vec<Vec<i64>> = packed.iter().map(|&w| vec![w]).collect();
        let slices: Vec<&[i64]> = columns.iter().map(Vec::as_slice).collect();
        for (f, &v) in values.iter().enumerate() {
            assert_eq!(words.field(&slices, f, 0), v, "field {f}");
        }
        let sql = words.sql(&["p", "g0", "g1", "g2", "g3", "g4"].map(String::from));
        assert_eq!(
            sql,
            "((p::BIGINT << 0) | (g0::BIGINT << 21)) AS w0, ((g1::BIGINT << 0) | (g2::BIGINT << 3)) AS w1, ((g4::BIGINT << 0)) AS w2"
        );
    }

    /// The parallel split merges equal keys and starts each person where a
    /// sequential walk does; the bucketed count equals a sort's.
    #[test]
    fn hash_buckets_hand_every_item_once_and_equal_items_together() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        for n in [0usize, 1, 3000, 50_000] {
            // Repeated values, emitted by 7 producers.
            let items: Vec<u64> = (0..n as u64).map(|i| step(i) % (n as u64 / 3 + 1)).collect();
            let per = n.div_ceil(7).max(1);
            let buckets: Vec<Vec<u64>> = pool.install(|| {
                hash_buckets(
                    n,
                    7,
                    |c, emit: &mut dyn FnMut(u64)| {
                        items[(c * per).min(n)..((c + 1) * per).min(n)].iter().for_each(|&x| emit(x))
                    },
                    |x| step(*x),
                    |bucket| bucket.clone(),
                )
            });
            assert_eq!(buckets.len() > 1, n >= 2048, "n {n}: {} buckets", buckets.len());
            let mut all = buckets.concat();
            all.sort_unstable();
            let mut want = items.clone();
            want.sort_unstable();
            assert_eq!(all, want, "n {n}");
            let mut home: FxHashMap<u64, usize> = FxHashMap::default();
            for (b, bucket) in buckets.iter().enumerate() {
                for &x in bucket {
                    assert_eq!(*home.entry(x).or_insert(b), b, "n {n}: {x} in two buckets");
                }
            }
        }
    }

    #[test]
    fn pairs_split_and_tuples_counted_as_a_sequential_walk_does() {
        let (low, bits) = (10u32, [3u32, 7]);
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        for n in [0usize, 1, 7, 5000] {
            // Persons of 1 to 6 keys, some repeated; sorted as the read sorts them.
            let mut keyed: Vec<(u64, u64)> = Vec::new();
            let mut z = 7u64;
            for person in 0..n as u64 {
                z = step(z);
                for j in 0..1 + z % 6 {
                    let tuple = step(z ^ j % 4) % (1 << low);
                    keyed.push(((person << low) | tuple, 1 + j));
                }
            }
            keyed.sort_by_key(|k| k.0);
            let pairs = pool.install(|| split_pairs(&keyed, low, &bits));
            let (mut want_starts, mut want_rows, mut want_leaf): (Vec<usize>, Vec<u64>, Vec<[u32; 2]>) =
                Default::default();
            for (i, &(key, count)) in keyed.iter().enumerate() {
                if i > 0 && key == keyed[i - 1].0 {
                    *want_rows.last_mut().unwrap() += count;
                    continue;
                }
                if i == 0 || key >> low != keyed[i - 1].0 >> low {
                    want_starts.push(want_rows.len());
                }
                want_rows.push(count);
                want_leaf.push([(key >> 7 & 7) as u32, (key & 127) as u32]);
            }
            assert_eq!(pairs.starts, want_starts, "n {n}");
            assert_eq!(pairs.rows, want_rows, "n {n}");
            let leaf: Vec<[u32; 2]> = (0..want_rows.len()).map(|i| [pairs.leaf[0][i], pairs.leaf[1][i]]).collect();
            assert_eq!(leaf, want_leaf, "n {n}");
            let person_rows: Vec<u64> =
                (0..want_starts.len()).map(|p| want_rows[want_starts[p]..pairs.end(p)].iter().sum()).collect();
            assert_eq!(pairs.person_rows, person_rows, "n {n}");
            let mut tuples: Vec<u64> = keyed.iter().map(|k| k.0 & ((1 << low) - 1)).collect();
            tuples.sort_unstable();
            tuples.dedup();
            assert_eq!(pool.install(|| distinct_tuples(&keyed, low)), tuples.len() as u64, "n {n}");
        }
    }
}
