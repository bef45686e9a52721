-- The evaluator's settings of the embedded DuckDB (evaluator/mod.rs).
-- name: memory_limit
SELECT current_setting('memory_limit')
-- name: insertion_order
-- Readers that sort what they read let the engine return rows in any order
-- (keeping the order makes it collect them on one thread).
SELECT current_setting('preserve_insertion_order')::BOOLEAN
-- name: set_insertion_order
SET preserve_insertion_order = {{on}}
-- name: shrink_pool
-- DuckDB's pool, shrunk while kanon holds a sorted base beside it.
SET memory_limit = '{{bytes}} bytes'
-- name: restore_pool
-- {{limit}}: a size DuckDB printed itself, as a string literal.
SET memory_limit = {{limit}}
-- name: read_base
-- The memory backend reads the base frequency set as the engine grouped it…
SELECT {{columns}} FROM kanon_f0
-- name: read_rows
-- …or the coded rows, to group them itself.
SELECT {{columns}} FROM kanon_f0_rows
-- name: sorted_rollup
-- Nodes rolled up from the sorted base, in the SQL backend's shape; each code
-- as narrow as its QI's codes allow ({{columns}}: g0 TINYINT …): at scale the
-- tables spill otherwise.
CREATE OR REPLACE TEMP TABLE {{target}} (node BIGINT, {{columns}}, cnt BIGINT)
-- name: sorted_classes
-- The sorted base's classes, to stand for kanon_f0 ({{columns}}: g0 BIGINT …).
CREATE OR REPLACE TEMP TABLE kanon_f0_table ({{columns}}, cnt BIGINT)
-- name: drop_set
-- A kept frequency set nothing reads any more.
DROP TABLE IF EXISTS {{table}}
