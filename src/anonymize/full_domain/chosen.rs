//! The stage after the full-domain search: the chosen node measured. Its
//! classes are judged by the per-class models, its suppressed classes read
//! and its am computed, from the classes in memory or in one scan of its
//! frequency set ([`measure`]).

use super::verdicts::Judged;
use crate::data::hierarchy::divisors;
use crate::evaluator::classes::full_domain_ambiguity;
use crate::evaluator::{Evaluator, NodeClasses};
use crate::lattice::Node;
use crate::load::Loaded;
use crate::measure::metrics::{class_loss, classes_ambiguity, Histogram, Requirement};
use crate::release::Recoding;
use crate::sql::{self, list, render};
use anyhow::Result;
use std::collections::HashSet;

/// The chosen node, measured.
pub(super) struct Measured {
    /// The classes the release suppresses, by their codes at the node's levels.
    pub(crate) dropped: Vec<Box<[i64]>>,
    /// Or the remote engine's work table that holds them, when the evaluator ran there.
    pub(crate) dropped_there: Option<String>,
    pub(crate) am: f64,
    /// The node's classes judged by the per-class models.
    pub(crate) judged: Judged,
    /// The released classes' (size, count), from the node's histogram.
    pub(crate) release_sizes: Vec<(u64, u64)>,
    /// The node judged again: with `[privacy] person`, with dm, which the
    /// search may not have computed; with risk limits, by shape.
    pub(crate) outcome: Option<crate::measure::metrics::Outcome>,
    /// Exact k-map and δ-presence: what the released classes reach.
    pub(crate) presence: Option<Presence>,
}

/// Measure the node at `levels` the search chose (read while the evaluator
/// and the base frequency set exist).
pub(super) fn measure(source: &Loaded, ev: &mut Evaluator, req: &Requirement, levels: &[u8]) -> Result<Measured> {
    let node = Node::full(levels.to_vec());
    if let Some(persons) = ev.persons() {
        // Persons of the classes under k go with all their rows: a table the release anti-joins.
        let (histogram, am) = persons.chosen(levels, req.k, &source.data)?;
        let outcome = Some(histogram.outcome(levels, req, &source.data));
        let release_sizes = histogram.kept_sizes(req);
        let judged = Judged::default();
        return Ok(Measured {
            dropped: Vec::new(),
            dropped_there: None,
            am,
            judged,
            release_sizes,
            outcome,
            presence: None,
        });
    }
    // With risk limits, which classes of one size they take matters to glm
    // and the release: judged again by shape (the search's dm need not).
    let histogram = if req.risk.is_some() { ev.histogram_by_shape(&node)? } else { ev.histogram(&node)? };
    let outcome = req.risk.is_some().then(|| histogram.outcome(levels, req, &source.data));
    let release_sizes = histogram.kept_sizes(req);
    if let Some(there) = ev.on_engine() {
        // The classes stay on the engine: their distinct value lists judged
        // here, the suppressed ones a work table there (or here, when few and
        // the node's set is here too), am summed where the set is.
        let judged = Judged::there(there.judge_there(levels, req)?);
        let (dropped, dropped_there) = match there.suppressed_here(levels, req)? {
            Some(dropped) => (dropped, None),
            None => (Vec::new(), Some(there.suppress_there(levels, req)?)),
        };
        let am = there.ambiguity(levels, req, &source.data)?;
        return Ok(Measured { dropped, dropped_there, am, judged, release_sizes, outcome: None, presence: None });
    }
    let mut classes = ev.classes(&node);
    // The classes' value lists: from the set in memory, else off the base frequency set.
    let judged = match &mut classes {
        Some(c) => Judged::of_classes(source, &c.codes, std::mem::take(&mut c.lists)),
        None => Judged::read(source, levels)?,
    };
    let (dropped, am, presence) = match classes {
        Some(classes) => in_memory(source, req, &judged, &classes, &histogram, levels),
        None => {
            // One scan for am and the suppressed classes: of the node's set if kept, else of the base.
            write_node_classes(source, levels, ev.kept_set(&node).as_ref())?;
            let am = full_domain_ambiguity(&source.conn, levels, req, &judged.rejected, &source.data)?;
            let dropped = suppressed_classes(source, levels, req, &judged)?;
            // Read; at scale it holds gigabytes of the pool the release wants.
            source.conn.execute_batch(sql::fragment(sql::NODE_CLASSES, "drop"))?;
            (dropped, am, None)
        }
    };
    Ok(Measured { dropped, dropped_there: None, am, judged, release_sizes, outcome, presence })
}

