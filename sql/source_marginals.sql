-- name: scan
-- The first, light scan of the source: every QI's (and the sensitive and
-- label columns') distinct values with their counts, all in one pass with one
-- grouping set per column. GROUPING() tells which column a row counts. The
-- hierarchies are built and checked from these small marginals, and they give
-- every value its integer code before the base frequency set is grouped.
-- Run where the source lives (database.rs materialize) into kanon_marginals.
SELECT {{all}}, GROUPING({{all}}) AS gid, {{count}} AS cnt
FROM (SELECT {{columns}} FROM {{relation}}) AS src
GROUP BY GROUPING SETS ({{sets}})
-- name: scan_part
-- The same scan one column at a time, for an engine that runs grouping sets
-- serially (each aggregate runs in parallel there): column {{v}}'s values
-- and counts, gid as GROUPING() gives it for {{v}}.
SELECT {{v}}, CAST({{gid}} AS BIGINT) AS gid, {{count}} AS cnt
FROM (SELECT {{columns}} FROM {{relation}}) AS src
GROUP BY 1
-- name: scan_fused
-- The QIs whose hierarchy files bound their combinations (a few thousand at
-- most): the combinations and their counts, one aggregate in parallel there,
-- each column's marginal summed from it here (fused_part).
SELECT {{all}}, {{count}} AS cnt
FROM (SELECT {{columns}} FROM {{relation}}) AS src
GROUP BY {{all}}
-- name: fused_part
-- Column {{v}}'s marginal off the fused combinations, as scan_part gives it.
CREATE OR REPLACE TEMP TABLE kanon_marginals AS
SELECT {{v}}, CAST({{gid}} AS BIGINT) AS gid, CAST(sum(cnt) AS BIGINT) AS cnt
FROM kanon_marginals_fused
GROUP BY {{v}}
-- name: drop_fused
DROP TABLE kanon_marginals_fused
-- name: split
-- One column's marginal: each value (n, as the source has it) with its text
-- form (hierarchy leaves are text) and count.
CREATE OR REPLACE TEMP TABLE {{target}} AS
SELECT {{col}} AS n, CAST({{col}} AS VARCHAR) AS {{col}}, cnt
FROM kanon_marginals
WHERE gid = {{gid}}
-- name: drop
DROP TABLE kanon_marginals
-- name: records
-- The source's records, off a QI's marginal.
SELECT coalesce(sum(cnt), 0)::BIGINT FROM {{marginal}}
