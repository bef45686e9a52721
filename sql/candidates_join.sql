-- Join phase (LeFevre et al. 3.1.1): two (i-1)-attribute survivors that agree
-- on their first i-2 (attribute, level) pairs make an i-attribute candidate.
CREATE OR REPLACE TEMP TABLE kanon_cand_{{i}} AS
SELECT (row_number() OVER (ORDER BY {{order}}))::INTEGER AS id, *
FROM (
    SELECT {{pairs}}, p.id AS parent1, q.id AS parent2
    FROM kanon_surv_{{prev}} p JOIN kanon_surv_{{prev}} q
      ON {{same_prefix}} p.d{{prev}} < q.d{{prev}}
) c
