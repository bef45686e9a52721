//! `kanon check` (flags: `kanon help check`).
//!
//! Measures the source (or table T of the output database, e.g. a release):
//! rows, equivalence classes over the job's QI columns, k (smallest class), ℓ
//! (fewest distinct sensitive values in a class, when the job asks for ℓ) and
//! the class-size histogram. Reads only; changes nothing.

use crate::database::{self, OUT};
use crate::error::bad;
use crate::job::Job;
use crate::load::check_columns;
use crate::sql::{self, ident, list, render};
use anyhow::Result;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The job file (TOML).
    pub job: PathBuf,
    /// Measure this table of the output database instead of the source.
    #[arg(long, value_name = "T")]
    pub table: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args) -> Result<()> {
    let job = Job::load(&args.job)?;
    let (conn, columns) = database::open(&job)?;
    check_columns(&job, &columns)?;
    let relation = match &args.table {
        None => "kanon_source".to_string(),
        Some(t) => {
            let Some(out) = &job.output.table else {
                return Err(bad(format!("{}: --table needs an [output] database", job.path.display())));
            };
            database::attach_output(&conn, &job, out, true)?;
            if !database::table_exists(&conn, OUT, t)? {
                return Err(bad(format!("table \"{t}\" not found in {}", out.database.display())));
            }
            format!("{}.main.{}", ident(OUT), ident(t))
        }
    };
    let sensitive = job.privacy.diversity.as_ref().map(|d| d.column.name.clone());
    let ldiv = match &sensitive {
        Some(s) => format!("count(DISTINCT {})", ident(s)),
        None => "0".into(),
    };
    let q = render(
        sql::MEASURE_CLASSES,
        &[("table", &relation), ("columns", &list(job.qi_names(), ", ", |c| ident(&c))), ("ldiv", &ldiv)],
    );
    let mut stmt = conn.prepare(&q).map_err(|e| bad(format!("measuring {relation}: {e}")))?;
    let buckets: Vec<(i64, i64, i64)> =
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?.collect::<duckdb::Result<_>>()?;
    let rows: i64 = buckets.iter().map(|(s, _, c)| s * c).sum();
    let classes: i64 = buckets.iter().map(|(_, _, c)| c).sum();
    let k = buckets.iter().map(|b| b.0).min();
    let l = sensitive.as_ref().and(buckets.iter().map(|b| b.1).min());
    let mut histogram: BTreeMap<i64, i64> = BTreeMap::new();
    for (size, _, c) in &buckets {
        *histogram.entry(*size).or_default() += c;
    }
    let target = args.table.clone().unwrap_or_else(|| "source".into());
    if args.json {
        let hist: Vec<[i64; 2]> = histogram.iter().map(|(s, c)| [*s, *c]).collect();
        let out = json!({"table": target, "quasi_identifiers": job.qi_names(), "rows": rows, "classes": classes,
                         "k": k, "l": l, "k_anonymous": k.is_some_and(|k| k as u64 >= job.privacy.k),
                         "histogram": hist});
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!("{target}: {rows} rows in {classes} classes over {}", job.qi_names().join(", "));
        println!("k = {}", k.map_or("-".into(), |k| k.to_string()));
        if let Some(s) = &sensitive {
            println!("l = {} (distinct \"{s}\")", l.map_or("-".into(), |l| l.to_string()));
        }
        println!("class size\tclasses");
        for (s, c) in &histogram {
            println!("{s}\t{c}");
        }
    }
    Ok(())
}
