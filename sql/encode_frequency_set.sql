-- The zero-generalization frequency set with integer leaf codes g0..gn-1,
-- an integer sensitive code s (when asked), and the raw values v0..vn-1 the
-- release writer joins back on.
CREATE OR REPLACE TEMP TABLE kanon_f0 AS
SELECT {{raw}}, {{codes}}{{sensitive}}, b.cnt
FROM kanon_base b {{joins}}
