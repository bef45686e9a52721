//! `kanon limit` (flags: `kanon help limit`).
//!
//! Times the physical limit of a run on the job's source, with no search: one
//! plain `GROUP BY` of the QI columns (materialized), then one recode-and-write
//! of every source row at the node (dropped columns left out, no ORDER BY, no
//! suppression) into scratch files beside the output, of the job's output
//! kind (a DuckDB table, Parquet or CSV), deleted afterwards. The plain-SQL
//! limit (`write_seconds`, `total_seconds`) recodes each QI by the cheapest
//! SQL expression its hierarchy allows (`substr`-like masks, `floor(x / w) *
//! w`, `year(d) // 10 * 10`, a constant at the top) and joins only file
//! hierarchies' maps; `maps_write_seconds` / `maps_total_seconds` join every
//! QI to its value → label map (the figure `kanon limit` gave before;
//! `--plain-only` skips it). When the GROUP BY does not fit in `[engine]
//! memory_limit`, the first half is the same GROUP BY of one 64-bit hash of
//! the QI values, counted and not kept (`"group_by": "hashed"`, no
//! combinations); if that does not fit either, one scan hashing every QI value
//! (`"scan"`). Each costs less than the plain GROUP BY would, so the ratio to
//! it is an upper bound; `group_by_failed_after_seconds` says how long the
//! GROUP BY ran before it failed. Prints one JSON object with the
//! times, the distinct QI combinations and the rows.
//! Building the hierarchies is timed apart (`hierarchy_seconds`).

use crate::data::frequency;
use crate::data::hierarchy::{self, h_table};
use crate::engine::embedded;
use crate::engine::types::ColumnType;
use crate::error::bad;
use crate::job::{parse_levels, DateUnit, HierarchySpec, Job};
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
    /// Time one scan hashing every QI value instead of the GROUP BY (what
    /// `limit` falls back to when the GROUP BY does not fit in memory).
    #[arg(long, conflicts_with = "hashed")]
    pub scan: bool,
    /// Time the GROUP BY of one hash of the QI values instead (what `limit`
    /// tries first when the plain GROUP BY does not fit in memory).
    #[arg(long)]
    pub hashed: bool,
    /// Time only the plain-SQL write, not today's write through the maps
    /// (at 10⁹ rows each write takes tens of minutes).
    #[arg(long)]
    pub plain_only: bool,
    /// No progress spinner.
    #[arg(long)]
    pub quiet: bool,
}

/// Catalog name of the scratch database.
const SCRATCH: &str = "kanon_limit";

