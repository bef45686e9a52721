-- Frequency sets' small statements (data/frequency.rs).
-- name: share
-- A code table, sent to the engine where the source lives.
SELECT * FROM {{table}}
-- name: extra_count
-- An extra column's largest code: its codes' count, or their span when they
-- are offsets (base_codes.sql offset).
SELECT coalesce(max(code), 0)::BIGINT FROM {{codes}}
-- name: leaf_count
-- A QI's distinct leaf codes in the data.
SELECT count(DISTINCT c0) FROM {{codes}}
-- name: kids_table
-- Children to roll up: per QI the divisor from the parent's codes and the
-- level ({{columns}}: d0 BIGINT, l0 INTEGER, …).
CREATE OR REPLACE TEMP TABLE kanon_kids (child BIGINT, parent BIGINT, {{columns}})
-- name: kids_insert
-- {{rows}}: a tuple of parameters per child.
INSERT INTO kanon_kids VALUES {{rows}}
-- name: materialize
CREATE OR REPLACE TEMP TABLE {{target}} AS {{select}}
-- name: engine_rows
-- The base set's rows there, brought back (sql/engine_evaluator.sql base_rows).
SELECT n FROM kanon_engine_result
