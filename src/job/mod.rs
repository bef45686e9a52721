//! The job file: TOML in, a validated [`Job`] out.
//!
//! Relative paths are resolved against the job file's folder. Errors name the job
//! file and, for anything tied to a column, the line where it is written.

use crate::error::bad;
use crate::options::{Algorithm, Metric, Reuse, Scheme};
use anyhow::{Context, Result};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use toml::Spanned;

mod ratio;
pub use ratio::Ratio;

/// The analysis's settings (`[risk]` in the job).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RiskSettings {
    /// A record is at risk when its probability of re-identification exceeds this.
    pub threshold: f64,
    /// The population's size N, when known.
    pub population: Option<u64>,
    /// n / N, when the population's size is not given (in (0, 1]).
    pub sampling_fraction: f64,
}

impl Default for RiskSettings {
    /// ARX's defaults: threshold 0.2, sampling fraction 1%.
    fn default() -> Self {
        RiskSettings { threshold: 0.2, population: None, sampling_fraction: 0.01 }
    }
}

/// Where the rows come from.
#[derive(Debug, Clone, PartialEq)]
pub enum SourceSpec {
    Database {
        path: PathBuf,
        table: String,
    },
    Csv {
        path: PathBuf,
        delimiter: Option<String>,
    },
    Parquet {
        path: PathBuf,
    },
    /// On the Spark engine: a table of Spark's catalog (dot-separated parts).
    SparkTable {
        name: String,
    },
    /// On the Spark engine: a Parquet path as Spark reads it (kept verbatim).
    SparkParquet {
        path: String,
    },
    /// On the PostgreSQL engine: a table (`schema.table`, dot-separated parts).
    PostgresTable {
        name: String,
    },
}

impl SourceSpec {
    /// The source for messages: its file, and the table in it.
    pub fn describe(&self) -> String {
        match self {
            SourceSpec::Database { path, table } => format!("table \"{table}\" of {}", path.display()),
            SourceSpec::Csv { path, .. } | SourceSpec::Parquet { path } => path.display().to_string(),
            SourceSpec::SparkTable { name } => format!("Spark table \"{name}\""),
            SourceSpec::SparkParquet { path } => format!("Spark parquet {path}"),
            SourceSpec::PostgresTable { name } => format!("PostgreSQL table \"{name}\""),
        }
    }
}

/// The release as a table of a DuckDB database.
#[derive(Debug, Clone)]
pub struct OutputTable {
    pub database: PathBuf,
    pub name: String,
}

#[derive(Debug, Clone)]
pub struct OutputSpec {
    /// None when the release goes only to files (a file source, no `database`).
    pub table: Option<OutputTable>,
    /// On the Spark or PostgreSQL engine: the release's table there.
    pub remote_table: Option<String>,
    pub csv: Option<PathBuf>,
    pub parquet: Option<PathBuf>,
    pub report: Option<PathBuf>,
    pub drop: Vec<Column>,
    /// Released as HMAC-SHA-256 pseudonyms ([`crate::pseudonym`]).
    pub pseudonymize: Vec<Column>,
    /// The environment variable holding the pseudonymization key.
    pub key_env: String,
    /// The key, read from `key_env` by a run that pseudonymizes (never by the parser).
    pub key: Option<crate::pseudonym::Key>,
    /// Append each run to the output database's `kanon_runs` (`[output] history`, default true).
    pub history: bool,
    /// Where cell-based generalization writes its reconstruction, if asked.
    pub reconstructed: Option<Reconstructed>,
}

/// The reconstruction's target: a table of the output database, or a file
/// (a name ending in `.csv` or `.parquet`).
#[derive(Debug, Clone, PartialEq)]
pub enum Reconstructed {
    Table(String),
    Csv(PathBuf),
    Parquet(PathBuf),
}

impl Reconstructed {
    /// Read `name`: a file when it ends in .csv or .parquet (resolved by `resolve`), else a table.
    pub fn parse(name: &str, resolve: impl Fn(&str) -> PathBuf) -> Result<Reconstructed, String> {
        let lower = name.to_ascii_lowercase();
        if name.trim().is_empty() {
            Err("the reconstruction's table or file name is empty".into())
        } else if lower.ends_with(".csv") {
            Ok(Reconstructed::Csv(resolve(name)))
        } else if lower.ends_with(".parquet") {
            Ok(Reconstructed::Parquet(resolve(name)))
        } else {
            local_table(name).map(Reconstructed::Table)
        }
    }
}

impl OutputSpec {
    /// The reconstruction as an output of its own (same database, same dropped
    /// columns, no report), checked against the release and the source.
    pub fn reconstruction(&self, job: &Job) -> Result<Option<OutputSpec>> {
        let Some(r) = &self.reconstructed else { return Ok(None) };
        let file = job.path.display();
        let mut out = OutputSpec {
            table: None,
            remote_table: None,
            csv: None,
            parquet: None,
            report: None,
            drop: self.drop.clone(),
            pseudonymize: self.pseudonymize.clone(),
            key_env: self.key_env.clone(),
            key: self.key.clone(),
            history: false,
            reconstructed: None,
        };
        match r {
            Reconstructed::Table(name) => {
                let Some(t) = &self.table else {
                    return Err(bad(format!(
                        "{file}: the reconstruction \"{name}\" is a table, but the release has no database; name a .csv or .parquet file"
                    )));
                };
                if t.name.eq_ignore_ascii_case(name) {
                    return Err(bad(format!("{file}: the reconstruction table \"{name}\" is the release table")));
                }
                if let SourceSpec::Database { path, table } = &job.source {
                    if same_file(path, &t.database) && table.eq_ignore_ascii_case(name) {
                        return Err(bad(format!(
                            "{file}: the reconstruction table \"{name}\" is the source table; kanon never overwrites its source"
                        )));
                    }
                }
                out.table = Some(OutputTable { database: t.database.clone(), name: name.clone() });
            }
            Reconstructed::Csv(p) | Reconstructed::Parquet(p) => {
                if [&self.csv, &self.parquet].into_iter().flatten().any(|q| same_file(p, q)) {
                    return Err(bad(format!("{file}: the reconstruction file {} is the release file", p.display())));
                }
                if matches!(r, Reconstructed::Csv(_)) {
                    out.csv = Some(p.clone());
                } else {
                    out.parquet = Some(p.clone());
                }
            }
        }
        Ok(Some(out))
    }

