//! A decimal as a job writes it, kept exact.

/// A non-negative rational number, as a job writes it: `0.2` is 2/10 exactly,
/// not the binary double nearest to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ratio {
    pub(crate) num: u64,
    pub(crate) den: u64,
}

impl Ratio {
    /// The decimal a TOML number was written as (the shortest decimal that
    /// reads back as `x`). None for a negative, non-finite or too long number.
    pub(crate) fn from_decimal(x: f64) -> Option<Ratio> {
        if !x.is_finite() || x < 0.0 {
            return None;
        }
        let text = format!("{x}");
        let (int, frac) = text.split_once('.').unwrap_or((&text, ""));
        let den = 10u64.checked_pow(frac.len() as u32)?;
        let int: u64 = int.parse().ok()?;
        let frac: u64 = if frac.is_empty() { 0 } else { frac.parse().ok()? };
        Some(Ratio { num: int.checked_mul(den)?.checked_add(frac)?, den })
    }

    pub(crate) fn value(self) -> f64 {
        self.num as f64 / self.den as f64
    }
}
