//! Opening what the audit reads: the source wherever it lives, the audited
//! table (the source, or table T of the output database or of the remote
//! engine), each checked for the columns the job names; on a remote engine
//! with a population table, the groups that come back instead of the
//! records ([`Records`]).

use super::{AUDITED, S, T};
use crate::data::frequency;
use crate::engine::embedded::{self, SourceColumn, OUT};
use crate::engine::remote::Remote;
use crate::error::{bad, OrBadInput};
use crate::job::{Column, Job};
use crate::load::check_remote_types;
use crate::sql::{self, fragment, ident, list, render};
use anyhow::{Context, Result};
use duckdb::Connection;

/// The source opened: the remote engine it lives on (None: DuckDB), the
/// local connection the audit runs in, and the source's columns.
pub(super) fn open_source(job: &Job) -> Result<(Option<Remote>, Connection, Vec<SourceColumn>)> {
    let crate::engine::Opened { conn, columns, remote, .. } = crate::engine::open(job, false)?;
    if let Some(r) = &remote {
        check_remote_types(job, r.as_ref(), &columns)?;
    }
    Ok((remote, conn, columns))
}

/// The job's columns by what the audit does with them.
pub(super) struct Roles<'a> {
    /// (alias, column) of the sensitive columns the models read.
    pub(super) extra: Vec<(&'static str, &'a Column)>,
    /// What the source must have: the sensitive columns (t-closeness and the
    /// codes read them), the QIs when it is audited or charted.
    pub(super) in_source: Vec<(&'a Column, &'static str)>,
    /// What the audited table must have: the QIs and the sensitive columns.
    pub(super) in_table: Vec<(&'a Column, &'static str)>,
}

impl<'a> Roles<'a> {
    /// `source_qis`: the source is audited or charted, so its QIs are read.
    pub(super) fn new(job: &'a Job, source_qis: bool) -> Roles<'a> {
        let qis: Vec<&Column> = job.quasi_identifiers.iter().map(|q| &q.column).collect();
        let mut extra: Vec<(&str, &Column)> = job.sensitive.iter().map(|c| (S, c)).collect();
        extra.extend(job.closeness_column().map(|c| (T, c)));
        let mut in_source: Vec<(&Column, &str)> = extra.iter().map(|(_, c)| (*c, "sensitive column")).collect();
        if source_qis {
            in_source.extend(qis.iter().map(|c| (*c, "quasi-identifier")));
        }
        let mut in_table: Vec<(&Column, &str)> = qis.iter().map(|c| (*c, "quasi-identifier")).collect();
        in_table.extend(extra.iter().map(|(_, c)| (*c, "sensitive column")));
        // Persons are told apart by their column (pseudonymized in a release, same name).
        in_table.extend(job.privacy.person.iter().map(|c| (c, "person column")));
        in_source.extend(job.privacy.person.iter().map(|c| (c, "person column")));
        Roles { extra, in_source, in_table }
    }
}

/// The relation the audit reads: the source, or table `t` (attached from the
/// output database, or opened as [`AUDITED`] on the remote engine), checked
/// for the columns it must have.
pub(super) fn audited_relation(
    conn: &Connection,
    job: &Job,
    table: Option<&str>,
    remote: Option<&Remote>,
    roles: &Roles,
) -> Result<String> {
    match (table, remote) {
        (None, _) => Ok("kanon_source".to_string()),
        (Some(t), None) => {
            let Some(out) = &job.output.table else {
                return Err(bad(format!("{}: --table needs an [output] database", job.path.display())));
            };
            let t = &crate::job::local_table(t).map_err(|m| bad(format!("--table {m}")))?;
            embedded::attach_output(conn, job, out, true)?;
            if !embedded::table_exists(conn, OUT, t)? {
                return Err(bad(format!("table \"{t}\" not found in {}", out.database.display())));
            }
            let relation = format!("{}.main.{}", ident(OUT), ident(t));
            let have = relation_columns(conn, &relation).or_bad_input(|| format!("reading table \"{t}\""))?;
            require(job, &format!("table \"{t}\""), &have, &roles.in_table)?;
            Ok(relation)
        }
        (Some(t), Some(r)) => {
            let have =
                r.open_table(t, AUDITED)?.ok_or_else(|| bad(format!("table \"{t}\" not found in {}", r.name())))?;
            require(job, &format!("table \"{t}\""), &have, &roles.in_table)?;
            Ok(AUDITED.to_string())
        }
    }
}

/// Each named column is one of `have` (`what`: "the source", "table \"T\"", …).
pub(super) fn require(job: &Job, what: &str, have: &[SourceColumn], named: &[(&Column, &str)]) -> Result<()> {
    for (col, role) in named {
        if have.iter().any(|c| c.name == col.name) {
            continue;
        }
        let hint = match have.iter().find(|c| c.name.eq_ignore_ascii_case(&col.name)) {
            Some(c) => format!("did you mean \"{}\"?", c.name),
            None => format!("it has {}", list(have, ", ", |c| format!("\"{}\"", c.name))),
        };
        return Err(bad(format!("{}: {role} \"{}\" is not a column of {what}; {hint}", job.at(col), col.name)));
    }
    Ok(())
}

pub(super) use crate::engine::embedded::relation_columns;

/// How the audit counts records: DuckDB reads the tables as they are, a row
/// per record; on a remote engine with a population table to join here
/// (else the classes are measured there, `engine.rs`) the tables are grouped
/// there by the columns the audit reads, and only the groups come back (as `kanon_source` and
/// [`AUDITED`]), each with its records in `weight`.
#[derive(Default)]
pub(super) struct Records {
    pub(super) weight: Option<String>,
}

impl Records {
    /// Group the source by the `source` columns (none: it is not read) and
    /// the audited table by the `table` columns, there; bring the groups here.
    pub(super) fn fetch<'a>(
        conn: &Connection,
        remote: &Remote,
        source: &[(&'a Column, &str)],
        table: Option<&[(&'a Column, &str)]>,
    ) -> Result<Records> {
        fn names<'a>(named: &[(&'a Column, &str)]) -> Vec<&'a str> {
            let mut names: Vec<&str> = Vec::new();
            for (c, _) in named {
                if !names.contains(&c.name.as_str()) {
                    names.push(&c.name);
                }
            }
            names
        }
        let (source, table) = (names(source), table.map(names));
        let weight = frequency::weight_name(source.iter().chain(table.iter().flatten()).copied());
        let grouped = |columns: &[&str], relation: &str| {
            render(
                fragment(sql::CHECK, "grouped"),
                &[
                    ("columns", &list(columns, ", ", |c| ident(c))),
                    ("weight", &ident(&weight)),
                    ("relation", relation),
                    ("ordinals", &list(1..=columns.len(), ", ", |i| i.to_string())),
                ],
            )
        };
        if !source.is_empty() {
            remote.fetch(conn, &grouped(&source, "kanon_source"), "kanon_source").context("grouping the source")?;
        }
        if let Some(table) = table {
            remote.fetch(conn, &grouped(&table, AUDITED), AUDITED).context("grouping the audited table")?;
        }
        Ok(Records { weight: Some(weight) })
    }

    /// A group's records, as an aggregate (BIGINT; plain `count(*)` runs on any engine).
    pub(super) fn count(&self) -> String {
        match &self.weight {
            None => "count(*)".into(),
            Some(w) => format!("sum({})::BIGINT", ident(w)),
        }
    }
}
