-- One row per generalized value: an integer code unique across levels, its
-- level, its label and the number of hierarchy leaves under it (for glm).
CREATE OR REPLACE TEMP TABLE {{nodes}} AS
SELECT (row_number() OVER (ORDER BY level, label NULLS FIRST) - 1)::INTEGER AS code,
       level, label, count(*)::BIGINT AS leaves
FROM ({{levels}}) t
GROUP BY level, label;
-- Each leaf row with its code at every level.
CREATE OR REPLACE TEMP TABLE {{dim}} AS
SELECT h.v0 AS leaf, {{codes}} FROM {{h}} h {{joins}};
