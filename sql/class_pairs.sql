-- A per-class aggregate over an extra column's (class, value) counts, as a CTE
-- of the class histogram: {{name}} per class is {{aggregate}} over n, the
-- records of each value of {{column}} in the class (majority label: max(n);
-- squared sensitive counts: sum(n * n)).
, {{name}} AS (
    SELECT node, {{plain}}, {{aggregate}} AS {{name}}
    FROM (SELECT p.node, {{groups}}, p.{{column}}, sum(p.cnt) AS n FROM {{source}} p GROUP BY ALL)
    GROUP BY ALL
)
