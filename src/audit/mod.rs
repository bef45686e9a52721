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
//! t-closeness's own; changes nothing. On Spark and PostgreSQL the tables
//! are grouped there and only the groups come back ([`Records`]).

use crate::data::frequency;
use crate::engine::embedded::{self, SourceColumn, OUT};
use crate::engine::remote::Remote;
use crate::engine::types::ColumnType;
use crate::error::{bad, CheckFailed, OrBadInput};
use crate::job::{Column, DistanceSpec, DiversityKind, Job, PopulationTable};
use crate::load::{check_remote_types, class_models};
use crate::measure::privacy::{entropy, entropy_at_least, recursive, ClassModels, Closeness, Distance};
use crate::measure::risk::{self, ClassSizes, Risk};
use crate::sql::{self, fragment, ident, list, render};
use anyhow::{Context, Result};
use duckdb::arrow::array::{Array, ArrayRef, AsArray, StringArray};
use duckdb::arrow::compute::cast;
use duckdb::arrow::datatypes::{DataType, Int32Type, Int64Type};
use duckdb::Connection;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// What to audit: the job, the table (None: the source) and the outputs.
pub struct Request {
    pub job: PathBuf,
    pub table: Option<String>,
    pub json: bool,
    pub svg: Option<PathBuf>,
}

/// The frequency sets' aliases: ℓ's column (or t-closeness's when it is the
/// only one) is `s`, t-closeness's column when it is another is `t`.
const S: &str = "s";
const T: &str = "t";

/// The audited table's name on a remote engine (a view there, a table here).
const AUDITED: &str = "kanon_audited";

/// How the audit counts records: DuckDB reads the tables as they are, a row
/// per record; on a remote engine the tables are grouped there by the columns
/// the audit reads, and only the groups come back (as `kanon_source` and
/// [`AUDITED`]), each with its records in `weight`.
#[derive(Default)]
struct Records {
    weight: Option<String>,
}

impl Records {
    /// Group the source by the `source` columns (none: it is not read) and
    /// the audited table by the `table` columns, there; bring the groups here.
    fn fetch<'a>(
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

    /// A group's records, as an aggregate.
    fn count(&self) -> String {
        match &self.weight {
            None => "count(*)::BIGINT".into(),
            Some(w) => format!("sum({})::BIGINT", ident(w)),
        }
    }
}

