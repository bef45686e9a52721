-- The second full scan: every source row of a kept class, QIs replaced by
-- their labels, dropped columns left out. Plain SQL, one equi-join.
CREATE TABLE {{target}} AS
SELECT {{columns}}
FROM kanon_source s JOIN kanon_release_map r ON {{join}}
