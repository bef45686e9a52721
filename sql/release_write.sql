-- The second full scan: every source row of a kept class, QIs replaced by
-- their labels, dropped columns left out, in source order (so the same input
-- gives the same output). Plain SQL, one equi-join.
CREATE TABLE {{target}} AS
SELECT {{columns}}
FROM (SELECT *, row_number() OVER () AS {{row}} FROM kanon_source) s
JOIN kanon_release_map r ON {{join}}
ORDER BY s.{{row}}
