//! The release writer on a source of several row groups, read by two threads,
//! from a DuckDB table and from a CSV file: every row of a kept class is
//! written, labelled by its groups, in source order, and exactly the rows of
//! classes under k are dropped (re-measured here from a release that drops
//! nothing).

use kanon::job::Job;
use kanon::load::{load, Loaded};
use kanon::measure::metrics::Requirement;
use kanon::release;

const ROWS: i64 = 300_000;
const K: u64 = 46;

/// Write the source (id, zip INTEGER, birth DATE, sex VARCHAR, note) as table
/// `people` of `src.duckdb` and as `people.csv`, rows in id order.
fn write_sources(dir: &std::path::Path) {
    let conn = duckdb::Connection::open(dir.join("src.duckdb")).unwrap();
    conn.execute_batch(&format!(
        "CREATE TABLE people AS
         SELECT i AS id, (10000 + i * 7919 % 500)::INTEGER AS zip,
                DATE '1950-01-01' + (i * 31 % 20000)::INTEGER AS birth,
                CASE WHEN i % 7 < 3 THEN 'F' ELSE 'M' END AS sex,
                'row ' || i AS note
         FROM range({ROWS}) t(i);
         COPY people TO '{}' (HEADER)",
        dir.join("people.csv").display()
    ))
    .unwrap();
}

/// Release the node `levels` of `loaded` as the job's output table.
fn write_release(loaded: &Loaded, job: &Job, levels: &[u8], req: &Requirement) {
    let recoding = kanon::full_domain_recoding(&loaded, levels, req).unwrap();
    release::write(&loaded, job, &job.output, &recoding, None, None).unwrap();
}

fn job(dir: &std::path::Path, source: &str, table: &str) -> Job {
    job_with_output(dir, source, &format!("database = \"out.duckdb\"\ntable = \"{table}\""))
}

/// The job over `source` with this `[output]` section body.
fn job_with_output(dir: &std::path::Path, source: &str, output: &str) -> Job {
    let text = format!(
        "{source}\n[output]\n{output}\n[privacy]\nk = {K}\n\
         [engine]\nthreads = 2\n\
         [[quasi_identifiers]]\ncolumn = \"zip\"\nhierarchy = {{ mask = 5 }}\n\
         [[quasi_identifiers]]\ncolumn = \"birth\"\nhierarchy = {{ date = [\"year\", \"decade\"] }}\n\
         [[quasi_identifiers]]\ncolumn = \"sex\"\nhierarchy = \"suppress\"\n"
    );
    Job::parse(&dir.join("job.toml"), &text).unwrap()
}

#[test]
fn release_keeps_source_order_and_drops_exactly_the_small_classes() {
    let dir = tempfile::tempdir().unwrap();
    write_sources(dir.path());
    let sources = [
        ("table", "[source]\ndatabase = \"src.duckdb\"\ntable = \"people\""),
        ("csv", "[source]\ncsv = \"people.csv\""),
    ];
    for (name, source) in sources {
        let levels = [1u8, 1, 0];
        for (table, k) in [(format!("{name}_all"), 1), (format!("{name}_k"), K)] {
            let job = job(dir.path(), source, &table);
            let loaded = load(&job).unwrap();
            let req = Requirement { k, l: None, budget: ROWS as u64, risk: None };
            write_release(&loaded, &job, &levels, &req);
        }
    }
    let conn = duckdb::Connection::open(dir.path().join("out.duckdb")).unwrap();
    conn.execute_batch(&format!("ATTACH '{}' AS src (READ_ONLY)", dir.path().join("src.duckdb").display())).unwrap();
    let q = |sql: &str| -> i64 { conn.query_row(sql, [], |r| r.get(0)).unwrap() };
    for (name, _) in sources {
        let (all, kept) = (format!("{name}_all"), format!("{name}_k"));
        // Nothing dropped at k = 1, every row labelled by its groups: zip with its last
        // digit masked, birth as its year, sex as it is; other columns as they were.
        assert_eq!(q(&format!("SELECT count(*) FROM {all}")), ROWS, "{name}");
        assert_eq!(
            q(&format!(
                "SELECT count(*) FROM {all} a JOIN src.people p ON a.id = p.id
                 WHERE a.zip = left(p.zip::VARCHAR, 4) || '*' AND a.birth = year(p.birth)::VARCHAR
                   AND a.sex = p.sex AND a.note = p.note"
            )),
            ROWS,
            "{name}: labels"
        );
        // Source order, in both releases.
        for t in [&all, &kept] {
            assert_eq!(
                q(&format!(
                    "SELECT count(*) FROM (SELECT id, lag(id) OVER (ORDER BY rowid) AS prev FROM {t}) WHERE id <= prev"
                )),
                0,
                "{t} is not in source order"
            );
        }
        // Exactly the rows of classes of at least K are kept, with the same labels.
        let expected = q(&format!(
            "SELECT count(*) FROM (SELECT *, count(*) OVER (PARTITION BY zip, birth, sex) AS size FROM {all}) WHERE size >= {K}"
        ));
        assert!(expected < ROWS && expected > ROWS / 2, "{name}: the fixture should drop some rows, not most");
        assert_eq!(q(&format!("SELECT count(*) FROM {kept}")), expected, "{name}");
        assert_eq!(
            q(&format!(
                "SELECT count(*) FROM {kept} k JOIN {all} a USING (id)
                 WHERE k.zip = a.zip AND k.birth = a.birth AND k.sex = a.sex AND k.note = a.note"
            )),
            expected,
            "{name}"
        );
        assert!(
            q(&format!("SELECT min(n) FROM (SELECT count(*) AS n FROM {kept} GROUP BY zip, birth, sex)")) >= K as i64
        );
    }
}

