//! The PostgreSQL engine (`[engine] kind = "postgres"`): the source is a
//! table of a PostgreSQL database, and kanon reads it only in its two scans
//! (the marginals, the base frequency set) and its release, each one
//! statement run there, as on Spark ([`crate::engine::spark`]). Results come back
//! with `COPY … TO STDOUT` (text format) into the embedded DuckDB in
//! batches; small local tables a statement reads (value → code maps, the
//! release's value maps, the suppressed classes) go to the session as
//! temporary tables of the same name with `COPY … FROM STDIN`.
//!
//! The release is built and swapped in one transaction: PostgreSQL's DDL is
//! transactional, so a kill at any moment leaves the old release or the new
//! one, and another connection never sees a partial table.
//!
//! The password comes from the URL, `PGPASSWORD` or the password file
//! (`PGPASSFILE`, else `~/.pgpass`), as libpq looks for it; no message,
//! report or log shows the URL, only host, port, database and user.

use crate::engine::embedded::{statement as local, SourceColumn};
use crate::engine::remote::{RemoteEngine, WorkUse};
use crate::error::bad;
use crate::job::{Job, SourceSpec};
use crate::sql::{ident, list};
use anyhow::{anyhow, Context, Result};
use duckdb::arrow::array::{ArrayRef, StringArray};
use duckdb::arrow::datatypes::{DataType as ArrowType, Field, Schema};
use duckdb::arrow::record_batch::RecordBatch;
use duckdb::vtab::arrow::ArrowBatchRegistration;
use duckdb::Connection;
use postgres::config::Host;
use postgres::error::SqlState;
use postgres::types::Type;
use postgres::{Client, Config, GenericClient, NoTls};
use std::cell::RefCell;
use std::io::{BufRead, Write};
use std::sync::Arc;
use std::time::Duration;

mod tls;

/// The type name of a source column whose PostgreSQL type kanon does not read.
pub(crate) const UNREAD: &str = "unread PostgreSQL type ";

pub use crate::job::SecretUrl as Url;

/// Rows per batch brought back into DuckDB.
const BATCH: usize = 64 * 1024;

/// A PostgreSQL session for one run.
pub struct Postgres {
    client: RefCell<Client>,
    /// host:port/database as user, for messages.
    at: String,
    /// The job file, for messages.
    file: String,
    /// The source's schema once it is opened: where a release named without
    /// one goes (never where the search_path would put it).
    source_schema: RefCell<Option<String>>,
    /// The run's work schema, once made (`Some(None)`: the user may not
    /// create one, and work tables are temp tables).
    work: RefCell<Option<Option<String>>>,
}

/// A table's place in PostgreSQL's catalog: its schema and name as stored
/// there (what two spellings of one table have in common).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Place {
    pub(crate) schema: String,
    pub(crate) name: String,
}

impl Place {
    /// Quoted, schema-qualified: names this table whatever the search_path.
    pub(crate) fn quoted(&self) -> String {
        format!("{}.{}", ident(&self.schema), ident(&self.name))
    }

    /// For messages.
    pub(crate) fn shown(&self) -> String {
        format!("{}.{}", self.schema, self.name)
    }

    /// A job's table name (`table` or `schema.table`) in `default_schema`
    /// unless it names one; None for more than two parts.
    fn of(name: &str, default_schema: &str) -> Option<Place> {
        match name.split('.').collect::<Vec<_>>().as_slice() {
            [table] => Some(Place { schema: default_schema.to_string(), name: table.to_string() }),
            [schema, table] => Some(Place { schema: schema.to_string(), name: table.to_string() }),
            _ => None,
        }
    }
}

/// A relation the catalog has: its oid, place and kind (`pg_class.relkind`).
struct Found {
    oid: u32,
    place: Place,
    kind: String,
}

impl Found {
    /// What it is, for messages.
    fn what(&self) -> &'static str {
        match self.kind.as_str() {
            "r" | "p" => "table",
            "v" => "view",
            "m" => "materialized view",
            "f" => "foreign table",
            "S" => "sequence",
            _ => "relation",
        }
    }
}

/// A statement of sql/postgres.sql, its slots filled.
fn statement(name: &str, slots: &[(&str, &str)]) -> String {
    crate::sql::render(crate::sql::fragment(crate::sql::POSTGRES, name), slots)
}

/// A named statement of sql/postgres_catalog.sql.
fn catalog(name: &str) -> &'static str {
    crate::sql::fragment(crate::sql::POSTGRES_CATALOG, name)
}

/// The relation `quoted` names, as the session's search_path resolves it
/// (`to_regclass`); None when there is none. `quoted` must be a valid name
/// (in a transaction a syntax error would abort it).
fn find(client: &mut impl GenericClient, quoted: &str) -> Result<Option<Found>> {
    let row = client.query_opt(catalog("find"), &[&quoted])?;
    Ok(row.map(|r| Found { oid: r.get(0), place: Place { schema: r.get(1), name: r.get(2) }, kind: r.get(3) }))
}

/// A table's columns: name, type oid, type modifier, in order.
fn table_columns(client: &mut impl GenericClient, oid: u32) -> Result<Vec<(String, u32, i32)>> {
    Ok(client.query(catalog("columns"), &[&oid])?.iter().map(|r| (r.get(0), r.get(1), r.get(2))).collect())
}

/// Does the relation `reader` read `table`: is it that table, or a view
/// (at any depth) over it?
fn reads(client: &mut impl GenericClient, reader: u32, table: u32) -> Result<bool> {
    Ok(client.query_one(catalog("reads"), &[&reader, &table])?.get(0))
}

/// What depends on the table `oid` from outside it (views, materialized
/// views, other tables' foreign keys, SQL functions…), for messages.
fn dependents(client: &mut impl GenericClient, oid: u32) -> Result<Vec<String>> {
    Ok(client.query(catalog("dependents"), &[&oid])?.iter().filter_map(|r| r.get::<_, Option<String>>(0)).collect())
}

