//! `kanon init`: the job it writes for the demo table, Adult, a `kanon
//! generate` extract (as a DuckDB table and as Parquet) and a CSV written
//! here; each column's choice read from the parsed TOML, and each written job
//! run unedited. Then the refusals (exit 2, nothing written).

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use duckdb::Connection;
use tempfile::TempDir;

use crate::util::{adult_dir, kanon, manifest_dir, Out};

/// `kanon init ARGS` in `dir`, which must succeed: the written job, parsed, and its text.
fn init(dir: &Path, args: &[&str], job: &str) -> (toml::Table, String) {
    let mut all = vec!["init"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--out", job]);
    let out = kanon(dir, &all);
    assert_eq!(out.code, 0, "kanon init failed:\n{}", out.show());
    assert!(out.stdout.contains(&format!("wrote {job}")), "{}", out.show());
    let text = fs::read_to_string(dir.join(job)).unwrap();
    (text.parse().unwrap_or_else(|e| panic!("the written job is not TOML: {e}\n{text}")), text)
}

/// Each column's role in a parsed job: `drop`, or its QI hierarchy written
/// compactly (`suppress`, `mask 5`, `intervals [5, 10, 20]`,
/// `date [month, year]`, `file PATH`). Columns absent are released as they are.
fn roles(job: &toml::Table) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for c in job["output"]["drop"].as_array().unwrap() {
        out.insert(c.as_str().unwrap().to_string(), "drop".to_string());
    }
    for q in job["quasi_identifiers"].as_array().unwrap() {
        let col = q["column"].as_str().unwrap().to_string();
        let h = &q["hierarchy"];
        let role = if h.as_str() == Some("suppress") {
            "suppress".to_string()
        } else {
            let t = h.as_table().unwrap();
            let (kind, v) = t.iter().next().unwrap();
            let v = match v {
                toml::Value::Array(a) => format!(
                    "[{}]",
                    a.iter()
                        .map(|x| match x {
                            toml::Value::String(s) => s.clone(),
                            toml::Value::Integer(i) => i.to_string(),
                            toml::Value::Float(f) => f.to_string(),
                            other => other.to_string(),
                        })
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                toml::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            format!("{kind} {v}")
        };
        assert!(out.insert(col.clone(), role).is_none(), "{col} is both dropped and a QI");
    }
    out
}

fn expect(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(c, r)| (c.to_string(), r.to_string())).collect()
}

/// `kanon run JOB` in `dir` exits 0.
fn runs(dir: &Path, job: &str) -> Out {
    let out = kanon(dir, &["run", job]);
    assert_eq!(out.code, 0, "the written job should run as it is:\n{}", out.show());
    assert!(out.stdout.contains("released"), "{}", out.show());
    out
}

/// Every QI's choice is explained by a comment block right above it, naming
/// the column and its distinct count.
fn assert_explained(text: &str, job: &toml::Table) {
    for q in job["quasi_identifiers"].as_array().unwrap() {
        let col = q["column"].as_str().unwrap();
        let line = format!("column = {}", toml::Value::String(col.into()));
        let at = text.find(&line).unwrap_or_else(|| panic!("no line {line}"));
        let before: Vec<&str> = text[..at].lines().rev().skip(1).take_while(|l| l.starts_with('#')).collect();
        let block = before.join("\n");
        assert!(block.contains(&format!("{col} (")) && block.contains("distinct value"), "{col}: {block}");
    }
}

#[test]
fn init_demo_table() {
    let tmp = TempDir::new().unwrap();
    let src = manifest_dir().join("fixtures/demo/patients.csv");
    let (job, text) = init(tmp.path(), &[src.to_str().unwrap()], "job.toml");
    assert_eq!(
        roles(&job),
        expect(&[
            ("id", "drop"),
            ("name", "drop"),
            ("ssn", "drop"),
            ("zip", "mask 5"),
            ("age", "intervals [5, 10, 20]"),
            ("birth_date", "date [month, year, decade, century]"),
            ("sex", "suppress"),
            ("education", "suppress"),
        ])
    );
    // diagnosis is released as it is, suggested for ℓ-diversity; id could be pseudonymized.
    assert!(text.contains("# l_diversity = { column = \"diagnosis\", l = 2 }"), "{text}");
    assert!(text.contains("# pseudonymize = [\"id\"]"), "{text}");
    assert!(text.contains("# - diagnosis (VARCHAR): 6 distinct values in 74 rows"), "{text}");
    assert_eq!(job["privacy"]["k"].as_integer(), Some(5));
    assert_eq!(job["privacy"]["max_suppression"].as_float(), Some(0.01));
    assert_eq!(job["search"]["metric"].as_str(), Some("glm"));
    assert!(job["search"].get("algorithm").is_none());
    assert_eq!(job["source"]["delimiter"].as_str(), Some(","));
    assert_eq!(job["output"]["csv"].as_str(), Some("patients_k5.csv"));
    assert_eq!(job["output"]["report"].as_str(), Some("patients-report.json"));
    assert_explained(&text, &job);
    runs(tmp.path(), "job.toml");
    let release = fs::read_to_string(tmp.path().join("patients_k5.csv")).unwrap();
    assert_eq!(release.lines().next(), Some("zip,age,birth_date,sex,education,diagnosis"));
    assert!(tmp.path().join("patients-report.json").is_file());
    // The suggested ℓ-diversity, uncommented, runs too: it releases the brute force's optimum
    // (k = 5, ℓ = 2 on diagnosis, 1% of 74 rows = 0 suppressed, glm) over the hierarchies the
    // job names, or exits 3 naming the requirement when the brute force finds no feasible node.
    fs::write(tmp.path().join("l2.toml"), text.replace("# l_diversity =", "l_diversity =")).unwrap();
    let out = kanon(tmp.path(), &["run", "l2.toml"]);
    use crate::util::{brute_optimum, brute_rows, read_delimited, BruteForce, Models, Req};
    let qis = ["zip", "age", "birth_date", "sex", "education"];
    let (header, cells) = read_delimited(&src, ',');
    let rows = brute_rows(&header, &cells, &qis, Some("diagnosis"), None);
    let column = |a: usize| rows.iter().map(|r| r.qi[a].clone()).collect::<Vec<_>>();
    let hierarchies = [
        crate::util::mask_hierarchy(&column(0), 5),
        crate::util::intervals_hierarchy(&column(1), &[5.0, 10.0, 20.0]),
        crate::util::date_hierarchy(&column(2), &["month", "year", "decade", "century"]),
        crate::util::suppress_hierarchy(&column(3)),
        crate::util::suppress_hierarchy(&column(4)),
    ];
    let brute = BruteForce::new(&rows, &hierarchies, false, Models::default());
    let optimum = brute_optimum(&brute.judge_all(&Req { k: 5, l: Some(2), budget: 0 }), kanon::options::Metric::Glm);
    match optimum {
        None => {
            assert_eq!(out.code, 3, "{}", out.show());
            let says =
                "no generalization is feasible for k = 5 and l = 2 on \"diagnosis\" with at most 0 suppressed rows";
            assert!(out.stderr.contains(says), "{}", out.show());
        }
        Some(w) => {
            assert_eq!(out.code, 0, "{}", out.show());
            let r: serde_json::Value =
                serde_json::from_str(&fs::read_to_string(tmp.path().join("patients-report.json")).unwrap()).unwrap();
            let node: Vec<u8> = qis.iter().map(|q| r["node"][q].as_u64().unwrap() as u8).collect();
            assert_eq!(node, w.levels, "{r}");
            assert_eq!((r["suppressed"].as_u64(), r["l"].as_u64()), (Some(w.suppressed), w.l), "{r}");
            assert!(crate::util::same(r["metrics"]["glm"].as_f64().unwrap(), w.metrics.glm), "{r}");
        }
    }
}

#[test]
fn init_adult() {
    let Some(adult) = adult_dir() else { return };
    let tmp = TempDir::new().unwrap();
    let src = adult.join("adult.csv");
    let (job, text) = init(tmp.path(), &[src.to_str().unwrap()], "adult.toml");
    assert_eq!(job["source"]["delimiter"].as_str(), Some(";"));
    assert_eq!(
        roles(&job),
        expect(&[
            ("sex", "suppress"),
            ("age", "intervals [5, 10, 20]"),
            ("race", "suppress"),
            ("marital-status", "suppress"),
            ("education", "suppress"),
            ("native-country", "suppress"),
            ("workclass", "suppress"),
            ("occupation", "suppress"),
        ])
    );
    assert!(text.contains("# l_diversity = { column = \"salary-class\", l = 2 }"), "{text}");
    assert_explained(&text, &job);
    let out = runs(tmp.path(), "adult.toml");
    assert!(out.stdout.contains("k = "), "{}", out.show());
    assert!(tmp.path().join("adult_k5.csv").is_file());
}

/// The roles init gives a `kanon generate` extract (seed 1), read from a table or a Parquet copy.
fn generated_roles() -> BTreeMap<String, String> {
    expect(&[
        ("row_id", "drop"),
        ("zip", "mask 5"),
        ("birth_date", "date [month, year, decade, century]"),
        ("sex", "suppress"),
        ("race", "suppress"),
        ("marital_status", "suppress"),
        ("education", "suppress"),
        ("occupation", "suppress"),
        ("visit_date", "date [month, quarter]"),
    ])
}

#[test]
fn init_generated_table_and_parquet() {
    let tmp = TempDir::new().unwrap();
    let dir = tmp.path();
    let gen = kanon(dir, &["generate", "--rows", "2000", "--database", "gen.duckdb", "--table", "people"]);
    assert_eq!(gen.code, 0, "{}", gen.show());

    // The DuckDB table, its only table: no --table needed.
    let (job, text) = init(dir, &["gen.duckdb"], "table.toml");
    assert_eq!(roles(&job), generated_roles());
    assert_eq!(job["source"]["database"].as_str(), Some("gen.duckdb"));
    assert_eq!(job["source"]["table"].as_str(), Some("people"));
    assert_eq!(job["output"]["database"].as_str(), Some("gen-release.duckdb"));
    assert_eq!(job["output"]["table"].as_str(), Some("people_k5"));
    assert!(text.contains("# pseudonymize = [\"row_id\"]"), "{text}");
    // income (886 values) gets t-closeness, diagnosis (20) ℓ-diversity; both released as they are.
    assert!(text.contains("# t_closeness = { column = \"income\", t = 0.2, distance = \"ordered\" }"), "{text}");
    assert!(text.contains("# l_diversity = { column = \"diagnosis\", l = 2 }"), "{text}");
    assert_explained(&text, &job);
    runs(dir, "table.toml");
    let conn = Connection::open(dir.join("gen-release.duckdb")).unwrap();
    let n: i64 = conn.query_row("SELECT count(*) FROM people_k5", [], |r| r.get(0)).unwrap();
    assert!(n >= 1980, "at most 1% suppressed, got {n} rows");
    drop(conn);

    // The same table as Parquet, the job in a subfolder.
    let conn = Connection::open(dir.join("gen.duckdb")).unwrap();
    let parquet = dir.join("people.parquet");
    conn.execute_batch(&format!("COPY people TO '{}' (FORMAT parquet)", parquet.display())).unwrap();
    drop(conn);
    fs::create_dir(dir.join("jobs")).unwrap();
    let (job, _) = init(dir, &["people.parquet"], "jobs/parquet.toml");
    assert_eq!(roles(&job), generated_roles());
    assert_eq!(job["source"]["parquet"].as_str(), Some("../people.parquet"));
    assert_eq!(job["output"]["parquet"].as_str(), Some("people_k5.parquet"));
    runs(dir, "jobs/parquet.toml");
    assert!(dir.join("jobs/people_k5.parquet").is_file());
    assert!(dir.join("jobs/people-report.json").is_file());
}

/// A semicolon CSV with identifiers, dates, timestamps, decimals, zip codes
/// with leading zeros and a category with NULLs.
fn write_people_csv(path: &Path) {
    let conn = Connection::open_in_memory().unwrap();
    conn.execute_batch(&format!(
        "CREATE TABLE t AS SELECT
            'P' || lpad(i::VARCHAR, 5, '0') AS patient_id,
            (['Ann','Bob','Carla','Dev','Eve','Finn','Gia','Hal','Ivy','Jon'])[1 + i % 10] || ' ' ||
              (['Smith','Lee','Ng','Diaz','Khan','Olsen','Ruiz','Park'])[1 + (i // 10) % 8] AS full_name,
            'user' || i || '@example.org' AS email,
            (['02134','02139','02141','10001','10002','10025','94107','94110'])[1 + (i * 7) % 8] AS zip,
            DATE '1940-01-01' + ((i * 9973) % 25000)::INTEGER AS birth_date,
            TIMESTAMP '2024-01-01 08:00:00' + to_minutes((i * 7919) % 500000) AS visit_ts,
            round(45 + ((i * 37) % 750) / 10.0, 1)::DECIMAL(5, 1) AS weight_kg,
            CASE WHEN i % 2 = 0 THEN 'F' ELSE 'M' END AS sex,
            (['flu','asthma','diabetes','migraine'])[1 + (i * 3) % 4] AS diagnosis,
            CASE i % 4 WHEN 0 THEN 'Boston' WHEN 1 THEN 'NYC' WHEN 2 THEN 'SF' END AS city,
            'seen on visit ' || i || ' about pain' AS notes
         FROM range(400) r(i);
         COPY t TO '{}' (DELIMITER ';', HEADER)",
        path.display()
    ))
    .unwrap();
}

#[test]
fn init_handwritten_csv() {
    let tmp = TempDir::new().unwrap();
    let dir = tmp.path();
    write_people_csv(&dir.join("people.csv"));
    let (job, text) = init(dir, &["people.csv"], "people.toml");
    assert_eq!(job["source"]["csv"].as_str(), Some("people.csv"));
    assert_eq!(job["source"]["delimiter"].as_str(), Some(";"));
    assert_eq!(
        roles(&job),
        expect(&[
            ("patient_id", "drop"),
            ("full_name", "drop"),
            ("email", "drop"),
            ("notes", "drop"),
            ("zip", "mask 5"),
            ("birth_date", "date [month, year, decade, century]"),
            ("visit_ts", "date [month, quarter]"),
            ("weight_kg", "intervals [1, 5, 10, 20]"),
            ("sex", "suppress"),
            ("city", "file people-hierarchies/city.csv"),
        ])
    );
    // No dropped column's values are written into the job, only its shape.
    assert!(!text.contains("user1@example.org") && !text.contains("Ann ") && !text.contains("P00000"), "{text}");
    assert!(
        text.contains("# - email (VARCHAR): 400 distinct values in 400 rows, no NULLs; lengths 17 to 19.\n"),
        "{text}"
    );
    // Only the key is offered for pseudonymization; names, emails and free text are not keys.
    assert!(text.contains("# pseudonymize = [\"patient_id\"]   # instead of drop"), "{text}");
    // patient_id is unique on every row: no person to offer.
    assert!(!text.contains("# person ="), "{text}");
    assert!(text.contains("# l_diversity = { column = \"diagnosis\", l = 2 }"), "{text}");
    assert!(text.contains("city (VARCHAR): 3 distinct values in 400 rows, 100 NULLs"), "{text}");
    // city has NULLs: its suppress levels in a file, with a NULL leaf.
    let h = fs::read_to_string(dir.join("people-hierarchies/city.csv")).unwrap();
    assert_eq!(h, "Boston;*\nNYC;*\nSF;*\nNULL;*\n");
    assert_explained(&text, &job);
    runs(dir, "people.toml");
    let release = fs::read_to_string(dir.join("people_k5.csv")).unwrap();
    assert_eq!(release.lines().next(), Some("zip,birth_date,visit_ts,weight_kg,sex,diagnosis,city"));
    // At most 1% of the 400 rows suppressed (4), and suppressed rows are left out.
    assert!((397..=401).contains(&release.lines().count()), "{} lines", release.lines().count());
}

#[test]
fn init_numbers_with_nulls_and_small_tables() {
    let tmp = TempDir::new().unwrap();
    let dir = tmp.path();
    // Ages with NULLs: intervals in a file with a NULL leaf. Three rows: k is lowered to 3.
    fs::write(dir.join("small.csv"), "age,sex\n34,F\n,M\n71,F\n").unwrap();
    let (job, text) = init(dir, &["small.csv"], "small.toml");
    assert_eq!(job["privacy"]["k"].as_integer(), Some(3));
    assert_eq!(job["output"]["csv"].as_str(), Some("small_k3.csv"));
    assert_eq!(roles(&job), expect(&[("age", "file small-hierarchies/age.csv"), ("sex", "suppress")]), "{text}");
    assert_eq!(fs::read_to_string(dir.join("small-hierarchies/age.csv")).unwrap(), "34;*\n71;*\nNULL;*\n");
    runs(dir, "small.toml");

    let conn = Connection::open_in_memory().unwrap();
    conn.execute_batch(&format!(
        "COPY (SELECT CASE WHEN i % 10 = 0 THEN NULL ELSE 18 + (i * 13) % 70 END AS age FROM range(300) r(i))
         TO '{}' (HEADER)",
        dir.join("ages.csv").display()
    ))
    .unwrap();
    let (job, _) = init(dir, &["ages.csv"], "ages.toml");
    assert_eq!(roles(&job), expect(&[("age", "file ages-hierarchies/age.csv")]));
    let rows = crate::util::hierarchy_rows(&dir.join("ages-hierarchies/age.csv"));
    assert_eq!(rows.last().unwrap(), &["NULL", "NULL", "NULL", "NULL", "*"]);
    assert!(rows.contains(&vec!["19".into(), "[15, 20)".into(), "[10, 20)".into(), "[0, 20)".into(), "*".into()]));
    runs(dir, "ages.toml");
}

#[test]
fn init_refusals_exit_2_and_write_nothing() {
    let tmp = TempDir::new().unwrap();
    let dir = tmp.path();
    let fails = |args: &[&str], needles: &[&str]| {
        let mut all = vec!["init"];
        all.extend_from_slice(args);
        let out = kanon(dir, &all);
        assert_eq!(out.code, 2, "{}", out.show());
        for n in needles {
            assert!(out.stderr.contains(n), "stderr should mention {n:?}:\n{}", out.show());
        }
    };
    fails(&["missing.csv", "--out", "a.toml"], &["missing.csv", "not found"]);
    let conn = Connection::open(dir.join("two.duckdb")).unwrap();
    conn.execute_batch(
        "CREATE TABLE patients AS SELECT 20 + i AS age, (['F', 'M'])[1 + i % 2] AS sex FROM range(20) r(i);
         CREATE TABLE visits AS SELECT i AS visit_id, 'note ' || i AS note FROM range(300) r(i);",
    )
    .unwrap();
    drop(conn);
    fails(&["two.duckdb", "--out", "a.toml"], &["two.duckdb", "--table", "\"patients\", \"visits\""]);
    fails(&["two.duckdb", "--table", "nope", "--out", "a.toml"], &["table \"nope\" not found in two.duckdb"]);
    // A key and free text only: no quasi-identifier, so no job.
    fails(
        &["two.duckdb", "--table", "visits", "--out", "a.toml"],
        &["no column of two.duckdb looks like a quasi-identifier", "visit_id"],
    );
    fs::write(dir.join("junk.parquet"), b"PAR1 not really").unwrap();
    fails(&["junk.parquet", "--out", "a.toml"], &["junk.parquet"]);
    fs::write(dir.join("empty.csv"), "a,b\n").unwrap();
    fails(&["empty.csv", "--out", "a.toml"], &["empty.csv", "no rows"]);
    fails(&["two.duckdb", "--table", "patients", "--out", "nodir/a.toml"], &["nodir"]);
    assert!(!dir.join("a.toml").exists());

    // --table picks one; a second init refuses to overwrite the job (the default name).
    let (job, _) = init(dir, &["two.duckdb", "--table", "PATIENTS"], "job.toml");
    assert_eq!(job["source"]["table"].as_str(), Some("patients"));
    let before = fs::read_to_string(dir.join("job.toml")).unwrap();
    fails(&["two.duckdb", "--table", "patients"], &["job.toml already exists", "--out"]);
    assert_eq!(fs::read_to_string(dir.join("job.toml")).unwrap(), before);
    runs(dir, "job.toml");
}

/// Types init picks no hierarchy for, a time zone, huge and negative
/// numbers, fractions, a flag, a constant, a hostile column name, NULLs in a
/// date and a zip-like code.
const ODD: &str = r#"CREATE TABLE odd AS SELECT
  (TIMESTAMP '2024-01-01 00:00:00' + to_hours(i * 37))::TIMESTAMPTZ AS "ts tz",
  TIME '08:00:00' + to_minutes(i % 600) AS t,
  ('x' || i)::BLOB AS b,
  [i, i+1] AS l,
  uuid() AS u,
  (i % 97)::DECIMAL(10,2) / 7 AS dec,
  (i::HUGEINT * 1000000000000) AS huge,
  (i % 41) - 20 AS neg,
  (i % 100) / 100.0 AS prob,
  i % 3 = 0 AS flag,
  'same' AS const,
  (['a"b', 'c''d', 'e;f'])[1 + i % 3] AS "we""ird;name",
  CASE WHEN i % 5 = 0 THEN NULL ELSE DATE '2000-01-01' + (i * 17 % 9000)::INT END AS dnull,
  CASE WHEN i % 7 = 0 THEN NULL ELSE lpad(((i * 31) % 900 + 100)::VARCHAR, 5, '0') END AS postcode,
  'AB' || (i % 30)::VARCHAR AS grp
FROM range(1000) r(i)"#;

#[test]
fn init_odd_types_and_names() {
    let tmp = TempDir::new().unwrap();
    let dir = tmp.path();
    let conn = Connection::open(dir.join("odd.duckdb")).unwrap();
    conn.execute_batch(ODD).unwrap();
    drop(conn);
    let (job, text) = init(dir, &["odd.duckdb"], "odd.toml");
    assert_eq!(
        roles(&job),
        expect(&[
            ("ts tz", "date [month, year]"),
            ("b", "drop"),
            ("l", "drop"),
            ("u", "drop"),
            ("dec", "intervals [0.5, 1, 5]"),
            ("huge", "intervals [10000000000000, 50000000000000, 100000000000000, 200000000000000]"),
            ("neg", "intervals [5, 10]"),
            ("prob", "intervals [0.05, 0.1, 0.2]"),
            ("flag", "suppress"),
            ("we\"ird;name", "suppress"),
            ("dnull", "file odd-hierarchies/dnull.csv"),
            ("postcode", "file odd-hierarchies/postcode.csv"),
            ("grp", "suppress"),
        ])
    );
    // TIME has no hierarchy and is not unique; the constant tells no one apart.
    assert!(text.contains("# - t (TIME): 600 distinct values in 1,000 rows"), "{text}");
    assert!(text.contains("# - const (VARCHAR): 1 distinct value in 1,000 rows"), "{text}");
    assert!(text.contains("# pseudonymize = [\"u\"]"), "{text}");
    assert!(text.contains("the levels of { mask = 3 }"), "{text}");
    let rows = crate::util::hierarchy_rows(&dir.join("odd-hierarchies/postcode.csv"));
    // Every postcode starts with 00: three masked characters reach one value, the top.
    assert_eq!(rows.last().unwrap(), &["NULL", "NULL", "NULL", "00***"]);
    assert!(rows.contains(&vec!["00131".into(), "0013*".into(), "001**".into(), "00***".into()]));
    assert_explained(&text, &job);
    runs(dir, "odd.toml");
}

#[test]
fn init_caps_the_lattice() {
    let tmp = TempDir::new().unwrap();
    let dir = tmp.path();
    // 22 categories (2 to 5 values each) and an age: 2^22 · … nodes would not
    // fit, so the columns with the fewest values are dropped until it does.
    let cats =
        (0..22).map(|j| format!("chr((65 + (i // {}) % {})::INTEGER) AS c{j}", j + 1, 2 + j % 4)).collect::<Vec<_>>();
    let conn = Connection::open_in_memory().unwrap();
    conn.execute_batch(&format!(
        "COPY (SELECT 20 + (i * 13) % 60 AS age, {} FROM range(300) r(i)) TO '{}' (HEADER)",
        cats.join(", "),
        dir.join("wide.csv").display()
    ))
    .unwrap();
    let (job, text) = init(dir, &["wide.csv"], "wide.toml");
    let roles = roles(&job);
    assert_eq!(roles["age"], "intervals [5, 10, 20]");
    let qis: Vec<&String> = roles.iter().filter(|(_, r)| *r != "drop").map(|(c, _)| c).collect();
    let dropped: Vec<&String> = roles.iter().filter(|(_, r)| *r == "drop").map(|(c, _)| c).collect();
    // 5 levels for age, 2 for each category: 5 · 2^16 ≤ 500,000 < 5 · 2^17.
    assert_eq!(qis.len(), 17, "{roles:?}");
    assert_eq!(dropped.len(), 6, "{roles:?}");
    // The categories with 2 values go first: c0, c4, c8, c12, c16, c20 (2 + j % 4 = 2).
    assert_eq!(dropped, ["c0", "c12", "c16", "c20", "c4", "c8"]);
    assert!(text.contains("# 6 more columns looked like quasi-identifiers"), "{text}");
    assert!(text.contains("the search's lattice would exceed 500,000 nodes"), "{text}");
    runs(dir, "wide.toml");
}

/// An event table whose key repeats (a member with many visits): init offers
/// `person` commented out, with the reason, and the job runs with it uncommented.
#[test]
fn init_offers_person_when_a_key_repeats() {
    let tmp = TempDir::new().unwrap();
    let dir = tmp.path();
    Connection::open_in_memory()
        .unwrap()
        .execute_batch(&format!(
            "COPY (SELECT 'M' || lpad((i // 5)::VARCHAR, 4, '0') AS member_id,
                   DATE '2024-01-01' + ((i * 37) % 300)::INTEGER AS visit_date,
                   CASE WHEN (i // 5) % 2 = 0 THEN 'F' ELSE 'M' END AS sex,
                   (['02134','02139','10001','94107'])[1 + (i // 5) % 4] AS zip
                   FROM range(600) r(i)) TO '{}' (HEADER)",
            dir.join("visits.csv").display()
        ))
        .unwrap();
    let (job, text) = init(dir, &["visits.csv"], "visits.toml");
    assert_eq!(roles(&job)["member_id"], "drop");
    assert!(text.contains("# The key \"member_id\" repeats (120 values on 600 rows)"), "{text}");
    assert!(text.contains("\n# person = \"member_id\"\n"), "{text}");
    assert!(job["privacy"].get("person").is_none(), "offered, not set");
    fs::write(dir.join("persons.toml"), text.replace("\n# person = ", "\nperson = ")).unwrap();
    let out = kanon(dir, &["run", "persons.toml"]);
    assert_eq!(out.code, 0, "{}", out.show());
    assert!(out.stdout.contains("of 120 persons"), "{}", out.show());
}
