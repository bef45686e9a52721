//! `kanon run JOB.toml --scheme S [--metric dm|hdm|glm]` (or `[search] scheme`)
//!
//! The optimal anonymization under one of Li & Li's schemes: a partition of
//! each QI's values, records in classes under k suppressed and charged by the
//! metric (capped by `max_suppression` when the job sets it). Writes the
//! release (blocks labelled) and a report with the partitions. Exit 3 when
//! no anonymization keeps suppression within the cap.

use crate::error::{bad, Infeasible};
use crate::evaluator::memory::MemorySets;
use crate::frequency::Extras;
use crate::job::Job;
use crate::options::Metric;
use crate::load::load_showing;
use crate::progress::spinner;
use crate::hierarchy::HierarchyRows;
use crate::options::Scheme;
use crate::scheme::{numeric_type, ValueTree};
use crate::search::partitions::{self, DpChoice, Problem, Pruning};
use crate::{database, frequency, release};
use anyhow::Result;
use serde_json::json;
use std::time::Instant;

pub fn run(job: Job, scheme: Scheme, pruning: Pruning, quiet: bool) -> Result<()> {
    let start = Instant::now();
    let file = job.path.display().to_string();
    if let Some(d) = &job.privacy.diversity {
        return Err(bad(format!(
            "{file}: the scheme search does not support l-diversity (l_diversity on \"{}\")",
            d.column.name
        )));
    }
    if !matches!(job.metric, Metric::Dm | Metric::Hdm | Metric::Glm) {
        return Err(bad(format!("{file}: the scheme search takes metric dm, hdm or glm, not {}", job.metric.name())));
    }
    let phase = spinner(quiet);
    let loaded = load_showing(&job, &phase)?;
    let rows = loaded.data.rows;
    if job.privacy.k > rows {
        return Err(bad(format!("{file}: k = {} is above the number of rows ({rows})", job.privacy.k)));
    }
    phase.set_message(format!("reading the hierarchies as {} domains", scheme.name()));
    let qis = job.qi_names();
    let mut domains = Vec::with_capacity(qis.len());
    let mut leaf_codes = Vec::with_capacity(qis.len());
    for (a, q) in qis.iter().enumerate() {
        let numeric = loaded.columns.iter().find(|c| c.name == *q).is_some_and(|c| numeric_type(&c.type_name));
        let h = HierarchyRows::read(&loaded.conn, a, loaded.data.heights[a])?;
        domains.push(ValueTree::new(q, scheme, numeric, &h).map_err(|e| bad(format!("{file}: {e}")))?);
        leaf_codes.push(h.present);
    }
    let sets = MemorySets::new(&loaded.conn, &loaded.data.heights, Extras::default(), loaded.threads)?;
    let (codes, counts) = sets.base_columns();
    let t_load = start.elapsed().as_secs_f64();

    phase.set_message(format!("searching {} anonymizations", scheme.name()));
    let cap = job.privacy.budget_given.then(|| job.privacy.budget.rows(rows));
    let problem = Problem {
        codes,
        counts,
        domains: &domains,
        k: job.privacy.k,
        cap,
        metric: job.metric,
        threads: loaded.threads,
    };
    let Some(best) = partitions::search(&problem, pruning, Some(&phase)) else {
        return Err(anyhow::Error::new(Infeasible(format!(
            "no {} anonymization keeps k = {} with at most {} suppressed rows",
            scheme.name(),
            job.privacy.k,
            cap.unwrap_or(rows)
        ))));
    };
    let t_search = start.elapsed().as_secs_f64() - t_load;

    phase.set_message(format!("writing the release to {}", job.output.first_path().display()));
    let dropped = partitions::dropped_classes(&problem, &best.partitions);
    let (lm, am) = partitions::lm_am(&problem, &best.partitions);
    let labels: Vec<Vec<Option<String>>> = domains.iter().zip(&best.partitions).map(|(d, s)| d.labels(s)).collect();
    let blocks: Vec<&[u32]> = best.partitions.iter().map(|s| s.blocks.as_slice()).collect();
    let recoding = release::partition_map(&loaded.conn, &job, &loaded.columns, &leaf_codes, &blocks, &labels, dropped)?;
    drop(sets);
    frequency::drop_base(&loaded.conn)?;
    let written = release::write(&loaded.conn, &job, &loaded.columns, recoding)?;
    phase.finish_and_clear();
    let t_release = start.elapsed().as_secs_f64() - t_load - t_search;
    if written.rows + best.measures.suppressed != rows {
        anyhow::bail!("the release wrote {} rows, the search kept {}", written.rows, rows - best.measures.suppressed);
    }

    let text = |d: &ValueTree, i: u32| d.values[i as usize].clone();
    let partitions: serde_json::Map<String, serde_json::Value> = qis
        .iter()
        .zip(domains.iter().zip(&best.partitions))
        .map(|(q, (d, s))| {
            let lists: Vec<Vec<Option<String>>> =
                d.block_lists(&s.blocks).iter().map(|b| b.iter().map(|&i| text(d, i)).collect()).collect();
            (q.clone(), json!(lists))
        })
        .collect();
    let out = &job.output;
    let m = &best.measures;
    let report = json!({
        "kanon_version": env!("CARGO_PKG_VERSION"),
        "job_sha256": job.sha256,
        "rows_in": rows,
        "rows_out": written.rows,
        "suppressed": m.suppressed,
        "suppression_cap": cap,
        "quasi_identifiers": qis,
        "scheme": scheme.name(),
        "partitions": partitions,
        "blocks": domains.iter().zip(&best.partitions).map(|(d, s)| (d.column.clone(), json!(s.nblocks))).collect::<serde_json::Map<_, _>>(),
        "k_requested": job.privacy.k,
        "classes": m.classes,
        "metric": job.metric.name(),
        "metrics": {"dm": m.dm, "hdm": m.hdm, "glm": m.glm, "lm": lm, "am": am},
        "algorithm": "li-li",
        "nodes_evaluated": best.evaluated,
        "nodes_expanded": best.expanded,
        "dp_quasi_identifier": best.dp_qi.map(|a| qis[a].clone()),
        "pruning": {"seeding": pruning.seeding, "modified_bfs": pruning.modified_bfs,
                    "node_rearrangement": pruning.node_order, "applicator_rearrangement": pruning.applicator_order,
                    "dp": pruning.dp != DpChoice::Off, "classes": pruning.small_classes,
                    "blocks": pruning.useless_blocks, "stuck": pruning.stuck_classes},
        "output": crate::report::Output::of(out),
        "seconds": {"load": t_load, "search": t_search, "release": t_release, "total": start.elapsed().as_secs_f64()},
    });
    if let Some(path) = &out.report {
        database::write_atomically(path, serde_json::to_string_pretty(&report)?.as_bytes())?;
    }
    println!(
        "released {} of {rows} rows ({} suppressed) as {} under {}: {} = {}, {} anonymizations evaluated",
        written.rows,
        m.suppressed,
        out.describe(),
        scheme.name(),
        job.metric.name(),
        match job.metric {
            Metric::Dm => m.dm,
            Metric::Hdm => m.hdm,
            _ => m.glm,
        },
        best.evaluated
    );
    Ok(())
}

/// `--pruning-off seeding,bfs,nodes,applicators,dp,classes,blocks,stuck`: the techniques to switch off.
pub fn pruning_off(list: Option<&str>) -> Result<Pruning> {
    let mut p = Pruning::default();
    for name in list.unwrap_or("").split(',').map(str::trim).filter(|s| !s.is_empty()) {
        match name {
            "seeding" => p.seeding = false,
            "bfs" => p.modified_bfs = false,
            "nodes" => p.node_order = false,
            "applicators" => p.applicator_order = false,
            "dp" => p.dp = DpChoice::Off,
            "classes" => p.small_classes = false,
            "blocks" => p.useless_blocks = false,
            "stuck" => p.stuck_classes = false,
            other => {
                return Err(bad(format!(
                    "--pruning-off: unknown technique \"{other}\" (seeding, bfs, nodes, applicators, dp, classes, blocks, stuck)"
                )))
            }
        }
    }
    Ok(p)
}
