-- One QI's values as the source has them, with their leaf codes: the base
-- frequency set is encoded by joining on native values, so no row is cast.
CREATE OR REPLACE TEMP TABLE {{target}} AS
SELECT m.n, d.c0
FROM {{marginal}} m JOIN {{dim}} d ON m.{{col}} IS NOT DISTINCT FROM d.leaf
