#!/usr/bin/env bash
# POkA benchmark on Adult (../shared/data/adult): evaluations, time and recall
# against the exhaustive front, for glm, dm and cm at budgets 0, 1% and 5%.
# Usage: bench/pareto.sh [DEPTH]   (default: POkA's d_avg). Writes bench/pareto.csv.
set -euo pipefail
cd "$(dirname "$0")/.."
adult=$(cd ../shared/data/adult 2>/dev/null && pwd) || { echo "skipping: ../shared/data/adult not found"; exit 0; }
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/kanon-target}"
cargo build --release --quiet
kanon="$CARGO_TARGET_DIR/release/kanon"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
depth=${1:+--depth $1}
out=bench/pareto.csv
echo "metric,budget,depth,front,true_front,recall,dominated_reported,evaluations,lattice,evaluated_percent,seconds" > "$out"
for budget in 0 0.01 0.05; do
  {
    printf '[source]\ncsv = "%s/adult.csv"\ndelimiter = ";"\n[output]\ndatabase = "%s/out.duckdb"\ntable = "t"\n' "$adult" "$work"
    printf '[privacy]\nk = 2\nmax_suppression = %s\n[search]\nclass_column = "salary-class"\n' "$budget"
    for q in age education marital-status native-country race sex workclass salary-class; do
      printf '[[quasi_identifiers]]\ncolumn = "%s"\nhierarchy = { file = "%s/hierarchy_%s.csv" }\n' "$q" "$adult" "$q"
    done
  } > "$work/job.toml"
  for metric in glm dm cm; do
    # shellcheck disable=SC2086
    "$kanon" pareto "$work/job.toml" --metric "$metric" --method poka $depth --exhaustive --quiet --json "$work/r.json" > /dev/null
    python3 - "$work/r.json" "$metric" "$budget" >> "$out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); e = r["exhaustive"]
print(",".join(str(x) for x in [sys.argv[2], sys.argv[3], r["depth"], len(r["front"]), e["true_front_size"],
      round(e["recall"], 3), len(e["dominated_reported"]), r["nodes_evaluated"], r["lattice_size"],
      round(r["evaluated_percent"], 1), round(r["seconds"], 1)]))
PY
  done
done
column -s, -t < "$out"
