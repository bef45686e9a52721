-- Iteration 1 of Incognito: every (attribute, level) is a candidate node.
CREATE OR REPLACE TEMP TABLE kanon_cand_1 AS
SELECT (row_number() OVER (ORDER BY a.attr, l.level))::INTEGER AS id,
       a.attr AS d1, l.level::INTEGER AS i1,
       NULL::INTEGER AS parent1, NULL::INTEGER AS parent2
FROM kanon_heights a, LATERAL (SELECT unnest(range(a.height + 1)) AS level) l