/// How the release's columns (`now`) differ from the table's (`had`), as
/// PostgreSQL spells the types.
fn difference(
    client: &mut impl GenericClient,
    had: &[(String, u32, i32)],
    now: &[(String, u32, i32)],
) -> Result<String> {
    let mut type_name = |oid: u32, typmod: i32| -> Result<String> {
        Ok(client.query_one(catalog("type_name"), &[&oid, &typmod])?.get(0))
    };
    for (name, oid, typmod) in now {
        match had.iter().find(|(n, _, _)| n == name) {
            None => return Ok(format!("a new column \"{name}\"")),
            Some((_, o, t)) if (o, t) != (oid, typmod) => {
                return Ok(format!(
                    "column \"{name}\" is {} now, {} there",
                    type_name(*oid, *typmod)?,
                    type_name(*o, *t)?
                ))
            }
            Some(_) => {}
        }
    }
    Ok(match had.iter().find(|(n, _, _)| !now.iter().any(|(m, _, _)| m == n)) {
        Some((name, _, _)) => format!("no column \"{name}\" any more"),
        None => "other columns".into(),
    })
}

/// The new table `tmp` gets what the release `oid` had that a new table
/// lacks: its grants (table-level) and its owner.
fn carry_over(tx: &mut postgres::Transaction, oid: u32, tmp: &str) -> Result<()> {
    let privileges = statement("privileges", &[]);
    let privileges: Vec<&str> = privileges.split(", ").collect();
    let grants = tx.query(catalog("grants"), &[&oid])?;
    for g in grants {
        let (role, privilege, grantable): (Option<String>, String, bool) = (g.get(0), g.get(1), g.get(2));
        if !privileges.contains(&privilege.as_str()) {
            continue;
        }
        let to = role.as_deref().map_or_else(|| "PUBLIC".to_string(), ident);
        let grant = if grantable { "grant_with_option" } else { "grant" };
        tx.batch_execute(&statement(grant, &[("privilege", &privilege), ("table", tmp), ("role", &to)]))
            .with_context(|| format!("granting {privilege} to {to} on the new release"))?;
    }
    let owner = tx.query_one(catalog("owner"), &[&oid])?;
    if owner.get::<_, bool>(1) {
        let name: String = owner.get(0);
        tx.batch_execute(&statement("owner", &[("table", tmp), ("owner", &ident(&name))]))
            .with_context(|| format!("giving the new release to its previous owner {}", ident(&name)))?;
    }
    Ok(())
}

/// `CREATE TABLE table AS select` in `tx` (`create`: which, a section of
/// sql/postgres.sql); the rows. PostgreSQL may run CREATE TABLE AS in
/// parallel (never INSERT … SELECT), but every row goes to the leader, and
/// at the default cost of passing a row up (`parallel_tuple_cost`) it
/// plans the release serially: the transaction lowers that cost, so the
/// workers share the per-row work (labels, the anti-join). Under
/// KANON_TRACE the plan first: a parallel one has a Gather.
fn create_as(tx: &mut postgres::Transaction, create: &str, table: &str, select: &str) -> Result<u64> {
    tx.batch_execute(&statement("parallel_release", &[]))?;
    let create = statement(create, &[("table", table), ("select", select)]);
    crate::trace(|| {
        let plan = tx.query(&statement("explain", &[("statement", &create)]), &[]);
        let plan = plan.map(|rows| rows.iter().map(|r| r.get::<_, String>(0)).collect::<Vec<_>>().join("\n  "));
        format!("postgres: the plan of {table}:\n  {}", plan.unwrap_or_else(|e| e.to_string()))
    });
    tx.execute(&create, &[]).context("writing the release on PostgreSQL")
}

/// A statement as PostgreSQL spells it: it has no TINYINT (the narrowest
/// integer the base set's codes take elsewhere).
fn dialect(statement: &str) -> String {
    statement.replace("::TINYINT", "::SMALLINT")
}

/// `left IS NOT DISTINCT FROM right` as PostgreSQL can hash-join it: it
/// cannot hash `IS NOT DISTINCT FROM`, and a nested loop over the source and
/// a value map is quadratic. A column with no NULL (`nullable` false: its
/// marginal has none) joins on plain `=`, which the planner estimates from
/// the column's statistics. Otherwise the NULL tests equal, and the values
/// equal with NULL replaced by any value of the column's type (`duckdb_type`,
/// as the source column arrives): together, NULL matches NULL and nothing else.
pub(crate) fn same_value(left: &str, right: &str, duckdb_type: &str, nullable: bool) -> String {
    if !nullable {
        return format!("{left} = {right}");
    }
    let t = duckdb_type.to_ascii_uppercase();
    let any = match t.as_str() {
        "VARCHAR" => "''",
        "BOOLEAN" => "false",
        "DATE" => "DATE '2000-01-01'",
        "TIMESTAMPTZ" | "TIMESTAMP WITH TIME ZONE" => "TIMESTAMPTZ '2000-01-01 00:00:00+00'",
        "TIMESTAMP" => "TIMESTAMP '2000-01-01'",
        _ => "0",
    };
    statement("same_value", &[("left", left), ("right", right), ("any", any)])
}

/// A dot-separated table name, each part quoted.
pub fn qualified(name: &str) -> String {
    list(name.split('.'), ".", ident)
}

