//! The clustering pass over the source: each QI's values numbered and
//! described as cells ([`domains`]), then the records streamed in order from
//! DuckDB (Arrow batches) through [`crate::search::cbg::Clustering`] ([`cluster`]).

use crate::data::frequency;
use crate::data::hierarchy::{self, code_table, dim_table, LeafOrder};
use crate::engine::types::ColumnType;
use crate::job::Job;
use crate::load::Loaded;
use crate::options::Algorithm;
use crate::search::cbg::{ClusterSettings, Clustering, Clusters, SUPPRESSED};
use crate::search::cells::CellDomain;
use crate::sql::{self, fragment, ident, list, render};
use anyhow::{Context, Result};
use duckdb::arrow::array::{Array, AsArray};
use duckdb::arrow::datatypes::{Int32Type, Int64Type};
use std::time::Instant;

/// Per QI, number its values for the pass (table `kanon_cellcode_{a}`) and
/// describe its cells.
pub(crate) fn domains(loaded: &Loaded, job: &Job, algorithm: Algorithm) -> Result<Vec<CellDomain>> {
    let conn = &loaded.conn;
    let mut out = Vec::new();
    for (a, q) in job.quasi_identifiers.iter().enumerate() {
        let target = cell_codes(a);
        let slots = [("target", target.as_str()), ("codes", &code_table(a)), ("dim", &dim_table(a))];
        if algorithm == Algorithm::Cdgh {
            conn.execute_batch(&render(fragment(sql::CELLS, "leaf_numbers"), &slots))?;
            let (leaf_text, codes): (Vec<Option<String>>, Vec<Vec<i64>>) =
                hierarchy::leaves(conn, a, loaded.data.heights[a], LeafOrder::Code)?.into_iter().unzip();
            let labels = hierarchy::labels(conn, a)?;
            out.push(CellDomain::hierarchy(leaf_text, &codes, |l, c| labels.get(&(l, c)).cloned().flatten()));
        } else {
            conn.execute_batch(&render(fragment(sql::CELLS, "value_numbers"), &slots))?;
            let mut stmt = conn.prepare(&render(fragment(sql::CELLS, "values"), &slots))?;
            let values: Vec<(Option<String>, Option<f64>)> =
                stmt.query_map([], |r| Ok((r.get(1)?, r.get(2)?)))?.collect::<duckdb::Result<_>>()?;
            let type_name = loaded.columns.iter().find(|c| c.name == q.column.name).map_or("", |c| &c.type_name);
            let numbers: Option<Vec<f64>> = values.iter().map(|(t, x)| t.as_ref().and(*x)).collect();
            out.push(match numbers {
                Some(numbers) if ColumnType::of(type_name).is_number() => CellDomain::Range {
                    values: numbers,
                    text: values.into_iter().map(|(t, _)| t.unwrap_or_default()).collect(),
                    integer: integer_type(type_name),
                },
                _ => CellDomain::Set { text: values.into_iter().map(|(t, _)| t).collect() },
            });
        }
    }
    Ok(out)
}

fn cell_codes(a: usize) -> String {
    format!("kanon_cellcode_{a}")
}

fn integer_type(type_name: &str) -> bool {
    let t = type_name.to_ascii_uppercase();
    t.ends_with("INT") || t.ends_with("INTEGER")
}

/// The pass's result: closed clusters, each position's cluster, and per
/// position the sensitive and label codes the measures need.
pub(crate) struct Pass {
    pub(crate) clusters: Clusters,
    pub(crate) cluster_of: Vec<u32>,
    pub(crate) sensitive: Vec<u32>,
    pub(crate) label: Vec<u32>,
    /// The source's classes (records with the same QI values) as (size,
    /// classes of that size), by size: counted as runs of the sorted stream,
    /// for the report's risk before release.
    pub(crate) source_sizes: Vec<(u64, u64)>,
}

