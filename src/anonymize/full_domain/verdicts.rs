//! The per-class models' verdicts (entropy or recursive ℓ, t-closeness) on
//! the chosen node's classes: which classes they reject, and what the kept
//! classes reach, for the release, am and the report's figures.

use crate::data::hierarchy::divisors;
use crate::load::Loaded;
use crate::measure::privacy::{ClassFigures, ClassModels};
use crate::sql::{self, list, render};
use anyhow::Result;
use std::collections::{BTreeMap, HashSet};

/// A full-domain node's classes judged by the per-class models: read once,
/// off the base frequency set or from the classes in memory. Empty without
/// such models.
#[derive(Default)]
pub(super) struct Judged {
    /// Per class (codes at the node's levels): its (code, records) lists of
    /// the s and (when t-closeness reads its own column) t columns.
    lists: BTreeMap<Box<[i64]>, [Vec<(u32, u64)>; 2]>,
    /// The classes the models reject.
    pub(crate) rejected: Vec<Box<[i64]>>,
    /// What the kept classes reach, judged on the remote engine's distinct
    /// value lists (the classes themselves stay there).
    there: Option<ClassFigures>,
}

impl Judged {
    /// The node's classes at `levels`, read off the base frequency set.
    pub(crate) fn read(source: &Loaded, levels: &[u8]) -> Result<Judged> {
        let models = &source.models;
        let mut judged = Judged::default();
        if models.is_empty() {
            return Ok(judged);
        }
        let n = levels.len();
        let div = divisors(&source.conn, n)?;
        let columns: &[&str] = if models.separate { &["s", "t"] } else { &["s"] };
        for (j, column) in columns.iter().enumerate() {
            let q = render(
                sql::fragment(sql::NODE_CLASSES, "class_lists"),
                &[
                    (
                        "classes",
                        &list(0..n, ", ", |a| format!("(p.g{a} // {})::BIGINT AS c{a}", div[a][levels[a] as usize])),
                    ),
                    ("class_cols", &list(0..n, ", ", |a| format!("c.c{a}"))),
                    ("column", column),
                ],
            );
            let mut stmt = source.conn.prepare(&q)?;
            let mut rows = stmt.query([])?;
            while let Some(r) = rows.next()? {
                let key = (0..n).map(|a| r.get::<_, i64>(a)).collect::<duckdb::Result<Box<[i64]>>>()?;
                judged.lists.entry(key).or_default()[j] = crate::evaluator::sql::value_list(r.get(n)?);
            }
        }
        Ok(judged.judge(models))
    }

    /// The verdicts the engine evaluator reached there: the kept classes' figures.
    pub(crate) fn there(figures: Option<ClassFigures>) -> Judged {
        Judged { there: figures, ..Judged::default() }
    }

    /// The same from a node's classes in memory: per class its codes at the
    /// node's levels and its (code, records) lists, as [`Self::read`] reads
    /// them off the base frequency set.
    pub(crate) fn of_classes(source: &Loaded, codes: &[Box<[i64]>], lists: Vec<[Vec<(u32, u64)>; 2]>) -> Judged {
        if source.models.is_empty() {
            return Judged::default();
        }
        Judged { lists: codes.iter().cloned().zip(lists).collect(), ..Judged::default() }.judge(&source.models)
    }

    /// The classes whose lists the models reject.
    fn judge(mut self, models: &ClassModels) -> Judged {
        self.rejected =
            self.lists.iter().filter(|(_, [s, t])| !models.admits(s, t)).map(|(key, _)| key.clone()).collect();
        self
    }

    /// What the classes not `dropped` reach under the per-class models (None without such models).
    pub(crate) fn kept_figures(&self, source: &Loaded, dropped: &[Box<[i64]>]) -> Option<ClassFigures> {
        if source.models.is_empty() {
            return None;
        }
        if self.there.is_some() {
            return self.there.clone();
        }
        let dropped: HashSet<&[i64]> = dropped.iter().map(|d| &d[..]).collect();
        let kept = self.lists.iter().filter(|(key, _)| !dropped.contains(&key[..]));
        Some(source.models.figures(kept.map(|(_, [s, t])| (s.as_slice(), t.as_slice()))))
    }
}
