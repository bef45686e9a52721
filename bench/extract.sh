#!/usr/bin/env bash
# Sourced by bench/scale.sh, bench/cbg.sh and bench/spark.sh: `extract N`
# (or `people N`) makes sure $data/people_N.duckdb holds `kanon generate`'s N rows (seed 1)
# with its job file beside it, generating them once. The marker
# people_N.duckdb.rows is written only after a generation that succeeded.
# Needs $data and $kanon.
# `stale FILE N`: whether FILE must be made (again) for N rows: missing, or
# its marker FILE.rows (written only after a generation that succeeded) not
# N. A stale FILE and its marker are removed.
stale() {
  if [ "$(cat "$1.rows" 2>/dev/null)" != "$2" ] || [ ! -f "$1" ]; then
    rm -f "$1" "$1.rows"
    return 0
  fi
  return 1
}

extract() {
  local n="$1" db="$data/people_$1.duckdb"
  if stale "$db" "$n"; then
    echo "generating $n rows into $db" >&2
    "$kanon" generate --rows "$n" --seed 1 --database "$db" --table people --job "$data/people_$n.job.toml" --quiet >&2
    echo "$n" > "$db.rows"
  fi
}
people() { extract "$@"; }

# `duckdb_python ARGS…`: the Python script on standard input, with DuckDB
# 2.0.0 (kanon's own version) from a virtual environment in $data, made once.
duckdb_python() {
  if [ ! -x "$data/venv/bin/python" ] || ! "$data/venv/bin/python" -c 'import duckdb' 2>/dev/null; then
    python3 -m venv "$data/venv"
    "$data/venv/bin/pip" install --quiet duckdb==2.0.0
  fi
  "$data/venv/bin/python" - "$@"
}

# `person_hierarchies DIR`: the small hierarchy files of `patients` and
# `unique` (sex, race, marital status) in DIR.
person_hierarchies() {
  mkdir -p "$1"
  printf 'F;*\nM;*\n' > "$1/sex.csv"
  printf 'White;*\nBlack;*\nAsian;*\nAmer-Indian;*\nOther;*\n' > "$1/race.csv"
  printf 'Married;Partnered;*\nNever-married;Single;*\nDivorced;Formerly-married;*\nWidowed;Formerly-married;*\nSeparated;Formerly-married;*\n' \
    > "$1/marital_status.csv"
}

