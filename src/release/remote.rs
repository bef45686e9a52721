//! The full-domain release on a remote engine (Spark, PostgreSQL): one
//! statement there, each QI recoded by its plain expression ([`super::plain`],
//! a join only for a QI that needs its map), the suppressed classes' rows
//! left out by an anti-join on their labels.

use super::plain;
use super::Written;
use crate::data::hierarchy::{code_table, node_table};
use crate::engine::embedded::{statement, SourceColumn};
use crate::engine::remote::{RemoteEngine, WorkUse};
use crate::job::Job;
use crate::sql::{self, fragment, ident, list, render};
use anyhow::{Context, Result};
use duckdb::Connection;

/// The suppressed classes' labels there (`kanon_release_suppressed`).
const SUPPRESSED: &str = "kanon_release_suppressed";
/// The base set's rows under the suppressed classes there, on the way to
/// their values (`values_there`).
const UNDER: &str = "kanon_release_under";

/// The full-domain release where the source lives ([`crate::engine::remote`]):
/// the QIs recoded at `levels` (hierarchies of `heights`), the rows of the
/// suppressed classes left out: `dropped` (their codes at those levels, here)
/// or, when `dropped_there` names it, the work table there that holds them.
/// Written by the engine's `write_table`, swapped in with `before_commit`.
#[allow(clippy::too_many_arguments)]
/// What the release leaves out.
pub(super) struct Suppressed<'a> {
    /// The suppressed classes by their codes at the node's levels,
    pub(super) classes: &'a [Box<[i64]>],
    /// or the evaluator's work table there that holds them.
    pub(super) there: Option<&'a str>,
    /// `[privacy] person`: the person column, whose persons in
    /// `kanon_dropped_persons` go with all their rows.
    pub(super) persons: Option<&'a str>,
}

pub(super) fn write_levels(
    conn: &Connection,
    remote: &dyn RemoteEngine,
    job: &Job,
    columns: &[SourceColumn],
    heights: &[u8],
    levels: &[u8],
    left_out: &Suppressed,
    before_commit: Option<&super::BeforeCommit>,
) -> Result<Written> {
    let Suppressed { classes: dropped, there: dropped_there, persons } = *left_out;
    let table = job.output.remote_table.as_deref().context("a remote job names its release table")?;
    let qis = job.qi_names();
    let out = &job.output;
    let recoding = plain::recoding_on_engine(conn, remote, job, columns, levels, heights)?;
    let mut joins = recoding.joins;
    let pseudonym = match out.pseudonymize.is_empty() {
        true => None,
        false => {
            let key = out.key.as_ref().context("[output] pseudonymize without a key")?;
            joins.push_str("\nCROSS JOIN kanon_release_key kk");
            Some(remote.share_key(key)?)
        }
    };
    let select = list(columns.iter().filter(|c| !out.drop.iter().any(|d| d.name == c.name)), ", ", |c| {
        let name = ident(&c.name);
        match qis.iter().position(|q| *q == c.name) {
            Some(a) => format!("{} AS {name}", recoding.labels[a]),
            None if out.pseudonymize.iter().any(|p| p.name == c.name) => {
                format!("{} AS {name}", pseudonym.expect("a key was shared")(&format!("s.{name}")))
            }
            None => format!("s.{name}"),
        }
    });
    let persons = match persons {
        Some(person) => dropped_persons(conn, remote, columns, person)?,
        None => String::new(),
    };
    let recoded = |kept: &str| {
        render(fragment(sql::RELEASE_JOINED, "recoded"), &[("columns", &select), ("joins", &joins), ("persons", kept)])
    };
    let select = if let (Some(there), true, true) = (dropped_there, remote.anti_join_on_values(), persons.is_empty()) {
        // Classes there, on an engine that would compute each label twice: left
        // out by their rows' source values, each label computed once.
        match values_there(conn, remote, columns, &qis, levels, there)? {
            None => recoded(""),
            Some(matched) => recoded(&render(fragment(sql::RELEASE_JOINED, "values_kept"), &[("match", &matched)])),
        }
    } else {
        let recoded = recoded(&persons);
        match suppressed(conn, remote, levels, dropped, dropped_there)? {
            // No class suppressed: no join at all.
            None => recoded,
            Some(nullable) => {
                // A QI whose suppressed labels have no NULL matches on plain `=`: a row
                // whose label is NULL matches none of them either way. Fewer, simpler keys.
                let matched = list(qis.iter().enumerate(), " AND ", |(a, q)| {
                    let (row, class) = (format!("r.{}", ident(q)), format!("d.q{a}"));
                    match nullable[a] {
                        true => remote.same_value(&row, &class, "VARCHAR", true),
                        false => {
                            render(fragment(sql::RELEASE_JOINED, "label_equal"), &[("row", &row), ("class", &class)])
                        }
                    }
                });
                render(fragment(sql::RELEASE_JOINED, "kept"), &[("recoded", &recoded), ("match", &matched)])
            }
        }
    };
    let rows = remote.write_table(table, &select, before_commit)?;
    let _ = remote.drop_work(SUPPRESSED);
    let _ = remote.drop_work(PERSONS);
    Ok(Written { rows })
}

