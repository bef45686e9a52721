-- For every code and every level at or above its own: the ancestor's code and
-- leaf count. Rollup from any frequency set is one join with this table.
CREATE OR REPLACE TEMP TABLE {{anc}} AS
SELECT DISTINCT t.code, t.level, t.anc, n.leaves
FROM ({{pairs}}) t JOIN {{nodes}} n ON n.code = t.anc
