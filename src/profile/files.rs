//! Hierarchy files for the quasi-identifiers with NULLs: a built-in
//! hierarchy lists no NULL leaf, so the same levels are written to a file
//! with one, beside the job.

use super::choose::{Chosen, Role};
use super::hier::Hier;
use super::job_text::grouped;
use crate::error::OrBadInput;
use crate::sql::{self, fragment, ident, list, render};
use anyhow::Result;
use duckdb::Connection;
use std::path::{Path, PathBuf};

/// The files to write: their folder, and (path, text) each.
pub(super) struct HierarchyFiles {
    pub(super) dir: PathBuf,
    pub(super) files: Vec<(PathBuf, String)>,
}

/// A file for each QI with NULLs, named in its choice (with why); a QI whose
/// values no file can hold is dropped instead.
pub(super) fn plan(conn: &Connection, out: &Path, chosen: &mut Chosen, src: &str) -> Result<HierarchyFiles> {
    let stem = out.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "job".into());
    let hdir_name = format!("{stem}-hierarchies");
    let dir = out.with_file_name(&hdir_name);
    let rows = chosen.rows;
    let mut files: Vec<(PathBuf, String)> = Vec::new();
    for c in chosen.choices.iter_mut() {
        let Role::Qi(h) = &c.role else { continue };
        if c.profile.non_null == rows {
            continue;
        }
        let nulls = rows - c.profile.non_null;
        match hierarchy_file(conn, &c.profile.name, h).or_bad_input(|| format!("reading source {src}"))? {
            Some(text) => {
                let mut name = format!("{}.csv", file_stem(&c.profile.name, files.len()));
                if files.iter().any(|(f, _)| f.file_name() == Some(name.as_ref())) {
                    // Two names that differ only in characters a file name leaves out.
                    name = format!("{}-{}.csv", file_stem(&c.profile.name, files.len()), files.len());
                }
                let rel = format!("{hdir_name}/{name}");
                c.why.push(format!(
                    "It has {} NULLs, which a built-in hierarchy does not list, so the same levels are written to",
                    grouped(nulls)
                ));
                c.why.push(format!("{rel}, with a NULL leaf that stays apart until the top level."));
                c.file = Some(rel);
                files.push((dir.join(name), text));
            }
            None => {
                c.role = Role::Drop { key: false };
                c.why.push(format!(
                    "It has {} NULLs and values a hierarchy file cannot hold (\";\", a line break, or the text NULL),",
                    grouped(nulls)
                ));
                c.why.push("so it is dropped rather than released as it is.".into());
            }
        }
    }
    Ok(HierarchyFiles { dir, files })
}

/// A hierarchy file with the built-in levels and a NULL leaf, built by the
/// same SQL as the built-in hierarchy. None when a value cannot be written to
/// an ARX file (`;`, a line break, or the text NULL, which reads as a NULL leaf).
fn hierarchy_file(conn: &Connection, column: &str, h: &Hier) -> Result<Option<String>> {
    let frag = |name| fragment(sql::HIERARCHY_LEVELS, name);
    let mut levels = Vec::new();
    let mut params: Vec<f64> = Vec::new();
    match h {
        Hier::Suppress => {}
        Hier::Mask(n) => levels.extend((1..=*n).map(|i| render(frag("mask"), &[("i", &i.to_string())]))),
        Hier::Intervals(ws) => {
            for w in ws {
                params.push(w.value());
                levels.push(render(frag("interval"), &[("p", &params.len().to_string())]));
            }
        }
        Hier::Date(units) => levels.extend(units.iter().map(|u| frag(u).to_string())),
    }
    if !matches!(h, Hier::Mask(_)) {
        levels.push("'*'".into());
    }
    let base = format!("({})", render(fragment(sql::INIT_PROFILE, "values"), &[("col", &ident(column))]));
    let select = list(levels.iter().enumerate(), ", ", |(i, e)| format!("{e} AS v{}", i + 1));
    let q = render(frag("generate"), &[("h", "kanon_init_h"), ("levels", &select), ("col", "v"), ("base", &base)]);
    conn.execute(&q, duckdb::params_from_iter(params))?;
    let width = levels.len() + 1;
    let cols = list(0..width, ", ", |i| format!("v{i}"));
    let mut stmt = conn.prepare(&render(fragment(sql::INIT_PROFILE, "hierarchy_rows"), &[("columns", &cols)]))?;
    let mut rows: Vec<Vec<String>> = stmt
        .query_map([], |r| (0..width).map(|i| r.get::<_, String>(i)).collect::<duckdb::Result<Vec<_>>>())?
        .collect::<duckdb::Result<_>>()?;
    conn.execute_batch(fragment(sql::INIT_PROFILE, "hierarchy_drop"))?;
    if rows.iter().flatten().any(|v| v.contains([';', '\n', '\r']) || v == "NULL") {
        return Ok(None);
    }
    // Masking every character may still leave values of different lengths: then `*` on top.
    let tops: std::collections::BTreeSet<&String> = rows.iter().map(|r| &r[width - 1]).collect();
    if tops.len() > 1 {
        rows.iter_mut().for_each(|r| r.push("*".into()));
    }
    let top = rows[0].last().cloned().unwrap_or_else(|| "*".into());
    let height = rows[0].len() - 1;
    let mut text = String::new();
    for r in &rows {
        text.push_str(&r.join(";"));
        text.push('\n');
    }
    let mut null_row = vec!["NULL".to_string(); height];
    null_row.push(top);
    text.push_str(&null_row.join(";"));
    text.push('\n');
    Ok(Some(text))
}

/// A file name for a column's hierarchy: its letters, digits, `-` and `_`.
fn file_stem(column: &str, n: usize) -> String {
    let s: String = column.chars().map(|c| if c.is_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect();
    if s.trim_matches('_').is_empty() {
        format!("column{n}")
    } else {
        s
    }
}