    /// Where the release goes first: its database, else its csv or parquet file.
    pub fn first_path(&self) -> &Path {
        if let Some(t) = &self.remote_table {
            return Path::new(t.as_str());
        }
        match (&self.table, &self.csv, &self.parquet) {
            (Some(t), _, _) => &t.database,
            (None, Some(p), _) | (None, None, Some(p)) => p,
            (None, None, None) => unreachable!("Job::parse requires a release target"),
        }
    }

    /// The release for messages: its table (on `engine`), else its files.
    pub fn describe(&self, engine: &EngineKind) -> String {
        if let Some(t) = &self.remote_table {
            return format!("{} table \"{t}\"", engine.name());
        }
        match &self.table {
            Some(t) => format!("\"{}\"", t.name),
            None => [&self.csv, &self.parquet]
                .into_iter()
                .flatten()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(" and "),
        }
    }
}

/// The suppression budget as written: a fraction of rows or a row count.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Budget {
    Fraction(f64),
    Rows(u64),
}

impl Budget {
    /// Rows that may be suppressed out of `rows`.
    pub fn rows(self, rows: u64) -> u64 {
        match self {
            Budget::Fraction(f) => (f * rows as f64).floor() as u64,
            Budget::Rows(n) => n.min(rows),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Diversity {
    pub column: Column,
    pub l: u64,
    pub kind: DiversityKind,
}

/// Which ℓ-diversity (`[privacy] l_diversity.kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiversityKind {
    /// At least ℓ distinct values per class (the default).
    Distinct,
    /// Entropy at least ln ℓ.
    Entropy,
    /// Recursive (c, ℓ).
    Recursive(Ratio),
}

/// `[privacy] t_closeness`.
#[derive(Debug, Clone)]
pub struct ClosenessSpec {
    pub column: Column,
    pub t: Ratio,
    pub distance: DistanceSpec,
}

#[derive(Debug, Clone, PartialEq)]
pub enum DistanceSpec {
    Equal,
    Ordered,
    /// Over this hierarchy of the column's values.
    Hierarchical(HierarchySpec),
}

#[derive(Debug, Clone)]
pub struct Privacy {
    pub k: u64,
    pub budget: Budget,
    /// Whether the job sets `max_suppression` (the scheme search then caps
    /// suppression by it; otherwise suppression is only charged).
    pub budget_given: bool,
    pub diversity: Option<Diversity>,
    pub closeness: Option<ClosenessSpec>,
}

impl Privacy {
    /// ℓ as the distinct count the histograms check (None for entropy and recursive ℓ).
    pub fn distinct_l(&self) -> Option<u64> {
        self.diversity.as_ref().filter(|d| d.kind == DiversityKind::Distinct).map(|d| d.l)
    }

    /// The models beyond k and distinct ℓ, in words, when any (what a
    /// scheme or cell search cannot honour).
    pub fn class_models(&self) -> Option<String> {
        let mut out = Vec::new();
        if let Some(d) = &self.diversity {
            match d.kind {
                DiversityKind::Distinct => {}
                DiversityKind::Entropy => out.push(format!("entropy l-diversity on \"{}\"", d.column.name)),
                DiversityKind::Recursive(_) => out.push(format!("recursive (c,l)-diversity on \"{}\"", d.column.name)),
            }
        }
        if let Some(t) = &self.closeness {
            out.push(format!("t-closeness on \"{}\"", t.column.name));
        }
        (!out.is_empty()).then(|| out.join(" and "))
    }
}

/// A column named in the job file, with the line it is named on.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub name: String,
    pub line: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DateUnit {
    Month,
    Quarter,
    Year,
    Decade,
    Century,
}

/// How a QI's hierarchy is obtained.
#[derive(Debug, Clone, PartialEq)]
pub enum HierarchySpec {
    /// Mask the last 1..=n characters with `*`.
    Mask(usize),
    /// Numeric bands of these widths, each dividing the next, then `*`.
    Intervals(Vec<f64>),
    /// Date truncations, coarser left to right, then `*`.
    Date(Vec<DateUnit>),
    /// value → `*`.
    Suppress,
    /// ARX format file.
    File(PathBuf),
}

#[derive(Debug, Clone)]
pub struct QuasiIdentifier {
    pub column: Column,
    pub hierarchy: HierarchySpec,
    /// False when the job names none: only CNDGH runs so (it never reads a
    /// hierarchy), and `hierarchy` is then "suppress".
    pub hierarchy_given: bool,
}

#[derive(Debug, Clone, Default)]
pub struct Engine {
    pub threads: Option<u64>,
    /// Largest base frequency set (rows) evaluated in memory; None: the default.
    pub memory_rows: Option<u64>,
    pub memory_limit: Option<String>,
    pub temp_directory: Option<PathBuf>,
    /// Where the source is read and the release written.
    pub kind: EngineKind,
}

/// The engine a job runs on: embedded DuckDB (the default), or a server that
/// runs the source scans and the release write.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum EngineKind {
    #[default]
    DuckDb,
    /// `kind = "spark"`: the Spark Connect endpoint (`url`, which may hold a `;token=`).
    Spark(SecretUrl),
    /// `kind = "postgres"`: the server (`url`, which may hold a password).
    Postgres(SecretUrl),
}

impl EngineKind {
    /// The engine's name, for messages.
    pub fn name(&self) -> &'static str {
        match self {
            EngineKind::DuckDb => "DuckDB",
            EngineKind::Spark(_) => "Spark",
            EngineKind::Postgres(_) => "PostgreSQL",
        }
    }

    /// A server's URL; None on embedded DuckDB.
    pub fn url(&self) -> Option<&SecretUrl> {
        match self {
            EngineKind::DuckDb => None,
            EngineKind::Spark(url) | EngineKind::Postgres(url) => Some(url),
        }
    }

    pub fn is_remote(&self) -> bool {
        !matches!(self, EngineKind::DuckDb)
    }
}