/// The DuckDB type a PostgreSQL value arrives as (None: not read).
fn duckdb_type(t: &Type, typmod: i32) -> Option<String> {
    Some(
        match *t {
            Type::BOOL => "BOOLEAN",
            Type::INT2 => "SMALLINT",
            Type::INT4 => "INTEGER",
            Type::INT8 | Type::OID => "BIGINT",
            Type::FLOAT4 => "FLOAT",
            Type::FLOAT8 => "DOUBLE",
            Type::NUMERIC => {
                // typmod: ((precision << 16) | scale) + 4, or -1 when unconstrained.
                let (p, s) = (((typmod - 4) >> 16) & 0xffff, (typmod - 4) & 0xffff);
                return Some(if typmod >= 4 && p <= 38 { format!("DECIMAL({p},{s})") } else { "DOUBLE".into() });
            }
            Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME => "VARCHAR",
            Type::DATE => "DATE",
            Type::TIMESTAMP => "TIMESTAMP",
            Type::TIMESTAMPTZ => "TIMESTAMPTZ",
            _ => return None,
        }
        .to_string(),
    )
}

/// The PostgreSQL type a DuckDB column is sent as.
fn postgres_type(duckdb: &str) -> Result<String> {
    let t = duckdb.to_ascii_uppercase();
    Ok(match t.as_str() {
        "BOOLEAN" => "boolean".into(),
        "TINYINT" | "SMALLINT" | "UTINYINT" => "smallint".into(),
        "INTEGER" | "USMALLINT" => "integer".into(),
        "BIGINT" | "UINTEGER" => "bigint".into(),
        "FLOAT" => "real".into(),
        "DOUBLE" => "double precision".into(),
        "VARCHAR" => "text".into(),
        "DATE" => "date".into(),
        "TIMESTAMP" => "timestamp".into(),
        "TIMESTAMP WITH TIME ZONE" | "TIMESTAMPTZ" => "timestamptz".into(),
        d if d.starts_with("DECIMAL") => d.replace("DECIMAL", "numeric"),
        other => return Err(anyhow!("a column of DuckDB type {other} cannot go to PostgreSQL")),
    })
}

/// A value in COPY's text format: `\N` for NULL; backslash, tab, newline and
/// carriage return escaped.
fn copy_text(out: &mut Vec<u8>, value: Option<&str>) {
    match value {
        None => out.extend_from_slice(b"\\N"),
        Some(v) => {
            for b in v.bytes() {
                match b {
                    b'\\' => out.extend_from_slice(b"\\\\"),
                    b'\t' => out.extend_from_slice(b"\\t"),
                    b'\n' => out.extend_from_slice(b"\\n"),
                    b'\r' => out.extend_from_slice(b"\\r"),
                    _ => out.push(b),
                }
            }
        }
    }
}

/// One field of a COPY text line, unescaped (None for `\N`).
fn copy_field(field: &[u8]) -> Option<String> {
    if field == b"\\N" {
        return None;
    }
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() {
        let b = field[i];
        if b != b'\\' || i + 1 == field.len() {
            out.push(b);
            i += 1;
            continue;
        }
        let next = field[i + 1];
        i += 2;
        match next {
            b'b' => out.push(8),
            b'f' => out.push(12),
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b't' => out.push(b'\t'),
            b'v' => out.push(11),
            b'x' => {
                let digits = field[i..].iter().take(2).take_while(|c| c.is_ascii_hexdigit()).count();
                let hex = std::str::from_utf8(&field[i..i + digits]).unwrap_or("0");
                out.push(u8::from_str_radix(hex, 16).unwrap_or(0));
                i += digits;
            }
            b'0'..=b'7' => {
                let digits = 1 + field[i..].iter().take(2).take_while(|c| (b'0'..=b'7').contains(c)).count();
                let oct = std::str::from_utf8(&field[i - 1..i - 1 + digits]).unwrap_or("0");
                out.push(u8::from_str_radix(oct, 8).unwrap_or(0));
                i += digits - 1;
            }
            other => out.push(other),
        }
    }
    Some(String::from_utf8_lossy(&out).into_owned())
}

/// The password for `host:port/dbname` as `user` from a libpq password file
/// (lines `host:port:database:user:password`, `*` matching anything, `\:`
/// and `\\` escaped).
fn pgpass_lookup(text: &str, host: &str, port: u16, dbname: &str, user: &str) -> Option<String> {
    let port = port.to_string();
    for line in text.lines() {
        if line.trim_start().starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let mut fields = Vec::new();
        let mut field = String::new();
        let mut chars = line.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => field.extend(chars.next()),
                ':' if fields.len() < 4 => fields.push(std::mem::take(&mut field)),
                _ => field.push(c),
            }
        }
        fields.push(field);
        if fields.len() != 5 {
            continue;
        }
        let want = [host, port.as_str(), dbname, user];
        if fields[..4].iter().zip(want).all(|(f, w)| f == "*" || f == w) {
            return Some(fields[4].clone());
        }
    }
    None
}

