-- name: group_by
-- The physical limit, first half: one plain GROUP BY of the QI columns over
-- the source, materialized; no search can read the source for less.
CREATE OR REPLACE TEMP TABLE kanon_limit_groups AS
SELECT {{columns}}, count(*) AS cnt
FROM kanon_source
GROUP BY ALL
-- name: map
-- A QI's value (as the source has it) → label map at one level: the QI's
-- marginal joined to its text hierarchy table, so the write casts no row.
CREATE OR REPLACE TEMP TABLE {{map}} AS
SELECT m.n, h.{{label}} AS label
FROM {{marginal}} m JOIN {{h}} h ON m.{{col}} IS NOT DISTINCT FROM h.v0
-- name: write
-- The physical limit, second half: every source row with each QI replaced by
-- its label (one join per QI), dropped columns left out. No ORDER BY, no
-- suppression.
CREATE TABLE {{target}} AS
SELECT {{columns}}
FROM kanon_source s {{joins}}
