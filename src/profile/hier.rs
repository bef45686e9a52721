//! The built-in hierarchies init chooses from, as the job file spells them.

use crate::sql::list;

/// An interval width m · 10^e, m ∈ {1, 2, 5}: each divides the next coarser one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Width {
    pub(super) m: i64,
    pub(super) e: i32,
}

impl Width {
    pub(super) fn value(self) -> f64 {
        self.m as f64 * 10f64.powi(self.e)
    }
    pub(super) fn coarser(self) -> Width {
        match self.m {
            1 => Width { m: 2, e: self.e },
            2 => Width { m: 5, e: self.e },
            _ => Width { m: 1, e: self.e + 1 },
        }
    }
    pub(super) fn finer(self) -> Width {
        match self.m {
            5 => Width { m: 1, e: self.e },
            2 => Width { m: 1, e: self.e },
            _ => Width { m: 5, e: self.e - 1 },
        }
    }
    pub(super) fn text(self) -> String {
        if self.e >= 0 {
            format!("{}", self.m * 10i64.pow(self.e as u32))
        } else {
            format!("{:.*}", (-self.e) as usize, self.value())
        }
    }
}

/// A built-in hierarchy: kept or suppressed whole, masked from the right,
/// nesting interval widths, or date units.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Hier {
    Suppress,
    Mask(usize),
    Intervals(Vec<Width>),
    Date(Vec<&'static str>),
}

impl Hier {
    pub(super) fn toml(&self) -> String {
        match self {
            Hier::Suppress => "\"suppress\"".into(),
            Hier::Mask(n) => format!("{{ mask = {n} }}"),
            Hier::Intervals(w) => {
                let float = w.iter().any(|w| w.e < 0);
                let items = list(w, ", ", |w| if float && w.e >= 0 { format!("{}.0", w.text()) } else { w.text() });
                format!("{{ intervals = [{items}] }}")
            }
            Hier::Date(u) => format!("{{ date = [{}] }}", list(u, ", ", |u| format!("\"{u}\""))),
        }
    }
    /// Levels of a hierarchy above its leaves (at most: a mask gets a `*` level
    /// only when its last level still has several values).
    pub(super) fn height(&self) -> u64 {
        match self {
            Hier::Suppress => 1,
            Hier::Mask(n) => *n as u64 + 1,
            Hier::Intervals(w) => w.len() as u64 + 1,
            Hier::Date(u) => u.len() as u64 + 1,
        }
    }
}
