-- `kanon generate` replaces its table in one transaction: the extract goes
-- into a scratch table ({{tmp}}), then takes the table's name.
-- name: begin
BEGIN TRANSACTION
-- name: drop
DROP TABLE IF EXISTS {{table}}
-- name: rename
ALTER TABLE {{tmp}} RENAME TO {{table}}
-- name: commit
COMMIT
-- name: rollback
ROLLBACK