impl Postgres {
    /// Connect to the job's server: the password as libpq finds it, a
    /// connect timeout of 10 s unless the URL sets one. An unreachable
    /// server or a refused login is bad input naming `[engine] url` (never its password).
    pub fn connect(job: &Job, url: &Url) -> Result<Postgres> {
        let file = job.path.display();
        let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
        let (plain, ssl) = tls::settings(&url.0, |k| std::env::var(k).ok(), home)
            .map_err(|why| bad(format!("{file}: [engine] url: {why}")))?;
        let mut config: Config = plain.parse().map_err(|_| {
            bad(format!("{file}: [engine] url is not a PostgreSQL URL (postgresql://user@host:port/database)"))
        })?;
        let user = config
            .get_user()
            .map(String::from)
            .or_else(|| std::env::var("PGUSER").ok())
            .or_else(|| std::env::var("USER").ok())
            .unwrap_or_else(|| "postgres".into());
        config.user(&user);
        let host = match config.get_hosts().first() {
            Some(Host::Tcp(h)) => h.clone(),
            Some(Host::Unix(p)) => p.display().to_string(),
            None => {
                config.host("localhost");
                "localhost".into()
            }
        };
        let port = config.get_ports().first().copied().unwrap_or(5432);
        let dbname = config.get_dbname().map(String::from).unwrap_or_else(|| user.clone());
        if config.get_password().is_none() {
            let from_file = || {
                let path = std::env::var_os("PGPASSFILE")
                    .map(std::path::PathBuf::from)
                    .or_else(|| std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".pgpass")))?;
                pgpass_lookup(&std::fs::read_to_string(path).ok()?, &host, port, &dbname, &user)
            };
            if let Some(p) = std::env::var("PGPASSWORD").ok().filter(|p| !p.is_empty()).or_else(from_file) {
                config.password(p);
            }
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(10));
        }
        let at = format!("{host}:{port}/{dbname} as \"{user}\"");
        config.ssl_mode(ssl.negotiate());
        let connected = match tls::client_config(&ssl).map_err(|why| bad(format!("{file}: [engine] url: {why}")))? {
            None => config.connect(NoTls),
            Some(c) => match config.connect(tokio_postgres_rustls::MakeRustlsConnect::new(c)) {
                // prefer / allow: a TLS handshake that fails (it verifies
                // nothing, so a protocol failure) falls back to plain, as libpq does.
                Err(e) if ssl.falls_back() && e.as_db_error().is_none() && e.to_string().contains("TLS") => {
                    config.ssl_mode(postgres::config::SslMode::Disable);
                    config.connect(NoTls)
                }
                other => other,
            },
        };
        let mut client = connected.map_err(|e| {
            let why = match e.as_db_error() {
                // A server that takes TLS connections only refuses a plain
                // one as it refuses an unknown host: say which setting did it.
                Some(db)
                    if ssl.mode == tls::Mode::Disable
                        && db.code() == &SqlState::INVALID_AUTHORIZATION_SPECIFICATION =>
                {
                    format!("{} ({}: the server may take TLS connections only)", db.message(), ssl.describe())
                }
                Some(db) => db.message().to_string(),
                None => tls::explain(&ssl, &host, &e).unwrap_or_else(|| {
                    let why = std::error::Error::source(&e).map_or_else(|| e.to_string(), |s| s.to_string());
                    match why.contains("TLS") {
                        true => format!("{why} ({})", ssl.describe()),
                        false => why,
                    }
                }),
            };
            bad(format!("{file}: [engine] url: cannot connect to PostgreSQL at {at}: {why}"))
        })?;
        client.batch_execute(&statement("session", &[])).context("setting up the PostgreSQL session")?;
        Ok(Postgres {
            client: RefCell::new(client),
            at,
            file: file.to_string(),
            source_schema: RefCell::new(None),
            work: RefCell::new(None),
        })
    }

    /// The relation a job names (`table` or `schema.table`, each part
    /// quoted), as the search_path resolves it; None when there is none (or
    /// the name cannot be one).
    fn find_named(&self, name: &str) -> Result<Option<Found>> {
        let mut client = self.client.borrow_mut();
        match find(&mut *client, &qualified(name)) {
            Ok(found) => Ok(found),
            // An improper name (too many dots): no such table.
            Err(e) if e.downcast_ref::<postgres::Error>().is_some_and(|e| e.as_db_error().is_some()) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Where the release `table` goes: its schema if it names one, else the
    /// source's.
    fn place_of(&self, table: &str) -> Result<Place> {
        let schema = self.source_schema.borrow().clone();
        let schema = match schema {
            Some(s) => s,
            // (Before the source is opened: the history's reader.)
            None => self
                .client
                .borrow_mut()
                .query_one(catalog("current_schema"), &[])?
                .get::<_, Option<String>>(0)
                .unwrap_or_else(|| "public".into()),
        };
        Place::of(table, &schema).ok_or_else(|| {
            bad(format!("{}: [output] table \"{table}\": name the release table or schema.table", self.file))
        })
    }

    /// The place of the job's release: its schema, else the source's (as a
    /// run would put it), else the session's current schema.
    fn release_place(&self, job: &Job) -> Result<Place> {
        let table = job.output.remote_table.as_deref().context("a PostgreSQL job names its release table")?;
        if self.source_schema.borrow().is_none() {
            if let SourceSpec::PostgresTable { name } = &job.source {
                if let Some(source) = self.find_named(name)? {
                    *self.source_schema.borrow_mut() = Some(source.place.schema);
                }
            }
        }
        self.place_of(table)
    }

    /// Refuse a release that would overwrite the source, a table it reads,
    /// the run history, or a relation that is not a table: exit 2, before
    /// anything is read.
    fn check_release(&self, source_name: &str, source: &Found, table: &str) -> Result<()> {
        let file = &self.file;
        let place = self.place_of(table)?;
        if place.name.eq_ignore_ascii_case(crate::engine::commit::RUNS) {
            return Err(bad(format!(
                "{file}: [output] table \"{table}\" is the run history's table ({}); name the release otherwise",
                place.shown()
            )));
        }
        if place == source.place {
            return Err(bad(format!(
                "{file}: [output] table \"{table}\" is the source table \"{source_name}\" (both are {} in PostgreSQL); kanon never overwrites its source",
                place.shown()
            )));
        }
        let Some(existing) = find(&mut *self.client.borrow_mut(), &place.quoted())? else {
            return Ok(());
        };
        if reads(&mut *self.client.borrow_mut(), source.oid, existing.oid)? {
            return Err(bad(format!(
                "{file}: [output] table \"{table}\" ({}) is read by the source \"{source_name}\", a {} over it; kanon never overwrites its source",
                place.shown(),
                source.what()
            )));
        }
        if !matches!(existing.kind.as_str(), "r" | "p") {
            return Err(bad(format!(
                "{file}: [output] table \"{table}\" ({}) is a {} in PostgreSQL; the release is a table kanon writes",
                place.shown(),
                existing.what()
            )));
        }
        Ok(())
    }

    /// Run `select` on PostgreSQL; its rows land in the local temp table
    /// `target` (replaced), streamed back with COPY in batches. Returns the rows.
    pub fn fetch(&self, conn: &Connection, select: &str, target: &str) -> Result<u64> {
        let select = dialect(select);
        let mut client = self.client.borrow_mut();
        let stmt = client.prepare(&select).with_context(|| format!("running on PostgreSQL: {select}"))?;
        let columns: Vec<(String, String)> = stmt
            .columns()
            .iter()
            .map(|c| {
                let t = duckdb_type(c.type_(), c.type_modifier())
                    .ok_or_else(|| anyhow!("column \"{}\" of PostgreSQL type {}", c.name(), c.type_()))?;
                Ok((c.name().to_string(), t))
            })
            .collect::<Result<_>>()?;
        conn.execute_batch(&local(
            "fetched_empty",
            &[("target", &ident(target)), ("columns", &list(&columns, ", ", |(n, t)| format!("{} {t}", ident(n))))],
        ))?;
        crate::engine::embedded::register_arrow_scan(conn)?;
        let schema = Arc::new(Schema::new(
            (0..columns.len()).map(|i| Field::new(format!("c{i}"), ArrowType::Utf8, true)).collect::<Vec<_>>(),
        ));
        let insert = local(
            "fetched_cast",
            &[
                ("target", &ident(target)),
                ("casts", &list(columns.iter().enumerate(), ", ", |(i, (_, t))| format!("CAST(c{i} AS {t})"))),
            ],
        );
        let flush = |batch: &mut Vec<Vec<Option<String>>>| -> Result<()> {
            if batch[0].is_empty() && !columns.is_empty() {
                return Ok(());
            }
            let arrays: Vec<ArrayRef> =
                batch.iter_mut().map(|c| Arc::new(StringArray::from(std::mem::take(c))) as ArrayRef).collect();
            let registered = ArrowBatchRegistration::new(RecordBatch::try_new(schema.clone(), arrays)?);
            conn.execute(&insert, [&registered]).with_context(|| format!("storing PostgreSQL's result in {target}"))?;
            Ok(())
        };
        let mut reader = client
            .copy_out(&statement("copy_out", &[("select", &select)]))
            .with_context(|| format!("running on PostgreSQL: {select}"))?;
        let mut batch: Vec<Vec<Option<String>>> = vec![Vec::with_capacity(BATCH); columns.len()];
        let (mut rows, mut bytes, mut line) = (0u64, 0usize, Vec::new());
        loop {
            line.clear();
            if reader.read_until(b'\n', &mut line)? == 0 {
                break;
            }
            bytes += line.len();
            let text = line.strip_suffix(b"\n").unwrap_or(&line);
            let mut fields = text.split(|&b| b == b'\t');
            for column in batch.iter_mut() {
                column.push(copy_field(fields.next().context("a short line from COPY")?));
            }
            rows += 1;
            if rows as usize % BATCH == 0 {
                flush(&mut batch)?;
            }
        }
        flush(&mut batch)?;
        crate::trace(|| format!("postgres: fetched {rows} rows, {bytes} bytes into {target}"));
        Ok(rows)
    }

    /// The rows of the local query `select` as the table `name` (`schema.table`,
    /// replaced, committed): how tests and benchmarks load a source.
    pub fn create_table(&self, conn: &Connection, select: &str, name: &str) -> Result<()> {
        self.copy_into(conn, select, &[], &qualified(name), &format!("TABLE {}", qualified(name)))
    }

    /// `select`'s rows into the table `target`, dropped and created as `create`.
    fn copy_into(&self, conn: &Connection, select: &str, params: &[i64], target: &str, create: &str) -> Result<()> {
        let described: Vec<(String, String)> = {
            let mut stmt = conn.prepare(&local("describe", &[("select", select)]))?;
            let rows = stmt.query_map(duckdb::params_from_iter(params), |r| Ok((r.get(0)?, r.get(1)?)))?;
            rows.collect::<duckdb::Result<_>>()?
        };
        let types = described.iter().map(|(_, t)| postgres_type(t)).collect::<Result<Vec<_>>>()?;
        let texts = list(described.iter(), ", ", |(n, _)| format!("CAST({} AS VARCHAR)", ident(n)));
        let mut stmt = conn.prepare(&local("as_text", &[("texts", &texts), ("select", select)]))?;
        let mut rows = stmt.query(duckdb::params_from_iter(params))?;
        let mut client = self.client.borrow_mut();
        let columns = list(described.iter().zip(&types), ", ", |((n, _), t)| format!("{} {t}", ident(n)));
        client.batch_execute(&statement(
            "replace_table",
            &[("target", target), ("create", create), ("columns", &columns)],
        ))?;
        let mut writer = client.copy_in(&statement("copy_in", &[("table", target)]))?;
        let mut buf = Vec::new();
        while let Some(r) = rows.next()? {
            for i in 0..described.len() {
                if i > 0 {
                    buf.push(b'\t');
                }
                copy_text(&mut buf, r.get::<_, Option<String>>(i)?.as_deref());
            }
            buf.push(b'\n');
            if buf.len() > 1 << 20 {
                writer.write_all(&buf)?;
                buf.clear();
            }
        }
        writer.write_all(&buf)?;
        writer.finish().with_context(|| format!("sending {target} to PostgreSQL"))?;
        client.batch_execute(&statement("analyze", &[("table", target)]))?;
        Ok(())
    }

    /// One row of text columns as the temporary table `name`, sent as COPY
    /// data: for secrets (the pseudonym key's pads), which no statement's text
    /// (nor so any message quoting one) may hold.
    pub(crate) fn share_secret_row(&self, name: &str, row: &[(&str, String)]) -> Result<()> {
        let mut client = self.client.borrow_mut();
        client.batch_execute(&statement(
            "secret_table",
            &[("table", &ident(name)), ("columns", &list(row, ", ", |(n, _)| format!("{} text", ident(n))))],
        ))?;
        let mut buf = Vec::new();
        for (i, (_, v)) in row.iter().enumerate() {
            if i > 0 {
                buf.push(b'\t');
            }
            copy_text(&mut buf, Some(v));
        }
        buf.push(b'\n');
        let sent = (|| -> Result<()> {
            let mut writer = client.copy_in(&statement("copy_in", &[("table", &ident(name))]))?;
            writer.write_all(&buf)?;
            writer.finish()?;
            Ok(())
        })();
        sent.map_err(|_| anyhow!("sending the pseudonymization key to the PostgreSQL session failed"))?;
        Ok(())
    }

    /// Does the table `qualified` (quoted) exist?
    pub(crate) fn exists(&self, qualified: &str) -> Result<bool> {
        let found: Option<u32> = self.client.borrow_mut().query_one(catalog("regclass"), &[&qualified])?.get(0);
        Ok(found.is_some())
    }

    /// The run's work schema, made at the first work or shared table
    /// (dropping those that killed runs left), first on the search_path;
    /// None when the user may not create a schema.
    fn work_schema(&self) -> Result<Option<String>> {
        if let Some(work) = self.work.borrow().clone() {
            return Ok(work);
        }
        let mut client = self.client.borrow_mut();
        for row in client.query(catalog("stale_work_schemas"), &[])? {
            let stale: String = row.get(0);
            // Another session may drop it first; nothing is lost either way.
            let _ = client.batch_execute(&statement("drop_schema", &[("schema", &ident(&stale))]));
        }
        let pid: i32 = client.query_one(catalog("backend_pid"), &[])?.get(0);
        let schema = format!("kanon_work_{pid}");
        let made = client.batch_execute(&statement("work_schema", &[("schema", &ident(&schema))])).is_ok();
        crate::trace(|| format!("postgres: work schema {schema}: {made}"));
        let work = made.then_some(schema);
        *self.work.borrow_mut() = Some(work.clone());
        Ok(work)
    }

    /// Where the release's rows are built before they are copied into a
    /// release that keeps its table: (the statement's name, the table), an
    /// unlogged table in the work schema (a temp one without it).
    fn built_rows(&self) -> Result<(&'static str, String)> {
        let name = ident("kanon_release_rows");
        Ok(match self.work_schema()? {
            Some(schema) => ("create_built", format!("{}.{name}", ident(&schema))),
            None => ("create_built_temp", format!("pg_temp.{name}")),
        })
    }

    /// Run a statement for its effect.
    pub fn execute(&self, statement: &str) -> Result<()> {
        self.client
            .borrow_mut()
            .batch_execute(&dialect(statement))
            .with_context(|| format!("running on PostgreSQL: {statement}"))
    }
}

impl Drop for Postgres {
    /// The work schema goes with the run (a killed run's, with the next run).
    fn drop(&mut self) {
        if let Some(Some(schema)) = self.work.get_mut().take() {
            let _ = self.client.get_mut().batch_execute(&statement("drop_schema", &[("schema", &ident(&schema))]));
        }
    }
}

impl RemoteEngine for Postgres {
    fn name(&self) -> &'static str {
        "PostgreSQL"
    }

    fn unread(&self) -> &'static str {
        UNREAD
    }

    fn same_value(&self, left: &str, right: &str, duckdb_type: &str, nullable: bool) -> String {
        same_value(left, right, duckdb_type, nullable)
    }

    /// Expose the job's source as the temporary view `kanon_source`; return
    /// its columns with the DuckDB type each arrives as.
    /// The release is checked first, against the catalog: it must not be the
    /// source (under another spelling: `fars` and `public.fars`), a table
    /// the source (a view) reads, the run history, or anything but a table.
    fn open_source(&self, job: &Job) -> Result<Vec<SourceColumn>> {
        let SourceSpec::PostgresTable { name } = &job.source else {
            unreachable!("a PostgreSQL job has a PostgreSQL source")
        };
        let missing =
            || bad(format!("{}: [source] table \"{name}\" not found in PostgreSQL at {}", job.path.display(), self.at));
        let source = self.find_named(name)?.ok_or_else(missing)?;
        *self.source_schema.borrow_mut() = Some(source.place.schema.clone());
        if let Some(release) = &job.output.remote_table {
            self.check_release(name, &source, release)?;
        }
        self.open_table(name, "kanon_source")?.ok_or_else(missing)
    }

    /// The table `name` ("schema.table" or "table") as the temp view `view`;
    /// its columns as DuckDB types, or None when there is no such table.
    fn open_table(&self, name: &str, view: &str) -> Result<Option<Vec<SourceColumn>>> {
        let mut client = self.client.borrow_mut();
        let found: Option<u32> = client
            .query_one(catalog("regclass"), &[&qualified(name)])
            .map(|r| r.get::<_, Option<u32>>(0))
            .unwrap_or(None);
        let Some(oid) = found else {
            return Ok(None);
        };
        let rows = client.query(catalog("columns"), &[&oid])?;
        let mut columns = Vec::new();
        for r in rows {
            let (name, oid, typmod): (String, u32, i32) = (r.get(0), r.get(1), r.get(2));
            let type_name = match Type::from_oid(oid).and_then(|t| duckdb_type(&t, typmod)) {
                Some(t) => t,
                None => {
                    let shown: String = client
                        .query_one(catalog("type_name"), &[&oid, &typmod])
                        .map(|r| r.get(0))
                        .unwrap_or_else(|_| oid.to_string());
                    format!("{UNREAD}{shown}")
                }
            };
            columns.push(SourceColumn { name, type_name });
        }
        client
            .batch_execute(&statement("view", &[("view", &ident(view)), ("table", &qualified(name))]))
            .with_context(|| format!("defining the view of \"{name}\" on PostgreSQL"))?;
        Ok(Some(columns))
    }

    /// The rows of the local query `select` (with `params`) as the
    /// PostgreSQL temporary table `name` (replaced), analyzed.
    fn share(&self, conn: &Connection, select: &str, params: &[i64], name: &str) -> Result<()> {
        match self.work_schema()? {
            Some(schema) => self.copy_into(
                conn,
                select,
                params,
                &format!("{}.{}", ident(&schema), ident(name)),
                &format!("UNLOGGED TABLE {}.{}", ident(&schema), ident(name)),
            ),
            None => self.copy_into(
                conn,
                select,
                params,
                &format!("pg_temp.{}", ident(name)),
                &format!("TEMP TABLE {}", ident(name)),
            ),
        }
    }

    /// Write `select` as the release `table` (in its schema, else the
    /// source's), all in one transaction with `before_commit` (the history's
    /// row): a client killed before the commit leaves the server to roll it
    /// all back, and until then every other session reads the previous
    /// release. A release that exists with the same columns keeps its table:
    /// its rows are deleted and the new ones inserted, so the views over it,
    /// its grants, indexes, owner, comments and triggers stay as they are.
    /// With other columns, a new table replaces it (built under a temporary
    /// name, the grants and owner carried over, the old one dropped, the new
    /// one renamed) unless something outside it depends on it: exit 2
    /// naming those, nothing written. Returns the rows.
    fn write_table(
        &self,
        table: &str,
        select: &str,
        before_commit: Option<&crate::engine::commit::BeforeCommit>,
    ) -> Result<u64> {
        let select = dialect(select);
        let place = self.place_of(table)?;
        let target = place.quoted();
        let file = &self.file;
        let built = self.built_rows()?;
        let mut client = self.client.borrow_mut();
        // The release's columns, as CREATE TABLE … AS would make them.
        let columns: Vec<(String, u32, i32)> = client
            .prepare(&select)
            .context("writing the release on PostgreSQL")?
            .columns()
            .iter()
            .map(|c| (c.name().to_string(), c.type_().oid(), c.type_modifier()))
            .collect();
        let mut tx = client.transaction()?;
        let rows = match find(&mut tx, &target)? {
            None => create_as(&mut tx, "create_as", &target, &select)?,
            Some(old) if !matches!(old.kind.as_str(), "r" | "p") => {
                return Err(bad(format!(
                "{file}: [output] table \"{table}\" ({}) is a {} in PostgreSQL; the release is a table kanon writes",
                place.shown(),
                old.what()
            )))
            }
            Some(old) => {
                let had = table_columns(&mut tx, old.oid)?;
                let sorted = |c: &[(String, u32, i32)]| {
                    let mut c = c.to_vec();
                    c.sort();
                    c
                };
                if sorted(&had) == sorted(&columns) {
                    // Built apart, then copied in: PostgreSQL may run CREATE TABLE AS
                    // in parallel, never INSERT … SELECT.
                    let (create, built) = &built;
                    tx.batch_execute(&statement("drop_if_exists", &[("table", built)]))?;
                    create_as(&mut tx, create, built, &select)?;
                    tx.execute(&statement("empty", &[("table", &target)]), &[])
                        .context("emptying the previous release")?;
                    let names = list(&columns, ", ", |(n, _, _)| ident(n));
                    let rows = tx
                        .execute(
                            &statement("copy_built", &[("table", &target), ("columns", &names), ("built", built)]),
                            &[],
                        )
                        .context("writing the release on PostgreSQL")?;
                    tx.batch_execute(&statement("drop", &[("table", built)]))?;
                    rows
                } else {
                    let depending = dependents(&mut tx, old.oid)?;
                    if !depending.is_empty() {
                        let changed = difference(&mut tx, &had, &columns)?;
                        return Err(bad(format!(
                            "{file}: [output] table \"{table}\" ({}) has other columns than this release ({changed}), and {} depend{} on it: replacing the table would break {}. Drop or change {}, or name another release table; nothing was written",
                            place.shown(),
                            depending.join(", "),
                            if depending.len() == 1 { "s" } else { "" },
                            if depending.len() == 1 { "it" } else { "them" },
                            if depending.len() == 1 { "it" } else { "them" },
                        )));
                    }
                    let tmp =
                        Place { schema: place.schema.clone(), name: format!("{}__kanon_tmp", place.name) }.quoted();
                    tx.batch_execute(&statement("drop_if_exists", &[("table", &tmp)]))?;
                    let rows = create_as(&mut tx, "create_as", &tmp, &select)?;
                    carry_over(&mut tx, old.oid, &tmp)?;
                    tx.batch_execute(&statement("drop", &[("table", &target)]))?;
                    tx.batch_execute(&statement("rename", &[("from", &tmp), ("to", &ident(&place.name))]))?;
                    rows
                }
            }
        };
        if let Some(f) = before_commit {
            f(crate::engine::commit::CommitTarget::Postgres { tx: &mut tx, schema: &place.schema }, rows)?;
        }
        tx.commit().context("committing the release on PostgreSQL")?;
        Ok(rows)
    }

    fn fetch(&self, conn: &Connection, select: &str, target: &str) -> Result<u64> {
        Postgres::fetch(self, conn, select, target)
    }

    fn share_key(&self, key: &crate::pseudonym::Key) -> Result<fn(&str) -> String> {
        let (inner, outer) = key.pads_hex();
        self.share_secret_row("kanon_release_key", &[("inner", inner), ("outer", outer)])?;
        Ok(|column| statement("pseudonym", &[("column", column)]))
    }

    fn spelling(&self, name: &str) -> &'static str {
        crate::sql::fragment(crate::sql::POSTGRES, name)
    }

    /// Its GROUPING SETS run serially; one aggregate per column runs in
    /// parallel (10M rows, 5 QIs: 4.9 s against 11.4 s).
    fn anti_join_on_values(&self) -> bool {
        true
    }

    fn create_work(&self, name: &str, select: &str, work: WorkUse) -> Result<Option<u64>> {
        let (drop, create) = match self.work_schema()?.is_some() {
            true => ("drop_work", "create_work"),
            false => ("drop_work_temp", "create_work_temp"),
        };
        let name = ident(name);
        self.execute(&statement(drop, &[("name", &name)]))?;
        let create = dialect(&statement(create, &[("name", &name), ("select", select)]));
        // The planner settings this one statement runs under, and their resets.
        let settings = [
            (work.near_unique, "group_by_sorting", "group_by_hashing"),
            (work.probes_small, "join_by_hashing", "join_reset"),
        ];
        for (_, set, _) in settings.iter().filter(|s| s.0) {
            self.execute(statement(set, &[]).as_str())?;
        }
        let created = self.client.borrow_mut().execute(&create, &[]);
        let reset: Result<()> =
            settings.iter().filter(|s| s.0).try_for_each(|(_, _, reset)| self.execute(statement(reset, &[]).as_str()));
        let rows = created.with_context(|| format!("running on PostgreSQL: {create}"))?;
        reset?;
        self.execute(&statement("analyze", &[("table", &name)]))?;
        Ok(Some(rows))
    }

    fn drop_work(&self, name: &str) -> Result<()> {
        self.execute(&statement("drop_work", &[("name", &ident(name))]))
    }

    fn write_scratch(&self, table: &str, select: &str) -> Result<u64> {
        let select = dialect(select);
        let place = self.place_of(table)?;
        let scratch = Place { schema: place.schema, name: format!("{}__kanon_limit", place.name) }.quoted();
        let mut client = self.client.borrow_mut();
        client.batch_execute(&statement("drop_if_exists", &[("table", &scratch)]))?;
        let mut tx = client.transaction()?;
        let rows = create_as(&mut tx, "create_as", &scratch, &select)?;
        tx.commit()?;
        client.batch_execute(&statement("drop_if_exists", &[("table", &scratch)]))?;
        Ok(rows)
    }

    fn history(&self, job: &Job) -> Result<Option<String>> {
        let runs = runs_place(&self.release_place(job)?.schema);
        Ok(self.exists(&runs)?.then_some(runs))
    }
}

