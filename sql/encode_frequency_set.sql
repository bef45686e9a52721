-- The zero-generalization frequency set with integer leaf codes g0..gn-1 and
-- an integer sensitive code s / label code y (when asked). The text values
-- stay behind: every later step works on codes.
CREATE OR REPLACE TEMP TABLE kanon_f0 AS
SELECT {{codes}}{{sensitive}}, b.cnt
FROM kanon_base b {{joins}}
