//! Opening DuckDB for a job: the output database as the main catalog, the
//! source (a table in the same or another database file, or a CSV / Parquet
//! file) behind the temp view `kanon_source`.

use crate::error::{bad, OrBadInput};
use crate::job::{same_file, Engine, Job, OutputTable, PopulationTable, SourceSpec};
use crate::sql;
use anyhow::{Context, Result};
use duckdb::Connection;
use std::path::Path;

/// A source column and its DuckDB type.
#[derive(Debug, Clone)]
pub struct SourceColumn {
    pub name: String,
    pub type_name: String,
}

/// A statement of sql/duckdb.sql, its slots filled.
pub(crate) fn statement(name: &str, slots: &[(&str, &str)]) -> String {
    sql::render(sql::fragment(sql::DUCKDB, name), slots)
}

/// CSV sources up to this size are parsed once for the search, grouped
/// ([`crate::data::frequency::Input`]); larger ones are scanned per pass.
pub(crate) const SMALL_FILE_BYTES: u64 = 256 << 20;

/// Is the job's source a CSV file of at most [`SMALL_FILE_BYTES`]? Parsing a
/// CSV costs more than a pass over its grouped rows; a Parquet file is
/// columnar and read as cheaply as a table, so it is scanned per pass as a
/// table is: grouping it first costs a pass that, on a near-unique extract,
/// removes almost no rows (bench/scale-unique.csv).
pub(crate) fn small_file(job: &Job) -> bool {
    match &job.source {
        SourceSpec::Csv { path, .. } => std::fs::metadata(path).is_ok_and(|m| m.len() <= SMALL_FILE_BYTES),
        SourceSpec::Database { .. }
        | SourceSpec::Parquet { .. }
        | SourceSpec::SparkTable { .. }
        | SourceSpec::SparkParquet { .. }
        | SourceSpec::PostgresTable { .. } => false,
    }
}

/// CSV sources up to this size are copied into a temp table once, in file order.
const TINY_CSV_BYTES: u64 = 32 << 20;

/// The catalog name the output database is attached under.
pub(crate) const OUT: &str = "kanon_out";

/// Open an in-memory DuckDB and expose the job's source as `kanon_source`. The
/// source is only ever read. When the source lives in the output database,
/// that database is attached read-write as [`OUT`] right away (it exists);
/// otherwise the output database is attached only when the release is written,
/// so a run that fails early leaves no file behind.
pub(crate) fn open(job: &Job) -> Result<(Connection, Vec<SourceColumn>)> {
    open_with(job, false).map(|(conn, columns, _)| (conn, columns))
}

