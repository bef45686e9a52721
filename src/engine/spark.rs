//! The Spark engine (`[engine] kind = "spark"`): the source lives in a Spark
//! lakehouse and kanon reads it only in its two scans (the marginals, the base
//! frequency set) and its release write, each one Spark SQL statement sent
//! through Spark Connect. The search stays local: the scans' results come
//! back as Arrow batches into the embedded DuckDB, where every later step
//! (hierarchies, code tables, the evaluator) runs as for any other source.
//! Small local tables a remote statement reads (value → code maps, the
//! release's value maps and suppressed classes) go to the Spark session as
//! temporary views of the same name.
//!
//! The statements are the ones in `sql/`, with the session set to read
//! double-quoted identifiers (ANSI), so [`crate::sql::ident`] quotes for both
//! engines; [`dialect`] holds the few spelling differences.

use crate::engine::embedded::{statement as local, SourceColumn};
use crate::engine::remote::{RemoteEngine, WorkUse};
use crate::error::bad;
use crate::job::{Job, SecretUrl, SourceSpec};
use crate::sql::{ident, list};
use anyhow::{anyhow, Context, Result};
use duckdb::arrow::array::StructArray;
use duckdb::arrow::datatypes::DataType as ArrowType;
use duckdb::arrow::record_batch::RecordBatch;
use duckdb::types::{TimeUnit, ValueRef};
use duckdb::vtab::arrow::ArrowBatchRegistration;
use duckdb::Connection;
use spark_connect::row::{Row, Value};
use spark_connect::types::{DataType, StructField};
use spark_connect::SparkSession;
use std::collections::BTreeMap;

/// The type name of a source column whose Spark type kanon does not read.
pub(crate) const UNREAD: &str = "unread Spark type ";

/// Suffixes of the release's temporary and previous tables beside the target.
const TMP: &str = "__kanon_tmp";
const PREVIOUS: &str = "__kanon_previous";
/// Suffix of `kanon limit`'s table beside the release.
const SCRATCH: &str = "__kanon_limit";
/// What both suffixes start with.
pub(crate) const SIDE_TABLES: &str = "__kanon_";

/// The most a local table sent to Spark puts in one message (its rows as
/// Arrow): Spark Connect takes at most 128 MiB a message, so larger tables
/// (value maps of many values, millions of suppressed classes) go in parts.
const MESSAGE_BYTES: usize = 32 << 20;

/// A Spark Connect session for one run.
pub struct Spark {
    session: SparkSession,
    /// This run's work tables in the catalog (their physical names), dropped
    /// with the session.
    work: std::cell::RefCell<Vec<String>>,
}

/// A statement as Spark spells it: `GROUPING(a, b)` is `grouping_id(a, b)`.
/// (`GROUPING SETS`, `NOT EXISTS`, `IS NOT DISTINCT FROM`, `GROUP BY ALL` and
/// `::` casts read the same.)
pub(crate) fn dialect(statement: &str) -> String {
    statement.replace("GROUPING(", "grouping_id(")
}

/// A statement of sql/spark.sql, its slots filled.
fn statement(name: &str, slots: &[(&str, &str)]) -> String {
    crate::sql::render(crate::sql::fragment(crate::sql::SPARK, name), slots)
}

fn drop_if_exists(table: &str) -> String {
    statement("drop_if_exists", &[("table", table)])
}

fn rename(from: &str, to: &str) -> String {
    statement("rename", &[("from", from), ("to", to)])
}

/// A dot-separated catalog name, each part quoted.
pub fn qualified(name: &str) -> String {
    list(name.split('.'), ".", ident)
}

/// Where the run history lives: `kanon_runs` beside the release table (its
/// namespace), dotted as the job names the release.
pub(crate) fn runs_name(job: &Job) -> String {
    // (A release named kanon_runs is refused when the run is planned.)
    let table = job.output.remote_table.as_deref().unwrap_or_default();
    let mut parts: Vec<&str> = table.split('.').collect();
    parts.pop();
    parts.push(crate::engine::commit::RUNS);
    parts.join(".")
}

