-- A chosen node's classes, for what the release measures (evaluator/classes.rs).
-- name: left_out_table
-- Classes left out (codes c0 … c{n-1}: {{columns}}), appended after.
CREATE OR REPLACE TEMP TABLE {{table}} ({{columns}})
-- name: left_out
-- The condition that class c is not one of them.
NOT EXISTS (SELECT 1 FROM {{table}} x WHERE {{same}})
