#!/usr/bin/env bash
# SIGKILL a PostgreSQL-engine run at random moments and check what each kill
# leaves: the previous release or the new one, never a partial table, and no
# leftover temporary table. Starts a throwaway cluster (tools/pg-server.sh),
# loads `kanon generate`'s N rows (default 1,000,000) into it, runs the job
# once to learn the full release's checksum, puts a one-row "previous"
# release back, then kills K runs (default 30) after a random delay in
# [0, the run's duration) and checks the table after each.
# Usage: tools/pg-kills.sh [N] [K]   (needs psql and Python 3 with a venv)
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-1000000}"
kills="${2:-30}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/kanon-target}"
cargo build --release --quiet
kanon="$CARGO_TARGET_DIR/release/kanon"
# shellcheck source=pg-server.sh
. tools/pg-server.sh
pg_port="${KANON_PG_PORT:-15434}"
work=$(mktemp -d)
trap 'stop_pg; rm -rf "$work"' EXIT
start_pg
"$kanon" generate --rows "$n" --seed 3 --database "$work/people.duckdb" --table people --job "$work/people.toml" --quiet
# The rows as CSV, by DuckDB (a venv of its Python package), into PostgreSQL.
python3 -m venv "$work/venv" && "$work/venv/bin/pip" install --quiet duckdb==2.0.0
columns=$("$work/venv/bin/python" - "$work/people.duckdb" "$work/people.csv" <<'PY'
import duckdb, sys
con = duckdb.connect(sys.argv[1])
con.execute(f"COPY people TO '{sys.argv[2]}' (HEADER)")
pg = {"BIGINT": "bigint", "INTEGER": "integer", "VARCHAR": "text", "DATE": "date", "DOUBLE": "double precision"}
print(", ".join(f'"{name}" {pg[t]}' for name, t, *_ in con.execute("DESCRIBE people").fetchall()))
PY
)
psql "$pg_url" -q -v ON_ERROR_STOP=1 <<SQL
CREATE TABLE people ($columns);
\copy people FROM '$work/people.csv' CSV HEADER
ANALYZE people;
SQL
{
  printf '[engine]\nkind = "postgres"\nurl = "%s"\n[source]\ntable = "public.people"\n[output]\ntable = "public.people_k5"\ndrop = ["row_id"]\n' "$pg_url"
  sed -n '/^\[privacy\]/,$p' "$work/people.toml" | sed "s#\"hierarchies/#\"$work/hierarchies/#"
} > "$work/pg.toml"
checksum() { psql "$pg_url" -Atq -c "SELECT count(*) || ':' || coalesce(sum(hashtext(t::text)::bigint), 0) FROM public.people_k5 t"; }
start=$(date +%s.%N)
"$kanon" run "$work/pg.toml" --quiet > /dev/null
duration=$(echo "$(date +%s.%N) - $start" | bc)
full=$(checksum)
psql "$pg_url" -q -c "DROP TABLE public.people_k5; CREATE TABLE public.people_k5 AS SELECT 1 AS previous"
previous=$(checksum)
echo "a full run takes ${duration}s; full release $full, previous $previous" >&2
old=0 new=0
for i in $(seq 1 "$kills"); do
  delay=$(python3 -c "import random; random.seed($i); print(round(random.uniform(0, $duration), 2))")
  "$kanon" run "$work/pg.toml" --quiet > /dev/null 2>&1 &
  pid=$!
  sleep "$delay"
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  now=$(checksum)
  leftovers=$(psql "$pg_url" -Atq -c "SELECT count(*) FROM pg_tables WHERE tablename LIKE 'people_k5__kanon_tmp%'")
  if [ "$now" = "$previous" ]; then
    old=$((old + 1))
  elif [ "$now" = "$full" ]; then
    new=$((new + 1))
    psql "$pg_url" -q -c "DROP TABLE public.people_k5; CREATE TABLE public.people_k5 AS SELECT 1 AS previous"
  else
    echo "kill $i after ${delay}s: a release neither old nor new ($now)" >&2
    exit 1
  fi
  if [ "$leftovers" != 0 ]; then
    echo "kill $i after ${delay}s: a temporary table was left" >&2
    exit 1
  fi
done
echo "$kills kills of a $n-row run: $old left the previous release, $new the new one, none a partial table"
