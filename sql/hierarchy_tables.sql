-- The hierarchy tables (data/hierarchy.rs): written once by the load, read
-- only through data/hierarchy.rs. Per QI a: kanon_h{a} (the hierarchy as
-- text, v0 … vh), kanon_hdim_{a} (leaf, its codes c0 … ch),
-- kanon_hnode_{a} (level, code, label, leaves under it), and the divisors
-- of every QI in kanon_hlevels.
-- name: levels_table
CREATE OR REPLACE TEMP TABLE kanon_hlevels (qi INTEGER, level INTEGER, divisor BIGINT)
-- name: text_table
-- {{columns}}: v0 VARCHAR … vh VARCHAR.
CREATE OR REPLACE TEMP TABLE {{h}} ({{columns}})
-- name: text_rows
-- Sorted by DuckDB too (NULL first, text bytewise, as Rust orders them).
SELECT * FROM {{h}} ORDER BY ALL NULLS FIRST
-- name: coverage_qi
-- One QI's coverage check (hierarchy_coverage.sql), numbered.
SELECT {{a}} AS qi, * FROM ({{check}})
-- name: coverage
SELECT * FROM ({{per_qi}}) ORDER BY qi
-- name: mask_tops
-- Masking every character may still leave values of different lengths:
-- distinct values at the top mask.
SELECT count(DISTINCT {{v}}) FROM {{h}}
-- name: mask_star
ALTER TABLE {{h}} ADD COLUMN {{v}} VARCHAR DEFAULT '*'
-- name: code_tables
-- {{columns}}: c0 BIGINT … ch BIGINT.
CREATE OR REPLACE TEMP TABLE {{dim}} (leaf VARCHAR, {{columns}});
CREATE OR REPLACE TEMP TABLE {{nodes}} (level INTEGER, code BIGINT, label VARCHAR, leaves BIGINT)
-- name: divisors
SELECT qi, divisor FROM kanon_hlevels ORDER BY qi, level
-- name: review
-- The hierarchy as text for review: {{columns}} every level (NULL spelled),
-- {{order}} the levels from the top down.
SELECT {{columns}} FROM {{h}} ORDER BY {{order}}, v0 NULLS FIRST
-- name: leaves
-- Per leaf its value and codes ({{columns}}: c0 … ch), in {{order}}: the
-- file's (rowid) or the leaf codes' (c0).
SELECT leaf, {{columns}} FROM {{dim}} ORDER BY {{order}}
-- name: labels
SELECT level, code, label FROM {{nodes}}
-- name: node_leaves
SELECT level, code, leaves FROM {{nodes}}
-- name: present
-- Leaf codes present in the data, sorted.
SELECT DISTINCT c0 FROM {{codes}} ORDER BY c0
-- name: column_marginal
-- A non-QI column's marginal (kanon_marg_{{alias}}) in a QI marginal's shape,
-- for its hierarchy to be built as a QI's.
CREATE OR REPLACE TEMP VIEW {{target}} AS SELECT n, {{alias}} AS {{v}}, cnt FROM kanon_marg_{{alias}}
-- name: column_values
-- A non-QI column's values by code.
SELECT k.code, m.{{alias}} FROM {{codes}} k JOIN kanon_marg_{{alias}} m ON k.n IS NOT DISTINCT FROM m.n ORDER BY k.code
