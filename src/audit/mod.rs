//! What `kanon check` does (the command is in `cmd/check.rs`).
//!
//! Audits a table against the job: the source, or table T of the output
//! database (a release). Measures rows, equivalence classes over the job's QI
//! columns, k, the ℓ of `[privacy] l_diversity` (distinct, entropy and
//! recursive), the distances of `[privacy] t_closeness`, the class-size
//! histogram and the re-identification risk (docs/risk.md); the verdict is
//! whether every class meets every model of the job (exit 0) or not (exit 4,
//! a line per failing model). t-closeness compares each class with the
//! source's distribution over all its rows. Reads no hierarchy but
//! t-closeness's own; changes nothing. On Spark and PostgreSQL the classes
//! are measured there and only aggregates come back ([`engine`]): the
//! sensitive columns' marginals, and a row per (class size, value lists);
//! with `[risk] population_table` (a local file) the tables are grouped
//! there and the groups come back ([`open::Records`]), to be joined here.
//!
//! Stage by stage: open ([`open`]) → the source's models and the population
//! ([`models`]) → the one pass over the classes ([`classes`]) into the
//! tallies ([`tally`]) → risk and chart → the report ([`report`]) → verdict.

mod classes;
mod engine;
mod models;
mod open;
mod persons;
mod report;
mod tally;

use crate::engine::embedded;
use crate::job::Job;
use crate::measure::risk;
use anyhow::Result;
use classes::Audited;
use engine::There;
use open::{Records, Roles};
use report::CheckReport;
use std::path::PathBuf;
use tally::Audit;

/// What to audit: the job, the table (None: the source) and the outputs.
pub(crate) struct Request {
    pub(crate) job: PathBuf,
    pub(crate) table: Option<String>,
    pub(crate) json: bool,
    pub(crate) svg: Option<PathBuf>,
    /// The approver's page.
    pub(crate) html: Option<PathBuf>,
}

/// The frequency sets' aliases: ℓ's column (or t-closeness's when it is the
/// only one) is `s`, t-closeness's column when it is another is `t`.
const S: &str = "s";
const T: &str = "t";

/// The audited table's name on a remote engine (a view there, a table here).
const AUDITED: &str = "kanon_audited";

/// The audit over persons (`[privacy] person`): k, the histogram and the
/// risk count persons; the rows are reported beside.
fn audit_persons(
    args: &Request,
    job: &Job,
    (conn, remote, columns): (
        &duckdb::Connection,
        Option<&dyn crate::engine::remote::RemoteEngine>,
        &[embedded::SourceColumn],
    ),
    target: &str,
    relation: &str,
) -> Result<()> {
    crate::anonymize::plan::refuse_with_person(job, None)?;
    let models = crate::measure::privacy::ClassModels::default();
    let mut audit = Audit::new(job, &models, columns);
    let rows = persons::classes(conn, remote, job, relation, &mut audit)?;
    let persons = std::mem::replace(&mut audit.rows, rows);
    let table_risk = risk::analyse(&audit.class_sizes(), &job.risk.settings);
    let source_risk = match (&args.table, args.svg.is_some() || args.html.is_some()) {
        (_, false) => None,
        (None, true) => Some(table_risk.clone()),
        (Some(_), true) => {
            let mut source = Audit::new(job, &models, columns);
            persons::classes(conn, remote, job, "kanon_source", &mut source)?;
            Some(risk::analyse(&source.class_sizes(), &job.risk.settings))
        }
    };
    let report = CheckReport::new(job, &audit, target, table_risk.clone()).with_persons(persons);
    if let Some(source_risk) = &source_risk {
        let opened = Opened { conn, remote, columns, relation };
        publish(args, job, &report, (source_risk, &table_risk), &opened)?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.text());
    }
    report.verdict()
}

/// The audited table where it lives: the connection, the remote engine, the
/// source's columns, the relation audited.
struct Opened<'a> {
    conn: &'a duckdb::Connection,
    remote: Option<&'a dyn crate::engine::remote::RemoteEngine>,
    columns: &'a [embedded::SourceColumn],
    relation: &'a str,
}

