-- The release as one statement of joins, for an engine that cannot call
-- kanon's scalar functions (Spark): every source row of a kept class, each
-- QI joined to its value map kanon_release_map_<a> (the value as the source
-- has it, the code of its group at the node, the group's label), a row
-- dropped when its class is one of the suppressed ones ({{dropped}}: shared,
-- or left there by the engine evaluator).
SELECT {{columns}}
FROM kanon_source s
{{joins}}
WHERE NOT EXISTS (SELECT 1 FROM {{dropped}} d WHERE {{match}})
