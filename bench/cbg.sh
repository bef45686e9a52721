#!/usr/bin/env bash
# Cell-based generalization (Nergiz & Clifton). Part 1, Adult (8 QIs, ARX
# hierarchies, no suppression budget for the full-domain search), k in
# {2, 5, 10, 25, 50, 100}: lm, dm, am and whole-process seconds of CDGH,
# CNDGH (m = 32 open clusters, the default) and the full-domain optimum
# (top-down, metric glm; the job sets no max_suppression, so it suppresses
# nothing, and the cell-based runs suppress what their pass leaves). Part 2, CDGH on the generated
# extracts of bench/scale.sh (1M and 10M rows, k = 5): seconds and peak RSS,
# against `kanon limit` of the same extract in the same run (one GROUP BY of
# the QIs plus one recode-and-write at the leaves), both its figures:
# maps_ratio = run / the write joining every QI to its value → label map
# (what `kanon limit` measured when issue 28 set CDGH's goal of 2.5× it),
# plain_ratio = run / the plain-SQL write (values as they are).
#
# Usage: bench/cbg.sh [N …]   (default: 1000000 10000000). Writes
# bench/cbg.csv and bench/cbg-scale.csv. Part 1 is skipped with a notice when
# ../shared/data/adult is absent. Data as in bench/scale.sh ($KANON_BENCH_DIR,
# default ~/.cache/kanon-bench, generated once per N; memory_limit
# $KANON_BENCH_MEMORY, default 4GB).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || set -- 1000000 10000000
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/kanon-target}"
cargo build --release --quiet
kanon="$CARGO_TARGET_DIR/release/kanon"
# shellcheck source=extract.sh
. bench/extract.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One process: wall seconds and peak RSS (MB) into $work/time, the report into $work/report.json.
timed() {
  /usr/bin/time -f "%e %M" -o "$work/time" "$kanon" "$@" --quiet --report "$work/report.json" > /dev/null
}

adult=$(cd ../shared/data/adult 2>/dev/null && pwd) || adult=""
if [ -z "$adult" ]; then
  echo "notice: ../shared/data/adult is absent; the Adult part is skipped"
else
  {
    printf '[source]\ncsv = "%s/adult.csv"\ndelimiter = ";"\n' "$adult"
    printf '[output]\ndatabase = "%s/adult.duckdb"\ntable = "adult_release"\n[privacy]\nk = 2\n' "$work"
    for q in age education marital-status native-country occupation race sex workclass; do
      printf '[[quasi_identifiers]]\ncolumn = "%s"\nhierarchy = { file = "%s/hierarchy_%s.csv" }\n' "$q" "$adult" "$q"
    done
  } > "$work/adult.toml"
  echo "k,algorithm,lm,dm,am,suppressed,seconds" > bench/cbg.csv
  for k in 2 5 10 25 50 100; do
    for algorithm in cdgh cndgh topdown; do
      echo "Adult k=$k $algorithm" >&2
      timed run "$work/adult.toml" --k "$k" --algorithm "$algorithm"
      python3 - "$work/report.json" "$work/time" "$k" "$algorithm" >> bench/cbg.csv <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); m = r["metrics"]; secs = open(sys.argv[2]).read().split()[0]
name = "full-domain" if sys.argv[4] == "topdown" else sys.argv[4]
print(",".join(str(x) for x in [sys.argv[3], name, round(m["lm"], 6), int(m["dm"]), round(m["am"], 3), r["suppressed"], secs]))
PY
    done
  done
  column -s, -t < bench/cbg.csv
fi

data="${KANON_BENCH_DIR:-$HOME/.cache/kanon-bench}"
memory="${KANON_BENCH_MEMORY:-4GB}"
mkdir -p "$data/spill"
data=$(cd "$data" && pwd)
out=bench/cbg-scale.csv
echo "rows,clusters,lm,am,suppressed,load_s,pass_s,release_s,total_s,peak_rss_mb,maps_limit_s,maps_ratio,plain_limit_s,plain_ratio" > "$out"
for n in "$@"; do
  db="$data/people_$n.duckdb"
  extract "$n"
  job="$data/people_$n.cbg.toml"
  {
    sed 's/^\[search\]$/[search]\nalgorithm = "cdgh"/' "$data/people_$n.job.toml"
    printf '\n[engine]\nmemory_limit = "%s"\ntemp_directory = "%s"\n' "$memory" "$data/spill"
  } > "$job"
  grep -q '^algorithm = "cdgh"' "$job" || printf '\n[search]\nalgorithm = "cdgh"\n' >> "$job"
  echo "CDGH, $n rows" >&2
  timed run "$job"
  cp "$work/time" "$work/time.run"
  node=$(python3 -c 'import json, sys; print(",".join(f"{q}=0" for q in json.load(open(sys.argv[1]))["quasi_identifiers"]))' "$work/report.json")
  echo "kanon limit, $n rows" >&2
  "$kanon" limit "$job" --node "$node" --quiet > "$work/limit.json"
  rm -f "$data/people_$n-release.duckdb" "$data/people_$n-release.duckdb.wal"
  python3 - "$work/report.json" "$work/time.run" "$work/limit.json" >> "$out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); lim = json.load(open(sys.argv[3])); s = r["seconds"]; m = r["metrics"]
wall, rss_kb = open(sys.argv[2]).read().split()
print(",".join(str(x) for x in [r["rows_in"], r["clusters"], round(m["lm"], 6), round(m["am"], 1), r["suppressed"],
      round(s["load"], 2), round(s["search"], 2), round(s["release"], 2), wall, round(int(rss_kb) / 1024),
      round(lim["maps_total_seconds"], 2), round(float(wall) / lim["maps_total_seconds"], 2),
      round(lim["total_seconds"], 2), round(float(wall) / lim["total_seconds"], 2)]))
PY
done
column -s, -t < "$out"
