-- Values of level {{lo}} with more than one parent at level {{hi}}.
SELECT coalesce('"' || {{lo}} || '"', 'NULL'), string_agg(DISTINCT '"' || {{hi}} || '"', ' and ')
FROM {{h}}
GROUP BY {{lo}}
HAVING count(DISTINCT {{hi}}) > 1
ORDER BY 1
LIMIT 3
