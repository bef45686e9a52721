-- The embedded DuckDB's own statements (src/engine/embedded.rs, and the
-- local side of the remote engines' fetch and share), and the DuckDB
-- release's write and swap (src/release/publish.rs, remote.rs, maps.rs).
-- Each statement is one line: DuckDB's errors quote the line they fail on.
-- name: attach
ATTACH {{path}} AS {{catalog}}{{mode}}
-- name: copy_csv
CREATE TEMP TABLE kanon_source_copy AS SELECT * FROM {{csv}}
-- name: source_rows
-- The source with each row's position ({{at}}: rowid or file_row_number).
CREATE OR REPLACE TEMP VIEW kanon_source_rows AS SELECT *, {{at}} AS {{position}} FROM {{rows}}
-- name: describe_select
DESCRIBE SELECT * FROM {{relation}}
-- name: attached
SELECT count(*) FROM duckdb_databases() WHERE database_name = ?
-- name: threads
SET threads = {{threads}}
-- name: memory_limit
SET memory_limit = {{limit}}
-- name: read_memory_limit
SELECT current_setting('memory_limit')
-- name: temp_directory
SET temp_directory = {{path}}
-- name: table_exists
SELECT count(*) FROM duckdb_tables() WHERE database_name = ? AND schema_name = 'main' AND lower(table_name) = lower(?)
-- name: nulls
SELECT count(*) FROM {{table}} WHERE n IS NULL
-- name: population_cached
-- A population file read once into a temp table (the search and the risk figures read it
-- again), its QI columns only: the parser converts no other column.
CREATE TEMP TABLE IF NOT EXISTS kanon_population AS SELECT {{columns}} FROM {{relation}}
-- name: arrow_registered
SELECT count(*) FROM duckdb_functions() WHERE function_name = 'kanon_arrow'
-- name: fetched_create
-- An engine's first result batch as a local table; the next ones appended.
CREATE OR REPLACE TEMP TABLE {{target}} AS SELECT * FROM kanon_arrow(?)
-- name: fetched_append
INSERT INTO {{target}} SELECT * FROM kanon_arrow(?)
-- name: fetched_empty
CREATE OR REPLACE TEMP TABLE {{target}} ({{columns}})
-- name: fetched_cast
INSERT INTO {{target}} SELECT {{casts}} FROM kanon_arrow(?)
-- name: describe
DESCRIBE {{select}}
-- name: as_text
SELECT {{texts}} FROM ({{select}})
-- name: select_all
SELECT * FROM {{relation}}
-- name: detach
DETACH {{catalog}}
-- name: copy_to
COPY {{relation}} TO {{path}} ({{format}})
-- name: begin
BEGIN TRANSACTION
-- name: drop_if_exists
DROP TABLE IF EXISTS {{table}}
-- name: create_as
CREATE TABLE {{table}} AS {{select}}
-- name: count
SELECT count(*) FROM {{relation}}
-- name: rename
ALTER TABLE {{from}} RENAME TO {{to}}
-- name: commit
COMMIT
-- name: rollback
ROLLBACK
-- name: release_map_shared
-- A value map as it goes to the engine: the code as BIGINT.
SELECT n, code::BIGINT AS code, label FROM ({{map}})
-- name: release_dropped
CREATE OR REPLACE TEMP TABLE kanon_release_dropped ({{columns}})
-- name: block_table
CREATE OR REPLACE TEMP TABLE {{table}} (c0 BIGINT, block INTEGER, label VARCHAR)
-- name: closeness_reference
-- The t-closeness column's distribution over its codes.
SELECT k.code, m.cnt FROM {{codes}} k JOIN kanon_marg_{{alias}} m ON k.n IS NOT DISTINCT FROM m.n ORDER BY k.code
-- name: tuple_hash
-- A 64-bit hash of a tuple of columns ({{cols}}) with a seed, as an exact
-- number to sum (person signatures, sql/persons.sql).
hash({{cols}}, {{seed}}::INTEGER)::HUGEINT
-- name: tuple_hash_bits
-- The same hash as an integer, to xor.
hash({{cols}}, {{seed}}::INTEGER)
-- name: relation_columns
-- The columns of a relation (a table or a file read), in order, with their
-- types (src/engine/embedded.rs relation_columns).
SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM {{relation}})
-- name: fingerprint
-- A table's rows and an order-independent checksum: the sum of every row's
-- 64-bit hash (the HTML page's fingerprint of a release).
SELECT count(*)::BIGINT AS n, CAST(coalesce(sum(hash({{cols}})::HUGEINT), 0) AS VARCHAR) AS checksum FROM {{relation}}
-- name: int_div
-- Integer division of two integers (non-negative codes), as the engines' int_div.
({{a}} // {{b}})
-- name: text
-- The text type, as the engines' text (src/evaluator/engine.rs sums here too).
VARCHAR
