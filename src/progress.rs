//! Progress on stderr: a bar for searches, a spinner for phases of unknown
//! length. Hidden with `--quiet` or when stderr is not a terminal.

use std::io::IsTerminal;

/// A progress bar on stderr, hidden when quiet or when stderr is not a terminal.
pub fn progress(quiet: bool) -> indicatif::ProgressBar {
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
pub fn spinner(quiet: bool) -> indicatif::ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new_spinner();
    bar.set_style(indicatif::ProgressStyle::with_template("{spinner} {msg} {elapsed}").expect("valid template"));
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    bar
}
