-- name: stats
-- With [privacy] person: the source's persons and their rows, off the
-- person column's marginal kanon_marg_p (a row per person, NULL one too).
SELECT count(*)::BIGINT AS persons,
    count(*) FILTER (WHERE n IS NULL)::BIGINT AS nulls,
    coalesce(min(cnt), 0)::BIGINT AS least,
    coalesce(quantile_disc(cnt, 0.5), 0)::BIGINT AS median,
    coalesce(max(cnt), 0)::BIGINT AS most
FROM kanon_marg_p
-- name: pairs
-- The base set's (person code, leaf codes) rows for the in-memory evaluator
-- (evaluator/persons.rs), which sorts and merges them itself: the coded rows
-- (kanon_f0_rows, a row each) or the grouped set (kanon_f0, with counts
-- {{count}}). The codes come packed into BIGINT words w0… ({{words}}: shifts
-- and ors of p, g0…; no value of a job or a table enters it).
SELECT {{words}}{{count}} FROM {{relation}}
-- name: person_codes
-- The person column's largest code (persons, or the span of offset codes).
SELECT coalesce(max(code), 0)::BIGINT FROM kanon_codes_p
-- name: combinations
-- Distinct QI combinations of the source.
SELECT count(*)::BIGINT FROM (SELECT DISTINCT {{codes}} FROM kanon_f0)
-- name: signatures
-- A node's persons: each person's distinct generalized tuples (t, with the
-- person's rows r there), and per person its signature, the set of those
-- tuples, told by an order-independent hash: the exact sum of a 64-bit hash
-- of each tuple, the xor of a second one, and their number (a collision
-- needs all three to agree). Shared by the histogram and the dropped persons.
WITH t AS (
    SELECT f.p, {{gen}}, sum(f.cnt)::BIGINT AS r
    FROM kanon_f0 f
    GROUP BY ALL
), lt AS (
    SELECT t.*{{leaf_terms}}
    FROM t {{leaf_joins}}
), ps AS (
    SELECT p, sum(hash({{cols}})::HUGEINT) AS h1, bit_xor(hash({{cols}}, 1::INTEGER)) AS h2, count(*) AS m,
        sum(r)::BIGINT AS rows{{leaf_sums}}
    FROM lt
    GROUP BY p
)
-- name: histogram
-- A node's person classes by size (persons): their number, rows and leaf
-- sums (part 0); and, per class size, what those classes add to Σ over
-- released tuples of (rows released with the tuple)² when released beside
-- every class of more persons (part 1, dm over rows: per tuple, its rows
-- summed from the largest classes down).
, classes AS (
    SELECT h1, h2, m, count(*)::BIGINT AS persons, sum(rows)::BIGINT AS rows{{class_sums}}
    FROM ps
    GROUP BY h1, h2, m
), sized AS (
    SELECT ps.p, c.persons AS size FROM ps JOIN classes c USING (h1, h2, m)
), tuples AS (
    SELECT {{cols}}, s.size, sum(t.r)::BIGINT AS r
    FROM t JOIN sized s USING (p)
    GROUP BY ALL
), steps AS (
    SELECT size, r, sum(r) OVER (PARTITION BY {{cols}} ORDER BY size DESC) AS cum
    FROM tuples
)
SELECT 0 AS part, persons AS size, count(*)::BIGINT AS classes, sum(rows)::HUGEINT::VARCHAR AS rows,
    '0' AS squares{{bucket_sums}}
FROM classes
GROUP BY persons
UNION ALL
SELECT 1, size, 0, '0', sum(cum::HUGEINT * cum - (cum - r)::HUGEINT * (cum - r))::VARCHAR{{zero_sums}}
FROM steps
GROUP BY size
-- name: dropped
-- The persons of a node's classes of fewer than k persons (the parameter),
-- by person code, for the release to leave out with all their rows.
, small AS (
    SELECT h1, h2, m FROM ps GROUP BY h1, h2, m HAVING count(*) < ?
)
SELECT ps.p FROM ps JOIN small USING (h1, h2, m)
-- name: kept_source
-- The source's rows of the persons the release keeps (the person column
-- compared as the source holds it; a NULL person is refused at load).
CREATE OR REPLACE TEMP VIEW kanon_source_persons AS
SELECT src.*
FROM kanon_source src
WHERE src.{{person}} NOT IN (SELECT k.n FROM {{dropped}} d JOIN kanon_codes_p k ON k.code = d.p)
-- name: dropped_table
CREATE OR REPLACE TEMP TABLE kanon_dropped_persons (p INTEGER)
-- name: ambiguity
-- am's sum over the rows the release keeps: Σ rows × Π over QIs of the
-- leaves under the row's value at the node (exact, as text), and those rows.
SELECT coalesce(sum(f.cnt::HUGEINT{{products}}), 0)::VARCHAR, coalesce(sum(f.cnt), 0)::BIGINT
FROM kanon_f0 f {{joins}}
WHERE f.p NOT IN (SELECT p FROM kanon_dropped_persons)
-- name: dropped_count
SELECT count(*)::BIGINT FROM kanon_dropped_persons
-- name: dropped_values
-- The dropped persons' values as the source holds them, for the release on
-- a remote engine to anti-join.
SELECT k.n FROM kanon_dropped_persons d JOIN kanon_codes_p k ON k.code = d.p
-- name: audit
-- kanon check with [privacy] person: the audited table's classes of persons
-- by size, with their rows. Each person's signature is the set of its
-- distinct QI tuples, told by an order-independent hash (the exact sum of one
-- 64-bit hash, the xor of another, their number). Plain SQL with the
-- engine's hash spellings ({{hash}}, {{bits}}), run where the table is; only
-- a row per class size comes back.
SELECT persons AS size, count(*) AS classes, sum(r) AS r
FROM (
    SELECT h1, h2, m, count(*) AS persons, sum(r) AS r
    FROM (
        SELECT p, sum({{hash}}) AS h1, bit_xor({{bits}}) AS h2, count(*) AS m, sum(r) AS r
        FROM (SELECT {{columns}}, count(*) AS r FROM {{relation}} GROUP BY {{group_by}}) t
        GROUP BY p
    ) ps
    GROUP BY h1, h2, m
) c
GROUP BY persons
-- name: audit_fetched
-- The audit's rows as fetched from a remote engine (types as it sent them).
SELECT size::BIGINT, classes::BIGINT, r::BIGINT FROM kanon_person_classes ORDER BY size