impl Spark {
    /// Connect to the job's endpoint; an endpoint that does not answer is bad
    /// input naming `[engine] url`.
    pub fn connect(job: &Job, secret: &SecretUrl) -> Result<Spark> {
        let file = job.path.display();
        let url = secret.0.as_str();
        // The URL may hold a token: messages show it masked, and a client
        // error that quotes the URL is masked too.
        let unreachable = |e: &dyn std::fmt::Display| {
            bad(secret.scrub(&format!(
                "{file}: [engine] url \"{}\": cannot reach a Spark Connect server: {e}",
                secret.shown()
            )))
        };
        // The client retries a dead endpoint for minutes: a plain TCP connect
        // first tells an unreachable one in seconds.
        let address = url.trim_start_matches("sc://").split(['/', ';']).next().unwrap_or_default();
        let reachable = std::net::ToSocketAddrs::to_socket_addrs(address)
            .map_err(|e| unreachable(&e))?
            .any(|a| std::net::TcpStream::connect_timeout(&a, std::time::Duration::from_secs(10)).is_ok());
        if !reachable {
            return Err(unreachable(&"no answer on that address"));
        }
        let session = SparkSession::builder().remote(url).get_or_create().map_err(|e| unreachable(&e))?;
        // The first call is the first round trip.
        session.version().map_err(|e| unreachable(&e))?;
        let conf = session.conf();
        let settings = [("spark.sql.ansi.enabled", "true"), ("spark.sql.ansi.doubleQuotedIdentifiers", "true")];
        for (key, value) in settings {
            conf.set(key, value).with_context(|| format!("setting {key} on the Spark session"))?;
        }
        Ok(Spark { session, work: Default::default() })
    }

    /// The release table may not be the source under another spelling
    /// (`spark_catalog.lake.p` for `lake.p`: the swap would rename the source
    /// away and drop it). Compared as the catalog resolves both; exit 2.
    fn refuse_release_over_source(&self, job: &Job) -> Result<()> {
        let (SourceSpec::SparkTable { name: source }, Some(release)) = (&job.source, &job.output.remote_table) else {
            return Ok(());
        };
        let (source_id, release_id) = (self.identity(source)?, self.identity(release)?);
        let file = job.path.display();
        if source_id == release_id {
            return Err(bad(format!(
                "{file}: [output] table \"{release}\" is the source table \"{source}\"; kanon never overwrites its source"
            )));
        }
        // The swap's own tables beside the release (`…__kanon_tmp_*`, `…__kanon_previous`) are dropped.
        if source_id.0 == release_id.0
            && source_id.1 == release_id.1
            && source_id.2.starts_with(&format!("{}{}", release_id.2, SIDE_TABLES))
        {
            return Err(bad(format!(
                "{file}: the source table \"{source}\" is named as the release's swap names its own tables (\"{release}{}…\"), which it drops; rename the source or the release",
                SIDE_TABLES
            )));
        }
        Ok(())
    }

    /// `frame` as the temp view `view`; its columns as DuckDB types.
    fn view(frame: spark_connect::DataFrame, view: &str) -> Result<Vec<SourceColumn>> {
        let schema = frame.schema().map_err(|e| anyhow!("{e}"))?;
        frame.create_or_replace_temp_view(view).with_context(|| format!("defining the view {view} on Spark"))?;
        let DataType::Struct { fields } = schema else {
            return Err(anyhow!("Spark gave the table a non-struct schema"));
        };
        Ok(fields
            .iter()
            .map(|f| SourceColumn {
                name: f.name.clone(),
                type_name: duckdb_type(&f.data_type).unwrap_or_else(|| format!("{UNREAD}{}", f.data_type)),
            })
            .collect())
    }

    /// Run `select` on Spark; its rows land in the local temp table `target`
    /// (replaced). Returns the rows.
    pub fn fetch(&self, conn: &Connection, select: &str, target: &str) -> Result<u64> {
        crate::engine::embedded::register_arrow_scan(conn)?;
        let frame = self.session.sql(&dialect(select))?;
        let batches = frame.collect_record_batches().with_context(|| format!("running on Spark: {select}"))?;
        let (mut rows, mut bytes) = (0u64, 0usize);
        let mut created = false;
        for batch in batches {
            bytes += batch.columns().iter().map(|c| payload_bytes(c.as_ref())).sum::<usize>();
            let batch = to_duckdb(batch)?;
            rows += batch.num_rows() as u64;
            let registered = ArrowBatchRegistration::new(batch);
            let verb = if created { "fetched_append" } else { "fetched_create" };
            conn.execute(&local(verb, &[("target", &ident(target))]), [&registered])
                .with_context(|| format!("storing Spark's result in {target}"))?;
            created = true;
        }
        crate::trace(|| format!("spark: fetched {rows} rows, {bytes} bytes into {target}"));
        if !created {
            // No batch, no Arrow schema: the table from Spark's schema.
            let DataType::Struct { fields } = frame.schema()? else {
                return Err(anyhow!("Spark gave a result a non-struct schema"));
            };
            let columns = fields
                .iter()
                .map(|f| {
                    let t = duckdb_type(&f.data_type)
                        .ok_or_else(|| anyhow!("column \"{}\" of Spark type {:?}", f.name, f.data_type))?;
                    Ok(format!("{} {t}", ident(&f.name)))
                })
                .collect::<Result<Vec<_>>>()?;
            conn.execute_batch(&local(
                "fetched_empty",
                &[("target", &ident(target)), ("columns", &columns.join(", "))],
            ))?;
        }
        Ok(rows)
    }

