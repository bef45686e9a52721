#!/usr/bin/env bash
# Issue 55's yardstick: the near-unique Parquet extract (bench/extract.sh
# `unique N`: 5 QIs, k = 5, at most 1% suppressed, the job's defaults) on
# embedded DuckDB, PostgreSQL and Spark, in one benchmark run. Per engine:
# `kanon limit --node <DuckDB's node> --plain-only` (the plain-SQL limit on
# that engine; NA where kanon limit refuses the engine) and `kanon run` under
# /usr/bin/time -v with KANON_TRACE=1 (wall seconds, peak RSS, the report's
# phases and evaluator, the bytes that came back), then whether the engine
# released DuckDB's node, suppression and rows (the released rows as a
# multiset: count and a sum of hashes of each row's text, computed by one
# DuckDB on the exported releases, so order-independent).
# - DuckDB: the Parquet file, the release a Parquet file.
# - PostgreSQL: a throwaway cluster (tools/pg-server.sh, the server's
#   defaults: 2 parallel workers per gather), the extract loaded once per run
#   (COPY of a CSV DuckDB writes) and ANALYZEd; the release exported with
#   psql's \copy.
# - Spark: a local Spark Connect server (tools/spark-server.sh: local[2],
#   driver memory $KANON_SPARK_MEMORY, default 4g, and $KANON_SPARK_CONF,
#   default spark.driver.maxResultSize=256m; a value given replaces it
#   whole, so name maxResultSize there too) reading the Parquet file, warmed
#   up by one unmeasured run on 20,000 rows; the release read from the
#   server's warehouse directory.
#
# Usage: bench/remote.sh [N]   (default 10000000). Writes bench/remote-N.csv
# (columns: see the header line); the logs (remote.log: the machine, each
# step, where each run's time goes, the signatures; <engine>-trace.log:
# KANON_TRACE, <engine>-time.txt, reports, limit JSON) go to
# $KANON_BENCH_DIR/remote-N/ (default ~/.cache/kanon-bench). KANON_BIN: a
# kanon binary to measure instead of building this worktree's; it is copied
# first, so a rebuild during the run changes nothing. KANON_BENCH_ENGINES
# picks (default "duckdb postgres spark"; DuckDB always runs, for the node).
# KANON_BENCH_KEEP=1 keeps the exported releases. KANON_BENCH_RUNS=R (default
# 1) measures each engine R times, kanon run and kanon limit alternately (the
# release dropped before each run, so each writes it new): the CSV has the
# medians, their ratio, and each pair's ratio (`ratios`), as the machine is
# shared and noisy. Ports: $KANON_SPARK_PORT (default 15042), $KANON_PG_PORT
# (default 15445).
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-10000000}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/kanon-target}"
export KANON_SPARK_MEMORY="${KANON_SPARK_MEMORY:-4g}"
export KANON_SPARK_CONF="${KANON_SPARK_CONF-spark.driver.maxResultSize=256m}"
export KANON_SPARK_PORT="${KANON_SPARK_PORT:-15042}"
export KANON_PG_PORT="${KANON_PG_PORT:-15445}"
engines="${KANON_BENCH_ENGINES:-duckdb postgres spark}"
runs="${KANON_BENCH_RUNS:-1}"
work=$(mktemp -d)
if [ -n "${KANON_BIN:-}" ]; then
  cp "$KANON_BIN" "$work/kanon"
else
  cargo build --release --quiet
  cp "$CARGO_TARGET_DIR/release/kanon" "$work/kanon"
fi
kanon="$work/kanon"
# shellcheck source=extract.sh
. bench/extract.sh
# shellcheck source=../tools/pg-server.sh
. tools/pg-server.sh
# shellcheck source=../tools/spark-server.sh
. tools/spark-server.sh
trap 'stop_server; stop_pg; rm -rf "$work"' EXIT

data="${KANON_BENCH_DIR:-$HOME/.cache/kanon-bench}"
mkdir -p "$data"
data=$(cd "$data" && pwd)
unique "$n"
logs="$data/remote-$n"
rm -rf "$logs" && mkdir -p "$logs/spill"
log="$logs/remote.log"
say() { echo "$*" | tee -a "$log" >&2; }
{
  echo "bench/remote.sh $n, $(date -u '+%Y-%m-%d %H:%M UTC'), kanon $("$kanon" --version 2>/dev/null || echo '?')"
  echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo '?') (${KANON_BIN:-built from this worktree})"
  lscpu | grep -E '^(Model name|CPU\(s\)|Thread|Core)' || true
  free -m | sed -n 2p
  echo "Spark: local[2], driver memory $KANON_SPARK_MEMORY, conf: ${KANON_SPARK_CONF:-none}"
  echo "runs per engine: $runs (kanon run and kanon limit alternately; medians)"
} > "$log"
cat "$log" >&2