pub fn run(args: Request) -> Result<()> {
    let job = Job::load(&args.job)?;
    if let Some(svg) = &args.svg {
        job.check_output_file("--svg", svg, false)?;
    }
    let crate::engine::Opened { conn, columns, remote, .. } = crate::engine::open(&job, false)?;
    if let Some(r) = &remote {
        check_remote_types(&job, r.as_ref(), &columns)?;
    }
    let target = args.table.clone().unwrap_or_else(|| "source".into());
    let qis: Vec<&Column> = job.quasi_identifiers.iter().map(|q| &q.column).collect();
    // (alias, column) of the sensitive columns the models read.
    let mut extra: Vec<(&str, &Column)> = job.sensitive.iter().map(|c| (S, c)).collect();
    extra.extend(job.closeness_column().map(|c| (T, c)));

    // What the source must have: the sensitive columns (t-closeness and the
    // codes read them), the QIs when it is audited or charted.
    let mut named: Vec<(&Column, &str)> = extra.iter().map(|(_, c)| (*c, "sensitive column")).collect();
    if args.table.is_none() || args.svg.is_some() {
        named.extend(qis.iter().map(|c| (*c, "quasi-identifier")));
    }
    require(&job, "the source", &columns, &named)?;
    let mut named_in_table: Vec<(&Column, &str)> = qis.iter().map(|c| (*c, "quasi-identifier")).collect();
    named_in_table.extend(extra.iter().map(|(_, c)| (*c, "sensitive column")));
    let relation = match (&args.table, &remote) {
        (None, _) => "kanon_source".to_string(),
        (Some(t), None) => {
            let Some(out) = &job.output.table else {
                return Err(bad(format!("{}: --table needs an [output] database", job.path.display())));
            };
            let t = &crate::job::local_table(t).map_err(|m| bad(format!("--table {m}")))?;
            embedded::attach_output(&conn, &job, out, true)?;
            if !embedded::table_exists(&conn, OUT, t)? {
                return Err(bad(format!("table \"{t}\" not found in {}", out.database.display())));
            }
            let relation = format!("{}.main.{}", ident(OUT), ident(t));
            let have = relation_columns(&conn, &relation).or_bad_input(|| format!("reading table \"{t}\""))?;
            require(&job, &format!("table \"{t}\""), &have, &named_in_table)?;
            relation
        }
        (Some(t), Some(r)) => {
            let have =
                r.open_table(t, AUDITED)?.ok_or_else(|| bad(format!("table \"{t}\" not found in {}", r.name())))?;
            require(&job, &format!("table \"{t}\""), &have, &named_in_table)?;
            AUDITED.to_string()
        }
    };
    let records = match &remote {
        None => Records::default(),
        Some(r) => Records::fetch(&conn, r, &named, args.table.is_some().then_some(&named_in_table[..]))?,
    };
    let models = source_models(&conn, &job, &columns, &extra, &records)?;
    let population = population(&conn, &job, &relation)?;

    let mut audit = Audit::new(&job, &models, &columns);
    classes(&conn, &job, &target, &relation, &extra, population.as_deref(), &records, &mut audit)?;
    let table_risk = risk::analyse(&audit.class_sizes(), &job.risk.settings);
    if let Some(path) = &args.svg {
        let source_risk = match &args.table {
            None => table_risk.clone(),
            Some(_) => source_risk(&conn, &job, &records)?,
        };
        embedded::write_atomically(path, risk::distribution_svg(&source_risk, &table_risk).as_bytes())?;
    }

    let failures = audit.failures();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&audit.json(&target, &table_risk, &failures))?);
    } else {
        print!("{}", audit.text(&target, &table_risk, &failures));
    }
    if failures.is_empty() {
        Ok(())
    } else {
        let lines = failures
            .iter()
            .map(|f| {
                format!(
                    "{target}: fails {} in {} ({} records)",
                    f.requirement,
                    plural(f.classes, "class", "classes"),
                    thousands(f.records)
                )
            })
            .collect();
        Err(anyhow::Error::new(CheckFailed(lines)))
    }
}