    /// One row of text columns as the Spark temporary view `view` (replaced),
    /// sent as the session's data: for secrets (the pseudonym key's pads),
    /// which no statement's text (nor so any message quoting one) may hold.
    pub(crate) fn share_secret_row(&self, view: &str, row: &[(&str, String)]) -> Result<()> {
        let text = DataType::String { collation: "UTF8_BINARY".into() };
        let names: Vec<String> = row.iter().map(|(n, _)| n.to_string()).collect();
        let values = row.iter().map(|(_, v)| Value::String(v.clone())).collect();
        let schema = DataType::Struct {
            fields: names
                .iter()
                .map(|n| StructField {
                    name: n.clone(),
                    data_type: text.clone(),
                    nullable: false,
                    metadata: BTreeMap::new(),
                })
                .collect(),
        };
        self.session
            .create_dataframe(vec![Row::new(names, values)], schema)
            .and_then(|frame| frame.create_or_replace_temp_view(view))
            .map_err(|_| anyhow!("sending the pseudonymization key to the Spark session failed"))?;
        Ok(())
    }

    /// Run a statement on Spark for its effect.
    pub fn execute(&self, statement: &str) -> Result<()> {
        self.session
            .sql(&dialect(statement))?
            .collect_record_batches()
            .with_context(|| format!("running on Spark: {statement}"))?;
        Ok(())
    }

    /// Spark's physical plan of `select`, for the trace (or why there is none).
    fn plan(&self, select: &str) -> String {
        let explained = match self.session.sql(&statement("explain", &[("select", &dialect(select))])) {
            Ok(frame) => frame.collect_record_batches(),
            Err(e) => return e.to_string(),
        };
        let batches = match explained {
            Ok(batches) => batches,
            Err(e) => return e.to_string(),
        };
        let column = batches.first().map(|b| b.column(0).clone());
        column
            .as_ref()
            .and_then(|c| c.as_any().downcast_ref::<arrow58::array::StringArray>())
            .map_or_else(|| "no plan".into(), |plan| plan.value(0).to_string())
    }

    fn count(&self, relation: &str) -> Result<u64> {
        let batches = self.session.sql(&statement("count", &[("relation", relation)]))?.collect_record_batches()?;
        let batch = batches.first().context("a count from Spark")?;
        let n = batch
            .column(0)
            .as_any()
            .downcast_ref::<arrow58::array::Int64Array>()
            .context("a count from Spark")?
            .value(0);
        Ok(n as u64)
    }

    /// Whether Spark's catalog has the table `name`.
    pub fn exists(&self, name: &str) -> Result<bool> {
        Ok(self.session.catalog().table_exists(name)?)
    }

    /// A run killed between the swap's two renames left the previous release
    /// under its `__kanon_previous` name and none under the target's: put it
    /// back. Called by the release only: `kanon check` changes nothing.
    pub fn recover(&self, table: &str) -> Result<()> {
        let previous = format!("{table}{PREVIOUS}");
        if !self.exists(table)? && self.exists(&previous)? {
            self.execute(&rename(&qualified(&previous), &qualified(table)))?;
        }
        Ok(())
    }

    /// `name` as Spark's catalog resolves it: (catalog, namespace, table),
    /// lower case (Spark's names are case-insensitive), the session's current
    /// catalog and namespace filling the parts a name leaves out.
    pub(crate) fn identity(&self, name: &str) -> Result<(String, String, String)> {
        let parts: Vec<String> = name.split('.').map(|p| p.trim_matches('`').to_lowercase()).collect();
        let catalog = self.session.catalog();
        let current = || -> Result<(String, String)> {
            Ok((catalog.current_catalog()?.to_lowercase(), catalog.current_database()?.to_lowercase()))
        };
        Ok(match parts.as_slice() {
            [t] => {
                let (c, ns) = current()?;
                (c, ns, t.clone())
            }
            [ns, t] => (current()?.0, ns.clone(), t.clone()),
            [c, ns @ .., t] => (c.clone(), ns.join("."), t.clone()),
            [] => unreachable!("split gives a part"),
        })
    }

