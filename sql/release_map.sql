-- The recoding the release writer applies, read into kanon (it is small: one
-- row per QI value and per suppressed class, never one per source row).
-- name: value_map
-- Per QI, each value (n, keyed as the release keys it: release.rs key_expr)
-- with the code of its group at the node's level and that group's label.
SELECT {{n}} AS n, d.{{code}} AS code, h.label
FROM {{codes}} k
JOIN {{dim}} d ON d.c0 = k.c0
JOIN {{nodes}} h ON h.level = {{level}} AND h.code = d.{{code}}
-- name: node_classes
-- A full-domain node's classes (codes c0… at its levels), with their records
-- and distinct sensitive values: one scan of the base frequency set, read
-- by the two statements below.
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
-- name: block_map
-- Per QI, each value (keyed as above) with its block under a partition of the
-- QI's values (the scheme search) and the block's label: {{blocks}} maps a
-- leaf code to its block.
SELECT {{n}} AS n, b.block, b.label
FROM {{codes}} k
JOIN {{blocks}} b ON b.c0 = k.c0
-- name: ambiguity
-- Over the classes a full-domain release keeps: Σ size × Π over QIs of the
-- leaves under the class's value, and the records kept (the report's am).
-- (kanon_node_classes: the node's classes, written by node_classes above.)
SELECT coalesce(sum(c.size * {{product}}), 0)::DOUBLE, coalesce(sum(c.size), 0)::BIGINT
FROM kanon_node_classes c
{{joins}}
WHERE c.size >= ? AND c.ldiv >= ?{{rejected}}
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
