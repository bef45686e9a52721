//! Figures as the page shows them, each with the report's key it comes from
//! (`data-key` in the page: the browser test compares them with the JSON).

use serde::Serialize;
use serde_json::Value;

/// A figure: the report's key (a dotted path into the JSON report), its text,
/// and its unit ("%" for a share shown as a percentage).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Figure {
    pub(crate) key: String,
    pub(crate) shown: String,
    pub(crate) unit: &'static str,
}

/// A count: 32,561.
pub(crate) fn count(key: &str, n: u64) -> Figure {
    let digits = n.to_string();
    let mut shown = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            shown.push(',');
        }
        shown.push(c);
    }
    Figure { key: key.into(), shown, unit: "" }
}

/// A number with four significant digits.
pub(crate) fn number(key: &str, x: f64) -> Figure {
    Figure { key: key.into(), shown: significant(x), unit: "" }
}

/// A share (0..1) as a percentage with four significant digits.
pub(crate) fn share(key: &str, x: f64) -> Figure {
    Figure { key: key.into(), shown: significant(100.0 * x), unit: "%" }
}

/// A figure the page has no value for.
pub(crate) fn none(key: &str) -> Figure {
    Figure { key: key.into(), shown: "—".into(), unit: "" }
}

/// Any figure of the JSON report: a count, a number, a share when `is_share`.
pub(crate) fn figure(key: &str, value: &Value, is_share: bool) -> Figure {
    match value {
        Value::Number(n) if n.as_u64().is_some() && !is_share => count(key, n.as_u64().unwrap_or_default()),
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(f64::NAN);
            if is_share {
                share(key, x)
            } else {
                number(key, x)
            }
        }
        Value::Null => none(key),
        Value::Bool(b) => Figure { key: key.into(), shown: if *b { "yes" } else { "no" }.into(), unit: "" },
        Value::String(s) => Figure { key: key.into(), shown: s.clone(), unit: "" },
        other => Figure { key: key.into(), shown: other.to_string(), unit: "" },
    }
}

/// `x` with four significant digits, trailing zeros dropped.
pub(crate) fn significant(x: f64) -> String {
    if !x.is_finite() {
        return if x.is_nan() { "—".into() } else { "∞".into() };
    }
    if x == 0.0 {
        return "0".into();
    }
    let magnitude = x.abs().log10().floor() as i32;
    let decimals = (3 - magnitude).clamp(0, 10) as usize;
    let text = format!("{x:.decimals$}");
    match text.contains('.') {
        true => text.trim_end_matches('0').trim_end_matches('.').to_string(),
        false => text,
    }
}

/// The value at a dotted path of the report.
pub(crate) fn at<'a>(report: &'a Value, key: &str) -> &'a Value {
    key.split('.').try_fold(report, |v, part| v.get(part)).unwrap_or(&Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_read_as_written() {
        assert_eq!(count("n", 32561).shown, "32,561");
        assert_eq!(count("n", 100).shown, "100");
        assert_eq!(significant(0.000123456), "0.0001235");
        assert_eq!(significant(12.5), "12.5");
        assert_eq!(share("s", 0.5).shown, "50");
        assert_eq!(significant(123456.0), "123456");
    }
}