/// With no output database, the release goes straight from the CSV source to
/// a CSV and a Parquet file: the same rows in the same order as the table
/// release, and no temporary file left.
#[test]
fn files_only_release_streams_the_same_rows() {
    let dir = tempfile::tempdir().unwrap();
    write_sources(dir.path());
    let source = "[source]\ncsv = \"people.csv\"";
    let req = Requirement { k: K, l: None, budget: ROWS as u64, risk: None };
    let levels = [1u8, 1, 0];
    let table_job = job(dir.path(), source, "kept");
    let loaded = load(&table_job).unwrap();
    write_release(&loaded, &table_job, &levels, &req);
    let files_job = job_with_output(dir.path(), source, "csv = \"kept.csv\"\nparquet = \"kept.parquet\"");
    assert!(files_job.output.table.is_none());
    let loaded = load(&files_job).unwrap();
    let recoding = kanon::full_domain_recoding(&loaded, &levels, &req).unwrap();
    let written = release::write(&loaded, &files_job, &files_job.output, &recoding, None, None).unwrap();
    let conn = duckdb::Connection::open(dir.path().join("out.duckdb")).unwrap();
    let q = |sql: &str| -> i64 { conn.query_row(sql, [], |r| r.get(0)).unwrap() };
    let kept = q("SELECT count(*) FROM kept");
    assert_eq!(written.rows as i64, kept);
    assert!(kept < ROWS && kept > ROWS / 2);
    for file in ["kept.csv", "kept.parquet"] {
        let path = dir.path().join(file);
        let reader = if file.ends_with("csv") { "read_csv" } else { "read_parquet" };
        // Row i of the file is row i of the table, column for column.
        let same = q(&format!(
            "SELECT count(*) FROM (SELECT *, row_number() OVER (ORDER BY rowid) AS pos FROM kept) t
             JOIN (SELECT *, row_number() OVER () AS pos FROM {reader}('{}')) f
               ON t.pos = f.pos AND t.id = f.id AND t.zip = f.zip::VARCHAR AND t.birth = f.birth::VARCHAR
              AND t.sex = f.sex AND t.note = f.note",
            path.display()
        ));
        assert_eq!(same, kept, "{file}");
        assert!(!dir.path().join(format!("{file}.kanon-tmp")).exists());
    }
}