/// The classes in memory: the suppressed ones and am without another scan.
fn in_memory(
    source: &Loaded,
    req: &Requirement,
    judged: &Judged,
    classes: &NodeClasses,
    histogram: &Histogram,
    levels: &[u8],
) -> (Vec<Box<[i64]>>, f64, Option<Presence>) {
    let rejected: HashSet<&[i64]> = judged.rejected.iter().map(|c| &c[..]).collect();
    let l = req.l.unwrap_or(0);
    let ldiv = |c: usize| classes.ldiv.get(c).map_or(0, |&d| d);
    // Exact k-map and δ-presence: each class against the population's class of its codes.
    let population = source.population.as_ref().map(|p| (p, p.classes_at(levels)));
    let present =
        |c: usize| population.as_ref().is_none_or(|(p, at)| p.admits(classes.size[c], at.of(&classes.codes[c])));
    let passes =
        |c: usize| classes.size[c] >= req.k && ldiv(c) >= l && !rejected.contains(&classes.codes[c][..]) && present(c);
    let by_limits = limit_suppressed(req, classes, histogram, &source.data.leaves, &passes);
    let kept = |c: usize| passes(c) && !by_limits.contains(&c);
    let am = classes_ambiguity(&classes.size, &classes.leaves, kept, &source.data);
    let dropped = (0..classes.size.len()).filter(|&c| !kept(c)).map(|c| classes.codes[c].clone()).collect();
    let presence = population.as_ref().map(|(_, at)| {
        let mut out = Presence { delta: None, smallest: None };
        for c in (0..classes.size.len()).filter(|&c| kept(c)) {
            let big_f = at.of(&classes.codes[c]);
            let delta = classes.size[c] as f64 / big_f as f64;
            out.delta = Some(out.delta.map_or((delta, delta), |(lo, hi): (f64, f64)| (lo.min(delta), hi.max(delta))));
            out.smallest = Some(out.smallest.map_or(big_f, |s: u64| s.min(big_f)));
        }
        out
    });
    (dropped, am, presence)
}

/// What the released classes reach against the population: the least and
/// largest δ (records over population records) and the smallest population class.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Presence {
    pub(crate) delta: Option<(f64, f64)>,
    pub(crate) smallest: Option<u64>,
}

/// The classes the risk limits suppress beyond k and ℓ: per bucket of the
/// node's histogram, as many of its kept classes as the limits take, the
/// least lossy first (glm's loss of a record of their shape), then by shape
/// and codes. A bucket with a shape (glm's histograms) takes its own shape's
/// classes only.
fn limit_suppressed(
    req: &Requirement,
    classes: &NodeClasses,
    histogram: &Histogram,
    leaves: &[u64],
    passes: &dyn Fn(usize) -> bool,
) -> HashSet<usize> {
    let gone = histogram.limit_suppressed(req, leaves);
    let mut out = HashSet::new();
    if gone.iter().all(|&g| g == 0) {
        return out;
    }
    let shape = |c: usize| classes.shapes.get(c).map(|s| &s[..]);
    let loss = |c: usize| shape(c).map_or(0.0, |s| class_loss(s, leaves));
    let mut order: Vec<usize> = (0..classes.size.len()).filter(|&c| passes(c)).collect();
    order.sort_by(|&a, &b| {
        (loss(a).total_cmp(&loss(b)))
            .then_with(|| shape(a).cmp(&shape(b)))
            .then_with(|| classes.codes[a].cmp(&classes.codes[b]))
    });
    for (bucket, &g) in histogram.buckets.iter().zip(&gone).filter(|(_, &g)| g > 0) {
        let of_bucket = order.iter().filter(|&&c| {
            classes.size[c] == bucket.size
                && classes.ldiv.get(c).map_or(0, |&d| d) == bucket.ldiv
                && bucket.shape.as_deref().is_none_or(|s| shape(c) == Some(s))
                && !out.contains(&c)
        });
        let taken: Vec<usize> = of_bucket.take(g as usize).copied().collect();
        out.extend(taken);
    }
    out
}

