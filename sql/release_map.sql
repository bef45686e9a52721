-- The recoding the release writer applies: each distinct raw QI combination
-- of a kept class, with the label each QI is released as. Full-domain nodes
-- build it here; other recodings (partitions, per-class cells) can build the
-- same table.
CREATE OR REPLACE TEMP TABLE kanon_release_map AS
WITH m AS (
    SELECT {{raw}}, {{classes}}{{sensitive}}, p.cnt
    FROM kanon_f0 p
), classes AS (
    SELECT {{class_cols}}, sum(cnt) AS size, {{ldiv}} AS ldiv
    FROM m GROUP BY ALL
), kept AS (
    SELECT {{class_cols}} FROM classes WHERE size >= ? AND ldiv >= ?
)
SELECT DISTINCT {{raw_m}}, {{labels}}
FROM m JOIN kept USING ({{class_cols}}) {{label_joins}}
