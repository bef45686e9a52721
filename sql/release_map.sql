-- The recoding the release writer applies, read into kanon (it is small: one
-- row per QI value and per suppressed class, never one per source row).
-- name: value_map
-- Per QI, each value (n, keyed as the release keys it: release.rs key_expr)
-- with the code of its group at the node's level and that group's label.
SELECT {{n}} AS n, d.{{code}} AS code, h.label
FROM {{codes}} k
JOIN {{dim}} d ON d.c0 = k.c0
JOIN {{nodes}} h ON h.level = {{level}} AND h.code = d.{{code}}
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
-- (kanon_node_classes: the node's classes, written by sql/node_classes.sql.)
SELECT coalesce(sum(c.size * {{product}}), 0)::DOUBLE, coalesce(sum(c.size), 0)::BIGINT
FROM kanon_node_classes c
{{joins}}
WHERE c.size >= ? AND c.ldiv >= ?{{rejected}}
