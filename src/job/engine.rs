//! `[engine]`: where the job runs (embedded DuckDB, or a Spark or PostgreSQL
//! server) and DuckDB's resources.

use super::text::JobText;
use anyhow::Result;
use serde::Deserialize;
use std::path::PathBuf;

#[derive(Debug, Clone, Default)]
pub struct Engine {
    pub(crate) threads: Option<u64>,
    /// Largest base frequency set (rows) evaluated in memory; None: the default.
    pub(crate) memory_rows: Option<u64>,
    /// `evaluator`: where a node's classes are counted.
    pub(crate) evaluator: EvaluatorSide,
    pub(crate) memory_limit: Option<String>,
    pub(crate) temp_directory: Option<PathBuf>,
    /// Where the source is read and the release written.
    pub kind: EngineKind,
}

/// `[engine] evaluator`: where the search counts a node's classes. `Auto`
/// (the default) holds the base frequency set in kanon when it has at most
/// `memory_rows` rows and leaves it to the engine's SQL otherwise; `Memory`
/// and `Engine` force a side (on DuckDB, the engine's side is its SQL backend).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EvaluatorSide {
    #[default]
    Auto,
    Memory,
    Engine,
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
    pub(crate) fn name(&self) -> &'static str {
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
    pub(crate) fn scrub(&self, text: &str) -> String {
        let mut secrets = self.secrets();
        // The longest first: a secret that holds another is masked whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.iter().fold(text.to_string(), |t, s| t.replace(s, "***"))
    }

    /// The URL for messages, its secrets masked.
    pub(crate) fn shown(&self) -> String {
        self.scrub(&self.0)
    }
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawEngine {
    kind: Option<String>,
    url: Option<String>,
    threads: Option<u64>,
    memory_rows: Option<u64>,
    evaluator: Option<String>,
    memory_limit: Option<String>,
    temp_directory: Option<String>,
}

/// `kind` and `url`: read first, since the engine decides which source and
/// release forms the job may name.
pub(super) fn kind(raw: &RawEngine, job: &JobText) -> Result<EngineKind> {
    let at = job.section("engine");
    Ok(match (raw.kind.as_deref(), &raw.url) {
        (Some("postgres"), Some(url)) if url.starts_with("postgresql://") || url.starts_with("postgres://") => {
            EngineKind::Postgres(SecretUrl(url.clone()))
        }
        (Some("postgres"), Some(_)) => {
            return Err(at.bad("url must be a PostgreSQL URL, postgresql://user@host:port/database"))
        }
        (Some("postgres"), None) => {
            return Err(at.bad("kind = \"postgres\" needs url = \"postgresql://user@host:port/database\""))
        }
        (None | Some("duckdb"), None) => EngineKind::DuckDb,
        (None | Some("duckdb"), Some(_)) => return Err(at.bad("url applies to kind = \"spark\" or \"postgres\" only")),
        (Some("spark"), Some(url)) if url.starts_with("sc://") => EngineKind::Spark(SecretUrl(url.clone())),
        (Some("spark"), Some(url)) => {
            return Err(at.bad(format_args!(
                "url must be a Spark Connect endpoint, sc://host:port, got \"{}\"",
                SecretUrl(url.clone()).shown()
            )))
        }
        (Some("spark"), None) => return Err(at.bad("kind = \"spark\" needs url = \"sc://host:port\"")),
        (Some(other), _) => {
            return Err(at.bad(format_args!("kind must be \"duckdb\", \"spark\" or \"postgres\", got \"{other}\"")))
        }
    })
}

/// The rest of `[engine]`, around the `kind` read first.
pub(super) fn settings(raw: &RawEngine, kind: EngineKind, job: &JobText) -> Result<Engine> {
    if raw.threads == Some(0) {
        return Err(job.section("engine").bad("threads must be at least 1"));
    }
    let evaluator = match raw.evaluator.as_deref() {
        None | Some("auto") => EvaluatorSide::Auto,
        Some("memory") => EvaluatorSide::Memory,
        Some("engine") => EvaluatorSide::Engine,
        Some(other) => {
            return Err(job
                .section("engine")
                .bad(format_args!("evaluator must be \"auto\", \"memory\" or \"engine\", got \"{other}\"")))
        }
    };
    Ok(Engine {
        threads: raw.threads,
        memory_rows: raw.memory_rows,
        evaluator,
        memory_limit: raw.memory_limit.clone(),
        temp_directory: raw.temp_directory.as_deref().map(|p| job.resolve(p)),
        kind,
    })
}
