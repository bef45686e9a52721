#!/usr/bin/env bash
# Scale benchmark on the synthetic extract of `kanon generate` (7 QIs, k = 5, 1%
# budget): for each N, `kanon run` under /usr/bin/time (phases, peak RSS, nodes)
# and, in the same benchmark run, `kanon limit` at the node the run released: one
# GROUP BY of the QIs plus one recode-and-write, the physical limit of any run.
# The limit is the plain-SQL one (each QI recoded by the cheapest expression
# its hierarchy allows, a join only for file hierarchies); maps_limit_s is the
# same with every QI joined to its value → label map (the yardstick before
# issue 28). ratio = run total / plain-SQL limit; maps_ratio against the maps.
# Each N runs on two extracts: `people` (kanon generate: 7 QIs, 3 of them
# file hierarchies) and `patients` (bench/extract.sh: a hospital-shaped,
# near-unique extract with 5 QIs, zip masked, birth date by month / year /
# decade, sex, race and marital status from small files); KANON_BENCH_EXTRACTS
# picks (default "people patients"; also "claims": 8 QIs of every hierarchy
# kind, "unique": a near-unique Parquet extract of 5 QIs with a Parquet
# release, and "unique_csv": the same rows as a CSV, bench/extract.sh).
# Usage: bench/scale.sh [N …]   (default: 1000000 10000000 100000000). Writes
# $KANON_BENCH_CSV (default bench/scale.csv).
# Data (one database per N, generated once) in $KANON_BENCH_DIR (default
# ~/.cache/kanon-bench); [engine] memory_limit $KANON_BENCH_MEMORY (default:
# unset, the job's default, DuckDB's own: 80% of the machine's memory),
# spilling into the data folder; spill_mb is the most the spill folder held, sampled
# every second. The binary is copied first, so a rebuild during a long run
# does not change what is measured.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || set -- 1000000 10000000 100000000
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/kanon-target}"
cargo build --release --quiet
work=$(mktemp -d)
trap 'kill "${sampler:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
cp "$CARGO_TARGET_DIR/release/kanon" "$work/kanon"
kanon="$work/kanon"
# shellcheck source=extract.sh
. bench/extract.sh
data="${KANON_BENCH_DIR:-$HOME/.cache/kanon-bench}"
memory="${KANON_BENCH_MEMORY:-}"
mkdir -p "$data/spill"
data=$(cd "$data" && pwd)
out="${KANON_BENCH_CSV:-bench/scale.csv}"
# spill_peak CMD…: runs CMD while sampling the spill folder's size; the most it
# held, in MB, is left in $work/spill_mb.
spill_peak() {
  ( peak=0; while :; do
      b=$(du -sb "$data/spill" 2>/dev/null | cut -f1); [ "${b:-0}" -gt "$peak" ] && peak=$b
      echo $((peak / 1048576)) > "$work/spill_mb"; sleep 1
    done ) &
  sampler=$!
  "$@"
  kill "$sampler"; wait "$sampler" 2>/dev/null || true; sampler=
}
echo "extract,rows,qis,combinations,load_s,search_s,release_s,total_s,peak_rss_mb,spill_mb,nodes_checked,nodes_evaluated,lattice,node,limit_kind,limit_group_by_s,limit_write_s,limit_s,ratio,maps_limit_s,maps_ratio,limit_group_by_failed_s" > "$out"
for n in "$@"; do
for kind in ${KANON_BENCH_EXTRACTS:-people patients}; do
  "$kind" "$n"
  job="$data/${kind}_$n.bench.toml"
  {
    cat "$data/${kind}_$n.job.toml"
    printf '\n[engine]\ntemp_directory = "%s"\n' "$data/spill"
    [ -z "$memory" ] || printf 'memory_limit = "%s"\n' "$memory"
  } > "$job"
  echo "kanon run, $kind, $n rows" >&2
  spill_peak /usr/bin/time -v -o "$work/time" "$kanon" run "$job" --quiet --report "$work/report.json" > /dev/null
  node=$(python3 -c 'import json, sys; print(",".join(f"{q}={l}" for q, l in json.load(open(sys.argv[1]))["node"].items()))' "$work/report.json")
  echo "kanon limit, $kind, $n rows, node $node" >&2
  # A limit that fails (at 10⁹ rows its plain GROUP BY of the raw values can
  # run out of memory) still leaves the run's row, with the limit empty.
  # When the plain GROUP BY does not fit in the memory limit, kanon limit
  # times a GROUP BY of the QIs' hash instead (limit_kind "hashed"), or if that
  # does not fit either a scan hashing them ("scan"): lower bounds, so
  # the ratio is an upper bound; limit_group_by_failed_s says how long the
  # GROUP BY ran before it failed). KANON_BENCH_PLAIN_ONLY=1 skips the maps write.
  plain_only=()
  [ "${KANON_BENCH_PLAIN_ONLY:-0}" = 1 ] && plain_only=(--plain-only)
  "$kanon" limit "$job" --node "$node" --quiet "${plain_only[@]}" > "$work/limit.json" || echo '{}' > "$work/limit.json"
  rm -f "$data/${kind}_$n-release.duckdb" "$data/${kind}_$n-release.duckdb.wal" "$data/${kind}_$n-release.parquet"
  python3 - "$kind" "$work/report.json" "$work/time" "$work/limit.json" "$(cat "$work/spill_mb")" >> "$out" <<'PY'
import json, re, sys
r = json.load(open(sys.argv[2])); s = r["seconds"]
lim = json.load(open(sys.argv[4])) or {k: float("nan") for k in ["group_by_seconds", "write_seconds", "total_seconds", "maps_total_seconds"]}
lim = {k: (float("nan") if v is None else v) for k, v in lim.items()}
rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", open(sys.argv[3]).read()).group(1))
print(",".join(str(x) for x in [sys.argv[1], r["rows_in"], len(r["node"]), r["combinations"], round(s["load"], 2),
      round(s["search"], 2), round(s["release"], 2), round(s["total"], 2), round(rss_kb / 1024), sys.argv[5],
      r["nodes_checked"], r["nodes_evaluated"], r["lattice_size"],
      ";".join(f"{q}={l}" for q, l in r["node"].items()), lim.get("group_by", "none"), round(lim["group_by_seconds"], 2),
      round(lim["write_seconds"], 2), round(lim["total_seconds"], 2), round(s["total"] / lim["total_seconds"], 2),
      round(lim["maps_total_seconds"], 2), round(s["total"] / lim["maps_total_seconds"], 2),
      round(lim.get("group_by_failed_after_seconds", float("nan")), 2)]))
PY
done
done
column -s, -t < "$out"
