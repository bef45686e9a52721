//! Which role each column takes (the heuristics): an identifier or key is
//! dropped, a sensitive attribute released as it is with a model suggested,
//! a constant or a type kanon cannot generalize released as it is, a column
//! unique on (almost) every row dropped unless it is a date or a
//! measurement; everything else is a quasi-identifier with the built-in
//! hierarchy its type and values suggest, or, text with many values, is
//! released as it is with a warning. The lattice is then capped.

use super::hier::{Hier, Width};
use super::job_text::{grouped, toml_str};
use super::stats::{class_of, is_date, mask_shape, Class, Profile, UNITS};
use super::words::{identifier_word, words, SENSITIVE_WORDS};
use crate::error::bad;
use crate::sql::list;
use anyhow::Result;

/// Text with at most this many distinct values is a suppressible category; a
/// sensitive column with at most this many is suggested for ℓ-diversity.
pub(super) const FEW: i64 = 50;
/// A column with distinct values on at least this fraction of its non-NULL
/// rows is unique on (almost) every row.
pub(super) const NEAR_UNIQUE: f64 = 0.95;
/// The coarsest interval width leaves at most this many bands over the range.
pub(super) const TOP_BANDS: i64 = 5;
/// At most this many interval widths (levels below `*`).
pub(super) const MAX_WIDTHS: usize = 4;
/// At most this many masked characters (levels below `*`).
pub(super) const MAX_MASK: usize = 6;
/// At most this many nodes in the lattice of the written job (the product of
/// each QI's levels + 1): the searches enumerate it.
pub(super) const MAX_NODES: u64 = 500_000;

/// What init makes of a column.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Role {
    /// A quasi-identifier with this hierarchy (written to a file when the column has NULLs).
    Qi(Hier),
    /// Left out of the release; `key` when it could be pseudonymized instead.
    Drop { key: bool },
    /// Released as it is, a sensitive attribute: the ℓ-diversity (or t-closeness) suggestion.
    Sensitive(Option<String>),
    /// Released as it is.
    AsIs,
}

/// One column: what it holds, its role, and why.
pub(super) struct Choice {
    pub(super) profile: Profile,
    pub(super) role: Role,
    /// Why, one line each (after the line of facts).
    pub(super) why: Vec<String>,
    /// The hierarchy file written for a QI with NULLs (relative to the job).
    pub(super) file: Option<String>,
}

/// Every column's choice, in the source's column order.
pub(super) struct Chosen {
    /// Rows of the source.
    pub(super) rows: i64,
    pub(super) choices: Vec<Choice>,
    /// Quasi-identifiers dropped to keep the lattice within [`MAX_NODES`].
    pub(super) capped: usize,
}

impl Chosen {
    pub(super) fn any_qi(&self) -> bool {
        self.choices.iter().any(|c| matches!(c.role, Role::Qi(_)))
    }

    /// The names of the columns whose role `f` accepts, in column order.
    pub(super) fn names(&self, f: impl Fn(&Role) -> bool) -> Vec<String> {
        self.choices.iter().filter(|c| f(&c.role)).map(|c| c.profile.name.clone()).collect()
    }
}

/// Each column's role: from the aggregate pass alone where it settles it,
/// else after `detail` (the small queries a QI candidate needs); then the
/// lattice capped. An error when no column looks like a quasi-identifier.
pub(super) fn choose(
    rows: i64,
    profiles: Vec<Profile>,
    columns: &[(String, String)],
    src: &str,
    mut detail: impl FnMut(&mut Profile) -> Result<()>,
) -> Result<Chosen> {
    let mut choices = Vec::new();
    let mut pending = Vec::new();
    for p in profiles {
        match first_role(&p) {
            Some((role, why)) => choices.push(Choice { profile: p, role, why, file: None }),
            None => pending.push(p),
        }
    }
    for mut p in pending {
        detail(&mut p)?;
        let (role, why) = qi_role(&p);
        choices.push(Choice { profile: p, role, why, file: None });
    }
    // Back to the source's column order.
    let order: Vec<&String> = columns.iter().map(|c| &c.0).collect();
    choices.sort_by_key(|c| order.iter().position(|n| **n == c.profile.name));
    if !choices.iter().any(|c| matches!(c.role, Role::Qi(_))) {
        let lines = list(&choices, "\n", |c| format!("  {}: {}", c.profile.name, c.why.join(" ")));
        return Err(bad(format!(
            "no column of {src} looks like a quasi-identifier, and a job needs at least one; what init saw:\n{lines}"
        )));
    }
    let capped = cap_lattice(&mut choices);
    Ok(Chosen { rows, choices, capped })
}

