//! `kanon limit` (flags: `kanon help limit`).
//!
//! Times the physical limit of a run on the job's source, with no search: one
//! plain `GROUP BY` of the QI columns (materialized), then one recode-and-write
//! of every source row at the node (a join per QI, on the values as the
//! source has them, to its value → label map,
//! dropped columns left out, no ORDER BY, no suppression) into a scratch DuckDB
//! file beside the output database, deleted afterwards. Prints one JSON object:
//! both times, their total, the distinct QI combinations and the rows. Building
//! the hierarchies is timed apart (`hierarchy_seconds`), not in the total.

use crate::database;
use crate::error::bad;
use crate::frequency;
use crate::hierarchy::{self, h_table};
use crate::job::{parse_levels, Job};
use crate::load::check_columns;
use crate::progress::spinner;
use crate::sql::{self, fragment, ident, list, literal, render};
use anyhow::{Context, Result};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The job file (TOML).
    pub job: PathBuf,
    /// The node to recode at, e.g. zip=2,birth_date=1,… (every QI).
    #[arg(long)]
    pub node: String,
    /// No progress spinner.
    #[arg(long)]
    pub quiet: bool,
}

/// Catalog name of the scratch database.
const SCRATCH: &str = "kanon_limit";

pub fn run(args: Args) -> Result<()> {
    let job = Job::load(&args.job)?;
    let levels = parse_levels(&job, &args.node)?;
    let (conn, columns) = database::open(&job)?;
    check_columns(&job, &columns)?;
    let qis = job.qi_names();
    let bar = spinner(args.quiet);

    bar.set_message("GROUP BY of the quasi-identifiers");
    let start = Instant::now();
    let by = list(qis.iter().enumerate(), ", ", |(a, q)| format!("{} AS g{a}", ident(q)));
    conn.execute_batch(&render(fragment(sql::LIMIT, "group_by"), &[("columns", &by)]))
        .context("grouping the source by its quasi-identifiers")?;
    let (combinations, rows): (i64, i64) =
        conn.query_row("SELECT count(*), coalesce(sum(cnt), 0)::BIGINT FROM kanon_limit_groups", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?;
    let group_by = start.elapsed().as_secs_f64();
    conn.execute_batch("DROP TABLE kanon_limit_groups")?;

    // Hierarchies as `kanon run` builds them; the generated ones need the marginals.
    bar.set_message("building hierarchies");
    let start = Instant::now();
    let files = hierarchy::load_files(&conn, &job)?;
    frequency::scan_source(&conn, None, &frequency::Input::source(), &qis, &[])?;
    let hierarchies = hierarchy::finish(&conn, &job, files)?;
    for (a, (h, &l)) in hierarchies.iter().zip(&levels).enumerate() {
        if l > h.height {
            return Err(bad(format!(
                "--node: level {l} of \"{}\" is above its hierarchy's height {}",
                h.column, h.height
            )));
        }
        conn.execute_batch(&render(
            fragment(sql::LIMIT, "map"),
            &[
                ("map", &map_table(a)),
                ("label", &format!("v{l}")),
                ("h", &h_table(a)),
                ("marginal", &hierarchy::marginal_table(a)),
                ("col", &format!("v{a}")),
            ],
        ))?;
    }
    let hierarchy_seconds = start.elapsed().as_secs_f64();

    bar.set_message("recode-and-write");
    let out_dir = job.output.first_path().parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !out_dir.is_dir() {
        return Err(bad(format!("{}: output folder {} does not exist", job.path.display(), out_dir.display())));
    }
    let scratch = tempfile::Builder::new()
        .prefix(".kanon-limit-")
        .tempdir_in(out_dir)
        .with_context(|| format!("creating a scratch folder in {}", out_dir.display()))?;
    let start = Instant::now();
    let written = write(&conn, &job, &columns, &qis, &scratch.path().join("limit.duckdb"))?;
    let write_seconds = start.elapsed().as_secs_f64();
    bar.finish_and_clear();
    if written != rows {
        anyhow::bail!("the recode-and-write wrote {written} rows, the source has {rows}");
    }
    let node: serde_json::Map<String, serde_json::Value> =
        qis.iter().zip(&levels).map(|(q, &l)| (q.clone(), l.into())).collect();
    let out = json!({
        "group_by_seconds": group_by,
        "write_seconds": write_seconds,
        "total_seconds": group_by + write_seconds,
        "combinations": combinations,
        "rows": rows,
        "hierarchy_seconds": hierarchy_seconds,
        "node": node,
    });
    println!("{}", serde_json::to_string(&out)?);
    Ok(())
}

fn map_table(a: usize) -> String {
    format!("kanon_limit_map{a}")
}

/// Recode every source row into a table of a fresh database at `path`; the
/// detach is timed too, as it writes the table out. Returns the rows written.
fn write(
    conn: &duckdb::Connection,
    job: &Job,
    columns: &[database::SourceColumn],
    qis: &[String],
    path: &Path,
) -> Result<i64> {
    let select =
        list(columns.iter().filter(|c| !job.output.drop.iter().any(|d| d.name == c.name)), ", ", |c| {
            match qis.iter().position(|q| *q == c.name) {
                Some(a) => format!("m{a}.label AS {}", ident(&c.name)),
                None => format!("s.{}", ident(&c.name)),
            }
        });
    let joins = list(qis.iter().enumerate(), " ", |(a, q)| {
        format!("JOIN {} m{a} ON s.{} IS NOT DISTINCT FROM m{a}.n", map_table(a), ident(q))
    });
    let target = format!("{}.main.release", ident(SCRATCH));
    conn.execute_batch(&format!("ATTACH {} AS {}", literal(&path.to_string_lossy()), ident(SCRATCH)))
        .with_context(|| format!("opening scratch database {}", path.display()))?;
    conn.execute_batch(&render(
        fragment(sql::LIMIT, "write"),
        &[("target", &target), ("columns", &select), ("joins", &joins)],
    ))
    .context("recoding and writing the source")?;
    let rows: i64 = conn.query_row(&format!("SELECT count(*) FROM {target}"), [], |r| r.get(0))?;
    conn.execute_batch(&format!("DETACH {}", ident(SCRATCH))).context("writing the scratch database")?;
    Ok(rows)
}
