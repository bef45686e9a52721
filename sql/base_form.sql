-- The base frequency set's physical changes (data/frequency.rs Base).
-- name: as_table
-- kanon_f0 as a table, for a reader that reads it more than once: the view
-- over the coded rows grouped once.
CREATE OR REPLACE TEMP TABLE kanon_f0_table AS SELECT * FROM kanon_f0;
DROP VIEW kanon_f0; ALTER TABLE kanon_f0_table RENAME TO kanon_f0
-- name: drop_view
-- Nothing reads the base frequency set any more: at scale it is the largest
-- table, and the release's sort wants the memory.
DROP VIEW IF EXISTS kanon_f0_node; DROP VIEW IF EXISTS kanon_f0; DROP VIEW IF EXISTS kanon_f0_rows
-- name: drop_table
DROP VIEW IF EXISTS kanon_f0_node; DROP TABLE IF EXISTS kanon_f0; DROP VIEW IF EXISTS kanon_f0_rows
-- name: rows
SELECT count(*) FROM kanon_f0
-- name: combinations
-- Distinct QI combinations of a base set that also carries sensitive or
-- label codes.
SELECT count(*) FROM (SELECT DISTINCT {{codes}} FROM kanon_f0)
-- name: take_classes
-- The sorted base's classes (kanon_f0_table, evaluator/sorted.rs
-- write_base) become kanon_f0, for a base with few classes after all.
DROP VIEW kanon_f0; ALTER TABLE kanon_f0_table RENAME TO kanon_f0; DROP VIEW kanon_f0_rows
