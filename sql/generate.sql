-- A synthetic person-level extract of $2 rows for seed $1, every value a
-- function of (row id, seed) so the table is the same for a seed whatever the
-- thread count. {{draws}} are the columns u1, u2, …: uniform draws in [0, 1),
-- uj from hashing row id, seed and j. Skew on purpose: zip codes are Zipf-like (a 3-digit
-- prefix drawn ~1/rank over 750 prefixes, then a suffix ~1/rank over 40, so
-- about 30,000 zips with prefix structure), ages peak in mid life, diagnoses
-- are ~1/rank over 20 codes. Rare zips and birth dates keep turning up as N
-- grows, so the distinct QI combinations grow with N.
CREATE TABLE {{target}} AS
WITH r AS (
    SELECT i AS row_id, {{draws}}
    FROM range($2) t(i)
), d AS (
    SELECT *,
           least(floor(pow(750, u1))::INTEGER, 750) AS prefix_rank,
           least(floor(pow(40, u2))::INTEGER, 40) AS suffix_rank
    FROM r
)
SELECT
    row_id,
    lpad(((100 + (prefix_rank * 7919) % 900) * 100 + (suffix_rank * 37 + prefix_rank * 13) % 100)::VARCHAR, 5, '0') AS zip,
    (DATE '1930-01-01' + floor((u3 + u4) / 2 * 29200)::INTEGER) AS birth_date,
    CASE WHEN u5 < 0.49 THEN 'M' ELSE 'F' END AS sex,
    CASE WHEN u6 < 0.60 THEN 'White' WHEN u6 < 0.73 THEN 'Black' WHEN u6 < 0.91 THEN 'Hispanic'
         WHEN u6 < 0.97 THEN 'Asian' ELSE 'Other' END AS race,
    CASE WHEN u7 < 0.33 THEN 'Never-married' WHEN u7 < 0.81 THEN 'Married' WHEN u7 < 0.92 THEN 'Divorced'
         WHEN u7 < 0.98 THEN 'Widowed' ELSE 'Separated' END AS marital_status,
    (['Primary', 'Middle-school', 'Some-high-school', 'High-school-grad', 'Some-college', 'Associate',
      'Bachelors', 'Masters', 'Professional', 'Doctorate'])[1 + floor(10 * pow(u8, 0.8))::INTEGER] AS education,
    (['Admin-clerical', 'Sales', 'Exec-managerial', 'Prof-specialty', 'Tech-support', 'Craft-repair',
      'Machine-op', 'Transport', 'Farming-fishing', 'Handlers-cleaners', 'Other-service', 'Protective-service'])
      [1 + floor(12 * u9)::INTEGER] AS occupation,
    (round(exp(10.6 + 0.7 * sqrt(-2 * ln(1 - u10)) * cos(2 * pi() * u11)) / 100) * 100)::INTEGER AS income,
    (['I10', 'E11', 'J45', 'M54', 'F32', 'K21', 'E78', 'J06', 'N39', 'R51', 'F41', 'I25', 'G43', 'L40', 'K58',
      'C50', 'M17', 'H10', 'B34', 'Z00'])[least(floor(pow(21, u12))::INTEGER, 20)] AS diagnosis,
    (DATE '2024-01-01' + floor(u13 * 366)::INTEGER) AS visit_date
FROM d