# `patients N`: makes sure $data/patients_N.duckdb holds N rows shaped like a
# hospital extract (id, a skewed 5-digit zip, birth date, sex, race, marital
# status, diagnosis), written by DuckDB 2.0.0 (kanon's own version) from
# Python, with its job beside it: 5 QIs (zip masked, birth date by month /
# year / decade, sex, race and marital status from small hierarchy files),
# k = 5, at most 1% suppressed, the job's defaults. Near-unique: every value
# is a hash of the row number, so the same N gives the same table.
patients() {
  local n="$1" db="$data/patients_$1.duckdb"
  if stale "$db" "$n"; then
    echo "generating $n patients into $db" >&2
    duckdb_python "$db" "$n" <<'PY'
import sys, duckdb
db, n = sys.argv[1], int(sys.argv[2])
con = duckdb.connect(db)
# u(salt): a uniform draw in [0, 1) from the row number.
u = lambda salt: f"((hash(i, {salt}) % 1000000007) / 1000000007.0)"
con.execute(f"""
CREATE OR REPLACE TABLE patients AS
SELECT i AS id,
       lpad(CAST(CAST(floor(1000 * pow({u(1)}, 2)) AS INTEGER) * 100 + CAST(floor(100 * {u(2)}) AS INTEGER) AS VARCHAR), 5, '0') AS zip,
       DATE '1930-01-01' + CAST(floor(32000 * {u(3)}) AS INTEGER) AS birth_date,
       CASE WHEN {u(4)} < 0.51 THEN 'F' ELSE 'M' END AS sex,
       (['White', 'White', 'White', 'Black', 'Black', 'Asian', 'Amer-Indian', 'Other'])[1 + CAST(floor(8 * {u(5)}) AS INTEGER)] AS race,
       (['Married', 'Married', 'Never-married', 'Never-married', 'Divorced', 'Widowed', 'Separated'])[1 + CAST(floor(7 * {u(6)}) AS INTEGER)] AS marital_status,
       'D' || lpad(CAST(CAST(floor(30 * pow({u(7)}, 1.5)) AS INTEGER) AS VARCHAR), 2, '0') AS diagnosis
FROM range({n}) t(i)
ORDER BY i
""")
con.close()
PY
    person_hierarchies "$data/patients-hierarchies"
    cat > "$data/patients_$n.job.toml" <<TOML
# A hospital-shaped extract (bench/extract.sh patients), the job's defaults.
[source]
database = "patients_$n.duckdb"
table = "patients"

[output]
database = "patients_$n-release.duckdb"
table = "patients_k5"
report = "patients_$n-report.json"
drop = ["id"]

[privacy]
k = 5
max_suppression = 0.01

[search]
metric = "glm"

[[quasi_identifiers]]
column = "zip"
hierarchy = { mask = 5 }

[[quasi_identifiers]]
column = "birth_date"
hierarchy = { date = ["month", "year", "decade"] }

[[quasi_identifiers]]
column = "sex"
hierarchy = { file = "patients-hierarchies/sex.csv" }

[[quasi_identifiers]]
column = "race"
hierarchy = { file = "patients-hierarchies/race.csv" }

[[quasi_identifiers]]
column = "marital_status"
hierarchy = { file = "patients-hierarchies/marital_status.csv" }
TOML
    echo "$n" > "$db.rows"
  fi
}

# `unique N`: the extract a new user brings (issue 55): $data/unique_N.parquet,
# N rows of 5 QIs where nearly every row is its own combination (a skewed
# 5-digit zip, a birth date over 80 years by the day, sex, race, marital
# status), written by DuckDB 2.0.0 from Python, with its job beside it: the
# job's defaults, k = 5, at most 1% suppressed, the release a Parquet file.
unique() {
  local n="$1" pq="$data/unique_$1.parquet"
  if stale "$pq" "$n"; then
    echo "generating $n near-unique rows into $pq" >&2
    duckdb_python "$pq" "$n" <<'PY'
import sys, duckdb
pq, n = sys.argv[1], int(sys.argv[2])
con = duckdb.connect()
u = lambda salt: f"((hash(i, {salt}) % 1000000007) / 1000000007.0)"
con.execute(f"""
COPY (
SELECT i AS id,
       lpad(CAST(CAST(floor(100000 * pow({u(1)}, 1.5)) AS INTEGER) AS VARCHAR), 5, '0') AS zip,
       DATE '1940-01-01' + CAST(floor(29220 * {u(2)}) AS INTEGER) AS birth_date,
       CASE WHEN {u(3)} < 0.51 THEN 'F' ELSE 'M' END AS sex,
       (['White', 'White', 'White', 'Black', 'Black', 'Asian', 'Amer-Indian', 'Other'])[1 + CAST(floor(8 * {u(4)}) AS INTEGER)] AS race,
       (['Married', 'Married', 'Never-married', 'Never-married', 'Divorced', 'Widowed', 'Separated'])[1 + CAST(floor(7 * {u(5)}) AS INTEGER)] AS marital_status
FROM range({n}) t(i)
ORDER BY i
) TO '{pq}' (FORMAT parquet)
""")
PY
    person_hierarchies "$data/unique-hierarchies"
    cat > "$data/unique_$n.job.toml" <<TOML
# A near-unique extract (bench/extract.sh unique), the job's defaults.
[source]
parquet = "unique_$n.parquet"

[output]
parquet = "unique_$n-release.parquet"
report = "unique_$n-report.json"
drop = ["id"]

[privacy]
k = 5
max_suppression = 0.01

[[quasi_identifiers]]
column = "zip"
hierarchy = { mask = 5 }

[[quasi_identifiers]]
column = "birth_date"
hierarchy = { date = ["month", "year", "decade"] }

[[quasi_identifiers]]
column = "sex"
hierarchy = { file = "unique-hierarchies/sex.csv" }

[[quasi_identifiers]]
column = "race"
hierarchy = { file = "unique-hierarchies/race.csv" }

[[quasi_identifiers]]
column = "marital_status"
hierarchy = { file = "unique-hierarchies/marital_status.csv" }
TOML
    echo "$n" > "$pq.rows"
  fi
}

