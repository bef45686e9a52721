-- The class sizes the risk figures of a run read (src/anonymize/risk.rs):
-- per class of the source or of a full-domain release, f (records in the
-- sample) and F (records in the population), as (f, F, classes) rows.
-- name: node_classes
-- Classes at a node from the base frequency set (by their codes at the
-- node's levels, c0..), those the release drops left out; F from the
-- population's classes at the same levels when a population table is given
-- (the CTE pc over it), or f itself.
WITH c AS (
    SELECT {{classes}}, sum(p.cnt)::BIGINT AS f
    FROM kanon_f0 p
    GROUP BY ALL
){{population}}
SELECT c.f, {{big_f}}::BIGINT AS big_f, count(*)::BIGINT AS classes
FROM c {{population_join}}
WHERE {{kept}}
GROUP BY ALL
-- name: node_class_codes
-- Classes at a node from the base frequency set, each with its codes at the
-- node's levels (c0..) and f, those the release drops left out: F then comes
-- from the population held in memory (exact k-map, δ-presence).
WITH c AS (
    SELECT {{classes}}, sum(p.cnt)::BIGINT AS f
    FROM kanon_f0 p
    GROUP BY ALL
)
SELECT {{codes}}, c.f
FROM c
WHERE {{kept}}
-- name: population_classes
-- The population table's classes at the node: each QI's value mapped to its
-- code at the node's level through the hierarchy's leaves.
, pc AS (
    SELECT {{codes}}, count(*)::BIGINT AS big_f
    FROM {{relation}} q {{joins}}
    GROUP BY ALL
)
-- name: population_base
-- The population's records per combination of the QIs' leaf codes.
SELECT {{codes}}, count(*)::BIGINT AS big_f
FROM {{relation}} q {{joins}}
GROUP BY ALL
-- name: population_records
-- The population's records (each must be coded through the hierarchies).
SELECT count(*)::BIGINT FROM {{relation}}
-- name: uncovered
-- Population values of one QI that are not leaves of its hierarchy.
SELECT count(*)::BIGINT, any_value(CAST(q.{{col}} AS VARCHAR))
FROM {{relation}} q
WHERE NOT EXISTS (SELECT 1 FROM {{dim}} d WHERE CAST(q.{{col}} AS VARCHAR) IS NOT DISTINCT FROM d.leaf)
-- name: source_classes
-- The source's class sizes over its QI columns (runs without a base frequency set).
SELECT f, f AS big_f, count(*)::BIGINT AS classes
FROM (SELECT count(*)::BIGINT AS f FROM kanon_source GROUP BY {{columns}})
GROUP BY ALL
-- name: base_sizes
-- The source's class sizes from a base frequency set with one row per class.
SELECT cnt::BIGINT AS f, count(*)::BIGINT AS classes
FROM kanon_f0
GROUP BY ALL
-- name: base_rows
-- The base frequency set's rows: leaf codes per QI and records (a scheme's
-- release classes are counted from them).
SELECT {{codes}}, cnt::BIGINT
FROM kanon_f0
