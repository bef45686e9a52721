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
