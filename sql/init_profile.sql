-- name: tables
-- The tables of an attached source database's main schema, by name (kanon
-- reads its source from schema main).
SELECT table_name FROM duckdb_tables()
WHERE database_name = ? AND schema_name = 'main'
ORDER BY table_name
-- name: sniff
-- The delimiter DuckDB's CSV sniffer finds; the job names it so that
-- `kanon run` reads the file as `kanon init` did.
SELECT Delimiter FROM sniff_csv(?)
-- name: pass
-- `kanon init`'s one aggregate pass over the source: the row count, then
-- {{aggregates}}: the fragments below, per column, in column order.
SELECT count(*)::BIGINT{{aggregates}} FROM kanon_source
-- name: common
-- Every column: non-NULL rows, distinct non-NULL values.
count({{col}})::BIGINT, count(DISTINCT {{col}})::BIGINT
-- name: numeric
-- Numbers: the range.
min({{col}})::DOUBLE, max({{col}})::DOUBLE
-- name: text
-- Text ({{v}} is the column as VARCHAR): shortest and longest value, whether
-- every value is a digit string, whether any holds white space, the first and
-- last value (their common prefix is every value's), and how many read as a
-- date the way a date hierarchy reads them.
min(length({{v}}))::BIGINT, max(length({{v}}))::BIGINT,
coalesce(bool_and(regexp_full_match({{v}}, '[0-9]+')), false),
coalesce(bool_or(regexp_matches({{v}}, '\s')), false),
min({{v}}), max({{v}}),
count(TRY_CAST(TRY_CAST({{v}} AS TIMESTAMP) AS DATE))::BIGINT
-- name: temporal
-- Date and timestamp types: how many values read as a date the way a date
-- hierarchy reads them ({{v}}: the column as VARCHAR).
count(TRY_CAST(TRY_CAST({{v}} AS TIMESTAMP) AS DATE))::BIGINT
-- name: date_levels
-- One date column ({{v}}: as VARCHAR, read as the date hierarchy reads it):
-- first and last date, distinct values, and distinct values at each unit of
-- the date hierarchy ({{month}} … {{century}} are its level expressions of d).
SELECT min(d)::VARCHAR, max(d)::VARCHAR,
       count(DISTINCT {{month}})::BIGINT, count(DISTINCT {{quarter}})::BIGINT,
       count(DISTINCT {{year}})::BIGINT, count(DISTINCT {{decade}})::BIGINT,
       count(DISTINCT {{century}})::BIGINT
FROM (SELECT TRY_CAST(TRY_CAST({{v}} AS TIMESTAMP) AS DATE) AS d FROM kanon_source)
WHERE d IS NOT NULL
-- name: prefixes
-- One mask candidate ({{v}}: as VARCHAR): distinct prefixes one character
-- longer than the prefix every value shares ($1). Fewer than the distinct
-- values means masking from the right merges values before the top.
SELECT count(DISTINCT left({{v}}, $1::BIGINT))::BIGINT FROM kanon_source
-- name: values
-- One column's distinct values as text (as a hierarchy's leaves), for a
-- hierarchy file with a NULL leaf.
SELECT DISTINCT CAST({{col}} AS VARCHAR) AS v FROM kanon_source
-- name: attach
-- A DuckDB source ({{path}}: its file, quoted), only read.
ATTACH {{path}} AS kanon_src (READ_ONLY)
-- name: hierarchy_rows
-- A hierarchy file's lines: the levels (v0 the leaf, {{columns}}) that
-- hierarchy_levels.sql's generate wrote into kanon_init_h, in order.
SELECT {{columns}} FROM kanon_init_h ORDER BY ALL
-- name: hierarchy_drop
DROP TABLE kanon_init_h