/// [`open`], and with `positions` also the view `kanon_source_rows`: the
/// source with each row's position in source order, in the returned column
/// (named apart from the source's). A table's position is its rowid, a
/// Parquet file's its row number; a CSV file is first copied into a temp
/// table (in file order) for its rowid, DuckDB giving a CSV scan no row number.
pub(crate) fn open_with(job: &Job, positions: bool) -> Result<(Connection, Vec<SourceColumn>, Option<String>)> {
    let src_path = match &job.source {
        SourceSpec::Database { path, .. } | SourceSpec::Csv { path, .. } | SourceSpec::Parquet { path } => path,
        // A remote source is opened by its engine (crate::engine::open); the
        // commands that open it here refuse a remote engine first (the plan's table).
        SourceSpec::SparkTable { .. } | SourceSpec::SparkParquet { .. } | SourceSpec::PostgresTable { .. } => {
            unreachable!("a remote source opened as an embedded one")
        }
    };
    if !src_path.is_file() {
        return Err(bad(format!("{}: source file {} not found", job.path.display(), src_path.display())));
    }
    let conn = open_local(&job.engine)?;
    let relation = match &job.source {
        SourceSpec::Database { path, table } => {
            let (catalog, mode) = if job.output.table.as_ref().is_some_and(|t| same_file(path, &t.database)) {
                (OUT, "")
            } else {
                ("kanon_src", " (READ_ONLY)")
            };
            conn.execute_batch(&statement(
                "attach",
                &[("path", &sql::literal(&path.to_string_lossy())), ("catalog", &sql::ident(catalog)), ("mode", mode)],
            ))
            .or_bad_input(|| format!("opening source database {}", path.display()))?;
            if !table_exists(&conn, catalog, table)? {
                return Err(bad(format!("{}: table \"{table}\" not found in {}", job.path.display(), path.display())));
            }
            format!("{}.main.{}", sql::ident(catalog), sql::ident(table))
        }
        SourceSpec::Csv { path, delimiter } => {
            let file = sql::literal(&path.to_string_lossy());
            let mut args = file.clone();
            if let Some(d) = delimiter {
                args.push_str(&format!(", delim = {}", sql::literal(d)));
            }
            args.push_str(", header = true");
            let csv = format!("read_csv({args})");
            // A small CSV is parsed once into a temp table: the passes after it
            // (columns, the grouping, the release) then read no text. A larger
            // one is read by each, with the first sniff's findings.
            let tiny = std::fs::metadata(path).is_ok_and(|m| m.len() <= TINY_CSV_BYTES);
            if positions || tiny {
                conn.execute_batch(&statement("copy_csv", &[("csv", &csv)]))
                    .or_bad_input(|| format!("reading source {}", src_path.display()))?;
                "kanon_source_copy".into()
            } else {
                pinned_csv(&conn, &file, &args).unwrap_or(csv)
            }
        }
        SourceSpec::Parquet { path } => format!("read_parquet({})", sql::literal(&path.to_string_lossy())),
        SourceSpec::SparkTable { .. } | SourceSpec::SparkParquet { .. } | SourceSpec::PostgresTable { .. } => {
            unreachable!("a remote source opened as an embedded one")
        }
    };
    conn.execute_batch(&sql::render(sql::SOURCE_VIEW, &[("relation", &relation)]))
        .or_bad_input(|| format!("reading source {}", src_path.display()))?;
    crate::trace(|| "open: source read".into());
    let columns = columns(&conn).or_bad_input(|| format!("reading source {}", src_path.display()))?;
    if !positions {
        return Ok((conn, columns, None));
    }
    let pos = (0..)
        .map(|i| format!("kanon_pos{i}"))
        .find(|p| !columns.iter().any(|c| c.name.eq_ignore_ascii_case(p)))
        .unwrap_or_default();
    let (rows, at) = match &job.source {
        SourceSpec::Parquet { path } => (
            format!("read_parquet({}, file_row_number = true)", sql::literal(&path.to_string_lossy())),
            "file_row_number",
        ),
        _ => (relation, "rowid"),
    };
    conn.execute_batch(&statement("source_rows", &[("at", at), ("position", &sql::ident(&pos)), ("rows", &rows)]))
        .or_bad_input(|| format!("reading source {}", src_path.display()))?;
    Ok((conn, columns, Some(pos)))
}

/// `read_csv` of a file with what DuckDB's sniffer finds in it given, so
/// statements reading it bind without sniffing again (sql/csv_sniff.sql).
/// None when the sniff does not say everything: the caller lets DuckDB detect.
fn pinned_csv(conn: &Connection, file: &str, args: &str) -> Option<String> {
    type Sniffed = (String, String, String, String, String, i64, bool, Option<String>, Option<String>);
    let q = sql::render(sql::CSV_SNIFF, &[("args", args)]);
    let mut stmt = conn.prepare(&q).ok()?;
    // One row per column: its name and type after the file's dialect.
    let rows: Vec<(Sniffed, String, String)> = stmt
        .query_map([], |r| {
            let dialect =
                (r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?, r.get(8)?);
            Ok((dialect, r.get(9)?, r.get(10)?))
        })
        .ok()?
        .collect::<duckdb::Result<_>>()
        .ok()?;
    let (delim, quote, escape, new_line, comment, skip, header, date, timestamp) = rows.first()?.0.clone();
    // The sniffer prints an empty setting as "(empty)".
    let text = |v: &str| sql::literal(if v == "(empty)" { "" } else { v });
    let columns = sql::list(&rows, ", ", |(_, n, t)| format!("{}: {}", sql::literal(n), sql::literal(t)));
    let mut call = format!(
        "read_csv({file}, auto_detect = false, delim = {}, quote = {}, escape = {}, new_line = {}, comment = {}, skip = {skip}, header = {header}, columns = {{{columns}}}",
        text(&delim),
        text(&quote),
        text(&escape),
        text(&new_line),
        text(&comment),
    );
    for (option, value) in [("dateformat", date), ("timestampformat", timestamp)] {
        if let Some(v) = value.filter(|v| v != "(empty)") {
            call.push_str(&format!(", {option} = {}", sql::literal(&v)));
        }
    }
    call.push(')');
    // A setting the sniffer prints but read_csv would not take back: detect instead.
    conn.execute_batch(&statement("describe_select", &[("relation", &call)])).ok()?;
    Some(call)
}

/// The embedded DuckDB every run works in, configured from `[engine]`.
pub(crate) fn open_local(engine: &Engine) -> Result<Connection> {
    let conn = Connection::open_in_memory().context("starting DuckDB")?;
    crate::trace(|| "open: DuckDB started".into());
    configure(&conn, engine)?;
    Ok(conn)
}

