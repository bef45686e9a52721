//! `kanon check` audits a table against the job (issue 27): k, the three ℓ,
//! t-closeness's distances and the risk, with exit 0 when the table meets
//! every model and 4 (a line per failing model) when it does not. Each test
//! writes its small tables and job files into a temporary directory; the
//! figures are computed by hand here, or re-measured with plain SQL.

use crate::util::{kanon, Out};
use duckdb::{AccessMode, Config, Connection};
use serde_json::Value as Json;
use std::fmt::Write as _;
use std::fs;
use std::path::Path;

fn ok(out: &Out) {
    assert_eq!(out.code, 0, "kanon failed:\n{}", out.show());
}

/// Exit `code`, and stderr mentions every needle.
fn fails(out: &Out, code: i32, needles: &[&str]) {
    assert_eq!(out.code, code, "expected exit {code}:\n{}", out.show());
    for needle in needles {
        assert!(out.stderr.contains(needle), "stderr should mention {needle:?}:\n{}", out.show());
    }
}

/// The JSON `check --json` printed (also when it exits 4).
fn json(out: &Out) -> Json {
    serde_json::from_str(out.stdout.trim()).unwrap_or_else(|e| panic!("not JSON: {e}\n{}", out.show()))
}

fn num(v: &Json, path: &[&str]) -> f64 {
    let mut at = v;
    for p in path {
        at = &at[*p];
    }
    at.as_f64().unwrap_or_else(|| panic!("{} should be a number in {v}", path.join(".")))
}

fn close(what: &str, actual: f64, expected: f64) {
    assert!((actual - expected).abs() <= 1e-12 * expected.abs().max(1.0), "{what}: {actual} against {expected}");
}

/// A CSV with a header and `(value, times)` rows per class: `rows` of (class, sensitive values…).
fn csv(path: &Path, header: &str, rows: &[(&str, &str, usize)]) {
    let mut text = format!("{header}\n");
    for (class, value, times) in rows {
        for _ in 0..*times {
            writeln!(text, "{class},{value}").unwrap();
        }
    }
    fs::write(path, text).unwrap();
}

/// A job on `source.csv` (QI `grp`, no hierarchy) with these `[privacy]` lines and extra sections.
fn job(dir: &Path, name: &str, k: u64, privacy: &str, extra: &str) {
    let text = format!(
        "[source]\ncsv = \"source.csv\"\n[output]\ndatabase = \"out.duckdb\"\ntable = \"r\"\n\
         [privacy]\nk = {k}\n{privacy}\n[[quasi_identifiers]]\ncolumn = \"grp\"\n{extra}"
    );
    fs::write(dir.join(name), text).unwrap();
}

// ------------------------------------------------------------ k on a release

/// A person-level extract: 600 records over zip, age, sex, with a diagnosis
/// and a name the release drops.
fn extract(dir: &Path) {
    let diagnoses = ["flu", "asthma", "ulcer", "angina", "stroke"];
    let mut text = String::from("name,zip,age,sex,diagnosis\n");
    for i in 0..600u64 {
        let zip = 53700 + (i * 7 % 31);
        let age = 18 + (i * 13 % 61);
        let sex = if (i / 3) % 2 == 0 { "F" } else { "M" };
        let d = diagnoses[((i * 5 + i / 7) % 5) as usize];
        writeln!(text, "p{i},{zip},{age},{sex},{d}").unwrap();
    }
    fs::write(dir.join("people.csv"), text).unwrap();
}

fn extract_job(dir: &Path, name: &str, k: u64, table: &str) {
    let text = format!(
        "[source]\ncsv = \"people.csv\"\n[output]\ndatabase = \"out.duckdb\"\ntable = \"{table}\"\ndrop = [\"name\"]\n\
         [privacy]\nk = {k}\nmax_suppression = 0.02\nl_diversity = {{ column = \"diagnosis\", l = 2 }}\n\
         [[quasi_identifiers]]\ncolumn = \"zip\"\nhierarchy = {{ mask = 5 }}\n\
         [[quasi_identifiers]]\ncolumn = \"age\"\nhierarchy = {{ intervals = [5, 10, 20] }}\n\
         [[quasi_identifiers]]\ncolumn = \"sex\"\nhierarchy = \"suppress\"\n"
    );
    fs::write(dir.join(name), text).unwrap();
}

