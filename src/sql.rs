//! Named SQL statements from `sql/`, and the two helpers every statement built from
//! a job file goes through: identifier quoting and string-literal quoting.
//!
//! Statements are templates: `{{name}}` slots are filled with fragments that this
//! crate builds from internal names (`g0`, `anc_3`, …) and integers only. Anything
//! that comes from a job file is either bound as a parameter or passed through
//! [`ident`] (identifiers) or [`literal`] (file paths, where DuckDB accepts no
//! parameter: view bodies, `COPY … TO`, `ATTACH`).

/// Quote an identifier: wrap in double quotes, double any inner double quote.
pub(crate) fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Quote a string literal: wrap in single quotes, double any inner single quote.
pub(crate) fn literal(value: &str) -> String {
    format!("'{}'", value.replace('\'', "''"))
}

/// Fill `{{name}}` slots in one pass over the template: a filled value is
/// never scanned again, so a value holding `{{` (a column named so) stays
/// text. Panics on a slot the template names but `slots` does not fill: that
/// is a bug, not input. The template's comment lines are left out first: a
/// slot named in a comment must not be filled there (a value of several
/// lines would leave the comment).
pub(crate) fn render(template: &str, slots: &[(&str, &str)]) -> String {
    let body: String = template.lines().filter(|l| !l.trim_start().starts_with("--")).collect::<Vec<_>>().join("\n");
    let mut out = String::with_capacity(body.len());
    let mut rest = body.as_str();
    while let Some(open) = rest.find("{{") {
        out.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        let close = after.find("}}").unwrap_or_else(|| panic!("unclosed slot in SQL template: {body}"));
        let name = &after[..close];
        let value = slots
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap_or_else(|| panic!("unfilled slot {name} in SQL template: {body}"));
        out.push_str(value.1);
        rest = &after[close + 2..];
    }
    out.push_str(rest);
    out
}

/// Join `f(i)` for each item with `sep`.
pub(crate) fn list<T>(items: impl IntoIterator<Item = T>, sep: &str, f: impl Fn(T) -> String) -> String {
    items.into_iter().map(f).collect::<Vec<_>>().join(sep)
}

/// Codes grouped by one integer key: `key`, a mixed-radix BIGINT of
/// `codes` (non-negative integers, code i under `radices[i]`), and
/// `unpacked`, each code again off the key's column `column`, divided by the
/// engine's integer division `int_div` (an `{{a}}`/`{{b}}` template).
pub(crate) struct PackedKey {
    pub(crate) key: String,
    pub(crate) unpacked: Vec<String>,
}

/// The codes `codes` as one [`PackedKey`]; None for fewer than two codes, or
/// radices whose product passes 2^62. Why: engines hash and compare one
/// BIGINT faster than several columns (10M near-unique base rows rolled up
/// to 640k classes: Spark 4.3 s against 6.8 s, PostgreSQL 2.9 s against 3.8 s).
pub(crate) fn packed_key(codes: &[String], radices: &[u64], column: &str, int_div: &str) -> Option<PackedKey> {
    if codes.len() < 2 || codes.len() != radices.len() {
        return None;
    }
    let span = radices.iter().try_fold(1u64, |p, &r| p.checked_mul(r.max(1)))?;
    if span > 1 << 62 {
        return None;
    }
    let key =
        codes.iter().zip(radices).skip(1).fold(format!("CAST({} AS BIGINT)", codes[0]), |acc, (c, r)| {
            format!("({acc}) * {r} + CAST({c} AS BIGINT)")
        });
    // Code i is the key over the product of the radices after it, modulo its own.
    let mut unpacked = Vec::with_capacity(codes.len());
    let mut below = 1u64;
    for (i, &r) in radices.iter().enumerate().rev() {
        let shifted = match below {
            1 => column.to_string(),
            b => render(int_div, &[("a", column), ("b", &b.to_string())]),
        };
        unpacked.push(match i {
            0 => shifted,
            _ => format!("({shifted} % {r})"),
        });
        below *= r.max(1);
    }
    unpacked.reverse();
    Some(PackedKey { key, unpacked })
}

macro_rules! statements {
    ($($name:ident => $file:literal),* $(,)?) => {
        $(pub(crate) const $name: &str = include_str!(concat!("../sql/", $file));)*
    };
}

