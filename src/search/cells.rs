//! The cells of cell-based generalization (Nergiz & Clifton): what one QI of
//! one cluster is released as, and what it costs.
//!
//! A QI's values are numbered 0.. in the order the pass takes them (leaf code
//! order for CDGH, value order for CNDGH). A [`Cell`] covers some of them:
//! - CDGH: a hierarchy node, LM(v) = (leaves under v − 1) / (leaves − 1);
//! - CNDGH, numeric QI: a range [lo, hi], LM = (hi − lo) / (column max − column min);
//! - CNDGH, any other QI: a set, LM = (|set| − 1) / (distinct values − 1).

use rustc_hash::FxHasher;
use std::hash::{Hash, Hasher};

/// One QI of one cluster.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Cell {
    /// A hierarchy node (its id in [`CellDomain::Hierarchy`]).
    Node(u32),
    /// Values lo..=hi in value order.
    Range(u32, u32),
    /// Sorted value numbers.
    Set(Vec<u32>),
}

/// One QI's domain.
#[derive(Debug, Clone)]
pub(crate) enum CellDomain {
    /// CDGH. Leaves are numbered in leaf-code order, so the leaves under a
    /// node are `first[node]..first[node] + leaves[node]`.
    Hierarchy {
        /// Per leaf, per level (leaf-major, `height + 1` a leaf): the node id
        /// of its ancestor at that level. One leaf's ancestors share a cache line.
        anc: Vec<u32>,
        stride: usize,
        /// The same rows padded to 8 levels, each with its nodes' LMs (empty
        /// when a hierarchy is higher): the pass compares a whole row at once
        /// ([`CellDomain::value_row`]).
        anc8: Vec<([u32; 8], [f64; 8])>,
        /// Per node: level, first leaf, leaves under it, LM and label.
        level: Vec<u8>,
        first: Vec<u32>,
        leaves: Vec<u32>,
        lm: Vec<f64>,
        labels: Vec<Option<String>>,
        /// Per leaf: its text (None for a NULL leaf).
        leaf_text: Vec<Option<String>>,
    },
    /// CNDGH, a numeric QI without NULLs: values in numeric order.
    Range { values: Vec<f64>, text: Vec<String>, integer: bool },
    /// CNDGH, any other QI: values in value order.
    Set { text: Vec<Option<String>> },
}

impl CellDomain {
    /// A CDGH domain from the hierarchy's leaves in code order: each leaf's
    /// text and its code at every level (`codes[leaf][level]`), and the label
    /// of each (level, code).
    pub(crate) fn hierarchy(
        leaf_text: Vec<Option<String>>,
        codes: &[Vec<i64>],
        label: impl Fn(usize, i64) -> Option<String>,
    ) -> CellDomain {
        let stride = codes.first().map_or(0, |c| c.len());
        let total = leaf_text.len();
        let (mut level, mut first, mut leaves, mut labels) = (vec![], vec![], vec![], vec![]);
        let mut anc = vec![0u32; total * stride];
        for l in 0..stride {
            for (i, c) in codes.iter().enumerate() {
                // Leaves are in code order, so a node's leaves are consecutive.
                if i == 0 || codes[i - 1][l] != c[l] {
                    level.push(l as u8);
                    first.push(i as u32);
                    leaves.push(0);
                    labels.push(label(l, c[l]));
                }
                *leaves.last_mut().expect("pushed") += 1;
                anc[i * stride + l] = level.len() as u32 - 1;
            }
        }
        let lm: Vec<f64> =
            leaves.iter().map(|&n| if total > 1 { (n - 1) as f64 / (total - 1) as f64 } else { 0.0 }).collect();
        let anc8 = if stride <= 8 {
            anc.chunks(stride.max(1))
                .map(|row| {
                    let nodes: [u32; 8] = std::array::from_fn(|u| row.get(u).copied().unwrap_or(u32::MAX));
                    // A leaf's LM is 0 and padding's too.
                    let lms = std::array::from_fn(|u| match nodes[u] {
                        node if u > 0 && node != u32::MAX => lm[node as usize],
                        _ => 0.0,
                    });
                    (nodes, lms)
                })
                .collect()
        } else {
            Vec::new()
        };
        CellDomain::Hierarchy { anc, stride, anc8, level, first, leaves, lm, labels, leaf_text }
    }