fn open_ro(db: &Path) -> Connection {
    Connection::open_with_flags(db, Config::default().access_mode(AccessMode::ReadOnly).unwrap()).unwrap()
}

/// A 5-anonymous release meets its job (exit 0) and fails a job asking k =
/// 10 (exit 4), in as many classes and records as SQL counts.
#[test]
fn release_of_k5_meets_k5_and_fails_k10() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    extract(d);
    extract_job(d, "k5.toml", 5, "release_k5");
    extract_job(d, "k10.toml", 10, "release_k10");
    ok(&kanon(d, &["run", "k5.toml"]));

    let out = kanon(d, &["check", "k5.toml", "--table", "release_k5"]);
    ok(&out);
    assert!(out.stdout.contains("meets the job: k = 5; distinct l = 2 on \"diagnosis\""), "{}", out.show());
    assert!(out.stderr.is_empty(), "{}", out.show());

    // The classes below 10, measured independently.
    let conn = open_ro(&d.join("out.duckdb"));
    let (classes, records, k): (i64, i64, i64) = conn
        .query_row(
            "SELECT count(*) FILTER (WHERE c < 10), coalesce(sum(c) FILTER (WHERE c < 10), 0)::BIGINT, min(c) \
             FROM (SELECT count(*) AS c FROM release_k5 GROUP BY zip, age, sex)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    drop(conn);
    assert!(k >= 5 && classes > 0, "the release should have classes of 5 to 9 (k = {k}, {classes} below 10)");

    let out = kanon(d, &["check", "k10.toml", "--table", "release_k5"]);
    let plural = if classes == 1 { "class" } else { "classes" };
    let line = format!("kanon: release_k5: fails k = 10 in {classes} {plural} ({records} records)");
    fails(&out, 4, &[&line]);
    assert_eq!(out.stderr.lines().count(), 1, "one line per failing model:\n{}", out.show());
    assert!(out.stdout.contains(&format!("k = {k} (job: k = 10)")), "{}", out.show());

    let out = kanon(d, &["check", "k10.toml", "--table", "release_k5", "--json"]);
    assert_eq!(out.code, 4, "{}", out.show());
    let c = json(&out);
    assert_eq!(c["meets"], false);
    assert_eq!(c["k"], k);
    assert_eq!(c["k_anonymous"], false);
    let f = &c["failures"];
    assert_eq!(f.as_array().unwrap().len(), 1, "{c}");
    assert_eq!((f[0]["model"].as_str(), f[0]["requirement"].as_str()), (Some("k"), Some("k = 10")));
    assert_eq!((f[0]["classes"].as_i64(), f[0]["records"].as_i64()), (Some(classes), Some(records)));

    // A job whose source is the release itself, its QIs without hierarchies:
    // check reads no hierarchy, and ℓ's reference is the release's own.
    let text = "[source]\ndatabase = \"out.duckdb\"\ntable = \"release_k5\"\n[output]\ntable = \"audit\"\n\
                [privacy]\nk = 5\nl_diversity = { column = \"diagnosis\", l = 2 }\n\
                [[quasi_identifiers]]\ncolumn = \"zip\"\n[[quasi_identifiers]]\ncolumn = \"age\"\n\
                [[quasi_identifiers]]\ncolumn = \"sex\"\n";
    fs::write(d.join("audit.toml"), text).unwrap();
    let out = kanon(d, &["check", "audit.toml", "--json"]);
    ok(&out);
    let c = json(&out);
    assert_eq!((c["table"].as_str(), c["k"].as_i64(), c["meets"].as_bool()), (Some("source"), Some(k), Some(true)));

    // A QI the release does not have (it dropped it): exit 2, naming it.
    let text = "[source]\ncsv = \"people.csv\"\n[output]\ndatabase = \"out.duckdb\"\ntable = \"x\"\n\
                [privacy]\nk = 5\n[[quasi_identifiers]]\ncolumn = \"name\"\n";
    fs::write(d.join("name.toml"), text).unwrap();
    let out = kanon(d, &["check", "name.toml", "--table", "release_k5"]);
    fails(&out, 2, &["quasi-identifier \"name\" is not a column of table \"release_k5\""]);
}

