#!/usr/bin/env bash
# PBG-EA (kanon pareto --objectives, --method pbg-ea) on Adult, as in Dewri et
# al.'s Table 1: occupation sensitive, the other 8 columns QIs (4,320 nodes;
# for {k, glm, cm} salary-class is the class label, not a QI: 2,160 nodes),
# 1% budget, ε all ones, population 25, 100 iterations, 20 seeds per objective
# set, each run compared with the exhaustive minimal set (--exhaustive): mean
# and variance of RR and of CE per solution, mean distinct evaluations and their
# share of the lattice, mean seconds of the search. Then the same on a deeper
# lattice (17,920 nodes: one level added to marital-status, education,
# native-country and workclass, two to age, each new level pairing the values
# under one parent), the paper's size. Last, one whole PBG-EA process
# ({k, l, glm}) against ARX's one k = 5, 1% job, timed side by side.
#
# Usage: bench/pbg.sh [SEEDS]   (default 20). Writes bench/pbg.csv.
# Skips with a notice when ../shared/data/adult is absent (ARX's row when the
# peer is absent).
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${1:-20}
adult=$(cd ../shared/data/adult 2>/dev/null && pwd) || { echo "bench/pbg.sh: ../shared/data/adult is absent; skipped"; exit 0; }
arx=$(cd ../shared/peers/arx 2>/dev/null && pwd)/arx || true
[ -x "$arx" ] || { echo "notice: ../shared/peers/arx not found, the ARX row is skipped"; arx=""; }
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/kanon-target}
cargo build --release --quiet
kanon=$CARGO_TARGET_DIR/release/kanon
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Deeper hierarchies: insert a level above level L of FILE, pairing the values
# of level L that share a parent (in order of first appearance).
deepen() { # deepen IN OUT L
  python3 - "$1" "$2" "$3" <<'PY'
import sys
rows = [l.rstrip("\n").split(";") for l in open(sys.argv[1]) if l.strip()]
lvl = int(sys.argv[3])
seen = {}
out = []
for r in rows:
    parent, value = tuple(r[lvl + 1:]), r[lvl]
    kids = seen.setdefault(parent, [])
    if value not in kids:
        kids.append(value)
    pair = kids.index(value) // 2
    out.append(r[:lvl + 1] + [f"{r[lvl + 1]}#{pair}"] + r[lvl + 1:])
open(sys.argv[2], "w").write("".join(";".join(r) + "\n" for r in out))
PY
}
mkdir -p "$work/deep"
for f in "$adult"/hierarchy_*.csv; do cp "$f" "$work/deep/"; done
deepen "$adult/hierarchy_marital-status.csv" "$work/deep/hierarchy_marital-status.csv" 0
deepen "$adult/hierarchy_education.csv" "$work/deep/hierarchy_education.csv" 0
deepen "$adult/hierarchy_native-country.csv" "$work/deep/hierarchy_native-country.csv" 0
deepen "$adult/hierarchy_workclass.csv" "$work/deep/hierarchy_workclass.csv" 0
deepen "$adult/hierarchy_age.csv" "$work/age1.csv" 0
deepen "$work/age1.csv" "$work/deep/hierarchy_age.csv" 2

job() { # job HIERARCHY-DIR CLASS-COLUMN QIS… > job.toml   (CLASS-COLUMN may be "")
  local dir=$1 label=$2
  shift 2
  printf '[source]\ncsv = "%s/adult.csv"\ndelimiter = ";"\n[output]\ncsv = "%s/out.csv"\n' "$adult" "$work"
  printf '[privacy]\nk = 5\nmax_suppression = 0.01\n'
  if [ -n "$label" ]; then printf '[search]\nclass_column = "%s"\n' "$label"; fi
  for q in "$@"; do
    printf '[[quasi_identifiers]]\ncolumn = "%s"\nhierarchy = { file = "%s/hierarchy_%s.csv" }\n' "$q" "$dir" "$q"
  done
}
seven="sex age race marital-status education native-country workclass"
job "$adult" "" $seven salary-class > "$work/job8.toml"
job "$adult" salary-class $seven > "$work/job7.toml"
job "$work/deep" "" $seven salary-class > "$work/deep8.toml"
job "$work/deep" salary-class $seven > "$work/deep7.toml"

out=bench/pbg.csv
echo "lattice,objectives,seeds,lattice_size,rr_mean,rr_var,ce_per_solution_mean,ce_per_solution_var,evaluated_mean,evaluated_share,solutions_mean,minimal,seconds_mean" > "$out"
for lattice in adult deep; do
  for objectives in k,glm k,l,glm sk,glm sk,sl,glm k,glm,cm; do
    if [ "$lattice" = adult ]; then j=$work/job8.toml; else j=$work/deep8.toml; fi
    if [ "$objectives" = k,glm,cm ]; then j=${j%8.toml}7.toml; fi
    for s in $(seq 0 $((seeds - 1))); do
      "$kanon" pareto "$j" --objectives "$objectives" --sensitive occupation --method pbg-ea --seed "$s" \
        --exhaustive --quiet --json "$work/r$s.json" > /dev/null
    done
    python3 - "$work" "$seeds" "$lattice" "$objectives" >> "$out" <<'PY'
import json, statistics, sys
work, seeds, lattice, objectives = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
rs = [json.load(open(f"{work}/r{s}.json")) for s in range(seeds)]
rr = [r["comparison"]["rr"] for r in rs]
ce = [r["comparison"]["ce_per_solution"] for r in rs]
ev = [r["nodes_evaluated"] for r in rs]
size = rs[0]["lattice_size"]
var = lambda x: statistics.pvariance(x) if len(x) > 1 else 0.0
print(f'{lattice},"{objectives}",{seeds},{size},{statistics.mean(rr):.4f},{var(rr):.6f},'
      f'{statistics.mean(ce):.3e},{var(ce):.3e},{statistics.mean(ev):.1f},{statistics.mean(ev) / size:.4f},'
      f'{statistics.mean(len(r["solutions"]) for r in rs):.1f},{rs[0]["comparison"]["minimal"]},'
      f'{statistics.mean(r["seconds"] for r in rs):.2f}')
PY
    tail -1 "$out"
  done
done

# Whole processes, side by side: PBG-EA {k, l, glm} against ARX k = 5, 1%.
echo "tool,job,seconds" > bench/pbg-vs-arx.csv
for run in 1 2 3; do
  /usr/bin/time -f "%e" -o "$work/t" "$kanon" pareto "$work/job8.toml" --objectives k,l,glm --sensitive occupation \
    --quiet > /dev/null
  echo "kanon,pareto pbg-ea k-l-glm 100 iterations,$(cat "$work/t")" | tee -a bench/pbg-vs-arx.csv
  if [ -n "$arx" ]; then
    /usr/bin/time -f "%e" -o "$work/t" "$arx" --data "$adult/adult.csv" --hier "$adult" \
      --qis sex,age,race,marital-status,education,native-country,workclass,salary-class --k 5 --budget 0.01 > /dev/null
    echo "arx,k=5 1% loss,$(cat "$work/t")" | tee -a bench/pbg-vs-arx.csv
  fi
done
