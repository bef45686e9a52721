-- The evaluator on a remote engine (src/evaluator/engine.rs): the base
-- frequency set kanon_f0 stays there (codes g0…, cnt, and s / t / y when the
-- job reads them), and so do the nodes' frequency sets kept for rollups;
-- only aggregates come back. Plain SQL both Spark and PostgreSQL run: no
-- GROUP BY ALL, casts spelled CAST; integer division is the engine's
-- int_div spelling. {{keys}} are the node's codes (k0…). A node's classes
-- are grouped by one BIGINT that packs its codes where their ranges allow
-- (sql.rs packed_key): engines group one integer faster than several.
-- name: base_rows
SELECT CAST(count(*) AS BIGINT) AS n FROM kanon_f0
-- name: leaves
-- QI a's leaves under each (level, code): glm's leaf sums join it there.
SELECT CAST(level AS INTEGER) AS level, code, leaves FROM {{nodes}}
-- name: kept_set
-- One node's frequency set rolled up from {{source}}, for a table of several
-- (node: its id there): its codes g… at the node's levels (NULL for a QI it
-- leaves out), the extra codes, the records. {{group_keys}} are the node's
-- codes as grouped (one packed key pk, or k0…), {{codes}} them again.
SELECT {{id}} AS node, {{codes}}{{extras}}, q.cnt FROM (
    SELECT {{group_keys}}{{extras_in}}, CAST(sum(p.cnt) AS BIGINT) AS cnt
    FROM {{source}} p
    GROUP BY {{group_by}}
) q
-- name: kept_rows
-- The rows of one node in a table of several.
(SELECT * FROM {{table}} WHERE node = {{id}})
-- name: classes
-- A node's classes off {{source}}: codes k…, records, distinct sensitive
-- codes; grouped by {{group_keys}} (one packed key pk, or k0…).
SELECT {{keys}}, q.size, q.ldiv FROM (
    SELECT {{group_keys}}, CAST(sum(p.cnt) AS BIGINT) AS size, CAST({{ldiv}} AS BIGINT) AS ldiv
    FROM {{source}} p
    GROUP BY {{group_by}}
) q
-- name: pairs
-- Per class the records of each value of the extra column {{column}}, one
-- aggregate of them per class ({{aggregate}} over n): the majority label, or
-- the sum of squares.
SELECT {{keys}}, {{aggregate}} AS {{name}}
FROM (
    SELECT {{group_keys}}, p.{{column}} AS v, sum(p.cnt) AS n
    FROM {{source}} p
    GROUP BY {{group_by}}
) q
GROUP BY {{grouped}}
-- name: class_rows
-- A node's classes (its id {{id}}), each with what its histogram sums: glm's
-- size × (leaves under the class's value − 1) per QI (0 for a QI the node
-- leaves out, and for classes under {{min_size}} records), the records not
-- of the class's majority label, the sum of its squared sensitive counts,
-- and its value lists when the per-class models read them.
SELECT {{id}} AS node, c.size, c.ldiv{{glm}},
    CAST({{minority}} AS BIGINT) AS minority, CAST({{squares}} AS BIGINT) AS squares{{lists}}
FROM ({{classes}}) c {{joins}}
-- name: histograms
-- The class-size histograms of a batch of nodes in one query: per node and
-- (size, distinct sensitive values[, value lists]) the classes and the sums.
SELECT u.node, u.size, u.ldiv, CAST(count(*) AS BIGINT) AS classes{{glm}},
    CAST(sum(u.minority) AS BIGINT) AS minority, CAST(sum(u.squares) AS BIGINT) AS squares{{lists}}