    /// The cell of one value.
    pub(crate) fn leaf(&self, v: u32) -> Cell {
        match self {
            CellDomain::Hierarchy { anc, stride, .. } => Cell::Node(anc[v as usize * stride]),
            CellDomain::Range { .. } => Cell::Range(v, v),
            CellDomain::Set { .. } => Cell::Set(vec![v]),
        }
    }

    /// LM of a cell.
    pub(crate) fn lm(&self, c: &Cell) -> f64 {
        match (self, c) {
            (CellDomain::Hierarchy { lm, .. }, Cell::Node(x)) => lm[*x as usize],
            (CellDomain::Range { values, .. }, Cell::Range(lo, hi)) => {
                let span = values[values.len() - 1] - values[0];
                if span > 0.0 {
                    (values[*hi as usize] - values[*lo as usize]) / span
                } else {
                    0.0
                }
            }
            (CellDomain::Set { text }, Cell::Set(s)) => {
                if text.len() > 1 {
                    (s.len() - 1) as f64 / (text.len() - 1) as f64
                } else {
                    0.0
                }
            }
            _ => unreachable!("a cell of another domain"),
        }
    }

    /// The hierarchy node covering node `x` and leaf `v`: their lowest common
    /// ancestor (`x` itself when it covers `v`).
    #[inline(always)]
    fn lca(anc: &[u32], stride: usize, level: &[u8], first: &[u32], x: u32, v: u32) -> u32 {
        let l = level[x as usize] as usize;
        let of_v = &anc[v as usize * stride..][..stride];
        if of_v[l] == x {
            return x;
        }
        let of_x = &anc[first[x as usize] as usize * stride..][..stride];
        (l + 1..stride).map(|l| of_v[l]).zip(&of_x[l + 1..]).find(|(a, b)| a == *b).map_or(of_v[stride - 1], |(a, _)| a)
    }

    /// A hierarchy node's ancestors at every level (those below its level are
    /// its first leaf's) padded to 8 levels, and its level: what
    /// [`node_lm_with`] reads. None for other domains and for
    /// hierarchies of more than 8 levels.
    pub(crate) fn node_row(&self, c: &Cell) -> Option<([u32; 8], u8)> {
        match (self, c) {
            (CellDomain::Hierarchy { anc8, first, level, .. }, Cell::Node(x)) if !anc8.is_empty() => {
                // Padding that never equals a leaf's (u32::MAX).
                let row = anc8[first[*x as usize] as usize].0.map(|n| if n == u32::MAX { u32::MAX - 1 } else { n });
                Some((row, level[*x as usize]))
            }
            _ => None,
        }
    }

    /// A value's ancestors (as in [`CellDomain::node_row`]) and their LMs: what
    /// [`node_lm_with`] compares a cluster's node row with. Read once per
    /// record, so each try finds both in the same few cache lines.
    #[inline]
    pub(crate) fn value_row(&self, v: u32) -> ([u32; 8], [f64; 8]) {
        let CellDomain::Hierarchy { anc8, .. } = self else { unreachable!("a hierarchy QI") };
        anc8[v as usize]
    }

