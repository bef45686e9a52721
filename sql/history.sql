-- name: create
-- The run history in the output database ({{runs}}: kanon_out.main.kanon_runs),
-- one row per successful run, appended in the release's transaction.
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
    seconds DOUBLE
)
-- name: insert
INSERT INTO {{runs}} (started_at, job, job_sha256, source, output_table, model, rows_in, rows_out,
    suppressed, node, k, l, metrics, reused, drift, risk, seconds)
VALUES (make_timestamp(?::BIGINT), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
-- name: read
SELECT strftime(started_at, '%Y-%m-%dT%H:%M:%S.%fZ') AS started_at, job, job_sha256, source, output_table,
       model, rows_in, rows_out, suppressed, node, k, l, metrics, reused, drift, risk, seconds
FROM {{runs}}
ORDER BY started_at, rowid
