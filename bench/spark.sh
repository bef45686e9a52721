#!/usr/bin/env bash
# The Spark engine against embedded DuckDB, per phase, on one machine: the
# generated extract of bench/scale.sh (default 10M rows, k = 5, at most 1%
# suppressed) as one Parquet file both engines read, two jobs on each (kanon
# picks the search): the generated job's 7 QIs, and 4 coarse ones. Spark is a local Spark Connect server
# (tools/spark-server.sh: local[2], driver memory $KANON_SPARK_MEMORY, 4g
# here). Per engine: the report's load / search / release seconds and the
# whole process's. And what a cluster run would move over the network: the
# source's Parquet bytes against the base frequency set kanon brings back (its
# rows, and their bytes: a code per QI at its narrowest integer width plus a
# 4-byte count).
#
# Usage: bench/spark.sh [N]   (default 10000000). Writes bench/spark.csv. Data
# as in bench/scale.sh ($KANON_BENCH_DIR, default ~/.cache/kanon-bench); the
# Parquet copy is written once with the duckdb Python package, installed into
# the Spark virtual environment.
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-10000000}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/kanon-target}"
export KANON_SPARK_MEMORY="${KANON_SPARK_MEMORY:-4g}"
export KANON_SPARK_PORT="${KANON_SPARK_PORT:-15012}"
cargo build --release --quiet
kanon="$CARGO_TARGET_DIR/release/kanon"
# shellcheck source=extract.sh
. bench/extract.sh
# shellcheck source=../tools/spark-server.sh
. tools/spark-server.sh
work=$(mktemp -d)
trap 'stop_server; rm -rf "$work"' EXIT
start_server || { echo "bench/spark.sh needs the Spark Connect server" >&2; exit 1; }

data="${KANON_BENCH_DIR:-$HOME/.cache/kanon-bench}"
mkdir -p "$data/spill"
data=$(cd "$data" && pwd)
db="$data/people_$n.duckdb"
extract "$n"
parquet="$data/people_$n.parquet"
if [ ! -f "$parquet" ] || [ "$parquet" -ot "$db" ]; then
  echo "writing $parquet" >&2
  "$venv/bin/python" -c "import duckdb" 2>/dev/null || "$venv/bin/python" -m pip install -q duckdb >&2
  "$venv/bin/python" - "$db" "$parquet" <<'PY'
import duckdb, sys
c = duckdb.connect(sys.argv[1], read_only=True)
c.execute(f"COPY people TO '{sys.argv[2]}.tmp' (FORMAT PARQUET)")
PY
  mv "$parquet.tmp" "$parquet"
fi
# The job's privacy, search and QIs, with each engine's source and output:
# "all" is the generated job (7 QIs: nearly every record a combination of its
# own), "coarse" keeps sex, race, marital_status and education (a few hundred
# combinations).
body=$(sed -n '/^\[privacy\]/,$p' "$data/people_$n.job.toml" | sed "s#\"hierarchies/#\"$data/hierarchies/#")
coarse=$(printf '%s\n' "$body" | python3 -c '
import sys
head, *qis = sys.stdin.read().split("[[quasi_identifiers]]")
keep = [q for q in qis if any("column = \"%s\"" % c in q for c in ("sex", "race", "marital_status", "education"))]
print(head + "".join("[[quasi_identifiers]]" + q for q in keep))')
write_jobs() { # name, body
  cat > "$work/$1-duckdb.toml" <<EOF
[source]
parquet = "$parquet"
[output]
database = "$work/release.duckdb"
table = "people_k5"
drop = ["row_id"]
[engine]
memory_limit = "4GB"
temp_directory = "$data/spill"
$2
EOF
  cat > "$work/$1-spark.toml" <<EOF
[engine]
kind = "spark"
url = "sc://127.0.0.1:$port"
memory_limit = "4GB"
temp_directory = "$data/spill"
[source]
parquet = "$parquet"
[output]
table = "kanon_bench_people_k5"
drop = ["row_id"]
$2
EOF
}
write_jobs all "$body"
write_jobs coarse "$coarse"

echo "job,engine,rows,load_s,search_s,release_s,report_total_s,process_s,combinations,source_parquet_bytes,marginals_bytes,f0_bytes" > bench/spark.csv
source_bytes=$(stat -c %s "$parquet")
for job in all coarse; do
  for engine in duckdb spark; do
    echo "$job, $engine, $n rows" >&2
    KANON_TRACE=1 /usr/bin/time -f "%e" -o "$work/time" "$kanon" run "$work/$job-$engine.toml" --quiet \
      --report "$work/report.json" > /dev/null 2> "$work/trace"
    python3 - "$work/report.json" "$work/time" "$job" "$engine" "$n" "$source_bytes" "$work/trace" >> bench/spark.csv <<'PY'
import json, re, sys
r = json.load(open(sys.argv[1])); s = r["seconds"]
process = open(sys.argv[2]).read().split()[0]
# The bytes Spark sent back per result (src/spark.rs traces each fetch).
got = {t: b for b, t in re.findall(r"spark: fetched \d+ rows, (\d+) bytes into (\w+)", open(sys.argv[7]).read())}
print(",".join(str(x) for x in [sys.argv[3], sys.argv[4], sys.argv[5], round(s["load"], 2), round(s["search"], 2),
      round(s["release"], 2), round(s["total"], 2), process, r["combinations"], sys.argv[6],
      got.get("kanon_marginals", ""), got.get("kanon_f0", "")]))
PY
  done
done
column -s, -t < bench/spark.csv
