-- A batch table of the SQL evaluator holds the frequency sets of several
-- nodes (`node`: the evaluator's ids, never a value from a job or a table);
-- hubs among them, sets kept only for rollups, need no histogram.
-- name: nodes
-- The rows of the nodes {{ids}}, which the histogram query reads.
(SELECT * FROM {{table}} WHERE node IN ({{ids}}))
-- name: classes
-- Classes per node of the hubs {{ids}}, whose histograms are not read. With
-- sensitive or label codes a class has a row per code, and {{group_by}}
-- makes one row per class; without, it is empty.
SELECT node, count(*)::BIGINT AS classes
FROM (SELECT node FROM {{table}} WHERE node IN ({{ids}}) {{group_by}})
GROUP BY node
