-- Frequency sets of a batch of nodes, each rolled up from the frequency set of
-- a node below it. kanon_kids lists (child, parent, per QI the divisor from the
-- parent's codes to the child's; NULL for a QI the child leaves out); {{source}}
-- holds the parents' frequency sets, one `node` id per parent (kanon_f0_node:
-- the base frequency set, node 0). Codes are mixed-radix, so generalizing is
-- integer division.
CREATE OR REPLACE TEMP TABLE {{target}} AS
SELECT k.child AS node, {{groups}}{{extras}}, sum(p.cnt)::BIGINT AS cnt
FROM {{source}} p
JOIN kanon_kids k ON k.parent = p.node
GROUP BY ALL