/// Where the run history lives: `kanon_runs` in the release table's schema
/// (the one it names, else the source's), quoted. A release named kanon_runs
/// is refused when the run is planned and, in any spelling, when the source
/// is opened.
pub(crate) fn runs_place(schema: &str) -> String {
    Place { schema: schema.to_string(), name: crate::engine::commit::RUNS.to_string() }.quoted()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_text_round_trips() {
        for v in ["plain", "tab\there", "new\nline", "back\\slash", "cr\r", "", "\\N"] {
            let mut out = Vec::new();
            copy_text(&mut out, Some(v));
            assert_eq!(copy_field(&out).as_deref(), Some(v), "{v:?}");
        }
        let mut out = Vec::new();
        copy_text(&mut out, None);
        assert_eq!(copy_field(&out), None);
        assert_eq!(copy_field(b"\\x41\\101\\v").as_deref(), Some("AA\u{b}"));
    }

    #[test]
    fn pgpass_matches_as_libpq_does() {
        let file = "# comment\nother:5432:*:kanon:no\nlocalhost:5432:db:ka\\:non:colon\n*:*:*:kanon:any\n";
        assert_eq!(pgpass_lookup(file, "localhost", 5432, "db", "ka:non").as_deref(), Some("colon"));
        assert_eq!(pgpass_lookup(file, "localhost", 5433, "x", "kanon").as_deref(), Some("any"));
        assert_eq!(pgpass_lookup(file, "other", 5432, "x", "kanon").as_deref(), Some("no"));
        assert_eq!(pgpass_lookup(file, "h", 1, "d", "nobody"), None);
    }

    #[test]
    fn types_and_dialect() {
        assert_eq!(same_value("s.a", "m.n", "VARCHAR", false), "s.a = m.n");
        assert!(same_value("s.a", "m.n", "DATE", true).contains("coalesce(s.a, DATE '2000-01-01')"));
        assert_eq!(duckdb_type(&Type::NUMERIC, ((8 << 16) | 2) + 4).as_deref(), Some("DECIMAL(8,2)"));
        assert_eq!(duckdb_type(&Type::NUMERIC, -1).as_deref(), Some("DOUBLE"));
        assert_eq!(duckdb_type(&Type::JSON, -1), None);
        assert_eq!(postgres_type("DECIMAL(8,2)").unwrap(), "numeric(8,2)");
        assert_eq!(dialect("l0.c0::TINYINT AS g0"), "l0.c0::SMALLINT AS g0");
        assert_eq!(format!("{:?}", Url("postgresql://u:secret@h/d".into())), "Url(hidden)");
    }

    #[test]
    fn a_bare_release_name_takes_the_given_schema() {
        let place = |name: &str| Place::of(name, "Clinic").map(|p| (p.schema, p.name));
        assert_eq!(place("fars"), Some(("Clinic".into(), "fars".into())));
        assert_eq!(place("public.fars"), Some(("public".into(), "fars".into())));
        assert_eq!(place("db.public.fars"), None);
        assert_eq!(Place::of("My Release", "a\"b").unwrap().quoted(), "\"a\"\"b\".\"My Release\"");
    }
}
