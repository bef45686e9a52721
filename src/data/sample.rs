//! SafePub's sample: each source row kept independently with probability β,
//! decided by a seeded counter-based hash of its position in source order,
//! so the same source and seed give the same sample, and the decision is
//! one SQL expression (sql/dp_sample.sql) that [`kept`] mirrors in Rust.

use crate::sql;
use anyhow::{Context, Result};
use duckdb::Connection;

const MULTIPLIER: u64 = 0x45d9f3b;
const MASK: u64 = 0xffff_ffff;

/// One round of the 32-bit mixer the view computes.
fn round(x: u64) -> u64 {
    ((x >> 16) ^ x).wrapping_mul(MULTIPLIER) & MASK
}

fn mix(x: u64) -> u64 {
    let y = round(round(x));
    (y >> 16) ^ y
}

/// The seed's two halves as the hash takes them.
fn keys(seed: u64) -> (u64, u64) {
    (mix(seed >> 32), seed & MASK)
}

/// Rows whose hash falls below this are kept: P = threshold / 2^32, within 2^-32 of β.
pub fn threshold(beta: f64) -> u64 {
    ((beta * 4_294_967_296.0).floor() as u64).min(1 << 32)
}

/// The position's hash: uniform over [0, 2^32) for a given seed.
pub fn hash(seed: u64, position: u64) -> u64 {
    let (k1, k2) = keys(seed);
    let x = mix((position & MASK) ^ k1);
    mix(x ^ (position >> 32) ^ k2)
}

/// Is the row at `position` in the sample?
pub fn kept(seed: u64, beta: f64, position: u64) -> bool {
    hash(seed, position) < threshold(beta)
}

/// Replace the view `kanon_source` by its sample (`kanon_source_rows`, with
/// its `position` column, must exist). Returns the source's rows before sampling.
pub(crate) fn sample(conn: &Connection, position: &str, seed: u64, beta: f64) -> Result<u64> {
    let (k1, k2) = keys(seed);
    let view = sql::render(
        sql::fragment(sql::DP_SAMPLE, "view"),
        &[
            ("position", &sql::ident(position)),
            ("k1", &k1.to_string()),
            ("k2", &k2.to_string()),
            ("threshold", &threshold(beta).to_string()),
        ],
    );
    conn.execute_batch(&view).context("sampling the source (differential_privacy)")?;
    let rows: i64 = conn.query_row(sql::fragment(sql::DP_SAMPLE, "rows"), [], |r| r.get(0))?;
    Ok(rows as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_view_keeps_the_rows_the_hash_keeps() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TEMP VIEW kanon_source_rows AS SELECT range AS v, range * 4099 + (range % 7) * 4294967296 AS p FROM range(20000)",
        )
        .unwrap();
        let (seed, beta) = (0x1234_5678_9abc_def0, 0.37);
        assert_eq!(sample(&conn, "p", seed, beta).unwrap(), 20000);
        let mut stmt = conn.prepare("SELECT v FROM kanon_source ORDER BY v").unwrap();
        let got: Vec<i64> = stmt.query_map([], |r| r.get(0)).unwrap().map(|r| r.unwrap()).collect();
        let want: Vec<i64> =
            (0..20000i64).filter(|&v| kept(seed, beta, (v * 4099 + (v % 7) * 4294967296) as u64)).collect();
        assert_eq!(got, want);
        assert!((got.len() as f64 - 7400.0).abs() < 300.0, "{}", got.len());
    }
}
