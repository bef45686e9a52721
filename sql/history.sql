-- name: create
-- The run history in the output database ({{runs}}: kanon_out.main.kanon_runs;
-- on PostgreSQL kanon_runs in the release's schema), one row per successful
-- run, appended in the release's transaction. Spelled for both engines.
CREATE TABLE IF NOT EXISTS {{runs}} (
    started_at TIMESTAMP,           -- UTC, when the run started
    job VARCHAR,                    -- the job file as given
    job_sha256 VARCHAR,
    source VARCHAR,
    output_table VARCHAR,
    model VARCHAR,                  -- the algorithm or scheme that ran ("reuse", "node", …)
    rows_in BIGINT,
    rows_out BIGINT,
    suppressed BIGINT,
    node VARCHAR,                   -- JSON: level per QI (full-domain runs), else NULL
    k BIGINT,                       -- achieved (the requested k where the model reports no other)
    l BIGINT,                       -- achieved distinct l, NULL when not asked
    metrics VARCHAR,                -- JSON: the release's metrics
    reused BOOLEAN,                 -- NULL when the job does not reuse
    drift VARCHAR,                  -- JSON: the previous node, the failed model, the new node
    risk VARCHAR,                   -- JSON: the release's re-identification risk summary
    seconds DOUBLE PRECISION
)
-- name: create_spark
-- The same table on Spark (kanon_runs in the release's namespace), in Spark's
-- types: appended just after the release's swap, undone with it.
CREATE TABLE IF NOT EXISTS {{runs}} (
    started_at TIMESTAMP_NTZ, job STRING, job_sha256 STRING, source STRING, output_table STRING,
    model STRING, rows_in BIGINT, rows_out BIGINT, suppressed BIGINT, node STRING, k BIGINT, l BIGINT,
    metrics STRING, reused BOOLEAN, drift STRING, risk STRING, seconds DOUBLE
) USING parquet
-- name: insert
INSERT INTO {{runs}} (started_at, job, job_sha256, source, output_table, model, rows_in, rows_out,
    suppressed, node, k, l, metrics, reused, drift, risk, seconds)
VALUES (CAST(CAST($1 AS VARCHAR) AS TIMESTAMP), $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
-- name: read
-- (the rows, in DuckDB: on PostgreSQL they are fetched into a local table first)
SELECT strftime(started_at, '%Y-%m-%dT%H:%M:%S.%fZ') AS started_at, job, job_sha256, source, output_table,
       model, rows_in, rows_out, suppressed, node, k, l, metrics, reused, drift, risk, seconds
FROM {{runs}}
ORDER BY started_at