/// Keep the lattice (the product of each QI's levels + 1) within
/// [`MAX_NODES`]: the QIs with the most distinct values stay (ties: column
/// order), the others are dropped, each saying why. Returns how many were.
fn cap_lattice(choices: &mut [Choice]) -> usize {
    let mut order: Vec<usize> = (0..choices.len()).filter(|&i| matches!(choices[i].role, Role::Qi(_))).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(choices[i].profile.distinct), i));
    let mut nodes: u64 = 1;
    let mut capped = 0;
    for i in order {
        let Role::Qi(h) = choices[i].role.clone() else { continue };
        let next = nodes.saturating_mul(h.height() + 1);
        if next <= MAX_NODES {
            nodes = next;
            continue;
        }
        let levels = h.height() + 1;
        let c = &mut choices[i];
        c.why.push(format!(
            "It would be a quasi-identifier ({}), but with it the search's lattice would exceed {} nodes",
            h.toml(),
            grouped(MAX_NODES as i64)
        ));
        c.why.push(format!(
            "(its {levels} levels times the others'); the quasi-identifiers with more distinct values were kept,"
        ));
        c.why
            .push("and this one is dropped: make it a QI in place of another, or keep it as it is if outsiders".into());
        c.why.push("cannot know it.".into());
        c.role = Role::Drop { key: false };
        capped += 1;
    }
    capped
}

/// The decisions that need no more than the first pass: identifiers,
/// sensitive columns, constants, near-unique columns. None: a QI candidate.
fn first_role(p: &Profile) -> Option<(Role, Vec<String>)> {
    let class = class_of(&p.type_name);
    let d = p.distinct;
    if d == 0 {
        return Some((Role::AsIs, vec!["Every row is NULL: nothing to generalize; released as it is.".into()]));
    }
    // A name says "identifier" only when the values are varied enough to be
    // one: a flag such as has_email or a phone_type with three values is not.
    let varied = d > FEW.min(p.non_null / 2).max(2);
    if let Some((word, key)) = identifier_word(&p.name).filter(|_| varied) {
        let what = if key { "a key" } else { "a direct identifier" };
        return Some((
            Role::Drop { key },
            vec![format!(
                "Its name (\"{word}\") marks {what}, and its values are varied: dropped from the release{}.",
                if key { " (or pseudonymized, see below)" } else { "" }
            )],
        ));
    }
    if let Some(word) = words(&p.name).into_iter().find(|w| SENSITIVE_WORDS.contains(&w.as_str())) {
        return Some(sensitive_role(p, &word));
    }
    if d + i64::from(p.non_null < p.rows) <= 1 {
        return Some((Role::AsIs, vec!["One value on every row: it tells no one apart; released as it is.".into()]));
    }
    if class == Class::Other && p.non_null >= 10 && d as f64 >= NEAR_UNIQUE * p.non_null as f64 {
        return Some((
            Role::Drop { key: false },
            vec![format!(
                "It is distinct on {:.0}% of its non-NULL rows, and kanon init picks no hierarchy for a {} column: dropped.",
                100.0 * d as f64 / p.non_null as f64,
                p.type_name
            )],
        ));
    }
    if class == Class::Other {
        return Some((
            Role::AsIs,
            vec![format!(
                "kanon init picks no hierarchy for a {} column: released as it is (drop it if it identifies anyone).",
                p.type_name
            )],
        ));
    }
    let near_unique = d as f64 >= NEAR_UNIQUE * p.non_null as f64 && p.non_null >= 10;
    if !near_unique {
        return None;
    }
    near_unique_role(p, class)
}

