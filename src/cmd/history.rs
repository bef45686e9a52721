//! `kanon history JOB [--json]`: the runs recorded in the job's output
//! database (`kanon_runs`, one row per successful run), oldest first; the
//! work is [`crate::engine::history`].

use crate::job::Job;
use anyhow::Result;
use serde_json::Value;
use std::io::Write;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The job file (TOML).
    pub(crate) job: PathBuf,
    /// Print every column of every run as a JSON array.
    #[arg(long)]
    pub(crate) json: bool,
}

pub(crate) fn run(args: Args) -> Result<()> {
    let job = Job::load(&args.job)?;
    let runs = crate::engine::history::read(&job)?;
    let text = if args.json {
        serde_json::to_string_pretty(&runs)?
    } else if runs.is_empty() {
        format!("no runs recorded for {}", job.path.display())
    } else {
        table(&runs)
    };
    // A reader that stops early (`| head`) is not an error.
    match writeln!(std::io::stdout().lock(), "{text}") {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}

/// The runs as aligned columns, the node last.
fn table(runs: &[serde_json::Map<String, Value>]) -> String {
    let show = |v: Option<&Value>| match v {
        None | Some(Value::Null) => "-".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Object(m)) => m.iter().map(|(q, l)| format!("{q}={l}")).collect::<Vec<_>>().join(","),
        Some(Value::Number(n)) if n.is_f64() => format!("{:.2}", n.as_f64().unwrap_or(0.0)),
        Some(other) => other.to_string(),
    };
    let header =
        ["started_at", "model", "rows_in", "rows_out", "suppressed", "k", "l", "reused", "drift", "seconds", "node"];
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            header
                .iter()
                .map(|h| match *h {
                    "drift" => r.get("drift").and_then(|d| d.get("failed")).map_or("-".into(), |f| show(Some(f))),
                    _ => show(r.get(*h)),
                })
                .collect()
        })
        .collect();
    let widths: Vec<usize> = (0..header.len())
        .map(|i| rows.iter().map(|r| r[i].len()).chain([header[i].len()]).max().unwrap_or(0))
        .collect();
    let line = |cells: &[String]| {
        cells.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect::<Vec<_>>().join("  ").trim_end().to_string()
    };
    std::iter::once(line(&header.map(String::from))).chain(rows.iter().map(|r| line(r))).collect::<Vec<_>>().join("\n")
}
