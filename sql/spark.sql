-- What kanon runs on Spark (src/engine/spark.rs), as Spark spells it.
-- Each statement is one line: a failed one is quoted in the message.
-- name: union_view
-- A local table sent in parts: their union.
CREATE OR REPLACE TEMPORARY VIEW {{view}} AS {{union}}
-- name: part
SELECT * FROM {{part}}
-- name: cast_view
-- Types sent as text (decimals, timestamps) cast back.
CREATE OR REPLACE TEMPORARY VIEW {{view}} AS SELECT {{columns}} FROM {{raw}}
-- name: count
SELECT count(*) AS n FROM {{relation}}
-- name: rename
ALTER TABLE {{from}} RENAME TO {{to}}
-- name: drop_if_exists
DROP TABLE IF EXISTS {{table}}
-- name: create_parquet
CREATE TABLE {{table}} USING parquet AS {{select}}
-- name: show_tables_in
SHOW TABLES IN {{namespace}} LIKE '{{pattern}}*'
-- name: show_tables
SHOW TABLES LIKE '{{pattern}}*'
-- name: append_row
INSERT INTO {{table}} ({{columns}}) SELECT {{columns}} FROM kanon_appended_row
-- name: same_value
{{left}} IS NOT DISTINCT FROM {{right}}
-- name: pseudonym
-- HMAC-SHA-256 of the column's text under the shared key kk (Spark has SHA-256, not HMAC).
sha2(concat(unhex(kk.outer), unhex(sha2(concat(unhex(kk.inner), encode(CAST({{column}} AS STRING), 'UTF-8')), 256))), 256)
-- name: create_work
-- A work table kanon reads many times (written first with create_parquet): cached.
CACHE TABLE {{table}}
-- name: work_view
CREATE OR REPLACE TEMPORARY VIEW {{name}} AS SELECT * FROM {{table}}
-- name: drop_work
UNCACHE TABLE IF EXISTS {{table}}
-- name: drop_work_view
DROP VIEW IF EXISTS {{name}}
-- name: int_div
-- Integer division of two integers, rounding toward zero.
({{a}} div {{b}})
-- name: text
STRING
-- name: value_list
-- A class's (value code, records) list as text, v:n,v:n… in code order
-- (the engine evaluator's per-class models read it in kanon).
array_join(transform(array_sort(collect_list(struct(v, n))), x -> concat(CAST(x.v AS STRING), ':', CAST(x.n AS STRING))), ',')
