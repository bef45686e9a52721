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
-- A text value and a table's (NULL matching NULL and nothing else), joined
-- on one 64-bit hash of the value and the values compared once the hashes
-- meet (xxhash64 of NULL is its seed, so NULLs meet too). Spark probes a
-- table keyed by one long much faster than one keyed by text or by the
-- (coalesce, isnull) pair that <=> becomes: 10M rows joined to a 100k-zip
-- table in 2.3-2.6 s against 3.0-3.8 s; the five code joins of a
-- near-unique base 6.8-7.0 s against 9.6-10.6 s.
xxhash64({{left}}) = xxhash64({{right}}) AND coalesce({{left}} = {{right}}, {{left}} IS NULL AND {{right}} IS NULL)
-- name: same_integer
-- same_value for an integer or date column without NULL: Spark keys its
-- table by the value itself.
{{left}} = {{right}}
-- name: same_other
-- same_value for any other type (floating point, decimal, timestamp), whose
-- equal values may differ in their hashes (0.0 and -0.0; a scale or width
-- that differs between the source and the table sent).
{{left}} IS NOT DISTINCT FROM {{right}}
-- name: pseudonym
-- HMAC-SHA-256 of the column's text under the shared key kk (Spark has SHA-256, not HMAC).
sha2(concat(unhex(kk.outer), unhex(sha2(concat(unhex(kk.inner), encode(CAST({{column}} AS STRING), 'UTF-8')), 256))), 256)
-- name: work_view
CREATE OR REPLACE TEMPORARY VIEW {{name}} AS SELECT * FROM {{table}}
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
-- name: value_list_of
-- The value list of {{v}} (with {{n}} records) over the rows where {{when}},
-- as value_list spells it (`kanon check`'s classes, src/audit/engine.rs).
array_join(transform(array_sort(collect_list(CASE WHEN {{when}} THEN named_struct('v', {{v}}, 'n', {{n}}) END)), x -> concat(CAST(x.v AS STRING), ':', CAST(x.n AS STRING))), ',')
-- name: label_text
-- The release's labels (src/release/plain.rs), exactly as the hierarchy gives them: a value's text.
CAST({{x}} AS STRING)
-- name: label_mask
-- The last {{i}} characters of the text {{v}} masked (all of a shorter one).
CASE WHEN length({{v}}) > {{i}} THEN concat(left({{v}}, length({{v}}) - {{i}}), repeat('*', {{i}})) ELSE repeat('*', length({{v}})) END
-- name: label_interval
-- [lo, lo + w) of an integral width w, lo = floor(x / w) * w over doubles as DuckDB computes it (floor gives a BIGINT).
concat('[', CAST(floor(CAST({{x}} AS DOUBLE) / {{w}}) * {{w}} AS STRING), ', ', CAST(floor(CAST({{x}} AS DOUBLE) / {{w}}) * {{w}} + {{w}} AS STRING), ')')
-- name: as_date
CAST({{x}} AS DATE)
-- name: label_month
date_format({{d}}, 'yyyy-MM')
-- name: label_quarter
concat(date_format({{d}}, 'yyyy'), '-Q', CAST(quarter({{d}}) AS STRING))
-- name: label_year
CAST(year({{d}}) AS STRING)
-- name: label_decade
concat(CAST(year({{d}}) div 10 * 10 AS STRING), 's')
-- name: label_century
concat(CAST(year({{d}}) div 100 * 100 AS STRING), 's')
-- name: explain
-- The physical plan of a release (under KANON_TRACE).
EXPLAIN {{select}}
-- name: tuple_hash
-- A 64-bit hash of a tuple of columns ({{cols}}) with a seed, as an exact
-- number to sum (person signatures, sql/persons.sql).
CAST(xxhash64({{cols}}, {{seed}}) AS DECIMAL(38,0))
-- name: tuple_hash_bits
-- The same hash as an integer, to xor.
xxhash64({{cols}}, {{seed}})
-- name: fingerprint
-- A table's rows and an order-independent checksum: the sum of every row's 64-bit hash (the HTML page's fingerprint of a release).
SELECT count(*) AS n, CAST(coalesce(sum(CAST(xxhash64({{cols}}) AS DECIMAL(38,0))), 0) AS STRING) AS checksum FROM {{relation}}