pub fn run(args: Args) -> Result<()> {
    let job = Job::load(&args.job)?;
    let levels = parse_levels(&job, &args.node)?;
    crate::anonymize::plan::refuse_on_engine(&job, crate::anonymize::plan::Feature::Limit)?;
    let (conn, columns) = embedded::open(&job)?;
    check_columns(&job, &columns)?;
    let qis = job.qi_names();
    let bar = spinner(args.quiet);

    bar.set_message("GROUP BY of the quasi-identifiers");
    let cols = list(qis.iter(), ", ", |q| ident(q));
    let start = Instant::now();
    let by = list(qis.iter().enumerate(), ", ", |(a, q)| format!("{} AS g{a}", ident(q)));
    let grouped = (!args.scan && !args.hashed).then(|| {
        conn.execute_batch(&render(fragment(sql::LIMIT, "group_by"), &[("columns", &by)]))
            .context("grouping the source by its quasi-identifiers")
    });
    // DuckDB's GROUP BY of the raw values may not fit in [engine] memory_limit
    // and its spill folder (at 10⁹ near-unique rows in 8 GB it does not): the
    // yardstick is then the GROUP BY of one hash of the values (8-byte keys,
    // not strings), or one scan hashing every QI value; any GROUP BY of them
    // costs at least either. `kind` names the statement, `rows` its column of
    // the source's rows.
    let fallback = |kind: &'static str, what: &'static str, rows: usize| -> Result<(&str, f64, Option<i64>, i64)> {
        bar.set_message(what);
        conn.execute_batch("DROP TABLE IF EXISTS kanon_limit_groups")?;
        // Timed from here: a failed attempt is no part of the yardstick.
        let start = Instant::now();
        let rows: i64 = conn
            .query_row(&render(fragment(sql::LIMIT, kind), &[("columns", &cols)]), [], |r| r.get(rows))
            .with_context(|| format!("timing {what}"))?;
        Ok((kind, start.elapsed().as_secs_f64(), None, rows))
    };
    let scan = || fallback("scan", "a scan of the quasi-identifiers", 0);
    let hashed = || fallback("hashed", "a GROUP BY of the quasi-identifiers' hash", 1);
    // How long a GROUP BY that ran out of memory or disk ran before it failed.
    let mut failed_after = None;
    let (yardstick, group_by, combinations, rows) = match grouped {
        Some(Ok(())) => {
            let (combinations, rows): (i64, i64) =
                conn.query_row("SELECT count(*), coalesce(sum(cnt), 0)::BIGINT FROM kanon_limit_groups", [], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })?;
            ("group_by", start.elapsed().as_secs_f64(), Some(combinations), rows)
        }
        Some(Err(e)) if crate::error::resource_hint(&e).is_some() => {
            failed_after = Some(start.elapsed().as_secs_f64());
            match hashed() {
                Ok(timed) => timed,
                Err(e) if crate::error::resource_hint(&e).is_some() => scan()?,
                Err(e) => return Err(e),
            }
        }
        Some(Err(e)) => return Err(e),
        None if args.hashed => hashed()?,
        None => scan()?,
    };
    conn.execute_batch("DROP TABLE IF EXISTS kanon_limit_groups")?;

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
        ))
        .with_context(|| format!("building the value → label map of \"{}\"", h.column))?;
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
    let kind = Written::of(&job);
    // The plain-SQL limit: each QI by the cheapest expression of its hierarchy.
    let plain: Vec<Recode> =
        (0..qis.len()).map(|a| plain_recode(&job, &columns, a, levels[a], hierarchies[a].height)).collect();
    let start = Instant::now();
    let written = write(&conn, &job, &columns, &qis, &plain, &scratch.path().join("plain"), kind)?;
    let plain_seconds = start.elapsed().as_secs_f64();
    check_rows(written, rows)?;
    // Today's figure: every QI joined to its value → label map.
    let maps_seconds = if args.plain_only {
        None
    } else {
        let joined: Vec<Recode> = (0..qis.len()).map(|_| Recode::Map).collect();
        let start = Instant::now();
        let written = write(&conn, &job, &columns, &qis, &joined, &scratch.path().join("maps"), kind)?;
        check_rows(written, rows)?;
        Some(start.elapsed().as_secs_f64())
    };
    bar.finish_and_clear();
    let node: serde_json::Map<String, serde_json::Value> =
        qis.iter().zip(&levels).map(|(q, &l)| (q.clone(), l.into())).collect();
    let out = json!({
        "group_by_seconds": group_by,
        "group_by": yardstick,
        "group_by_failed_after_seconds": failed_after,
        "write_seconds": plain_seconds,
        "total_seconds": group_by + plain_seconds,
        "maps_write_seconds": maps_seconds,
        "maps_total_seconds": maps_seconds.map(|m| group_by + m),
        "written_as": kind.name(),
        "combinations": combinations,
        "rows": rows,
        "hierarchy_seconds": hierarchy_seconds,
        "node": node,
    });
    println!("{}", serde_json::to_string(&out)?);
    Ok(())
}

fn check_rows(written: i64, rows: i64) -> Result<()> {
    if written != rows {
        anyhow::bail!("the recode-and-write wrote {written} rows, the source has {rows}");
    }
    Ok(())
}

/// How the write recodes one QI.
enum Recode {
    /// An SQL expression over the source row `s`.
    Expression(String),
    /// A join to the QI's value → label map.
    Map,
}

/// The cheapest SQL a QI's hierarchy allows at `level`: the value itself at
/// the leaves, a constant at the top, an expression for a built-in hierarchy,
/// the map for a file.
fn plain_recode(job: &Job, columns: &[embedded::SourceColumn], a: usize, level: u8, height: u8) -> Recode {
    let qi = &job.quasi_identifiers[a];
    let col = ident(&qi.column.name);
    let type_name = columns.iter().find(|c| c.name == qi.column.name).map_or("", |c| c.type_name.as_str());
    let typed = |kind: &str, cast: &str| {
        if type_name.to_ascii_uppercase().starts_with(kind) {
            format!("s.{col}")
        } else {
            format!("TRY_CAST(s.{col} AS {cast})")
        }
    };
    let l = level as usize;
    if l == 0 {
        return Recode::Expression(format!("s.{col}"));
    }
    if l == height as usize && !matches!(qi.hierarchy, HierarchySpec::File(_) | HierarchySpec::Mask(_)) {
        return Recode::Expression("'*'".into());
    }
    let frag = |name: &str, slots: &[(&str, &str)]| Recode::Expression(render(fragment(sql::LIMIT, name), slots));
    match &qi.hierarchy {
        // A mask's extra top level (values of several lengths) is one '*'.
        HierarchySpec::Mask(n) if l > *n => Recode::Expression("'*'".into()),
        HierarchySpec::Mask(_) => frag("mask", &[("col", &col), ("i", &l.to_string()), ("stars", &"*".repeat(l))]),
        HierarchySpec::Intervals(widths) => {
            let x = if ColumnType::of(type_name).is_number() {
                format!("s.{col}")
            } else {
                format!("TRY_CAST(s.{col} AS DOUBLE)")
            };
            frag("interval", &[("x", &x), ("width", &format!("{:?}", widths[l - 1]))])
        }
        HierarchySpec::Date(units) => {
            let d = typed("DATE", "DATE");
            let d = if d.starts_with("TRY_CAST") { typed("TIMESTAMP", "DATE") } else { d };
            let unit = match units[l - 1] {
                DateUnit::Month => "month",
                DateUnit::Quarter => "quarter",
                DateUnit::Year => "year",
                DateUnit::Decade => "decade",
                DateUnit::Century => "century",
            };
            frag(unit, &[("d", &d)])
        }
        HierarchySpec::Suppress => Recode::Expression("'*'".into()),
        HierarchySpec::File(_) => Recode::Map,
    }
}