    /// Tables named `name` followed by anything, in `name`'s namespace (full names).
    fn tables_like(&self, name: &str) -> Result<Vec<String>> {
        let (namespace, last) = match name.rsplit_once('.') {
            Some((ns, last)) => (Some(ns), last),
            None => (None, name),
        };
        let show = match namespace {
            Some(ns) => statement("show_tables_in", &[("namespace", &qualified(ns)), ("pattern", last)]),
            None => statement("show_tables", &[("pattern", last)]),
        };
        // SHOW TABLES's LIKE takes a pattern of its own ('*' any, '|' or): the
        // name's own characters other than letters, digits and '_' make it
        // match nothing, never something else.
        if !last.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        for batch in self.session.sql(&show)?.collect_record_batches()? {
            let Some(names) = batch.column_by_name("tableName") else { continue };
            let names = names.as_any().downcast_ref::<arrow58::array::StringArray>().context("SHOW TABLES names")?;
            let temporary = batch
                .column_by_name("isTemporary")
                .and_then(|c| c.as_any().downcast_ref::<arrow58::array::BooleanArray>().cloned());
            for i in 0..arrow58::array::Array::len(names) {
                if temporary.as_ref().is_some_and(|t| t.value(i)) {
                    continue;
                }
                let n = names.value(i);
                out.push(match namespace {
                    Some(ns) => format!("{ns}.{n}"),
                    None => n.to_string(),
                });
            }
        }
        Ok(out)
    }
}

/// A work table's name in the catalog: the run's own (process and start
/// time), so that runs at once do not meet.
fn work_table(name: &str) -> String {
    static RUN: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let run = RUN.get_or_init(|| {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        format!("{}_{:x}", std::process::id(), nanos & 0xffff_ffff)
    });
    format!("kanon_work_{run}_{name}")
}

impl Drop for Spark {
    /// The run's work tables go with it (a killed run's stay, named kanon_work_*),
    /// then the session is released: the server would otherwise keep it (and
    /// what it holds) until its idle timeout, and run out of memory after a
    /// few dozen runs.
    fn drop(&mut self) {
        for name in self.work.take() {
            let _ = self.drop_work(&name);
        }
        let _ = self.session.stop();
    }
}

