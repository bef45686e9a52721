//! What the audit measures the classes against: the models as the source
//! gives them (its marginals and codes of the sensitive columns) and, with
//! `[risk] population_table`, the population's classes joined to each class.

use super::open::{relation_columns, require, Records};
use crate::data::frequency;
use crate::engine::embedded::{self, SourceColumn};
use crate::engine::remote::Remote;
use crate::error::{bad, OrBadInput};
use crate::job::{Column, Job, PopulationTable};
use crate::load::class_models;
use crate::measure::privacy::ClassModels;
use crate::sql::{self, fragment, ident, list, render};
use anyhow::{Context, Result};
use duckdb::Connection;

/// The models as the source gives them: the sensitive columns' marginals
/// over all its rows (`kanon_marg_s` / `_t`), their codes (`kanon_codes_s` /
/// `_t`, 1.. in the type's order) and from these the `ClassModels` (t-closeness's
/// reference distribution and distance data). `there`: the engine the
/// marginals are scanned on (only they come back), else here.
pub(super) fn source_models(
    conn: &Connection,
    job: &Job,
    columns: &[SourceColumn],
    extra: &[(&str, &Column)],
    records: &Records,
    there: Option<&Remote>,
) -> Result<ClassModels> {
    if extra.is_empty() {
        return class_models(conn, job, columns);
    }
    let m = extra.len();
    let mut read = list(extra, ", ", |(a, c)| format!("{} AS {a}", ident(&c.name)));
    if let Some(w) = &records.weight {
        read.push_str(&format!(", {}", ident(w)));
    }
    let scan = render(
        fragment(sql::SOURCE_MARGINALS, "scan"),
        &[
            ("all", &list(extra, ", ", |(a, _)| a.to_string())),
            ("columns", &read),
            ("relation", "kanon_source"),
            ("count", &records.count()),
            ("sets", &list(extra, ", ", |(a, _)| format!("({a})"))),
        ],
    );
    frequency::materialize(conn, there, "kanon_marginals", &scan).map_err(|e| {
        // A row that does not parse is bad input; running out of memory or disk is not.
        let e = e.context(format!("reading the source, {}", job.source.describe()));
        if crate::error::resource_hint(&e).is_some() {
            e
        } else {
            bad(format!("{e:#}"))
        }
    })?;
    for (j, (alias, _)) in extra.iter().enumerate() {
        // GROUPING(): a bit per column not grouped, the first column the highest bit.
        let gid: u64 = ((1u64 << m) - 1) & !(1u64 << (m - 1 - j));
        conn.execute_batch(&render(
            fragment(sql::SOURCE_MARGINALS, "split"),
            &[("target", &format!("kanon_marg_{alias}")), ("col", alias), ("gid", &gid.to_string())],
        ))?;
    }
    conn.execute_batch(fragment(sql::CHECK, "drop_marginals"))?;
    let aliases: Vec<&str> = extra.iter().map(|e| e.0).collect();
    frequency::code_tables(conn, 0, &aliases)?;
    class_models(conn, job, columns)
}

