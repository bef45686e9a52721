-- name: mask
CASE WHEN length(v) > {{i}} THEN left(v, length(v) - {{i}}) || repeat('*', {{i}}) ELSE repeat('*', length(v)) END
-- name: interval
CASE WHEN floor(x / ${{p}}) * ${{p}} = trunc(floor(x / ${{p}}) * ${{p}}) AND ${{p}} = trunc(${{p}})
     THEN printf('[%d, %d)', (floor(x / ${{p}}) * ${{p}})::BIGINT, (floor(x / ${{p}}) * ${{p}} + ${{p}})::BIGINT)
     ELSE printf('[%s, %s)', (floor(x / ${{p}}) * ${{p}})::VARCHAR, (floor(x / ${{p}}) * ${{p}} + ${{p}})::VARCHAR) END
-- name: month
strftime(d, '%Y-%m')
-- name: quarter
strftime(d, '%Y') || '-Q' || quarter(d)::VARCHAR
-- name: year
strftime(d, '%Y')
-- name: decade
(year(d) // 10 * 10)::VARCHAR || 's'
-- name: century
(year(d) // 100 * 100)::VARCHAR || 's'
-- name: generate
-- A built-in hierarchy from the distinct values of a QI: v is the value as
-- text, x as a number, d as a date.
CREATE OR REPLACE TEMP TABLE {{h}} AS
SELECT DISTINCT v AS v0, {{levels}}
FROM (
    SELECT v, TRY_CAST(v AS DOUBLE) AS x, TRY_CAST(TRY_CAST(v AS TIMESTAMP) AS DATE) AS d
    FROM (SELECT DISTINCT {{col}} AS v FROM {{base}} WHERE {{col}} IS NOT NULL)
)
-- name: unparsable
-- Values a numeric or date hierarchy cannot read: how many, and a few.
WITH bad AS (
    SELECT v FROM (SELECT DISTINCT {{col}} AS v FROM {{base}} WHERE {{col}} IS NOT NULL)
    WHERE {{test}} IS NULL
)
SELECT (SELECT count(*) FROM bad)::BIGINT,
       (SELECT string_agg('"' || v || '"', ', ') FROM (SELECT v FROM bad ORDER BY v LIMIT 5))
-- name: nulls
SELECT coalesce(sum(cnt), 0)::BIGINT FROM {{base}} WHERE {{col}} IS NULL
