#!/usr/bin/env bash
# kanon against ARX on UCI Adult, as whole processes: 5 cold runs of each
# command (a new process each time), median / min / max seconds and peak RSS.
# - ARX 3.9.2 (../shared/peers/arx/arx) k = 5, 1%, Loss; kanon run k = 5, 1%,
#   glm with the default search and with each algorithm;
# - kanon pareto glm and dm at 1%: exact (the default) and POkA, and --exhaustive;
# - Adult replicated x10 and x100 with k scaled alike (50, 500: the same optimum
#   on 10x / 100x the rows), ARX and kanon run on the same files.
# - privacy models on Adult (occupation sensitive), k = 5, 1%: ARX (bench/arx/arx-models)
#   with EqualDistanceTCloseness 0.2, EntropyLDiversity 3 (Shannon) and the risk limits
#   (average risk plain and relaxed, sample and population uniqueness, k-map; exact k-map and
#   delta-presence on every third row against all of it), kanon run
#   (default search) on the same job plus [privacy] t_closeness / l_diversity; then the
#   ratios kanon / ARX per model and kanon with the model / kanon without (adult_x1 run).
# Usage: bench/small.sh [RUNS] [all|models]   (default 5 all). all writes bench/small.csv;
#   models runs only the model cases and their baselines (ARX and kanon default on
#   adult_x1 without a model) and writes bench/small-models.csv.
# Skips (with a notice) what needs ../shared when it is absent.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
what=${2:-all}
case $what in all|models) ;; *) echo "usage: bench/small.sh [RUNS] [all|models]" >&2; exit 2;; esac
adult=$(cd ../shared/data/adult 2>/dev/null && pwd) || { echo "skipping: ../shared/data/adult not found"; exit 0; }
arx=$(cd ../shared/peers/arx 2>/dev/null && pwd)/arx || true
[ -x "$arx" ] || { echo "notice: ../shared/peers/arx not found, ARX rows skipped"; arx=""; }
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/kanon-target}"
cargo build --release --quiet
kanon="$CARGO_TARGET_DIR/release/kanon"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
qis="age education marital-status native-country race sex workclass salary-class"
out=bench/small.csv
[ "$what" = models ] && out=bench/small-models.csv
echo "case,tool,rows,k,runs,median_s,min_s,max_s,peak_rss_mb,nodes,result" > "$out"

# Adult and its replicas (header once, rows repeated).
cp "$adult/adult.csv" "$work/adult_x1.csv"
for x in 10 100; do
  [ "$what" = all ] || break
  { head -1 "$adult/adult.csv"; for _ in $(seq "$x"); do tail -n +2 "$adult/adult.csv"; done; } > "$work/adult_x$x.csv"
done

# A kanon job over one of those files: CSV in, CSV out, as ARX does (no DuckDB table).
# PRIVACY, when given, is one more line of [privacy] (a privacy model).
job() { # job FILE K OUTDIR [PRIVACY]
  {
    printf '[source]\ncsv = "%s"\ndelimiter = ";"\n' "$1"
    printf '[output]\ncsv = "%s/out.csv"\nreport = "%s/report.json"\n' "$3" "$3"
    printf '[privacy]\nk = %s\nmax_suppression = 0.01\n' "$2"
    if [ -n "${4:-}" ]; then printf '%s\n' "$4"; fi
    printf '[search]\nmetric = "glm"\nclass_column = "salary-class"\n'
    for q in $qis; do
      printf '[[quasi_identifiers]]\ncolumn = "%s"\nhierarchy = { file = "%s/hierarchy_%s.csv" }\n' "$q" "$adult" "$q"
    done
  } > "$3/job.toml"
  echo "$3/job.toml"
}

