-- The second full scan: every source row of a kept class, QIs replaced by
-- their labels, dropped columns left out, in source order ({{row}} is the
-- row's position there), so the same input gives the same output. Plain SQL:
-- one small equi-join per QI (value → code) and one integer equi-join with
-- the kept classes.
CREATE TABLE {{target}} AS
SELECT {{columns}}
FROM kanon_source_ordered s
{{value_joins}}
JOIN kanon_release_classes r ON {{class_join}}
ORDER BY s.{{row}}