// ------------------------------------------------------------ ℓ and t by hand

/// Class A holds (3 flu, 3 HIV): entropy ln 2 exactly, so entropy ℓ = 2
/// passes; class B (98 flu, 2 HIV) has distinct ℓ = 2 but fails entropy ℓ = 2.
fn flu(dir: &Path) {
    csv(
        &dir.join("source.csv"),
        "grp,diagnosis",
        &[("A", "flu", 3), ("A", "HIV", 3), ("B", "flu", 98), ("B", "HIV", 2)],
    );
}

#[test]
fn entropy_l_is_exact_at_its_boundary() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    flu(d);
    job(d, "entropy.toml", 1, "l_diversity = { column = \"diagnosis\", l = 2, kind = \"entropy\" }", "");
    let out = kanon(d, &["check", "entropy.toml", "--json"]);
    fails(&out, 4, &["kanon: source: fails entropy l = 2 on \"diagnosis\" in 1 class (100 records)"]);
    let c = json(&out);
    let l = &c["l_diversity"];
    assert_eq!((l["kind"].as_str(), l["distinct"].as_i64(), c["l"].as_i64()), (Some("entropy"), Some(2), Some(2)));
    // B's entropy: −(.98 ln .98 + .02 ln .02); A's is ln 2, larger.
    let h_b = -(0.98f64 * 0.98f64.ln() + 0.02 * 0.02f64.ln());
    close("entropy l", num(&c, &["l_diversity", "entropy"]), h_b.exp());
    assert!(h_b.exp() < 2.0);
    // Recursive at ℓ = 2: r1 / r2 is 3/3 in A, 98/2 in B.
    close("recursive", num(&c, &["l_diversity", "recursive"]), 49.0);
    assert_eq!(c["failures"][0]["model"], "l_diversity");

    // A alone, (3, 3): exactly ln 2, which passes.
    csv(&d.join("source.csv"), "grp,diagnosis", &[("A", "flu", 3), ("A", "HIV", 3)]);
    let out = kanon(d, &["check", "entropy.toml", "--json"]);
    ok(&out);
    let c = json(&out);
    close("entropy l of (3, 3)", num(&c, &["l_diversity", "entropy"]), 2.0);
    assert_eq!(c["meets"], true);
    assert_eq!(c["failures"], serde_json::json!([]));
}

#[test]
fn recursive_l_is_strict() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    flu(d);
    // B: 98 < c · 2 holds for c = 50 and not for c = 49 (equal).
    job(d, "c50.toml", 1, "l_diversity = { column = \"diagnosis\", l = 2, kind = \"recursive\", c = 50 }", "");
    ok(&kanon(d, &["check", "c50.toml"]));
    job(d, "c49.toml", 1, "l_diversity = { column = \"diagnosis\", l = 2, kind = \"recursive\", c = 49 }", "");
    let out = kanon(d, &["check", "c49.toml"]);
    fails(&out, 4, &["source: fails recursive (c, l) = (49, 2) on \"diagnosis\" in 1 class (100 records)"]);
    assert!(out.stdout.contains("l on \"diagnosis\": distinct 2, entropy "), "{}", out.show());
    // ℓ = 3 with two values per class: no recursive figure, and every class fails.
    job(d, "l3.toml", 1, "l_diversity = { column = \"diagnosis\", l = 3, kind = \"recursive\", c = 2 }", "");
    let out = kanon(d, &["check", "l3.toml", "--json"]);
    fails(&out, 4, &["in 2 classes (106 records)"]);
    assert_eq!(json(&out)["l_diversity"]["recursive"], Json::Null);
}