    /// LM of the smallest cell covering `c` and value `v` (without building it).
    #[inline]
    pub(crate) fn lm_with(&self, c: &Cell, v: u32) -> f64 {
        match (self, c) {
            (CellDomain::Hierarchy { anc, stride, level, first, lm, .. }, Cell::Node(x)) => {
                lm[Self::lca(anc, *stride, level, first, *x, v) as usize]
            }
            (CellDomain::Range { .. }, Cell::Range(lo, hi)) => self.lm(&Cell::Range(v.min(*lo), v.max(*hi))),
            (CellDomain::Set { text }, Cell::Set(s)) => {
                let n = s.len() + usize::from(s.binary_search(&v).is_err());
                if text.len() > 1 {
                    (n - 1) as f64 / (text.len() - 1) as f64
                } else {
                    0.0
                }
            }
            _ => unreachable!("a cell of another domain"),
        }
    }

    /// Grow `c` to cover value `v`.
    pub(crate) fn add(&self, c: &mut Cell, v: u32) {
        match (self, c) {
            (CellDomain::Hierarchy { anc, stride, level, first, .. }, Cell::Node(x)) => {
                *x = Self::lca(anc, *stride, level, first, *x, v)
            }
            (CellDomain::Range { .. }, Cell::Range(lo, hi)) => {
                *lo = (*lo).min(v);
                *hi = (*hi).max(v);
            }
            (CellDomain::Set { .. }, Cell::Set(s)) => {
                if let Err(i) = s.binary_search(&v) {
                    s.insert(i, v);
                }
            }
            _ => unreachable!("a cell of another domain"),
        }
    }

    /// The smallest cell covering both.
    pub(crate) fn merge(&self, a: &Cell, b: &Cell) -> Cell {
        match (self, a, b) {
            (CellDomain::Hierarchy { first, .. }, Cell::Node(_), Cell::Node(y)) => {
                // Covering b's first leaf and b's level covers b.
                let mut c = a.clone();
                self.add(&mut c, first[*y as usize]);
                if let (CellDomain::Hierarchy { anc, stride, level, .. }, Cell::Node(x)) = (self, &mut c) {
                    if level[*x as usize] < level[*y as usize] {
                        *x = anc[first[*x as usize] as usize * stride + level[*y as usize] as usize];
                    }
                }
                c
            }
            (_, Cell::Range(a0, a1), Cell::Range(b0, b1)) => Cell::Range(*a0.min(b0), *a1.max(b1)),
            (_, Cell::Set(x), Cell::Set(y)) => {
                let mut s: Vec<u32> = x.iter().chain(y).copied().collect();
                s.sort_unstable();
                s.dedup();
                Cell::Set(s)
            }
            _ => unreachable!("cells of another domain"),
        }
    }

    /// How many leaves (values) the cell stands for: the ambiguity of one cell.
    pub(crate) fn count(&self, c: &Cell) -> f64 {
        match (self, c) {
            (CellDomain::Hierarchy { leaves, .. }, Cell::Node(x)) => leaves[*x as usize] as f64,
            (CellDomain::Range { values, integer: true, .. }, Cell::Range(lo, hi)) => {
                values[*hi as usize] - values[*lo as usize] + 1.0
            }
            (CellDomain::Range { .. }, Cell::Range(lo, hi)) => (hi - lo + 1) as f64,
            (CellDomain::Set { .. }, Cell::Set(s)) => s.len() as f64,
            _ => unreachable!("a cell of another domain"),
        }
    }

    /// The whole domain's count: what a suppressed cell stands for.
    pub(crate) fn total(&self) -> f64 {
        match self {
            CellDomain::Hierarchy { leaf_text, .. } => leaf_text.len() as f64,
            CellDomain::Range { values, integer: true, .. } => values[values.len() - 1] - values[0] + 1.0,
            CellDomain::Range { values, .. } => values.len() as f64,
            CellDomain::Set { text } => text.len() as f64,
        }
    }

