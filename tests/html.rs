//! The approver's page (`[output] html`, `--html` on run and check),
//! rendered by a real headless Chromium (Debian's `chromium`): its figures
//! read off the rendered DOM equal the JSON report's, its screenshot is not
//! blank, it requests nothing beyond the file, and it holds no dropped or
//! pseudonymized value and no key or password. On DuckDB, Spark and
//! PostgreSQL. Without Chromium these tests print a notice and skip.

use crate::util::{kanon_env, Out};
use duckdb::Connection;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const KEY: &str = "html-test-key-7f3a9c";

/// Debian's Chromium, or None after a notice (`.ci/run` installs it where it can).
fn chromium() -> Option<PathBuf> {
    for name in ["chromium", "chromium-browser"] {
        for dir in std::env::var("PATH").unwrap_or_default().split(':') {
            let p = Path::new(dir).join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    // The page's browser tests skip where Chromium cannot be installed (a notice, even in CI).
    let test = std::thread::current().name().unwrap_or("a test").to_string();
    eprintln!("notice: Chromium (Debian's chromium) is missing; {test} skips");
    if let Some(path) = std::env::var_os("KANON_SKIPS") {
        use std::io::Write;
        if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
            let _ = writeln!(f, "{test}: Chromium");
        }
    }
    None
}

/// What Chromium made of the page: the rendered DOM, the screenshot, the URLs it requested.
struct Rendered {
    dom: String,
    png: Vec<u8>,
    requested: Vec<String>,
}

/// Render `page` in headless Chromium with a fresh profile and no network use of its own.
fn render(browser: &Path, page: &Path, work: &Path) -> Rendered {
    let url = format!("file://{}", page.canonicalize().unwrap().display());
    let run = |name: &str, extra: &[String]| -> std::process::Output {
        let profile = work.join(format!("profile-{name}"));
        let out = Command::new(browser)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                // The browser's own clock query (not the page's): off, so the net-log holds the page's requests only.
                "--disable-features=NetworkTimeServiceQuerying",
                "--hide-scrollbars",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .args(extra)
            .arg(&url)
            .output()
            .expect("cannot start chromium");
        assert!(out.status.success(), "chromium {name}: {}", String::from_utf8_lossy(&out.stderr));
        out
    };
    let netlog = work.join("net.json");
    let dom = run("dom", &["--dump-dom".into(), format!("--log-net-log={}", netlog.display())]);
    let shot = work.join("shot.png");
    run("shot", &[format!("--screenshot={}", shot.display()), "--window-size=1000,1400".into()]);
    let log = std::fs::read_to_string(&netlog).unwrap_or_default();
    Rendered {
        dom: String::from_utf8_lossy(&dom.stdout).into_owned(),
        png: std::fs::read(&shot).unwrap(),
        requested: requested_urls(&log),
    }
}

/// The URLs the page asked for: the net-log's request starts whose
/// initiator is a document (the browser's own, such as its update check,
/// have none: "not an origin"). A file page's own load is not a network request.
fn requested_urls(log: &str) -> Vec<String> {
    let log: Value = serde_json::from_str(log).expect("a complete net-log");
    let start = &log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"];
    let events = log["events"].as_array().unwrap();
    events
        .iter()
        .filter(|e| &e["type"] == start && e["params"]["url"].is_string())
        .filter(|e| e["params"]["initiator"] != "not an origin")
        .map(|e| e["params"]["url"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// The figures the page marks: (report key, unit, text).
fn figures(dom: &str) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for (i, _) in dom.match_indices("data-key=\"") {
        let rest = &dom[i + 10..];
        let key = &rest[..rest.find('"').unwrap()];
        let tag_end = rest.find('>').unwrap();
        let tag = &rest[..tag_end];
        let unit = tag.find("data-unit=\"").map_or("", |u| {
            let r = &tag[u + 11..];
            &r[..r.find('"').unwrap()]
        });
        let text = &rest[tag_end + 1..];
        let text = &text[..text.find('<').unwrap()];
        if !key.is_empty() {
            out.push((key.to_string(), unit.to_string(), text.trim().to_string()));
        }
    }
    out
}

fn at<'a>(report: &'a Value, key: &str) -> &'a Value {
    key.split('.').try_fold(report, |v, p| v.get(p)).unwrap_or(&Value::Null)
}

/// Every marked figure of the DOM equals the report's (to the digits shown); the count compared.
fn same_figures(dom: &str, report: &Value) -> usize {
    let figures = figures(dom);
    for (key, unit, text) in &figures {
        let want = at(report, key);
        let context = || format!("{key}: page \"{text}\", report {want}");
        match want {
            Value::Null => assert_eq!(text, "—", "{}", context()),
            Value::String(s) => assert_eq!(text, s, "{}", context()),
            Value::Number(n) => {
                let shown: f64 = text.replace([',', '%'], "").parse().unwrap_or_else(|_| panic!("{}", context()));
                let got = if unit == "%" { shown / 100.0 } else { shown };
                let want = n.as_f64().unwrap();
                assert!((got - want).abs() <= 5e-4 * want.abs() + 1e-9, "{}", context());
            }
            other => panic!("{key}: not a figure in the report: {other}"),
        }
    }
    figures.len()
}

/// The screenshot shows a page: many pixels off white, in several colours.
fn not_blank(png_bytes: &[u8]) {
    let decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    let pixels = buf[..info.buffer_size()].chunks(channels);
    let total = (info.width * info.height) as usize;
    let mut inked = 0;
    let mut colours = std::collections::HashSet::new();
    for p in pixels {
        if p[..3].iter().any(|&c| c < 200) {
            inked += 1;
        }
        colours.insert([p[0], p[1], p[2]]);
    }
    assert!(inked * 100 > total, "a blank screenshot: {inked} of {total} pixels inked");
    assert!(colours.len() > 20, "a blank screenshot: {} colours", colours.len());
}

/// The page loads nothing: its only URL is itself, its CSP forbids the rest,
/// and its source names no other address than the SVG namespace.
fn self_contained(page: &Path, r: &Rendered) {
    assert!(r.requested.is_empty(), "the page requested {:?}", r.requested);
    let source = std::fs::read_to_string(page).unwrap();
    assert!(source.contains("Content-Security-Policy\" content=\"default-src 'none'"));
    let stripped = source.replace("http://www.w3.org/2000/svg", "").replace("http://www.w3.org/1999/xlink", "");
    assert!(!stripped.contains("http:") && !stripped.contains("https:"), "the page names an address");
    assert!(!source.contains("<script"), "the page has a script");
    assert!(source.len() < 3 << 20, "the page is {} bytes", source.len());
}

/// Everything the browser test checks, for a page and its JSON report; the
/// rendered DOM back.
fn checked_in_browser(browser: &Path, page: &Path, report: &Value, work: &Path) -> String {
    let r = render(browser, page, work);
    let compared = same_figures(&r.dom, report);
    // A run's page marks its risk before and after, a check's the audited table's only.
    let least = if r.dom.contains("kanon run:") { 30 } else { 15 };
    assert!(compared >= least, "only {compared} figures compared");
    not_blank(&r.png);
    self_contained(page, &r);
    r.dom
}

fn ok(dir: &Path, args: &[&str]) -> Out {
    let out = kanon_env(dir, args, &[("KANON_KEY", KEY)]);
    assert!(out.code == 0 || (args[0] == "check" && out.code == 4), "kanon {args:?}:\n{}", out.show());
    out
}

/// Patients with unique ids (pseudonymized) and unique secrets (dropped), as Parquet.
fn patients(dir: &Path) -> PathBuf {
    let parquet = dir.join("patients.parquet");
    let conn = Connection::open_in_memory().unwrap();
    conn.execute_batch(&format!(
        "COPY (SELECT 'ID-' || lpad(i::VARCHAR, 6, '0') || '-uniq' AS patient_id,
                20 + (i * 7919) % 60 AS age,
                ['53715', '53703', '53706', '53711', '90210', '90211'][1 + (i * 31) % 6] AS zip,
                CASE WHEN i % 3 = 0 THEN 'F' ELSE 'M' END AS sex,
                ['flu', 'cold', 'asthma', 'diabetes'][1 + (i * 13) % 4] AS disease,
                'SECRET-' || md5(i::VARCHAR) AS note,
                'person-' || (i % 400)::VARCHAR AS person
         FROM range(1, 1201) t(i)) TO '{}' (FORMAT parquet)",
        parquet.display()
    ))
    .unwrap();
    parquet
}

