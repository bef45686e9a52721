-- The source with each row's position, for a release in source order.
-- {{position}} is `rowid` for a DuckDB table (free) or a row number for a file.
CREATE OR REPLACE TEMP VIEW kanon_source_ordered AS
SELECT *, {{position}} AS {{column}} FROM {{relation}}
