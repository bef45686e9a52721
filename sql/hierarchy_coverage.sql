-- Values of a QI that are not leaves of its hierarchy: rows affected, distinct
-- values, and the first few values (most frequent first).
WITH missing AS (
    SELECT b.v, b.cnt
    FROM (SELECT {{v}} AS v, sum(cnt) AS cnt FROM {{base}} GROUP BY 1) b
    LEFT JOIN {{dim}} l ON b.v IS NOT DISTINCT FROM l.leaf
    WHERE l.c0 IS NULL
)
SELECT (SELECT coalesce(sum(cnt), 0) FROM missing)::BIGINT,
       (SELECT count(*) FROM missing)::BIGINT,
       (SELECT string_agg(coalesce('"' || v || '"', 'NULL'), ', ')
          FROM (SELECT v FROM missing ORDER BY cnt DESC, v NULLS FIRST LIMIT 5))
