//! The release writer's two recodings: full-domain (labels per value, the
//! suppressed classes anti-joined) and per-class (each kept class with its own
//! labels), written from the same node, must keep the same rows in source order.

use kanon::job::Job;
use kanon::load::load;
use kanon::metrics::Requirement;
use kanon::release::{self, Recoding};
use std::fmt::Write;

#[test]
fn per_class_recoding_keeps_the_full_domain_rows_with_its_own_labels() {
    let dir = tempfile::tempdir().unwrap();
    // Rows written in id order; a few rare (zip, age) pairs get suppressed.
    let mut csv = String::from("id,zip,age,sex\n");
    for i in 0..300u32 {
        let zip = 53700 + (i * 7919 % 23) * (i % 3);
        let age = 20 + (i * 31 % 47);
        let sex = if i % 5 < 2 { "F" } else { "M" };
        writeln!(csv, "{i},{zip},{age},{sex}").unwrap();
    }
    std::fs::write(dir.path().join("t.csv"), csv).unwrap();
    let text = "[source]\ncsv = \"t.csv\"\n[output]\ndatabase = \"out.duckdb\"\ntable = \"full\"\n[privacy]\nk = 4\n\
        [[quasi_identifiers]]\ncolumn = \"zip\"\nhierarchy = { mask = 3 }\n\
        [[quasi_identifiers]]\ncolumn = \"age\"\nhierarchy = { intervals = [5, 10, 20] }\n\
        [[quasi_identifiers]]\ncolumn = \"sex\"\nhierarchy = \"suppress\"\n";
    let mut job = Job::parse(&dir.path().join("job.toml"), text).unwrap();
    let loaded = load(&job).unwrap();
    let conn = &loaded.conn;
    let levels = [1u8, 1, 0];
    let req = Requirement { k: 4, l: None, budget: 300 };
    let recoding = release::full_domain_map(conn, &levels, &req, false).unwrap();
    assert_eq!(recoding, Recoding::FullDomain);
    let full = release::write(conn, &job, &loaded.columns, recoding).unwrap();
    let suppressed: i64 = conn
        .query_row(
            "SELECT count(*) FROM kanon_source s \
             JOIN kanon_release_map_0 m0 ON s.zip = m0.n \
             JOIN kanon_release_map_1 m1 ON s.age = m1.n \
             JOIN kanon_release_map_2 m2 ON s.sex = m2.n \
             JOIN kanon_release_suppressed r ON r.c0 = m0.code AND r.c1 = m1.code AND r.c2 = m2.code",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(suppressed > 0, "the fixture should suppress some rows");
    assert_eq!(full.rows as i64 + suppressed, 300);

    // Per-class: the kept classes of the same node, zip labelled per class.
    let div = kanon::hierarchy::divisors(conn, 3).unwrap();
    conn.execute_batch(&format!(
        "CREATE OR REPLACE TEMP TABLE kanon_release_classes AS
         SELECT c.c0, c.c1, c.c2, 'cell ' || c.c0 || '/' || c.c1 || '/' || c.c2 AS lab0,
                (SELECT DISTINCT label FROM kanon_release_map_1 WHERE code = c.c1) AS lab1,
                (SELECT DISTINCT label FROM kanon_release_map_2 WHERE code = c.c2) AS lab2
         FROM (SELECT g0 // {} AS c0, g1 // {} AS c1, g2 // {} AS c2, sum(cnt) AS size FROM kanon_f0 GROUP BY ALL) c
         WHERE c.size >= 4",
        div[0][1], div[1][1], div[2][0]
    ))
    .unwrap();
    job.output.table = "cells".into();
    let cells = release::write(conn, &job, &loaded.columns, Recoding::PerClass).unwrap();
    assert_eq!(cells.rows, full.rows);

    let q = |sql: &str| -> i64 { conn.query_row(sql, [], |r| r.get(0)).unwrap() };
    // Same rows, in source order, the other QIs labelled alike.
    assert_eq!(
        q("SELECT count(*) FROM kanon_out.full f JOIN kanon_out.cells c ON f.id = c.id AND f.age = c.age AND f.sex = c.sex"),
        full.rows as i64
    );
    for t in ["full", "cells"] {
        assert_eq!(
            q(&format!("SELECT count(*) FROM (SELECT id, lag(id) OVER (ORDER BY rowid) AS prev FROM kanon_out.{t}) WHERE id < prev")),
            0,
            "{t} is not in source order"
        );
    }
    // Each cell label stands for exactly one full-domain class, and back.
    let classes = q("SELECT count(*) FROM (SELECT DISTINCT zip, age, sex FROM kanon_out.full)");
    assert_eq!(q("SELECT count(DISTINCT zip) FROM kanon_out.cells"), classes);
    assert_eq!(
        q("SELECT count(*) FROM (SELECT DISTINCT c.zip, f.zip, f.age, f.sex FROM kanon_out.full f JOIN kanon_out.cells c ON f.id = c.id)"),
        classes
    );
    assert!(q("SELECT min(n) FROM (SELECT count(*) AS n FROM kanon_out.cells GROUP BY zip)") >= 4);
}