/// What the writes produce: the job's release kind.
#[derive(Clone, Copy)]
enum Written {
    Table,
    Parquet,
    Csv,
}

impl Written {
    fn of(job: &Job) -> Written {
        if job.output.table.is_some() || job.output.remote_table.is_some() {
            Written::Table
        } else if job.output.parquet.is_some() {
            Written::Parquet
        } else {
            Written::Csv
        }
    }

    fn name(self) -> &'static str {
        match self {
            Written::Table => "table",
            Written::Parquet => "parquet",
            Written::Csv => "csv",
        }
    }
}

fn map_table(a: usize) -> String {
    format!("kanon_limit_map{a}")
}

/// Recode every source row (`recode` per QI) into a table of a fresh database
/// at `path` (the detach is timed too, as it writes the table out), or a
/// file there. Returns the rows written.
fn write(
    conn: &duckdb::Connection,
    job: &Job,
    columns: &[embedded::SourceColumn],
    qis: &[String],
    recode: &[Recode],
    path: &Path,
    kind: Written,
) -> Result<i64> {
    let select =
        list(columns.iter().filter(|c| !job.output.drop.iter().any(|d| d.name == c.name)), ", ", |c| {
            match qis.iter().position(|q| *q == c.name) {
                Some(a) => match &recode[a] {
                    Recode::Expression(e) => format!("{e} AS {}", ident(&c.name)),
                    Recode::Map => format!("m{a}.label AS {}", ident(&c.name)),
                },
                None => format!("s.{}", ident(&c.name)),
            }
        });
    let joins = list(qis.iter().enumerate().filter(|(a, _)| matches!(recode[*a], Recode::Map)), " ", |(a, q)| {
        format!("JOIN {} m{a} ON s.{} IS NOT DISTINCT FROM m{a}.n", map_table(a), ident(q))
    });
    let file = |ext: &str, format: &str| -> Result<i64> {
        let file = path.with_extension(ext);
        conn.execute_batch(&render(
            fragment(sql::LIMIT, "copy"),
            &[("columns", &select), ("joins", &joins), ("path", &literal(&file.to_string_lossy())), ("format", format)],
        ))
        .context("recoding and writing the source")?;
        let q = if ext == "parquet" {
            format!("SELECT count(*) FROM read_parquet({})", literal(&file.to_string_lossy()))
        } else {
            format!("SELECT count(*) FROM read_csv({}, header = true)", literal(&file.to_string_lossy()))
        };
        Ok(conn.query_row(&q, [], |r| r.get(0))?)
    };
    match kind {
        Written::Parquet => file("parquet", "FORMAT PARQUET"),
        Written::Csv => file("csv", "FORMAT CSV, HEADER"),
        Written::Table => {
            let db = path.with_extension("duckdb");
            let target = format!("{}.main.release", ident(SCRATCH));
            conn.execute_batch(&format!("ATTACH {} AS {}", literal(&db.to_string_lossy()), ident(SCRATCH)))
                .with_context(|| format!("opening scratch database {}", db.display()))?;
            conn.execute_batch(&render(
                fragment(sql::LIMIT, "write"),
                &[("target", &target), ("columns", &select), ("joins", &joins)],
            ))
            .context("recoding and writing the source")?;
            let rows: i64 = conn.query_row(&format!("SELECT count(*) FROM {target}"), [], |r| r.get(0))?;
            conn.execute_batch(&format!("DETACH {}", ident(SCRATCH))).context("writing the scratch database")?;
            Ok(rows)
        }
    }
}