/// The values of the persons in `kanon_dropped_persons` as the table
/// `kanon_release_persons` there, and the condition leaving their rows out
/// (empty when no person is dropped).
fn dropped_persons(
    conn: &Connection,
    remote: &dyn RemoteEngine,
    columns: &[SourceColumn],
    person: &str,
) -> Result<String> {
    let count: i64 = conn.query_row(fragment(sql::PERSONS, "dropped_count"), [], |r| r.get(0))?;
    if count == 0 {
        return Ok(String::new());
    }
    remote.share(conn, fragment(sql::PERSONS, "dropped_values"), &[], PERSONS)?;
    let type_name = columns.iter().find(|c| c.name == person).map_or("", |c| c.type_name.as_str());
    let same = remote.same_value(&format!("s.{}", ident(person)), "d.n", type_name, false);
    Ok(render(fragment(sql::RELEASE_JOINED, "persons_kept"), &[("match", &same)]))
}

/// The table there of the persons the release leaves out.
const PERSONS: &str = "kanon_release_persons";

/// The suppressed classes' label tuples as the table [`SUPPRESSED`] there
/// (q0…, one per QI), or None when no class is suppressed; per QI whether a
/// label is NULL. From `dropped`, the labels are looked up here and the
/// tuples sent (one round trip); from `dropped_there` (the evaluator's work
/// table there), see [`labels_there`]. `KANON_DROPPED_THERE` sends `dropped`
/// there first and takes that path (for its tests, before an evaluator
/// leaves classes there).
fn suppressed(
    conn: &Connection,
    remote: &dyn RemoteEngine,
    levels: &[u8],
    dropped: &[Box<[i64]>],
    dropped_there: Option<&str>,
) -> Result<Option<Vec<bool>>> {
    let n = levels.len();
    if let Some(there) = dropped_there {
        return labels_there(conn, remote, levels, there);
    }
    if dropped.is_empty() {
        return Ok(None);
    }
    conn.execute_batch(&statement("release_dropped", &[("columns", &list(0..n, ", ", |a| format!("c{a} BIGINT")))]))?;
    let mut app = conn.appender_to_catalog_and_db("kanon_release_dropped", "temp", "main")?;
    for class in dropped {
        app.append_row(duckdb::appender_params_from_iter(class.iter()))?;
    }
    app.flush()?;
    drop(app);
    if std::env::var("KANON_DROPPED_THERE").is_ok_and(|v| !v.is_empty()) {
        let all = statement("select_all", &[("relation", "kanon_release_dropped")]);
        remote.share(conn, &all, &[], "kanon_release_dropped_sent")?;
        let sent = statement("select_all", &[("relation", "kanon_release_dropped_sent")]);
        remote.create_work("kanon_release_dropped", &sent, WorkUse::default())?;
        return labels_there(conn, remote, levels, "kanon_release_dropped");
    }
    let joins = list(levels.iter().enumerate(), "\n", |(a, l)| {
        format!("JOIN {} l{a} ON l{a}.level = {l} AND l{a}.code = d.c{a}", node_table(a))
    });
    let labels = render(
        fragment(sql::RELEASE_JOINED, "suppressed"),
        &[
            ("labels", &list(0..n, ", ", |a| format!("l{a}.label AS q{a}"))),
            ("codes", "kanon_release_dropped"),
            ("joins", &joins),
        ],
    );
    conn.execute_batch(&render(fragment(sql::RELEASE_MAP, "local_suppressed"), &[("select", &labels)]))?;
    let nulls = list(0..n, ", ", |a| format!("count(*) - count(q{a})"));
    let nullable =
        conn.query_row(&render(fragment(sql::RELEASE_MAP, "suppressed_nulls"), &[("nulls", &nulls)]), [], |r| {
            (0..n).map(|a| Ok(r.get::<_, i64>(a)? > 0)).collect::<duckdb::Result<Vec<bool>>>()
        })?;
    let all = statement("select_all", &[("relation", "kanon_release_suppressed")]);
    remote.share(conn, &all, &[], SUPPRESSED).context("sending the suppressed classes' labels")?;
    Ok(Some(nullable))
}