/// Stream the records in order from DuckDB (Arrow batches) through the clustering.
pub(crate) fn cluster(loaded: &Loaded, job: &Job, domains: &[CellDomain], settings: ClusterSettings) -> Result<Pass> {
    let n = domains.len();
    let mut columns = list(0..n, ", ", |a| format!("l{a}.c AS v{a}"));
    let mut joins = list(job.quasi_identifiers.iter().enumerate(), " ", |(a, q)| {
        format!("JOIN {} l{a} ON src.{} IS NOT DISTINCT FROM l{a}.n", cell_codes(a), ident(&q.column.name))
    });
    let extras: Vec<(&str, &str)> = [("s", job.sensitive.as_ref()), ("y", job.class_column.as_ref())]
        .into_iter()
        .filter_map(|(k, c)| c.map(|c| (k, c.name.as_str())))
        .collect();
    for (k, c) in &extras {
        columns.push_str(&format!(", k{k}.code AS {k}"));
        joins.push_str(&format!(" {}", frequency::extra_join(k, c)));
    }
    let position = loaded.position.as_deref().context("the source was opened without row positions")?;
    let q = render(
        fragment(sql::CELLS, "records"),
        &[
            ("columns", &columns),
            ("joins", &joins),
            ("pos", &ident(position)),
            ("order", &list(0..n, ", ", |a| format!("v{a}"))),
        ],
    );
    let mut stmt = loaded.conn.prepare(&q)?;
    let mut clustering = Clustering::new(domains, settings);
    let mut assigned: Vec<u32> = Vec::new();
    let (mut sensitive, mut label) = (Vec::new(), Vec::new());
    let has = |k: &str| extras.iter().position(|(x, _)| *x == k);
    let (s_col, y_col) = (has("s").map(|j| n + j), has("y").map(|j| n + j));
    // The record's value numbers; until overwritten, the previous record's.
    let mut values = vec![u32::MAX; n];
    // The current run of equal QI values (the stream is sorted on all of them) and the sizes of runs.
    let mut run = 0u64;
    let mut runs: std::collections::BTreeMap<u64, u64> = std::collections::BTreeMap::new();
    let t = Instant::now();
    let mut first = true;
    for batch in stmt.query_arrow([])? {
        if first {
            crate::trace(|| format!("cells: sorted stream started {:.3}s", t.elapsed().as_secs_f64()));
            first = false;
        }
        let codes: Vec<&[i32]> =
            (0..n).map(|a| batch.column(a).as_primitive::<Int32Type>().values().as_ref()).collect();
        let s = s_col.map(|j| batch.column(j).as_primitive::<Int32Type>().values().as_ref());
        let y = y_col.map(|j| batch.column(j).as_primitive::<Int32Type>().values().as_ref());
        let pos = batch.column(batch.num_columns() - 1).as_primitive::<Int64Type>();
        debug_assert!(pos.null_count() == 0);
        for (i, &p) in pos.values().iter().enumerate() {
            // Compared while copied: a slice comparison here was a memcmp call per record.
            let mut changed = false;
            for (v, c) in values.iter_mut().zip(&codes) {
                let x = c[i] as u32;
                changed |= *v != x;
                *v = x;
            }
            if changed {
                if run > 0 {
                    *runs.entry(run).or_default() += 1;
                }
                run = 0;
            }
            run += 1;
            let sv = s.map_or(0, |s: &[i32]| s[i] as u32);
            let id = clustering.add(&values, sv);
            let p = p as usize;
            if p >= assigned.len() {
                let grow = (p + 1).max(assigned.len() * 2);
                assigned.resize(grow, SUPPRESSED);
                if s.is_some() {
                    sensitive.resize(grow, 0);
                }
                if y.is_some() {
                    label.resize(grow, 0);
                }
            }
            assigned[p] = id;
            if s.is_some() {
                sensitive[p] = sv;
            }
            if let Some(y) = y {
                label[p] = y[i] as u32;
            }
        }
    }
    if run > 0 {
        *runs.entry(run).or_default() += 1;
    }
    crate::trace(|| format!("cells: pass {:.3}s", t.elapsed().as_secs_f64()));
    let outcome = clustering.finish();
    // Positions never seen (a table's deleted rows) stay suppressed: no row reads them.
    for a in assigned.iter_mut().filter(|a| **a != SUPPRESSED) {
        *a = outcome.final_of[*a as usize];
    }
    Ok(Pass {
        clusters: outcome.clusters,
        cluster_of: assigned,
        sensitive,
        label,
        source_sizes: runs.into_iter().collect(),
    })
}
