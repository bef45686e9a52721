//! `kanon init`: profile a source (a DuckDB table, a CSV or a Parquet file)
//! with DuckDB and write a starting job file that runs as it is, every
//! choice explained by a comment above it (docs/init.md).
//!
//! Stage by stage: [`source`] opens the source → [`stats`] profiles what the
//! columns hold → [`choose`] gives each column a role (by [`words`] of its
//! name and its statistics, a [`hier`] for a QI) → [`files`] plans hierarchy
//! files for QIs with NULLs → [`job_text`] writes the job; then the job is
//! checked to parse and written, never over an existing file.

mod choose;
mod files;
mod hier;
mod job_text;
mod source;
mod stats;
mod words;

use crate::engine::embedded::write_atomically;
use crate::error::{bad, OrBadInput};
use anyhow::{Context, Result};
use choose::Role;
use duckdb::Connection;
use std::path::{Path, PathBuf};

/// What `kanon init` reads.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub(crate) source: PathBuf,
    pub(crate) table: Option<String>,
    pub(crate) out: PathBuf,
}

/// What was written, for the command's summary.
pub struct Written {
    pub rows: i64,
    pub(crate) quasi_identifiers: Vec<String>,
    pub(crate) dropped: Vec<String>,
    pub(crate) released: Vec<String>,
    pub(crate) files: Vec<PathBuf>,
}

/// Profile the source, choose, and write the job (and any hierarchy files).
pub(crate) fn run(opts: &Options) -> Result<Written> {
    let out = &opts.out;
    let job_dir = check_paths(opts)?;
    let conn = Connection::open_in_memory().context("starting DuckDB")?;
    let kind = source::open(&conn, &opts.source, opts.table.as_deref())?;
    let src = opts.source.display().to_string();
    let reading = || format!("reading source {src}");
    let columns = stats::columns(&conn).or_bad_input(reading)?;
    let (rows, profiles) = stats::pass(&conn, &columns).or_bad_input(reading)?;
    if rows == 0 {
        return Err(bad(format!("the source, {src}, has no rows; there is nothing to profile")));
    }
    let detail = |p: &mut stats::Profile| stats::detail(&conn, p).or_bad_input(reading);
    let mut chosen = choose::choose(rows, profiles, &columns, &src, detail)?;
    let hierarchies = files::plan(&conn, out, &mut chosen, &src)?;
    if !chosen.any_qi() {
        return Err(bad(format!(
            "no column of {src} can be a quasi-identifier (their NULLs and values fit no hierarchy file); \
             a job needs at least one"
        )));
    }
    for (path, _) in &hierarchies.files {
        if path.exists() {
            return Err(bad(format!("{} already exists; remove it or pass another --out", path.display())));
        }
    }

    let text = job_text::job_text(opts, &kind, job_dir, &chosen)?;
    // The job must parse as written; a failure here is a bug of init, not bad input.
    crate::job::Job::parse(out, &text).context("kanon init wrote a job that does not parse")?;
    write(out, &text, &hierarchies)?;
    Ok(Written {
        rows,
        quasi_identifiers: chosen.names(|r| matches!(r, Role::Qi(_))),
        dropped: chosen.names(|r| matches!(r, Role::Drop { .. })),
        released: chosen.names(|r| matches!(r, Role::Sensitive(_) | Role::AsIs)),
        files: hierarchies.files.into_iter().map(|f| f.0).collect(),
    })
}

/// The job is new, its folder exists, the source is a file: the job's folder.
fn check_paths(opts: &Options) -> Result<&Path> {
    let out = &opts.out;
    if out.exists() {
        return Err(bad(format!("{} already exists; remove it or pass another --out", out.display())));
    }
    let job_dir = out.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !job_dir.is_dir() {
        return Err(bad(format!("--out {}: the folder {} does not exist", out.display(), job_dir.display())));
    }
    if !opts.source.is_file() {
        return Err(bad(format!("source file {} not found", opts.source.display())));
    }
    Ok(job_dir)
}

/// The hierarchy files, then the job (never over one that appeared meanwhile).
fn write(out: &Path, text: &str, hierarchies: &files::HierarchyFiles) -> Result<()> {
    if !hierarchies.files.is_empty() {
        let dir = &hierarchies.dir;
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        for (path, text) in &hierarchies.files {
            write_atomically(path, text.as_bytes())?;
        }
    }
    if out.exists() {
        return Err(bad(format!("{} already exists; remove it or pass another --out", out.display())));
    }
    write_atomically(out, text.as_bytes())
}
