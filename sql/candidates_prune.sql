-- Prune phase: drop candidates with an (i-1)-attribute subset that did not
-- survive (apriori: a subset that is not k-anonymous rules out the superset).
DELETE FROM kanon_cand_{{i}}
WHERE {{missing_subsets}}