/// Attach the output database as [`OUT`] unless it already is (the source lives
/// there). Returns whether the file was created by this call.
pub(crate) fn attach_output(conn: &Connection, job: &Job, out: &OutputTable, read_only: bool) -> Result<bool> {
    let attached: i64 = conn.query_row(&statement("attached", &[]), [OUT], |r| r.get(0))?;
    if attached > 0 {
        return Ok(false);
    }
    let path = &out.database;
    let created = !path.exists();
    if read_only && created {
        return Err(bad(format!("output database {} does not exist", path.display())));
    }
    if let Some(dir) = path.parent() {
        if !dir.as_os_str().is_empty() && !dir.is_dir() {
            return Err(bad(format!("{}: output folder {} does not exist", job.path.display(), dir.display())));
        }
    }
    let mode = if read_only { " (READ_ONLY)" } else { "" };
    conn.execute_batch(&statement(
        "attach",
        &[("path", &sql::literal(&path.to_string_lossy())), ("catalog", &sql::ident(OUT)), ("mode", mode)],
    ))
    .with_context(|| format!("opening output database {}", path.display()))?;
    Ok(created)
}

/// The share of `[engine] memory_limit` (the run's budget) DuckDB's buffer
/// pool gets. The rest is for what DuckDB allocates outside its pool and for
/// kanon's own structures. At 10⁹ rows the process rose 1.8 GiB above the
/// pool for under a second in each large GROUP BY, whether the pool was 8 or
/// 6 GB: 3/4 of 8 GB kept it 67 MiB under. 2/3 was too little for DuckDB
/// itself: a 42M-group GROUP BY failed to get 512 MiB (docs/benchmarks.md).
pub(crate) const POOL_SHARE: f64 = 0.75;

/// A size as DuckDB prints one or a job gives one ("18.8 GiB", "512.0 MiB",
/// "4GB", "100 bytes"), in bytes; None for other spellings ("50%").
pub(crate) fn bytes(text: &str) -> Option<u64> {
    let text = text.trim();
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(text.len());
    let number: f64 = text[..split].parse().ok()?;
    let unit: u64 = match text[split..].trim().to_ascii_lowercase().as_str() {
        "" | "b" | "byte" | "bytes" => 1,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        "kib" => 1 << 10,
        "mib" => 1 << 20,
        "gib" => 1 << 30,
        "tib" => 1 << 40,
        "pib" => 1 << 50,
        _ => return None,
    };
    Some((number * unit as f64) as u64)
}

fn configure(conn: &Connection, engine: &Engine) -> Result<()> {
    if let Some(t) = engine.threads {
        conn.execute_batch(&statement("threads", &[("threads", &t.to_string())]))?;
    }
    if let Some(m) = &engine.memory_limit {
        // DuckDB parses the size (any of its spellings: "8GB", "512MiB", "50%"),
        // then its pool gets a share of it (POOL_SHARE).
        conn.execute_batch(&statement("memory_limit", &[("limit", &sql::literal(m))]))
            .or_bad_input(|| format!("[engine] memory_limit \"{m}\""))?;
        let read = || conn.query_row(&statement("read_memory_limit", &[]), [], |r| r.get::<_, String>(0));
        // The job's own text when it is plain ("8GB"); DuckDB prints sizes to one decimal.
        if let Some(budget) = bytes(m).or_else(|| bytes(&read().ok()?)) {
            let pool = (budget as f64 * POOL_SHARE) as u64;
            conn.execute_batch(&statement("memory_limit", &[("limit", &format!("'{pool} bytes'"))]))?;
        }
    }
    if let Some(d) = &engine.temp_directory {
        conn.execute_batch(&statement("temp_directory", &[("path", &sql::literal(&d.to_string_lossy()))]))
            .or_bad_input(|| format!("[engine] temp_directory {}", d.display()))?;
    }
    Ok(())
}

fn columns(conn: &Connection) -> duckdb::Result<Vec<SourceColumn>> {
    let mut stmt = conn.prepare(sql::TABLE_COLUMNS)?;
    let rows = stmt.query_map([], |r| Ok(SourceColumn { name: r.get(0)?, type_name: r.get(1)? }))?;
    rows.collect()
}

/// Does `table` exist in the main schema of `catalog` (case-insensitively, as DuckDB resolves names)?
pub(crate) fn table_exists(conn: &Connection, catalog: &str, table: &str) -> Result<bool> {
    let n: i64 = conn.query_row(&statement("table_exists", &[]), [catalog, table], |r| r.get(0))?;
    Ok(n > 0)
}