/// The recoding of a full-domain node: the classes `req` suppresses at
/// `levels`, read off the base frequency set (which may be dropped after).
pub fn recoding(source: &Loaded, levels: &[u8], req: &Requirement) -> Result<Recoding> {
    write_node_classes(source, levels, None)?;
    let dropped = suppressed_classes(source, levels, req, &Judged::read(source, levels)?)?;
    Ok(Recoding::Levels { levels: levels.to_vec(), dropped, dropped_there: None, persons_dropped: false })
}

/// The classes a node suppresses: those under k or ℓ in `kanon_node_classes`
/// (written by [`write_node_classes`]), and those the per-class models reject.
fn suppressed_classes(source: &Loaded, levels: &[u8], req: &Requirement, judged: &Judged) -> Result<Vec<Box<[i64]>>> {
    let n = levels.len();
    let q = render(
        sql::fragment(sql::NODE_CLASSES, "suppressed"),
        &[("class_cols", &list(0..n, ", ", |a| format!("c.c{a}")))],
    );
    let mut stmt = source.conn.prepare(&q)?;
    let mut rows = stmt.query(duckdb::params![req.k as i64, req.l.unwrap_or(0) as i64])?;
    let mut dropped = Vec::new();
    while let Some(r) = rows.next()? {
        dropped.push((0..n).map(|a| r.get::<_, i64>(a)).collect::<duckdb::Result<Box<[i64]>>>()?);
    }
    crate::trace(|| format!("suppressed classes: {}", dropped.len()));
    if !judged.rejected.is_empty() {
        // Only with per-class models: a copy of every suppressed class is no small thing at 10⁹ rows.
        let known: HashSet<Box<[i64]>> = dropped.iter().cloned().collect();
        dropped.extend(judged.rejected.iter().filter(|c| !known.contains(*c)).cloned());
    }
    Ok(dropped)
}

/// A full-domain node's classes into `kanon_node_classes`, read by the
/// suppressed classes and am: one scan of the base frequency set, or of the
/// node's own frequency set when the SQL evaluator kept it (`kept`: its
/// table and node id), which at scale is a fraction of the base.
fn write_node_classes(source: &Loaded, levels: &[u8], kept: Option<&(String, i64)>) -> Result<()> {
    let n = levels.len();
    let ldiv = if source.extras.sensitive { "count(DISTINCT p.s)" } else { "0" };
    crate::trace(|| format!("node classes from {}", kept.map_or("the base frequency set", |k| k.0.as_str())));
    match kept {
        Some((table, id)) => {
            let q = render(
                sql::fragment(sql::NODE_CLASSES, "node_classes_kept"),
                &[
                    ("classes", &list(0..n, ", ", |a| format!("p.g{a}::BIGINT AS c{a}"))),
                    ("ldiv", ldiv),
                    ("kept", table),
                ],
            );
            source.conn.execute(&q, [id])?;
        }
        None => {
            let div = divisors(&source.conn, n)?;
            let q = render(
                sql::fragment(sql::NODE_CLASSES, "node_classes"),
                &[
                    (
                        "classes",
                        &list(0..n, ", ", |a| format!("(p.g{a} // {})::BIGINT AS c{a}", div[a][levels[a] as usize])),
                    ),
                    ("ldiv", ldiv),
                ],
            );
            source.conn.execute_batch(&q)?;
        }
    }
    Ok(())
}