# `unique_csv N`: the same rows as `unique N` as a CSV file (with a header),
# the same job reading it: a CSV above 256 MB at 10M rows, scanned per pass.
unique_csv() {
  local n="$1" csv="$data/unique_csv_$1.csv"
  unique "$n"
  if stale "$csv" "$n"; then
    echo "writing $n near-unique rows into $csv" >&2
    duckdb_python "$data/unique_$n.parquet" "$csv" <<'PY'
import sys, duckdb
duckdb.connect().execute(f"COPY (SELECT * FROM '{sys.argv[1]}') TO '{sys.argv[2]}' (HEADER)")
PY
    sed -e "s|^parquet = \"unique_$n.parquet\"|csv = \"unique_csv_$n.csv\"|" -e "s|unique_$n-|unique_csv_$n-|g" \
      "$data/unique_$n.job.toml" > "$data/unique_csv_$n.job.toml"
    echo "$n" > "$csv.rows"
  fi
}

# `claims N`: makes sure $data/claims_N.duckdb holds N rows shaped like an
# insurance-claims extract (id, age, a skewed 5-digit zip, sex, admission
# date, income, occupation, region, education, diagnosis), written by DuckDB
# 2.0.0 from Python as `patients` is, with its job beside it: 8 QIs of every
# hierarchy kind (intervals on age and income, a zip mask, admission date by
# month / quarter / year, four small files), whose leaf codes need more than 64
# bits together (income alone has ~200,000 distinct values), k = 5, at most 1%
# suppressed, the job's defaults. Near-unique, hashed from the row number.
claims() {
  local n="$1" db="$data/claims_$1.duckdb"
  if stale "$db" "$n"; then
    echo "generating $n claims into $db" >&2
    duckdb_python "$db" "$n" <<'PY'
import sys, duckdb
db, n = sys.argv[1], int(sys.argv[2])
con = duckdb.connect(db)
u = lambda salt: f"((hash(i, {salt}) % 1000000007) / 1000000007.0)"
pick = lambda salt, xs: "([" + ", ".join(f"'{x}'" for x in xs) + f"])[1 + CAST(floor({len(xs)} * {u(salt)}) AS INTEGER)]"
occupations = [f"occ{j:02d}" for j in range(24)]
regions = [f"r{j:02d}" for j in range(40)]
educations = ["none", "primary", "lower-secondary", "upper-secondary", "vocational", "bachelor", "master", "doctorate"]
con.execute(f"""
CREATE OR REPLACE TABLE claims AS
SELECT i AS id,
       18 + CAST(floor(78 * pow({u(1)}, 1.3)) AS INTEGER) AS age,
       lpad(CAST(CAST(floor(1000 * pow({u(2)}, 2)) AS INTEGER) * 100 + CAST(floor(100 * {u(3)}) AS INTEGER) AS VARCHAR), 5, '0') AS zip,
       CASE WHEN {u(4)} < 0.5 THEN 'F' ELSE 'M' END AS sex,
       DATE '2019-01-01' + CAST(floor(2190 * {u(5)}) AS INTEGER) AS admitted,
       CAST(floor(200000 * pow({u(6)}, 2)) AS INTEGER) AS income,
       {pick(7, occupations)} AS occupation,
       {pick(8, regions)} AS region,
       {pick(9, educations)} AS education,
       'D' || lpad(CAST(CAST(floor(40 * pow({u(10)}, 1.5)) AS INTEGER) AS VARCHAR), 2, '0') AS diagnosis
FROM range({n}) t(i)
ORDER BY i
""")
con.close()
PY
    mkdir -p "$data/claims-hierarchies"
    printf 'F;*\nM;*\n' > "$data/claims-hierarchies/sex.csv"
    : > "$data/claims-hierarchies/occupation.csv"
    for j in $(seq 0 23); do printf 'occ%02d;group%d;*\n' "$j" $((j / 6)) >> "$data/claims-hierarchies/occupation.csv"; done
    : > "$data/claims-hierarchies/region.csv"
    for j in $(seq 0 39); do printf 'r%02d;area%d;*\n' "$j" $((j / 8)) >> "$data/claims-hierarchies/region.csv"; done
    printf '%s\n' 'none;basic;*' 'primary;basic;*' 'lower-secondary;secondary;*' 'upper-secondary;secondary;*' \
      'vocational;secondary;*' 'bachelor;higher;*' 'master;higher;*' 'doctorate;higher;*' \
      > "$data/claims-hierarchies/education.csv"
    cat > "$data/claims_$n.job.toml" <<TOML
# An insurance-claims-shaped extract (bench/extract.sh claims), the job's defaults.
[source]
database = "claims_$n.duckdb"
table = "claims"

[output]
database = "claims_$n-release.duckdb"
table = "claims_k5"
report = "claims_$n-report.json"
drop = ["id"]

[privacy]
k = 5
max_suppression = 0.01

[[quasi_identifiers]]
column = "age"
hierarchy = { intervals = [5, 10, 20, 40] }

[[quasi_identifiers]]
column = "zip"
hierarchy = { mask = 5 }

[[quasi_identifiers]]
column = "sex"
hierarchy = { file = "claims-hierarchies/sex.csv" }

[[quasi_identifiers]]
column = "admitted"
hierarchy = { date = ["month", "quarter", "year"] }

[[quasi_identifiers]]
column = "income"
hierarchy = { intervals = [1000, 5000, 25000, 100000] }

[[quasi_identifiers]]
column = "occupation"
hierarchy = { file = "claims-hierarchies/occupation.csv" }

[[quasi_identifiers]]
column = "region"
hierarchy = { file = "claims-hierarchies/region.csv" }

[[quasi_identifiers]]
column = "education"
hierarchy = { file = "claims-hierarchies/education.csv" }
TOML
    echo "$n" > "$db.rows"
  fi
}