impl RemoteEngine for Spark {
    fn name(&self) -> &'static str {
        "Spark"
    }

    fn unread(&self) -> &'static str {
        UNREAD
    }

    fn same_value(&self, left: &str, right: &str, duckdb_type: &str, nullable: bool) -> String {
        let integer = matches!(duckdb_type, "TINYINT" | "SMALLINT" | "INTEGER" | "BIGINT" | "DATE");
        let name = match duckdb_type {
            "VARCHAR" => "same_value",
            _ if integer && !nullable => "same_integer",
            _ => "same_other",
        };
        statement(name, &[("left", left), ("right", right)])
    }

    /// Expose the job's source as the temporary view `kanon_source`; return its
    /// columns with the DuckDB type each arrives as. A release that is the
    /// source under another name is refused first.
    fn open_source(&self, job: &Job) -> Result<Vec<SourceColumn>> {
        self.refuse_release_over_source(job)?;
        let file = job.path.display();
        let frame = match &job.source {
            SourceSpec::SparkTable { name } => {
                let exists =
                    self.session.catalog().table_exists(name).map_err(|e| {
                        bad(format!("{file}: [source] table \"{name}\": Spark's catalog cannot tell: {e}"))
                    })?;
                if !exists {
                    return Err(bad(format!("{file}: [source] table \"{name}\" not found in Spark's catalog")));
                }
                self.session.table(name)
            }
            SourceSpec::SparkParquet { path } => Ok(self.session.read().parquet(path)),
            _ => unreachable!("a Spark job has a Spark source"),
        };
        let frame = frame.map_err(|e| bad(format!("{file}: [source] {}: {e}", job.source.describe())))?;
        Self::view(frame, "kanon_source").map_err(|e| bad(format!("{file}: [source] {}: {e:#}", job.source.describe())))
    }

    /// The catalog's table `name` as the temp view `view`; its columns as
    /// DuckDB types, or None when the catalog has no such table.
    fn open_table(&self, name: &str, view: &str) -> Result<Option<Vec<SourceColumn>>> {
        let exists = self
            .session
            .catalog()
            .table_exists(name)
            .map_err(|e| anyhow!("table \"{name}\": Spark's catalog cannot tell: {e}"))?;
        if !exists {
            return Ok(None);
        }
        let frame = self.session.table(name).map_err(|e| anyhow!("table \"{name}\": {e}"))?;
        Self::view(frame, view).map(Some)
    }

    /// The rows of the local query `select` (with `params`) as the Spark
    /// temporary view `view` (replaced).
    fn share(&self, conn: &Connection, select: &str, params: &[i64], view: &str) -> Result<()> {
        let mut stmt = conn.prepare(select)?;
        let mut rows = stmt.query(duckdb::params_from_iter(params))?;
        let names: Vec<String> = rows.as_ref().context("a shared query's columns")?.column_names();
        let types: Vec<ArrowType> =
            (0..names.len()).map(|i| rows.as_ref().map(|s| s.column_type(i)).unwrap_or(ArrowType::Null)).collect();
        let spark_types: Vec<(DataType, Option<String>)> = names
            .iter()
            .zip(&types)
            .map(|(n, t)| spark_type(t).ok_or_else(|| anyhow!("column \"{n}\" of type {t} cannot go to Spark")))
            .collect::<Result<_>>()?;
        // The rows in parts of at most `limit` bytes (KANON_SPARK_MESSAGE_BYTES
        // lowers it, for the tests of the parts).
        let limit =
            std::env::var("KANON_SPARK_MESSAGE_BYTES").ok().and_then(|v| v.parse().ok()).unwrap_or(MESSAGE_BYTES);
        let mut parts: Vec<Vec<Row>> = vec![Vec::new()];
        let mut bytes = 0;
        while let Some(r) = rows.next()? {
            let mut values = Vec::with_capacity(names.len());
            let mut row_bytes = 0;
            for i in 0..names.len() {
                let v = spark_value(r.get_ref(i)?, &types[i])?;
                row_bytes += value_bytes(&v);
                values.push(v);
            }
            if bytes + row_bytes > limit && !parts.last().is_some_and(Vec::is_empty) {
                parts.push(Vec::new());
                bytes = 0;
            }
            bytes += row_bytes;
            parts.last_mut().expect("a part").push(Row::new(names.clone(), values));
        }
        let schema = DataType::Struct {
            fields: names
                .iter()
                .zip(&spark_types)
                .map(|(n, (t, _))| StructField {
                    name: n.clone(),
                    data_type: t.clone(),
                    nullable: true,
                    metadata: BTreeMap::new(),
                })
                .collect(),
        };
        let casts = spark_types.iter().any(|(_, cast)| cast.is_some());
        let raw = if casts || parts.len() > 1 { format!("{view}_text") } else { view.to_string() };
        if parts.len() == 1 {
            let rows = parts.pop().expect("a part");
            self.session.create_dataframe(rows, schema)?.create_or_replace_temp_view(&raw)?;
        } else {
            // Each part a view of its own, one message each; their union is the table.
            let count = parts.len();
            for (i, rows) in parts.into_iter().enumerate() {
                self.session
                    .create_dataframe(rows, schema.clone())?
                    .create_or_replace_temp_view(&format!("{view}_part{i}"))
                    .with_context(|| format!("sending part {} of {count} of {view} to Spark", i + 1))?;
            }
            let union =
                list(0..count, " UNION ALL ", |i| statement("part", &[("part", &ident(&format!("{view}_part{i}")))]));
            self.execute(&statement("union_view", &[("view", &ident(&raw)), ("union", &union)]))?;
        }
        if raw != view {
            // Types sent as text (decimals, timestamps) are cast back on Spark.
            let columns = list(names.iter().zip(&spark_types), ", ", |(n, (_, cast))| match cast {
                Some(t) => format!("CAST({} AS {t}) AS {}", ident(n), ident(n)),
                None => ident(n),
            });
            self.execute(&statement(
                "cast_view",
                &[("view", &ident(view)), ("columns", &columns), ("raw", &ident(&raw))],
            ))?;
        }
        Ok(())
    }

    /// Write `select` as the table `table` of Spark's catalog: built under a
    /// temporary name of this run's own, then swapped in by two renames
    /// (Spark's catalog has no transaction; see docs/spark.md, "Running on
    /// Spark"). `after_swap` (the run history's row) runs with the new table
    /// in place; if it or the second rename fails, the previous release is
    /// renamed back. Returns the rows.
    fn write_table(
        &self,
        table: &str,
        select: &str,
        after_swap: Option<&crate::engine::commit::BeforeCommit>,
    ) -> Result<u64> {
        self.recover(table)?;
        // A killed run's temporary table (Spark may have finished writing it
        // after the client died): dropped on a best-effort basis.
        for stale in self.tables_like(&format!("{table}{TMP}"))? {
            let _ = self.execute(&drop_if_exists(&qualified(&stale)));
        }
        let run = self.session.session_id().chars().filter(char::is_ascii_alphanumeric).take(12).collect::<String>();
        let (tmp, previous) = (format!("{table}{TMP}_{run}"), format!("{table}{PREVIOUS}"));
        let (q_tmp, q_previous, q_table) = (qualified(&tmp), qualified(&previous), qualified(table));
        let drop_tmp = || {
            let _ = self.execute(&drop_if_exists(&q_tmp));
        };
        let started = std::time::Instant::now();
        let trace =
            |what: &str| crate::trace(|| format!("spark: release {what}: {:.3}s", started.elapsed().as_secs_f64()));
        crate::trace(|| format!("spark: the plan of the release:\n{}", self.plan(select)));
        let built = self
            .execute(&statement("create_parquet", &[("table", &q_tmp), ("select", select)]))
            .context("writing the release on Spark")
            .inspect(|()| trace("written"))
            .and_then(|()| self.count(&q_tmp))
            .inspect(|_| trace("counted"))
            .and_then(|rows| self.execute(&drop_if_exists(&q_previous)).map(|()| rows));
        let rows = built.inspect_err(|_| drop_tmp())?;
        let had_previous = self.exists(table)?;
        if had_previous {
            self.execute(&rename(&q_table, &q_previous)).inspect_err(|_| drop_tmp())?;
        }
        // From here until the previous release is dropped, a failure renames it back.
        let swapped = crate::fault("spark-between-renames")
            .and_then(|()| self.execute(&rename(&q_tmp, &q_table)))
            .and_then(|()| {
                let target = crate::engine::commit::CommitTarget::Spark(self);
                after_swap.map_or(Ok(()), |f| f(target, rows).context("after the release's swap on Spark"))
            });
        if let Err(e) = swapped {
            if self.exists(&tmp).unwrap_or(false) {
                drop_tmp();
            } else {
                let _ = self.execute(&drop_if_exists(&q_table));
            }
            if had_previous {
                self.execute(&rename(&q_previous, &q_table)).with_context(|| {
                    format!("{e:#}; putting the previous release back failed: the next run restores it from {previous}")
                })?;
            }
            return Err(e);
        }
        self.execute(&drop_if_exists(&q_previous))?;
        trace("swapped, its history row appended");
        Ok(rows)
    }

    fn fetch(&self, conn: &Connection, select: &str, target: &str) -> Result<u64> {
        Spark::fetch(self, conn, select, target)
    }

    fn share_key(&self, key: &crate::pseudonym::Key) -> Result<fn(&str) -> String> {
        let (inner, outer) = key.pads_hex();
        self.share_secret_row("kanon_release_key", &[("inner", inner), ("outer", outer)])?;
        Ok(|column| statement("pseudonym", &[("column", column)]))
    }

    fn spelling(&self, name: &str) -> &'static str {
        crate::sql::fragment(crate::sql::SPARK, name)
    }

    /// Written as a Parquet table of the catalog, seen as the temporary view
    /// `name`: a view over a query would name the work tables it was made
    /// from, which may go first. Never cached, the base set neither: the
    /// rollups read its Parquet as fast as a cache (10M near-unique rows,
    /// local[2]: 4.7-4.9 s a rollup either way), and caching its query cost
    /// 7.8 s more than writing it (26.8 s against 19.0 s). `work` tells
    /// PostgreSQL's planner settings; Spark has none to change.
    fn create_work(&self, name: &str, select: &str, _work: WorkUse) -> Result<Option<u64>> {
        self.drop_work(name)?;
        let table = ident(&work_table(name));
        self.work.borrow_mut().push(name.to_string());
        self.execute(&statement("create_parquet", &[("table", &table), ("select", select)]))?;
        self.execute(&statement("work_view", &[("name", &ident(name)), ("table", &table)]))?;
        Ok(None)
    }

    fn drop_work(&self, name: &str) -> Result<()> {
        let table = ident(&work_table(name));
        self.execute(&drop_if_exists(&table))?;
        self.execute(&statement("drop_work_view", &[("name", &table)]))?;
        self.execute(&statement("drop_work_view", &[("name", &ident(name))]))?;
        self.work.borrow_mut().retain(|w| w != name);
        Ok(())
    }

    fn write_scratch(&self, table: &str, select: &str) -> Result<u64> {
        // Beside the release, under the swap's own suffix (never a source's name).
        let scratch = qualified(&format!("{table}{SCRATCH}"));
        self.execute(&drop_if_exists(&scratch))?;
        let written = self
            .execute(&statement("create_parquet", &[("table", &scratch), ("select", select)]))
            .and_then(|()| self.count(&scratch));
        let dropped = self.execute(&drop_if_exists(&scratch));
        let rows = written?;
        dropped?;
        Ok(rows)
    }

    fn history(&self, job: &Job) -> Result<Option<String>> {
        let runs = runs_name(job);
        Ok(self.exists(&runs)?.then(|| qualified(&runs)))
    }
}

