//! Property tests of bad and hostile input: generated job files, hierarchy
//! files and CSV sources with hostile names (quotes, `{{`, `;`, newlines,
//! unicode), wrong types, out-of-range numbers and ragged rows. Every run
//! exits 0, 2 or 3 — never a panic, never exit 1 — leaves every input file
//! byte-identical, writes nothing when it fails, and a refusal (exit 2) names
//! the job file. A bounded number of cases from a fixed seed, so CI runs the
//! same cases every time.

use crate::util::{kanon_env, Out};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

/// Names that break SQL, templates, CSV or TOML when pasted unquoted.
const HOSTILE: [&str; 10] =
    ["zip", "a\"b", "it's", "{{relation}}", "x;y", "line\nbreak", "ünï—cødé", "a, b", " padded ", "DROP TABLE x; --"];

/// A pseudonymization key nothing kanon prints or writes may hold.
const KEY: &str = "prop-secret-key-5f1c";

#[derive(Debug, Clone)]
struct Case {
    /// Column names of the CSV (the first two are the QIs the job names, unless `unknown_qi`).
    names: Vec<String>,
    rows: Vec<Vec<String>>,
    /// Rows with a field fewer than the header.
    ragged: bool,
    k: toml::Value,
    budget: Option<toml::Value>,
    mask: toml::Value,
    /// The second QI by a hierarchy file (with these labels) or "suppress".
    file_labels: Option<Vec<String>>,
    unknown_qi: bool,
    pseudonymize: bool,
}

fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        12 => (10000u32..10004).prop_map(|z| z.to_string()),
        3 => prop::sample::select(HOSTILE.to_vec()).prop_map(String::from),
        1 => Just(String::new()),
    ]
}

/// A setting: mostly a valid one of `valid`, else a wrong type or an out-of-range number.
fn setting(valid: impl Strategy<Value = toml::Value> + 'static) -> impl Strategy<Value = toml::Value> {
    prop_oneof![
        40 => valid,
        1 => Just(toml::Value::Integer(-3)),
        1 => Just(toml::Value::Integer(0)),
        1 => Just(toml::Value::Integer(i64::MAX)),
        1 => Just(toml::Value::Float(1.5)),
        1 => Just(toml::Value::Float(f64::NAN)),
        1 => Just(toml::Value::String("five".into())),
        1 => Just(toml::Value::Boolean(true)),
    ]
}

fn case() -> impl Strategy<Value = Case> {
    (
        prop::sample::subsequence(HOSTILE.to_vec(), 3..=4),
        prop::collection::vec(prop::collection::vec(value(), 4), 1..16),
        prop::bool::weighted(0.1),
        setting((1i64..4).prop_map(toml::Value::Integer)),
        prop::option::of(setting(prop_oneof![
            (0.0f64..1.0).prop_map(toml::Value::Float),
            (0i64..20).prop_map(toml::Value::Integer)
        ])),
        setting((1i64..6).prop_map(toml::Value::Integer)),
        prop::option::of(prop::collection::vec(prop::sample::select(HOSTILE.to_vec()).prop_map(String::from), 1..3)),
        prop::bool::weighted(0.15),
        any::<bool>(),
    )
        .prop_map(|(names, rows, ragged, k, budget, mask, file_labels, unknown_qi, pseudonymize)| Case {
            names: names.into_iter().map(String::from).collect(),
            rows,
            ragged,
            k,
            budget,
            mask,
            file_labels,
            unknown_qi,
            pseudonymize,
        })
}

