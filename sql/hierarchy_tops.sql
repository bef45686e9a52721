-- Distinct values at the top level (with a few of them) and the leaf count.
SELECT (SELECT count(DISTINCT {{top}}) FROM {{h}})::BIGINT,
       (SELECT string_agg('"' || t || '"', ', ') FROM (SELECT DISTINCT {{top}} AS t FROM {{h}} ORDER BY 1 LIMIT 3)),
       (SELECT count(*) FROM {{h}})::BIGINT
