-- name: group_by
-- The physical limit, first half: one plain GROUP BY of the QI columns over
-- the source, materialized; no search can read the source for less.
CREATE OR REPLACE TEMP TABLE kanon_limit_groups AS
SELECT {{columns}}, count(*) AS cnt
FROM kanon_source
GROUP BY ALL
-- name: hashed
-- When the GROUP BY of the raw values does not fit in memory (DuckDB spills
-- string keys at several times their size): the same grouping by one 64-bit
-- hash of the QI values, counted, not kept. Any GROUP BY of the values hashes
-- them too and keeps more, so this costs at most what the plain one would.
SELECT count(*), coalesce(sum(cnt), 0)::BIGINT
FROM (SELECT hash({{columns}}) AS h, count(*) AS cnt FROM kanon_source GROUP BY h)
-- name: scan
-- When the GROUP BY does not fit in memory: one scan reading and hashing
-- every QI value, which any GROUP BY of them costs at least.
SELECT count(*), sum(hash({{columns}}) % 1024) FROM kanon_source
-- name: map
-- A QI's value (as the source has it) → label map at one level: the QI's
-- marginal joined to its text hierarchy table, so the write casts no row.
CREATE OR REPLACE TEMP TABLE {{map}} AS
SELECT m.n, h.{{label}} AS label
FROM {{marginal}} m JOIN {{h}} h ON m.{{col}} IS NOT DISTINCT FROM h.v0
-- name: write
-- The physical limit, second half: every source row with each QI recoded,
-- dropped columns left out. No ORDER BY, no suppression. The plain-SQL limit
-- recodes each QI by the cheapest expression its hierarchy allows at the node
-- (below; a join only for a file hierarchy); the maps' figure joins every QI
-- to its value → label map (what kanon limit measured before issue 28).
CREATE TABLE {{target}} AS
SELECT {{columns}}
FROM kanon_source s {{joins}}
-- name: copy
-- The same write, as a file (the job's output is a CSV or Parquet file).
COPY (SELECT {{columns}} FROM kanon_source s {{joins}}) TO {{path}} ({{format}})
-- name: mask
left(CAST(s.{{col}} AS VARCHAR), length(CAST(s.{{col}} AS VARCHAR)) - {{i}}) || '{{stars}}'
-- name: interval
floor({{x}} / {{width}}) * {{width}}
-- name: month
date_trunc('month', {{d}})
-- name: quarter
date_trunc('quarter', {{d}})
-- name: year
year({{d}})
-- name: decade
year({{d}}) // 10 * 10
-- name: century
year({{d}}) // 100 * 100
-- name: groups_counted
-- The plain GROUP BY's combinations and the source's rows.
SELECT count(*), coalesce(sum(cnt), 0)::BIGINT FROM kanon_limit_groups
-- name: drop_groups
DROP TABLE IF EXISTS kanon_limit_groups
-- name: count_parquet
-- The rows a write put into its file ({{path}}: quoted).
SELECT count(*) FROM read_parquet({{path}})
-- name: count_csv
SELECT count(*) FROM read_csv({{path}}, header = true)
-- name: attach
-- The scratch database ({{path}}: its file, quoted) a table write goes to.
ATTACH {{path}} AS {{db}}
-- name: count_table
SELECT count(*) FROM {{table}}
-- name: detach
-- Detaching writes the scratch database out (timed with the write).
DETACH {{db}}
-- name: engine_group_by
-- On Spark or PostgreSQL (src/scale/limit/engine.rs), made a work table
-- there: the same GROUP BY of the QI columns, on the engine itself.
SELECT {{columns}}, count(*) AS cnt FROM kanon_source GROUP BY {{by}}
-- name: engine_groups_counted
-- Its combinations and the source's rows, counted there.
SELECT count(*) AS combinations, CAST(coalesce(sum(cnt), 0) AS BIGINT) AS source_rows FROM {{groups}}
-- name: engine_counted
SELECT combinations, source_rows FROM kanon_limit_counted
-- name: engine_write
-- There, the plain write: every source row with each QI recoded as the
-- release recodes it (src/release/plain.rs), written by the engine as a
-- release is (then dropped).
SELECT {{columns}} FROM kanon_source s {{joins}}