parquet="$data/unique_$n.parquet"
spark_table="kanon_remote_unique_k5"
spark_warehouse="$home/server-$KANON_SPARK_PORT/warehouse"
# The job's privacy and QIs, the hierarchy files by absolute path.
body=$(sed -n '/^\[privacy\]/,$p' "$data/unique_$n.job.toml" | sed "s#\"unique-hierarchies/#\"$data/unique-hierarchies/#")
# write_job ENGINE ENGINE-SECTION SOURCE OUTPUT: $work/ENGINE.toml.
write_job() {
  printf '[engine]\n%s\ntemp_directory = "%s"\n\n[source]\n%s\n\n[output]\n%s\nreport = "%s"\ndrop = ["id"]\n\n%s\n' \
    "$2" "$logs/spill" "$3" "$4" "$logs/$1-report.json" "$body" > "$work/$1.toml"
}

echo "engine,rows,kanon_seconds,load_seconds,search_seconds,release_seconds,evaluator,limit_seconds,ratio,peak_rss_mb,node,suppressed,same_node_as_duckdb,same_suppressed,same_rows,bytes_back,rows_back,status,runs,ratios" \
  > "$work/rows.csv"

# measure ENGINE RELEASE: kanon run on ENGINE's job (DuckDB's first: its
# node is every engine's reference), the release's signature (RELEASE: the
# file or folder `export_ENGINE` leaves), then kanon limit at DuckDB's node.
measure() {
  local engine="$1" release="$2" rc=0 r
  for r in $(seq 1 "$runs"); do
    run_once "$engine" "$r" || rc=$?
    [ "$rc" = 0 ] || break
  done
  if [ "$rc" != 0 ]; then
    say "  run failed (exit $rc): $(grep -v '^TRACE' "$logs/$engine-trace.log" | tail -n 3 | tr '\n' ' ')"
    rm -f "$logs/$engine-report.json"
  else
    "export_$engine" "$release"
  fi
  {
    echo "where the time goes on $engine (KANON_TRACE):"
    grep -E '^TRACE .*(open:|load |hierarchy .* coded|run |evaluator|fetched|work schema|suppressed classes|node classes|release |base)' \
      "$logs/$engine-trace.log" | sed 's/^/  /' || true
  } >> "$log"
  local signature=NA
  [ "$rc" = 0 ] && signature=$(signature "$release")
  echo "$signature" > "$logs/$engine-signature"
  say "  signature (rows:hash sum) $signature"
  if [ "$engine" = duckdb ]; then
    node=$(python3 -c 'import json, sys; print(",".join(f"{q}={l}" for q, l in json.load(open(sys.argv[1]))["node"].items()))' \
      "$logs/duckdb-report.json")
    node_ref=${node//,/;}
    suppressed_ref=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["suppressed"])' "$logs/duckdb-report.json")
  fi
  # DuckDB's limits run after its runs: they give the node.
  if [ "$engine" = duckdb ] && [ -n "$node" ]; then
    for r in $(seq 1 "$runs"); do limit_once duckdb "$r"; done
  fi
  python3 - "$engine" "$n" "$rc" "$logs" "$node_ref" "$suppressed_ref" "$(cat "$logs/duckdb-signature" 2>/dev/null || echo NA)" \
    "$signature" "$runs" >> "$work/rows.csv" <<'PY'
import json, os, re, statistics, sys
engine, n, rc, logs, node_ref, supp_ref, sig_ref, sig, runs = sys.argv[1:10]
def load(path):
    try:
        return json.load(open(path))
    except (OSError, ValueError):
        return {}
r = load(f"{logs}/{engine}-report.json")
def measured(i):
    time = open(f"{logs}/{engine}-time-{i}.txt").read()
    rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", time).group(1))
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)", time).group(1)
    return sum(float(x) * 60 ** i for i, x in enumerate(reversed(wall.split(":")))), rss_kb
