-- name: population
-- The population table grouped by the job's QI columns (q0, q1, …), each
-- generalized as the audited table's is ({{maps}}: a QI's leaves joined to
-- their labels at its level): each population class with its records F.
SELECT {{columns}}, count(*)::BIGINT AS cnt
FROM {{relation}} pop{{maps}}
GROUP BY ALL
-- name: distinct_values
-- A column's distinct values as text (a QI of the audited table).
SELECT DISTINCT CAST({{column}} AS VARCHAR) FROM {{relation}} WHERE {{column}} IS NOT NULL
-- name: level_map
-- A QI's leaves with their labels at the audited table's level.
CREATE OR REPLACE TEMP TABLE {{table}} (leaf VARCHAR, label VARCHAR)
-- name: classes
-- The audited table in one pass: per class (its QI values q0, q1, …) and per
-- code of the sensitive column (s) and of t-closeness's column (t) in the
-- source's code tables, the records. A value the source does not have gets no
-- code; its text comes back (s_missing, t_missing) to name it. Each class's
-- QI values come back as text (to tell classes apart and name them), with its
-- population size when a population table is joined; rows arrive ordered by
-- class, so each class's rows arrive together. A row is a record, or (on a
-- remote engine) a group of records, counted by {{count}}.
WITH g AS (
    SELECT {{qis}}{{codes}}, {{count}} AS cnt
    FROM {{table}} src{{joins}}
    GROUP BY ALL
)
SELECT {{names}}{{extras}}, g.cnt{{population}}
FROM g{{population_join}}
ORDER BY {{order}}
-- name: grouped
-- On a remote engine, run there: a table grouped by the columns the audit
-- reads, each group with its records; only the groups come back.
SELECT {{columns}}, count(*) AS {{weight}}
FROM {{relation}}
GROUP BY {{ordinals}}
-- name: drop_marginals
-- The source's marginals once split per sensitive column.
DROP TABLE kanon_marginals
