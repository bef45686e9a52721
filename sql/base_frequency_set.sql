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