/// Each named column is one of `have` (`what`: "the source", "table \"T\"", …).
fn require(job: &Job, what: &str, have: &[SourceColumn], named: &[(&Column, &str)]) -> Result<()> {
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

fn relation_columns(conn: &Connection, relation: &str) -> duckdb::Result<Vec<SourceColumn>> {
    let mut stmt = conn.prepare(&render(fragment(sql::CHECK, "columns"), &[("relation", relation)]))?;
    let rows = stmt.query_map([], |r| Ok(SourceColumn { name: r.get(0)?, type_name: r.get(1)? }))?;
    rows.collect()
}

/// The models as the source gives them: the sensitive columns' marginals
/// over all its rows (`kanon_marg_s` / `_t`), their codes (`kanon_codes_s` /
/// `_t`, 1.. in the type's order) and from these the `ClassModels` (t-closeness's
/// reference distribution and distance data).
fn source_models(
    conn: &Connection,
    job: &Job,
    columns: &[SourceColumn],
    extra: &[(&str, &Column)],
    records: &Records,
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
    frequency::materialize(conn, None, "kanon_marginals", &scan).map_err(|e| {
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
    conn.execute_batch("DROP TABLE kanon_marginals")?;
    let aliases: Vec<&str> = extra.iter().map(|e| e.0).collect();
    frequency::code_tables(conn, 0, &aliases)?;
    class_models(conn, job, columns)
}

/// `[risk] population_table` grouped by the job's QI columns as it is (the
/// `population` statement), or None without one.
fn population(conn: &Connection, job: &Job, audited: &str) -> Result<Option<String>> {
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
    // Values compare natively when the two columns have one type, as text otherwise.
    let cast: Vec<bool> = job
        .quasi_identifiers
        .iter()
        .map(|q| type_of(&have, &q.column.name) != type_of(&audited, &q.column.name))
        .collect();
    let columns = list(job.quasi_identifiers.iter().enumerate(), ", ", |(a, q)| {
        let c = ident(&q.column.name);
        if cast[a] {
            format!("CAST({c} AS VARCHAR) AS q{a}")
        } else {
            format!("{c} AS q{a}")
        }
    });
    let select = render(fragment(sql::CHECK, "population"), &[("columns", &columns), ("relation", &relation)]);
    let on = list(job.quasi_identifiers.iter().enumerate(), " AND ", |(a, _)| {
        if cast[a] {
            format!("CAST(g.q{a} AS VARCHAR) IS NOT DISTINCT FROM p.q{a}")
        } else {
            format!("g.q{a} IS NOT DISTINCT FROM p.q{a}")
        }
    });
    Ok(Some(format!(" LEFT JOIN ({select}) p ON {on}")))
}

/// The one pass over the audited table: each class's size, population size
/// and (code, records) pairs of the sensitive columns, into `audit`.
fn classes(
    conn: &Connection,
    job: &Job,
    target: &str,
    relation: &str,
    extra: &[(&str, &Column)],
    population: Option<&str>,
    records: &Records,
    audit: &mut Audit,
) -> Result<()> {
    let n = job.quasi_identifiers.len();
    let qis =
        list(job.quasi_identifiers.iter().enumerate(), ", ", |(a, q)| format!("src.{} AS q{a}", ident(&q.column.name)));
    let codes = list(extra, "", |(a, c)| {
        format!(
            ", k{a}.code AS {a}, CASE WHEN k{a}.code IS NULL THEN CAST(src.{} AS VARCHAR) END AS {a}_missing",
            ident(&c.name)
        )
    });
    let joins = list(extra, "", |(a, c)| {
        format!(" LEFT JOIN {} k{a} ON src.{} IS NOT DISTINCT FROM k{a}.n", frequency::extra_codes(a), ident(&c.name))
    });
    let q = render(
        fragment(sql::CHECK, "classes"),
        &[
            ("qis", &qis),
            ("codes", &codes),
            ("table", relation),
            ("count", &records.count()),
            ("joins", &joins),
            ("names", &list(0..n, ", ", |a| format!("CAST(g.q{a} AS VARCHAR)"))),
            ("extras", &list(extra, "", |(a, _)| format!(", g.{a}, g.{a}_missing"))),
            ("population", if population.is_some() { ", p.cnt" } else { "" }),
            ("population_join", population.unwrap_or("")),
            ("order", &list(0..n, ", ", |a| format!("g.q{a}"))),
        ],
    );
    let mut stmt = conn.prepare(&q).or_bad_input(|| format!("measuring {target}"))?;
    let name = |values: &[Option<&str>]| {
        list(job.quasi_identifiers.iter().zip(values), ", ", |(q, v)| format!("{}={}", q.column.name, quoted(*v)))
    };
    // Columns: the QIs' text, (code, missing text) per extra, records, population records.
    let records_at = n + 2 * extra.len();
    let mut class = Class::default();
    let mut current: Option<Vec<Option<String>>> = None;
    for batch in stmt.stream_arrow([]).or_bad_input(|| format!("measuring {target}"))? {
        let batch = batch.or_bad_input(|| format!("measuring {target}"))?;
        let text = |i: usize| -> Result<ArrayRef> { Ok(cast(batch.column(i), &DataType::Utf8)?) };
        let names: Vec<ArrayRef> = (0..n).map(text).collect::<Result<_>>()?;
        let names: Vec<&StringArray> = names.iter().map(|a| a.as_string::<i32>()).collect();
        let records = batch.column(records_at).as_primitive::<Int64Type>();
        let big_f = population.map(|_| batch.column(records_at + 1).as_primitive::<Int64Type>());
        for i in 0..batch.num_rows() {
            let values: Vec<Option<&str>> = names.iter().map(|a| a.is_valid(i).then(|| a.value(i))).collect();
            let same = current.as_ref().is_some_and(|c| c.iter().map(|v| v.as_deref()).eq(values.iter().copied()));
            if !same {
                if current.is_some() {
                    audit.class(&mut class);
                }
                current = Some(values.iter().map(|v| v.map(String::from)).collect());
            }
            let f = records.value(i) as u64;
            for (j, (alias, column)) in extra.iter().enumerate() {
                let codes = batch.column(n + 2 * j).as_primitive::<Int32Type>();
                if codes.is_null(i) {
                    let missing = text(n + 2 * j + 1)?;
                    let missing = missing.as_string::<i32>();
                    return Err(bad(format!(
                        "{target}: the class {} has the value {} of \"{}\", which the source does not have",
                        name(&values),
                        quoted(missing.is_valid(i).then(|| missing.value(i))),
                        column.name
                    )));
                }
                let pairs = if *alias == S { &mut class.s } else { &mut class.t };
                pairs.push((codes.value(i) as u32, f));
            }
            class.records += f;
            if let Some(big_f) = big_f {
                if big_f.is_null(i) {
                    let what = job.risk.population_table.as_ref().map(population_name).unwrap_or_default();
                    return Err(bad(format!("{target}: the class {} is not in the {what}", name(&values))));
                }
                class.population = big_f.value(i) as u64;
            }
        }
    }
    if current.is_some() {
        audit.class(&mut class);
    }
    Ok(())
}

/// A value for a message: "text" in quotes, or NULL.
fn quoted(v: Option<&str>) -> String {
    v.map_or("NULL".to_string(), |v| format!("\"{v}\""))
}

/// The source's risk (its class sizes over the QIs), for the chart; F = f
/// (the chart's bands read f only).
fn source_risk(conn: &Connection, job: &Job, records: &Records) -> Result<Risk> {
    let q = render(
        sql::MEASURE_CLASSES,
        &[
            ("table", "kanon_source"),
            ("columns", &list(job.qi_names(), ", ", |c| ident(&c))),
            ("count", &records.count()),
            ("ldiv", "0"),
        ],
    );
    let mut stmt = conn.prepare(&q)?;
    let sizes: Vec<ClassSizes> = stmt
        .query_map([], |r| {
            let (size, classes): (i64, i64) = (r.get(0)?, r.get(2)?);
            Ok(ClassSizes { sample: size as u64, population: size as u64, classes: classes as u64 })
        })?
        .collect::<duckdb::Result<_>>()
        .context("measuring the source")?;
    Ok(risk::analyse(&sizes, &job.risk.settings))
}

/// One class as the pass reads it: records, population records, and the
/// (code, records) pairs of `s` and `t` (a code may repeat until merged).
#[derive(Default)]
struct Class {
    records: u64,
    population: u64,
    s: Vec<(u32, u64)>,
    t: Vec<(u32, u64)>,
}

/// Sort by code and add up each code's records.
fn merge(pairs: &mut Vec<(u32, u64)>) {
    pairs.sort_unstable();
    pairs.dedup_by(|b, a| {
        if a.0 == b.0 {
            a.1 += b.1;
            true
        } else {
            false
        }
    });
}

/// Classes and records that fail one model.
#[derive(Default, Clone, Copy)]
struct Tally {
    classes: u64,
    records: u64,
}

impl Tally {
    fn add(&mut self, records: u64) {
        self.classes += 1;
        self.records += records;
    }
}

/// A distance t-closeness's figures report, with its name.
struct Figure {
    name: &'static str,
    closeness: Closeness,
    largest: Option<f64>,
}

/// What the pass accumulates over the classes.
struct Audit<'a> {
    job: &'a Job,
    models: &'a ClassModels,
    rows: u64,
    classes: u64,
    k: Option<u64>,
    histogram: BTreeMap<u64, u64>,
    /// (f, F) → classes.
    sizes: BTreeMap<(u64, u64), u64>,
    distinct: Option<u64>,
    /// The smallest exp(entropy).
    entropy: Option<f64>,
    /// The largest r_1 / (r_ℓ + … + r_m); `short` once a class has fewer than ℓ values.
    recursive: Option<f64>,
    short: bool,
    distances: Vec<Figure>,
    fail_k: Tally,
    fail_l: Tally,
    fail_t: Tally,
}

impl<'a> Audit<'a> {
    fn new(job: &'a Job, models: &'a ClassModels, columns: &[SourceColumn]) -> Audit<'a> {
        let mut distances = Vec::new();
        if let (Some(spec), Some(cl)) = (&job.privacy.closeness, &models.closeness) {
            let with = |distance| Closeness { distance, ..cl.clone() };
            distances.push(Figure { name: "equal", closeness: with(Distance::Equal), largest: None });
            let type_name = columns.iter().find(|c| c.name == spec.column.name).map_or("", |c| c.type_name.as_str());
            if ColumnType::of(type_name).is_ordered() {
                let closeness = with(Distance::ordered(&cl.reference));
                distances.push(Figure { name: "ordered", closeness, largest: None });
            }
            if matches!(spec.distance, DistanceSpec::Hierarchical(_)) {
                distances.push(Figure { name: "hierarchical", closeness: cl.clone(), largest: None });
            }
        }
        Audit {
            job,
            models,
            rows: 0,
            classes: 0,
            k: None,
            histogram: BTreeMap::new(),
            sizes: BTreeMap::new(),
            distinct: None,
            entropy: None,
            recursive: None,
            short: false,
            distances,
            fail_k: Tally::default(),
            fail_l: Tally::default(),
            fail_t: Tally::default(),
        }
    }

    /// Take one class in (and leave `class` empty for the next).
    fn class(&mut self, class: &mut Class) {
        let c = std::mem::take(class);
        let (mut s, mut t) = (c.s, c.t);
        merge(&mut s);
        merge(&mut t);
        let f = c.records;
        let big_f = if self.job.risk.population_table.is_some() { c.population } else { f };
        self.rows += f;
        self.classes += 1;
        self.k = Some(self.k.map_or(f, |k| k.min(f)));
        *self.histogram.entry(f).or_default() += 1;
        *self.sizes.entry((f, big_f)).or_default() += 1;
        if f < self.job.privacy.k {
            self.fail_k.add(f);
        }
        if let Some(d) = &self.job.privacy.diversity {
            let counts = s.iter().map(|p| p.1);
            let values = s.len() as u64;
            self.distinct = Some(self.distinct.map_or(values, |x| x.min(values)));
            let e = entropy(counts.clone()).exp();
            self.entropy = Some(self.entropy.map_or(e, |x| x.min(e)));
            let mut r: Vec<u64> = counts.clone().collect();
            r.sort_unstable_by(|a, b| b.cmp(a));
            if values < d.l {
                self.short = true;
            } else {
                let tail: u64 = r[d.l as usize - 1..].iter().sum();
                let ratio = r[0] as f64 / tail as f64;
                self.recursive = Some(self.recursive.map_or(ratio, |x| x.max(ratio)));
            }
            let meets = match d.kind {
                DiversityKind::Distinct => values >= d.l,
                DiversityKind::Entropy => entropy_at_least(counts, d.l),
                DiversityKind::Recursive(c) => recursive(counts, c, d.l),
            };
            if !meets {
                self.fail_l.add(f);
            }
        }
        if let Some(cl) = &self.models.closeness {
            let pairs = if self.models.separate { &t } else { &s };
            for figure in &mut self.distances {
                let x = figure.closeness.distance(pairs);
                figure.largest = Some(figure.largest.map_or(x, |y| y.max(x)));
            }
            if !cl.admits(pairs) {
                self.fail_t.add(f);
            }
        }
    }

    fn class_sizes(&self) -> Vec<ClassSizes> {
        self.sizes.iter().map(|(&(sample, population), &classes)| ClassSizes { sample, population, classes }).collect()
    }

    /// The recursive figure: None once a class has fewer than ℓ values.
    fn recursive(&self) -> Option<f64> {
        if self.short {
            None
        } else {
            self.recursive
        }
    }

    /// The job's models in words, in its order (k, ℓ, t), each with its tally.
    fn models(&self) -> Vec<(&'static str, String, Tally)> {
        let p = &self.job.privacy;
        let mut out = vec![("k", format!("k = {}", p.k), self.fail_k)];
        if let Some(d) = &p.diversity {
            out.push(("l_diversity", diversity_words(d), self.fail_l));
        }
        if let Some(t) = &p.closeness {
            let words =
                format!("t = {} ({} distance) on \"{}\"", t.t.value(), distance_name(&t.distance), t.column.name);
            out.push(("t_closeness", words, self.fail_t));
        }
        out
    }

    /// The models the table fails, in the job's order.
    fn failures(&self) -> Vec<Failure> {
        self.models()
            .into_iter()
            .filter(|m| m.2.classes > 0)
            .map(|(model, requirement, tally)| Failure {
                model,
                requirement,
                classes: tally.classes,
                records: tally.records,
            })
            .collect()
    }

    fn json(&self, target: &str, risk: &Risk, failures: &[Failure]) -> Value {
        let job = self.job;
        let hist: Vec<[u64; 2]> = self.histogram.iter().map(|(s, c)| [*s, *c]).collect();
        let l_diversity = job.privacy.diversity.as_ref().map(|d| {
            let c = match d.kind {
                DiversityKind::Recursive(c) => Some(c.value()),
                _ => None,
            };
            json!({"column": d.column.name, "kind": kind_name(d.kind), "l": d.l, "c": c,
                   "distinct": self.distinct, "entropy": self.entropy, "recursive": self.recursive()})
        });
        let t_closeness = job.privacy.closeness.as_ref().map(|t| {
            let figure = |name: &str| self.distances.iter().find(|f| f.name == name).and_then(|f| f.largest);
            json!({"column": t.column.name, "t": t.t.value(), "distance": distance_name(&t.distance),
                   "equal": figure("equal"), "ordered": figure("ordered"), "hierarchical": figure("hierarchical")})
        });
        json!({
            "table": target,
            "quasi_identifiers": job.qi_names(),
            "rows": self.rows,
            "classes": self.classes,
            "k": self.k,
            "l": job.privacy.diversity.as_ref().and(self.distinct),
            "k_anonymous": self.k.is_some_and(|k| k >= job.privacy.k),
            "histogram": hist,
            "l_diversity": l_diversity,
            "t_closeness": t_closeness,
            "risk": risk,
            "meets": failures.is_empty(),
            "failures": failures.iter().map(|f| json!({
                "model": f.model, "requirement": f.requirement, "classes": f.classes, "records": f.records
            })).collect::<Vec<_>>(),
        })
    }

    fn text(&self, target: &str, risk: &Risk, failures: &[Failure]) -> String {
        use std::fmt::Write;
        let job = self.job;
        let mut out = String::new();
        let dash = |x: Option<String>| x.unwrap_or_else(|| "-".into());
        let figure = |x: Option<f64>| dash(x.map(|x| format!("{x:.4}")));
        let qis = job.qi_names().join(", ");
        let _ = writeln!(out, "{target}: {} rows in {} classes over {qis}", self.rows, self.classes);
        let _ = writeln!(out, "k = {} (job: k = {})", dash(self.k.map(|k| k.to_string())), job.privacy.k);
        if let Some(d) = &job.privacy.diversity {
            let _ = writeln!(
                out,
                "l on \"{}\": distinct {}, entropy {}, recursive {} (job: {})",
                d.column.name,
                dash(self.distinct.map(|x| x.to_string())),
                figure(self.entropy),
                figure(self.recursive()),
                diversity_words(d)
            );
        }
        if let Some(t) = &job.privacy.closeness {
            let figures = list(&self.distances, ", ", |f| format!("{} {}", f.name, figure(f.largest)));
            let _ = writeln!(
                out,
                "t on \"{}\": {figures} (job: t = {}, {} distance)",
                t.column.name,
                t.t.value(),
                distance_name(&t.distance)
            );
        }
        let _ = writeln!(out, "risk (threshold {}):", percent(job.risk.settings.threshold));
        for (name, a) in [("prosecutor", &risk.prosecutor), ("journalist", &risk.journalist)] {
            let _ = writeln!(
                out,
                "  {name:<11} records at risk {}, highest risk {}, success rate {}",
                percent(a.records_at_risk),
                percent(a.highest_risk),
                percent(a.success_rate)
            );
        }
        let _ = writeln!(out, "  {:<11} success rate {}", "marketer", percent(risk.marketer.success_rate));
        let pu = &risk.population_uniqueness;
        let model = pu.model.and_then(|m| serde_json::to_value(m).ok()).and_then(|v| v.as_str().map(String::from));
        let _ = writeln!(
            out,
            "  {:<11} sample {}, population {} ({}N = {})",
            "uniqueness",
            percent(risk.sample_uniqueness),
            dash(pu.dankar.map(percent)),
            model.map_or(String::new(), |m| format!("{m}, ")),
            pu.population
        );
        if failures.is_empty() {
            let _ = writeln!(out, "meets the job: {}", list(self.models(), "; ", |m| m.1));
        } else {
            let _ = writeln!(
                out,
                "fails the job: {}",
                list(failures, "; ", |f| format!("{} in {}", f.requirement, plural(f.classes, "class", "classes")))
            );
        }
        let _ = writeln!(out, "class size\tclasses");
        for (s, c) in &self.histogram {
            let _ = writeln!(out, "{s}\t{c}");
        }
        out
    }
}

/// A model the table fails: which, in words, and in how many classes and records.
struct Failure {
    model: &'static str,
    requirement: String,
    classes: u64,
    records: u64,
}

/// "population table \"T\"" or "population table FILE".
fn population_name(spec: &PopulationTable) -> String {
    match spec {
        PopulationTable::Table(t) => format!("population table \"{t}\""),
        PopulationTable::Csv { path, .. } | PopulationTable::Parquet(path) => {
            format!("population table {}", path.display())
        }
    }
}

fn kind_name(kind: DiversityKind) -> &'static str {
    match kind {
        DiversityKind::Distinct => "distinct",
        DiversityKind::Entropy => "entropy",
        DiversityKind::Recursive(_) => "recursive",
    }
}

