-- A full-domain release's chosen node, measured (src/anonymize/full_domain):
-- its classes written once, the classes it suppresses, and the value lists
-- the per-class models judge.
-- name: node_classes
-- A full-domain node's classes (codes c0… at its levels), with their records
-- and distinct sensitive values: one scan of the base frequency set, read
-- by `suppressed` below and by `ambiguity` (release_map.sql).
CREATE OR REPLACE TEMP TABLE kanon_node_classes AS
SELECT {{classes}}, sum(p.cnt) AS size, {{ldiv}} AS ldiv
FROM kanon_f0 p
GROUP BY ALL
-- name: node_classes_kept
-- The same off the node's own frequency set, which the SQL evaluator kept
-- ({{kept}}, rows of every node it holds; its codes are the node's already):
-- tens of millions of rows to read at 10⁹ source rows, not the base's billion.
CREATE OR REPLACE TEMP TABLE kanon_node_classes AS
SELECT {{classes}}, sum(p.cnt) AS size, {{ldiv}} AS ldiv
FROM {{kept}} p
WHERE p.node = ?
GROUP BY ALL
-- name: suppressed
-- The classes a full-domain release drops (fewer than k records, or fewer
-- distinct sensitive values than l), by their codes at the node's levels.
-- Within the budget these are few.
SELECT {{class_cols}}
FROM kanon_node_classes c
WHERE size < ? OR ldiv < ?
-- name: class_lists
-- Per class at the node's levels, its (value code, records) list of one
-- extra column ({{column}}: s or t), for the per-class models kanon judges.
SELECT {{class_cols}}, list([c.v::BIGINT, c.n::BIGINT] ORDER BY c.v)
FROM (
    SELECT {{classes}}, p.{{column}} AS v, sum(p.cnt) AS n
    FROM kanon_f0 p
    GROUP BY ALL
) c
GROUP BY ALL
-- name: drop
DROP TABLE kanon_node_classes
