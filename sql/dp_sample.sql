-- SafePub's sample (src/data/sample.rs): the source view replaced by its
-- sampled rows, each kept when a seeded hash of its position in source order
-- is below beta's threshold. The hash is two rounds of a 32-bit mixer
-- (x ^ x >> 16, times 0x45d9f3b, mod 2^32), all in BIGINT: every product is
-- below 2^59. {{position}} is kanon_source_rows' position column; {{k1}},
-- {{k2}} (the seed's halves, mixed) and {{threshold}} are integers kanon computed.
-- name: view
CREATE OR REPLACE TEMP VIEW kanon_source AS
SELECT * EXCLUDE (kanon_dp_h, {{position}}) FROM (
  SELECT * EXCLUDE (kanon_dp_x5), xor(kanon_dp_x5 >> 16, kanon_dp_x5) AS kanon_dp_h FROM (
    SELECT * EXCLUDE (kanon_dp_x4), (xor(kanon_dp_x4 >> 16, kanon_dp_x4) * 73244475) % 4294967296 AS kanon_dp_x5 FROM (
      SELECT * EXCLUDE (kanon_dp_x3), (xor(kanon_dp_x3 >> 16, kanon_dp_x3) * 73244475) % 4294967296 AS kanon_dp_x4 FROM (
        SELECT * EXCLUDE (kanon_dp_x2), xor(xor(kanon_dp_x2 >> 16, kanon_dp_x2), xor({{position}} >> 32, {{k2}})) AS kanon_dp_x3 FROM (
          SELECT * EXCLUDE (kanon_dp_x1), (xor(kanon_dp_x1 >> 16, kanon_dp_x1) * 73244475) % 4294967296 AS kanon_dp_x2 FROM (
            SELECT * EXCLUDE (kanon_dp_x0), (xor(kanon_dp_x0 >> 16, kanon_dp_x0) * 73244475) % 4294967296 AS kanon_dp_x1 FROM (
              SELECT *, xor({{position}} & 4294967295, {{k1}}) AS kanon_dp_x0 FROM kanon_source_rows
            )
          )
        )
      )
    )
  )
) WHERE kanon_dp_h < {{threshold}}
-- name: rows
SELECT count(*) FROM kanon_source_rows
