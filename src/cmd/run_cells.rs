//! `kanon run JOB.toml --algorithm cdgh|cndgh [--reconstruct TABLE|FILE] [--seed N]`
//! (or `[search] algorithm`, `[search] open_clusters`, `[output] reconstructed`)
//!
//! Cell-based generalization (Nergiz & Clifton): one sorted pass clusters the
//! records, each cluster generalized on its own, CDGH along the hierarchies,
//! CNDGH to value sets and numeric ranges; fewer than k records are
//! suppressed. Writes the release and, when asked, its reconstruction (each
//! generalized cell replaced by a leaf drawn under it, seeded) atomically,
//! and a report with lm, am, dm and cm. Exit 3 when the job caps suppression
//! (`max_suppression`) below what the pass suppresses, or nothing is released.

use crate::cells::CellDomain;
use crate::database;
use crate::error::{bad, Infeasible};
use crate::frequency;
use crate::hierarchy::{code_table, dim_table, node_table};
use crate::job::Job;
use crate::options::Algorithm;
use crate::load::{load_records, Loaded};
use crate::progress::spinner;
use crate::release::{self, CellRecoding};
use crate::scheme::numeric_type;
use crate::search::cbg::{Clustering, Clusters, ClusterSettings, SUPPRESSED};
use crate::sql::{self, fragment, ident, list, render};
use anyhow::{Context, Result};
use duckdb::arrow::array::{Array, AsArray};
use duckdb::arrow::datatypes::{Int32Type, Int64Type};
use rustc_hash::FxHashMap;
use serde_json::json;
use std::sync::Arc;
use std::time::Instant;

/// The reconstruction's seed when none is given.
pub const SEED: u64 = 0;

pub fn run(job: Job, seed: u64, quiet: bool) -> Result<()> {
    let start = Instant::now();
    let file = job.path.display().to_string();
    let algorithm = job.algorithm;
    let reconstruction = job.output.reconstruction(&job)?;
    let phase = spinner(quiet);
    let loaded = load_records(&job, &phase)?;
    let rows = loaded.data.rows;
    if job.privacy.k > rows {
        return Err(bad(format!("{file}: k = {} is above the number of rows ({rows})", job.privacy.k)));
    }
    phase.set_message("numbering each quasi-identifier's values");
    let domains = domains(&loaded, &job, algorithm)?;
    let t_load = start.elapsed().as_secs_f64();

    phase.set_message(format!("clustering the {rows} records ({})", algorithm.name()));
    let settings =
        ClusterSettings { k: job.privacy.k, l: job.privacy.diversity.as_ref().map(|d| d.l), open: job.open_clusters };
    let pass = cluster(&loaded, &job, &domains, settings)?;
    let measured = measure(&pass, &domains, rows);
    let t_search = start.elapsed().as_secs_f64() - t_load;
    let suppressed = pass.clusters.suppressed;
    let cap = job.privacy.budget_given.then(|| job.privacy.budget.rows(rows));
    if pass.clusters.sizes.is_empty() || cap.is_some_and(|c| suppressed > c) {
        let what = match &job.privacy.diversity {
            Some(d) => format!("k = {} and l = {} on \"{}\"", job.privacy.k, d.l, d.column.name),
            None => format!("k = {}", job.privacy.k),
        };
        return Err(anyhow::Error::new(Infeasible(format!(
            "{} suppresses {suppressed} of {rows} rows for {what}{}",
            algorithm.name(),
            cap.map_or(String::new(), |c| format!(", above max_suppression ({c} rows)"))
        ))));
    }

    phase.set_message(format!("writing the release to {}", job.output.first_path().display()));
    let position = loaded.position.clone().context("the source was opened without row positions")?;
    let rec = Arc::new(CellRecoding { cluster_of: pass.cluster_of, clusters: pass.clusters, domains, position });
    let written = release::write_cells(&loaded.conn, &job, &job.output, &loaded.columns, &rec, None)?;
    if written.rows + suppressed != rows {
        anyhow::bail!("the release wrote {} rows, the pass kept {}", written.rows, rows - suppressed);
    }
    let t_release = start.elapsed().as_secs_f64() - t_load - t_search;
    if let Some(out) = &reconstruction {
        phase.set_message("writing the reconstruction");
        release::write_cells(&loaded.conn, &job, out, &loaded.columns, &rec, Some(seed))?;
    }
    phase.finish_and_clear();
    let t_reconstruct = start.elapsed().as_secs_f64() - t_load - t_search - t_release;

    let qis = job.qi_names();
    let out = &job.output;
    let mut output = json!(crate::report::Output::of(out));
    output["reconstructed"] = json!(reconstruction.as_ref().map(|r| r.describe()));
    let report = json!({
        "kanon_version": env!("CARGO_PKG_VERSION"),
        "job_sha256": job.sha256,
        "rows_in": rows,
        "rows_out": written.rows,
        "suppressed": suppressed,
        "suppression_cap": cap,
        "quasi_identifiers": qis,
        "algorithm": algorithm.name(),
        "open_clusters": settings.open,
        "k_requested": job.privacy.k,
        "k": measured.k,
        "l_requested": settings.l,
        "l": measured.l,
        "clusters": rec.clusters.sizes.len(),
        "classes": measured.classes,
        "metrics": {"lm": measured.lm, "am": measured.am, "dm": measured.dm, "cm": measured.cm},
        "distinct_cells": qis.iter().zip(&rec.clusters.distinct).map(|(q, d)| (q.clone(), json!(d.len()))).collect::<serde_json::Map<_, _>>(),
        "seed": reconstruction.as_ref().map(|_| seed),
        "output": output,
        "seconds": {"load": t_load, "search": t_search, "release": t_release, "reconstruct": t_reconstruct,
                    "total": start.elapsed().as_secs_f64()},
    });
    if let Some(path) = &out.report {
        database::write_atomically(path, serde_json::to_string_pretty(&report)?.as_bytes())?;
    }
    println!(
        "released {} of {rows} rows ({suppressed} suppressed) as {} by {}: {} clusters, k = {}, lm = {:.6}, am = {:.3}{}",
        written.rows,
        out.describe(),
        algorithm.name(),
        rec.clusters.sizes.len(),
        measured.k.map_or("-".into(), |k| k.to_string()),
        measured.lm,
        measured.am,
        reconstruction.map_or(String::new(), |r| format!("; reconstruction in {}", r.describe()))
    );
    Ok(())
}

