-- Edge generation (LeFevre et al. 3.1.1): p -> q when the parents step along
-- the previous iteration's edges, minus the edges implied by two others.
CREATE OR REPLACE TEMP TABLE kanon_edge_{{i}} AS
WITH candidate_edges AS (
    SELECT p.id AS "start", q.id AS "end"
    FROM kanon_cand_{{i}} p, kanon_cand_{{i}} q, kanon_edge_{{prev}} e, kanon_edge_{{prev}} f
    WHERE e."start" = p.parent1 AND e."end" = q.parent1
      AND f."start" = p.parent2 AND f."end" = q.parent2
    UNION
    SELECT p.id, q.id
    FROM kanon_cand_{{i}} p, kanon_cand_{{i}} q, kanon_edge_{{prev}} e
    WHERE e."start" = p.parent1 AND e."end" = q.parent1 AND p.parent2 = q.parent2
    UNION
    SELECT p.id, q.id
    FROM kanon_cand_{{i}} p, kanon_cand_{{i}} q, kanon_edge_{{prev}} e
    WHERE e."start" = p.parent2 AND e."end" = q.parent2 AND p.parent1 = q.parent1
)
SELECT "start", "end" FROM candidate_edges
EXCEPT
SELECT d1."start", d2."end"
FROM candidate_edges d1, candidate_edges d2
WHERE d1."end" = d2."start"
