//! `kanon init`: profile a source (a DuckDB table, a CSV or a Parquet file)
//! with DuckDB and write a starting job file that runs as it is, every
//! choice explained by a comment above it (docs/init.md).
//!
//! The profile is one aggregate pass (rows; per column non-NULL rows,
//! distinct values, range, text lengths, digit strings, white space, dates),
//! then one small query per date column (distinct values per date unit) and
//! per mask candidate (distinct prefixes). Each column is then classified, in
//! this order: a column whose name says it identifies a person (and whose
//! values are varied) is dropped; a column whose name says it is sensitive is
//! released as it is, suggested for ℓ-diversity; a constant column is
//! released as it is; a type kanon cannot generalize is released as it is
//! (dropped when unique on almost every row); a column unique on (almost)
//! every row is dropped, unless it is a date or a measurement; everything
//! else is a quasi-identifier with the built-in hierarchy its type and values
//! suggest, or, text with many values, is released as it is with a warning.

use crate::engine::embedded::write_atomically;
use crate::engine::types::ColumnType;
use crate::error::{bad, OrBadInput};
use crate::sql::{self, fragment, ident, list, literal, render};
use anyhow::{Context, Result};
use duckdb::Connection;
use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};

/// The k of the written job (lowered to the row count for a smaller source).
pub const K: i64 = 5;
/// The written job's suppression budget, a fraction of the rows.
pub const MAX_SUPPRESSION: f64 = 0.01;
/// Text with at most this many distinct values is a suppressible category; a
/// sensitive column with at most this many is suggested for ℓ-diversity.
pub const FEW: i64 = 50;
/// A column with distinct values on at least this fraction of its non-NULL
/// rows is unique on (almost) every row.
pub const NEAR_UNIQUE: f64 = 0.95;
/// The coarsest interval width leaves at most this many bands over the range.
pub const TOP_BANDS: i64 = 5;
/// At most this many interval widths (levels below `*`).
pub const MAX_WIDTHS: usize = 4;
/// At most this many masked characters (levels below `*`).
pub const MAX_MASK: usize = 6;
/// At most this many nodes in the lattice of the written job (the product of
/// each QI's levels + 1): the searches enumerate it.
pub const MAX_NODES: u64 = 500_000;

/// Name words of direct identifiers: dropped, not pseudonymized.
const DIRECT_WORDS: &[&str] = &[
    "name",
    "names",
    "firstname",
    "lastname",
    "surname",
    "fullname",
    "forename",
    "givenname",
    "familyname",
    "email",
    "mail",
    "phone",
    "telephone",
    "mobile",
    "fax",
    "address",
    "street",
    "ip",
    "username",
    "login",
    "url",
    "ssn",
    "passport",
    "iban",
    "license",
    "licence",
];
/// Name words of keys: dropped, with pseudonymization suggested.
const KEY_WORDS: &[&str] = &["id", "ids", "uuid", "guid", "key", "mrn", "account", "acct"];
/// Words ending in "id" that are not keys (a word such as "patientid" is).
const NOT_KEYS: &[&str] = &[
    "paid", "unpaid", "prepaid", "valid", "invalid", "void", "avoid", "acid", "fluid", "lipid", "rapid", "humid",
    "solid", "hybrid", "liquid", "android", "thyroid", "steroid", "opioid", "covid", "david", "druid", "squid",
    "amyloid", "typhoid", "mermaid", "orchid",
];
/// Name words of sensitive attributes: released as they are, suggested for ℓ-diversity.
const SENSITIVE_WORDS: &[&str] = &[
    "diagnosis",
    "diagnoses",
    "diagnostic",
    "disease",
    "diseases",
    "condition",
    "illness",
    "icd",
    "salary",
    "income",
    "wage",
    "wages",
    "earnings",
    "religion",
    "treatment",
    "medication",
    "drug",
    "drugs",
];
/// Name words of codes read left to right (an integer zip code is masked, not banded).
const CODE_WORDS: &[&str] = &["zip", "zipcode", "postal", "postcode", "postalcode", "plz", "fips", "code"];

/// What `kanon init` reads.
#[derive(Debug, Clone)]
pub struct Options {
    pub source: PathBuf,
    pub table: Option<String>,
    pub out: PathBuf,
}

/// What was written, for the command's summary.
pub struct Written {
    pub rows: i64,
    pub quasi_identifiers: Vec<String>,
    pub dropped: Vec<String>,
    pub released: Vec<String>,
    pub files: Vec<PathBuf>,
}

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Database { table: String },
    Csv { delimiter: String },
    Parquet,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Class {
    Integer,
    Decimal,
    Temporal,
    Text,
    Boolean,
    Other,
}

fn class_of(type_name: &str) -> Class {
    match ColumnType::of(type_name) {
        ColumnType::Integer { .. } => Class::Integer,
        ColumnType::Fractional => Class::Decimal,
        ColumnType::Date | ColumnType::Timestamp => Class::Temporal,
        ColumnType::Varchar | ColumnType::Uuid => Class::Text,
        ColumnType::Boolean => Class::Boolean,
        ColumnType::Time | ColumnType::Interval | ColumnType::Other => Class::Other,
    }
}

/// One column's statistics.
#[derive(Debug, Clone, Default)]
struct Profile {
    name: String,
    type_name: String,
    /// Rows of the source.
    rows: i64,
    non_null: i64,
    distinct: i64,
    /// Numbers: the range.
    min: Option<f64>,
    max: Option<f64>,
    /// Text: lengths, digit strings, white space, first and last value.
    min_len: i64,
    max_len: i64,
    digits: bool,
    spaces: bool,
    first: Option<String>,
    last: Option<String>,
    /// Text and dates: values that read as a date.
    dates: i64,
    /// Date columns: first, last, distinct months, quarters, years, decades, centuries.
    date_levels: Option<DateLevels>,
    /// Mask candidates: distinct prefixes one character past the common prefix.
    prefixes: Option<i64>,
}

