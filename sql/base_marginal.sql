-- One QI's marginal of the base frequency set: each value (n, as the source
-- has it) with its text form (the hierarchies' leaves are text) and count.
-- The hierarchy checks and generators read these small tables instead of the
-- source-sized base.
CREATE OR REPLACE TEMP TABLE {{target}} AS
SELECT {{col}} AS n, CAST({{col}} AS VARCHAR) AS {{col}}, sum(cnt)::BIGINT AS cnt
FROM kanon_base
GROUP BY 1