/// A connection URL, which may hold a password: never shown.
#[derive(Clone, PartialEq)]
pub struct SecretUrl(pub String);

impl std::fmt::Debug for SecretUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Url(hidden)")
    }
}

impl SecretUrl {
    /// The secrets the URL holds: a password (`user:password@`) and the
    /// values of `;key=value` parameters (a Spark Connect `token`, …).
    fn secrets(&self) -> Vec<&str> {
        let url = self.0.as_str();
        let mut out = Vec::new();
        let rest = url.split_once("://").map_or(url, |(_, r)| r);
        let authority = rest.split(['/', ';', '?']).next().unwrap_or_default();
        if let Some((userinfo, _)) = authority.rsplit_once('@') {
            if let Some((_, password)) = userinfo.split_once(':') {
                out.push(password);
            }
        }
        for param in url.split(';').skip(1) {
            if let Some((_, value)) = param.split_once('=') {
                out.push(value);
            }
        }
        for param in url.split_once('?').map_or("", |(_, q)| q).split('&') {
            if let Some((key, value)) = param.split_once('=') {
                if key.contains("password") || key.contains("token") || key.contains("secret") {
                    out.push(value);
                }
            }
        }
        out.retain(|s| !s.is_empty());
        out
    }

    /// `text` with every secret of the URL masked (for messages that quote
    /// the URL, or an error a client library built from it).
    pub fn scrub(&self, text: &str) -> String {
        let mut secrets = self.secrets();
        // The longest first: a secret that holds another is masked whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.iter().fold(text.to_string(), |t, s| t.replace(s, "***"))
    }

    /// The URL for messages, its secrets masked.
    pub fn shown(&self) -> String {
        self.scrub(&self.0)
    }
}

/// A validated job.
#[derive(Debug, Clone)]
pub struct Job {
    pub path: PathBuf,
    pub sha256: String,
    pub source: SourceSpec,
    pub output: OutputSpec,
    pub privacy: Privacy,
    pub algorithm: Algorithm,
    /// Li & Li's scheme search when set (`[search] scheme`).
    pub scheme: Option<Scheme>,
    pub metric: Metric,
    /// Class label column for cm.
    pub class_column: Option<Column>,
    /// The sensitive column: `[privacy] l_diversity.column`, or the one
    /// `kanon pareto --sensitive` names.
    pub sensitive: Option<Column>,
    pub quasi_identifiers: Vec<QuasiIdentifier>,
    pub engine: Engine,
    /// Cell-based generalization's m (`[search] open_clusters`).
    pub open_clusters: usize,
    /// `[search] reuse`: keep the previous report's node while it holds.
    pub reuse: Reuse,
    /// `[risk]`: how the re-identification risk is measured.
    pub risk: RiskSpec,
}