done = [i for i in range(1, int(runs) + 1) if os.path.exists(f"{logs}/{engine}-time-{i}.txt")]
walls, rss = zip(*(measured(i) for i in done))
limits = [load(f"{logs}/{engine}-limit-{i}.json").get("total_seconds") for i in done]
wall, rss_kb = statistics.median(walls), max(rss)
limit = statistics.median(limits) if all(limits) else None
pairs = ";".join(str(round(w / l, 2)) for w, l in zip(walls, limits)) if limit else "NA"
fetched = re.findall(r"(?:spark|postgres): fetched (\d+) rows, (\d+) bytes", open(f"{logs}/{engine}-trace.log").read())
s = r.get("seconds", {})
na = lambda x: "NA" if x is None else x
sec = lambda x: "NA" if x is None else round(x, 2)
node = ";".join(f"{q}={l}" for q, l in r["node"].items()) if r.get("node") else None
remote = engine != "duckdb"
print(",".join(str(x) for x in [
    engine, n, round(wall, 2), sec(s.get("load")), sec(s.get("search")), sec(s.get("release")), na(r.get("evaluator")),
    sec(limit), round(wall / limit, 2) if limit else "NA", round(rss_kb / 1024), na(node), na(r.get("suppressed")),
    str(node == node_ref).lower() if node else "NA",
    str(str(r.get("suppressed")) == supp_ref).lower() if r else "NA",
    str(sig == sig_ref).lower() if sig != "NA" and sig_ref != "NA" else "NA",
    sum(int(b) for _, b in fetched) if remote else "NA", sum(int(k) for k, _ in fetched) if remote else "NA",
    "ok" if rc == "0" else f"exit {rc}", len(done), pairs]))
PY
}

# run_once ENGINE R: the R-th kanon run on ENGINE's job (its release dropped
# first), then, once DuckDB's node is known, kanon limit at that node.
run_once() {
  local engine="$1" r="$2" rc=0
  "drop_$engine"
  say "kanon run $r/$runs on $engine, $n rows (load average $(cut -d ' ' -f 1-3 /proc/loadavg))"
  KANON_TRACE=1 /usr/bin/time -v -o "$logs/$engine-time-$r.txt" "$kanon" run "$work/$engine.toml" --quiet \
    > /dev/null 2> "$logs/$engine-trace.log" || rc=$?
  cp "$logs/$engine-time-$r.txt" "$logs/$engine-time.txt"
  [ "$rc" = 0 ] || return "$rc"
  [ "$engine" = duckdb ] || limit_once "$engine" "$r"
}

# limit_once ENGINE R: the R-th kanon limit at DuckDB's node.
limit_once() {
  local engine="$1" r="$2"
  say "kanon limit $r/$runs on $engine, $n rows, node $node (load average $(cut -d ' ' -f 1-3 /proc/loadavg))"
  if ! "$kanon" limit "$work/$engine.toml" --node "$node" --plain-only --quiet \
      > "$logs/$engine-limit-$r.json" 2> "$logs/$engine-limit.log"; then
    say "  limit failed (NA): $(tail -n 1 "$logs/$engine-limit.log")"
    echo '{}' > "$logs/$engine-limit-$r.json"
  fi
  cp "$logs/$engine-limit-$r.json" "$logs/$engine-limit.json"
}

# signature RELEASE: "rows:sum of hash" over each row's text, the columns in
# the DuckDB release's order (by name), every value as text (NULL as \N); a
# CSV is read as text throughout, a folder as its Parquet files.
signature() {
  duckdb_python "$logs/duckdb-release.parquet" "$1" <<'PY'
import os, sys, duckdb
ref, path = sys.argv[1], sys.argv[2]
con = duckdb.connect()
def rel(p):
    if p.endswith(".csv"):
        return f"read_csv('{p}', header = true, all_varchar = true)"
    return f"read_parquet('{p}/*.parquet')" if os.path.isdir(p) else f"read_parquet('{p}')"
names = lambda p: [c[0] for c in con.execute(f"DESCRIBE SELECT * FROM {rel(p)}").fetchall()]
want, have = names(ref), {c.lower(): c for c in names(path)}
if sorted(c.lower() for c in want) != sorted(have):
    print("columns:" + "|".join(sorted(have)))
    sys.exit(0)
text = ", ".join(f"""coalesce(CAST("{have[c.lower()]}" AS VARCHAR), '\\N')""" for c in want)
rows, total = con.execute(f"SELECT count(*), sum(hash(concat_ws(chr(31), {text}))) FROM {rel(path)}").fetchone()
print(f"{rows}:{total}")
PY
}