/// A NULL in a QI whose hierarchy file lists a NULL leaf: released as NULL at
/// level 0, as its parent's label above, and never confused with a value.
#[test]
fn null_leaf_is_released_as_null_or_its_parent() {
    let dir = tempfile::tempdir().unwrap();
    let mut csv = String::from("id,status,city\n");
    for i in 0..40 {
        let status = ["single", "", "married", "widowed"][i % 4];
        csv.push_str(&format!("{i},{status},c{}\n", i % 2));
    }
    std::fs::write(dir.path().join("t.csv"), csv).unwrap();
    std::fs::write(
        dir.path().join("status.csv"),
        "single;alone;*\nNULL;unknown;*\nmarried;together;*\nwidowed;alone;*\n",
    )
    .unwrap();
    let text = "[source]\ncsv = \"t.csv\"\n[output]\ndatabase = \"out.duckdb\"\ntable = \"r\"\n[privacy]\nk = 1\n\
        [[quasi_identifiers]]\ncolumn = \"status\"\nhierarchy = { file = \"status.csv\" }\n\
        [[quasi_identifiers]]\ncolumn = \"city\"\nhierarchy = \"suppress\"\n";
    let mut job = Job::parse(&dir.path().join("job.toml"), text).unwrap();
    let loaded = load(&job).unwrap();
    let req = Requirement { k: 1, l: None, budget: 0, risk: None };
    for (table, level) in [("r0", 0u8), ("r1", 1)] {
        job.output.table.as_mut().unwrap().name = table.into();
        write_release(&loaded, &job, &[level, 0], &req);
    }
    let rows = |sql: &str| -> Vec<(i64, Option<String>)> {
        let mut stmt = loaded.conn.prepare(sql).unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(|r| r.unwrap()).collect()
    };
    let expect = |i: usize, level: u8| -> Option<String> {
        let v = [Some("single"), None, Some("married"), Some("widowed")][i % 4];
        let parent = [Some("alone"), Some("unknown"), Some("together"), Some("alone")][i % 4];
        (if level == 0 { v } else { parent }).map(String::from)
    };
    for (table, level) in [("r0", 0u8), ("r1", 1)] {
        let got = rows(&format!("SELECT id, status FROM kanon_out.{table} ORDER BY rowid"));
        let want: Vec<(i64, Option<String>)> = (0..40).map(|i| (i as i64, expect(i, level))).collect();
        assert_eq!(got, want, "{table}");
    }
}

/// A QI with more groups than fit in the statement as a literal list
/// (release.rs LITERAL_LABELS = 100,000) is labelled through a function instead:
/// the same labels, in source order.
#[test]
fn many_groups_are_labelled_alike() {
    let dir = tempfile::tempdir().unwrap();
    let conn = duckdb::Connection::open(dir.path().join("src.duckdb")).unwrap();
    conn.execute_batch(
        "CREATE TABLE t AS SELECT i AS id, (1000000 + (i * 7919) % 150000)::INTEGER AS code, 'x' AS sex FROM range(150000) t(i)",
    )
    .unwrap();
    drop(conn);
    let text =
        "[source]\ndatabase = \"src.duckdb\"\ntable = \"t\"\n[output]\ndatabase = \"out.duckdb\"\ntable = \"r\"\n\
        [privacy]\nk = 1\n\
        [[quasi_identifiers]]\ncolumn = \"code\"\nhierarchy = { mask = 7 }\n\
        [[quasi_identifiers]]\ncolumn = \"sex\"\nhierarchy = \"suppress\"\n";
    let mut job = Job::parse(&dir.path().join("job.toml"), text).unwrap();
    let loaded = load(&job).unwrap();
    let req = Requirement { k: 1, l: None, budget: 0, risk: None };
    // Level 0: 150,000 groups (a function); level 1: 15,000 (a literal list).
    for (table, level) in [("r0", 0u8), ("r1", 1)] {
        job.output.table.as_mut().unwrap().name = table.into();
        write_release(&loaded, &job, &[level, 0], &req);
    }
    let q = |sql: &str| -> i64 { loaded.conn.query_row(sql, [], |r| r.get(0)).unwrap() };
    assert_eq!(q("SELECT count(DISTINCT code) FROM kanon_out.r0"), 150_000);
    for (table, label) in [("r0", "t.code::VARCHAR"), ("r1", "left(t.code::VARCHAR, 6) || '*'")] {
        assert_eq!(
            q(&format!(
                "SELECT count(*) FROM (SELECT id, code, row_number() OVER (ORDER BY rowid) - 1 AS pos FROM kanon_out.{table}) r
                 JOIN kanon_source t ON r.id = t.id WHERE r.pos = t.id AND r.code = {label}"
            )),
            150_000,
            "{table}"
        );
    }
}
