-- Columns of the source, in order.
SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM kanon_source)
