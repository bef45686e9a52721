//! Progress on stderr: a bar for searches, a spinner for phases of unknown
//! length. Hidden with `--quiet` or when stderr is not a terminal.

use std::io::IsTerminal;

/// A progress bar on stderr, hidden when quiet or when stderr is not a terminal.
pub(crate) fn progress(quiet: bool) -> indicatif::ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(0);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} {msg} [{bar:30}] {pos}/{len} {elapsed}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar
}

/// A spinner with a phase message and the time elapsed, for phases of unknown
/// length (loading, writing); hidden like [`progress`].
pub(crate) fn spinner(quiet: bool) -> indicatif::ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new_spinner();
    bar.set_style(indicatif::ProgressStyle::with_template("{spinner} {msg} {elapsed}").expect("valid template"));
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    bar
}

/// Where a search tells how far it is: steps done out of a total, and what it
/// is doing. Searches see this, not a terminal type; every method defaults to
/// nothing, so [`Silent`] is a sink for tests and library callers.
pub trait Progress {
    /// A new stretch of `total` steps, none done yet.
    fn start(&self, _total: u64, _message: &str) {}
    fn message(&self, _message: String) {}
    fn advance(&self, _steps: u64) {}
    fn position(&self, _done: u64) {}
    /// Still alive, no step to count.
    fn tick(&self) {}
}

/// No progress shown.
pub struct Silent;

impl Progress for Silent {}

impl Progress for indicatif::ProgressBar {
    fn start(&self, total: u64, message: &str) {
        self.set_length(total);
        self.set_position(0);
        self.set_message(message.to_string());
    }
    fn message(&self, message: String) {
        self.set_message(message);
    }
    fn advance(&self, steps: u64) {
        self.inc(steps);
    }
    fn position(&self, done: u64) {
        self.set_position(done);
    }
    fn tick(&self) {
        indicatif::ProgressBar::tick(self);
    }
}