drop_duckdb() { rm -f "$logs/duckdb-release.parquet"; }
drop_postgres() { psql "$pg_url" -q -v ON_ERROR_STOP=1 -c "DROP TABLE IF EXISTS public.unique_k5"; }
drop_spark() { :; }
export_duckdb() { :; }
export_postgres() { psql "$pg_url" -q -v ON_ERROR_STOP=1 -c "\\copy (SELECT * FROM public.unique_k5) TO '$1' CSV HEADER"; }
export_spark() { :; }

node="" node_ref=NA suppressed_ref=NA
write_job duckdb 'kind = "duckdb"' "parquet = \"$parquet\"" "parquet = \"$logs/duckdb-release.parquet\""
measure duckdb "$logs/duckdb-release.parquet"
[ -n "$node" ] || { echo "bench/remote.sh: the DuckDB run failed; no reference node" >&2; exit 1; }

if [[ " $engines " == *" postgres "* ]]; then
  start_pg || { echo "bench/remote.sh needs PostgreSQL" >&2; exit 1; }
  psql "$pg_url" -Atq -c "SHOW max_parallel_workers_per_gather" | sed 's/^/PostgreSQL max_parallel_workers_per_gather: /' >> "$log"
  say "loading $n rows into PostgreSQL"
  start=$(date +%s.%N)
  columns=$(duckdb_python "$parquet" "$work/unique.csv" <<'PY'
import duckdb, sys
con = duckdb.connect()
con.execute(f"COPY (SELECT * FROM read_parquet('{sys.argv[1]}')) TO '{sys.argv[2]}' (HEADER)")
pg = {"BIGINT": "bigint", "INTEGER": "integer", "VARCHAR": "text", "DATE": "date", "DOUBLE": "double precision"}
print(", ".join(f'"{c}" {pg[t]}' for c, t, *_ in con.execute(f"DESCRIBE SELECT * FROM read_parquet('{sys.argv[1]}')").fetchall()))
PY
  )
  psql "$pg_url" -q -v ON_ERROR_STOP=1 <<SQL
CREATE TABLE public.unique_src ($columns);
\copy public.unique_src FROM '$work/unique.csv' CSV HEADER
ANALYZE public.unique_src;
SQL
  rm -f "$work/unique.csv"
  say "  loaded in $(python3 -c "import sys; print(round($(date +%s.%N) - $start, 1))") s"
  write_job postgres "kind = \"postgres\"
url = \"$pg_url\"" 'table = "public.unique_src"' 'table = "public.unique_k5"'
  measure postgres "$logs/postgres-release.csv"
  stop_pg
fi

if [[ " $engines " == *" spark "* ]]; then
  start_server || { echo "bench/remote.sh needs the Spark Connect server" >&2; exit 1; }
  write_job spark "kind = \"spark\"
url = \"sc://127.0.0.1:$KANON_SPARK_PORT\"" "parquet = \"$parquet\"" "table = \"$spark_table\""
  # A first run on a small extract, not measured: the server's JVM warmed up
  # for the run and the limit alike.
  unique 20000
  write_job warmup "kind = \"spark\"
url = \"sc://127.0.0.1:$KANON_SPARK_PORT\"" "parquet = \"$data/unique_20000.parquet\"" 'table = "kanon_remote_warmup"'
  start=$(date +%s)
  if "$kanon" run "$work/warmup.toml" --quiet > /dev/null 2> "$logs/warmup.log"; then
    say "Spark server warmed up (a run on 20,000 rows: $(($(date +%s) - start)) s)"
  else
    say "the warm-up run failed: $(tail -n 1 "$logs/warmup.log")"
  fi
  measure spark "$spark_warehouse/$spark_table"
  stop_server
  server_pid=""
  cp "$home/server-$KANON_SPARK_PORT/server.log" "$logs/spark-server.log" 2>/dev/null || true
fi

[ "${KANON_BENCH_KEEP:-0}" = 1 ] || rm -f "$logs/duckdb-release.parquet" "$logs/postgres-release.csv"
rm -rf "$logs/spill"
out="bench/remote-$n.csv"
cp "$work/rows.csv" "$out"
column -s, -t < "$out" | tee -a "$log"
