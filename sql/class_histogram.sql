-- Class-size histograms of every node in a frequency-set table: per node and
-- (class size, distinct sensitive values) the number of classes; per QI the sum
-- of size * (leaves under the class's value - 1), from which glm follows
-- exactly; and the records not of their class's majority label (for cm).
-- Only these histograms cross into Rust.
WITH classes AS (
    SELECT p.node, {{groups}}, sum(p.cnt)::BIGINT AS size, {{ldiv}}::BIGINT AS ldiv{{glm}}
    FROM {{source}} p {{leaf_joins}}
    GROUP BY ALL
){{label_cte}}
SELECT c.node, c.size, c.ldiv, count(*)::BIGINT AS classes{{glm_totals}}, {{minority}}::BIGINT AS minority
FROM classes c {{label_join}}
GROUP BY c.node, c.size, c.ldiv
ORDER BY c.node, c.size, c.ldiv