/// The unique values the page must not show: the ids, their pseudonyms, the notes.
fn forbidden(parquet: &Path) -> Vec<String> {
    let conn = Connection::open_in_memory().unwrap();
    let mut out = Vec::new();
    let q = format!("SELECT patient_id, note FROM '{}'", parquet.display());
    let mut stmt = conn.prepare(&q).unwrap();
    let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))).unwrap();
    let key = kanon::pseudonym::Key::new(KEY.as_bytes());
    for row in rows {
        let (id, note) = row.unwrap();
        out.push(key.pseudonym(id.as_bytes()));
        out.push(id);
        out.push(note);
    }
    out.push(KEY.to_string());
    out
}

const BODY: &str = "[privacy]\nk = 5\nmax_suppression = 0.02\nl_diversity = { column = \"disease\", l = 2 }\n\
[[quasi_identifiers]]\ncolumn = \"age\"\nhierarchy = { intervals = [5, 10, 20] }\n\
[[quasi_identifiers]]\ncolumn = \"zip\"\nhierarchy = { mask = 5 }\n\
[[quasi_identifiers]]\ncolumn = \"sex\"\nhierarchy = \"suppress\"\n";

const OUTPUT: &str = "drop = [\"note\"]\npseudonymize = [\"patient_id\"]\n";