FROM ({{union}}) u
GROUP BY u.node, u.size, u.ldiv{{lists}}
-- name: listed
-- A node's classes with their value lists ({{lists}}: s_list, t_list), for
-- the per-class models.
SELECT c.*{{lists}} FROM ({{classes}}) c {{joins}}
-- name: distinct_lists
-- The distinct value lists of the classes k and l keep: kanon judges each.
SELECT DISTINCT {{lists}} FROM ({{classes}}) c WHERE c.size >= {{k}} AND c.ldiv >= {{l}}
-- name: suppressed
-- The classes a full-domain release drops (fewer than {{k}} records or fewer
-- than {{l}} distinct sensitive values, or value lists the per-class models
-- reject: {{rejected}}), by their codes at the node: a work table there,
-- which the release anti-joins; never brought back.
SELECT {{codes}} FROM ({{classes}}) c {{joins}} WHERE c.size < {{k}} OR c.ldiv < {{l}}{{rejected}}
-- name: count_of
SELECT CAST(count(*) AS BIGINT) AS n FROM ({{select}}) s
-- name: ambiguity
-- Over the classes the release keeps: Σ size × Π leaves (exact, as text) and
-- the records kept (the report's am).
SELECT CAST(coalesce(sum(CAST(c.size AS DECIMAL(38, 0)) * {{product}}), 0) AS {{text}}) AS kept,
    CAST(coalesce(sum(c.size), 0) AS BIGINT) AS records
FROM ({{classes}}) c {{joins}}
WHERE c.size >= {{k}} AND c.ldiv >= {{l}}{{admitted}}
-- name: sizes
-- The classes' sizes: (size, classes), for the risk before.
SELECT c.size, CAST(count(*) AS BIGINT) AS classes FROM ({{classes}}) c GROUP BY c.size
-- name: table_rows
SELECT CAST(count(*) AS BIGINT) AS n FROM {{table}}
-- name: kept_table
-- A kept table brought back whole (engine.rs bring_back): a few hundred thousand rows at most.
SELECT * FROM {{table}}
-- name: here
-- A table here (in kanon's DuckDB) that a query here reads: a kept set's
-- nodes rolled up here, or the leaves glm joins.
CREATE OR REPLACE TEMP TABLE {{table}} AS {{select}}
-- name: drop_here
DROP TABLE IF EXISTS {{table}}
-- name: read
-- The aggregate brought back, read locally in a fixed order.
SELECT * FROM {{table}} ORDER BY ALL
-- name: rejected_lists
-- The value lists the per-class models reject, sent there.
CREATE OR REPLACE TEMP TABLE kanon_rejected_lists ({{columns}})
-- name: base_classes
-- With no extra codes, the base set's rows at the bottom node, or a node's own
-- kept set's rows, are its classes already: a row each, no grouping.
SELECT {{keys}}, CAST(p.cnt AS BIGINT) AS size, CAST(0 AS BIGINT) AS ldiv FROM {{source}} p
-- name: level_values
-- QI {{nodes}}'s hierarchy values per level (here, in DuckDB): how spread a
-- sample keyed on a node's codes is.
SELECT CAST(level AS INTEGER) AS level, CAST(count(*) AS BIGINT) AS n FROM {{nodes}} GROUP BY level ORDER BY level
-- name: refute_sample
-- The base set's rows whose key at the join of the nodes tried together
-- hashes into the first {{parts}} of 64: a work table, whole classes of
-- every node under that join.
SELECT p.* FROM {{source}} p WHERE mod({{hash}}, 64) < {{parts}}
-- name: limited
-- At most {{rows}} rows of {{select}}: what may come back, and one more to tell.
SELECT * FROM ({{select}}) s LIMIT {{rows}}
-- name: refute_sampled
-- Node {{id}}'s records in classes under {{k}}, off that sample; {{keys}}
-- its codes as grouped (pk, or k0…).
SELECT {{id}} AS node, CAST(coalesce(sum(c.size), 0) AS BIGINT) AS suppressed FROM (
    SELECT {{keys}}, sum(p.cnt) AS size FROM {{source}} p GROUP BY {{group_by}}
) c WHERE c.size < {{k}}
-- name: refute
-- Node {{id}}: the records in classes under {{k}} among the classes whose key
-- hashes into the first {{parts}} of 64 (whole classes, so their sizes are
-- exact): more than the budget proves the node infeasible.
SELECT {{id}} AS node, CAST(coalesce(sum(c.size), 0) AS BIGINT) AS suppressed FROM (
    SELECT {{keys}}, sum(p.cnt) AS size FROM {{source}} p WHERE mod({{hash}}, 64) < {{parts}} GROUP BY {{group_by}}
) c WHERE c.size < {{k}}
