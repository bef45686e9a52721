//! The re-identification risk of a run, before and after (`risk` in the
//! report): the class sizes f_j of the source and of the release, and with
//! `[risk] population_table` the population's F_j (the table generalized at
//! the released node), handed to [`crate::measure::risk::analyse`].

use crate::data::hierarchy::divisors;
use crate::engine::embedded;
use crate::error::bad;
use crate::evaluator::classes::left_out;
use crate::job::Job;
use crate::load::Loaded;
use crate::measure::risk::{analyse, ClassSizes};
use crate::release::Recoding;
use crate::report::RiskReport;
use crate::sql::{self, ident, list, render};
use anyhow::Result;
use rustc_hash::FxHashMap;

/// Measure the source and the release of `recoding` (read while the base
/// frequency set exists).
/// `release_sizes`: the released classes' (size, count) when the search
/// knows them (read then only without a population table).
pub(super) fn measure(
    source: &Loaded,
    job: &Job,
    recoding: &Recoding,
    source_sizes: Option<Vec<(u64, u64)>>,
    release_sizes: Option<Vec<(u64, u64)>>,
) -> Result<RiskReport> {
    let settings = &job.risk.settings;
    let population = embedded::population_relation(&source.conn, job)?;
    let n = source.data.heights.len();
    let sizes = |s: Vec<(u64, u64)>| -> Vec<ClassSizes> {
        s.into_iter().map(|(size, classes)| ClassSizes { sample: size, population: size, classes }).collect()
    };
    let before = match (recoding, &population, source_sizes) {
        // Counted by the search (the cell pass); no population table reaches cells.
        (_, None, Some(counted)) => sizes(counted),
        (Recoding::Cells(_), _, _) => source_classes(source, job)?,
        // A base frequency set without extra columns has a row per class.
        (_, None, _) if !source.extras.any() => base_sizes(source)?,
        _ => node_classes(source, job, &vec![0; n], &[], population.as_deref())?,
    };
    let after = match (recoding, release_sizes) {
        (Recoding::Levels { .. } | Recoding::Partitions { .. }, Some(release)) if population.is_none() => {
            sizes(release)
        }
        (Recoding::Levels { levels, dropped, .. }, _) => {
            node_classes(source, job, levels, dropped, population.as_deref())?
        }
        (Recoding::Partitions { leaf_codes, blocks, dropped, .. }, _) => {
            partition_classes(source, leaf_codes, blocks, dropped)?
        }
        (Recoding::Cells(rec), _) => {
            let c = &rec.clusters;
            let mut sizes: FxHashMap<&[u32], u64> = FxHashMap::default();
            for (i, &size) in c.sizes.iter().enumerate() {
                *sizes.entry(&c.cells[i * n..(i + 1) * n]).or_default() += size;
            }
            histogram(sizes.into_values())
        }
    };
    Ok(RiskReport { source: analyse(&before, settings), release: analyse(&after, settings) })
}

/// (f, F = f, classes) from class sizes.
fn histogram(sizes: impl Iterator<Item = u64>) -> Vec<ClassSizes> {
    let mut by_size: std::collections::BTreeMap<u64, u64> = Default::default();
    for s in sizes {
        *by_size.entry(s).or_default() += 1;
    }
    by_size.into_iter().map(|(s, classes)| ClassSizes { sample: s, population: s, classes }).collect()
}

/// Classes at `levels` from the base frequency set, without `dropped`; F from the population table.
fn node_classes(
    source: &Loaded,
    job: &Job,
    levels: &[u8],
    dropped: &[Box<[i64]>],
    population: Option<&str>,
) -> Result<Vec<ClassSizes>> {
    let conn = &source.conn;
    // Read here before and after the recoding: a view over the coded rows is grouped once.
    source.base.as_table(conn)?;
    let n = levels.len();
    let div = divisors(conn, n)?;
    let kept = left_out(conn, "kanon_dropped", dropped, n)?.unwrap_or_else(|| "TRUE".into());
    let classes = list(0..n, ", ", |a| format!("(p.g{a} // {})::BIGINT AS c{a}", div[a][levels[a] as usize]));
    if let (Some(held), Some(_)) = (&source.population, population) {
        // The population is in memory already (exact k-map, δ-presence): F per class from it.
        let at = held.classes_at(levels);
        let q = render(
            sql::fragment(sql::RISK, "node_class_codes"),
            &[("classes", &classes), ("codes", &list(0..n, ", ", |a| format!("c.c{a}"))), ("kept", &kept)],
        );
        let mut stmt = conn.prepare(&q)?;
        let mut rows = stmt.query([])?;
        let mut by_sizes: std::collections::BTreeMap<(u64, u64), u64> = Default::default();
        let mut codes = vec![0i64; n];
        while let Some(r) = rows.next()? {
            for (a, c) in codes.iter_mut().enumerate() {
                *c = r.get(a)?;
            }
            let f = r.get::<_, i64>(n)? as u64;
            *by_sizes.entry((f, at.of(&codes))).or_default() += 1;
        }
        return by_sizes.into_iter().map(|((f, big_f), classes)| population_checked(job, f, big_f, classes)).collect();
    }
    let (cte, big_f, join) = match population {
        None => (String::new(), "c.f".to_string(), String::new()),
        Some(relation) => {
            let cte = render(
                sql::fragment(sql::RISK, "population_classes"),
                &[
                    ("codes", &list(0..n, ", ", |a| format!("d{a}.c{} AS c{a}", levels[a]))),
                    ("relation", relation),
                    ("joins", &crate::data::population::coded_joins(conn, job, relation)?),
                ],
            );
            let join =
                format!("LEFT JOIN pc ON {}", list(0..n, " AND ", |a| format!("pc.c{a} IS NOT DISTINCT FROM c.c{a}")));
            (cte, "pc.big_f".to_string(), join)
        }
    };
    let q = render(
        sql::fragment(sql::RISK, "node_classes"),
        &[("classes", &classes), ("population", &cte), ("big_f", &big_f), ("population_join", &join), ("kept", &kept)],
    );
    let mut stmt = conn.prepare(&q)?;
    let mut rows = stmt.query([])?;
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        let (f, big_f, classes): (i64, Option<i64>, i64) = (r.get(0)?, r.get(1)?, r.get(2)?);
        out.push(population_checked(job, f as u64, big_f.unwrap_or(0) as u64, classes as u64)?);
    }
    Ok(out)
}

