#!/usr/bin/env bash
# Risk limits on UCI Adult against ARX 3.9.2: for each model at several
# thresholds, k = 1 plus the model, 1% suppression, glm (ARX's Loss) and dm,
# (exact k-map and δ-presence: the source is every third row of Adult, the
# population all of it; ARX's DataSubset of the same rows),
# the optimum node and the suppressed rows of both, and each whole process's
# seconds (one run each, alternating, so both see the same machine).
# Usage: bench/limits.sh   (writes bench/limits.csv; skips without ../shared)
set -euo pipefail
cd "$(dirname "$0")/.."
adult=$(cd ../shared/data/adult 2>/dev/null && pwd) || { echo "skipping: ../shared/data/adult not found"; exit 0; }
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/kanon-target}"
cargo build --release --quiet
kanon="$CARGO_TARGET_DIR/release/kanon"
bench/arx/arx-models --compile
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
qis="age education marital-status native-country race sex workclass salary-class"
out=bench/limits.csv
echo "model,arx_args,metric,arx_node,arx_suppressed,kanon_node,kanon_suppressed,same,arx_s,kanon_s,ratio" > "$out"

# Every third row (0, 3, 6, ...): the research subset of Adult.
awk 'NR == 1 || (NR - 2) % 3 == 0' "$adult/adult.csv" > "$work/subset.csv"

# case ARX_FLAG ARX_VALUE TOML_LINE [subset]
run_case() {
  local flag=$1 value=$2 toml=$3 subset=${4:-}
  local source="$adult/adult.csv" arx_subset=() risk=""
  if [ -n "$subset" ]; then
    source="$work/subset.csv" arx_subset=(--subset-every 3)
    risk=$(printf '[risk]\npopulation_table = { csv = "%s/adult.csv", delimiter = ";" }' "$adult")
  fi
  for metric in glm dm; do
    local arx_metric=loss
    [ "$metric" = dm ] && arx_metric=dm
    {
      printf '[source]\ncsv = "%s"\ndelimiter = ";"\n' "$source"
      printf '[output]\ncsv = "%s/out.csv"\nreport = "%s/report.json"\nhistory = false\n' "$work" "$work"
      printf '[privacy]\nk = 1\nmax_suppression = 0.01\n%s\n' "$toml"
      printf '[search]\nmetric = "%s"\n%s\n' "$metric" "$risk"
      for q in $qis; do
        printf '[[quasi_identifiers]]\ncolumn = "%s"\nhierarchy = { file = "%s/hierarchy_%s.csv" }\n' "$q" "$adult" "$q"
      done
    } > "$work/job.toml"
    local t0 t1 t2
    t0=$(date +%s.%N)
    bench/arx/arx-models --data "$adult/adult.csv" --qis "${qis// /,}" --k 1 --budget 0.01 \
      --metric "$arx_metric" "${arx_subset[@]}" "--$flag" "$value" > "$work/arx.json"
    t1=$(date +%s.%N)
    "$kanon" run "$work/job.toml" > /dev/null
    t2=$(date +%s.%N)
    python3 - "$work/arx.json" "$work/report.json" "$flag" "$value" "$metric" "$t0" "$t1" "$t2" "$qis" >> "$out" <<'PY'
import json, sys
arx = json.load(open(sys.argv[1])); kanon = json.load(open(sys.argv[2]))
flag, value, metric = sys.argv[3:6]
t0, t1, t2 = map(float, sys.argv[6:9])
qis = sys.argv[9].split()
a_node = "-".join(map(str, arx["levels"])) if arx["optimum_found"] else "none"
k_node = "-".join(str(kanon["node"][q]) for q in qis)
same = a_node == k_node and arx["suppressed"] == kanon["suppressed"]
a_s, k_s = t1 - t0, t2 - t1
print(f'{flag},{value},{metric},{a_node},{arx["suppressed"]},{k_node},{kanon["suppressed"]},{same},{a_s:.2f},{k_s:.2f},{k_s / a_s:.3f}')
PY
    tail -1 "$out" >&2
  done
}

run_case avg-risk 0.2 'average_risk = 0.2'
run_case avg-risk 0.1 'average_risk = 0.1'
run_case avg-risk 0.05 'average_risk = 0.05'
run_case avg-risk 0.02 'average_risk = 0.02'
run_case avg-risk 0.1:0.2:0.05 'average_risk = { average = 0.1, highest = 0.2, records_at_risk = 0.05 }'
run_case avg-risk 0.05:0.5:0.01 'average_risk = { average = 0.05, highest = 0.5, records_at_risk = 0.01 }'
run_case sample-uniq 0.05 'sample_uniqueness = 0.05'
run_case sample-uniq 0.01 'sample_uniqueness = 0.01'
run_case sample-uniq 0.001 'sample_uniqueness = 0.001'
run_case pop-uniq 0.01:dankar 'population_uniqueness = { threshold = 0.01 }'
run_case pop-uniq 0.001:pitman 'population_uniqueness = { threshold = 0.001, estimator = "pitman" }'
run_case pop-uniq 0.01:zayatz 'population_uniqueness = { threshold = 0.01, estimator = "zayatz" }'
run_case pop-uniq 0.005:snb 'population_uniqueness = { threshold = 0.005, estimator = "snb" }'
run_case k-map 10:0.01:poisson 'k_map = { k = 10, significance = 0.01 }'
run_case k-map 100:0.05:ztp 'k_map = { k = 100, significance = 0.05, estimator = "zero_truncated_poisson" }'
run_case k-map-exact 5 'k_map = { k = 5 }' subset
run_case k-map-exact 20 'k_map = { k = 20 }' subset
run_case d-presence 0.0:0.5 'delta_presence = { min = 0.0, max = 0.5 }' subset
run_case d-presence 0.1:0.6 'delta_presence = { min = 0.1, max = 0.6 }' subset
echo "wrote $out" >&2