impl crate::engine::commit::AppendRow for Spark {
    /// Append one row to the table `table` (created when missing with the
    /// columns `create` spells), its values sent as the session's data, never
    /// in a statement's text.
    fn append_row(&self, table: &str, create: &str, row: Vec<(&str, Value, DataType)>) -> Result<()> {
        self.execute(create)?;
        let names: Vec<String> = row.iter().map(|(n, _, _)| n.to_string()).collect();
        let schema = DataType::Struct {
            fields: row
                .iter()
                .map(|(n, _, t)| StructField {
                    name: n.to_string(),
                    data_type: t.clone(),
                    nullable: true,
                    metadata: BTreeMap::new(),
                })
                .collect(),
        };
        let values = row.into_iter().map(|(_, v, _)| v).collect();
        self.session
            .create_dataframe(vec![Row::new(names.clone(), values)], schema)?
            .create_or_replace_temp_view("kanon_appended_row")?;
        self.execute(&statement(
            "append_row",
            &[("table", &qualified(table)), ("columns", &list(&names, ", ", |n| ident(n)))],
        ))
    }
}

/// About the bytes a value takes in a message's Arrow rows.
fn value_bytes(v: &Value) -> usize {
    match v {
        Value::String(s) => s.len() + 4,
        Value::Binary(b) => b.len() + 4,
        Value::Decimal { value, .. } => value.len() + 4,
        _ => 8,
    }
}

