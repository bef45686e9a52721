//! The job file as read: its name and lines for messages, its folder for
//! relative paths. Every message about the job starts with an [`At`], built here.

use super::Column;
use crate::error::bad;
use anyhow::Result;
use serde::de::DeserializeOwned;
use std::fmt::Display;
use std::path::{Path, PathBuf};
use toml::Spanned;

pub(super) struct JobText<'a> {
    /// The job file, as messages name it.
    name: String,
    text: &'a str,
    /// Relative paths are resolved against it.
    dir: PathBuf,
}

impl<'a> JobText<'a> {
    pub(super) fn new(path: &Path, text: &'a str) -> JobText<'a> {
        JobText {
            name: path.display().to_string(),
            text,
            dir: path.parent().map(Path::to_path_buf).unwrap_or_default(),
        }
    }

    /// The TOML as written, or where it does not parse: the line and column,
    /// not the line's text (it may hold a password or a token).
    pub(super) fn toml<T: DeserializeOwned>(&self) -> Result<T> {
        toml::from_str(self.text).map_err(|e| {
            let at = e.span().map_or(String::new(), |s| {
                let column =
                    self.text.get(..s.start).and_then(|t| t.rsplit('\n').next()).map_or(0, |l| l.chars().count()) + 1;
                format!(" at line {}, column {column}", self.line_of(s.start))
            });
            self.at().bad(format_args!("invalid job file{at}: {}", e.message().trim()))
        })
    }

    /// A path as the job writes it, resolved against the job file's folder.
    pub(super) fn resolve(&self, p: &str) -> PathBuf {
        let p = Path::new(p);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.dir.join(p)
        }
    }

    /// 1-based line of a byte offset.
    pub(super) fn line_of(&self, offset: usize) -> usize {
        self.text[..offset.min(self.text.len())].matches('\n').count() + 1
    }

    /// A column named in the job, with its line.
    pub(super) fn column(&self, s: &Spanned<String>) -> Column {
        Column { name: s.get_ref().clone(), line: self.line_of(s.span().start) }
    }

    /// `{file}: `
    pub(super) fn at(&self) -> At {
        At(format!("{}: ", self.name))
    }

    /// `{file}: [{section}] `
    pub(super) fn section(&self, section: &str) -> At {
        self.at().section(section)
    }

    /// `{file}:{line}: `
    pub(super) fn line(&self, line: usize) -> At {
        At(format!("{}:{line}: ", self.name))
    }
}

/// The start of a message about the job: the file, maybe a line, maybe a
/// section; the messages themselves never repeat it.
pub(super) struct At(String);

impl At {
    /// This place, then `[{section}] `.
    pub(super) fn section(&self, section: &str) -> At {
        At(format!("{}[{section}] ", self.0))
    }

    /// A bad-input error (exit 2): this place, then `msg`.
    pub(super) fn bad(&self, msg: impl Display) -> anyhow::Error {
        bad(format!("{}{msg}", self.0))
    }
}

#[cfg(test)]
mod tests {
    use crate::job::Job;
    use std::path::Path;

    #[test]
    fn malformed_toml_says_where() {
        let e = Job::parse(Path::new("j.toml"), "[source\ncsv=1").unwrap_err();
        assert!(format!("{e:#}").contains("line 1"), "{e:#}");
    }
}