/// Nothing of `forbidden` (nor `secret`) is in the page's file.
fn discloses_nothing(page: &Path, forbidden: &[String]) {
    let text = std::fs::read_to_string(page).unwrap();
    for value in forbidden {
        assert!(!text.contains(value.as_str()), "the page holds {value}");
    }
}

#[test]
fn the_run_page_shows_the_reports_figures_in_chromium_and_nothing_else() {
    let Some(browser) = chromium() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let parquet = patients(d);
    let job = d.join("job.toml");
    std::fs::write(
        &job,
        format!(
            "[source]\nparquet = \"{}\"\n[output]\ndatabase = \"out.duckdb\"\ntable = \"release\"\ncsv = \"release.csv\"\n\
             report = \"report.json\"\nhtml = \"page.html\"\n{OUTPUT}{BODY}",
            parquet.display()
        ),
    )
    .unwrap();
    // Three nights, the second on other data's settings (k = 6).
    for k in ["5", "6", "5"] {
        ok(d, &["run", "job.toml", "--quiet", "--k", k]);
    }
    let report: Value = serde_json::from_str(&std::fs::read_to_string(d.join("report.json")).unwrap()).unwrap();
    let page = d.join("page.html");
    let dom = checked_in_browser(&browser, &page, &report, d);
    for section in ["verdict", "job", "node", "suppression", "models", "risk", "history", "fingerprint"] {
        assert!(dom.contains(&format!("<section id=\"{section}\"")), "no {section} section");
    }
    assert!(dom.contains("data-verdict=\"ok\""));
    // The history: the three runs, as kanon history has them.
    let history: Vec<Value> = serde_json::from_str(ok(d, &["history", "job.toml", "--json"]).stdout.trim()).unwrap();
    assert_eq!(history.len(), 3);
    assert_eq!(dom.matches("<tr class=\"run\">").count(), 3);
    // The fingerprint: the CSV file's SHA-256 and the table's rows.
    use sha2::Digest;
    let sha = format!("{:x}", sha2::Sha256::digest(std::fs::read(d.join("release.csv")).unwrap()));
    assert!(dom.contains(&sha), "the CSV's SHA-256 is not on the page");
    assert!(dom.contains(report["job_sha256"].as_str().unwrap()));
    discloses_nothing(&page, &forbidden(&parquet));
    // The net-log test sees a request when a page makes one.
    let fetching = d.join("fetching.html");
    std::fs::write(&fetching, "<html><body><img src=\"http://127.0.0.1:9/x.png\">x</body></html>").unwrap();
    let control = d.join("control");
    std::fs::create_dir(&control).unwrap();
    assert_eq!(render(&browser, &fetching, &control).requested, ["http://127.0.0.1:9/x.png"]);

    // kanon check --html on the release: the same page for the audited table.
    let checked = d.join("check.html");
    let out = ok(d, &["check", "job.toml", "--table", "release", "--json", "--html", checked.to_str().unwrap()]);
    let check: Value = serde_json::from_str(&out.stdout).unwrap();
    let dom = checked_in_browser(&browser, &checked, &check, d);
    assert!(dom.contains("data-verdict=\"ok\""), "the release meets its job");
    assert!(dom.contains("<section id=\"history\""));
    discloses_nothing(&checked, &forbidden(&parquet));
}

