-- The second full scan: every source row of a kept class, QIs replaced by
-- their labels, dropped columns left out, in source order ({{row}} is the
-- row's position there), so the same input gives the same output. Plain SQL:
-- one small equi-join per QI (value -> code, label).
-- name: full_domain
-- Labels come from the value maps; the suppressed classes are anti-joined.
CREATE TABLE {{target}} AS
SELECT {{columns}}
FROM kanon_source_ordered s
{{value_joins}}
WHERE NOT EXISTS (SELECT 1 FROM kanon_release_suppressed r WHERE {{class_join}})
ORDER BY s.{{row}}
-- name: per_class
-- Labels come from the kept classes (kanon_release_classes: codes c0.., and
-- per QI the label lab0.. that class is released as), joined on the codes.
CREATE TABLE {{target}} AS
SELECT {{columns}}
FROM kanon_source_ordered s
{{value_joins}}
JOIN kanon_release_classes r ON {{class_join}}
ORDER BY s.{{row}}
