//! The one place a search asks about a node: its class-size histogram, from
//! which k, ℓ, suppression and loss follow (see [`crate::metrics`]).
//!
//! Frequency sets stay in DuckDB. A search may keep a node's frequency set
//! materialized so nodes above it roll up from it instead of from `kanon_f0`.

use crate::frequency::{ancestor_joins, rollup};
use crate::lattice::Node;
use crate::metrics::{Bucket, Dataset, Histogram};
use crate::sql::{self, list, render};
use anyhow::Result;
use duckdb::Connection;
use std::collections::HashMap;

pub struct Evaluator<'c> {
    conn: &'c Connection,
    pub data: Dataset,
    sensitive: bool,
    evaluations: u64,
    cache: HashMap<Node, Histogram>,
    /// Materialized frequency sets: node → temp table.
    tables: HashMap<Node, String>,
    next_table: u64,
}

impl<'c> Evaluator<'c> {
    pub fn new(conn: &'c Connection, data: Dataset, sensitive: bool) -> Evaluator<'c> {
        Evaluator { conn, data, sensitive, evaluations: 0, cache: HashMap::new(), tables: HashMap::new(), next_table: 0 }
    }

    /// Histogram computations run so far (cache hits do not count).
    pub fn evaluations(&self) -> u64 {
        self.evaluations
    }

    /// The histogram of `node`, rolled up from the smallest-level materialized
    /// frequency set below it, or from `kanon_f0`.
    pub fn histogram(&mut self, node: &Node) -> Result<Histogram> {
        if let Some(h) = self.cache.get(node) {
            return Ok(h.clone());
        }
        let source = self
            .tables
            .iter()
            .filter(|(m, _)| node.generalizes(m))
            .max_by_key(|(m, t)| (m.height(), std::cmp::Reverse((*t).clone())))
            .map(|(_, t)| t.clone())
            .unwrap_or_else(|| "kanon_f0".to_string());
        self.histogram_of(node, &source)
    }

    /// Materialize `node`'s frequency set, rolled up from `from`'s (which must
    /// be materialized) or from `kanon_f0`, and return its histogram.
    pub fn materialize(&mut self, node: &Node, from: Option<&Node>) -> Result<Histogram> {
        let source = match from.and_then(|f| self.tables.get(f)) {
            Some(t) => t.clone(),
            None => "kanon_f0".to_string(),
        };
        let target = format!("kanon_fs_{}", self.next_table);
        self.next_table += 1;
        rollup(self.conn, &target, &source, &node.attrs, &node.levels, self.sensitive)?;
        self.tables.insert(node.clone(), target.clone());
        match self.cache.get(node) {
            Some(h) => Ok(h.clone()),
            None => self.histogram_of(node, &target),
        }
    }

    /// Drop `node`'s materialized frequency set, if any.
    pub fn forget(&mut self, node: &Node) -> Result<()> {
        if let Some(t) = self.tables.remove(node) {
            self.conn.execute_batch(&format!("DROP TABLE IF EXISTS {t}"))?;
        }
        Ok(())
    }

    /// Drop every materialized frequency set.
    pub fn forget_all(&mut self) -> Result<()> {
        let nodes: Vec<Node> = self.tables.keys().cloned().collect();
        for n in nodes {
            self.forget(&n)?;
        }
        Ok(())
    }

    fn histogram_of(&mut self, node: &Node, source: &str) -> Result<Histogram> {
        let ldiv = if self.sensitive { "count(DISTINCT p.s)" } else { "0" };
        let glm = list(&node.attrs, "", |&a| format!(", sum(p.cnt * (x{a}.leaves - 1))::BIGINT AS glm{a}"));
        let glm_totals = list(&node.attrs, "", |&a| format!(", sum(glm{a})::BIGINT"));
        let groups = list(&node.attrs, ", ", |&a| format!("x{a}.anc"));
        let q = render(
            sql::CLASS_HISTOGRAM,
            &[
                ("ldiv", ldiv),
                ("glm", &glm),
                ("source", source),
                ("joins", &ancestor_joins(&node.attrs)),
                ("groups", &groups),
                ("glm_totals", &glm_totals),
            ],
        );
        let n = node.attrs.len();
        let mut stmt = self.conn.prepare_cached(&q)?;
        let buckets = stmt
            .query_map(duckdb::params_from_iter(&node.levels), |r| {
                let mut leaf_sums = Vec::with_capacity(n);
                for i in 0..n {
                    leaf_sums.push(r.get::<_, i64>(3 + i)? as u64);
                }
                Ok(Bucket {
                    size: r.get::<_, i64>(0)? as u64,
                    ldiv: r.get::<_, i64>(1)? as u64,
                    classes: r.get::<_, i64>(2)? as u64,
                    leaf_sums,
                })
            })?
            .collect::<duckdb::Result<Vec<_>>>()?;
        self.evaluations += 1;
        let h = Histogram { buckets };
        self.cache.insert(node.clone(), h.clone());
        Ok(h)
    }
}