# `visits N`: the event table of issue 56: $data/visits_N.parquet, N visit rows
# of about N/5 persons (1 to 9 visits each), written by DuckDB 2.0.0 from
# Python. Person-level QIs: birth year, sex, a skewed 5-digit zip; event-level:
# the visit date and department. The job: k = 5 persons, at most 1% of the
# persons suppressed, `person = "member_id"` (dropped), a Parquet release.
visits() {
  local n="$1" pq="$data/visits_$1.parquet"
  if stale "$pq" "$n"; then
    echo "generating $n visits into $pq" >&2
    duckdb_python "$pq" "$n" <<'PY'
import sys, duckdb
pq, n = sys.argv[1], int(sys.argv[2])
con = duckdb.connect()
u = lambda salt, x: f"((hash({x}, {salt}) % 1000000007) / 1000000007.0)"
# Persons 0..n/5, each with 1 + floor(9 u) visits, cut at n rows.
con.execute(f"""
COPY (
WITH persons AS (
    SELECT p, 1 + CAST(floor(9 * {u(1, 'p')}) AS INTEGER) AS visits,
           1930 + CAST(floor(80 * {u(2, 'p')}) AS INTEGER) AS birth_year,
           CASE WHEN {u(3, 'p')} < 0.51 THEN 'F' ELSE 'M' END AS sex,
           lpad(CAST(CAST(floor(1000 * pow({u(4, 'p')}, 2)) AS INTEGER) * 100 + CAST(floor(100 * {u(5, 'p')}) AS INTEGER) AS VARCHAR), 5, '0') AS zip
    FROM range({n // 5 + n // 10}) t(p)
), rows AS (
    SELECT p, v, birth_year, sex, zip FROM persons, range(visits) r(v)
), numbered AS (
    SELECT *, row_number() OVER (ORDER BY p, v) - 1 AS i FROM rows
)
SELECT i AS visit_id, p AS member_id, birth_year, sex, zip,
       DATE '2025-01-01' + CAST(floor(365 * {u(6, 'i')}) AS INTEGER) AS visit_date,
       (['Cardiology', 'Oncology', 'Orthopedics', 'Neurology', 'Pediatrics', 'Emergency', 'Radiology', 'Dermatology'])[1 + CAST(floor(8 * {u(7, 'i')}) AS INTEGER)] AS department,
       CAST(floor(5000 * {u(8, 'i')}) AS INTEGER) AS cost
FROM numbered
WHERE i < {n}
ORDER BY i
) TO '{pq}' (FORMAT parquet)
""")
PY
    mkdir -p "$data/visits-hierarchies"
    printf 'F;*\nM;*\n' > "$data/visits-hierarchies/sex.csv"
    printf 'Cardiology;Medicine;*\nOncology;Medicine;*\nNeurology;Medicine;*\nDermatology;Medicine;*\nOrthopedics;Surgery;*\nPediatrics;Care;*\nEmergency;Care;*\nRadiology;Imaging;*\n' \
      > "$data/visits-hierarchies/department.csv"
    cat > "$data/visits_$n.job.toml" <<TOML
# An event table (bench/extract.sh visits): k over persons.
[source]
parquet = "visits_$n.parquet"

[output]
parquet = "visits_$n-release.parquet"
report = "visits_$n-report.json"
drop = ["member_id"]

[privacy]
k = 5
max_suppression = 0.01
person = "member_id"

[[quasi_identifiers]]
column = "birth_year"
hierarchy = { intervals = [5, 10, 20] }

[[quasi_identifiers]]
column = "sex"
hierarchy = { file = "visits-hierarchies/sex.csv" }

[[quasi_identifiers]]
column = "zip"
hierarchy = { mask = 5 }

[[quasi_identifiers]]
column = "visit_date"
hierarchy = { date = ["month", "quarter", "year"] }

[[quasi_identifiers]]
column = "department"
hierarchy = { file = "visits-hierarchies/department.csv" }
TOML
    echo "$n" > "$pq.rows"
  fi
}

# `visits_text N`: visits N with the person as text ("M" and 9 digits), as
# warehouses often hold it: kanon codes such a person by a join, where an
# integer one dense enough is coded by arithmetic. The same job otherwise.
visits_text() {
  local n="$1" pq="$data/visits_text_$1.parquet"
  visits "$n"
  if stale "$pq" "$n"; then
    echo "writing $n visits with text persons into $pq" >&2
    duckdb_python "$data/visits_$n.parquet" "$pq" <<'PY'
import sys, duckdb
src, pq = sys.argv[1], sys.argv[2]
duckdb.connect().execute(
    "COPY (SELECT * REPLACE ('M' || lpad(CAST(member_id AS VARCHAR), 9, '0') AS member_id) FROM read_parquet(?)) "
    f"TO '{pq}' (FORMAT parquet)", [src])
PY
    sed -e "s/visits_$n/visits_text_$n/g" -e 's/^# An event table.*/# visits with text persons (bench\/extract.sh visits_text): k over persons./' \
      "$data/visits_$n.job.toml" > "$data/visits_text_$n.job.toml"
    echo "$n" > "$pq.rows"
  fi
}
