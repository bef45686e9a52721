//! The job as the page shows it: its SHA-256 and its text, secrets masked.

use super::JobSection;
use crate::job::Job;
use anyhow::{Context, Result};
use sha2::{Digest, Sha256};

/// The job file read again; a file changed since the run started is named,
/// not shown (its text would not be the job that ran).
pub(super) fn section(job: &Job) -> Result<JobSection> {
    let text = std::fs::read_to_string(&job.path).with_context(|| format!("reading {}", job.path.display()))?;
    let text = match format!("{:x}", Sha256::digest(text.as_bytes())) == job.sha256 {
        true => masked(job, &text),
        false => "(the job file changed while kanon ran: its text is not shown)".into(),
    };
    Ok(JobSection { path: job.path.display().to_string(), sha256: job.sha256.clone(), text })
}

/// `text` with the engine URL's secrets and the pseudonymization key masked.
fn masked(job: &Job, text: &str) -> String {
    let mut out = match job.engine.kind.url() {
        Some(url) => url.scrub(text),
        None => text.to_string(),
    };
    if let Some(key) = &job.output.key {
        out = key.mask(&out);
    }
    out
}
