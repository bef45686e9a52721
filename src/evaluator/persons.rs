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

use super::memory::ints;
use crate::data::hierarchy::{self, node_table};
use crate::lattice::Node;
use crate::measure::metrics::{Bucket, Histogram, PersonRows};
use crate::sql::{self, list, render};
use anyhow::Result;
use duckdb::Connection;
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

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
}

pub(crate) struct PersonSets<'c> {
    conn: &'c Connection,
    divisors: Vec<Vec<i64>>,
    qis: Vec<Levels>,
    /// None: every node runs as SQL (asked, or tuples wider than 128 bits).
    pairs: Option<Pairs>,
}

/// A person's signature: two sums of hashes over its distinct tuples and their number.
type Signature = (u64, u64, u32);

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
    pub(crate) fn new(conn: &'c Connection, heights: &[u8], memory: bool) -> Result<PersonSets<'c>> {
        let n = heights.len();
        let divisors = hierarchy::divisors(conn, n)?;
        let mut qis = Vec::with_capacity(n);
        let mut lookups: Vec<FxHashMap<i64, u32>> = Vec::with_capacity(n);
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
            lookups.push(codes.iter().enumerate().map(|(i, &c)| (c, i as u32)).collect());
            qis.push(Levels { index, leaves_m1, bits });
        }
        let packs = qis.iter().map(|q| q.bits).sum::<u32>() <= u128::BITS;
        let pairs = if memory && packs { Some(read_pairs(conn, &lookups)?) } else { None };
        Ok(PersonSets { conn, divisors, qis, pairs })
    }

    /// In memory (true) or as SQL.
    pub(crate) fn in_memory(&self) -> bool {
        self.pairs.is_some()
    }

    /// Distinct QI combinations of the source.
    pub(crate) fn combinations(&self) -> Result<u64> {
        let codes = list(0..self.qis.len(), ", ", |a| format!("g{a}"));
        let q = render(sql::fragment(sql::PERSONS, "combinations"), &[("codes", &codes)]);
        Ok(self.conn.query_row(&q, [], |r| r.get::<_, i64>(0))? as u64)
    }

    pub(crate) fn histograms(&self, nodes: &[Node]) -> Result<Vec<(Node, Histogram)>> {
        nodes.iter().map(|node| Ok((node.clone(), self.histogram(node)?))).collect()
    }

    fn histogram(&self, node: &Node) -> Result<Histogram> {
        match &self.pairs {
            Some(pairs) => Ok(self.memory_histogram(pairs, node)),
            None => self.sql_histogram(node),
        }
    }

    /// Write the person codes of `levels`' classes of fewer than `k` persons
    /// into `kanon_dropped_persons`; returns how many.
    pub(crate) fn drop_persons(&self, levels: &[u8], k: u64) -> Result<u64> {
        let node = Node::full(levels.to_vec());
        let dropped: Vec<u32> = match &self.pairs {
            Some(pairs) => {
                let (signatures, classes) = self.signatures(pairs, &node);
                let small = |p: usize| classes[signatures[p]].persons < k;
                (0..pairs.starts.len()).filter(|&p| small(p)).map(|p| pairs.person[pairs.starts[p]]).collect()
            }
            None => {
                let q =
                    format!("{}\n{}", self.signatures_sql(&node), render(sql::fragment(sql::PERSONS, "dropped"), &[]));
                let mut stmt = self.conn.prepare(&q)?;
                let rows = stmt.query_map([k as i64], |r| r.get::<_, i32>(0))?;
                rows.map(|p| Ok(p? as u32)).collect::<Result<_>>()?
            }
        };
        self.conn.execute_batch(sql::fragment(sql::PERSONS, "dropped_table"))?;
        let mut app = self.conn.appender("kanon_dropped_persons")?;
        for &p in &dropped {
            app.append_row([p as i32])?;
        }
        app.flush()?;
        Ok(dropped.len() as u64)
    }

    /// am at `levels` with the persons of `kanon_dropped_persons` suppressed.
    pub(crate) fn ambiguity(&self, levels: &[u8], data: &crate::measure::metrics::Dataset) -> Result<f64> {
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

    /// The node's packed tuple of pair `i`.
    fn tuple(&self, pairs: &Pairs, node: &Node, i: usize) -> u128 {
        let mut key = 0u128;
        for (&a, &l) in node.attrs.iter().zip(&node.levels) {
            let q = &self.qis[a];
            key = (key << q.bits) | q.index[l as usize][pairs.leaf[a][i] as usize] as u128;
        }
        key
    }

    /// Per person its class, and the classes: one pass over the pairs.
    fn signatures(&self, pairs: &Pairs, node: &Node) -> (Vec<usize>, Vec<Class>) {
        let width = node.attrs.len();
        let mut ids: FxHashMap<Signature, usize> = FxHashMap::default();
        let mut classes: Vec<Class> = Vec::new();
        let mut of_person = Vec::with_capacity(pairs.starts.len());
        let mut tuples: Vec<u128> = Vec::new();
        let mut leaf_sums = vec![0u64; width];
        for (p, &start) in pairs.starts.iter().enumerate() {
            let end = pairs.starts.get(p + 1).copied().unwrap_or(pairs.person.len());
            tuples.clear();
            leaf_sums.iter_mut().for_each(|s| *s = 0);
            let mut rows = 0;
            for i in start..end {
                tuples.push(self.tuple(pairs, node, i));
                rows += pairs.rows[i];
                for (j, (&a, &l)) in node.attrs.iter().zip(&node.levels).enumerate() {
                    let q = &self.qis[a];
                    leaf_sums[j] += pairs.rows[i]
                        * q.leaves_m1[l as usize][q.index[l as usize][pairs.leaf[a][i] as usize] as usize];
                }
            }
            tuples.sort_unstable();
            tuples.dedup();
            let signature = tuples.iter().fold((0u64, 0u64, tuples.len() as u32), |(x, y, m), &t| {
                (x.wrapping_add(mix(t, 0x9e37_79b9_7f4a_7c15)), y.wrapping_add(mix(t, 0xd1b5_4a32_d192_ed03)), m)
            });
            let id = *ids.entry(signature).or_insert_with(|| {
                classes.push(Class { leaf_sums: vec![0; width], ..Class::default() });
                classes.len() - 1
            });
            let class = &mut classes[id];
            class.persons += 1;
            class.rows += rows;
            class.leaf_sums.iter_mut().zip(&leaf_sums).for_each(|(c, s)| *c += s);
            of_person.push(id);
        }
        (of_person, classes)
    }

    fn memory_histogram(&self, pairs: &Pairs, node: &Node) -> Histogram {
        let (of_person, classes) = self.signatures(pairs, node);
        // dm over rows: per released tuple, (class size, rows) of the persons holding it.
        let mut held: Vec<(u128, u64, u64)> = Vec::with_capacity(pairs.person.len());
        for (p, &start) in pairs.starts.iter().enumerate() {
            let end = pairs.starts.get(p + 1).copied().unwrap_or(pairs.person.len());
            let size = classes[of_person[p]].persons;
            held.extend((start..end).map(|i| (self.tuple(pairs, node, i), size, pairs.rows[i])));
        }
        let mut squares: BTreeMap<u64, u64> = BTreeMap::new();
        // Each tuple's rows summed from its largest classes down: a size adds the growth of the square.
        held.sort_unstable_by(|x, y| x.0.cmp(&y.0).then(y.1.cmp(&x.1)));
        let mut i = 0;
        while i < held.len() {
            let mut cum = 0u64;
            let mut j = i;
            while j < held.len() && held[j].0 == held[i].0 {
                let size = held[j].1;
                let before = cum;
                while j < held.len() && held[j].0 == held[i].0 && held[j].1 == size {
                    cum += held[j].2;
                    j += 1;
                }
                *squares.entry(size).or_default() += cum * cum - before * before;
            }
            i = j;
        }
        let mut by_size: BTreeMap<u64, Class> = BTreeMap::new();
        for c in &classes {
            let b = by_size
                .entry(c.persons)
                .or_insert_with(|| Class { leaf_sums: vec![0; c.leaf_sums.len()], ..Class::default() });
            b.persons += 1;
            b.rows += c.rows;
            b.leaf_sums.iter_mut().zip(&c.leaf_sums).for_each(|(x, y)| *x += y);
        }
        let buckets = by_size
            .into_iter()
            .map(|(size, b)| Bucket {
                size,
                ldiv: 0,
                admitted: true,
                classes: b.persons,
                leaf_sums: b.leaf_sums,
                minority: 0,
                squares: 0,
                rows: Some(PersonRows { rows: b.rows, squares: squares.get(&size).copied().unwrap_or(0) }),
            })
            .collect();
        Histogram { buckets }
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

/// A 64-bit mix of a packed tuple (splitmix64's finalizer over both halves).
fn mix(t: u128, seed: u64) -> u64 {
    let step = |mut z: u64| {
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    step(step((t as u64) ^ seed) ^ ((t >> 64) as u64))
}

/// `kanon_f0`'s pairs, sorted by person, leaf codes as leaf indexes.
fn read_pairs(conn: &Connection, lookups: &[FxHashMap<i64, u32>]) -> Result<Pairs> {
    let n = lookups.len();
    let q = render(sql::fragment(sql::PERSONS, "pairs"), &[("codes", &list(0..n, ", ", |a| format!("g{a}")))]);
    let mut stmt = conn.prepare(&q)?;
    let mut pairs = Pairs { person: Vec::new(), leaf: vec![Vec::new(); n], rows: Vec::new(), starts: Vec::new() };
    let mut buf = Vec::new();
    for batch in stmt.query_arrow([])? {
        buf.clear();
        ints(batch.column(0).as_ref(), &mut buf)?;
        pairs.person.extend(buf.iter().map(|&p| p as u32));
        for (a, lookup) in lookups.iter().enumerate() {
            buf.clear();
            ints(batch.column(1 + a).as_ref(), &mut buf)?;
            for &c in &buf {
                pairs.leaf[a].push(*lookup.get(&c).ok_or_else(|| anyhow::anyhow!("leaf code {c} of QI {a} unknown"))?);
            }
        }
        buf.clear();
        ints(batch.column(1 + n).as_ref(), &mut buf)?;
        pairs.rows.extend(buf.iter().map(|&r| r as u64));
    }
    pairs.starts = (0..pairs.person.len()).filter(|&i| i == 0 || pairs.person[i] != pairs.person[i - 1]).collect();
    Ok(pairs)
}