# measure CASE TOOL ROWS K RESULT -- COMMAND…: RUNS cold runs; then RESULT (a function below)
# reads what the last run wrote (its stdout is in $work/last) into $work/result.
measure() {
  local case=$1 tool=$2 rows=$3 k=$4 result=$5
  shift 6
  : > "$work/times"
  for _ in $(seq "$runs"); do
    /usr/bin/time -f "%e %M" -o "$work/t" "$@" > "$work/last" 2> "$work/err" || { cat "$work/err" >&2; exit 1; }
    cat "$work/t" >> "$work/times"
  done
  echo "$case: $tool $(awk '{print $1}' "$work/times" | sort -n | tr '\n' ' ')" >&2
  "$result"
  python3 - "$work/times" "$case" "$tool" "$rows" "$k" "$runs" "$work/last" "$work/result" >> "$out" <<'PY'
import json, statistics, sys
times = [tuple(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
secs = sorted(t for t, _ in times)
rss = max(m for _, m in times) / 1024
nodes, result = open(sys.argv[8]).read().split("|")
print(",".join([sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6], f"{statistics.median(secs):.3f}",
                f"{secs[0]:.3f}", f"{secs[-1]:.3f}", f"{rss:.0f}", nodes, result]))
PY
}

# What each tool reports (nodes checked or evaluated | the result), for measure().
cat > "$work/result.py" <<'PY'
import json, sys
kind, path = sys.argv[1], sys.argv[2]
if kind == "arx":
    r = json.loads(open(path).read().strip().splitlines()[-1])
    print(f"{r['nodes_checked']}|{';'.join(map(str, r['levels']))} suppressed {r['suppressed']}", end="")
elif kind == "arx-models":
    # bench/arx/arx-models: also the loss and the release's worst class for the sensitive column.
    r = json.loads(open(path).read().strip().splitlines()[-1])
    worst = {"max_t_equal": "max t", "min_entropy_l": "min entropy l"}
    s = (r.get("release") or {}).get("sensitive", {}).get(sys.argv[3], {})
    got = "; ".join(f"{worst[m]} {s[m]:.4f}" for m in sys.argv[4:] if s.get(m) is not None)
    print(f"{r['nodes_checked']}|{';'.join(map(str, r['levels']))} suppressed {r['suppressed']}"
          f" (loss {float(r['info_loss']):.4f}{'; ' + got if got else ''})", end="")
elif kind == "run":
    r = json.load(open(path))
    node = ";".join(str(v) for v in r["node"].values())
    print(f"{r['nodes_evaluated']}|{node} suppressed {r['suppressed']} ({r['algorithm']}; {r['evaluator']})", end="")
else:
    r = json.load(open(path))
    e = r["exhaustive"]
    true = f"; true front {e['true_front_size']} recall {e['recall']:.3f}" if e else ""
    print(f"{r['nodes_evaluated']}|front {len(r['front'])} ({r['method']}; {r['evaluated_percent']:.1f}% evaluated{true})", end="")
PY
arx_result() { python3 "$work/result.py" arx "$work/last" > "$work/result"; }
arx_tcl_result() { python3 "$work/result.py" arx-models "$work/last" occupation max_t_equal > "$work/result"; }
arx_ent_result() { python3 "$work/result.py" arx-models "$work/last" occupation min_entropy_l > "$work/result"; }
arx_lim_result() { python3 "$work/result.py" arx-models "$work/last" occupation > "$work/result"; }
run_result() { python3 "$work/result.py" run "$dir/report.json" > "$work/result"; }
pareto_result() { python3 "$work/result.py" pareto "$dir/p.json" > "$work/result"; }

xs="1 10 100"
[ "$what" = models ] && xs=1
for x in $xs; do
  k=$((5 * x))
  rows=$(($(wc -l < "$work/adult_x$x.csv") - 1))
  dir="$work/x$x" && mkdir -p "$dir"
  j=$(job "$work/adult_x$x.csv" "$k" "$dir")
  if [ -n "$arx" ]; then
    measure "adult_x$x run" arx "$rows" "$k" arx_result -- "$arx" --data "$work/adult_x$x.csv" --hier "$adult" \
      --qis "${qis// /,}" --k "$k" --budget 0.01 --metric loss --out "$dir/arx.csv"
  fi
  algorithms="default"
  [ "$x" = 1 ] && [ "$what" = all ] && algorithms="default incognito topdown exhaustive"
  for a in $algorithms; do
    flag=() && [ "$a" != default ] && flag=(--algorithm "$a")
    measure "adult_x$x run" "kanon $a" "$rows" "$k" run_result -- "$kanon" run "$j" --quiet "${flag[@]}"
  done
  if [ "$x" = 1 ] && [ "$what" = all ]; then
    for metric in glm dm; do
      for method in exact poka; do
        measure "adult_x1 pareto $metric" "kanon pareto $method" "$rows" "" pareto_result -- \
          "$kanon" pareto "$j" --metric "$metric" --method "$method" --quiet --json "$dir/p.json"
      done
      # The true front by evaluating every node (after the default method's search, which it checks).
      measure "adult_x1 pareto $metric" "kanon pareto --exhaustive" "$rows" "" pareto_result -- \
        "$kanon" pareto "$j" --metric "$metric" --exhaustive --quiet --json "$dir/p.json"
    done
  fi
done

# Privacy models on adult_x1 (occupation sensitive), k = 5, 1%: ARX and kanon with each
# model; kanon without it is the adult_x1 run / kanon default row above.
rows=$(($(wc -l < "$work/adult_x1.csv") - 1))
# Exact k-map and δ-presence: the source is every third row, the population all
# of adult_x1 (ARX: DataSubset of the same rows of the whole table).
awk 'NR == 1 || (NR - 2) % 3 == 0' "$work/adult_x1.csv" > "$work/adult_x1_subset.csv"
population="[risk]\\npopulation_table = { csv = \"$work/adult_x1.csv\", delimiter = \";\" }"
models=(
  "t=0.2 equal|t_closeness = { column = \"occupation\", t = 0.2 }|--t-equal occupation:0.2|arx_tcl_result"
  "l=3 entropy|l_diversity = { column = \"occupation\", l = 3, kind = \"entropy\" }|--l-entropy occupation:3|arx_ent_result"
  "average risk 0.05|average_risk = 0.05|--avg-risk 0.05|arx_lim_result"
  "average risk relaxed|average_risk = { average = 0.1, highest = 0.2, records_at_risk = 0.05 }|--avg-risk 0.1:0.2:0.05|arx_lim_result"
  "sample uniqueness 0.01|sample_uniqueness = 0.01|--sample-uniq 0.01|arx_lim_result"
  "population uniqueness 0.01|population_uniqueness = { threshold = 0.01 }|--pop-uniq 0.01:dankar|arx_lim_result"
  "k-map 10|k_map = { k = 10, significance = 0.01 }|--k-map 10:0.01:poisson|arx_lim_result"
  "exact k-map 5|k_map = { k = 5 }\\n$population|--k-map-exact 5|arx_lim_result|subset"
  "delta-presence 0-0.5|delta_presence = { min = 0.0, max = 0.5 }\\n$population|--d-presence 0.0:0.5|arx_lim_result|subset"
)
arxm=bench/arx/arx-models
if [ -n "$arx" ]; then "$arxm" --compile; fi # compiled once here, not inside a timed run
i=0
for m in "${models[@]}"; do
  IFS='|' read -r name privacy arxflag arxres subset <<< "$m"
  i=$((i + 1)) && dir="$work/x1-model$i" && mkdir -p "$dir"
  source="$work/adult_x1.csv" case_rows=$rows arxsubset=""
  if [ -n "$subset" ]; then
    source="$work/adult_x1_subset.csv" case_rows=$(($(wc -l < "$source") - 1)) arxsubset="--subset-every 3"
  fi
  j=$(job "$source" 5 "$dir" "$(printf '%b' "$privacy")")
  if [ -n "$arx" ]; then
    measure "adult_x1 $name" arx "$case_rows" 5 "$arxres" -- "$arxm" --data "$work/adult_x1.csv" --hier "$adult" \
      --qis "${qis// /,}" --k 5 --budget 0.01 --metric loss $arxflag $arxsubset --out "$dir/arx.csv"
  fi
  # Until kanon run accepts the model, say so and go on (no row) rather than stop the benchmark.
  if "$kanon" run "$j" --quiet > /dev/null 2> "$work/err"; then
    measure "adult_x1 $name" "kanon default" "$case_rows" 5 run_result -- "$kanon" run "$j" --quiet
  else
    echo "notice: kanon run fails on the $name job, its rows skipped:" >&2
    head -5 "$work/err" >&2
  fi
done

# SafePub ([privacy] differential_privacy; issue 57) on adult_x1: epsilon 2, delta 1e-6, search
# epsilon 0.1 over 300 steps, loss; ARX by bench/arx/arx-safepub (SafePub.java), kanon on the
# same job without k and max_suppression. Both whole processes, RUNS cold runs each.
dir="$work/x1-dp" && mkdir -p "$dir"
j=$(job "$work/adult_x1.csv" 5 "$dir" 'differential_privacy = { epsilon = 2.0, delta = 1e-6, search_epsilon = 0.1, steps = 300, seed = 1 }')
sed -i '/^k = 5$/d; /^max_suppression = /d' "$j"
arx_dp_result() {
  python3 - "$work/last" > "$work/result" <<'PY'
import json, sys
r = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
print(f"{r['nodes_checked']}|{';'.join(map(str, r['levels']))} released {r['released']}", end="")
PY
}
if [ -n "$arx" ]; then
  bench/arx/arx-safepub --compile
  measure "adult_x1 safepub" arx "$rows" "" arx_dp_result -- bench/arx/arx-safepub --data "$work/adult_x1.csv" \
    --hier "$adult" --qis "${qis// /,}" --epsilon 2 --delta 1e-6 --search-epsilon 0.1 --steps 300 --metric loss --out "$dir/arx.csv"
fi
measure "adult_x1 safepub" "kanon default" "$rows" "" run_result -- "$kanon" run "$j" --quiet
python3 - "$out" <<'PY'
import csv, sys
rows = {(r["case"], r["tool"]): float(r["median_s"]) for r in csv.DictReader(open(sys.argv[1]))}
k, a = rows.get(("adult_x1 safepub", "kanon default")), rows.get(("adult_x1 safepub", "arx"))
print(f"safepub (adult_x1): kanon/ARX {k / a:.3f}" if k and a else "safepub: no ratio (ARX absent)", file=sys.stderr)
PY

column -s, -t < "$out"

# The ratios of median seconds: kanon / ARX per model, each tool with the model / without.
python3 - "$out" "${models[@]}" <<'PY'
import csv, sys
rows = {(r["case"], r["tool"]): float(r["median_s"]) for r in csv.DictReader(open(sys.argv[1]))}
base_k, base_a = rows.get(("adult_x1 run", "kanon default")), rows.get(("adult_x1 run", "arx"))
def ratio(a, b):
    return f"{a / b:.2f}" if a is not None and b else "n/a"
print("\nmodel (adult_x1; occupation)   kanon/ARX   kanon with/without   ARX with/without")
for m in sys.argv[2:]:
    name = m.split("|")[0]
    k, a = rows.get((f"adult_x1 {name}", "kanon default")), rows.get((f"adult_x1 {name}", "arx"))
    print(f"{name:<30} {ratio(k, a):>9}   {ratio(k, base_k):>18}   {ratio(a, base_a):>16}")
PY
