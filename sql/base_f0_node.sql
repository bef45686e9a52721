-- The base frequency set seen as the frequency set of node 0, so it can be a
-- rollup source like any other.
CREATE OR REPLACE TEMP VIEW kanon_f0_node AS SELECT 0 AS node, * FROM kanon_f0
