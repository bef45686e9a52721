-- Per level of QI {{a}}: the sum over records of (leaves under the record's
-- value at that level - 1), from the QI's marginal.
-- Divided by (leaves - 1) this is the QI's share of glm when nothing is
-- suppressed; a suppressed record costs more, so it bounds glm from below.
-- Also the distinct values at each level, to estimate frequency-set sizes, and
-- the most values of the level below that one value of this level has in the
-- data (how many pieces a class can split into one level down).
WITH m AS (
    -- The QI's marginal load built for the hierarchies, by leaf code: no scan of the base.
    SELECT c.c0 AS code, sum(m.cnt)::BIGINT AS cnt
    FROM {{marginal}} m JOIN {{codes}} c ON m.n IS NOT DISTINCT FROM c.n
    GROUP BY 1
), levels AS (
    SELECT level, divisor FROM kanon_hlevels WHERE qi = {{a}}
), leaves AS (
    SELECT level, code, leaves FROM {{nodes}}
), c AS (
    SELECT l.level, m.code // l.divisor AS code, m.cnt FROM m CROSS JOIN levels l
), fan AS (
    SELECT level, max(n)::BIGINT AS fanout FROM (
        SELECT l.level, m.code // l.divisor AS code, count(DISTINCT m.code // b.divisor) AS n
        FROM m CROSS JOIN levels l JOIN levels b ON b.level = l.level - 1
        GROUP BY 1, 2
    ) GROUP BY level
)
SELECT c.level, sum(c.cnt * (x.leaves - 1))::DOUBLE AS cost, count(DISTINCT c.code)::BIGINT AS distinct_values,
       coalesce(any_value(f.fanout), 1)::BIGINT AS fanout
FROM c JOIN leaves x ON x.level = c.level AND x.code = c.code LEFT JOIN fan f ON f.level = c.level
GROUP BY c.level
ORDER BY c.level