/// Per QI, number its values for the pass (table `kanon_cellcode_{a}`) and
/// describe its cells.
fn domains(loaded: &Loaded, job: &Job, algorithm: Algorithm) -> Result<Vec<CellDomain>> {
    let conn = &loaded.conn;
    let mut out = Vec::new();
    for (a, q) in job.quasi_identifiers.iter().enumerate() {
        let target = cell_codes(a);
        let slots = [("target", target.as_str()), ("codes", &code_table(a)), ("dim", &dim_table(a))];
        if algorithm == Algorithm::Cdgh {
            conn.execute_batch(&render(fragment(sql::CELLS, "leaf_numbers"), &slots))?;
            let h = loaded.data.heights[a] as usize;
            let mut stmt = conn.prepare(&format!(
                "SELECT leaf, {} FROM {} ORDER BY c0",
                list(0..=h, ", ", |l| format!("c{l}")),
                dim_table(a)
            ))?;
            let mut leaf_text = Vec::new();
            let mut codes = Vec::new();
            let mut rows = stmt.query([])?;
            while let Some(r) = rows.next()? {
                leaf_text.push(r.get::<_, Option<String>>(0)?);
                codes.push((1..=h + 1).map(|i| r.get::<_, i64>(i)).collect::<duckdb::Result<Vec<_>>>()?);
            }
            let mut labels: FxHashMap<(usize, i64), Option<String>> = FxHashMap::default();
            let mut stmt = conn.prepare(&format!("SELECT level, code, label FROM {}", node_table(a)))?;
            let mut rows = stmt.query([])?;
            while let Some(r) = rows.next()? {
                labels.insert((r.get::<_, i32>(0)? as usize, r.get(1)?), r.get(2)?);
            }
            out.push(CellDomain::hierarchy(leaf_text, &codes, |l, c| labels.get(&(l, c)).cloned().flatten()));
        } else {
            conn.execute_batch(&render(fragment(sql::CELLS, "value_numbers"), &slots))?;
            let mut stmt = conn.prepare(&render(fragment(sql::CELLS, "values"), &slots))?;
            let values: Vec<(Option<String>, Option<f64>)> =
                stmt.query_map([], |r| Ok((r.get(1)?, r.get(2)?)))?.collect::<duckdb::Result<_>>()?;
            let type_name = loaded.columns.iter().find(|c| c.name == q.column.name).map_or("", |c| &c.type_name);
            let numbers: Option<Vec<f64>> = values.iter().map(|(t, x)| t.as_ref().and(*x)).collect();
            out.push(match numbers {
                Some(numbers) if numeric_type(type_name) => CellDomain::Range {
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
struct Pass {
    clusters: Clusters,
    cluster_of: Vec<u32>,
    sensitive: Vec<u32>,
    label: Vec<u32>,
}

/// Stream the records in order from DuckDB (Arrow batches) through the clustering.
fn cluster(loaded: &Loaded, job: &Job, domains: &[CellDomain], settings: ClusterSettings) -> Result<Pass> {
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
    let mut values = vec![0u32; n];
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
            for (v, c) in values.iter_mut().zip(&codes) {
                *v = c[i] as u32;
            }
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
    crate::trace(|| format!("cells: pass {:.3}s", t.elapsed().as_secs_f64()));
    let outcome = clustering.finish();
    // Positions never seen (a table's deleted rows) stay suppressed: no row reads them.
    for a in assigned.iter_mut().filter(|a| **a != SUPPRESSED) {
        *a = outcome.final_of[*a as usize];
    }
    Ok(Pass { clusters: outcome.clusters, cluster_of: assigned, sensitive, label })
}

/// The release's measures over its equivalence classes (identical released
/// QI tuples: clusters with the same cells on every QI form one class).
struct Measured {
    lm: f64,
    am: f64,
    dm: f64,
    cm: Option<f64>,
    k: Option<u64>,
    l: Option<u64>,
    classes: u64,
}

fn measure(pass: &Pass, domains: &[CellDomain], rows: u64) -> Measured {
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