/// A CSV field, quoted as RFC 4180 asks.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) || s.starts_with(' ') || s.ends_with(' ') {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Writes the case's files into `dir`: source.csv, the hierarchy file, job.toml.
fn lay_out(c: &Case, dir: &Path) {
    let width = c.names.len();
    let mut csv = c.names.iter().map(|n| field(n)).collect::<Vec<_>>().join(",") + "\n";
    for (i, row) in c.rows.iter().enumerate() {
        let take = if c.ragged && i % 3 == 1 { width - 1 } else { width };
        let fields: Vec<String> = (0..take).map(|j| field(&row[j % row.len()])).collect();
        csv.push_str(&fields.join(","));
        csv.push('\n');
    }
    fs::write(dir.join("source.csv"), csv).unwrap();
    let mut job = toml::Table::new();
    let table = |pairs: Vec<(&str, toml::Value)>| -> toml::Value {
        toml::Value::Table(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
    };
    job.insert("source".into(), table(vec![("csv", "source.csv".into())]));
    let mut output = vec![
        ("database", toml::Value::from("out.duckdb")),
        ("table", "release".into()),
        ("report", "report.json".into()),
    ];
    if c.pseudonymize {
        output.push(("pseudonymize", toml::Value::Array(vec![c.names[width - 1].clone().into()])));
    }
    job.insert("output".into(), table(output));
    let mut privacy = vec![("k", c.k.clone())];
    if let Some(b) = &c.budget {
        privacy.push(("max_suppression", b.clone()));
    }
    job.insert("privacy".into(), table(privacy));
    let first = if c.unknown_qi { "no such column".to_string() } else { c.names[0].clone() };
    let second = match &c.file_labels {
        Some(labels) => {
            // Each value of the second column under one of the labels (ragged if a label has a `;`).
            let mut text = String::new();
            let values: std::collections::BTreeSet<&String> = c.rows.iter().map(|r| &r[1 % r.len()]).collect();
            for (i, v) in values.into_iter().enumerate() {
                text.push_str(&format!("{v};{};*\n", labels[i % labels.len()]));
            }
            fs::write(dir.join("hierarchy.csv"), text).unwrap();
            table(vec![("file", "hierarchy.csv".into())])
        }
        None => "suppress".into(),
    };
    let qis = vec![
        table(vec![("column", first.into()), ("hierarchy", table(vec![("mask", c.mask.clone())]))]),
        table(vec![("column", c.names[1].clone().into()), ("hierarchy", second)]),
    ];
    job.insert("quasi_identifiers".into(), toml::Value::Array(qis));
    fs::write(dir.join("job.toml"), toml::to_string(&job).unwrap()).unwrap();
}

/// Every file in `dir` with its bytes.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_file())
        .map(|e| (e.file_name().to_string_lossy().into_owned(), fs::read(e.path()).unwrap()))
        .collect()
}

fn check(c: &Case, codes: &mut BTreeMap<i32, u32>) -> Result<(), TestCaseError> {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    lay_out(c, dir);
    let before = files(dir);
    let out: Out = kanon_env(dir, &["run", "job.toml", "--quiet"], &[("KANON_KEY", KEY)]);
    let shown = out.show();
    *codes.entry(out.code).or_default() += 1;
    if std::env::var_os("KANON_PROPS_SHOW").is_some() {
        eprintln!("--- exit {}: {}", out.code, out.stderr.trim());
    }
    prop_assert!([0, 2, 3].contains(&out.code), "exit {} for {c:?}:\n{shown}", out.code);
    prop_assert!(!shown.contains("panicked"), "a panic for {c:?}:\n{shown}");
    prop_assert!(!shown.contains(KEY), "the key was shown:\n{shown}");
    let after = files(dir);
    for (name, bytes) in &before {
        prop_assert_eq!(after.get(name), Some(bytes), "{} changed for {:?}", name, c);
    }
    if out.code == 0 {
        prop_assert!(after.contains_key("report.json") && after.contains_key("out.duckdb"));
        let report = String::from_utf8_lossy(&after["report.json"]).into_owned();
        prop_assert!(!report.contains(KEY), "the key is in the report");
    } else {
        let written: Vec<&String> = after.keys().filter(|n| !before.contains_key(*n)).collect();
        prop_assert!(written.is_empty(), "a failed run wrote {written:?} for {c:?}:\n{shown}");
    }
    if out.code == 2 {
        prop_assert!(
            out.stderr.contains("job.toml") || out.stderr.contains("source.csv"),
            "a refusal names no file:\n{shown}"
        );
    }
    Ok(())
}

#[test]
fn hostile_jobs_exit_0_2_or_3_and_change_nothing() {
    let config = Config { cases: 48, failure_persistence: None, ..Config::default() };
    // A fixed seed: the same cases on every run.
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]);
    let mut runner = TestRunner::new_with_rng(config, rng);
    let codes = std::cell::RefCell::new(BTreeMap::new());
    if let Err(e) = runner.run(&case(), |c| check(&c, &mut codes.borrow_mut())) {
        panic!("{e}");
    }
    // The cases reach both ends: releases and refusals (a generator that only made refusals
    // would prove little).
    let codes = codes.into_inner();
    eprintln!("exit codes over the cases: {codes:?}");
    assert!(codes.get(&0).is_some_and(|n| *n >= 3), "too few cases released: {codes:?}");
    assert!(codes.get(&2).is_some_and(|n| *n >= 3), "too few cases refused: {codes:?}");
}
