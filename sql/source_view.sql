-- The source relation under one internal name. {{relation}} is a quoted table
-- reference or a read_csv/read_parquet call with a quoted path literal.
CREATE OR REPLACE TEMP VIEW kanon_source AS SELECT * FROM {{relation}}
