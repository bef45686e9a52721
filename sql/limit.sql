-- name: group_by
-- The physical limit, first half: one plain GROUP BY of the QI columns over
-- the source, materialized; no search can read the source for less.
CREATE OR REPLACE TEMP TABLE kanon_limit_groups AS
SELECT {{columns}}, count(*) AS cnt
FROM kanon_source
GROUP BY ALL
-- name: map
-- A QI's value → label map at one level, from its text hierarchy table.
CREATE OR REPLACE TEMP TABLE {{map}} AS SELECT v0, {{label}} AS label FROM {{h}}
-- name: write
-- The physical limit, second half: every source row with each QI replaced by
-- its label (one join per QI), dropped columns left out. No ORDER BY, no
-- suppression.
CREATE TABLE {{target}} AS
SELECT {{columns}}
FROM kanon_source s {{joins}}
