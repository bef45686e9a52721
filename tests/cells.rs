//! Cell-based generalization (CDGH, CNDGH) end to end, through the binary:
//! every release is re-measured here from its table and the source, by row
//! id: k-anonymous over its released QI tuples (ℓ-diverse when asked), every
//! cell an ancestor of (CDGH) or containing (CNDGH) the source value, fewer
//! than k rows suppressed, the report's lm / am / dm equal to the release's;
//! the reconstruction holds only leaves under their released cells, and the
//! same seed gives the same reconstruction. The pass itself is compared with
//! the plain algorithm in `search::cbg`'s unit tests.

use duckdb::Connection;
use serde_json::Value as Json;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// The exit code and stdout + stderr of `kanon ARGS` in `cwd`.
fn kanon(cwd: &Path, args: &[&str]) -> (i32, String) {
    let out = crate::util::kanon(cwd, args);
    (out.code, out.both())
}

fn ok(cwd: &Path, args: &[&str]) {
    let (code, out) = kanon(cwd, args);
    assert_eq!(code, 0, "kanon {args:?} failed:\n{out}");
}

/// The report of the last run in `dir`, without the keys named (what may
/// differ between two runs of the same job).
fn report(dir: &Path, without: &[&str]) -> Json {
    let mut r: Json = serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    for key in without {
        r.as_object_mut().unwrap().remove(*key);
    }
    r
}

/// A QI: its column, and its hierarchy rows (leaf first, top last) by leaf.
struct Qi {
    column: String,
    rows: HashMap<String, Vec<String>>,
    numeric: bool,
}

impl Qi {
    fn leaves(&self) -> usize {
        self.rows.len()
    }

    /// Leaves under `label`, at the lowest level where the leaf `v`'s row has it.
    fn under(&self, v: &str, label: &str) -> Option<Vec<&String>> {
        let level = self.rows[v].iter().position(|x| x == label)?;
        Some(self.rows.iter().filter(|(_, r)| r[level] == label).map(|(leaf, _)| leaf).collect())
    }
}

/// Read an ARX hierarchy file (`;`-separated).
fn read_hierarchy(path: &Path, column: &str, numeric: bool) -> Qi {
    let rows = std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split(';').map(str::to_string).collect::<Vec<_>>())
        .map(|r| (r[0].clone(), r))
        .collect();
    Qi { column: column.into(), rows, numeric }
}

/// The table `people` in `src.duckdb` (id, age, zip, sex, diag, note) and
/// hierarchy files for age, zip and sex; the job's QIs.
fn generated(dir: &Path, rows: u64) -> Vec<Qi> {
    let conn = Connection::open(dir.join("src.duckdb")).unwrap();
    conn.execute_batch(&format!(
        "CREATE TABLE people AS
         SELECT i AS id, (17 + (i * 7919) % 60 + (i % 3) * (i % 5))::INTEGER AS age,
                (53700 + (i * 104729) % 97 + (i % 11) * 100)::VARCHAR AS zip,
                CASE WHEN (i * 31) % 7 < 3 THEN 'F' ELSE 'M' END AS sex,
                ['flu', 'asthma', 'diabetes', 'cancer', 'hiv'][1 + (i * 13) % 5] AS diag,
                'row ' || i AS note
         FROM range({rows}) t(i)"
    ))
    .unwrap();
    let ages: Vec<i64> = (0..130).collect();
    let age =
        ages.iter().map(|a| format!("{a};{}-{};{}s;*", a / 5 * 5, a / 5 * 5 + 4, a / 20 * 20)).collect::<Vec<_>>();
    std::fs::write(dir.join("age.csv"), age.join("\n")).unwrap();
    let zips: Vec<String> = conn
        .prepare("SELECT DISTINCT zip FROM people ORDER BY zip")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<duckdb::Result<_>>()
        .unwrap();
    let zip = zips.iter().map(|z| format!("{z};{}*;{}**;*", &z[..4], &z[..3])).collect::<Vec<_>>();
    std::fs::write(dir.join("zip.csv"), zip.join("\n")).unwrap();
    std::fs::write(dir.join("sex.csv"), "F;*\nM;*\n").unwrap();
    ["age", "zip", "sex"].iter().map(|c| read_hierarchy(&dir.join(format!("{c}.csv")), c, *c == "age")).collect()
}

