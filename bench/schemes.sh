#!/usr/bin/env bash
# Li & Li's setting (their Figs. 11-13): Adult with age coarsened to 15
# five-year intervals (17-21 ... 87-91, with a small hierarchy over them),
# marital-status, race and sex; every scheme, k in {2, 5, 10, 25, 50}, dm and
# hdm: optimal cost, anonymizations evaluated, seconds. Then the pruning
# techniques switched off in pairs, as in their Fig. 13, with the DP off so
# that each run counts the same anonymizations (and once with it on); and
# SPS with the DP's rules switched off. Then every scheme under suppression
# caps of 1%, 5% and 100% (max_suppression), dm and hdm, k in {2, 10, 50}.
#
# Usage: bench/schemes.sh   (KANON_BENCH_TIMEOUT seconds per run, default 600;
# KANON_BENCH_CAP_TIMEOUT for the capped runs, default 60;
# KANON_BENCH_CAPPED_ONLY=1 runs only those)
# Writes bench/schemes.csv, bench/schemes-pruning.csv and
# bench/schemes-capped.csv. Skips with a notice when ../shared/data/adult is
# absent.
set -euo pipefail
cd "$(dirname "$0")/.."
adult=../shared/data/adult
if [ ! -f "$adult/adult.csv" ]; then
  echo "bench/schemes.sh: $adult is absent; skipped"
  exit 0
fi
timeout_s=${KANON_BENCH_TIMEOUT:-600}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/kanon-target}
cargo build --release --quiet
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# A copy: another build in the same target directory may replace the binary.
cp "$CARGO_TARGET_DIR/release/kanon" "$work/kanon"
kanon=$work/kanon

# The age column as its five-year interval, and the hierarchy over intervals.
awk -F';' 'NR==1{for(i=1;i<=NF;i++) if($i=="age") c=i; print; next}
           {lo=17+5*int(($c-17)/5); $c=lo"-"(lo+4); print}' OFS=';' "$adult/adult.csv" > "$work/adult.csv"
for lo in $(seq 17 5 87); do
  p=$((17 + 10 * ((lo - 17) / 10))); ph=$((p + 9)); [ $ph -gt 91 ] && ph=91
  q=$((17 + 20 * ((lo - 17) / 20))); qh=$((q + 19)); [ $q -eq 77 ] && qh=91
  echo "$lo-$((lo + 4));$p-$ph;$q-$qh;*"
done > "$work/age.csv"
cat > "$work/job.toml" <<EOF
[source]
csv = "$work/adult.csv"
delimiter = ";"
[output]
csv = "$work/out.csv"
report = "$work/report.json"
[privacy]
k = 2
[[quasi_identifiers]]
column = "age"
hierarchy = { file = "$work/age.csv" }
[[quasi_identifiers]]
column = "marital-status"
hierarchy = { file = "$(realpath "$adult")/hierarchy_marital-status.csv" }
[[quasi_identifiers]]
column = "race"
hierarchy = { file = "$(realpath "$adult")/hierarchy_race.csv" }
[[quasi_identifiers]]
column = "sex"
hierarchy = { file = "$(realpath "$adult")/hierarchy_sex.csv" }
EOF

for s in bhs ghs gops ops gsps sps; do "$kanon" hierarchy "$work/job.toml" --scheme "$s" | tail -n +2 | tr '\n' ' '; echo "($s)"; done

# run SCHEME METRIC K [PRUNING-OFF] [MAX-SUPPRESSION]: prints
# cost,evaluated,seconds,rate,suppressed or a timeout.
run() {
  local off=()
  [ -n "${4:-}" ] && off=(--pruning-off "$4")
  [ -n "${5:-}" ] && off+=(--max-suppression "$5")
  rm -f "$work/report.json"
  if timeout "$timeout_s" "$kanon" run "$work/job.toml" --scheme "$1" --metric "$2" --k "$3" "${off[@]}" --quiet > /dev/null; then
    python3 - "$work/report.json" "$2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); m = sys.argv[2]
s = r["seconds"]["search"]; n = r["nodes_evaluated"]
print(f'{r["metrics"][m]:.4f},{n},{r["seconds"]["total"]:.2f},{n / max(s, 1e-9):.0f},{r["suppressed"]}')
PY
  else
    echo "timeout,,>$timeout_s,,"
  fi
}

capped() {
  local out=bench/schemes-capped.csv timeout_s=${KANON_BENCH_CAP_TIMEOUT:-60}
  echo "scheme,metric,k,max_suppression,cost,evaluated,seconds,evaluated_per_second,suppressed" > "$out"
  for metric in dm hdm; do
    for k in 2 10 50; do
      for s in bhs ghs gops ops gsps sps; do
        for cap in 0.01 0.05 1.0; do
          echo "$s,$metric,$k,$cap,$(run "$s" "$metric" "$k" "" "$cap")" | tee -a "$out"
        done
      done
    done
  done
}
if [ -n "${KANON_BENCH_CAPPED_ONLY:-}" ]; then
  capped
  exit 0
fi

out=bench/schemes.csv
echo "scheme,metric,k,cost,evaluated,seconds,evaluated_per_second,suppressed" > "$out"
for metric in dm hdm; do
  for k in 2 5 10 25 50; do
    for s in bhs ghs gops ops gsps sps; do
      line="$s,$metric,$k,$(run "$s" "$metric" "$k")"
      echo "$line" | tee -a "$out"
    done
  done
done

out=bench/schemes-pruning.csv
echo "scheme,metric,k,pruning_off,cost,evaluated,seconds" > "$out"
prune() {
  local r; r=$(run "$1" "$2" "$3" "$4")
  echo "$1,$2,$3,$(echo "${4:-none}" | tr , +),$(echo "$r" | cut -d, -f1-3)" | tee -a "$out"
}
for s in gops ops gsps; do
  for k in 5 25; do
    for off in "" dp dp,seeding,bfs dp,nodes,applicators dp,seeding,bfs,nodes,applicators; do
      prune "$s" dm "$k" "$off"
    done
  done
done
# SPS: the DP's rules (classes, blocks) and the queue's (stuck) one at a
# time, and all three off (the search as it was before them), every k.
for metric in dm hdm; do
  for k in 2 5 10 25 50; do
    prune sps "$metric" "$k" ""
    prune sps "$metric" "$k" classes,blocks,stuck
  done
done
for k in 5 25; do
  for off in classes blocks stuck; do
    prune sps dm "$k" "$off"
  done
done

capped
