-- A CSV or Parquet source of at most 256 MB, parsed once for the search: its
-- rows grouped by the columns the search reads (QIs, sensitive, label), with
-- counts. The marginal scan and the base frequency set read this instead of
-- parsing the file twice; the release reads the file itself.
CREATE OR REPLACE TEMP TABLE kanon_source_grouped AS
SELECT {{columns}}, count(*) AS {{count}}
FROM kanon_source
GROUP BY ALL