    /// The released label: the node's label, `lo-hi`, or the values joined by `|`.
    pub(crate) fn label(&self, c: &Cell) -> Option<String> {
        match (self, c) {
            (CellDomain::Hierarchy { labels, .. }, Cell::Node(x)) => labels[*x as usize].clone(),
            (CellDomain::Range { text, .. }, Cell::Range(lo, hi)) if lo == hi => Some(text[*lo as usize].clone()),
            (CellDomain::Range { text, .. }, Cell::Range(lo, hi)) => {
                Some(format!("{}-{}", text[*lo as usize], text[*hi as usize]))
            }
            (CellDomain::Set { text }, Cell::Set(s)) if s.len() == 1 => text[s[0] as usize].clone(),
            (CellDomain::Set { text }, Cell::Set(s)) => {
                Some(s.iter().map(|&v| text[v as usize].as_deref().unwrap_or("NULL")).collect::<Vec<_>>().join("|"))
            }
            _ => unreachable!("a cell of another domain"),
        }
    }

    /// A leaf drawn uniformly from those the cell stands for, by the random
    /// number `r`: a hierarchy leaf under the node, a member of the set, an
    /// integer in the range (a non-integer column: one of its values in it).
    pub(crate) fn draw(&self, c: &Cell, r: u64) -> Option<String> {
        let pick = |n: u64| ((r as u128 * n as u128) >> 64) as u64;
        match (self, c) {
            (CellDomain::Hierarchy { first, leaves, leaf_text, .. }, Cell::Node(x)) => {
                leaf_text[(first[*x as usize] as u64 + pick(leaves[*x as usize] as u64)) as usize].clone()
            }
            (CellDomain::Range { values, text, integer: true }, Cell::Range(lo, hi)) => {
                if lo == hi {
                    return Some(text[*lo as usize].clone());
                }
                let (a, b) = (values[*lo as usize] as i64, values[*hi as usize] as i64);
                Some((a + pick((b - a + 1) as u64) as i64).to_string())
            }
            (CellDomain::Range { text, .. }, Cell::Range(lo, hi)) => {
                Some(text[(*lo as u64 + pick((hi - lo + 1) as u64)) as usize].clone())
            }
            (CellDomain::Set { text }, Cell::Set(s)) => text[s[pick(s.len() as u64) as usize] as usize].clone(),
            _ => unreachable!("a cell of another domain"),
        }
    }
}