fn job(dir: &Path, source: &str, qis: &[Qi], k: u64, extra: &str) -> PathBuf {
    let mut text = format!(
        "{source}\n[output]\ndatabase = \"out.duckdb\"\ntable = \"rel\"\nreport = \"report.json\"\n\
         [privacy]\nk = {k}\n{extra}\n"
    );
    for q in qis {
        text.push_str(&format!(
            "[[quasi_identifiers]]\ncolumn = \"{}\"\nhierarchy = {{ file = \"{}.csv\" }}\n",
            q.column,
            dir.join(&q.column).display()
        ));
    }
    let path = dir.join("job.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// Per row id: the QI values (as text) and the extra column, of `relation`.
fn rows(
    conn: &Connection,
    relation: &str,
    qis: &[Qi],
    extra: Option<&str>,
) -> BTreeMap<i64, (Vec<Option<String>>, String)> {
    let cols = qis.iter().map(|q| format!("CAST(\"{}\" AS VARCHAR)", q.column)).collect::<Vec<_>>().join(", ");
    let extra = extra.map_or("''".to_string(), |e| format!("CAST(\"{e}\" AS VARCHAR)"));
    let mut stmt = conn.prepare(&format!("SELECT id, {extra}, {cols} FROM {relation}")).unwrap();
    let mut out = BTreeMap::new();
    let mut r = stmt.query([]).unwrap();
    while let Some(row) = r.next().unwrap() {
        let values = (0..qis.len()).map(|a| row.get(a + 2).unwrap()).collect();
        out.insert(row.get(0).unwrap(), (values, row.get(1).unwrap()));
    }
    out
}

/// What a released CNDGH cell stands for: a range, or a set of texts.
fn natural(label: &str, numeric: bool) -> (Option<(i64, i64)>, BTreeSet<String>) {
    if numeric {
        if let Some((lo, hi)) = label.split_once('-').filter(|(lo, _)| !lo.is_empty()) {
            return (Some((lo.parse().unwrap(), hi.parse().unwrap())), BTreeSet::new());
        }
        let v: i64 = label.parse().unwrap();
        return (Some((v, v)), BTreeSet::new());
    }
    (None, label.split('|').map(str::to_string).collect())
}

struct Case<'a> {
    dir: &'a Path,
    qis: &'a [Qi],
    algorithm: &'a str,
    k: u64,
    l: Option<(u64, &'a str)>,
}

/// Run the case with a reconstruction and check everything the module doc lists.
fn check(c: &Case, source_rel: &str) {
    let dir = c.dir;
    let (cdgh, m) = (c.algorithm == "cdgh", c.qis.len());
    let j = job(
        dir,
        &format!("{source_rel}\n[search]\nalgorithm = \"{}\"\nopen_clusters = 8", c.algorithm),
        c.qis,
        c.k,
        &c.l.map_or(String::new(), |(l, s)| format!("l_diversity = {{ column = \"{s}\", l = {l} }}")),
    );
    let j = j.to_str().unwrap();
    ok(dir, &["run", j, "--quiet", "--reconstruct", "recon", "--seed", "11"]);
    let report = report(dir, &[]);
    let conn = Connection::open(dir.join("out.duckdb")).unwrap();
    conn.execute_batch(&format!("ATTACH '{}' AS src (READ_ONLY)", dir.join("src.duckdb").display())).unwrap();
    let sensitive = c.l.map(|(_, s)| s);
    let source = rows(&conn, "src.people", c.qis, sensitive);
    let released = rows(&conn, "rel", c.qis, sensitive);
    let recon = rows(&conn, "recon", c.qis, None);
    let what = format!("{} k={} l={:?}", c.algorithm, c.k, c.l);

    // Suppression: fewer than k rows (without ℓ), as reported.
    let suppressed = source.len() - released.len();
    assert_eq!(report["suppressed"].as_u64().unwrap() as usize, suppressed, "{what}");
    if c.l.is_none() {
        assert!(suppressed < c.k as usize, "{what}: {suppressed} suppressed");
    }
    assert_eq!(recon.keys().collect::<Vec<_>>(), released.keys().collect::<Vec<_>>(), "{what}: same rows");

    // Classes: k-anonymous, ℓ-diverse; dm.
    let mut classes: HashMap<&Vec<Option<String>>, (u64, BTreeSet<&String>)> = HashMap::new();
    for (values, s) in released.values() {
        let e = classes.entry(values).or_default();
        e.0 += 1;
        e.1.insert(s);
    }
    for (size, distinct) in classes.values() {
        assert!(*size >= c.k, "{what}: a class of {size}");
        if let Some((l, _)) = c.l {
            assert!(distinct.len() as u64 >= l, "{what}: a class with {} sensitive values", distinct.len());
        }
    }
    let n = source.len() as f64;
    let dm: f64 = classes.values().map(|(s, _)| (s * s) as f64).sum::<f64>() + suppressed as f64 * n;
    assert_eq!(report["metrics"]["dm"].as_f64().unwrap(), dm, "{what}");
    assert_eq!(report["classes"].as_u64().unwrap() as usize, classes.len(), "{what}");

    // Per cell: covers the source value; the reconstruction lies under it.
    let distinct: Vec<BTreeSet<String>> =
        (0..m).map(|a| source.values().filter_map(|(v, _)| v[a].clone()).collect()).collect();
    let (mut lm, mut am) = (suppressed as f64 * m as f64, 0.0);
    let total: Vec<f64> = c
        .qis
        .iter()
        .zip(&distinct)
        .map(|(q, d)| match (cdgh, q.numeric) {
            (true, _) => q.leaves() as f64,
            (false, true) => {
                let v: Vec<i64> = d.iter().map(|x| x.parse().unwrap()).collect();
                (v.iter().max().unwrap() - v.iter().min().unwrap() + 1) as f64
            }
            (false, false) => d.len() as f64,
        })
        .collect();
    am += suppressed as f64 * total.iter().product::<f64>();
    for (id, (cells, _)) in &released {
        let (orig, _) = &source[id];
        let mut product = 1.0;
        for (a, q) in c.qis.iter().enumerate() {
            let (v, cell, r) =
                (orig[a].as_ref().unwrap(), cells[a].as_ref().unwrap(), recon[id].0[a].as_ref().unwrap());
            if cdgh {
                let under = q.under(v, cell).unwrap_or_else(|| panic!("{what}: {cell:?} is not an ancestor of {v:?}"));
                assert!(under.contains(&r), "{what}: reconstructed {r:?} is not under {cell:?}");
                lm += (under.len() - 1) as f64 / (q.leaves() - 1) as f64;
                product *= under.len() as f64;
            } else {
                let (range, set) = natural(cell, q.numeric);
                match range {
                    Some((lo, hi)) => {
                        let (x, y): (i64, i64) = (v.parse().unwrap(), r.parse().unwrap());
                        assert!((lo..=hi).contains(&x) && (lo..=hi).contains(&y), "{what}: {v}, {r} in {cell}");
                        let d: Vec<i64> = distinct[a].iter().map(|x| x.parse().unwrap()).collect();
                        let span = (d.iter().max().unwrap() - d.iter().min().unwrap()) as f64;
                        lm += (hi - lo) as f64 / span;
                        product *= (hi - lo + 1) as f64;
                    }
                    None => {
                        assert!(set.contains(v) && set.contains(r), "{what}: {v}, {r} in {cell}");
                        assert!(
                            set.iter().all(|x| distinct[a].contains(x)),
                            "{what}: {cell} holds a value not in the table"
                        );
                        lm += (set.len() - 1) as f64 / (distinct[a].len() - 1) as f64;
                        product *= set.len() as f64;
                    }
                }
            }
            if cell == v {
                assert_eq!(r, v, "{what}: an ungeneralized cell is unchanged");
            }
        }
        am += product;
    }
    let close = |x: f64, y: f64| (x - y).abs() <= 1e-9 * x.abs().max(1.0);
    let (got_lm, got_am) = (report["metrics"]["lm"].as_f64().unwrap(), report["metrics"]["am"].as_f64().unwrap());
    assert!(close(got_lm, lm / (n * m as f64)), "{what}: lm {got_lm} against {}", lm / (n * m as f64));
    assert!(close(got_am, am / n), "{what}: am {got_am} against {}", am / n);
    // Non-QI columns pass through.
    let notes: i64 = conn
        .query_row(
            "SELECT count(*) FROM recon r JOIN src.people p USING (id) WHERE r.note = p.note AND r.diag = p.diag",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(notes as usize, released.len(), "{what}");

    // The same seed, the same reconstruction; another seed, another.
    drop(conn);
    ok(dir, &["run", j, "--quiet", "--reconstruct", "recon2", "--seed", "11"]);
    ok(dir, &["run", j, "--quiet", "--reconstruct", "recon3", "--seed", "12"]);
    let conn = Connection::open(dir.join("out.duckdb")).unwrap();
    assert_eq!(rows(&conn, "recon2", c.qis, None), recon, "{what}: same seed");
    if report["metrics"]["am"].as_f64().unwrap() > 1.0 {
        assert_ne!(rows(&conn, "recon3", c.qis, None), recon, "{what}: another seed");
    }
}

#[test]
fn cell_based_releases_on_a_generated_table() {
    for (algorithm, k, l) in [
        ("cdgh", 2, None),
        ("cdgh", 7, None),
        ("cndgh", 3, None),
        ("cndgh", 10, None),
        ("cdgh", 4, Some((3, "diag"))),
        ("cndgh", 4, Some((2, "diag"))),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let qis = generated(dir.path(), 2_003);
        let source = "[source]\ndatabase = \"src.duckdb\"\ntable = \"people\"";
        check(&Case { dir: dir.path(), qis: &qis, algorithm, k, l }, source);
    }
}

#[test]
fn cell_based_releases_on_adult() {
    let Some(adult) = crate::util::adult_dir() else { return };
    let dir = tempfile::tempdir().unwrap();
    // Adult with a row id, as a DuckDB table.
    let conn = Connection::open(dir.path().join("src.duckdb")).unwrap();
    conn.execute_batch(&format!(
        "CREATE TABLE people AS SELECT row_number() OVER () AS id, *, 'x' AS note, occupation AS diag
         FROM read_csv('{}', delim = ';', header = true)",
        adult.join("adult.csv").display()
    ))
    .unwrap();
    drop(conn);
    let names = ["age", "education", "marital-status", "native-country", "race", "sex", "workclass"];
    let qis: Vec<Qi> = names
        .iter()
        .map(|q| {
            std::fs::copy(adult.join(format!("hierarchy_{q}.csv")), dir.path().join(format!("{q}.csv"))).unwrap();
            read_hierarchy(&dir.path().join(format!("{q}.csv")), q, *q == "age")
        })
        .collect();
    let source = "[source]\ndatabase = \"src.duckdb\"\ntable = \"people\"";
    for (algorithm, k) in [("cdgh", 5), ("cndgh", 5), ("cdgh", 25)] {
        check(&Case { dir: dir.path(), qis: &qis, algorithm, k, l: None }, source);
    }
}

#[test]
fn reconstruction_needs_cell_based_generalization_and_its_own_target() {
    let dir = tempfile::tempdir().unwrap();
    let qis = generated(dir.path(), 200);
    let source = "[source]\ndatabase = \"src.duckdb\"\ntable = \"people\"";
    let j = job(dir.path(), source, &qis, 3, "");
    let j = j.to_str().unwrap();
    let (code, out) = kanon(dir.path(), &["run", j, "--quiet", "--reconstruct", "recon"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("cdgh or cndgh"), "{out}");
    let (code, out) = kanon(dir.path(), &["run", j, "--quiet", "--algorithm", "cdgh", "--reconstruct", "rel"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("is the release table"), "{out}");
    let (code, out) = kanon(dir.path(), &["run", j, "--quiet", "--algorithm", "cdgh", "--node", "age=1,zip=1,sex=0"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("--node does not combine with algorithm cdgh"), "{out}");
    // A reconstruction to a CSV file, and the same release as a second run: deterministic.
    ok(dir.path(), &["run", j, "--quiet", "--algorithm", "cndgh", "--reconstruct", "recon.csv"]);
    let first = std::fs::read_to_string(dir.path().join("recon.csv")).unwrap();
    let report1 = report(dir.path(), &["seconds"]);
    let rows_out = report1["rows_out"].as_u64().unwrap();
    assert_eq!(first.lines().count() as u64, 1 + rows_out, "{first}");
    ok(dir.path(), &["run", j, "--quiet", "--algorithm", "cndgh", "--reconstruct", "recon.csv"]);
    assert_eq!(std::fs::read_to_string(dir.path().join("recon.csv")).unwrap(), first);
    assert_eq!(report1, report(dir.path(), &["seconds"]));
    // max_suppression caps what the pass may suppress: exit 3 above it.
    let cdgh = format!("{source}\n[search]\nalgorithm = \"cdgh\"");
    ok(dir.path(), &["run", job(dir.path(), &cdgh, &qis, 7, "").to_str().unwrap(), "--quiet"]);
    let report = report(dir.path(), &[]);
    let suppressed = report["suppressed"].as_u64().unwrap();
    assert!(suppressed > 0 && suppressed < 7, "200 rows in clusters of 7: {suppressed} suppressed");
    let capped = job(dir.path(), &cdgh, &qis, 7, &format!("max_suppression = {}", suppressed - 1));
    let (code, out) = kanon(dir.path(), &["run", capped.to_str().unwrap(), "--quiet"]);
    assert_eq!(code, 3, "{out}");
    let says =
        format!("cdgh suppresses {suppressed} of 200 rows for k = 7, above max_suppression ({} rows)", suppressed - 1);
    assert!(out.contains(&says), "expected \"{says}\" in: {out}");
    let capped = job(dir.path(), &cdgh, &qis, 7, &format!("max_suppression = {suppressed}"));
    ok(dir.path(), &["run", capped.to_str().unwrap(), "--quiet"]);
}

#[test]
fn cndgh_needs_no_hierarchies() {
    // The same job with and without hierarchies: CNDGH's release and report
    // (timings and the job's hash aside) are the same; any other algorithm
    // on the bare job exits 2 naming the QI.
    let dir = tempfile::tempdir().unwrap();
    let qis = generated(dir.path(), 1_201);
    let source = "[source]\ndatabase = \"src.duckdb\"\ntable = \"people\"\n[search]\nalgorithm = \"cndgh\"";
    let with = job(dir.path(), source, &qis, 4, "");
    let text = std::fs::read_to_string(&with).unwrap();
    let bare: String = text.lines().filter(|l| !l.starts_with("hierarchy")).map(|l| format!("{l}\n")).collect();
    assert_eq!(bare.matches("[[quasi_identifiers]]").count(), qis.len());
    assert!(!bare.contains("hierarchy"));
    let mut released = Vec::new();
    for (name, text) in [("with.toml", text.as_str()), ("bare.toml", bare.as_str())] {
        std::fs::write(dir.path().join(name), text).unwrap();
        ok(dir.path(), &["run", name, "--quiet"]);
        let report = report(dir.path(), &["seconds", "job_sha256"]);
        let conn = Connection::open(dir.path().join("out.duckdb")).unwrap();
        released.push((report, rows(&conn, "rel", &qis, Some("note"))));
    }
    assert_eq!(released[0], released[1]);
    assert!(released[1].0["rows_out"].as_u64().unwrap() > 1_100);
    for args in [vec!["run", "bare.toml", "--algorithm", "cdgh"], vec!["run", "bare.toml", "--algorithm", "topdown"]] {
        let (code, out) = kanon(dir.path(), &args);
        assert_eq!(code, 2, "{args:?}: {out}");
        assert!(out.contains("bare.toml:") && out.contains("quasi-identifier \"age\" has no hierarchy"), "{out}");
    }
}

#[test]
fn full_domain_reports_lm_and_am_of_its_release() {
    let dir = tempfile::tempdir().unwrap();
    let qis = generated(dir.path(), 3_001);
    let source = "[source]\ndatabase = \"src.duckdb\"\ntable = \"people\"";
    for (k, l) in [(5, ""), (12, "l_diversity = { column = \"diag\", l = 3 }")] {
        let j = job(dir.path(), source, &qis, k, &format!("max_suppression = 0.05\n{l}"));
        ok(dir.path(), &["run", j.to_str().unwrap(), "--quiet"]);
        let report = report(dir.path(), &[]);
        let conn = Connection::open(dir.path().join("out.duckdb")).unwrap();
        conn.execute_batch(&format!("ATTACH '{}' AS src (READ_ONLY)", dir.path().join("src.duckdb").display()))
            .unwrap();
        let source = rows(&conn, "src.people", &qis, None);
        let released = rows(&conn, "rel", &qis, None);
        let (n, m) = (source.len() as f64, qis.len() as f64);
        let suppressed = n - released.len() as f64;
        let mut lm = suppressed * m;
        let mut am = suppressed * qis.iter().map(|q| q.leaves() as f64).product::<f64>();
        for (id, (cells, _)) in &released {
            let mut product = 1.0;
            for (a, q) in qis.iter().enumerate() {
                let under = q.under(source[id].0[a].as_ref().unwrap(), cells[a].as_ref().unwrap()).unwrap();
                lm += (under.len() - 1) as f64 / (q.leaves() - 1) as f64;
                product *= under.len() as f64;
            }
            am += product;
        }
        let close = |x: f64, y: f64| (x - y).abs() <= 1e-9 * x.abs().max(1.0);
        let (got_lm, got_am) = (report["metrics"]["lm"].as_f64().unwrap(), report["metrics"]["am"].as_f64().unwrap());
        assert!(close(got_lm, lm / (n * m)), "k={k}: lm {got_lm} against {}", lm / (n * m));
        assert!(close(got_am, am / n), "k={k}: am {got_am} against {}", am / n);
        assert!(suppressed > 0.0 || k == 5, "the l case should suppress something");
    }
}

#[test]
fn csv_and_parquet_sources_cluster_in_file_order_like_a_table() {
    // The same rows as a DuckDB table, a CSV file and a Parquet file: row
    // positions come from rowid, a copy of the CSV, and file_row_number.
    let dir = tempfile::tempdir().unwrap();
    let qis = generated(dir.path(), 1_501);
    let conn = Connection::open(dir.path().join("src.duckdb")).unwrap();
    conn.execute_batch(&format!(
        "COPY people TO '{}' (HEADER); COPY people TO '{}' (FORMAT PARQUET)",
        dir.path().join("people.csv").display(),
        dir.path().join("people.parquet").display()
    ))
    .unwrap();
    drop(conn);
    let mut releases = Vec::new();
    for source in
        ["database = \"src.duckdb\"\ntable = \"people\"", "csv = \"people.csv\"", "parquet = \"people.parquet\""]
    {
        let j = job(
            dir.path(),
            &format!("[source]\n{source}\n[search]\nalgorithm = \"cdgh\""),
            &qis,
            4,
            "l_diversity = { column = \"diag\", l = 2 }",
        );
        // A table source releases to a table (with a CSV copy); a file source to the CSV alone.
        let output = if source.starts_with("database") {
            "database = \"out.duckdb\"\ntable = \"rel\"\ncsv = \"rel.csv\""
        } else {
            "csv = \"rel.csv\""
        };
        let j = std::fs::read_to_string(&j).unwrap().replace("database = \"out.duckdb\"\ntable = \"rel\"", output);
        std::fs::write(dir.path().join("job.toml"), j).unwrap();
        ok(dir.path(), &["run", "job.toml", "--quiet", "--reconstruct", "recon.csv", "--seed", "3"]);
        releases.push((
            std::fs::read_to_string(dir.path().join("rel.csv")).unwrap(),
            std::fs::read_to_string(dir.path().join("recon.csv")).unwrap(),
        ));
    }
    assert!(releases[0].0.lines().count() > 1_400, "{}", releases[0].0.lines().count());
    assert_eq!(releases[1], releases[0], "CSV source");
    assert_eq!(releases[2], releases[0], "Parquet source");
}

/// The cell pass counts the source's classes as runs of its sorted stream, for
/// the report's risk before release; the full-domain run reads them off its
/// base frequency set. Both describe the same source: the same risk figures.
#[test]
fn cell_pass_counts_the_source_classes_as_the_full_domain_run_does() {
    let dir = tempfile::tempdir().unwrap();
    let qis = generated(dir.path(), 2_003);
    let conn = Connection::open(dir.path().join("src.duckdb")).unwrap();
    // Every third record twice and every fifth three times: classes of 1 to 4 records.
    conn.execute_batch(
        "INSERT INTO people SELECT id + 10000, age, zip, sex, diag, note FROM people WHERE id % 3 = 0;
         INSERT INTO people SELECT id + 20000, age, zip, sex, diag, note FROM people WHERE id % 5 = 0 AND id < 10000;",
    )
    .unwrap();
    let classes: i64 =
        conn.query_row("SELECT count(*) FROM (SELECT DISTINCT age, zip, sex FROM people)", [], |r| r.get(0)).unwrap();
    drop(conn);
    assert_eq!(classes, 2_003, "the copies should add records, not classes");
    let source = "[source]\ndatabase = \"src.duckdb\"\ntable = \"people\"";
    let risk = |algorithm: &str| {
        let extra = if algorithm.is_empty() { String::new() } else { format!("[search]\nalgorithm = \"{algorithm}\"") };
        let j = job(dir.path(), source, &qis, 3, &format!("max_suppression = 0.05\n{extra}"));
        let _ = std::fs::remove_file(dir.path().join("out.duckdb"));
        ok(dir.path(), &["run", j.to_str().unwrap(), "--quiet"]);
        report(dir.path(), &[])["risk"]["source"].clone()
    };
    let full_domain = risk("");
    assert!(full_domain.is_object(), "{full_domain}");
    for algorithm in ["cdgh", "cndgh"] {
        assert_eq!(risk(algorithm), full_domain, "{algorithm}");
    }
}

/// `--max-suppression` caps a cell-based run as the job's key does: below
/// what the pass suppresses the run exits 3, at it the run releases.
#[test]
fn max_suppression_flag_caps_cell_based_runs() {
    let dir = tempfile::tempdir().unwrap();
    let qis = generated(dir.path(), 2_003);
    let source = "[source]\ndatabase = \"src.duckdb\"\ntable = \"people\"\n[search]\nalgorithm = \"cdgh\"";
    let j = job(dir.path(), source, &qis, 4, "l_diversity = { column = \"diag\", l = 3 }");
    let j = j.to_str().unwrap();
    ok(dir.path(), &["run", j, "--quiet"]);
    let suppressed = report(dir.path(), &[])["suppressed"].as_u64().unwrap();
    assert!(suppressed > 0, "this job should leave records to suppress");
    let below = (suppressed - 1).to_string();
    let (code, out) = kanon(dir.path(), &["run", j, "--quiet", "--max-suppression", &below]);
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("above max_suppression"), "{out}");
    ok(dir.path(), &["run", j, "--quiet", "--max-suppression", &suppressed.to_string()]);
}