/// t-closeness on the flu table: Q = (101 flu, 5 HIV) over 106 records.
/// Equal distance: A (.5, .5) is |.5 − 5/106| = 48/106 away, B (.98, .02)
/// |.02 − 5/106| = 2.88/106. With flu and HIV under one parent of a
/// hierarchy of height 2, moving mass costs 1/2: A is 24/106 away.
#[test]
fn t_closeness_distances_by_hand() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    flu(d);
    job(d, "t45.toml", 1, "t_closeness = { column = \"diagnosis\", t = 0.45 }", "");
    let out = kanon(d, &["check", "t45.toml", "--json"]);
    fails(&out, 4, &["source: fails t = 0.45 (equal distance) on \"diagnosis\" in 1 class (6 records)"]);
    let c = json(&out);
    let t = &c["t_closeness"];
    close("equal", num(t, &["equal"]), 48.0 / 106.0);
    // A text column has no order; no hierarchy was given.
    assert_eq!((&t["ordered"], &t["hierarchical"]), (&Json::Null, &Json::Null));
    assert_eq!(c["l_diversity"], Json::Null);
    // At exactly 48/106 < 0.4529 the table passes.
    job(d, "t4529.toml", 1, "t_closeness = { column = \"diagnosis\", t = 0.4529 }", "");
    ok(&kanon(d, &["check", "t4529.toml"]));

    fs::write(d.join("diagnosis.csv"), "flu;infection;*\nHIV;infection;*\n").unwrap();
    let tree = "t_closeness = { column = \"diagnosis\", t = 0.2, distance = \"hierarchical\", \
                hierarchy = { file = \"diagnosis.csv\" } }";
    job(d, "tree.toml", 1, tree, "");
    let out = kanon(d, &["check", "tree.toml", "--json"]);
    fails(&out, 4, &["fails t = 0.2 (hierarchical distance) on \"diagnosis\" in 1 class (6 records)"]);
    let t = &json(&out)["t_closeness"];
    close("hierarchical", num(t, &["hierarchical"]), 24.0 / 106.0);
    close("equal beside it", num(t, &["equal"]), 48.0 / 106.0);
}

/// The ordered distance on a number: scores (1, 1) in A and (2, 3, 3) in B,
/// Q = (2, 1, 2)/5 over 1, 2, 3. A: cumulative differences .6, .4, 0, so
/// D = 1/(3 − 1) = .5; B: .4, .2667, 0, D = 1/3. Equal: A .6, B .4.
#[test]
fn ordered_distance_by_hand_and_exact_at_t() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    csv(&d.join("source.csv"), "grp,score", &[("A", "1", 2), ("B", "2", 1), ("B", "3", 2)]);
    job(d, "t50.toml", 2, "t_closeness = { column = \"score\", t = 0.5, distance = \"ordered\" }", "");
    let out = kanon(d, &["check", "t50.toml", "--json"]);
    ok(&out);
    let t = &json(&out)["t_closeness"];
    close("ordered", num(t, &["ordered"]), 0.5);
    close("equal", num(t, &["equal"]), 0.6);
    assert_eq!(t["distance"], "ordered");
    job(d, "t45.toml", 2, "t_closeness = { column = \"score\", t = 0.45, distance = \"ordered\" }", "");
    let out = kanon(d, &["check", "t45.toml"]);
    fails(&out, 4, &["source: fails t = 0.45 (ordered distance) on \"score\" in 1 class (2 records)"]);
    assert!(out.stdout.contains("t on \"score\": equal 0.6000, ordered 0.5000"), "{}", out.show());
    // k = 3 fails too: one line per model, k first.
    job(d, "k3.toml", 3, "t_closeness = { column = \"score\", t = 0.45, distance = \"ordered\" }", "");
    let out = kanon(d, &["check", "k3.toml"]);
    assert_eq!(out.code, 4, "{}", out.show());
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(
        lines,
        [
            "kanon: source: fails k = 3 in 1 class (2 records)",
            "kanon: source: fails t = 0.45 (ordered distance) on \"score\" in 1 class (2 records)"
        ],
        "{}",
        out.show()
    );
}

