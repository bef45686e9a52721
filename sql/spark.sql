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
-- A work table kanon reads many times: cached in the session (a temp view).
CACHE TABLE {{name}} AS {{select}}
-- name: drop_work
UNCACHE TABLE IF EXISTS {{name}}
-- name: drop_work_view
DROP VIEW IF EXISTS {{name}}
-- name: int_div
-- Integer division of two integers, rounding toward zero.
({{a}} div {{b}})