fn diversity_words(d: &crate::job::Diversity) -> String {
    match d.kind {
        DiversityKind::Recursive(c) => {
            format!("recursive (c, l) = ({}, {}) on \"{}\"", c.value(), d.l, d.column.name)
        }
        kind => format!("{} l = {} on \"{}\"", kind_name(kind), d.l, d.column.name),
    }
}

fn distance_name(d: &DistanceSpec) -> &'static str {
    match d {
        DistanceSpec::Equal => "equal",
        DistanceSpec::Ordered => "ordered",
        DistanceSpec::Hierarchical(_) => "hierarchical",
    }
}

/// A share as a percentage with up to 4 significant decimals.
fn percent(x: f64) -> String {
    let p = 100.0 * x;
    let text = format!("{p:.4}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}%")
}

/// 1204 → "1,204".
fn thousands(x: u64) -> String {
    let digits = x.to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", thousands(n), if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_well() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1204), "1,204");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(plural(1, "class", "classes"), "1 class");
        assert_eq!(percent(0.2), "20%");
        assert_eq!(percent(1.0 / 3.0), "33.3333%");
        assert_eq!(percent(0.0), "0%");
    }

    #[test]
    fn pairs_merge_by_code() {
        let mut p = vec![(3, 1), (1, 2), (3, 4), (2, 1), (1, 1)];
        merge(&mut p);
        assert_eq!(p, vec![(1, 3), (2, 1), (3, 5)]);
    }
}
