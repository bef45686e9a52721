-- Each leaf with its code at every level: c0 the mixed-radix leaf code,
-- c{l} = c0 // (divisor of level l).
CREATE OR REPLACE TEMP TABLE {{dim}} AS
SELECT h.v0 AS leaf, {{codes}}
FROM {{h}} h {{rank_joins}};
-- One row per generalized value: its level, its code (unique within the
-- level), label, and the number of hierarchy leaves under it (for glm).
CREATE OR REPLACE TEMP TABLE {{nodes}} AS
WITH x AS (SELECT * FROM {{h}} h JOIN {{dim}} d ON d.leaf IS NOT DISTINCT FROM h.v0)
SELECT level, code, label, count(*)::BIGINT AS leaves
FROM ({{levels}}) t
GROUP BY level, code, label;
