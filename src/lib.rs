//! kanon: k-anonymity (and ℓ-diversity) by full-domain generalization and
//! record suppression, with the data work pushed down into DuckDB.
//!
//! Flow (`kanon run`, `anonymize`): [`job`] → [`load`] (the source through
//! [`engine`], [`data`]'s hierarchies and frequency sets) → a [`search`]
//! asking the [`evaluator`] about [`lattice`] nodes and judging them with
//! [`measure`] → a [`release::Recoding`] → [`release::write`] → the report.
//! docs/architecture.md is the map.

// The public surface: what the binary, the tests and a library user reach.
// Inside these modules only the items used from outside the crate are `pub`
// (the tests compare searches, evaluators and engines directly); everything
// else is `pub(crate)`.
pub mod cli;
pub mod data;
pub mod engine;
pub mod evaluator;
pub mod job;
pub mod lattice;
pub mod load;
pub mod measure;
pub mod options;
pub mod progress;
pub mod pseudonym;
pub mod release;
pub mod search;
/// The recoding of a full-domain node (its suppressed classes read off the base frequency set).
pub use anonymize::full_domain::recoding as full_domain_recoding;

// Inside kanon only.
mod anonymize;
mod audit;
mod cmd;
mod error;
mod html;
mod pareto;
mod profile;
mod report;
mod scale;
mod sql;

static STARTED: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();

/// A failure injected at the named step when `KANON_FAULT` names it: how the
/// tests reach the steps between a release's writes that a real engine fails
/// at only rarely (a connection lost between two renames), to check that
/// each leaves the previous release in place.
pub fn fault(step: &str) -> anyhow::Result<()> {
    match std::env::var("KANON_FAULT") {
        Ok(v) if v == step => Err(anyhow::anyhow!("injected fault at {step} (KANON_FAULT)")),
        _ => Ok(()),
    }
}

/// The time the process started (the first call, which `main` makes first).
pub fn started() -> std::time::Instant {
    *STARTED.get_or_init(std::time::Instant::now)
}

/// Hands the free memory jemalloc (the process's allocator, main.rs) holds
/// back to the system, before a statement that allocates much: what DuckDB
/// freed after the last statement would otherwise count in the process's
/// memory until jemalloc's decay returns it. The trace says how much each
/// call returned.
pub fn trim_heap(before_what: &str) {
    #[cfg(not(target_env = "msvc"))]
    {
        // Read only for the trace line.
        let held = if tracing() { resident_bytes() } else { 0 };
        // MALLCTL_ARENAS_ALL (4096): every arena.
        let name = b"arena.4096.purge\0";
        // SAFETY: "arena.<i>.purge" reads and writes nothing through the pointers.
        let rc = unsafe {
            tikv_jemalloc_sys::mallctl(
                name.as_ptr().cast(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
            )
        };
        trace(|| {
            let failed = if rc == 0 { String::new() } else { format!(" (mallctl failed: {rc})") };
            format!("heap purged before {before_what}: RSS {} → {} MiB{failed}", held >> 20, resident_bytes() >> 20)
        });
    }
    #[cfg(target_env = "msvc")]
    let _ = before_what;
}

/// The process's resident set, in bytes (0 where /proc cannot tell).
#[cfg(not(target_env = "msvc"))]
fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm.split_whitespace().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    pages * unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(0) as u64
}

/// The machine's memory, in bytes (None where the system cannot tell).
pub fn physical_memory() -> Option<u64> {
    // SAFETY: sysconf has no preconditions.
    let (pages, size) = unsafe { (libc::sysconf(libc::_SC_PHYS_PAGES), libc::sysconf(libc::_SC_PAGESIZE)) };
    (pages > 0 && size > 0).then(|| pages as u64 * size as u64)
}

/// Diagnostics on stderr when `KANON_TRACE` is set (per-phase and per-rollup
/// timings and volumes, after the seconds since the start); the message is
/// built only then.
pub fn trace(message: impl FnOnce() -> String) {
    if tracing() {
        eprintln!("TRACE {:8.3}s {}", started().elapsed().as_secs_f64(), message());
    }
}

/// Is `KANON_TRACE` set?
fn tracing() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("KANON_TRACE").is_some())
}
