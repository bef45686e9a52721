-- A small CSV or Parquet source read into memory once: kanon scans its source
-- three times (marginals, base frequency set, release), and parsing a file
-- costs more than scanning a table. Row ids keep the file's order.
CREATE TEMP TABLE kanon_source_rows AS SELECT * FROM {{relation}}
