-- The one full scan of the search: distinct QI combinations (and sensitive
-- value, when l-diversity is asked) with their counts. Plain SQL on purpose,
-- so a distributed engine could run it instead.
CREATE OR REPLACE TEMP TABLE kanon_base AS
SELECT {{columns}}, count(*) AS cnt
FROM kanon_source
GROUP BY {{ordinals}}
