-- Frequency set of a node, rolled up from the frequency set of a node below it
-- (or from kanon_f0) through the ancestor tables. Levels are bound parameters.
CREATE OR REPLACE TEMP TABLE {{target}} AS
SELECT {{groups}}{{sensitive}}, sum(p.cnt)::BIGINT AS cnt
FROM {{source}} p {{joins}}
GROUP BY ALL