#[test]
fn an_html_page_is_written_atomically_and_never_over_an_input() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let parquet = patients(d);
    let job = d.join("job.toml");
    let text = format!(
        "[source]\nparquet = \"{}\"\n[output]\ncsv = \"release.csv\"\nhtml = \"patients.parquet\"\n{OUTPUT}{BODY}",
        parquet.display()
    );
    std::fs::write(&job, &text).unwrap();
    let out = kanon_env(d, &["run", "job.toml", "--quiet"], &[("KANON_KEY", KEY)]);
    assert_eq!(out.code, 2, "{}", out.show());
    assert!(out.stderr.contains("[output] html"), "{}", out.stderr);
    assert!(!d.join("release.csv").exists());
    // --html overrides [output] html; no temporary file is left beside it.
    std::fs::write(&job, text.replace("html = \"patients.parquet\"", "html = \"a.html\"")).unwrap();
    ok(d, &["run", "job.toml", "--quiet", "--html", "b.html"]);
    assert!(d.join("b.html").is_file() && !d.join("a.html").exists());
    let left: Vec<_> = std::fs::read_dir(d).unwrap().filter_map(|e| e.ok()).map(|e| e.file_name()).collect();
    assert_eq!(left.len(), 4, "{left:?}");
}

#[test]
fn the_page_counts_persons_where_the_job_has_a_person_column() {
    let Some(browser) = chromium() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let parquet = patients(d);
    let body = BODY.replace("l_diversity = { column = \"disease\", l = 2 }\n", "person = \"person\"\n");
    std::fs::write(
        d.join("job.toml"),
        format!(
            "[source]\nparquet = \"{}\"\n[output]\ndatabase = \"out.duckdb\"\ntable = \"release\"\n\
             report = \"report.json\"\nhtml = \"page.html\"\n{}{body}",
            parquet.display(),
            OUTPUT.replace("[\"note\"]", "[\"note\", \"person\"]")
        ),
    )
    .unwrap();
    ok(d, &["run", "job.toml", "--quiet"]);
    let report: Value = serde_json::from_str(&std::fs::read_to_string(d.join("report.json")).unwrap()).unwrap();
    assert!(report["persons_in"].as_u64().is_some(), "{report}");
    let dom = checked_in_browser(&browser, &d.join("page.html"), &report, d);
    for key in ["persons_in", "persons_out", "suppressed_persons"] {
        assert!(dom.contains(&format!("data-key=\"{key}\"")), "no {key} on the page");
    }
    discloses_nothing(&d.join("page.html"), &forbidden(&parquet));
}

