//! The job file's text: every section, each choice explained by comment
//! lines above it (a line of facts, then why).

use super::choose::{Choice, Chosen, Role, MAX_NODES};
use super::source::Kind;
use super::stats::{class_of, Class, Profile};
use super::Options;
use crate::sql::list;
use anyhow::Result;
use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};

/// The k of the written job (lowered to the row count for a smaller source).
const K: i64 = 5;
/// The written job's suppression budget, a fraction of the rows.
const MAX_SUPPRESSION: f64 = 0.01;

pub(super) fn toml_str(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// Text safe inside a TOML comment: no line breaks or control characters.
fn clean(s: &str) -> String {
    s.chars().map(|c| if c.is_control() { ' ' } else { c }).collect()
}

/// 1234567 → "1,234,567".
pub(super) fn grouped(n: i64) -> String {
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

/// The job file: a header, then [source], [output], [privacy], [search] and
/// one [[quasi_identifiers]] per QI, each choice explained above it.
pub(super) fn job_text(opts: &Options, kind: &Kind, job_dir: &Path, chosen: &Chosen) -> Result<String> {
    let src_rel = relative(&opts.source, job_dir)?.to_string_lossy().into_owned();
    let k = K.min(chosen.rows);
    let mut t = String::new();
    header(&mut t, opts, kind, chosen, k);
    source(&mut t, kind, &src_rel);
    output(&mut t, kind, &release_stem(&opts.source), k, chosen);
    privacy(&mut t, k, chosen);
    search(&mut t);
    for c in &chosen.choices {
        quasi_identifier(&mut t, c, chosen.rows);
    }
    Ok(t)
}

/// The source's file name without its known extensions (extract.csv.gz →
/// extract; release.duckdb → release): the stem of the release's names.
fn release_stem(source: &Path) -> String {
    let name = source.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "source".into());
    let mut stem = name.as_str();
    for _ in 0..2 {
        if let Some((head, _)) = stem.rsplit_once('.').filter(|(h, _)| !h.is_empty()) {
            let known = [".csv", ".tsv", ".txt", ".gz", ".zst", ".parquet", ".pq", ".duckdb", ".db"];
            if known.iter().any(|e| stem[head.len()..].eq_ignore_ascii_case(e)) {
                stem = head;
            }
        }
    }
    stem.to_string()
}

/// What wrote the job, from what, and how to run it.
fn header(t: &mut String, opts: &Options, kind: &Kind, chosen: &Chosen, k: i64) {
    let source_name = opts.source.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let what = match kind {
        Kind::Database { table } => format!("table \"{}\" of {}", clean(table), clean(&source_name)),
        _ => clean(&source_name),
    };
    let _ = writeln!(
        t,
        "# Written by `kanon init` from {what} ({} rows, {} columns): a starting job,",
        grouped(chosen.rows),
        chosen.choices.len()
    );
    let _ = writeln!(t, "# k = {k} with at most 1% of the rows suppressed. Each choice is explained above it;");
    let _ = writeln!(t, "# review them (a column's role is a judgement the data alone cannot settle), then run:");
    let _ = writeln!(t, "#   kanon run {}", clean(&opts.out.display().to_string()));
    let _ = writeln!(t, "# Paths are relative to this file.");
    let capped = chosen.capped;
    if capped > 0 {
        let _ = writeln!(
            t,
            "# {capped} more column{} looked like quasi-identifiers but would grow the search's lattice",
            if capped == 1 { "" } else { "s" }
        );
        let _ = writeln!(t, "# past {} nodes; they are dropped, see [output].", grouped(MAX_NODES as i64));
    }
    t.push('\n');
}

/// [source]: the file (and table or delimiter) as init read it.
fn source(t: &mut String, kind: &Kind, src_rel: &str) {
    t.push_str("[source]\n");
    match kind {
        Kind::Database { table } => {
            let _ = writeln!(t, "database = {}", toml_str(src_rel));
            let _ = writeln!(t, "table = {}", toml_str(table));
        }
        Kind::Csv { delimiter } => {
            let _ = writeln!(t, "csv = {}", toml_str(src_rel));
            let _ = writeln!(
                t,
                "delimiter = {}   # as DuckDB sniffed it, so kanon reads the file as init did",
                toml_str(delimiter)
            );
        }
        Kind::Parquet => {
            let _ = writeln!(t, "parquet = {}", toml_str(src_rel));
        }
    }
    t.push('\n');
}

/// [output]: the release and report beside the job, the dropped columns
/// (and the pseudonymization offer for keys), the columns released as they are.
fn output(t: &mut String, kind: &Kind, stem: &str, k: i64, chosen: &Chosen) {
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
    let dropped: Vec<&Choice> = chosen.choices.iter().filter(|c| matches!(c.role, Role::Drop { .. })).collect();
    if dropped.is_empty() {
        t.push_str("# No column looks like a direct identifier or a key.\n");
    } else {
        t.push_str("# Left out of the release:\n");
        for c in &dropped {
            explain(t, c, chosen.rows, "# - ", "#   ");
        }
    }
    let _ = writeln!(t, "drop = [{}]", list(&dropped, ", ", |c| toml_str(&c.profile.name)));
    pseudonymize(t, &dropped);
    let released: Vec<&Choice> =
        chosen.choices.iter().filter(|c| matches!(c.role, Role::Sensitive(_) | Role::AsIs)).collect();
    if !released.is_empty() {
        t.push_str("# Released as they are (neither identifiers nor quasi-identifiers):\n");
        for c in &released {
            explain(t, c, chosen.rows, "# - ", "#   ");
        }
    }
    t.push('\n');
}

/// The dropped keys' pseudonymization, offered as a comment.
fn pseudonymize(t: &mut String, dropped: &[&Choice]) {
    let keys: Vec<&&Choice> = dropped.iter().filter(|c| c.role == Role::Drop { key: true }).collect();
    if keys.is_empty() {
        return;
    }
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

/// [privacy]: k, the suppression budget, and the models suggested for the
/// sensitive columns, commented out.
fn privacy(t: &mut String, k: i64, chosen: &Chosen) {
    let rows = chosen.rows;
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
    person(t, chosen);
    let suggestions: Vec<&String> = chosen
        .choices
        .iter()
        .filter_map(|c| if let Role::Sensitive(Some(s)) = &c.role { Some(s) } else { None })
        .collect();
    if !suggestions.is_empty() {
        t.push_str("# Sensitive columns (see [output]): to protect one, uncomment its line (one l_diversity and\n");
        t.push_str("# one t_closeness at most); when the data cannot meet it, kanon run exits 3 naming it:\n");
        for s in suggestions {
            let _ = writeln!(t, "# {s}");
        }
    }
    t.push('\n');
}

/// `person`, offered as a comment when a key-like column repeats: its
/// rows may be one person's, and k over rows would count them apart.
fn person(t: &mut String, chosen: &Chosen) {
    let repeating = chosen.choices.iter().find(|c| {
        let p = &c.profile;
        c.role == Role::Drop { key: true } && p.distinct < p.non_null && p.non_null == p.rows
    });
    let Some(c) = repeating else { return };
    let p = &c.profile;
    let _ = writeln!(
        t,
        "# The key \"{}\" repeats ({} values on {} rows): if it names a person, a person has many rows,",
        p.name,
        grouped(p.distinct),
        grouped(p.rows)
    );
    t.push_str("# and k over rows counts a person's rows apart. To count k (and max_suppression) in persons,\n");
    t.push_str("# each with the set of its rows' values (docs/semantics.md), uncomment:\n");
    let _ = writeln!(t, "# person = {}", toml_str(&p.name));
}

/// [search]: the metric; the algorithm left to kanon.
fn search(t: &mut String) {
    t.push_str("[search]\n");
    t.push_str("# algorithm: none given, so kanon picks the fastest search for the optimum;\n");
    t.push_str("# name \"incognito\" for every feasible node too\n");
    t.push_str("metric = \"glm\"\n");
}

/// One [[quasi_identifiers]] table, for a QI (nothing for another column).
fn quasi_identifier(t: &mut String, c: &Choice, rows: i64) {
    let Role::Qi(h) = &c.role else { return };
    t.push('\n');
    explain(t, c, rows, "# ", "# ");
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
    fn relative_paths_climb() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("a/b")).unwrap();
        std::fs::create_dir_all(d.path().join("c")).unwrap();
        std::fs::write(d.path().join("c/x.csv"), "").unwrap();
        assert_eq!(relative(&d.path().join("c/x.csv"), &d.path().join("a/b")).unwrap(), Path::new("../../c/x.csv"));
    }
}