/// `[risk] population_table` grouped by the job's QI columns as it is (the
/// `population` statement), or None without one.
pub(super) fn population(conn: &Connection, job: &Job, audited: &str) -> Result<Option<String>> {
    let audited_relation = audited;
    let Some(spec) = &job.risk.population_table else {
        return Ok(None);
    };
    let relation = embedded::population_relation(conn, job)?.context("a population table without a relation")?;
    let what = population_name(spec);
    let have =
        relation_columns(conn, &relation).or_bad_input(|| format!("{}: reading [risk] {what}", job.path.display()))?;
    let qis: Vec<(&Column, &str)> = job.quasi_identifiers.iter().map(|q| (&q.column, "quasi-identifier")).collect();
    require(job, &format!("the {what}"), &have, &qis)?;
    let audited = relation_columns(conn, audited)?;
    let type_of = |cols: &[SourceColumn], name: &str| cols.iter().find(|c| c.name == name).map(|c| c.type_name.clone());
    // A QI whose values the table holds generalized: the population's leaves mapped to them.
    let maps = level_maps(conn, job, audited_relation)?;
    // Values compare natively when the two columns have one type, as text otherwise (and when mapped).
    let cast: Vec<bool> = (job.quasi_identifiers.iter().zip(&maps))
        .map(|(q, m)| m.is_some() || type_of(&have, &q.column.name) != type_of(&audited, &q.column.name))
        .collect();
    let columns = list(job.quasi_identifiers.iter().enumerate(), ", ", |(a, q)| match &maps[a] {
        Some(table) => format!("{}.label AS q{a}", ident(table)),
        None if cast[a] => format!("CAST(pop.{} AS VARCHAR) AS q{a}", ident(&q.column.name)),
        None => format!("pop.{} AS q{a}", ident(&q.column.name)),
    });
    let joins: String = (job.quasi_identifiers.iter().zip(&maps))
        .filter_map(|(q, m)| m.as_ref().map(|t| (q, t)))
        .map(|(q, t)| {
            format!(
                " LEFT JOIN {t} ON {t}.leaf IS NOT DISTINCT FROM CAST(pop.{} AS VARCHAR)",
                ident(&q.column.name),
                t = ident(t)
            )
        })
        .collect();
    let select =
        render(fragment(sql::CHECK, "population"), &[("columns", &columns), ("relation", &relation), ("maps", &joins)]);
    let on = list(job.quasi_identifiers.iter().enumerate(), " AND ", |(a, _)| {
        if cast[a] {
            format!("CAST(g.q{a} AS VARCHAR) IS NOT DISTINCT FROM p.q{a}")
        } else {
            format!("g.q{a} IS NOT DISTINCT FROM p.q{a}")
        }
    });
    Ok(Some(format!(" LEFT JOIN ({select}) p ON {on}")))
}

/// Per QI with a file hierarchy whose values in the audited table all sit at
/// one level above the leaves (a release of a full-domain node): a temp
/// table of its leaves and their labels there, so the population is
/// generalized as the table is. None for a QI at its leaves or with a
/// built-in hierarchy (compared as they are).
fn level_maps(conn: &Connection, job: &Job, audited: &str) -> Result<Vec<Option<String>>> {
    let mut out = Vec::new();
    for (a, q) in job.quasi_identifiers.iter().enumerate() {
        let crate::job::HierarchySpec::File(path) = &q.hierarchy else {
            out.push(None);
            continue;
        };
        let rows = crate::data::hierarchy::read_arx(path)?;
        let q_values = render(
            fragment(sql::CHECK, "distinct_values"),
            &[("column", &ident(&q.column.name)), ("relation", audited)],
        );
        let values: std::collections::HashSet<String> =
            conn.prepare(&q_values)?.query_map([], |r| r.get::<_, String>(0))?.collect::<duckdb::Result<_>>()?;
        let height = rows.first().map_or(0, |r| r.len());
        let at_level = |l: usize| {
            let labels: std::collections::HashSet<&str> = rows.iter().filter_map(|r| r.get(l)?.as_deref()).collect();
            values.iter().all(|v| labels.contains(v.as_str()))
        };
        match (0..height).find(|&l| at_level(l)) {
            Some(l) if l > 0 => {
                let table = format!("kanon_level_map_{a}");
                conn.execute_batch(&render(fragment(sql::CHECK, "level_map"), &[("table", &ident(&table))]))?;
                let mut app = conn.appender(&table)?;
                for r in &rows {
                    app.append_row([r.first().and_then(|v| v.as_deref()), r.get(l).and_then(|v| v.as_deref())])?;
                }
                app.flush()?;
                out.push(Some(table));
            }
            _ => out.push(None),
        }
    }
    Ok(out)
}

/// "population table \"T\"" or "population table FILE".
pub(super) fn population_name(spec: &PopulationTable) -> String {
    match spec {
        PopulationTable::Table(t) => format!("population table \"{t}\""),
        PopulationTable::Csv { path, .. } | PopulationTable::Parquet(path) => {
            format!("population table {}", path.display())
        }
    }
}