/// A column whose name marks a sensitive attribute (`word`): released as it
/// is, with the model the number of its values suggests.
fn sensitive_role(p: &Profile, word: &str) -> (Role, Vec<String>) {
    let class = class_of(&p.type_name);
    let d = p.distinct;
    let col = toml_str(&p.name);
    let (suggest, why) = if (2..=FEW).contains(&d) {
        (
            Some(format!("l_diversity = {{ column = {col}, l = 2 }}")),
            "few values: ℓ-diversity on it is suggested in [privacy].".to_string(),
        )
    } else if matches!(class, Class::Integer | Class::Decimal | Class::Temporal) && d > FEW {
        (
            Some(format!("t_closeness = {{ column = {col}, t = 0.2, distance = \"ordered\" }}")),
            "many values: t-closeness on it is suggested in [privacy].".to_string(),
        )
    } else {
        (None, "no model on it is suggested.".to_string())
    };
    (
        Role::Sensitive(suggest),
        vec![
            format!("Its name (\"{word}\") suggests a sensitive attribute, the value analysts study: released"),
            format!("as it is (not a quasi-identifier), {why}"),
        ],
    )
}

/// A column distinct on (almost) every row: a run of integers or text
/// without a date is a key or identifying text; None: a QI candidate.
fn near_unique_role(p: &Profile, class: Class) -> Option<(Role, Vec<String>)> {
    let d = p.distinct;
    let share = format!("distinct on {:.0}% of its non-NULL rows", 100.0 * d as f64 / p.non_null as f64);
    match class {
        Class::Integer => {
            let (lo, hi) = (p.min.unwrap_or(0.0), p.max.unwrap_or(0.0));
            // Below 100 rows, a unique run of integers may as well be ages.
            if hi - lo + 1.0 <= 2.0 * p.non_null as f64 && p.non_null >= 100 {
                return Some((
                    Role::Drop { key: true },
                    vec![format!(
                        "It is {share}, a run of integers with few gaps: a row key; dropped (or pseudonymized, see below)."
                    )],
                ));
            }
            None
        }
        Class::Text if !is_date(p) => {
            let key = !p.spaces;
            let kind = if key { "a code without spaces, so a key" } else { "text that identifies its row" };
            Some((
                Role::Drop { key },
                vec![format!(
                    "It is {share}: {kind}; dropped{}.",
                    if key { " (or pseudonymized, see below)" } else { "" }
                )],
            ))
        }
        _ => None,
    }
}

/// The hierarchy of a QI candidate, or why it is released as it is.
fn qi_role(p: &Profile) -> (Role, Vec<String>) {
    let class = class_of(&p.type_name);
    let d = p.distinct;
    if class == Class::Boolean {
        return (Role::Qi(Hier::Suppress), vec!["A flag: kept or suppressed as a whole.".into()]);
    }
    if is_date(p) {
        return date_role(p);
    }
    if let Some((len, lcp)) = mask_shape(p) {
        let n = (len - lcp).min(MAX_MASK);
        let merges = p.prefixes.is_some_and(|x| x < d);
        let one = if p.min_len == p.max_len { " of one length" } else { " named like a code" };
        let what = if class == Class::Integer {
            "Integers of one digit count, named like a code,".to_string()
        } else if p.digits {
            format!("Digit strings{}", if p.min_len == p.max_len { one } else { "" })
        } else {
            format!("Codes without spaces{one}")
        };
        if n >= 2 && merges {
            let shared = if lcp > 0 {
                format!(" (every value starts with the same {lcp} character{})", if lcp == 1 { "" } else { "s" })
            } else {
                String::new()
            };
            let top = if len - lcp > MAX_MASK {
                format!("the last {n} characters masked one by one, then *")
            } else {
                format!("{n} levels, masking one more character each{shared}")
            };
            return (
                Role::Qi(Hier::Mask(n)),
                vec![
                    format!("{what} sharing prefixes: a code read left to right, so"),
                    format!("masked from the right: {top}."),
                ],
            );
        }
        if d <= FEW {
            return (
                Role::Qi(Hier::Suppress),
                vec![format!("{what}, few values, no shared prefixes to mask: kept or suppressed as a whole.")],
            );
        }
    }
    match class {
        Class::Integer | Class::Decimal => numeric_role(p),
        _ if d <= FEW => (
            Role::Qi(Hier::Suppress),
            vec![format!("Few values (at most {FEW}): a category, kept or suppressed as a whole.")],
        ),
        _ => (
            Role::AsIs,
            vec![
                "Many values, neither an identifier nor a category: released as it is. If outsiders".into(),
                "could know it, it is a quasi-identifier: make it one with a { file = … } hierarchy, or drop it."
                    .into(),
            ],
        ),
    }
}

