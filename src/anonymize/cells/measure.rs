//! A cell-based release's measures over its equivalence classes: lm, am, dm,
//! cm, k and ℓ, from the pass's clusters.

use super::pass::Pass;
use crate::search::cbg::SUPPRESSED;
use crate::search::cells::CellDomain;
use rustc_hash::FxHashMap;

/// The release's measures over its equivalence classes (identical released
/// QI tuples: clusters with the same cells on every QI form one class).
pub(crate) struct Measured {
    pub(crate) lm: f64,
    pub(crate) am: f64,
    pub(crate) dm: f64,
    pub(crate) cm: Option<f64>,
    pub(crate) k: Option<u64>,
    pub(crate) l: Option<u64>,
    pub(crate) classes: u64,
}

pub(crate) fn measure(pass: &Pass, domains: &[CellDomain], rows: u64) -> Measured {
    let c = &pass.clusters;
    let n = domains.len();
    let (mut lm, mut am) = (0.0, 0.0);
    let mut class_of: Vec<u32> = Vec::with_capacity(c.sizes.len());
    let mut classes: FxHashMap<&[u32], u32> = FxHashMap::default();
    let mut sizes: Vec<u64> = Vec::new();
    for (i, &size) in c.sizes.iter().enumerate() {
        let cells = &c.cells[i * n..(i + 1) * n];
        let (mut s, mut p) = (0.0, 1.0);
        for (a, d) in domains.iter().enumerate() {
            let cell = &c.distinct[a][cells[a] as usize];
            s += d.lm(cell);
            p *= d.count(cell);
        }
        lm += size as f64 * s;
        am += size as f64 * p;
        let next = sizes.len() as u32;
        let class = *classes.entry(cells).or_insert(next);
        if class == next {
            sizes.push(0);
        }
        sizes[class as usize] += size;
        class_of.push(class);
    }
    let suppressed = c.suppressed;
    lm += (suppressed * n as u64) as f64;
    am += suppressed as f64 * domains.iter().map(|d| d.total()).product::<f64>();
    let dm = sizes.iter().map(|s| (s * s) as f64).sum::<f64>() + (suppressed * rows) as f64;
    // Per class: distinct sensitive values; records of the majority label.
    let per_class = |codes: &[u32]| -> FxHashMap<(u32, u32), u64> {
        let mut m = FxHashMap::default();
        for (&cl, &v) in pass.cluster_of.iter().zip(codes) {
            if cl != SUPPRESSED {
                *m.entry((class_of[cl as usize], v)).or_insert(0) += 1;
            }
        }
        m
    };
    let l = (!pass.sensitive.is_empty()).then(|| {
        let pairs = per_class(&pass.sensitive);
        let mut distinct = vec![0u64; sizes.len()];
        for (class, _) in pairs.keys() {
            distinct[*class as usize] += 1;
        }
        distinct.into_iter().min().unwrap_or(0)
    });
    let cm = (!pass.label.is_empty()).then(|| {
        let mut majority = vec![0u64; sizes.len()];
        for ((class, _), count) in per_class(&pass.label) {
            majority[class as usize] = majority[class as usize].max(count);
        }
        let minority: u64 = sizes.iter().zip(&majority).map(|(s, m)| s - m).sum();
        (minority + suppressed) as f64 / rows as f64
    });
    Measured {
        lm: lm / (rows * n as u64) as f64,
        am: am / rows as f64,
        dm,
        cm,
        k: sizes.iter().copied().min(),
        l,
        classes: sizes.len() as u64,
    }
}
