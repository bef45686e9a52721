#!/usr/bin/env bash
# Other jobs on the same extract: `kanon generate`'s people table of N rows
# (7 QIs, k = 5, 1%, glm: scale.sh's job) with one setting changed per row —
# a sensitive column under distinct, entropy ℓ or t-closeness, another
# metric, another k or budget — each `kanon run` against `kanon limit
# --plain-only` at the node it released, in the same benchmark run.
# ratio = run total / plain-SQL limit. A job with no feasible node (exit 3)
# leaves its row with the run empty.
# Usage: bench/jobs.sh [N]   (default 10000000). Writes $KANON_BENCH_CSV
# (default bench/jobs.csv). Data in $KANON_BENCH_DIR (default
# ~/.cache/kanon-bench), generated once (bench/extract.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-10000000}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/kanon-target}"
cargo build --release --quiet
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$CARGO_TARGET_DIR/release/kanon" "$work/kanon"
kanon="$work/kanon"
# shellcheck source=extract.sh
. bench/extract.sh
data="${KANON_BENCH_DIR:-$HOME/.cache/kanon-bench}"
mkdir -p "$data/spill"
data=$(cd "$data" && pwd)
out="${KANON_BENCH_CSV:-bench/jobs.csv}"
extract "$n"
echo "job,rows,total_s,load_s,search_s,release_s,nodes_evaluated,node,limit_s,ratio" > "$out"
# job NAME SED-EXPRESSION: the generated job with one line changed.
job() {
  local name="$1" edit="$2" toml="$data/people_$n.jobs.toml"
  {
    sed -e "$edit" -e "s|people_$n-release.duckdb|people_$n-jobs.duckdb|" "$data/people_$n.job.toml"
    printf '\n[engine]\ntemp_directory = "%s"\n' "$data/spill"
  } > "$toml"
  echo "kanon run, $name, $n rows" >&2
  rm -f "$data/people_$n-jobs.duckdb"
  if ! "$kanon" run "$toml" --quiet --report "$work/report.json" > /dev/null; then
    echo "$name,$n,,,,,,,," >> "$out"
    return
  fi
  node=$(python3 -c 'import json, sys; print(",".join(f"{q}={l}" for q, l in json.load(open(sys.argv[1]))["node"].items()))' "$work/report.json")
  "$kanon" limit "$toml" --node "$node" --quiet --plain-only > "$work/limit.json"
  rm -f "$data/people_$n-jobs.duckdb"
  python3 - "$name" "$n" "$work/report.json" "$work/limit.json" >> "$out" <<'PY'
import json, sys
name, n = sys.argv[1], sys.argv[2]
r = json.load(open(sys.argv[3])); s = r["seconds"]; lim = json.load(open(sys.argv[4]))
node = ";".join(f"{q}={l}" for q, l in r["node"].items())
print(f'{name},{n},{s["total"]:.2f},{s["load"]:.2f},{s["search"]:.2f},{s["release"]:.2f},'
      f'{r["nodes_evaluated"]},{node},{lim["total_seconds"]:.2f},{s["total"] / lim["total_seconds"]:.2f}')
PY
}
job default 's/^x$/x/'
job l_diversity 's/^# l_diversity.*/l_diversity = { column = "diagnosis", l = 2 }/'
job entropy_l 's/^# l_diversity.*/l_diversity = { column = "diagnosis", l = 2, kind = "entropy" }/'
job t_closeness 's/^# l_diversity.*/t_closeness = { column = "diagnosis", t = 0.5 }/'
job precision 's/^metric = "glm"/metric = "precision"/'
job dm 's/^metric = "glm"/metric = "dm"/'
job k50 's/^k = 5$/k = 50/'
job no_suppression 's/^max_suppression = 0.01$/max_suppression = 0/'
job suppression_10pc 's/^max_suppression = 0.01$/max_suppression = 0.1/'
column -s, -t < "$out"