fn date_role(p: &Profile) -> (Role, Vec<String>) {
    let lv = p.date_levels.clone().unwrap_or_default();
    let years = lv.counts[2];
    let mut units = Vec::new();
    let mut prev = p.distinct;
    let mut seen = Vec::new();
    for (i, (unit, count)) in UNITS.iter().zip(lv.counts).enumerate() {
        // Quarters only for short spans, where a year is too coarse a next step.
        if i == 1 && years > 3 {
            continue;
        }
        if count < prev && count > 1 {
            units.push(*unit);
            let plural = if *unit == "century" { "centuries".to_string() } else { format!("{unit}s") };
            seen.push(format!("{} {plural}", grouped(count)));
            prev = count;
        }
    }
    let span = format!("from {} to {}", lv.first, lv.last);
    if units.is_empty() {
        return (
            Role::Qi(Hier::Suppress),
            vec![format!("Dates {span}: no date unit merges them below the top, so kept or suppressed as a whole.")],
        );
    }
    (
        Role::Qi(Hier::Date(units)),
        vec![
            format!("Dates {span} ({}):", seen.join(", ")),
            "each unit that merges values and leaves more than one is a level, then *.".into(),
        ],
    )
}

/// Nesting interval widths from the range: the coarsest leaves at most
/// [`TOP_BANDS`] bands; finer ones while a band holds two values on average.
fn numeric_role(p: &Profile) -> (Role, Vec<String>) {
    let integer = class_of(&p.type_name) == Class::Integer;
    let (lo, hi) = (p.min.unwrap_or(0.0), p.max.unwrap_or(0.0));
    if !lo.is_finite() || !hi.is_finite() {
        return (
            Role::AsIs,
            vec!["Its range is not finite (an infinite value): no bands fit; released as it is.".into()],
        );
    }
    let bands = |w: Width| ((hi / w.value()).floor() - (lo / w.value()).floor()) as i64 + 1;
    let span = (hi - lo).max(f64::MIN_POSITIVE);
    let mut top = Width { m: 1, e: span.log10().floor() as i32 - 2 };
    if integer && top.e < 0 {
        top = Width { m: 1, e: 0 };
    }
    while bands(top) > TOP_BANDS {
        top = top.coarser();
    }
    let d = p.distinct;
    if bands(top) >= d {
        return (
            Role::Qi(Hier::Suppress),
            vec![format!(
                "Few values ({d}) for their range: bands of width {} would not merge them, so kept or suppressed as a whole.",
                top.text()
            )],
        );
    }
    let mut widths = vec![top];
    let mut w = top;
    while widths.len() < MAX_WIDTHS {
        w = w.finer();
        if integer && w.e < 0 || 2 * bands(w) > d {
            break;
        }
        widths.push(w);
    }
    widths.reverse();
    let desc = list(&widths, ", ", |w| format!("{} bands of {}", bands(*w), w.text()));
    (
        Role::Qi(Hier::Intervals(widths)),
        vec![
            format!("Numbers: nesting bands ({desc}): the widest leaves at most {TOP_BANDS}, the"),
            "narrowest still holds two values a band on average; then *.".into(),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_nest() {
        let w = Width { m: 5, e: 1 };
        assert_eq!(w.finer(), Width { m: 1, e: 1 });
        assert_eq!(w.coarser(), Width { m: 1, e: 2 });
        assert_eq!(Width { m: 5, e: -1 }.text(), "0.5");
        let p = Profile {
            name: "age".into(),
            type_name: "BIGINT".into(),
            non_null: 1000,
            distinct: 73,
            min: Some(17.0),
            max: Some(90.0),
            ..Default::default()
        };
        let (role, _) = numeric_role(&p);
        assert_eq!(
            role.clone(),
            Role::Qi(Hier::Intervals(vec![Width { m: 5, e: 0 }, Width { m: 1, e: 1 }, Width { m: 2, e: 1 }]))
        );
        if let Role::Qi(h) = role {
            assert_eq!(h.toml(), "{ intervals = [5, 10, 20] }");
        }
    }
}
