-- The full-domain release on Spark or PostgreSQL (src/release/remote.rs),
-- written there by the engine's write_table.
-- name: recoded
-- Every source row with each QI recoded by its plain expression or joined
-- to its value map (kanon_release_map_<a>: a file hierarchy's), dropped
-- columns left out.
SELECT {{columns}}
FROM kanon_source s
{{joins}}
{{persons}}
-- name: kept
-- The rows of the kept classes only: an anti-join of the recoded label tuple
-- on the small table of the suppressed classes' labels (hash-joinable; on
-- Spark broadcast).
SELECT * FROM ({{recoded}}) r
WHERE NOT EXISTS (SELECT 1 FROM kanon_release_suppressed d WHERE {{match}})
-- name: suppressed
-- The suppressed classes' label tuples (q0…), built there from their codes
-- ({{codes}}: c0…, the codes at the node's levels) and each QI's
-- kanon_release_labels (a the QI, code, label).
SELECT DISTINCT {{labels}}
FROM {{codes}} d
{{joins}}
-- name: rows_under
-- The base set's rows under the suppressed classes ({{codes}}: c0…, their
-- codes at the node's levels; {{under}} the base's codes divided down): one
-- parallel pass over the base, joined to the classes only, so that the code
-- tables are joined to these few rows after (suppressed_values).
SELECT {{leaves}}
FROM {{base}} f
JOIN {{codes}} d ON {{under}}
-- name: suppressed_values
-- The suppressed classes' rows by their QIs' source values ({{values}}: q0…),
-- from rows_under's leaf codes (g0…) and each QI's code table (value n, leaf
-- code c0).
SELECT DISTINCT {{values}}
FROM kanon_release_under f
{{joins}}
-- name: values_kept
-- The rows of the kept classes only, by the source's own values: a hash
-- anti-join on suppressed_values, each label computed once, for the row.
WHERE NOT EXISTS (SELECT 1 FROM kanon_release_suppressed d WHERE {{match}})
-- name: persons_kept
-- With [privacy] person: the rows of the persons kept only, an anti-join on
-- the small table of the dropped persons' values.
WHERE NOT EXISTS (SELECT 1 FROM kanon_release_persons d WHERE {{match}})
-- name: label_equal
-- A recoded label and a suppressed class's, neither NULL.
{{row}} = {{class}}
