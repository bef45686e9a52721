//! Failure kinds that map to exit codes (2 bad input, 3 infeasible, 4 a
//! failed check). Everything else is exit 1.
//!
//! The marker travels at the root of an `anyhow` chain, so context added on the
//! way up (file, column, line) keeps the kind.

use std::fmt;

/// Bad job or input: exit 2.
#[derive(Debug)]
pub(crate) struct BadInput(pub String);

/// No generalization satisfies the privacy requirement within the budget: exit 3.
#[derive(Debug)]
pub(crate) struct Infeasible(pub String);

/// `kanon check`: the table does not meet a model of the job: exit 4. One
/// line per failing model, each shown as an error line of its own.
#[derive(Debug)]
pub(crate) struct CheckFailed(pub Vec<String>);

impl fmt::Display for BadInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl fmt::Display for Infeasible {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl fmt::Display for CheckFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The command line prefixes the first line with "kanon: "; the others get it here.
        f.write_str(&self.0.join("\nkanon: "))
    }
}
impl std::error::Error for BadInput {}
impl std::error::Error for Infeasible {}
impl std::error::Error for CheckFailed {}

/// A bad-input error with this message.
pub(crate) fn bad(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(BadInput(msg.into()))
}

/// The process exit code for an error chain.
pub(crate) fn exit_code(err: &anyhow::Error) -> i32 {
    if err.chain().any(|e| e.downcast_ref::<BadInput>().is_some()) {
        2
    } else if err.chain().any(|e| e.downcast_ref::<Infeasible>().is_some()) {
        3
    } else if err.chain().any(|e| e.downcast_ref::<CheckFailed>().is_some()) {
        4
    } else {
        1
    }
}

/// Mark any error as bad input, keeping its message (e.g. a CSV that does not parse).
pub(crate) trait OrBadInput<T> {
    fn or_bad_input(self, what: impl FnOnce() -> String) -> anyhow::Result<T>;
}

impl<T, E: fmt::Display> OrBadInput<T> for Result<T, E> {
    fn or_bad_input(self, what: impl FnOnce() -> String) -> anyhow::Result<T> {
        self.map_err(|e| bad(format!("{}: {e}", what())))
    }
}

/// A hint for resource failures DuckDB reports in its own words: what ran out
/// and which `[engine]` setting to change. None for other errors.
pub(crate) fn resource_hint(err: &anyhow::Error) -> Option<&'static str> {
    let text = format!("{err:#}");
    if text.contains("Out of Memory") || text.contains("could not allocate") {
        Some(
            "DuckDB ran out of memory: raise [engine] memory_limit, or set [engine] temp_directory to a disk \
             with room so large operations spill there; nothing was released",
        )
    } else if text.contains("No space left on device") || text.contains("disk is full") {
        Some(
            "the disk is full (the output folder, or the spill folder [engine] temp_directory): free space or \
             point temp_directory elsewhere; nothing was released",
        )
    } else {
        None
    }
}
