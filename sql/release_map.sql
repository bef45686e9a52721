-- The recoding the release writer applies, in two small tables:
-- name: value_map
-- Per QI, each hierarchy leaf (as text) with the code of the group it falls
-- in. For a full-domain node: its code at the node's level.
CREATE OR REPLACE TEMP TABLE {{map}} AS
SELECT d.leaf AS v, d.{{code}} AS code FROM {{dim}} d
-- name: classes
-- The kept classes (size >= k, enough distinct sensitive values) by their
-- codes, each with the label every QI is released as. Recodings that treat
-- classes individually (per-class cells) fill the same table with their own
-- labels per class.
CREATE OR REPLACE TEMP TABLE kanon_release_classes AS
WITH c AS (
    SELECT {{classes}}, sum(p.cnt) AS size, {{ldiv}} AS ldiv
    FROM kanon_f0 p
    GROUP BY ALL
)
SELECT {{class_cols}}, {{labels}}
FROM c {{label_joins}}
WHERE size >= ? AND ldiv >= ?