/// The random number of one cell of the reconstruction: a hash of the seed,
/// the record's source position and the QI, so it does not depend on the
/// order threads meet the rows in.
pub(crate) fn cell_random(seed: u64, position: u64, qi: usize) -> u64 {
    let mut h = FxHasher::default();
    (seed, position, qi as u64).hash(&mut h);
    // FxHash mixes weakly; finish with splitmix64's finalizer.
    let mut z = h.finish().wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// [`CellDomain::lm_with`] for a hierarchy node given by its [`CellDomain::node_row`]
/// and a value given by its [`CellDomain::value_row`]: the pass keeps node rows
/// beside each open cluster, so a try compares two rows of 8 and reads one
/// LM, with no branch.
#[inline(always)]
pub(crate) fn node_lm_with(row: &[u32; 8], above: u32, value: &([u32; 8], [f64; 8])) -> f64 {
    let (of_v, lms) = value;
    // The lowest level at or above the node's (bits `above`) where v's
    // ancestor is the node's (the top is common to every leaf).
    let up = (same_levels(of_v, row) & above).trailing_zeros() as usize;
    lms[up & 7]
}

/// [`node_lm_with`] by one 256-bit compare, for a pass compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
pub(crate) fn node_lm_with_avx2(row: &[u32; 8], above: u32, value: &([u32; 8], [f64; 8])) -> f64 {
    use std::arch::x86_64::{_mm256_castsi256_ps, _mm256_cmpeq_epi32, _mm256_loadu_si256, _mm256_movemask_ps};
    let (of_v, lms) = value;
    // SAFETY: each load reads one array's 32 bytes, unaligned loads being allowed.
    let same = unsafe {
        let eq = _mm256_cmpeq_epi32(_mm256_loadu_si256(of_v.as_ptr().cast()), _mm256_loadu_si256(row.as_ptr().cast()));
        _mm256_movemask_ps(_mm256_castsi256_ps(eq)) as u32
    };
    lms[((same & above).trailing_zeros() as usize) & 7]
}

/// Bit u set where the two rows agree at level u.
#[inline(always)]
fn same_levels(x: &[u32; 8], y: &[u32; 8]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{
            _mm_cmpeq_epi32, _mm_loadu_si128, _mm_movemask_epi8, _mm_packs_epi16, _mm_packs_epi32,
        };
        // SAFETY: SSE2 is in every x86_64 CPU's baseline; each load reads
        // 16 of an array's 32 bytes, unaligned loads being allowed.
        unsafe {
            let (x, y) =
                (x.as_ptr().cast::<std::arch::x86_64::__m128i>(), y.as_ptr().cast::<std::arch::x86_64::__m128i>());
            let low = _mm_cmpeq_epi32(_mm_loadu_si128(x), _mm_loadu_si128(y));
            let high = _mm_cmpeq_epi32(_mm_loadu_si128(x.add(1)), _mm_loadu_si128(y.add(1)));
            let words = _mm_packs_epi32(low, high);
            (_mm_movemask_epi8(_mm_packs_epi16(words, words)) as u32) & 0xFF
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        (0..8).fold(0, |m, u| m | (u32::from(x[u] == y[u]) << u))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// age 0..=5 under [0-2], [3-5] under *.
    fn ages() -> CellDomain {
        let codes: Vec<Vec<i64>> = (0..6).map(|i| vec![i, i / 3, 0]).collect();
        CellDomain::hierarchy((0..6).map(|i| Some(i.to_string())).collect(), &codes, |l, c| {
            Some(match l {
                0 => c.to_string(),
                1 => ["[0-2]", "[3-5]"][c as usize].into(),
                _ => "*".into(),
            })
        })
    }

    #[test]
    fn hierarchy_cells_climb_to_the_lowest_common_ancestor() {
        let d = ages();
        let mut c = d.leaf(1);
        assert_eq!(d.lm(&c), 0.0);
        assert!((d.lm_with(&c, 2) - 2.0 / 5.0).abs() < 1e-12);
        d.add(&mut c, 2);
        assert_eq!(d.label(&c).as_deref(), Some("[0-2]"));
        assert_eq!(d.count(&c), 3.0);
        assert_eq!(d.lm_with(&c, 5), 1.0);
        let m = d.merge(&c, &d.leaf(4));
        assert_eq!(d.label(&m).as_deref(), Some("*"));
        // A leaf merged with a node above it takes the node.
        let top = d.merge(&d.leaf(0), &c);
        assert_eq!(top, c);
        for r in [0, u64::MAX / 3, u64::MAX] {
            let v: u32 = d.draw(&c, r).unwrap().parse().unwrap();
            assert!(v <= 2);
        }
    }

    #[test]
    fn natural_cells_are_ranges_and_sets() {
        let r = CellDomain::Range {
            values: vec![10.0, 12.0, 20.0],
            text: vec!["10".into(), "12".into(), "20".into()],
            integer: true,
        };
        let c = r.merge(&r.leaf(0), &r.leaf(1));
        assert_eq!(r.label(&c).as_deref(), Some("10-12"));
        assert!((r.lm(&c) - 0.2).abs() < 1e-12);
        assert_eq!(r.count(&c), 3.0);
        let s = CellDomain::Set { text: vec![Some("a".into()), Some("b".into()), Some("c".into())] };
        let mut c = s.leaf(2);
        s.add(&mut c, 0);
        assert_eq!(s.label(&c).as_deref(), Some("a|c"));
        assert!((s.lm(&c) - 0.5).abs() < 1e-12);
        assert_eq!(s.lm_with(&c, 2), 0.5);
    }
}
