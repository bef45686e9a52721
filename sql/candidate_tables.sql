-- Incognito's candidate graphs (evaluator/candidates.rs): the tables the
-- generation queries (candidates_*.sql, edges_*.sql) read and write.
-- name: heights_table
CREATE OR REPLACE TEMP TABLE kanon_heights (attr INTEGER, height INTEGER)
-- name: heights_insert
INSERT INTO kanon_heights VALUES (?, ?)
-- name: failed_table
CREATE OR REPLACE TEMP TABLE kanon_failed (id INTEGER)
-- name: failed_insert
-- {{values}}: a (?) per failed candidate.
INSERT INTO kanon_failed VALUES {{values}}
-- name: survivors
CREATE OR REPLACE TEMP TABLE kanon_surv_{{i}} AS SELECT * FROM kanon_cand_{{i}} WHERE id NOT IN (SELECT id FROM kanon_failed)
-- name: nodes
-- {{columns}}: d1, i1, …, di, ii.
SELECT id, {{columns}} FROM kanon_cand_{{i}} ORDER BY id
-- name: edges
SELECT "start", "end" FROM kanon_edge_{{i}} ORDER BY 1, 2