/// Does the local value table `table` (column `n`) hold a NULL? A join on
/// its values needs `IS NOT DISTINCT FROM` only then.
pub(crate) fn has_null(conn: &Connection, table: &str) -> Result<bool> {
    let q = statement("nulls", &[("table", &sql::ident(table))]);
    Ok(conn.query_row(&q, [], |r| r.get::<_, i64>(0))? > 0)
}

/// Write `bytes` to `path` through a temporary file in the same folder and a rename.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir).with_context(|| format!("writing {}", path.display()))?;
    std::io::Write::write_all(&mut tmp, bytes).with_context(|| format!("writing {}", path.display()))?;
    // A temporary file is created private (0600); a report or job file is not.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file().set_permissions(std::fs::Permissions::from_mode(0o644))?;
    }
    tmp.persist(path).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// `[risk] population_table` as a relation of `conn` (its columns named as
/// the source's QIs): a table of the source database, or a CSV or Parquet file.
pub(crate) fn population_relation(conn: &Connection, job: &Job) -> Result<Option<String>> {
    let Some(p) = &job.risk.population_table else { return Ok(None) };
    let file = job.path.display();
    let relation = match p {
        PopulationTable::Table(t) => {
            let SourceSpec::Database { path, .. } = &job.source else {
                return Err(bad(format!(
                    "{file}: [risk] population_table names a table, which needs a database source; give {{ csv = \"…\" }} or {{ parquet = \"…\" }}"
                )));
            };
            let catalog =
                if job.output.table.as_ref().is_some_and(|o| same_file(path, &o.database)) { OUT } else { "kanon_src" };
            if !table_exists(conn, catalog, t)? {
                return Err(bad(format!("{file}: [risk] population_table \"{t}\" not found in {}", path.display())));
            }
            format!("{}.main.{}", sql::ident(catalog), sql::ident(t))
        }
        PopulationTable::Csv { path, delimiter } => {
            if !path.is_file() {
                return Err(bad(format!("{file}: [risk] population_table {} not found", path.display())));
            }
            let mut args = sql::literal(&path.to_string_lossy());
            if let Some(d) = delimiter {
                args.push_str(&format!(", delim = {}", sql::literal(d)));
            }
            format!("read_csv({args}, header = true)")
        }
        PopulationTable::Parquet(path) => {
            if !path.is_file() {
                return Err(bad(format!("{file}: [risk] population_table {} not found", path.display())));
            }
            format!("read_parquet({})", sql::literal(&path.to_string_lossy()))
        }
    };
    if matches!(p, PopulationTable::Table(_)) {
        return Ok(Some(relation));
    }
    // A file is parsed once per run, whoever asks.
    let columns = sql::list(&job.quasi_identifiers, ", ", |q| sql::ident(&q.column.name));
    if let Err(e) =
        conn.execute_batch(&statement("population_cached", &[("relation", &relation), ("columns", &columns)]))
    {
        // Name a quasi-identifier the file lacks, else DuckDB's reason.
        let have: Vec<String> = relation_columns(conn, &relation)?.into_iter().map(|c| c.name).collect();
        return Err(bad(match job.quasi_identifiers.iter().find(|q| !have.contains(&q.column.name)) {
            Some(q) => format!(
                "{}: quasi-identifier \"{}\" is not a column of [risk] population_table; it has {}",
                job.at(&q.column),
                q.column.name,
                sql::list(&have, ", ", |c| format!("\"{c}\""))
            ),
            None => format!("{file}: reading [risk] population_table: {e}"),
        }));
    }
    Ok(Some("kanon_population".to_string()))
}

/// The columns of `relation` (a table or a file read) as DuckDB reads it, in order.
pub(crate) fn relation_columns(conn: &Connection, relation: &str) -> duckdb::Result<Vec<SourceColumn>> {
    let mut stmt = conn.prepare(&statement("relation_columns", &[("relation", relation)]))?;
    let rows = stmt.query_map([], |r| Ok(SourceColumn { name: r.get(0)?, type_name: r.get(1)? }))?;
    rows.collect()
}

