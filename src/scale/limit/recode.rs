//! How the write recodes each QI: the cheapest SQL expression its hierarchy
//! allows at the node, or a join to its value → label map.

use crate::engine::embedded::SourceColumn;
use crate::engine::types::ColumnType;
use crate::job::{DateUnit, HierarchySpec, Job};
use crate::sql::{self, fragment, ident, render};

/// How the write recodes one QI.
pub(super) enum Recode {
    /// An SQL expression over the source row `s`.
    Expression(String),
    /// A join to the QI's value → label map.
    Map,
}

/// The cheapest SQL a QI's hierarchy allows at `level`: the value itself at
/// the leaves, a constant at the top, an expression for a built-in hierarchy,
/// the map for a file.
pub(super) fn plain(job: &Job, columns: &[SourceColumn], a: usize, level: u8, height: u8) -> Recode {
    let qi = &job.quasi_identifiers[a];
    let col = ident(&qi.column.name);
    let type_name = columns.iter().find(|c| c.name == qi.column.name).map_or("", |c| c.type_name.as_str());
    let typed = |kind: &str, cast: &str| {
        if type_name.to_ascii_uppercase().starts_with(kind) {
            format!("s.{col}")
        } else {
            format!("TRY_CAST(s.{col} AS {cast})")
        }
    };
    let l = level as usize;
    if l == 0 {
        return Recode::Expression(format!("s.{col}"));
    }
    if l == height as usize && !matches!(qi.hierarchy, HierarchySpec::File(_) | HierarchySpec::Mask(_)) {
        return Recode::Expression("'*'".into());
    }
    let frag = |name: &str, slots: &[(&str, &str)]| Recode::Expression(render(fragment(sql::LIMIT, name), slots));
    match &qi.hierarchy {
        // A mask's extra top level (values of several lengths) is one '*'.
        HierarchySpec::Mask(n) if l > *n => Recode::Expression("'*'".into()),
        HierarchySpec::Mask(_) => frag("mask", &[("col", &col), ("i", &l.to_string()), ("stars", &"*".repeat(l))]),
        HierarchySpec::Intervals(widths) => {
            let x = if ColumnType::of(type_name).is_number() {
                format!("s.{col}")
            } else {
                format!("TRY_CAST(s.{col} AS DOUBLE)")
            };
            frag("interval", &[("x", &x), ("width", &format!("{:?}", widths[l - 1]))])
        }
        HierarchySpec::Date(units) => {
            let d = typed("DATE", "DATE");
            let d = if d.starts_with("TRY_CAST") { typed("TIMESTAMP", "DATE") } else { d };
            let unit = match units[l - 1] {
                DateUnit::Month => "month",
                DateUnit::Quarter => "quarter",
                DateUnit::Year => "year",
                DateUnit::Decade => "decade",
                DateUnit::Century => "century",
            };
            frag(unit, &[("d", &d)])
        }
        HierarchySpec::Suppress => Recode::Expression("'*'".into()),
        HierarchySpec::File(_) => Recode::Map,
    }
}

/// The value → label map of QI `a` at its level.
pub(super) fn map_table(a: usize) -> String {
    format!("kanon_limit_map{a}")
}
