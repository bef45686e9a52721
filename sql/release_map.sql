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
-- name: value_label
-- On Spark or PostgreSQL, a QI no expression recodes: each value (n, as
-- the source has it) with its label at the node's level ({{label}}), off its
-- marginal and its hierarchy's text table.
SELECT m.n, h.{{label}} AS label
FROM {{marginal}} m JOIN {{h}} h ON m.{{col}} IS NOT DISTINCT FROM h.v0
-- name: numbers_outside
-- The values an engine's interval expression may not label as DuckDB does
-- (not finite, or beyond 2^52 where doubles stop holding every integer).
SELECT count(*) FROM {{marginal}}
WHERE n IS NOT NULL AND NOT coalesce(isfinite(CAST(n AS DOUBLE)) AND abs(CAST(n AS DOUBLE)) < 4503599627370496, false)
-- name: dates_outside
-- The dates (or timestamps) an engine may not write as DuckDB does: infinite,
-- or outside the years 1000-9999 (four digits, no era).
SELECT count(*) FROM {{marginal}}
WHERE n IS NOT NULL AND NOT coalesce(isfinite(n) AND year(n) BETWEEN 1000 AND 9999, false)
-- name: class_codes
-- QI {{a}}'s codes among the suppressed classes ({{codes}}: c0… per QI);
-- every QI's part in one query (UNION ALL), told apart by a.
SELECT DISTINCT CAST({{a}} AS BIGINT) AS a, {{c}} AS code FROM {{codes}}
-- name: labels_table
-- The suppressed classes' codes with their labels, per QI a (sent there).
CREATE OR REPLACE TEMP TABLE kanon_release_labels (a BIGINT, code BIGINT, label VARCHAR)
-- name: code_labels
-- QI {{a}}'s codes with their labels at the node's level.
INSERT INTO kanon_release_labels
SELECT k.a, k.code, h.label FROM kanon_release_codes k JOIN {{nodes}} h ON h.level = {{level}} AND h.code = k.code
WHERE k.a = {{a}}
-- name: labels_counted
-- QI {{a}}'s labels, and how many are NULL (a file hierarchy's NULL leaf).
SELECT count(*), count(*) - count(label) FROM kanon_release_labels WHERE a = {{a}}
-- name: local_suppressed
-- The suppressed classes' label tuples, here (they are sent there).
CREATE OR REPLACE TEMP TABLE kanon_release_suppressed AS {{select}}
-- name: suppressed_nulls
-- Per QI, the suppressed classes whose label is NULL (a file hierarchy's NULL leaf).
SELECT {{nulls}} FROM kanon_release_suppressed