/// The bytes an array's values take on the wire (its rows' share of the
/// buffers: a sliced batch reports its whole buffers' capacity otherwise).
fn payload_bytes(a: &dyn arrow58::array::Array) -> usize {
    use arrow58::array::AsArray;
    let rows = a.len();
    let validity = if a.null_count() > 0 { rows.div_ceil(8) } else { 0 };
    validity
        + match a.data_type() {
            t if t.primitive_width().is_some() => rows * t.primitive_width().unwrap_or(0),
            arrow58::datatypes::DataType::Utf8 => {
                let s = a.as_string::<i32>();
                let offsets = s.value_offsets();
                4 * (rows + 1) + (offsets[rows] - offsets[0]) as usize
            }
            _ => a.get_array_memory_size(),
        }
}

/// A batch from the Spark client's Arrow (58) as DuckDB's Arrow (60): both
/// speak the Arrow C data interface, so the buffers move, not the values.
fn to_duckdb(batch: arrow58::record_batch::RecordBatch) -> Result<RecordBatch> {
    let data = arrow58::array::Array::to_data(&arrow58::array::StructArray::from(batch));
    let (array, schema) = arrow58::ffi::to_ffi(&data)?;
    // Safety: FFI_ArrowArray and FFI_ArrowSchema are the C data interface's
    // #[repr(C)] structs, the same layout in both Arrow versions; ownership
    // (and the release callback) passes to the import.
    let data = unsafe {
        let array: duckdb::arrow::ffi::FFI_ArrowArray = std::mem::transmute(array);
        let schema: duckdb::arrow::ffi::FFI_ArrowSchema = std::mem::transmute(schema);
        duckdb::arrow::ffi::from_ffi(array, &schema)?
    };
    let batch = RecordBatch::from(StructArray::from(data));
    debug_assert_eq!(batch.num_columns(), batch.schema().fields().len());
    Ok(batch)
}

/// The DuckDB type a Spark column arrives as (through Arrow), or None for a
/// type kanon does not read (arrays, maps, structs, intervals, variants).
pub(crate) fn duckdb_type(t: &DataType) -> Option<String> {
    Some(
        match t {
            DataType::Boolean => "BOOLEAN",
            DataType::Byte => "TINYINT",
            DataType::Short => "SMALLINT",
            DataType::Integer => "INTEGER",
            DataType::Long => "BIGINT",
            DataType::Float => "FLOAT",
            DataType::Double => "DOUBLE",
            DataType::String { .. } | DataType::Char { .. } | DataType::Varchar { .. } => "VARCHAR",
            DataType::Binary => "BLOB",
            DataType::Date => "DATE",
            DataType::Timestamp => "TIMESTAMP WITH TIME ZONE",
            DataType::TimestampNtz => "TIMESTAMP",
            DataType::Decimal { precision, scale } => return Some(format!("DECIMAL({precision},{scale})")),
            _ => return None,
        }
        .to_string(),
    )
}

