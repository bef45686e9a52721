-- What kanon runs on PostgreSQL (src/engine/postgres/mod.rs), as PostgreSQL
-- spells it; its catalog queries are sql/postgres_catalog.sql. Each
-- statement is one line: a failed one is quoted in the message.
-- name: session
-- Nested loops off: kanon's statements are scans, aggregates and equi-joins
-- to small tables, and the planner's estimate of a grouped subquery (the
-- classes of a node) is often far below its rows: a nested loop over one is
-- quadratic (minutes where a hash join takes a second).
-- A row a worker passes to the leader costs what the leader's own row does
-- (cpu_tuple_cost's default), not ten times that: at the default the planner
-- keeps every query that passes its rows up serial (the base set's GROUP BY
-- of 10M rows: 28 s serial, 14 s with its joins in parallel).
-- No JIT: kanon's statements are scans, joins and aggregates over a few
-- integer or text columns, and a run has dozens; compiling each took 0.5 to
-- 1.6 s of the workers' time (EXPLAIN ANALYZE's JIT timing on 10M rows).
SET TimeZone = 'UTC'; SET DateStyle = 'ISO, YMD'; SET extra_float_digits = 1; SET client_encoding = 'UTF8'; SET enable_nestloop = off; SET parallel_tuple_cost = 0.01; SET jit = off
-- name: privileges
-- The table privileges a replaced release's grants carry over.
SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER, MAINTAIN
-- name: grant
GRANT {{privilege}} ON {{table}} TO {{role}}
-- name: grant_with_option
GRANT {{privilege}} ON {{table}} TO {{role}} WITH GRANT OPTION
-- name: owner
ALTER TABLE {{table}} OWNER TO {{owner}}
-- name: view
CREATE OR REPLACE TEMP VIEW {{view}} AS SELECT * FROM {{table}}
-- name: copy_out
COPY ({{select}}) TO STDOUT
-- name: replace_table
DROP TABLE IF EXISTS {{target}}; CREATE {{create}} ({{columns}})
-- name: copy_in
COPY {{table}} FROM STDIN
-- name: analyze
ANALYZE {{table}}
-- name: secret_table
DROP TABLE IF EXISTS pg_temp.{{table}}; CREATE TEMP TABLE {{table}} ({{columns}})
-- name: create_as
CREATE TABLE {{table}} AS {{select}}
-- name: empty
DELETE FROM {{table}}
-- name: drop_if_exists
DROP TABLE IF EXISTS {{table}}
-- name: drop
DROP TABLE {{table}}
-- name: rename
ALTER TABLE {{from}} RENAME TO {{to}}
-- name: same_value
-- NULL matches NULL and nothing else, hash-joinable: {{any}} is a value of the column's type.
({{left}} IS NULL) = ({{right}} IS NULL) AND coalesce({{left}}, {{any}}) = coalesce({{right}}, {{any}})
-- name: pseudonym
-- HMAC-SHA-256 of the column's text under the shared key kk (PostgreSQL has SHA-256, not HMAC).
encode(sha256(decode(kk.outer, 'hex') || sha256(decode(kk.inner, 'hex') || convert_to(CAST({{column}} AS TEXT), 'UTF8'))), 'hex')
-- name: work_schema
-- The run's work schema (kanon_work_<backend pid>), first on the search_path:
-- work tables and shared tables go there, unlogged, where the planner may scan
-- them in parallel (it may not scan temp tables so); dropped at the end.
DROP SCHEMA IF EXISTS {{schema}} CASCADE; CREATE SCHEMA {{schema}}; SELECT set_config('search_path', '{{schema}}, ' || current_setting('search_path'), false)
-- name: drop_schema
DROP SCHEMA IF EXISTS {{schema}} CASCADE
-- name: create_work
-- A work table, after drop_work (or drop_work_temp) and before analyze; run
-- alone, it tells its rows.
CREATE UNLOGGED TABLE {{name}} AS {{select}}
-- name: group_by_sorting
-- Before a work table whose GROUP BY keeps about as many groups as rows
-- (engine/remote.rs WorkUse::near_unique): grouped by parallel sorts, not one
-- process hashing every row; group_by_hashing after it.
SET enable_hashagg = off
-- name: group_by_hashing
RESET enable_hashagg
-- name: join_by_hashing
-- Before a work table joining a large table to a small one on computed keys
-- (WorkUse::probes_small): no merge join, whose sort of the large side the
-- planner prices below a hash join on keys it has no statistics for;
-- join_reset after it.
SET enable_mergejoin = off
-- name: join_reset
RESET enable_mergejoin
-- name: create_work_temp
-- Without the right to create a schema: a temp table.
CREATE TEMP TABLE {{name}} AS {{select}}
-- name: drop_work_temp
DROP TABLE IF EXISTS pg_temp.{{name}}
-- name: drop_work
DROP TABLE IF EXISTS {{name}}
-- name: int_div
-- Integer division of two integers, rounding toward zero.
({{a}} / {{b}})
-- name: text
TEXT
-- name: value_list
-- A class's (value code, records) list as text, v:n,v:n… in code order
-- (the engine evaluator's per-class models read it in kanon).
string_agg(CAST(v AS TEXT) || ':' || CAST(n AS TEXT), ',' ORDER BY v)
-- name: value_list_of
-- The value list of {{v}} (with {{n}} records) over the rows where {{when}},
-- as value_list spells it (`kanon check`'s classes, src/audit/engine.rs).
coalesce(string_agg(CAST({{v}} AS TEXT) || ':' || CAST({{n}} AS TEXT), ',' ORDER BY {{v}}) FILTER (WHERE {{when}}), '')
-- name: label_text
-- The release's labels (src/release/plain.rs), exactly as the hierarchy gives them: a value's text.
CAST({{x}} AS text)
-- name: label_mask
-- The last {{i}} characters of the text {{v}} masked (all of a shorter one).
CASE WHEN length({{v}}) > {{i}} THEN left({{v}}, length({{v}}) - {{i}}) || repeat('*', {{i}}) ELSE repeat('*', length({{v}})) END
-- name: label_interval
-- [lo, lo + w) of an integral width w, lo = floor(x / w) * w over doubles as DuckDB computes it.
'[' || (CAST(floor(CAST({{x}} AS double precision) / {{w}}) AS bigint) * {{w}}) || ', ' || (CAST(floor(CAST({{x}} AS double precision) / {{w}}) AS bigint) * {{w}} + {{w}}) || ')'
-- name: as_date
CAST({{x}} AS date)
-- name: label_month
to_char({{d}}, 'YYYY-MM')
-- name: label_quarter
to_char({{d}}, 'YYYY-"Q"Q')
-- name: label_year
to_char({{d}}, 'YYYY')
-- name: label_decade
(CAST(extract(year FROM {{d}}) AS integer) / 10 * 10) || 's'
-- name: label_century
(CAST(extract(year FROM {{d}}) AS integer) / 100 * 100) || 's'
-- name: explain
-- The plan of a release statement (under KANON_TRACE): a parallel one has a Gather.
EXPLAIN {{statement}}
-- name: parallel_release
-- For the release's transaction: a row passed from a worker to the leader costs what the leader's own row does (cpu_tuple_cost's default), not ten times that.
-- No merge joins: the anti-join on the suppressed labels (a few thousand rows) was planned as a sort of every source row (10M rows: 33 s against 15 s hashed).
SET LOCAL parallel_tuple_cost = 0.01; SET LOCAL enable_mergejoin = off
-- name: create_built
-- The release's rows built apart (CREATE TABLE AS may run in parallel, INSERT ... SELECT never), then copied.
CREATE UNLOGGED TABLE {{table}} AS {{select}}
-- name: create_built_temp
CREATE TEMP TABLE {{table}} AS {{select}}
-- name: copy_built
INSERT INTO {{table}} ({{columns}}) SELECT {{columns}} FROM {{built}}
-- name: tuple_hash
-- A 64-bit hash of a tuple of columns ({{cols}}) with a seed, as an exact
-- number to sum (person signatures, sql/persons.sql).
hashtextextended(ROW({{cols}})::text, {{seed}})::numeric
-- name: tuple_hash_bits
-- The same hash as an integer, to xor.
hashtextextended(ROW({{cols}})::text, {{seed}})
-- name: fingerprint
-- A table's rows and an order-independent checksum: the sum of every row's
-- 64-bit hash (the HTML page's fingerprint of a release).
SELECT count(*) AS n, coalesce(sum(hashtextextended(ROW({{cols}})::text, 0)::numeric), 0)::text AS checksum FROM {{relation}}
