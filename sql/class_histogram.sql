-- A node's class-size histogram: per (class size, distinct sensitive values)
-- the number of classes and, per QI, sum of size * (leaves under the class's
-- value - 1), from which glm follows exactly. Only this crosses into Rust.
WITH classes AS (
    SELECT sum(p.cnt)::BIGINT AS size, {{ldiv}}::BIGINT AS ldiv{{glm}}
    FROM {{source}} p {{joins}}
    GROUP BY {{groups}}
)
SELECT size, ldiv, count(*)::BIGINT AS classes{{glm_totals}}
FROM classes
GROUP BY size, ldiv
ORDER BY size, ldiv