/// The Spark type a local column (of Arrow type `t`) is sent as, and when it
/// is sent as text, the Spark type to cast it back to.
fn spark_type(t: &ArrowType) -> Option<(DataType, Option<String>)> {
    let text = DataType::String { collation: "UTF8_BINARY".into() };
    Some(match t {
        ArrowType::Boolean => (DataType::Boolean, None),
        ArrowType::Int8 => (DataType::Byte, None),
        ArrowType::Int16 => (DataType::Short, None),
        ArrowType::Int32 => (DataType::Integer, None),
        ArrowType::Int64 => (DataType::Long, None),
        ArrowType::Float32 => (DataType::Float, None),
        ArrowType::Float64 => (DataType::Double, None),
        ArrowType::Utf8 | ArrowType::LargeUtf8 | ArrowType::Utf8View => (text, None),
        ArrowType::Date32 => (DataType::Date, None),
        ArrowType::Timestamp(_, Some(_)) => (text, Some("TIMESTAMP".into())),
        ArrowType::Timestamp(_, None) => (text, Some("TIMESTAMP_NTZ".into())),
        ArrowType::Decimal128(p, s) => (text, Some(format!("DECIMAL({p},{s})"))),
        _ => return None,
    })
}

/// One local value as Spark's; decimals and timestamps as their text.
fn spark_value(v: ValueRef<'_>, t: &ArrowType) -> Result<Value> {
    Ok(match v {
        ValueRef::Null => Value::Null,
        ValueRef::Boolean(b) => Value::Bool(b),
        ValueRef::TinyInt(x) => Value::Byte(x),
        ValueRef::SmallInt(x) => Value::Short(x),
        ValueRef::Int(x) => Value::Integer(x),
        ValueRef::BigInt(x) => Value::Long(x),
        ValueRef::Float(x) => Value::Float(x),
        ValueRef::Double(x) => Value::Double(x),
        ValueRef::Text(s) => Value::String(String::from_utf8_lossy(s).into_owned()),
        ValueRef::Date32(d) => Value::Date(d),
        ValueRef::Timestamp(unit, x) => Value::String(timestamp_text(unit, x, t)),
        ValueRef::Decimal(d) => Value::String(d.to_string()),
        other => return Err(anyhow!("a value of type {t} ({:?}) cannot go to Spark", other.data_type())),
    })
}

/// A timestamp as text Spark casts back exactly (UTC for TIMESTAMP WITH TIME ZONE).
fn timestamp_text(unit: TimeUnit, x: i64, t: &ArrowType) -> String {
    let micros = match unit {
        TimeUnit::Second => x.saturating_mul(1_000_000),
        TimeUnit::Millisecond => x.saturating_mul(1_000),
        TimeUnit::Microsecond => x,
        TimeUnit::Nanosecond => x.div_euclid(1_000),
    };
    let zone = if matches!(t, ArrowType::Timestamp(_, Some(_))) { "Z" } else { "" };
    match chrono::DateTime::from_timestamp_micros(micros) {
        Some(at) => format!("{}{zone}", at.naive_utc().format("%Y-%m-%dT%H:%M:%S%.6f")),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use duckdb::arrow::datatypes::TimeUnit as ArrowUnit;

    #[test]
    fn timestamps_go_as_text_spark_reads() {
        let (plain, zoned) = (
            ArrowType::Timestamp(ArrowUnit::Microsecond, None),
            ArrowType::Timestamp(ArrowUnit::Microsecond, Some("UTC".into())),
        );
        assert_eq!(timestamp_text(TimeUnit::Second, 1_704_067_200, &plain), "2024-01-01T00:00:00.000000");
        assert_eq!(timestamp_text(TimeUnit::Microsecond, 1_500_000, &plain), "1970-01-01T00:00:01.500000");
        assert_eq!(timestamp_text(TimeUnit::Microsecond, -1, &zoned), "1969-12-31T23:59:59.999999Z");
    }

    #[test]
    fn names_quote_each_part() {
        assert_eq!(qualified("lake.patients"), "\"lake\".\"patients\"");
        assert_eq!(dialect("SELECT GROUPING(v0, v1) AS gid"), "SELECT grouping_id(v0, v1) AS gid");
    }
}