/// `classes` classes of f records and F population records: refused when F < f.
fn population_checked(job: &Job, f: u64, big_f: u64, classes: u64) -> Result<ClassSizes> {
    if big_f < f {
        return Err(bad(format!(
            "{}: [risk] population_table has fewer records than the source in {classes} classes of size {f}; it must hold the population the source was drawn from",
            job.path.display()
        )));
    }
    Ok(ClassSizes { sample: f, population: big_f, classes })
}

/// The release classes of a scheme's partitions: each base row's block per QI.
fn partition_classes(
    source: &Loaded,
    leaf_codes: &[Vec<i64>],
    blocks: &[Vec<u32>],
    dropped: &[Vec<u32>],
) -> Result<Vec<ClassSizes>> {
    let n = leaf_codes.len();
    let q = render(sql::fragment(sql::RISK, "base_rows"), &[("codes", &list(0..n, ", ", |a| format!("g{a}::BIGINT")))]);
    let mut stmt = source.conn.prepare(&q)?;
    let mut rows = stmt.query([])?;
    let mut classes = PartitionClasses::default();
    let mut leaves = Vec::with_capacity(n);
    while let Some(r) = rows.next()? {
        leaves.clear();
        for (a, codes) in leaf_codes.iter().enumerate() {
            let code: i64 = r.get(a)?;
            let i = codes.binary_search(&code).map_err(|_| anyhow::anyhow!("leaf code {code} of QI {a}"))?;
            leaves.push(i as u32);
        }
        classes.add(&leaves, blocks, r.get::<_, i64>(n)? as u64);
    }
    Ok(classes
        .sizes(dropped)
        .into_iter()
        .map(|(s, classes)| ClassSizes { sample: s, population: s, classes })
        .collect())
}

/// The release classes of a partition recoding, counted off the base set's rows.
#[derive(Default)]
pub(super) struct PartitionClasses(FxHashMap<Vec<u32>, u64>);

impl PartitionClasses {
    /// A base row: its leaf index per QI (to a block by `blocks`), and its records.
    pub(crate) fn add(&mut self, leaves: &[u32], blocks: &[Vec<u32>], records: u64) {
        let key = leaves.iter().zip(blocks).map(|(&i, b)| b[i as usize]).collect();
        *self.0.entry(key).or_default() += records;
    }

    /// (size, classes of that size) of the classes kept: all but `dropped`, by size.
    pub(crate) fn sizes(mut self, dropped: &[Vec<u32>]) -> Vec<(u64, u64)> {
        for d in dropped {
            self.0.remove(d);
        }
        histogram(self.0.into_values()).into_iter().map(|c| (c.sample, c.classes)).collect()
    }
}

/// The source's classes when the base frequency set has one row per class.
fn base_sizes(source: &Loaded) -> Result<Vec<ClassSizes>> {
    let mut stmt = source.conn.prepare(sql::fragment(sql::RISK, "base_sizes"))?;
    let rows = stmt.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)))?;
    let mut out = Vec::new();
    for row in rows {
        let (f, classes) = row?;
        out.push(ClassSizes { sample: f as u64, population: f as u64, classes: classes as u64 });
    }
    Ok(out)
}

/// The source's classes, grouped from the source itself.
fn source_classes(source: &Loaded, job: &Job) -> Result<Vec<ClassSizes>> {
    let q =
        render(sql::fragment(sql::RISK, "source_classes"), &[("columns", &list(job.qi_names(), ", ", |c| ident(&c)))]);
    let mut stmt = source.conn.prepare(&q)?;
    let rows = stmt.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(2)?)))?;
    let mut out = Vec::new();
    for row in rows {
        let (f, classes) = row?;
        out.push(ClassSizes { sample: f as u64, population: f as u64, classes: classes as u64 });
    }
    Ok(out)
}
