-- Independent re-measure of a table: class sizes over the given columns and,
-- when given, distinct sensitive values per class; {{count}} counts a row's
-- records (count(*), or the sum of a grouped table's counts).
SELECT size, ldiv, count(*)::BIGINT AS classes
FROM (
    SELECT {{count}} AS size, {{ldiv}}::BIGINT AS ldiv
    FROM {{table}}
    GROUP BY {{columns}}
)
GROUP BY size, ldiv
ORDER BY size, ldiv