/// `[risk]` (docs/risk.md).
#[derive(Debug, Clone)]
pub struct RiskSpec {
    pub settings: RiskSettings,
    /// Population class sizes F_j come from this table (with the source's QI columns).
    pub population_table: Option<PopulationTable>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum PopulationTable {
    /// A table of the source database.
    Table(String),
    Csv {
        path: PathBuf,
        delimiter: Option<String>,
    },
    Parquet(PathBuf),
}

// ---- the file as written -------------------------------------------------

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawJob {
    source: RawSource,
    output: RawOutput,
    privacy: RawPrivacy,
    #[serde(default)]
    search: RawSearch,
    #[serde(default)]
    quasi_identifiers: Vec<RawQi>,
    #[serde(default)]
    engine: RawEngine,
    #[serde(default)]
    risk: RawRisk,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawRisk {
    threshold: Option<f64>,
    population: Option<i64>,
    sampling_fraction: Option<f64>,
    population_table: Option<RawPopulationTable>,
}

/// `population_table = "name"` (a table of the source database) or `{ csv | parquet = "file" }`.
#[derive(Deserialize)]
#[serde(untagged)]
enum RawPopulationTable {
    Table(String),
    File { csv: Option<String>, parquet: Option<String>, delimiter: Option<String> },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSource {
    database: Option<String>,
    table: Option<String>,
    csv: Option<String>,
    parquet: Option<String>,
    delimiter: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOutput {
    database: Option<String>,
    table: Option<String>,
    csv: Option<String>,
    parquet: Option<String>,
    report: Option<String>,
    #[serde(default)]
    drop: Vec<Spanned<String>>,
    #[serde(default)]
    pseudonymize: Vec<Spanned<String>>,
    key_env: Option<String>,
    history: Option<bool>,
    reconstructed: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPrivacy {
    k: i64,
    /// A row count (integer) or a fraction (float), told apart here.
    #[serde(default)]
    max_suppression: Option<toml::Value>,
    l_diversity: Option<RawDiversity>,
    t_closeness: Option<RawCloseness>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDiversity {
    column: Spanned<String>,
    l: i64,
    kind: Option<String>,
    c: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCloseness {
    column: Spanned<String>,
    t: f64,
    distance: Option<String>,
    hierarchy: Option<Spanned<toml::Value>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSearch {
    #[serde(default = "default_algorithm")]
    algorithm: Algorithm,
    #[serde(default = "default_metric")]
    metric: Metric,
    class_column: Option<Spanned<String>>,
    scheme: Option<Scheme>,
    open_clusters: Option<i64>,
    #[serde(default)]
    reuse: Reuse,
}

impl Default for RawSearch {
    fn default() -> Self {
        RawSearch {
            algorithm: default_algorithm(),
            metric: default_metric(),
            class_column: None,
            scheme: None,
            open_clusters: None,
            reuse: Reuse::Off,
        }
    }
}

/// The environment variable holding the pseudonymization key when `[output] key_env` names none.
pub const KEY_ENV: &str = "KANON_KEY";

/// Cell-based generalization's default m, the most clusters open at once.
pub const OPEN_CLUSTERS: usize = 32;

fn default_algorithm() -> Algorithm {
    Algorithm::Auto
}
fn default_metric() -> Metric {
    Metric::Glm
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawEngine {
    kind: Option<String>,
    url: Option<String>,
    threads: Option<u64>,
    memory_rows: Option<u64>,
    memory_limit: Option<String>,
    temp_directory: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawQi {
    column: Spanned<String>,
    hierarchy: Option<Spanned<toml::Value>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHierarchyTable {
    mask: Option<i64>,
    intervals: Option<Vec<f64>>,
    date: Option<Vec<DateUnit>>,
    file: Option<String>,
}

/// 1-based line of a byte offset.
fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

impl Job {
    /// Read and validate a job file.
    pub fn load(path: &Path) -> Result<Job> {
        let text =
            std::fs::read_to_string(path).map_err(|e| bad(format!("cannot read job file {}: {e}", path.display())))?;
        Job::parse(path, &text)
    }

    /// Validate job text read from `path` (used for relative paths and messages).
    pub fn parse(path: &Path, text: &str) -> Result<Job> {
        let file = path.display().to_string();
        // The line and column, not the line's text: it may hold a password or a token.
        let raw: RawJob = toml::from_str(text).map_err(|e| {
            let at = e.span().map_or(String::new(), |s| {
                let line = line_of(text, s.start);
                let column =
                    text.get(..s.start).and_then(|t| t.rsplit('\n').next()).map_or(0, |l| l.chars().count()) + 1;
                format!(" at line {line}, column {column}")
            });
            bad(format!("{file}: invalid job file{at}: {}", e.message().trim()))
        })?;
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let resolve = |p: &str| -> PathBuf {
            let p = Path::new(p);
            if p.is_absolute() {
                p.to_path_buf()
            } else {
                dir.join(p)
            }
        };
        let column = |s: &Spanned<String>| Column { name: s.get_ref().clone(), line: line_of(text, s.span().start) };

        let kind = match (raw.engine.kind.as_deref(), &raw.engine.url) {
            (Some("postgres"), Some(url)) if url.starts_with("postgresql://") || url.starts_with("postgres://") => {
                EngineKind::Postgres(SecretUrl(url.clone()))
            }
            (Some("postgres"), Some(_)) => {
                return Err(bad(format!(
                    "{file}: [engine] url must be a PostgreSQL URL, postgresql://user@host:port/database"
                )))
            }
            (Some("postgres"), None) => {
                return Err(bad(format!(
                    "{file}: [engine] kind = \"postgres\" needs url = \"postgresql://user@host:port/database\""
                )))
            }
            (None | Some("duckdb"), None) => EngineKind::DuckDb,
            (None | Some("duckdb"), Some(_)) => {
                return Err(bad(format!("{file}: [engine] url applies to kind = \"spark\" or \"postgres\" only")))
            }
            (Some("spark"), Some(url)) if url.starts_with("sc://") => EngineKind::Spark(SecretUrl(url.clone())),
            (Some("spark"), Some(url)) => {
                return Err(bad(format!(
                    "{file}: [engine] url must be a Spark Connect endpoint, sc://host:port, got \"{}\"",
                    SecretUrl(url.clone()).shown()
                )))
            }
            (Some("spark"), None) => {
                return Err(bad(format!("{file}: [engine] kind = \"spark\" needs url = \"sc://host:port\"")))
            }
            (Some(other), _) => {
                return Err(bad(format!(
                    "{file}: [engine] kind must be \"duckdb\", \"spark\" or \"postgres\", got \"{other}\""
                )))
            }
        };
        let src = &raw.source;
        let source = match (&src.database, &src.csv, &src.parquet) {
            _ if matches!(kind, EngineKind::Postgres(_)) => match (&src.database, &src.csv, &src.table, &src.parquet) {
                (None, None, Some(t), None) if !t.trim().is_empty() => SourceSpec::PostgresTable { name: t.clone() },
                _ => {
                    return Err(bad(format!(
                        "{file}: [source] on the PostgreSQL engine needs table (\"schema.table\") and nothing else"
                    )))
                }
            },
            _ if matches!(kind, EngineKind::Spark(_)) => match (&src.database, &src.csv, &src.table, &src.parquet) {
                (None, None, Some(t), None) if !t.trim().is_empty() => SourceSpec::SparkTable { name: t.clone() },
                (None, None, None, Some(p)) => SourceSpec::SparkParquet { path: p.clone() },
                _ => {
                    return Err(bad(format!(
                        "{file}: [source] on the Spark engine needs exactly one of table (in Spark's catalog) or parquet (a path Spark reads)"
                    )))
                }
            },
            (Some(db), None, None) => {
                let table = src.table.as_deref().ok_or_else(|| bad(format!("{file}: [source] database needs a table")))?;
                let table = local_table(table).map_err(|m| bad(format!("{file}: [source] table {m}")))?;
                SourceSpec::Database { path: resolve(db), table }
            }
            (None, Some(csv), None) => SourceSpec::Csv { path: resolve(csv), delimiter: src.delimiter.clone() },
            (None, None, Some(pq)) => SourceSpec::Parquet { path: resolve(pq) },
            _ => {
                return Err(bad(format!("{file}: [source] needs exactly one of database (with table), csv or parquet")))
            }
        };
        if src.delimiter.is_some() && !matches!(source, SourceSpec::Csv { .. }) {
            return Err(bad(format!("{file}: [source] delimiter applies to csv only")));
        }
        if src.table.is_some()
            && !matches!(
                source,
                SourceSpec::Database { .. } | SourceSpec::SparkTable { .. } | SourceSpec::PostgresTable { .. }
            )
        {
            return Err(bad(format!("{file}: [source] table applies to a database source only")));
        }

        let out = &raw.output;
        let remote_table = match (kind.is_remote(), &out.table) {
            (false, _) => None,
            (true, Some(t)) if out.database.is_none() && out.csv.is_none() && out.parquet.is_none() => {
                if t.trim().is_empty() {
                    return Err(bad(format!("{file}: [output] table is empty")));
                }
                if let SourceSpec::SparkTable { name } | SourceSpec::PostgresTable { name } = &source {
                    if name.eq_ignore_ascii_case(t) {
                        return Err(bad(format!(
                            "{file}: [output] table \"{t}\" is the source table; kanon never overwrites its source"
                        )));
                    }
                }
                Some(t.clone())
            }
            (true, _) if matches!(kind, EngineKind::Spark(_)) => {
                return Err(bad(format!(
                    "{file}: [output] on the Spark engine needs table (in Spark's catalog) and nothing else for the release (no database, csv or parquet)"
                )))
            }
            (true, _) => {
                return Err(bad(format!(
                    "{file}: [output] on the PostgreSQL engine needs table (\"schema.table\") and nothing else for the release (no database, csv or parquet)"
                )))
            }
        };
        let database = match (&out.database, &source) {
            (Some(db), _) => Some(resolve(db)),
            (None, SourceSpec::Database { path, .. }) => Some(path.clone()),
            (None, _) => None,
        };
        let table = match (database, &out.table) {
            _ if remote_table.is_some() => None,
            (Some(database), Some(name)) => {
                if name.trim().is_empty() {
                    return Err(bad(format!("{file}: [output] table is empty")));
                }
                let name = local_table(name).map_err(|m| bad(format!("{file}: [output] table {m}")))?;
                Some(OutputTable { database, name })
            }
            (Some(_), None) => return Err(bad(format!("{file}: [output] needs a table for the release"))),
            (None, Some(_)) => {
                return Err(bad(format!(
                    "{file}: [output] table needs a database when the source is a csv or parquet file"
                )))
            }
            (None, None) if out.csv.is_none() && out.parquet.is_none() => {
                return Err(bad(format!(
                    "{file}: [output] needs a database and table, or a csv or parquet file, for the release"
                )))
            }
            (None, None) => None,
        };
        if let (SourceSpec::Database { path, table: source_table }, Some(t)) = (&source, &table) {
            if same_file(path, &t.database) && source_table.eq_ignore_ascii_case(&t.name) {
                return Err(bad(format!(
                    "{file}: [output] table \"{}\" is the source table; kanon never overwrites its source",
                    t.name
                )));
            }
        }
        let output = OutputSpec {
            table,
            remote_table,
            csv: out.csv.as_deref().map(resolve),
            parquet: out.parquet.as_deref().map(resolve),
            report: out.report.as_deref().map(resolve),
            drop: out.drop.iter().map(column).collect(),
            pseudonymize: out.pseudonymize.iter().map(column).collect(),
            key_env: match &out.key_env {
                Some(v) if v.is_empty() || v.contains('=') || v.contains('\0') => {
                    return Err(bad(format!("{file}: [output] key_env must name an environment variable, got \"{v}\"")))
                }
                Some(v) => v.clone(),
                None => KEY_ENV.to_string(),
            },
            key: None,
            history: out.history.unwrap_or(true),
            reconstructed: out
                .reconstructed
                .as_deref()
                .map(|r| Reconstructed::parse(r, resolve))
                .transpose()
                .map_err(|m| bad(format!("{file}: [output] reconstructed: {m}")))?,
        };

        let p = &raw.privacy;
        if p.k < 1 {
            return Err(bad(format!("{file}: [privacy] k must be at least 1, got {}", p.k)));
        }
        let budget = match &p.max_suppression {
            None => Budget::Rows(0),
            Some(toml::Value::Integer(n)) if *n >= 0 => Budget::Rows(*n as u64),
            Some(toml::Value::Float(f)) if (0.0..=1.0).contains(f) => Budget::Fraction(*f),
            Some(other) => {
                return Err(bad(format!(
                    "{file}: [privacy] max_suppression must be a fraction in [0, 1] or a non-negative row count, got {other}"
                )))
            }
        };
        let diversity = match &p.l_diversity {
            None => None,
            Some(d) => {
                let at = format!("{file}:{}: [privacy] l_diversity", line_of(text, d.column.span().start));
                if d.l < 1 {
                    return Err(bad(format!("{at} l must be at least 1")));
                }
                let kind = match (d.kind.as_deref().unwrap_or("distinct"), d.c) {
                    ("distinct", None) => DiversityKind::Distinct,
                    ("entropy", None) => DiversityKind::Entropy,
                    ("recursive", Some(c)) => match Ratio::from_decimal(c).filter(|c| c.num > 0) {
                        Some(c) => DiversityKind::Recursive(c),
                        None => return Err(bad(format!("{at} c must be a positive number, got {c}"))),
                    },
                    ("recursive", None) => return Err(bad(format!("{at}: kind \"recursive\" needs c"))),
                    ("distinct" | "entropy", Some(_)) => {
                        return Err(bad(format!("{at}: c is for kind = \"recursive\" only")))
                    }
                    (k, _) => {
                        return Err(bad(format!(
                            "{at}: unknown kind \"{k}\" (expected \"distinct\", \"entropy\" or \"recursive\")"
                        )))
                    }
                };
                Some(Diversity { column: column(&d.column), l: d.l as u64, kind })
            }
        };
        let closeness = match &p.t_closeness {
            None => None,
            Some(t) => {
                let at = format!("{file}:{}: [privacy] t_closeness", line_of(text, t.column.span().start));
                let Some(value) = Ratio::from_decimal(t.t).filter(|r| r.num <= r.den) else {
                    return Err(bad(format!("{at} t must be a number in [0, 1], got {}", t.t)));
                };
                let distance = match (t.distance.as_deref().unwrap_or("equal"), &t.hierarchy) {
                    ("equal", None) => DistanceSpec::Equal,
                    ("ordered", None) => DistanceSpec::Ordered,
                    ("hierarchical", Some(h)) => DistanceSpec::Hierarchical(
                        hierarchy_spec(h.get_ref(), &resolve).map_err(|m| bad(format!("{at}: {m}")))?,
                    ),
                    ("hierarchical", None) => {
                        return Err(bad(format!("{at}: distance \"hierarchical\" needs a hierarchy")))
                    }
                    ("equal" | "ordered", Some(_)) => {
                        return Err(bad(format!("{at}: a hierarchy is for distance = \"hierarchical\" only")))
                    }
                    (d, _) => {
                        return Err(bad(format!(
                            "{at}: unknown distance \"{d}\" (expected \"equal\", \"hierarchical\" or \"ordered\")"
                        )))
                    }
                };
                Some(ClosenessSpec { column: column(&t.column), t: value, distance })
            }
        };

        if raw.quasi_identifiers.is_empty() {
            return Err(bad(format!("{file}: no [[quasi_identifiers]] given")));
        }
        let mut quasi_identifiers = Vec::new();
        for q in &raw.quasi_identifiers {
            let col = column(&q.column);
            let at = format!("{file}:{}: quasi-identifier \"{}\"", col.line, col.name);
            if quasi_identifiers.iter().any(|x: &QuasiIdentifier| x.column.name == col.name) {
                return Err(bad(format!("{at} is listed twice")));
            }
            let hierarchy = match &q.hierarchy {
                Some(h) => hierarchy_spec(h.get_ref(), &resolve).map_err(|m| bad(format!("{at}: {m}")))?,
                None => HierarchySpec::Suppress,
            };
            quasi_identifiers.push(QuasiIdentifier { column: col, hierarchy, hierarchy_given: q.hierarchy.is_some() });
        }
        for d in &output.drop {
            if quasi_identifiers.iter().any(|q| q.column.name == d.name) {
                return Err(bad(format!(
                    "{file}:{}: column \"{}\" is both dropped and a quasi-identifier",
                    d.line, d.name
                )));
            }
        }
        for p in &output.pseudonymize {
            let role = if quasi_identifiers.iter().any(|q| q.column.name == p.name) {
                Some("a quasi-identifier")
            } else if output.drop.iter().any(|d| d.name == p.name) {
                Some("dropped")
            } else if diversity
                .iter()
                .map(|d| &d.column)
                .chain(closeness.iter().map(|t| &t.column))
                .any(|c| c.name == p.name)
            {
                Some("the sensitive column")
            } else if output.pseudonymize.iter().filter(|q| q.name == p.name).count() > 1 {
                Some("listed twice")
            } else {
                None
            };
            if let Some(role) = role {
                return Err(bad(format!(
                    "{file}:{}: [output] pseudonymize: column \"{}\" is {role}; a pseudonymized column is released keyed, never generalized, measured or left out",
                    p.line, p.name
                )));
            }
        }
        let sensitive_columns = diversity.iter().map(|d| &d.column).chain(closeness.iter().map(|t| &t.column));
        for c in sensitive_columns {
            if quasi_identifiers.iter().any(|q| q.column.name == c.name) {
                return Err(bad(format!(
                    "{file}:{}: sensitive column \"{}\" cannot also be a quasi-identifier",
                    c.line, c.name
                )));
            }
        }

        let open_clusters = match raw.search.open_clusters {
            None => OPEN_CLUSTERS,
            Some(m) if m >= 1 => m as usize,
            Some(m) => return Err(bad(format!("{file}: [search] open_clusters must be at least 1, got {m}"))),
        };

        let r = &raw.risk;
        let defaults = RiskSettings::default();
        let threshold = r.threshold.unwrap_or(defaults.threshold);
        if !(threshold > 0.0 && threshold <= 1.0) {
            return Err(bad(format!("{file}: [risk] threshold must be in (0, 1], got {threshold}")));
        }
        let sampling_fraction = r.sampling_fraction.unwrap_or(defaults.sampling_fraction);
        if !(sampling_fraction > 0.0 && sampling_fraction <= 1.0) {
            return Err(bad(format!("{file}: [risk] sampling_fraction must be in (0, 1], got {sampling_fraction}")));
        }
        if r.population.is_some() && r.sampling_fraction.is_some() {
            return Err(bad(format!("{file}: [risk] takes population or sampling_fraction, not both")));
        }
        let population = match r.population {
            None => None,
            Some(p) if p >= 1 => Some(p as u64),
            Some(p) => return Err(bad(format!("{file}: [risk] population must be at least 1, got {p}"))),
        };
        let population_table = match &r.population_table {
            None => None,
            Some(RawPopulationTable::Table(t)) => Some(PopulationTable::Table(
                local_table(t).map_err(|m| bad(format!("{file}: [risk] population_table {m}")))?,
            )),
            Some(RawPopulationTable::File { csv: Some(c), parquet: None, delimiter }) => {
                Some(PopulationTable::Csv { path: resolve(c), delimiter: delimiter.clone() })
            }
            Some(RawPopulationTable::File { csv: None, parquet: Some(p), delimiter: None }) => {
                Some(PopulationTable::Parquet(resolve(p)))
            }
            Some(_) => {
                return Err(bad(format!(
                "{file}: [risk] population_table is a table name or {{ csv = \"file\" }} or {{ parquet = \"file\" }}"
            )))
            }
        };
        let risk = RiskSpec {
            settings: RiskSettings { threshold, population, sampling_fraction },
            population_table,
        };

        if raw.engine.threads == Some(0) {
            return Err(bad(format!("{file}: [engine] threads must be at least 1")));
        }
        let engine = Engine {
            threads: raw.engine.threads,
            memory_rows: raw.engine.memory_rows,
            memory_limit: raw.engine.memory_limit.clone(),
            temp_directory: raw.engine.temp_directory.as_deref().map(resolve),
            kind,
        };

        Ok(Job {
            path: path.to_path_buf(),
            sha256: format!("{:x}", Sha256::digest(text.as_bytes())),
            source,
            output,
            sensitive: diversity.as_ref().map(|d| &d.column).or(closeness.as_ref().map(|t| &t.column)).cloned(),
            privacy: Privacy { k: p.k as u64, budget, budget_given: p.max_suppression.is_some(), diversity, closeness },
            algorithm: raw.search.algorithm,
            scheme: raw.search.scheme,
            metric: raw.search.metric,
            class_column: raw.search.class_column.as_ref().map(column),
            quasi_identifiers,
            engine,
            open_clusters,
            reuse: raw.search.reuse,
            risk,
        })
    }

    /// t-closeness's column when it is not the sensitive column (the
    /// frequency sets then carry it as `t` beside ℓ's `s`).
    pub fn closeness_column(&self) -> Option<&Column> {
        let t = &self.privacy.closeness.as_ref()?.column;
        (self.sensitive.as_ref().map(|s| &s.name) != Some(&t.name)).then_some(t)
    }

    /// QI column names in job order.
    pub fn qi_names(&self) -> Vec<String> {
        self.quasi_identifiers.iter().map(|q| q.column.name.clone()).collect()
    }

    /// cm needs a class column.
    pub fn check_metric(&self) -> Result<()> {
        if self.metric == Metric::Cm && self.class_column.is_none() {
            return Err(bad(format!("{}: metric cm needs [search] class_column", self.path.display())));
        }
        Ok(())
    }

    /// Every QI has a hierarchy, unless the algorithm is CNDGH (natural
    /// domains), the one that needs none.
    pub fn check_hierarchies(&self) -> Result<()> {
        match self.quasi_identifiers.iter().find(|q| !q.hierarchy_given) {
            Some(q) if self.algorithm != Algorithm::Cndgh => Err(bad(format!(
                "{}: quasi-identifier \"{}\" has no hierarchy; only algorithm cndgh runs without one",
                self.at(&q.column),
                q.column.name
            ))),
            _ => Ok(()),
        }
    }

    /// `file:line` for messages about a column named in the job.
    pub fn at(&self, col: &Column) -> String {
        format!("{}:{}", self.path.display(), col.line)
    }
}

/// A QI's `hierarchy`: "suppress" or a table, read here (not by serde's
/// untagged enums) so that a bad table says what is wrong with it.
fn hierarchy_spec(raw: &toml::Value, resolve: &dyn Fn(&str) -> PathBuf) -> Result<HierarchySpec, String> {
    match raw {
        toml::Value::String(s) if s == "suppress" => Ok(HierarchySpec::Suppress),
        toml::Value::String(s) => Err(format!("unknown hierarchy \"{s}\" (expected \"suppress\" or a table)")),
        toml::Value::Table(_) => {
            let t: RawHierarchyTable =
                raw.clone().try_into().map_err(|e: toml::de::Error| format!("hierarchy: {}", e.message().trim()))?;
            let set = [t.mask.is_some(), t.intervals.is_some(), t.date.is_some(), t.file.is_some()];
            if set.iter().filter(|x| **x).count() != 1 {
                return Err("hierarchy needs exactly one of mask, intervals, date, file".into());
            }
            if let Some(m) = t.mask {
                if !(1..=64).contains(&m) {
                    return Err(format!("mask must be between 1 and 64, got {m}"));
                }
                return Ok(HierarchySpec::Mask(m as usize));
            }
            if let Some(w) = &t.intervals {
                if w.is_empty() || w.iter().any(|x| x.is_nan() || *x <= 0.0 || !x.is_finite()) {
                    return Err("intervals must be positive widths".into());
                }
                for pair in w.windows(2) {
                    let ratio = pair[1] / pair[0];
                    if pair[1] <= pair[0] || (ratio - ratio.round()).abs() > 1e-9 {
                        return Err(format!("interval width {} does not divide {}: bands must nest", pair[0], pair[1]));
                    }
                }
                return Ok(HierarchySpec::Intervals(w.clone()));
            }
            if let Some(d) = &t.date {
                if d.is_empty() || d.windows(2).any(|p| p[0] >= p[1]) {
                    return Err(
                        "date units must go from finer to coarser (month, quarter, year, decade, century)".into()
                    );
                }
                return Ok(HierarchySpec::Date(d.clone()));
            }
            Ok(HierarchySpec::File(resolve(t.file.as_deref().unwrap_or_default())))
        }
        other => Err(format!("a hierarchy is \"suppress\" or a table such as {{ mask = 2 }}, got {other}")),
    }
}

impl Job {
    /// Every file the job reads, described for messages: the job file, the
    /// source, its hierarchy files and a population file.
    pub fn input_files(&self) -> Vec<(String, &Path)> {
        let mut inputs = vec![("the job file".to_string(), self.path.as_path())];
        match &self.source {
            SourceSpec::Csv { path, .. } | SourceSpec::Parquet { path } => {
                inputs.push(("the source file".into(), path))
            }
            SourceSpec::Database { path, .. } => inputs.push(("the source database".into(), path)),
            _ => {}
        }
        for q in &self.quasi_identifiers {
            if let HierarchySpec::File(path) = &q.hierarchy {
                inputs.push((format!("the hierarchy file of \"{}\"", q.column.name), path));
            }
        }
        if let Some(PopulationTable::Csv { path, .. } | PopulationTable::Parquet(path)) = &self.risk.population_table {
            inputs.push(("[risk] population_table".into(), path));
        }
        inputs
    }

    /// Refuse (exit 2) an output file `what` that resolves to a file the job
    /// reads, or whose folder does not exist: checked before anything is read.
    /// A DuckDB output database may be the source database (`database_output`).
    pub fn check_output_file(&self, what: &str, path: &Path, database_output: bool) -> Result<()> {
        let file = self.path.display();
        let folder = path.parent().filter(|f| !f.as_os_str().is_empty()).unwrap_or(Path::new("."));
        if !folder.is_dir() {
            return Err(bad(format!(
                "{file}: {what} {}: the folder {} does not exist",
                path.display(),
                folder.display()
            )));
        }
        for (input, at) in self.input_files() {
            if database_output && matches!(&self.source, SourceSpec::Database { path: p, .. } if p == at) {
                continue;
            }
            if same_file(at, path) {
                return Err(bad(format!(
                    "{file}: {what} {} is {input} ({}); kanon never writes over what it reads",
                    path.display(),
                    at.display()
                )));
            }
        }
        Ok(())
    }
}

/// Two paths name the same file: compared as the file system resolves them
/// (`./x.csv` and `x.csv`, a symlink and its target, a path through `..`).
/// A path that does not exist yet is resolved through its folder.
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (resolved(a), resolved(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// A path as the file system resolves it; for a file not there yet, its
/// resolved folder and its name.
fn resolved(p: &Path) -> Option<PathBuf> {
    if let Ok(c) = std::fs::canonicalize(p) {
        return Some(c);
    }
    let name = p.file_name()?;
    let folder = p.parent().filter(|f| !f.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::canonicalize(folder).ok().map(|f| f.join(name))
}

/// The parts of a dotted table name: `a.b` is two parts, `"a.b"` one (a
/// double-quoted part may hold dots and `""` for a quote).
pub fn name_parts(name: &str) -> Result<Vec<String>, String> {
    let mut parts = Vec::new();
    let mut chars = name.trim().chars().peekable();
    loop {
        let mut part = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next() {
                    Some('"') if chars.peek() == Some(&'"') => {
                        chars.next();
                        part.push('"');
                    }
                    Some('"') => break,
                    Some(c) => part.push(c),
                    None => return Err(format!("\"{name}\" has an unclosed quote")),
                }
            }
            if !matches!(chars.peek(), None | Some('.')) {
                return Err(format!("\"{name}\": a quoted part must end at a dot"));
            }
        } else {
            while let Some(c) = chars.next_if(|c| *c != '.') {
                part.push(c);
            }
        }
        if part.is_empty() {
            return Err(format!("\"{name}\" has an empty part"));
        }
        parts.push(part);
        if chars.next().is_none() {
            return Ok(parts);
        }
    }
}

/// A DuckDB table as a job names it (`people`, `main.people`, `"odd.name"`):
/// the table's own name in schema `main`, where kanon reads and writes, so
/// that two spellings of one table compare equal. Another schema is refused.
pub fn local_table(name: &str) -> Result<String, String> {
    let mut parts = name_parts(name)?;
    match parts.len() {
        1 => Ok(parts.remove(0)),
        2 if parts[0].eq_ignore_ascii_case("main") => Ok(parts.remove(1)),
        _ => Err(format!(
            "\"{name}\": kanon reads and writes DuckDB tables of schema main; name the table as table or main.table"
        )),
    }
}

/// Parse a `--node age=3,education=1` argument against the job's QIs.
pub fn parse_levels(job: &Job, spec: &str) -> Result<Vec<u8>> {
    let names = job.qi_names();
    let mut levels = vec![None; names.len()];
    for part in spec.split(',').filter(|p| !p.trim().is_empty()) {
        let (name, level) =
            part.split_once('=').ok_or_else(|| bad(format!("--node: expected column=level, got \"{part}\"")))?;
        let i = names
            .iter()
            .position(|n| n == name.trim())
            .ok_or_else(|| bad(format!("--node: \"{}\" is not a quasi-identifier", name.trim())))?;
        let l: u8 = level
            .trim()
            .parse()
            .with_context(|| format!("--node: level for \"{name}\""))
            .map_err(|e| bad(format!("{e:#}")))?;
        levels[i] = Some(l);
    }
    levels
        .into_iter()
        .zip(&names)
        .map(|(l, n)| l.ok_or_else(|| bad(format!("--node: no level given for \"{n}\""))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"
[source]
csv = "data.csv"
[output]
database = "out.duckdb"
table = "rel"
[privacy]
k = 3
max_suppression = 0.01
[[quasi_identifiers]]
column = "zip"
hierarchy = { mask = 3 }
[[quasi_identifiers]]
column = "sex"
hierarchy = "suppress"
"#;

    #[test]
    fn parses_and_resolves_relative_paths() {
        let job = Job::parse(Path::new("/jobs/j.toml"), MINIMAL).unwrap();
        assert_eq!(job.source, SourceSpec::Csv { path: "/jobs/data.csv".into(), delimiter: None });
        assert_eq!(job.output.table.as_ref().unwrap().database, PathBuf::from("/jobs/out.duckdb"));
        assert_eq!(job.privacy.budget, Budget::Fraction(0.01));
        assert_eq!(job.quasi_identifiers[0].hierarchy, HierarchySpec::Mask(3));
        assert_eq!(job.quasi_identifiers[1].column.line, 14);
        assert_eq!(job.metric, Metric::Glm);
    }

    #[test]
    fn budget_rounds_down_or_counts() {
        assert_eq!(Budget::Fraction(0.01).rows(30162), 301);
        assert_eq!(Budget::Rows(7).rows(100), 7);
        assert_eq!(Budget::Rows(700).rows(100), 100);
    }

    #[test]
    fn integer_budget_is_a_row_count() {
        let job = Job::parse(Path::new("j.toml"), &MINIMAL.replace("0.01", "12")).unwrap();
        assert_eq!(job.privacy.budget, Budget::Rows(12));
    }

    #[test]
    fn rejects_non_nesting_intervals_and_malformed_toml() {
        let t = MINIMAL.replace("{ mask = 3 }", "{ intervals = [5, 12] }");
        let e = Job::parse(Path::new("j.toml"), &t).unwrap_err();
        assert!(format!("{e:#}").contains("does not divide"), "{e:#}");
        assert_eq!(crate::error::exit_code(&e), 2);
        let e = Job::parse(Path::new("j.toml"), "[source\ncsv=1").unwrap_err();
        assert!(format!("{e:#}").contains("line 1"), "{e:#}");
    }

    #[test]
    fn output_named_like_source_is_refused() {
        let t = MINIMAL
            .replace("csv = \"data.csv\"", "database = \"w.duckdb\"\ntable = \"REL\"")
            .replace("database = \"out.duckdb\"\n", "");
        let e = Job::parse(Path::new("j.toml"), &t).unwrap_err();
        assert!(format!("{e:#}").contains("source table"), "{e:#}");
    }

    #[test]
    fn a_file_source_may_release_to_files_only() {
        let files_only = MINIMAL.replace("database = \"out.duckdb\"\ntable = \"rel\"", "csv = \"out.csv\"");
        let job = Job::parse(Path::new("/jobs/j.toml"), &files_only).unwrap();
        assert!(job.output.table.is_none());
        assert_eq!(job.output.csv, Some(PathBuf::from("/jobs/out.csv")));
        let nothing = MINIMAL.replace("database = \"out.duckdb\"\ntable = \"rel\"", "report = \"r.json\"");
        let e = Job::parse(Path::new("j.toml"), &nothing).unwrap_err();
        assert!(format!("{e:#}").contains("for the release"), "{e:#}");
        let table_alone = MINIMAL.replace("database = \"out.duckdb\"\n", "");
        let e = Job::parse(Path::new("j.toml"), &table_alone).unwrap_err();
        assert!(format!("{e:#}").contains("table needs a database"), "{e:#}");
    }
}
