-- `kanon check` on a remote engine (src/audit/engine.rs): the audited table's
-- classes are measured there and only aggregates come back. Plain SQL both
-- Spark and PostgreSQL run: no GROUP BY ALL, casts spelled CAST. The QIs are
-- q0, q1, …; the sensitive columns' codes s (and t), from the source's code
-- tables sent there (-1: a value the source does not have).
-- name: pairs
-- Per class and code of each sensitive column: the records.
SELECT {{keys}}{{codes}}, CAST(count(*) AS BIGINT) AS n
FROM {{table}} src{{joins}}
GROUP BY {{group_by}}
-- name: split
-- With ℓ's column and t-closeness's apart: per class, the records of each code
-- of s (w = 1) and, as other rows, of each code of t (w = 0). A code is never
-- NULL (-1 for none), so a NULL tells the sets apart (Spark's grouping_id
-- would name every grouping column).
SELECT {{plain}}, s, t, CAST(sum(n) AS BIGINT) AS n, CASE WHEN t IS NULL THEN 1 ELSE 0 END AS w
FROM ({{pairs}}) p
GROUP BY GROUPING SETS (({{plain}}, s), ({{plain}}, t))
-- name: classes
-- Per class: its records and its value lists (the engine's value_list_of).
SELECT CAST(sum({{size}}) AS BIGINT) AS size{{lists}}
FROM ({{rows}}) p
GROUP BY {{plain}}
-- name: histogram
-- What comes back: per class size and value list, the classes. With ℓ's
-- column and t-closeness's apart, per (size, s_list) (w = 1) and, as other
-- rows, per (size, t_list) (w = 0): each model reads its own list only. A
-- list is never NULL (an empty one is ''), so a NULL tells the sets apart.
SELECT c.size{{lists}}, CAST(count(*) AS BIGINT) AS classes{{which}}
FROM ({{classes}}) c
GROUP BY {{sets}}
-- name: missing
-- The first class (by its QI values) with a sensitive value the source does
-- not have: the QIs, each sensitive value, whether it has no code.
SELECT {{keys}}{{values}}
FROM {{table}} src{{joins}}
WHERE {{unknown}}
ORDER BY {{order}}
LIMIT 1
-- name: missing_text
-- That class as the message names it, as DuckDB spells the values.
SELECT {{names}}{{values}} FROM {{table}}
-- name: read
-- What came back, read locally in a fixed order.
SELECT * FROM {{table}} ORDER BY ALL
-- name: drop
-- The histogram or the missing class once read.
DROP TABLE IF EXISTS {{table}}
