-- The second full scan ({{relation}}: kanon_source, or kanon_source_rows
-- with row positions for a per-record recoding), into the release table or streamed to a file: every
-- source row of a kept class, QIs replaced by their labels, dropped columns
-- left out. {{groups}}, {{columns}} and
-- {{kept}} call the recoding's scalar functions (release.rs): each row's group
-- per QI, once, then labels and the kept test from those. No join, no sort:
-- DuckDB keeps the source's row order through scan, projection and filter,
-- so the same input gives the same output.
SELECT {{columns}}
FROM (SELECT *, {{groups}} FROM {{relation}} s) s
WHERE {{kept}}
