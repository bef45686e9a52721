//! Incognito's candidate graphs, generated in SQL (LeFevre et al. §3.1.1):
//! iteration i's candidate nodes and edges come from iteration i−1's survivors
//! by the join, prune and edge-generation queries. Tables: `kanon_cand_i`
//! (id, d1, i1, …, di, ii, parent1, parent2), `kanon_edge_i` (start, end),
//! `kanon_surv_i` (the candidates that passed).

use crate::lattice::Node;
use crate::sql::{self, list, render};
use anyhow::Result;
use duckdb::Connection;

/// A statement of `sql/candidate_tables.sql`.
fn statement(name: &str) -> &'static str {
    sql::fragment(sql::CANDIDATE_TABLES, name)
}

/// One iteration's candidate graph, as the search sees it.
#[derive(Debug, Clone)]
pub(crate) struct Graph {
    pub(crate) nodes: Vec<(i32, Node)>,
    /// Direct generalizations: (start, end) by id.
    pub(crate) edges: Vec<(i32, i32)>,
}

/// Iteration 1: every (QI, level), with edges level → level + 1.
pub(crate) fn first(conn: &Connection, heights: &[u8]) -> Result<Graph> {
    conn.execute_batch(statement("heights_table"))?;
    for (a, h) in heights.iter().enumerate() {
        conn.execute(statement("heights_insert"), duckdb::params![a as i32, *h as i32])?;
    }
    conn.execute_batch(sql::CANDIDATES_FIRST)?;
    conn.execute_batch(sql::EDGES_FIRST)?;
    read(conn, 1)
}

/// Record which candidates of iteration `i` failed; the rest survive.
pub(crate) fn survive(conn: &Connection, i: usize, failed: &[i32]) -> Result<()> {
    conn.execute_batch(statement("failed_table"))?;
    for chunk in failed.chunks(500) {
        let q = render(statement("failed_insert"), &[("values", &vec!["(?)"; chunk.len()].join(", "))]);
        conn.execute(&q, duckdb::params_from_iter(chunk))?;
    }
    conn.execute_batch(&render(statement("survivors"), &[("i", &i.to_string())]))?;
    Ok(())
}

/// Iteration `i` (≥ 2) from iteration i−1's survivors and edges.
pub(crate) fn next(conn: &Connection, i: usize) -> Result<Graph> {
    let prev = i - 1;
    let i_s = i.to_string();
    let prev_s = prev.to_string();
    let mut pairs: Vec<String> = (1..=prev).map(|j| format!("p.d{j}, p.i{j}")).collect();
    pairs.push(format!("q.d{prev} AS d{i}, q.i{prev} AS i{i}"));
    let same_prefix = list(1..prev, "", |j| format!("p.d{j} = q.d{j} AND p.i{j} = q.i{j} AND "));
    let order = list(1..=i, ", ", |j| format!("d{j}, i{j}"));
    conn.execute_batch(&render(
        sql::CANDIDATES_JOIN,
        &[
            ("i", &i_s),
            ("prev", &prev_s),
            ("pairs", &pairs.join(", ")),
            ("same_prefix", &same_prefix),
            ("order", &order),
        ],
    ))?;
    // Subsets leaving out position i or i−1 are the two parents; check the others.
    if i > 2 {
        let missing = list(1..=i - 2, " OR ", |skip| {
            let kept: Vec<usize> = (1..=i).filter(|&j| j != skip).collect();
            let cond = list(kept.iter().enumerate(), " AND ", |(s, &c)| {
                format!("s.d{0} = kanon_cand_{i}.d{c} AND s.i{0} = kanon_cand_{i}.i{c}", s + 1)
            });
            format!("NOT EXISTS (SELECT 1 FROM kanon_surv_{prev} s WHERE {cond})")
        });
        conn.execute_batch(&render(sql::CANDIDATES_PRUNE, &[("i", &i_s), ("missing_subsets", &missing)]))?;
    }
    conn.execute_batch(&render(sql::EDGES_GENERATE, &[("i", &i_s), ("prev", &prev_s)]))?;
    read(conn, i)
}

fn read(conn: &Connection, i: usize) -> Result<Graph> {
    let cols = list(1..=i, ", ", |j| format!("d{j}, i{j}"));
    let mut stmt = conn.prepare(&render(statement("nodes"), &[("columns", &cols), ("i", &i.to_string())]))?;
    let nodes = stmt
        .query_map([], |r| {
            let mut attrs = Vec::with_capacity(i);
            let mut levels = Vec::with_capacity(i);
            for j in 0..i {
                attrs.push(r.get::<_, i32>(1 + 2 * j)? as usize);
                levels.push(r.get::<_, i32>(2 + 2 * j)? as u8);
            }
            Ok((r.get::<_, i32>(0)?, Node { attrs, levels }))
        })?
        .collect::<duckdb::Result<Vec<_>>>()?;
    let mut stmt = conn.prepare(&render(statement("edges"), &[("i", &i.to_string())]))?;
    let edges = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<duckdb::Result<Vec<_>>>()?;
    Ok(Graph { nodes, edges })
}
