//! How a job names things: tables (dotted, maybe quoted) and files (compared
//! as the file system resolves them).

use std::path::{Path, PathBuf};

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