#[test]
fn the_page_shows_the_risk_limits_of_a_run_and_of_a_check() {
    let Some(browser) = chromium() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let parquet = patients(d);
    let body = BODY.replace("k = 5\n", "k = 2\naverage_risk = 0.2\nsample_uniqueness = 0.01\n");
    std::fs::write(
        d.join("job.toml"),
        format!(
            "[source]\nparquet = \"{}\"\n[output]\ndatabase = \"out.duckdb\"\ntable = \"release\"\n\
             report = \"report.json\"\nhtml = \"page.html\"\n{OUTPUT}{body}",
            parquet.display()
        ),
    )
    .unwrap();
    ok(d, &["run", "job.toml", "--quiet"]);
    let report: Value = serde_json::from_str(&std::fs::read_to_string(d.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["risk_limits"]["holds"], true, "{report}");
    let dom = checked_in_browser(&browser, &d.join("page.html"), &report, d);
    for key in ["risk_limits.average_risk.reached", "risk_limits.sample_uniqueness.reached"] {
        assert!(dom.contains(&format!("data-key=\"{key}\"")), "no {key} on the run's page");
    }
    ok(d, &["check", "job.toml", "--table", "release", "--html", "check.html", "--json"]);
    let out = crate::util::kanon(d, &["check", "job.toml", "--table", "release", "--json"]);
    let checked: Value = serde_json::from_str(&out.stdout).unwrap();
    let dom = checked_in_browser(&browser, &d.join("check.html"), &checked, d);
    assert!(dom.contains("data-key=\"risk_limits.average_risk.reached\""), "no average risk on the check's page");
}

/// A run on a server engine (the job's `[engine]` and `[source]` lines
/// given) with `--html`, then `check --html` of its release: both pages
/// checked in Chromium; `secret` (the server's password or token) in neither.
fn on_engine(dir: &Path, engine: &str, source: &str, release: &str, secret: Option<&str>) {
    let Some(browser) = chromium() else { return };
    let parquet = dir.join("patients.parquet");
    let job = dir.join("engine.toml");
    std::fs::write(
        &job,
        format!(
            "{engine}\n[source]\n{source}\n[output]\ntable = \"{release}\"\nreport = \"report.json\"\n{OUTPUT}{BODY}"
        ),
    )
    .unwrap();
    ok(dir, &["run", "engine.toml", "--quiet", "--html", "page.html"]);
    let report: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    let page = dir.join("page.html");
    let dom = checked_in_browser(&browser, &page, &report, dir);
    assert!(dom.contains("<tr class=\"run\">"), "the run's history row is on the page");
    let mut forbidden = forbidden(&parquet);
    forbidden.extend(secret.map(String::from));
    discloses_nothing(&page, &forbidden);
    let out = ok(dir, &["check", "engine.toml", "--table", release, "--json", "--html", "check.html"]);
    let check: Value = serde_json::from_str(&out.stdout).unwrap();
    checked_in_browser(&browser, &dir.join("check.html"), &check, dir);
    discloses_nothing(&dir.join("check.html"), &forbidden);
}

#[test]
fn the_page_of_a_spark_run_and_check_in_chromium() {
    let Some(url) = std::env::var("KANON_SPARK_URL").ok().filter(|u| !u.is_empty()) else {
        crate::util::missing("a Spark Connect server (KANON_SPARK_URL, which tests/spark.sh sets)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let parquet = patients(dir.path());
    let job = crate::util::engine_job(dir.path(), "spark", &url);
    let spark = kanon::engine::spark::Spark::connect(&job, job.engine.kind.url().unwrap()).unwrap();
    spark.execute("DROP TABLE IF EXISTS kanon_test_html").unwrap();
    let engine = format!("[engine]\nkind = \"spark\"\nurl = \"{url}\"");
    on_engine(dir.path(), &engine, &format!("parquet = \"{}\"", parquet.display()), "kanon_test_html", None);
    spark.execute("DROP TABLE IF EXISTS kanon_test_html").unwrap();
}

#[test]
fn the_page_of_a_postgres_run_and_check_in_chromium() {
    let Some(url) = std::env::var("KANON_PG_URL").ok().filter(|u| !u.is_empty()) else {
        crate::util::missing("a PostgreSQL server (KANON_PG_URL, which tests/spark.sh sets)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let parquet = patients(dir.path());
    let job = crate::util::engine_job(dir.path(), "postgres", &url);
    let pg = kanon::engine::postgres::Postgres::connect(&job, job.engine.kind.url().unwrap()).unwrap();
    pg.execute("DROP SCHEMA IF EXISTS kanon_html CASCADE; CREATE SCHEMA kanon_html").unwrap();
    let conn = Connection::open_in_memory().unwrap();
    pg.create_table(&conn, &format!("SELECT * FROM '{}'", parquet.display()), "kanon_html.patients").unwrap();
    let password = url.split("://").nth(1).unwrap().split('@').next().unwrap().split(':').nth(1).map(String::from);
    let engine = format!("[engine]\nkind = \"postgres\"\nurl = \"{url}\"");
    on_engine(dir.path(), &engine, "table = \"kanon_html.patients\"", "kanon_html.release", password.as_deref());
    pg.execute("DROP SCHEMA IF EXISTS kanon_html CASCADE").unwrap();
}