statements! {
    SOURCE_VIEW => "source_view.sql",
    DP_SAMPLE => "dp_sample.sql",
    CSV_SNIFF => "csv_sniff.sql",
    SOURCE_GROUPED => "source_grouped.sql",
    TABLE_COLUMNS => "table_columns.sql",
    BASE_FREQUENCY_SET => "base_frequency_set.sql",
    CLASS_PAIRS => "class_pairs.sql",
    HIERARCHY_COVERAGE => "hierarchy_coverage.sql",
    ROLLUP => "rollup.sql",
    CLASS_HISTOGRAM => "class_histogram.sql",
    CANDIDATES_FIRST => "candidates_first.sql",
    EDGES_FIRST => "edges_first.sql",
    CANDIDATES_JOIN => "candidates_join.sql",
    CANDIDATES_PRUNE => "candidates_prune.sql",
    EDGES_GENERATE => "edges_generate.sql",
    RELEASE_MAP => "release_map.sql",
    RELEASE_SELECT => "release_select.sql",
    RELEASE_JOINED => "release_joined.sql",
    MEASURE_CLASSES => "measure_classes.sql",
    CHECK => "check.sql",
    CHECK_ENGINE => "check_engine.sql",
    HIERARCHY_LEVELS => "hierarchy_levels.sql",
    BASE_F0_NODE => "base_f0_node.sql",
    GENERATE => "generate.sql",
    SEARCH_BOUNDS => "search_bounds.sql",
    SOURCE_MARGINALS => "source_marginals.sql",
    ROLLUP_SETS => "rollup_sets.sql",
    BASE_CODES => "base_codes.sql",
    CELLS => "cells.sql",
    LIMIT => "limit.sql",
    RISK => "risk.sql",
    INIT_PROFILE => "init_profile.sql",
    HISTORY => "history.sql",
    KEPT_SETS => "kept_sets.sql",
    REFUTE => "refute.sql",
    POSTGRES_CATALOG => "postgres_catalog.sql",
    // data, evaluator, measure (house-data)
    BASE_FORM => "base_form.sql",
    CLASSES => "classes.sql",
    CANDIDATE_TABLES => "candidate_tables.sql",
    FREQUENCY_SETS => "frequency_sets.sql",
    EVALUATOR => "evaluator.sql",
    ENGINE_EVALUATOR => "engine_evaluator.sql",
    PERSONS => "persons.sql",
    HIERARCHY_TABLES => "hierarchy_tables.sql",
    // anonymize: the full-domain node chosen, measured.
    NODE_CLASSES => "node_classes.sql",
    // scale (generate, limit) and profile (init)
    GENERATE_REPLACE => "generate_replace.sql",
    // The engines (src/engine/, src/load.rs, src/release/): each one's spellings in its file.
    DUCKDB => "duckdb.sql",
    SPARK => "spark.sql",
    POSTGRES => "postgres.sql",
}

/// The `-- name: NAME` section of a file that holds several fragments.
pub(crate) fn fragment(file: &'static str, name: &str) -> &'static str {
    let marker = format!("-- name: {name}\n");
    let start = file.find(&marker).map(|i| i + marker.len()).unwrap_or_else(|| panic!("no SQL fragment {name}"));
    let rest = &file[start..];
    let end = rest.find("-- name: ").unwrap_or(rest.len());
    rest[..end].trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_identifier_stays_one_identifier() {
        assert_eq!(ident(r#"a"; DROP TABLE x; --"#), r#""a""; DROP TABLE x; --""#);
        assert_eq!(literal("it's"), "'it''s'");
    }

    #[test]
    fn packed_key_unpacks_to_its_codes() {
        let codes = ["a".to_string(), "b".to_string(), "c".to_string()];
        let k = packed_key(&codes, &[7, 3, 5], "pk", "({{a}} // {{b}})").unwrap();
        assert_eq!(k.key, "((CAST(a AS BIGINT)) * 3 + CAST(b AS BIGINT)) * 5 + CAST(c AS BIGINT)");
        assert_eq!(k.unpacked, vec!["(pk // 15)", "((pk // 5) % 3)", "(pk % 5)"]);
        // Run: every (a, b, c) packs to a distinct key and back.
        let conn = duckdb::Connection::open_in_memory().unwrap();
        let q = format!(
            "SELECT count(*), count(DISTINCT pk), count(*) FILTER ({} = a AND {} = b AND {} = c) FROM \
             (SELECT a, b, c, {} AS pk FROM range(7) x(a), range(3) y(b), range(5) z(c))",
            k.unpacked[0], k.unpacked[1], k.unpacked[2], k.key
        );
        let counts: (i64, i64, i64) = conn.query_row(&q, [], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap();
        assert_eq!(counts, (105, 105, 105));
        assert!(packed_key(&codes[..1], &[7], "pk", "").is_none());
        assert!(packed_key(&codes[..2], &[1 << 32, 1 << 31], "pk", "").is_none());
        assert!(packed_key(&codes[..2], &[1 << 31, 1 << 31], "pk", "").is_some());
    }

    #[test]
    fn render_fills_slots() {
        assert_eq!(render("SELECT {{a}} FROM {{b}}", &[("a", "1"), ("b", "t")]), "SELECT 1 FROM t");
    }

    /// A value holding `{{…}}` (a column named so) is text: not a slot, not filled again.
    #[test]
    fn a_value_is_never_a_slot() {
        let sql = render("SELECT {{a}} FROM {{b}}", &[("a", "\"x{{b}}\""), ("b", "t")]);
        assert_eq!(sql, "SELECT \"x{{b}}\" FROM t");
        assert_eq!(render("SELECT {{a}}", &[("a", "\"{{\"")]), "SELECT \"{{\"");
    }
}