/// `--svg` and `--html`: the risk chart and the approver's page.
fn publish(
    args: &Request,
    job: &Job,
    report: &CheckReport,
    (source_risk, table_risk): (&risk::Risk, &risk::Risk),
    at: &Opened,
) -> Result<()> {
    if let Some(path) = &args.svg {
        embedded::write_atomically(path, risk::distribution_svg(source_risk, table_risk).as_bytes())?;
    }
    if let Some(path) = &args.html {
        let fingerprint =
            crate::html::fingerprint::audited(at.conn, at.remote, args.table.as_deref(), at.relation, at.columns)?;
        let page = crate::html::check::page(crate::html::check::Checked {
            job,
            report: serde_json::to_value(report)?,
            models: report.html_models(job),
            source_risk,
            table_risk,
            fingerprint: vec![fingerprint],
        })?;
        crate::html::write(path, &page)?;
    }
    Ok(())
}

pub(crate) fn run(args: Request) -> Result<()> {
    let mut job = Job::load(&args.job)?;
    if let Some(dp) = &job.privacy.differential_privacy {
        // A SafePub release holds classes of its derived k (ε less the search's share).
        job.privacy.k = crate::anonymize::plan::safepub_derived(dp, false, &job.path.display().to_string())?.k;
    }
    if let Some(svg) = &args.svg {
        job.check_output_file("--svg", svg, false)?;
    }
    if let Some(html) = &args.html {
        job.check_output_file("--html", html, false)?;
        if args.svg.as_ref().is_some_and(|s| crate::job::same_file(s, html)) {
            return Err(crate::error::bad(format!("--html {} is also --svg", html.display())));
        }
    }
    let (remote, conn, columns) = open::open_source(&job)?;
    let target = args.table.clone().unwrap_or_else(|| "source".into());
    let roles = Roles::new(&job, args.table.is_none() || args.svg.is_some());
    open::require(&job, "the source", &columns, &roles.in_source)?;
    let relation = open::audited_relation(&conn, &job, args.table.as_deref(), remote.as_ref(), &roles)?;
    if job.privacy.person.is_some() {
        return audit_persons(&args, &job, (&conn, remote.as_deref(), &columns), &target, &relation);
    }
    // On an engine, without a population to join here, the classes are measured there.
    let there = remote.as_ref().filter(|_| job.risk.population_table.is_none());
    let records = match (&remote, there) {
        (Some(r), None) => {
            Records::fetch(&conn, r, &roles.in_source, args.table.is_some().then_some(&roles.in_table[..]))?
        }
        _ => Records::default(),
    };
    let models = models::source_models(&conn, &job, &columns, &roles.extra, &records, there)?;
    let there =
        there.map(|r| There { remote: r.as_ref(), conn: &conn, job: &job, extra: &roles.extra, columns: &columns });
    if let Some(t) = &there {
        t.send_codes()?;
    }

    let mut audit = Audit::new(&job, &models, &columns);
    let population = match &there {
        None => models::population(&conn, &job, &relation)?,
        Some(_) => None,
    };
    let audited = Audited { target: &target, relation: &relation, population: population.as_deref() };
    match &there {
        Some(t) => t.classes(&audited, &mut audit)?,
        None => classes::classes(&conn, &job, &audited, &roles.extra, &records, &mut audit)?,
    }
    let table_risk = risk::analyse(&audit.class_sizes(), &job.risk.settings);
    let source_risk = match (&args.table, args.svg.is_some() || args.html.is_some()) {
        (_, false) => None,
        (None, true) => Some(table_risk.clone()),
        (Some(_), true) => Some(match &there {
            Some(t) => risk::analyse(&t.source_sizes()?, &job.risk.settings),
            None => classes::source_risk(&conn, &job, &records)?,
        }),
    };

    let report = CheckReport::new(&job, &audit, &target, table_risk.clone());
    if let Some(source_risk) = &source_risk {
        let opened = Opened { conn: &conn, remote: remote.as_deref(), columns: &columns, relation: &relation };
        publish(&args, &job, &report, (source_risk, &table_risk), &opened)?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.text());
    }
    report.verdict()
}
