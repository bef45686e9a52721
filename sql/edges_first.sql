-- Iteration 1 edges: each level to the next one up.
CREATE OR REPLACE TEMP TABLE kanon_edge_1 AS
SELECT p.id AS "start", q.id AS "end"
FROM kanon_cand_1 p JOIN kanon_cand_1 q ON p.d1 = q.d1 AND q.i1 = p.i1 + 1
