#!/usr/bin/env bash
# PostgreSQL against embedded DuckDB: `kanon generate`'s N rows (default
# 10,000,000) loaded into a throwaway local PostgreSQL cluster
# (tools/pg-server.sh), and the same job (the generated one's QIs, k = 5, 1%)
# run on PostgreSQL (`[engine] kind = "postgres"`) and on embedded DuckDB over
# a Parquet export of the same rows, in one benchmark run: the phases of each
# (load: the scans and hierarchies; search; release) and the bytes that came
# back from PostgreSQL (KANON_TRACE's fetch lines). Writes bench/postgres.csv.
# Usage: bench/postgres.sh [N]
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-10000000}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/kanon-target}"
cargo build --release --quiet
data="${KANON_BENCH_DIR:-$HOME/.cache/kanon-bench}"
mkdir -p "$data"
data=$(cd "$data" && pwd)
work=$(mktemp -d)
# shellcheck source=../tools/pg-server.sh
. tools/pg-server.sh
pg_port="${KANON_PG_PORT:-15435}"
trap 'stop_pg; rm -rf "$work"' EXIT
cp "$CARGO_TARGET_DIR/release/kanon" "$work/kanon"
kanon="$work/kanon"
# shellcheck source=extract.sh
. bench/extract.sh
people "$n"
start_pg
if [ ! -x "$data/venv/bin/python" ] || ! "$data/venv/bin/python" -c 'import duckdb' 2>/dev/null; then
  python3 -m venv "$data/venv" && "$data/venv/bin/pip" install --quiet duckdb==2.0.0
fi
columns=$("$data/venv/bin/python" - "$data/people_$n.duckdb" "$work/people.parquet" "$work/people.csv" <<'PY'
import duckdb, sys
con = duckdb.connect(sys.argv[1], read_only=True)
con.execute(f"COPY people TO '{sys.argv[2]}' (FORMAT PARQUET)")
con.execute(f"COPY people TO '{sys.argv[3]}' (HEADER)")
pg = {"BIGINT": "bigint", "INTEGER": "integer", "VARCHAR": "text", "DATE": "date", "DOUBLE": "double precision"}
print(", ".join(f'"{name}" {pg[t]}' for name, t, *_ in con.execute("DESCRIBE people").fetchall()))
PY
)
echo "loading $n rows into PostgreSQL" >&2
psql "$pg_url" -q -v ON_ERROR_STOP=1 <<SQL
CREATE TABLE people ($columns);
\copy people FROM '$work/people.csv' CSV HEADER
ANALYZE people;
SQL
rm -f "$work/people.csv"
body=$(sed -n '/^\[privacy\]/,$p' "$data/people_$n.job.toml" | sed "s#\"hierarchies/#\"$data/hierarchies/#")
printf '[source]\nparquet = "%s"\n[output]\ndatabase = "%s"\ntable = "people_k5"\nreport = "%s"\ndrop = ["row_id"]\n%s\n' \
  "$work/people.parquet" "$work/release.duckdb" "$work/duckdb.json" "$body" > "$work/duckdb.toml"
printf '[engine]\nkind = "postgres"\nurl = "%s"\n[source]\ntable = "public.people"\n[output]\ntable = "public.people_k5"\nreport = "%s"\ndrop = ["row_id"]\n%s\n' \
  "$pg_url" "$work/postgres.json" "$body" > "$work/postgres.toml"
out=bench/postgres.csv
echo "engine,rows,load_s,search_s,release_s,total_s,peak_rss_mb,bytes_back,rows_back,node" > "$out"
for engine in duckdb postgres; do
  echo "kanon run on $engine, $n rows" >&2
  KANON_TRACE=1 /usr/bin/time -v -o "$work/time" "$kanon" run "$work/$engine.toml" --quiet > /dev/null 2> "$work/trace"
  python3 - "$engine" "$work/$engine.json" "$work/time" "$work/trace" >> "$out" <<'PY'
import json, re, sys
r = json.load(open(sys.argv[2])); s = r["seconds"]
rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", open(sys.argv[3]).read()).group(1))
fetched = re.findall(r"postgres: fetched (\d+) rows, (\d+) bytes", open(sys.argv[4]).read())
print(",".join(str(x) for x in [sys.argv[1], r["rows_in"], round(s["load"], 2), round(s["search"], 2),
      round(s["release"], 2), round(s["total"], 2), round(rss_kb / 1024), sum(int(b) for _, b in fetched),
      sum(int(n) for n, _ in fetched), ";".join(f"{q}={l}" for q, l in r["node"].items())]))
PY
done
column -s, -t < "$out"
