-- name: qi
-- One QI's values as the source has them, with their leaf codes: the base
-- frequency set and the release join the source to these on native values,
-- so no row is cast to the hierarchy's text.
CREATE OR REPLACE TEMP TABLE {{target}} AS
SELECT m.n, d.c0
FROM {{marginal}} m JOIN {{dim}} d ON m.{{col}} IS NOT DISTINCT FROM d.leaf
-- name: extra
-- An extra column's (s, t, y) value → code map, codes 1.. in the column
-- type's order; NULL is a value like any other: it gets a code of its own.
CREATE OR REPLACE TEMP TABLE {{target}} AS
SELECT (row_number() OVER (ORDER BY n NULLS FIRST))::INTEGER AS code, n FROM kanon_marg_{{col}}
-- name: offset_fits
-- May an extra column's codes be its values less the least, plus 1? An
-- integer column whose values span less than 4 codes a value and fit an
-- INTEGER, with no NULL: the person column, whose rows then get their codes
-- by arithmetic rather than a join (base_frequency_set.sql person_offset).
SELECT coalesce(typeof(any_value(n)) IN ('TINYINT', 'SMALLINT', 'INTEGER', 'BIGINT', 'UTINYINT', 'USMALLINT', 'UINTEGER')
    AND count(n) = count(*)
    AND max(n)::HUGEINT - min(n)::HUGEINT < least(4 * count(*), 2147483646), false)
FROM kanon_marg_{{col}}
-- name: offset
-- offset_fits's codes: value less the least, plus 1 (in the values' order, as extra's).
CREATE OR REPLACE TEMP TABLE {{target}} AS
SELECT (n::BIGINT - (SELECT min(n) FROM kanon_marg_{{col}})::BIGINT + 1)::INTEGER AS code, n FROM kanon_marg_{{col}}