/// Q is the source's over all its rows also when auditing another table: a
/// table holding class A of the flu table alone is 48/106 from it (its own
/// distribution would put it at 0).
#[test]
fn t_closeness_of_a_table_compares_with_the_source() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    flu(d);
    job(d, "t.toml", 1, "t_closeness = { column = \"diagnosis\", t = 0.5 }", "");
    {
        let conn = Connection::open(d.join("out.duckdb")).unwrap();
        conn.execute_batch(
            "CREATE TABLE only_a AS SELECT 'A' AS grp, unnest(['flu', 'flu', 'flu', 'HIV', 'HIV', 'HIV']) AS diagnosis;
             CREATE TABLE measles AS SELECT 'A' AS grp, unnest(['flu', 'measles']) AS diagnosis;",
        )
        .unwrap();
    }
    let out = kanon(d, &["check", "t.toml", "--table", "only_a", "--json"]);
    ok(&out);
    let c = json(&out);
    close("equal", num(&c, &["t_closeness", "equal"]), 48.0 / 106.0);
    assert_eq!((c["table"].as_str(), c["rows"].as_i64()), (Some("only_a"), Some(6)));
    // A value the source does not have: exit 2, naming it.
    let out = kanon(d, &["check", "t.toml", "--table", "measles"]);
    fails(&out, 2, &["\"measles\"", "\"diagnosis\"", "the source does not have"]);
}

// ------------------------------------------------------------ risk

/// The risk section: 5 records in classes of 2 (A) and 3 (B). Without a
/// population table the journalist's figures are the prosecutor's; with one
/// (A 10 people, B 4) they are 1/F: highest 1/4 against the prosecutor's 1/2.
#[test]
fn risk_with_and_without_a_population_table() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    csv(&d.join("source.csv"), "grp,score", &[("A", "1", 2), ("B", "2", 1), ("B", "3", 2)]);
    job(d, "plain.toml", 2, "", "");
    let out = kanon(d, &["check", "plain.toml", "--json", "--svg", "risk.svg"]);
    ok(&out);
    let c = json(&out);
    let r = &c["risk"];
    assert_eq!((r["records"].as_i64(), r["classes"].as_i64()), (Some(5), Some(2)));
    close("prosecutor highest", num(r, &["prosecutor", "highest_risk"]), 0.5);
    assert_eq!(r["journalist"], r["prosecutor"]);
    close("prosecutor success", num(r, &["prosecutor", "success_rate"]), 2.0 / 5.0);
    assert_eq!(r["distribution"].as_array().unwrap().len(), 24);
    let svg = fs::read_to_string(d.join("risk.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"), "{svg}");
    assert!(out.stdout.contains("\"l\": null"), "no ℓ asked: l is null");

    // The population as it is: C is not in the table, which does not matter.
    csv(&d.join("population.csv"), "grp,other", &[("A", "x", 10), ("B", "y", 4), ("C", "z", 7)]);
    job(d, "pop.toml", 2, "", "[risk]\npopulation_table = { csv = \"population.csv\" }\n");
    let out = kanon(d, &["check", "pop.toml", "--json"]);
    ok(&out);
    let r = &json(&out)["risk"];
    close("prosecutor highest", num(r, &["prosecutor", "highest_risk"]), 0.5);
    close("journalist highest", num(r, &["journalist", "highest_risk"]), 0.25);
    // Marketer: (1/n) Σ f/F = (2/10 + 3/4) / 5.
    close("marketer", num(r, &["marketer", "success_rate"]), (0.2 + 0.75) / 5.0);
    assert_ne!(r["journalist"], r["prosecutor"]);

    // A class the population table lacks: exit 2, naming it.
    csv(&d.join("population.csv"), "grp,other", &[("A", "x", 10)]);
    let out = kanon(d, &["check", "pop.toml"]);
    fails(&out, 2, &["grp=\"B\"", "not in the population table"]);
}

// ------------------------------------------------------------ bad input

#[test]
fn missing_columns_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    flu(d);
    job(d, "qi.toml", 1, "", "[[quasi_identifiers]]\ncolumn = \"zip\"\n");
    fails(&kanon(d, &["check", "qi.toml"]), 2, &["quasi-identifier \"zip\" is not a column of the source"]);
    job(d, "l.toml", 1, "l_diversity = { column = \"Diagnosis\", l = 2 }", "");
    fails(&kanon(d, &["check", "l.toml"]), 2, &["sensitive column \"Diagnosis\"", "did you mean \"diagnosis\"?"]);
    job(d, "t.toml", 1, "t_closeness = { column = \"diagnosis\", t = 0.2, distance = \"ordered\" }", "");
    fails(&kanon(d, &["check", "t.toml"]), 2, &["distance \"ordered\" needs a numeric or date column"]);
}