/// The table function `kanon_arrow(batch)` on `conn` (once): how an engine's
/// results, as Arrow batches, become rows of a local table.
pub(crate) fn register_arrow_scan(conn: &Connection) -> Result<()> {
    let registered: i64 = conn.query_row(&statement("arrow_registered", &[]), [], |r| r.get(0))?;
    if registered == 0 {
        conn.register_table_function::<duckdb::vtab::arrow::ArrowVTab>("kanon_arrow")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// DuckDB's pool (in bytes, as DuckDB prints it) under a job's memory_limit.
    fn pool(memory_limit: Option<&str>) -> u64 {
        let engine = Engine { memory_limit: memory_limit.map(String::from), ..Engine::default() };
        let conn = open_local(&engine).unwrap();
        let text: String = conn.query_row("SELECT current_setting('memory_limit')", [], |r| r.get(0)).unwrap();
        bytes(&text).unwrap()
    }

    #[test]
    fn sizes_as_duckdb_prints_them() {
        assert_eq!(bytes("18.8 GiB"), Some((18.8 * (1u64 << 30) as f64) as u64));
        assert_eq!(bytes("512.0 MiB"), Some(512 << 20));
        assert_eq!(bytes("4GB"), Some(4_000_000_000));
        assert_eq!(bytes("100 bytes"), Some(100));
        assert_eq!(bytes("lots"), None);
        assert_eq!(bytes("3 parsecs"), None);
    }

    /// The pinned read_csv reads what DuckDB's own detection reads: the same
    /// column names and types, the same rows.
    #[test]
    fn a_pinned_csv_reads_as_detection_does() {
        let dir = tempfile::tempdir().unwrap();
        let cases = [
            ("q.csv", None, "id,\"zi\"\"p\",birth,city,note\r\n", ","),
            ("t.tsv", Some("\t"), "zip\tage\tday\n", "\t"),
            ("s.csv", Some(";"), "a;b\n", ";"),
        ];
        for (name, delimiter, header, sep) in cases {
            let path = dir.path().join(name);
            let mut text = header.to_string();
            for i in 0..3000 {
                let fields = [
                    i.to_string(),
                    format!("{}", 10000 + i % 300),
                    format!("19{}-{:02}-{:02}", 40 + i % 59, 1 + i % 12, 1 + i % 28),
                    ["Paris", "\"Rome, IT\"", "\"St. \"\"John\"\"\""][i % 3].to_string(),
                    format!("\"free, text {i}\""),
                ];
                let n = header.split(sep).count();
                let line = if sep == "," { fields[..n].join(sep) } else { fields[1..=n].join(sep) };
                text.push_str(&line);
                text.push_str(if header.ends_with("\r\n") { "\r\n" } else { "\n" });
            }
            std::fs::write(&path, text).unwrap();
            let conn = open_local(&Engine::default()).unwrap();
            let file = sql::literal(&path.to_string_lossy());
            let mut args = file.clone();
            if let Some(d) = delimiter {
                args.push_str(&format!(", delim = {}", sql::literal(d)));
            }
            args.push_str(", header = true");
            let pinned = pinned_csv(&conn, &file, &args).expect("the sniff gives everything");
            assert!(pinned.contains("auto_detect = false"), "{pinned}");
            let detected = format!("read_csv({args})");
            let shape = |r: &str| -> Vec<(String, String)> {
                let mut stmt = conn
                    .prepare(&format!("SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM {r})"))
                    .unwrap();
                stmt.query_map([], |row| Ok((row.get(0)?, row.get(1)?))).unwrap().map(|c| c.unwrap()).collect()
            };
            assert_eq!(shape(&pinned), shape(&detected), "{name}");
            let differ: i64 = conn
                .query_row(
                    &format!(
                        "SELECT count(*) FROM ((FROM {pinned} EXCEPT ALL FROM {detected}) UNION ALL (FROM {detected} EXCEPT ALL FROM {pinned}))"
                    ),
                    [],
                    |r| r.get(0),
                )
                .unwrap();
            let rows: i64 = conn.query_row(&format!("SELECT count(*) FROM {pinned}"), [], |r| r.get(0)).unwrap();
            assert_eq!((differ, rows), (0, 3000), "{name}");
        }
    }

    #[test]
    fn memory_limit_is_the_budget_and_duckdb_gets_three_quarters() {
        // DuckDB prints the pool to a tenth of its unit: 6e9 bytes is "5.5 GiB".
        let near = |got: u64, want: f64, unit: f64| (got as f64 - want).abs() <= 0.1 * unit;
        let gib = (1u64 << 30) as f64;
        assert!(near(pool(Some("8GB")), 6e9, gib), "{}", pool(Some("8GB")));
        assert!(near(pool(Some("512MiB")), 384.0 * (1 << 20) as f64, (1 << 20) as f64), "{}", pool(Some("512MiB")));
        // A spelling only DuckDB reads: its own figure, then the share.
        // DuckDB's default pool is 80% of the machine's memory.
        let (half, unset) = (pool(Some("50%")), pool(None));
        let ratio = half as f64 / unset as f64;
        assert!((ratio - 0.5 / 0.8 * 0.75).abs() < 0.02, "50% gives {half}, the default {unset}");
    }
}