/// The suppressed classes' rows by their QIs' source values, as the work
/// table [`SUPPRESSED`] there (q0…): the base set's rows under the classes in
/// `codes` (their codes at `levels`), found first by one parallel pass over
/// the base, then each code turned back into its value by the QI's code table
/// there (the code tables joined to those few rows only). None when no class
/// is suppressed; else the condition matching a source row `s` to one of them
/// (NULL matching NULL).
fn values_there(
    conn: &Connection,
    remote: &dyn RemoteEngine,
    columns: &[SourceColumn],
    qis: &[String],
    levels: &[u8],
    codes: &str,
) -> Result<Option<String>> {
    let n = levels.len();
    let divisors = crate::data::hierarchy::divisors(conn, n)?;
    let under = list(0..n, " AND ", |a| {
        let (code, divisor) = (format!("f.g{a}"), divisors[a][levels[a] as usize]);
        let at = match divisor {
            1 => code,
            d => render(remote.spelling("int_div"), &[("a", &code), ("b", &d.to_string())]),
        };
        format!("d.c{a} = {at}")
    });
    let under = render(
        fragment(sql::RELEASE_JOINED, "rows_under"),
        &[
            ("leaves", &list(0..n, ", ", |a| format!("f.g{a}"))),
            ("base", crate::data::frequency::BASE_THERE),
            ("codes", &ident(codes)),
            ("under", &under),
        ],
    );
    let rows = remote
        .create_work(UNDER, &under, WorkUse { probes_small: true, ..WorkUse::default() })
        .context("finding the suppressed classes' rows")?;
    if rows == Some(0) {
        let _ = remote.drop_work(UNDER);
        return Ok(None);
    }
    let values = render(
        fragment(sql::RELEASE_JOINED, "suppressed_values"),
        &[
            ("values", &list(0..n, ", ", |a| format!("v{a}.n AS q{a}"))),
            ("joins", &list(0..n, "\n", |a| format!("JOIN {} v{a} ON v{a}.c0 = f.g{a}", code_table(a)))),
        ],
    );
    let built = remote.create_work(SUPPRESSED, &values, WorkUse::default());
    let _ = remote.drop_work(UNDER);
    built.context("building the suppressed rows' values")?;
    let mut matched = Vec::with_capacity(n);
    for (a, q) in qis.iter().enumerate() {
        let type_name = columns.iter().find(|c| c.name == *q).map_or("", |c| c.type_name.as_str());
        let nullable = crate::engine::embedded::has_null(conn, &code_table(a))?;
        matched.push(remote.same_value(&format!("s.{}", ident(q)), &format!("d.q{a}"), type_name, nullable));
    }
    Ok(Some(matched.join(" AND ")))
}

/// [`suppressed`] from the classes' codes in the table `codes` there: every
/// QI's codes among them fetched in one query (one row per QI and code),
/// their labels looked up here and sent there as one table, and the label
/// tuples built there as the work table [`SUPPRESSED`].
fn labels_there(conn: &Connection, remote: &dyn RemoteEngine, levels: &[u8], codes: &str) -> Result<Option<Vec<bool>>> {
    let n = levels.len();
    // Every QI's codes in one round trip there (a Spark job each had cost 0.2 s).
    let distinct = list(0..n, " UNION ALL ", |a| {
        render(
            fragment(sql::RELEASE_MAP, "class_codes"),
            &[("a", &a.to_string()), ("codes", &ident(codes)), ("c", &format!("c{a}"))],
        )
    });
    if remote.fetch(conn, &distinct, "kanon_release_codes")? == 0 {
        return Ok(None);
    }
    conn.execute_batch(fragment(sql::RELEASE_MAP, "labels_table"))?;
    let mut nullable = Vec::with_capacity(n);
    for (a, &l) in levels.iter().enumerate() {
        conn.execute_batch(&render(
            fragment(sql::RELEASE_MAP, "code_labels"),
            &[("nodes", &node_table(a)), ("level", &l.to_string()), ("a", &a.to_string())],
        ))?;
        let counted = render(fragment(sql::RELEASE_MAP, "labels_counted"), &[("a", &a.to_string())]);
        let (labels, nulls): (i64, i64) = conn.query_row(&counted, [], |r| Ok((r.get(0)?, r.get(1)?)))?;
        crate::trace(|| format!("release: {labels} labels of QI {a} among the suppressed classes"));
        nullable.push(nulls > 0);
    }
    let all = statement("select_all", &[("relation", "kanon_release_labels")]);
    remote.share(conn, &all, &[], "kanon_release_labels")?;
    let labels = list(0..n, ", ", |a| format!("l{a}.label AS q{a}"));
    let joins = list(0..n, "\n", |a| format!("JOIN kanon_release_labels l{a} ON l{a}.a = {a} AND d.c{a} = l{a}.code"));
    let select = render(
        fragment(sql::RELEASE_JOINED, "suppressed"),
        &[("labels", &labels), ("codes", &ident(codes)), ("joins", &joins)],
    );
    remote.create_work(SUPPRESSED, &select, WorkUse::default()).context("building the suppressed classes' labels")?;
    Ok(Some(nullable))
}
