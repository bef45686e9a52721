-- The recoding the release writer applies, in small tables (never one row per
-- source row or per QI combination):
-- name: value_map
-- Per QI, each value as the source has it (n) with the code of the group it
-- falls in and that group's label. For a full-domain node: the code and label
-- at the node's level. Recodings that treat classes individually use `code`
-- only and take their labels from kanon_release_classes.
CREATE OR REPLACE TEMP TABLE {{map}} AS
SELECT k.n, d.{{code}} AS code, h.label
FROM {{codes}} k
JOIN {{dim}} d ON d.c0 = k.c0
JOIN {{nodes}} h ON h.level = {{level}} AND h.code = d.{{code}}
-- name: suppressed
-- The classes a full-domain release drops (fewer than k records, or fewer
-- distinct sensitive values than l), by their codes. Within the budget these
-- are few, so the write's anti-join against them is cheap.
CREATE OR REPLACE TEMP TABLE kanon_release_suppressed AS
SELECT {{class_cols}}
FROM (
    SELECT {{classes}}, sum(p.cnt) AS size, {{ldiv}} AS ldiv
    FROM kanon_f0 p
    GROUP BY ALL
) c
WHERE size < ? OR ldiv < ?
