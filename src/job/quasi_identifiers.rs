//! `[[quasi_identifiers]]`: the columns generalized, each with its hierarchy.

use super::text::JobText;
use super::Column;
use anyhow::Result;
use serde::Deserialize;
use std::path::PathBuf;
use toml::Spanned;

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
    pub(crate) column: Column,
    pub(crate) hierarchy: HierarchySpec,
    /// False when the job names none: only CNDGH runs so (it never reads a
    /// hierarchy), and `hierarchy` is then "suppress".
    pub(crate) hierarchy_given: bool,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawQi {
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

pub(super) fn parse(raw: &[RawQi], job: &JobText) -> Result<Vec<QuasiIdentifier>> {
    if raw.is_empty() {
        return Err(job.at().bad("no [[quasi_identifiers]] given"));
    }
    let mut quasi_identifiers = Vec::new();
    for q in raw {
        let col = job.column(&q.column);
        let at = job.line(col.line);
        if quasi_identifiers.iter().any(|x: &QuasiIdentifier| x.column.name == col.name) {
            return Err(at.bad(format_args!("quasi-identifier \"{}\" is listed twice", col.name)));
        }
        let hierarchy = match &q.hierarchy {
            Some(h) => hierarchy_spec(h.get_ref(), job)
                .map_err(|m| at.bad(format_args!("quasi-identifier \"{}\": {m}", col.name)))?,
            None => HierarchySpec::Suppress,
        };
        quasi_identifiers.push(QuasiIdentifier { column: col, hierarchy, hierarchy_given: q.hierarchy.is_some() });
    }
    Ok(quasi_identifiers)
}

/// A QI's `hierarchy`: "suppress" or a table, read here (not by serde's
/// untagged enums) so that a bad table says what is wrong with it.
pub(super) fn hierarchy_spec(raw: &toml::Value, job: &JobText) -> Result<HierarchySpec, String> {
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
            Ok(HierarchySpec::File(job.resolve(t.file.as_deref().unwrap_or_default())))
        }
        other => Err(format!("a hierarchy is \"suppress\" or a table such as {{ mask = 2 }}, got {other}")),
    }
}

#[cfg(test)]
mod tests {
    use crate::job::tests::MINIMAL;
    use crate::job::Job;
    use std::path::Path;

    #[test]
    fn rejects_non_nesting_intervals() {
        let t = MINIMAL.replace("{ mask = 3 }", "{ intervals = [5, 12] }");
        let e = Job::parse(Path::new("j.toml"), &t).unwrap_err();
        assert!(format!("{e:#}").contains("does not divide"), "{e:#}");
        assert_eq!(crate::error::exit_code(&e), 2);
    }
}
