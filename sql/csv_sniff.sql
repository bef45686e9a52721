-- What DuckDB's CSV sniffer finds in a file ({{args}}: the quoted path and the
-- job's options): its dialect, then each column's name and type, one row per
-- column. The source view
-- is then read_csv with these given and auto_detect = false, so each statement
-- that reads the view binds it without sniffing the file again (each sniff
-- reads a sample: 0.05-0.17 s on a 249 MB file). Text columns, never pasted:
-- kanon quotes every value it puts back (database.rs pinned_csv).
SELECT Delimiter, Quote, Escape, NewLineDelimiter, Comment, SkipRows::BIGINT, HasHeader,
       DateFormat, TimestampFormat, c.name, c.type
FROM sniff_csv({{args}}) s, unnest(s.Columns) AS u(c)
