-- Each value of one level numbered among its siblings (the values of that
-- level with the same parent one level up), from 0. A leaf's code is these
-- numbers read as one mixed-radix integer, so a code at a higher level is the
-- leaf code integer-divided by that level's divisor: rollup needs no join.
CREATE OR REPLACE TEMP TABLE {{ranks}} AS
SELECT lo AS label, (dense_rank() OVER (PARTITION BY hi ORDER BY lo NULLS FIRST) - 1)::BIGINT AS idx
FROM (SELECT DISTINCT {{lo_col}} AS lo, {{hi_col}} AS hi FROM {{h}})
