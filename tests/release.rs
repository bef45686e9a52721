//! The release writer on a source of several row groups, read by two threads,
//! from a DuckDB table and from a CSV file: every row of a kept class is
//! written, labelled by its groups, in source order, and exactly the rows of
//! classes under k are dropped (re-measured here from a release that drops
//! nothing).

use kanon::job::Job;
use kanon::load::load;
use kanon::metrics::Requirement;
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

fn job(dir: &std::path::Path, source: &str, table: &str) -> Job {
    let text = format!(
        "{source}\n[output]\ndatabase = \"out.duckdb\"\ntable = \"{table}\"\n[privacy]\nk = {K}\n\
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
            let req = Requirement { k, l: None, budget: ROWS as u64 };
            let recoding = release::full_domain_map(&loaded.conn, &job, &loaded.columns, &levels, &req, false).unwrap();
            release::write(&loaded.conn, &job, &loaded.columns, recoding).unwrap();
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
