-- Cell-based generalization (CDGH, CNDGH): the per-QI value numbers the pass
-- orders records by, and the one sorted stream of records.
-- name: leaf_numbers
-- CDGH: each source value (n) with its leaf's number among the hierarchy's
-- leaves in leaf-code order, so the leaves under a node are consecutive.
CREATE OR REPLACE TEMP TABLE {{target}} AS
SELECT k.n, r.c
FROM {{codes}} k
JOIN (SELECT c0, (row_number() OVER (ORDER BY c0) - 1)::INTEGER AS c FROM {{dim}}) r ON r.c0 = k.c0
-- name: leaf_codes
-- CDGH: each leaf of the hierarchy with its code at every level, in leaf-code order.
SELECT leaf, {{levels}}
FROM {{dim}}
ORDER BY c0
-- name: node_labels
-- CDGH: every node of the hierarchy (level, code) with its label.
SELECT level, code, label
FROM {{nodes}}
-- name: value_numbers
-- CNDGH: each source value (n) numbered in value order (NULL first).
CREATE OR REPLACE TEMP TABLE {{target}} AS
SELECT n, (row_number() OVER (ORDER BY n NULLS FIRST) - 1)::INTEGER AS c
FROM {{codes}}
-- name: values
-- CNDGH: a QI's values by number, as text and as a number (NULL when not one).
SELECT c, CAST(n AS VARCHAR), TRY_CAST(n AS DOUBLE)
FROM {{target}}
ORDER BY c
-- name: records
-- Every record once, its value number per QI (and sensitive / label codes),
-- with its position in the source, in value order, ties in source order.
SELECT {{columns}}, src.{{pos}}::BIGINT AS pos
FROM kanon_source_rows src {{joins}}
ORDER BY {{order}}, pos
