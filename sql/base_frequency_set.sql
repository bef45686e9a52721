-- name: grouped
-- The one heavy scan of the search: the zero-generalization frequency set,
-- grouped by the integer leaf codes g0..gn-1 (and the sensitive code s and
-- label code y, when asked), with counts. Each value gets its code by an
-- equi-join with a small per-column code table, so the grouping hashes
-- integers, not text. {{relation}} is the source, or a small file grouped
-- once (frequency.rs Input; {{count}} then sums its counts). Plain SQL, run
-- where the source lives (database.rs materialize: DuckDB, Spark or
-- PostgreSQL, which has no GROUP BY ALL) into kanon_f0; {{group_by}} numbers
-- the code columns.
SELECT {{codes}}, ({{count}})::{{type}} AS cnt
FROM {{relation}} src {{joins}}
GROUP BY {{group_by}}
-- name: grouped_packed
-- grouped on a remote engine, its codes grouped as one BIGINT {{key}} that
-- packs them (sql.rs packed_key: engines group one integer faster than
-- several), {{codes}} the codes again off it (q.pk).
SELECT {{codes}}, q.cnt FROM (
    SELECT {{key}} AS pk, ({{count}})::{{type}} AS cnt
    FROM {{relation}} src {{joins}}
    GROUP BY 1
) q
-- name: rows
-- When the in-memory evaluator will hold the base set (a local source of at
-- most [engine] memory_rows rows whose codes, extra ones included, pack into
-- 128 bits), it groups the coded rows itself (evaluator/memory.rs): the joins
-- above without the GROUP BY, as a view kanon_f0_rows it reads once. On near-unique data grouping in the
-- engine, then reading the groups back, costs three times the joins alone.
CREATE OR REPLACE TEMP VIEW kanon_f0_rows AS
SELECT {{codes}}
FROM {{relation}} src {{joins}}
-- name: rows_grouped
-- kanon_f0 over kanon_f0_rows, for the readers that want it in SQL (risk
-- analysis, the SQL evaluator): a view, grouped when read; made a table
-- (frequency.rs Base::as_table) before a reader that reads it more than once.
CREATE OR REPLACE TEMP VIEW kanon_f0 AS
SELECT {{codes}}, count(*)::{{type}} AS cnt
FROM kanon_f0_rows
GROUP BY ALL
-- name: sorted_keys
-- When the SQL backend will hold the base set and its codes pack into one
-- key (evaluator/sorted.rs): each coded row as that key, read once into
-- kanon, which sorts and counts the rows itself. {{key}} shifts and ors the
-- codes; no value of a job or a table enters it.
SELECT {{key}} AS key FROM kanon_f0_rows
-- name: person_offset
-- A row's person code computed from its {{column}}, when the person codes are
-- offsets (base_codes.sql offset): no join of the rows with kanon_codes_p.
({{column}}::BIGINT - (SELECT min(n) FROM kanon_marg_p)::BIGINT + 1)::INTEGER
