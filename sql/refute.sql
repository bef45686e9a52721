-- Records in classes under k among a sample of one node's classes, rolled up
-- from the base frequency set: the classes whose key ({{key}}: each QI's leaf
-- code divided down to the node's level) hashes into parts [from, to) of
-- {{parts}}. Each sampled class is whole there, so its size is its size.
-- Parameters: from, to, k.
SELECT coalesce(sum(c), 0)::BIGINT
FROM (
    SELECT sum(cnt) AS c
    FROM kanon_f0
    WHERE hash({{key}}) % {{parts}} >= ? AND hash({{key}}) % {{parts}} < ?
    GROUP BY {{key}}
    HAVING sum(cnt) < ?
)
