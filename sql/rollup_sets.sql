-- Frequency sets of a batch of nodes straight from the base frequency set in
-- one pass: one grouping set per node over its codes ({{columns}}: each QI's
-- leaf code divided down to a level some node uses). GROUPING() tells which
-- node a group belongs to ({{node}}). Used when the base is large, where the
-- join with kanon_kids would read it once per node.
CREATE OR REPLACE TEMP TABLE {{target}} AS
SELECT {{node}} AS node, {{groups}}{{extras}}, sum(cnt)::BIGINT AS cnt
FROM (SELECT {{columns}}cnt{{extras}} FROM kanon_f0)
GROUP BY GROUPING SETS ({{sets}})