#[derive(Debug, Clone, Default)]
struct DateLevels {
    first: String,
    last: String,
    counts: [i64; 5],
}

const UNITS: [&str; 5] = ["month", "quarter", "year", "decade", "century"];

/// An interval width m · 10^e, m ∈ {1, 2, 5}: each divides the next coarser one.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Width {
    m: i64,
    e: i32,
}

impl Width {
    fn value(self) -> f64 {
        self.m as f64 * 10f64.powi(self.e)
    }
    fn coarser(self) -> Width {
        match self.m {
            1 => Width { m: 2, e: self.e },
            2 => Width { m: 5, e: self.e },
            _ => Width { m: 1, e: self.e + 1 },
        }
    }
    fn finer(self) -> Width {
        match self.m {
            5 => Width { m: 1, e: self.e },
            2 => Width { m: 1, e: self.e },
            _ => Width { m: 5, e: self.e - 1 },
        }
    }
    fn text(self) -> String {
        if self.e >= 0 {
            format!("{}", self.m * 10i64.pow(self.e as u32))
        } else {
            format!("{:.*}", (-self.e) as usize, self.value())
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Hier {
    Suppress,
    Mask(usize),
    Intervals(Vec<Width>),
    Date(Vec<&'static str>),
}

impl Hier {
    fn toml(&self) -> String {
        match self {
            Hier::Suppress => "\"suppress\"".into(),
            Hier::Mask(n) => format!("{{ mask = {n} }}"),
            Hier::Intervals(w) => {
                let float = w.iter().any(|w| w.e < 0);
                let items = list(w, ", ", |w| if float && w.e >= 0 { format!("{}.0", w.text()) } else { w.text() });
                format!("{{ intervals = [{items}] }}")
            }
            Hier::Date(u) => format!("{{ date = [{}] }}", list(u, ", ", |u| format!("\"{u}\""))),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Role {
    /// A quasi-identifier with this hierarchy (written to a file when the column has NULLs).
    Qi(Hier),
    /// Left out of the release; `key` when it could be pseudonymized instead.
    Drop { key: bool },
    /// Released as it is, a sensitive attribute: the ℓ-diversity (or t-closeness) suggestion.
    Sensitive(Option<String>),
    /// Released as it is.
    AsIs,
}

struct Choice {
    profile: Profile,
    role: Role,
    /// Why, one line each (after the line of facts).
    why: Vec<String>,
    /// The hierarchy file written for a QI with NULLs (relative to the job).
    file: Option<String>,
}

/// Levels of a hierarchy above its leaves (at most: a mask gets a `*` level
/// only when its last level still has several values).
fn height(h: &Hier) -> u64 {
    match h {
        Hier::Suppress => 1,
        Hier::Mask(n) => *n as u64 + 1,
        Hier::Intervals(w) => w.len() as u64 + 1,
        Hier::Date(u) => u.len() as u64 + 1,
    }
}

/// Keep the lattice (the product of each QI's levels + 1) within
/// [`MAX_NODES`]: the QIs with the most distinct values stay (ties: column
/// order), the others are dropped, each saying why. Returns how many were.
fn cap_lattice(choices: &mut [Choice]) -> usize {
    let mut order: Vec<usize> = (0..choices.len()).filter(|&i| matches!(choices[i].role, Role::Qi(_))).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(choices[i].profile.distinct), i));
    let mut nodes: u64 = 1;
    let mut capped = 0;
    for i in order {
        let Role::Qi(h) = choices[i].role.clone() else { continue };
        let next = nodes.saturating_mul(height(&h) + 1);
        if next <= MAX_NODES {
            nodes = next;
            continue;
        }
        let levels = height(&h) + 1;
        let c = &mut choices[i];
        c.why.push(format!(
            "It would be a quasi-identifier ({}), but with it the search's lattice would exceed {} nodes",
            h.toml(),
            grouped(MAX_NODES as i64)
        ));
        c.why.push(format!(
            "(its {levels} levels times the others'); the quasi-identifiers with more distinct values were kept,"
        ));
        c.why
            .push("and this one is dropped: make it a QI in place of another, or keep it as it is if outsiders".into());
        c.why.push("cannot know it.".into());
        c.role = Role::Drop { key: false };
        capped += 1;
    }
    capped
}

/// Profile the source, choose, and write the job (and any hierarchy files).
pub fn run(opts: &Options) -> Result<Written> {
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
    let conn = Connection::open_in_memory().context("starting DuckDB")?;
    let kind = open_source(&conn, &opts.source, opts.table.as_deref())?;
    let src = opts.source.display().to_string();
    let mut stmt = conn.prepare(sql::TABLE_COLUMNS).or_bad_input(|| format!("reading source {src}"))?;
    let columns: Vec<(String, String)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .and_then(|rows| rows.collect())
        .or_bad_input(|| format!("reading source {src}"))?;
    let (rows, mut profiles) = profile(&conn, &columns).or_bad_input(|| format!("reading source {src}"))?;
    if rows == 0 {
        return Err(bad(format!("the source, {src}, has no rows; there is nothing to profile")));
    }
    let mut choices = Vec::new();
    let mut pending = Vec::new();
    for p in profiles.drain(..) {
        match first_role(&p) {
            Some((role, why)) => choices.push(Choice { profile: p, role, why, file: None }),
            None => pending.push(p),
        }
    }
    for mut p in pending {
        detail(&conn, &mut p).or_bad_input(|| format!("reading source {src}"))?;
        let (role, why) = qi_role(&p);
        choices.push(Choice { profile: p, role, why, file: None });
    }
    // Back to the source's column order.
    let order: Vec<&String> = columns.iter().map(|c| &c.0).collect();
    choices.sort_by_key(|c| order.iter().position(|n| **n == c.profile.name));
    if !choices.iter().any(|c| matches!(c.role, Role::Qi(_))) {
        let lines = list(&choices, "\n", |c| format!("  {}: {}", c.profile.name, c.why.join(" ")));
        return Err(bad(format!(
            "no column of {src} looks like a quasi-identifier, and a job needs at least one; what init saw:\n{lines}"
        )));
    }

    let capped = cap_lattice(&mut choices);

    // Hierarchy files for QIs with NULLs (a built-in hierarchy lists no NULL leaf).
    let stem = out.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "job".into());
    let hdir_name = format!("{stem}-hierarchies");
    let mut files: Vec<(PathBuf, String)> = Vec::new();
    for c in choices.iter_mut() {
        let Role::Qi(h) = &c.role else { continue };
        if c.profile.non_null == rows {
            continue;
        }
        let nulls = rows - c.profile.non_null;
        match hierarchy_file(&conn, &c.profile.name, h).or_bad_input(|| format!("reading source {src}"))? {
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
                files.push((out.with_file_name(&hdir_name).join(name), text));
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
    if !choices.iter().any(|c| matches!(c.role, Role::Qi(_))) {
        return Err(bad(format!(
            "no column of {src} can be a quasi-identifier (their NULLs and values fit no hierarchy file); \
             a job needs at least one"
        )));
    }
    for (path, _) in &files {
        if path.exists() {
            return Err(bad(format!("{} already exists; remove it or pass another --out", path.display())));
        }
    }

    let text = job_text(opts, &kind, job_dir, rows, &choices, capped)?;
    // The job must parse as written; a failure here is a bug of init, not bad input.
    crate::job::Job::parse(out, &text).context("kanon init wrote a job that does not parse")?;
    if !files.is_empty() {
        let dir = out.with_file_name(&hdir_name);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        for (path, text) in &files {
            write_atomically(path, text.as_bytes())?;
        }
    }
    // Never replace a job that appeared meanwhile.
    if out.exists() {
        return Err(bad(format!("{} already exists; remove it or pass another --out", out.display())));
    }
    write_atomically(out, text.as_bytes())?;
    let names = |f: &dyn Fn(&Role) -> bool| -> Vec<String> {
        choices.iter().filter(|c| f(&c.role)).map(|c| c.profile.name.clone()).collect()
    };
    Ok(Written {
        rows,
        quasi_identifiers: names(&|r| matches!(r, Role::Qi(_))),
        dropped: names(&|r| matches!(r, Role::Drop { .. })),
        released: names(&|r| matches!(r, Role::Sensitive(_) | Role::AsIs)),
        files: files.into_iter().map(|f| f.0).collect(),
    })
}

/// The source behind the view `kanon_source`, read as `kanon run` will read it.
fn open_source(conn: &Connection, path: &Path, table: Option<&str>) -> Result<Kind> {
    let shown = path.display().to_string();
    let mut head = [0u8; 12];
    let n = std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
        .map_err(|e| bad(format!("cannot read source {shown}: {e}")))?;
    let ext = path.extension().map(|e| e.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
    let is_duckdb = n >= 12 && &head[8..12] == b"DUCK";
    let is_parquet = n >= 4 && &head[..4] == b"PAR1";
    let lit = literal(&path.to_string_lossy());
    let (relation, kind) = if is_duckdb || ext == "duckdb" || ext == "db" {
        conn.execute_batch(&format!("ATTACH {lit} AS kanon_src (READ_ONLY)"))
            .or_bad_input(|| format!("opening source database {shown}"))?;
        let mut stmt = conn.prepare(fragment(sql::INIT_PROFILE, "tables"))?;
        let tables: Vec<String> = stmt.query_map(["kanon_src"], |r| r.get(0))?.collect::<duckdb::Result<_>>()?;
        let chosen =
            match table {
                Some(t) => tables.iter().find(|x| x.eq_ignore_ascii_case(t)).cloned().ok_or_else(|| {
                    bad(format!("table \"{t}\" not found in {shown}; its tables: {}", names(&tables)))
                })?,
                None => match tables.as_slice() {
                    [one] => one.clone(),
                    [] => return Err(bad(format!("{shown} has no tables"))),
                    _ => {
                        return Err(bad(format!(
                            "{shown} has {} tables; name one with --table: {}",
                            tables.len(),
                            names(&tables)
                        )))
                    }
                },
            };
        (format!("kanon_src.main.{}", ident(&chosen)), Kind::Database { table: chosen })
    } else {
        if let Some(t) = table {
            return Err(bad(format!("--table \"{t}\" applies to a DuckDB database; {shown} is not one")));
        }
        if is_parquet || ext == "parquet" || ext == "pq" {
            (format!("read_parquet({lit})"), Kind::Parquet)
        } else {
            let delimiter: String = conn
                .query_row(fragment(sql::INIT_PROFILE, "sniff"), [path.to_string_lossy()], |r| r.get(0))
                .or_bad_input(|| format!("reading source {shown}"))?;
            // The same call as kanon's CSV source with `delimiter` set (database.rs).
            let relation = format!("read_csv({lit}, delim = {}, header = true)", literal(&delimiter));
            (relation, Kind::Csv { delimiter })
        }
    };
    conn.execute_batch(&render(sql::SOURCE_VIEW, &[("relation", &relation)]))
        .or_bad_input(|| format!("reading source {shown}"))?;
    Ok(kind)
}

fn names(tables: &[String]) -> String {
    list(tables, ", ", |t| format!("\"{t}\""))
}

/// The one aggregate pass: the row count and every column's profile.
fn profile(conn: &Connection, columns: &[(String, String)]) -> duckdb::Result<(i64, Vec<Profile>)> {
    let mut aggregates = String::new();
    for (name, type_name) in columns {
        let col = ident(name);
        let v = format!("CAST({col} AS VARCHAR)");
        let slots = [("col", col.as_str()), ("v", v.as_str())];
        aggregates.push_str(",\n");
        aggregates.push_str(&render(fragment(sql::INIT_PROFILE, "common"), &slots));
        let extra = match class_of(type_name) {
            Class::Integer | Class::Decimal => Some("numeric"),
            Class::Text => Some("text"),
            Class::Temporal => Some("temporal"),
            Class::Boolean | Class::Other => None,
        };
        if let Some(f) = extra {
            aggregates.push_str(",\n");
            aggregates.push_str(&render(fragment(sql::INIT_PROFILE, f), &slots));
        }
    }
    let q = render(fragment(sql::INIT_PROFILE, "pass"), &[("aggregates", &aggregates)]);
    conn.query_row(&q, [], |r| {
        let rows: i64 = r.get(0)?;
        let mut i = 1;
        let mut next = || {
            i += 1;
            i - 1
        };
        let mut out = Vec::new();
        for (name, type_name) in columns {
            let mut p = Profile { name: name.clone(), type_name: type_name.clone(), rows, ..Default::default() };
            p.non_null = r.get(next())?;
            p.distinct = r.get(next())?;
            match class_of(type_name) {
                Class::Integer | Class::Decimal => {
                    p.min = r.get(next())?;
                    p.max = r.get(next())?;
                }
                Class::Text => {
                    p.min_len = r.get::<_, Option<i64>>(next())?.unwrap_or(0);
                    p.max_len = r.get::<_, Option<i64>>(next())?.unwrap_or(0);
                    p.digits = r.get(next())?;
                    p.spaces = r.get(next())?;
                    p.first = r.get(next())?;
                    p.last = r.get(next())?;
                    p.dates = r.get(next())?;
                }
                Class::Temporal => p.dates = r.get(next())?,
                Class::Boolean | Class::Other => {}
            }
            out.push(p);
        }
        Ok((rows, out))
    })
}

/// The small queries a QI candidate needs: date units, mask prefixes.
fn detail(conn: &Connection, p: &mut Profile) -> duckdb::Result<()> {
    let v = format!("CAST({} AS VARCHAR)", ident(&p.name));
    if is_date(p) {
        let lv = |u| fragment(sql::HIERARCHY_LEVELS, u);
        let q = render(
            fragment(sql::INIT_PROFILE, "date_levels"),
            &[
                ("v", &v),
                ("month", lv("month")),
                ("quarter", lv("quarter")),
                ("year", lv("year")),
                ("decade", lv("decade")),
                ("century", lv("century")),
            ],
        );
        p.date_levels = Some(conn.query_row(&q, [], |r| {
            Ok(DateLevels {
                first: r.get::<_, Option<String>>(0)?.unwrap_or_default(),
                last: r.get::<_, Option<String>>(1)?.unwrap_or_default(),
                counts: [r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?],
            })
        })?);
    } else if let Some((_, lcp)) = mask_shape(p) {
        let q = render(fragment(sql::INIT_PROFILE, "prefixes"), &[("v", &v)]);
        p.prefixes = Some(conn.query_row(&q, [lcp as i64 + 1], |r| r.get(0))?);
    }
    Ok(())
}

/// Every non-NULL value reads as a date (a date or timestamp type, or ISO text).
fn is_date(p: &Profile) -> bool {
    matches!(class_of(&p.type_name), Class::Temporal | Class::Text) && p.non_null > 0 && p.dates == p.non_null
}

/// A column masked from the right: text without white space that is of one
/// length, all digits, or named like a code; or an integer code (a code-like
/// name, every value with the same number of digits). Its longest value's
/// length and the prefix every value shares.
fn mask_shape(p: &Profile) -> Option<(usize, usize)> {
    let (first, last) = match class_of(&p.type_name) {
        Class::Text
            if !p.spaces && p.max_len >= 2 && (p.min_len == p.max_len || p.digits || has_word(&p.name, CODE_WORDS)) =>
        {
            (p.first.clone()?, p.last.clone()?)
        }
        Class::Integer if has_word(&p.name, CODE_WORDS) => {
            let (lo, hi) = (p.min?, p.max?);
            let (lo, hi) = (format!("{lo:.0}"), format!("{hi:.0}"));
            if lo.len() != hi.len() || lo.len() < 2 || lo.starts_with('-') {
                return None;
            }
            (lo, hi)
        }
        _ => return None,
    };
    // min and max bound every value, so their common prefix is every value's.
    let lcp = first.chars().zip(last.chars()).take_while(|(a, b)| a == b).count();
    let len = first.chars().count().max(last.chars().count()).max(p.max_len.max(0) as usize);
    Some((len, lcp))
}

/// The column name's words: split at non-alphanumerics and lower-to-upper
/// case changes, lowercased.
fn words(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for ch in name.chars() {
        if !ch.is_alphanumeric() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if ch.is_uppercase() && prev_lower && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        prev_lower = ch.is_lowercase() || ch.is_numeric();
        cur.extend(ch.to_lowercase());
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn has_word(name: &str, set: &[&str]) -> bool {
    words(name).iter().any(|w| set.contains(&w.as_str()))
}

/// The identifier word of a name: (word, is it a key).
fn identifier_word(name: &str) -> Option<(String, bool)> {
    let ws = words(name);
    if let Some(w) = ws.iter().find(|w| DIRECT_WORDS.contains(&w.as_str())) {
        return Some((w.clone(), false));
    }
    ws.iter()
        .find(|w| {
            KEY_WORDS.contains(&w.as_str()) || (w.len() > 4 && w.ends_with("id") && !NOT_KEYS.contains(&w.as_str()))
        })
        .map(|w| (w.clone(), true))
}

/// The decisions that need no more than the first pass: identifiers,
/// sensitive columns, constants, near-unique columns. None: a QI candidate.
fn first_role(p: &Profile) -> Option<(Role, Vec<String>)> {
    let class = class_of(&p.type_name);
    let d = p.distinct;
    if d == 0 {
        return Some((Role::AsIs, vec!["Every row is NULL: nothing to generalize; released as it is.".into()]));
    }
    // A name says "identifier" only when the values are varied enough to be
    // one: a flag such as has_email or a phone_type with three values is not.
    let varied = d > FEW.min(p.non_null / 2).max(2);
    if let Some((word, key)) = identifier_word(&p.name).filter(|_| varied) {
        let what = if key { "a key" } else { "a direct identifier" };
        return Some((
            Role::Drop { key },
            vec![format!(
                "Its name (\"{word}\") marks {what}, and its values are varied: dropped from the release{}.",
                if key { " (or pseudonymized, see below)" } else { "" }
            )],
        ));
    }
    if let Some(word) = words(&p.name).into_iter().find(|w| SENSITIVE_WORDS.contains(&w.as_str())) {
        let col = toml_str(&p.name);
        let (suggest, why) = if (2..=FEW).contains(&d) {
            (
                Some(format!("l_diversity = {{ column = {col}, l = 2 }}")),
                "few values: ℓ-diversity on it is suggested in [privacy].".to_string(),
            )
        } else if matches!(class, Class::Integer | Class::Decimal | Class::Temporal) && d > FEW {
            (
                Some(format!("t_closeness = {{ column = {col}, t = 0.2, distance = \"ordered\" }}")),
                "many values: t-closeness on it is suggested in [privacy].".to_string(),
            )
        } else {
            (None, "no model on it is suggested.".to_string())
        };
        return Some((
            Role::Sensitive(suggest),
            vec![
                format!("Its name (\"{word}\") suggests a sensitive attribute, the value analysts study: released"),
                format!("as it is (not a quasi-identifier), {why}"),
            ],
        ));
    }
    if d + i64::from(p.non_null < p.rows) <= 1 {
        return Some((Role::AsIs, vec!["One value on every row: it tells no one apart; released as it is.".into()]));
    }
    if class == Class::Other && p.non_null >= 10 && d as f64 >= NEAR_UNIQUE * p.non_null as f64 {
        return Some((
            Role::Drop { key: false },
            vec![format!(
                "It is distinct on {:.0}% of its non-NULL rows, and kanon init picks no hierarchy for a {} column: dropped.",
                100.0 * d as f64 / p.non_null as f64,
                p.type_name
            )],
        ));
    }
    if class == Class::Other {
        return Some((
            Role::AsIs,
            vec![format!(
                "kanon init picks no hierarchy for a {} column: released as it is (drop it if it identifies anyone).",
                p.type_name
            )],
        ));
    }
    let near_unique = d as f64 >= NEAR_UNIQUE * p.non_null as f64 && p.non_null >= 10;
    if !near_unique {
        return None;
    }
    let share = format!("distinct on {:.0}% of its non-NULL rows", 100.0 * d as f64 / p.non_null as f64);
    match class {
        Class::Integer => {
            let (lo, hi) = (p.min.unwrap_or(0.0), p.max.unwrap_or(0.0));
            // Below 100 rows, a unique run of integers may as well be ages.
            if hi - lo + 1.0 <= 2.0 * p.non_null as f64 && p.non_null >= 100 {
                return Some((
                    Role::Drop { key: true },
                    vec![format!(
                        "It is {share}, a run of integers with few gaps: a row key; dropped (or pseudonymized, see below)."
                    )],
                ));
            }
            None
        }
        Class::Text if !is_date(p) => {
            let key = !p.spaces;
            let kind = if key { "a code without spaces, so a key" } else { "text that identifies its row" };
            Some((
                Role::Drop { key },
                vec![format!(
                    "It is {share}: {kind}; dropped{}.",
                    if key { " (or pseudonymized, see below)" } else { "" }
                )],
            ))
        }
        _ => None,
    }
}

/// The hierarchy of a QI candidate, or why it is released as it is.
fn qi_role(p: &Profile) -> (Role, Vec<String>) {
    let class = class_of(&p.type_name);
    let d = p.distinct;
    if class == Class::Boolean {
        return (Role::Qi(Hier::Suppress), vec!["A flag: kept or suppressed as a whole.".into()]);
    }
    if is_date(p) {
        return date_role(p);
    }
    if let Some((len, lcp)) = mask_shape(p) {
        let n = (len - lcp).min(MAX_MASK);
        let merges = p.prefixes.is_some_and(|x| x < d);
        let one = if p.min_len == p.max_len { " of one length" } else { " named like a code" };
        let what = if class == Class::Integer {
            "Integers of one digit count, named like a code,".to_string()
        } else if p.digits {
            format!("Digit strings{}", if p.min_len == p.max_len { one } else { "" })
        } else {
            format!("Codes without spaces{one}")
        };
        if n >= 2 && merges {
            let shared = if lcp > 0 {
                format!(" (every value starts with the same {lcp} character{})", if lcp == 1 { "" } else { "s" })
            } else {
                String::new()
            };
            let top = if len - lcp > MAX_MASK {
                format!("the last {n} characters masked one by one, then *")
            } else {
                format!("{n} levels, masking one more character each{shared}")
            };
            return (
                Role::Qi(Hier::Mask(n)),
                vec![
                    format!("{what} sharing prefixes: a code read left to right, so"),
                    format!("masked from the right: {top}."),
                ],
            );
        }
        if d <= FEW {
            return (
                Role::Qi(Hier::Suppress),
                vec![format!("{what}, few values, no shared prefixes to mask: kept or suppressed as a whole.")],
            );
        }
    }
    match class {
        Class::Integer | Class::Decimal => numeric_role(p),
        _ if d <= FEW => (
            Role::Qi(Hier::Suppress),
            vec![format!("Few values (at most {FEW}): a category, kept or suppressed as a whole.")],
        ),
        _ => (
            Role::AsIs,
            vec![
                "Many values, neither an identifier nor a category: released as it is. If outsiders".into(),
                "could know it, it is a quasi-identifier: make it one with a { file = … } hierarchy, or drop it."
                    .into(),
            ],
        ),
    }
}

fn date_role(p: &Profile) -> (Role, Vec<String>) {
    let lv = p.date_levels.clone().unwrap_or_default();
    let years = lv.counts[2];
    let mut units = Vec::new();
    let mut prev = p.distinct;
    let mut seen = Vec::new();
    for (i, (unit, count)) in UNITS.iter().zip(lv.counts).enumerate() {
        // Quarters only for short spans, where a year is too coarse a next step.
        if i == 1 && years > 3 {
            continue;
        }
        if count < prev && count > 1 {
            units.push(*unit);
            let plural = if *unit == "century" { "centuries".to_string() } else { format!("{unit}s") };
            seen.push(format!("{} {plural}", grouped(count)));
            prev = count;
        }
    }
    let span = format!("from {} to {}", lv.first, lv.last);
    if units.is_empty() {
        return (
            Role::Qi(Hier::Suppress),
            vec![format!("Dates {span}: no date unit merges them below the top, so kept or suppressed as a whole.")],
        );
    }
    (
        Role::Qi(Hier::Date(units)),
        vec![
            format!("Dates {span} ({}):", seen.join(", ")),
            "each unit that merges values and leaves more than one is a level, then *.".into(),
        ],
    )
}

/// Nesting interval widths from the range: the coarsest leaves at most
/// [`TOP_BANDS`] bands; finer ones while a band holds two values on average.
fn numeric_role(p: &Profile) -> (Role, Vec<String>) {
    let integer = class_of(&p.type_name) == Class::Integer;
    let (lo, hi) = (p.min.unwrap_or(0.0), p.max.unwrap_or(0.0));
    if !lo.is_finite() || !hi.is_finite() {
        return (
            Role::AsIs,
            vec!["Its range is not finite (an infinite value): no bands fit; released as it is.".into()],
        );
    }
    let bands = |w: Width| ((hi / w.value()).floor() - (lo / w.value()).floor()) as i64 + 1;
    let span = (hi - lo).max(f64::MIN_POSITIVE);
    let mut top = Width { m: 1, e: span.log10().floor() as i32 - 2 };
    if integer && top.e < 0 {
        top = Width { m: 1, e: 0 };
    }
    while bands(top) > TOP_BANDS {
        top = top.coarser();
    }
    let d = p.distinct;
    if bands(top) >= d {
        return (
            Role::Qi(Hier::Suppress),
            vec![format!(
                "Few values ({d}) for their range: bands of width {} would not merge them, so kept or suppressed as a whole.",
                top.text()
            )],
        );
    }
    let mut widths = vec![top];
    let mut w = top;
    while widths.len() < MAX_WIDTHS {
        w = w.finer();
        if integer && w.e < 0 || 2 * bands(w) > d {
            break;
        }
        widths.push(w);
    }
    widths.reverse();
    let desc = list(&widths, ", ", |w| format!("{} bands of {}", bands(*w), w.text()));
    (
        Role::Qi(Hier::Intervals(widths)),
        vec![
            format!("Numbers: nesting bands ({desc}): the widest leaves at most {TOP_BANDS}, the"),
            "narrowest still holds two values a band on average; then *.".into(),
        ],
    )
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
    let mut stmt = conn.prepare(&format!("SELECT {cols} FROM kanon_init_h ORDER BY ALL"))?;
    let mut rows: Vec<Vec<String>> = stmt
        .query_map([], |r| (0..width).map(|i| r.get::<_, String>(i)).collect::<duckdb::Result<Vec<_>>>())?
        .collect::<duckdb::Result<_>>()?;
    conn.execute_batch("DROP TABLE kanon_init_h")?;
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

fn toml_str(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// Text safe inside a TOML comment: no line breaks or control characters.
fn clean(s: &str) -> String {
    s.chars().map(|c| if c.is_control() { ' ' } else { c }).collect()
}

/// 1234567 → "1,234,567".
fn grouped(n: i64) -> String {
    let s = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    if n < 0 {
        format!("-{out}")
    } else {
        out
    }
}

fn number(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

fn short(s: &str) -> String {
    let s = clean(s);
    if s.chars().count() > 24 {
        format!("\"{}…\"", s.chars().take(24).collect::<String>())
    } else {
        format!("\"{s}\"")
    }
}

/// The line of facts about a column: type, distinct values, NULLs, range or
/// lengths. Values (a range, the first and last text) only with `values`:
/// never for a dropped or free-text column, whose values would put personal
/// data into the job file.
fn facts(p: &Profile, rows: i64, values: bool) -> String {
    let nulls = rows - p.non_null;
    let mut s = format!(
        "{} ({}): {} distinct value{} in {} rows, {}",
        clean(&p.name),
        p.type_name,
        grouped(p.distinct),
        if p.distinct == 1 { "" } else { "s" },
        grouped(rows),
        if nulls == 0 { "no NULLs".to_string() } else { format!("{} NULLs", grouped(nulls)) },
    );
    match class_of(&p.type_name) {
        Class::Integer | Class::Decimal => {
            if let (Some(lo), Some(hi), true) = (p.min, p.max, values) {
                let _ = write!(s, "; {} to {}", number(lo), number(hi));
            }
        }
        Class::Text if p.distinct > 0 => {
            let lens = if p.min_len == p.max_len {
                format!("all of length {}", p.min_len)
            } else {
                format!("lengths {} to {}", p.min_len, p.max_len)
            };
            let digits = if p.digits { ", all digits" } else { "" };
            let range = match (&p.first, &p.last) {
                (Some(a), Some(b)) if values => format!(", {} to {}", short(a), short(b)),
                _ => String::new(),
            };
            let _ = write!(s, "; {lens}{digits}{range}");
        }
        _ => {}
    }
    s
}

/// `to` relative to the folder `from` (both made canonical when they exist),
/// or `to` absolute when they share no root.
fn relative(to: &Path, from: &Path) -> Result<PathBuf> {
    let to = to.canonicalize().or_else(|_| std::path::absolute(to))?;
    let from = from.canonicalize().or_else(|_| std::path::absolute(from))?;
    let a: Vec<Component> = to.components().collect();
    let b: Vec<Component> = from.components().collect();
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    if common == 0 {
        return Ok(to);
    }
    let mut out = PathBuf::new();
    for _ in common..b.len() {
        out.push("..");
    }
    for c in &a[common..] {
        out.push(c.as_os_str());
    }
    Ok(out)
}

fn job_text(
    opts: &Options,
    kind: &Kind,
    job_dir: &Path,
    rows: i64,
    choices: &[Choice],
    capped: usize,
) -> Result<String> {
    let src_rel = relative(&opts.source, job_dir)?.to_string_lossy().into_owned();
    let name = opts.source.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "source".into());
    // extract.csv.gz → extract; release.duckdb → release.
    let mut stem = name.as_str();
    for _ in 0..2 {
        if let Some((head, _)) = stem.rsplit_once('.').filter(|(h, _)| !h.is_empty()) {
            let known = [".csv", ".tsv", ".txt", ".gz", ".zst", ".parquet", ".pq", ".duckdb", ".db"];
            if known.iter().any(|e| stem[head.len()..].eq_ignore_ascii_case(e)) {
                stem = head;
            }
        }
    }
    let stem = stem.to_string();
    let k = K.min(rows);
    let job_name = opts.out.display().to_string();
    let mut t = String::new();
    let source_name = opts.source.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let what = match kind {
        Kind::Database { table } => format!("table \"{}\" of {}", clean(table), clean(&source_name)),
        _ => clean(&source_name),
    };
    let _ = writeln!(
        t,
        "# Written by `kanon init` from {what} ({} rows, {} columns): a starting job,",
        grouped(rows),
        choices.len()
    );
    let _ = writeln!(t, "# k = {k} with at most 1% of the rows suppressed. Each choice is explained above it;");
    let _ = writeln!(t, "# review them (a column's role is a judgement the data alone cannot settle), then run:");
    let _ = writeln!(t, "#   kanon run {}", clean(&job_name));
    let _ = writeln!(t, "# Paths are relative to this file.");
    if capped > 0 {
        let _ = writeln!(
            t,
            "# {capped} more column{} looked like quasi-identifiers but would grow the search's lattice",
            if capped == 1 { "" } else { "s" }
        );
        let _ = writeln!(t, "# past {} nodes; they are dropped, see [output].", grouped(MAX_NODES as i64));
    }
    t.push('\n');

    t.push_str("[source]\n");
    match kind {
        Kind::Database { table } => {
            let _ = writeln!(t, "database = {}", toml_str(&src_rel));
            let _ = writeln!(t, "table = {}", toml_str(table));
        }
        Kind::Csv { delimiter } => {
            let _ = writeln!(t, "csv = {}", toml_str(&src_rel));
            let _ = writeln!(
                t,
                "delimiter = {}   # as DuckDB sniffed it, so kanon reads the file as init did",
                toml_str(delimiter)
            );
        }
        Kind::Parquet => {
            let _ = writeln!(t, "parquet = {}", toml_str(&src_rel));
        }
    }
    t.push('\n');

    t.push_str("[output]\n");
    t.push_str("# The release and its report, beside this job; the source is only read.\n");
    match kind {
        Kind::Database { table } => {
            let _ = writeln!(t, "database = {}", toml_str(&format!("{stem}-release.duckdb")));
            let _ = writeln!(t, "table = {}", toml_str(&format!("{table}_k{k}")));
        }
        Kind::Csv { .. } => {
            let _ = writeln!(t, "csv = {}", toml_str(&format!("{stem}_k{k}.csv")));
        }
        Kind::Parquet => {
            let _ = writeln!(t, "parquet = {}", toml_str(&format!("{stem}_k{k}.parquet")));
        }
    }
    let _ = writeln!(t, "report = {}", toml_str(&format!("{stem}-report.json")));
    let dropped: Vec<&Choice> = choices.iter().filter(|c| matches!(c.role, Role::Drop { .. })).collect();
    if dropped.is_empty() {
        t.push_str("# No column looks like a direct identifier or a key.\n");
    } else {
        t.push_str("# Left out of the release:\n");
        for c in &dropped {
            explain(&mut t, c, rows, "# - ", "#   ");
        }
    }
    let _ = writeln!(t, "drop = [{}]", list(&dropped, ", ", |c| toml_str(&c.profile.name)));
    let keys: Vec<&&Choice> = dropped.iter().filter(|c| c.role == Role::Drop { key: true }).collect();
    if !keys.is_empty() {
        t.push_str("# Key-like columns can be released as keyed pseudonyms instead (HMAC-SHA-256 hex), which\n");
        t.push_str("# keeps them joinable across releases made with the same key. That needs the key in the\n");
        t.push_str("# environment variable KANON_KEY (or the one key_env names), so this job, which must run as\n");
        t.push_str("# it is, drops them; to pseudonymize, uncomment and remove them from drop:\n");
        let _ = writeln!(
            t,
            "# pseudonymize = [{}]   # instead of drop, to keep them joinable (needs KANON_KEY)",
            list(&keys, ", ", |c| toml_str(&c.profile.name))
        );
    }
    let released: Vec<&Choice> = choices.iter().filter(|c| matches!(c.role, Role::Sensitive(_) | Role::AsIs)).collect();
    if !released.is_empty() {
        t.push_str("# Released as they are (neither identifiers nor quasi-identifiers):\n");
        for c in &released {
            explain(&mut t, c, rows, "# - ", "#   ");
        }
    }
    t.push('\n');

    t.push_str("[privacy]\n");
    if k < K {
        let _ = writeln!(t, "# k = {K} is above the source's {rows} rows, so k is the row count.");
    }
    let _ = writeln!(t, "k = {k}");
    let allowed = (MAX_SUPPRESSION * rows as f64).floor() as i64;
    let _ = writeln!(
        t,
        "max_suppression = {MAX_SUPPRESSION}            # at most {} of the {} rows",
        grouped(allowed),
        grouped(rows)
    );
    let suggestions: Vec<&String> =
        choices.iter().filter_map(|c| if let Role::Sensitive(Some(s)) = &c.role { Some(s) } else { None }).collect();
    if !suggestions.is_empty() {
        t.push_str("# Sensitive columns (see [output]): to protect one, uncomment its line (one l_diversity and\n");
        t.push_str("# one t_closeness at most); when the data cannot meet it, kanon run exits 3 naming it:\n");
        for s in suggestions {
            let _ = writeln!(t, "# {s}");
        }
    }
    t.push('\n');

    t.push_str("[search]\n");
    t.push_str("# algorithm: none given, so kanon picks the fastest search for the optimum;\n");
    t.push_str("# name \"incognito\" for every feasible node too\n");
    t.push_str("metric = \"glm\"\n");

    for c in choices {
        let Role::Qi(h) = &c.role else { continue };
        t.push('\n');
        explain(&mut t, c, rows, "# ", "# ");
        t.push_str("[[quasi_identifiers]]\n");
        let _ = writeln!(t, "column = {}", toml_str(&c.profile.name));
        match &c.file {
            Some(f) => {
                let _ = writeln!(t, "hierarchy = {{ file = {} }}   # the levels of {}", toml_str(f), h.toml());
            }
            None => {
                let _ = writeln!(t, "hierarchy = {}", h.toml());
            }
        }
    }
    Ok(t)
}

/// A column's facts line and its reasons, as comment lines.
fn explain(t: &mut String, c: &Choice, rows: i64, first: &str, rest: &str) {
    let values = matches!(c.role, Role::Qi(_) | Role::Sensitive(_));
    let _ = writeln!(t, "{first}{}.", facts(&c.profile, rows, values));
    for line in &c.why {
        let _ = writeln!(t, "{rest}{}", clean(line));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_at_case_and_punctuation() {
        assert_eq!(words("patientID"), ["patient", "id"]);
        assert_eq!(words("first_name"), ["first", "name"]);
        assert_eq!(words("salary-class"), ["salary", "class"]);
        assert_eq!(identifier_word("patientid"), Some(("patientid".into(), true)));
        assert_eq!(identifier_word("paid"), None);
        assert_eq!(identifier_word("Email Address"), Some(("email".into(), false)));
    }

    #[test]
    fn widths_nest() {
        let w = Width { m: 5, e: 1 };
        assert_eq!(w.finer(), Width { m: 1, e: 1 });
        assert_eq!(w.coarser(), Width { m: 1, e: 2 });
        assert_eq!(Width { m: 5, e: -1 }.text(), "0.5");
        let p = Profile {
            name: "age".into(),
            type_name: "BIGINT".into(),
            non_null: 1000,
            distinct: 73,
            min: Some(17.0),
            max: Some(90.0),
            ..Default::default()
        };
        let (role, _) = numeric_role(&p);
        assert_eq!(
            role.clone(),
            Role::Qi(Hier::Intervals(vec![Width { m: 5, e: 0 }, Width { m: 1, e: 1 }, Width { m: 2, e: 1 }]))
        );
        if let Role::Qi(h) = role {
            assert_eq!(h.toml(), "{ intervals = [5, 10, 20] }");
        }
    }

    #[test]
    fn relative_paths_climb() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("a/b")).unwrap();
        std::fs::create_dir_all(d.path().join("c")).unwrap();
        std::fs::write(d.path().join("c/x.csv"), "").unwrap();
        assert_eq!(relative(&d.path().join("c/x.csv"), &d.path().join("a/b")).unwrap(), Path::new("../../c/x.csv"));
    }
}
