#!/usr/bin/env bash
# Record what a kanon binary writes for a fixed set of jobs, so that two
# builds (before and after a refactor) can be compared byte for byte:
#
#   tools/same-output.sh OLD_KANON /tmp/before
#   tools/same-output.sh NEW_KANON /tmp/after
#   diff -r /tmp/before /tmp/after        # empty: the same releases and reports
#
# Every run works in the same directory (so paths in reports agree) and
# records its exit code, stdout, stderr, report (without "seconds") and
# release files. Full-domain (each search, --node, memory and SQL
# evaluators), scheme (each scheme, dm/hdm/glm), cell-based (cdgh, cndgh,
# reconstruction) runs, the infeasible and bad-input exits, and pareto,
# check and hierarchy. Adult runs are added when ../shared/data/adult exists.
set -euo pipefail
kanon=$(realpath "$1")
result=$(realpath -m "$2")
here=$(cd "$(dirname "$0")/.." && pwd)
adult="$here/../shared/data/adult"
work="${TMPDIR:-/tmp}/kanon-same-output"
rm -rf "$work" "$result"
mkdir -p "$work" "$result"
cp -r "$here/fixtures/demo/." "$work/demo"
rm -rf "$work/demo/out"
cd "$work"
mkdir -p demo/out demo/out-schemes demo/out-schemes3 demo/out-cells gen/out-gen gen/out-gensql adult/out

# A job with the demo's QIs; $1 = name, $2 = extra [privacy] lines, $3 = [search] lines.
demo_job() {
    sed -e "s|out/|out-$1/|g" -e '/^l_diversity/d' -e '/^algorithm/d' -e '/^metric/d' demo/job.toml >"demo/$1.toml"
    printf '%s\n' "$2" >>"demo/$1.toml"
}

# A JSON file as written (key order and number formatting kept), with the
# numbers of any "seconds" (a number or an object of them) masked.
mask_seconds='
import re, sys
text = open(sys.argv[1]).read()
mask = lambda m: re.sub(r"-?[0-9][0-9.eE+-]*", "T", m.group(0))
sys.stdout.write(re.sub(r"\"seconds\": ([{][^}]*[}]|[0-9.eE+-]+)", mask, text))'

# run NAME ARGS...: one kanon invocation, its outputs recorded under NAME.
run() {
    local name=$1
    shift
    local dir="$result/$name"
    mkdir -p "$dir"
    set +e
    env -u KANON_TRACE "$kanon" "$@" >"$dir/stdout" 2>"$dir/stderr"
    echo $? >"$dir/exit"
    set -e
    # Paths of the binary and timings ("0.18 s") differ from run to run.
    sed -i -e "s|$kanon|kanon|g" -e 's/[0-9][0-9.]* s$/<seconds> s/' "$dir/stdout" "$dir/stderr"
    # The files the run wrote: reports without their timings, releases as
    # they are (a database's table is compared through its CSV copy).
    for f in $(find "$work" -path '*/out*' -type f -newer "$result/.stamp" | sort); do
        local rel=${f#"$work"/}
        mkdir -p "$dir/files/$(dirname "$rel")"
        case "$f" in
        *.json) python3 -c "$mask_seconds" "$f" >"$dir/files/$rel" ;;
        *.duckdb | *.wal) ;;
        *) cp "$f" "$dir/files/$rel" ;;
        esac
    done
    touch "$result/.stamp"
}
touch "$result/.stamp"

# Full-domain runs on the demo.
run demo run demo/job.toml --quiet
for a in incognito topdown exhaustive auto; do
    for m in glm dm precision height; do
        run "demo-$a-$m" run demo/job.toml --quiet --algorithm "$a" --metric "$m"
    done
done
run demo-node run demo/job.toml --quiet --node zip=2,age=1,birth_date=2,sex=1,education=1
run demo-node-infeasible run demo/job.toml --quiet --node zip=0,age=0,birth_date=0,sex=0,education=0
run demo-k-above-rows run demo/job.toml --quiet --k 100000
run demo-infeasible run demo/job.toml --quiet --k 40 --max-suppression 0
run demo-check check demo/job.toml --table patients_k3
run demo-check-json check demo/job.toml --table patients_k3 --json
run demo-hierarchy hierarchy demo/job.toml
run demo-hierarchy-sps hierarchy demo/job.toml --scheme sps
run demo-pareto pareto demo/job.toml --quiet --json demo/out/front.json --csv demo/out/front.csv
run demo-pareto-poka pareto demo/job.toml --quiet --method poka --json demo/out/poka.json
run demo-pareto-pbg pareto demo/job.toml --quiet --objectives k,l,glm --json demo/out/pbg.json --csv demo/out/pbg.csv
run demo-pareto-exhaustive pareto demo/job.toml --quiet --objectives k,glm,dm --method exhaustive --json demo/out/ex.json

# Scheme runs (no ℓ: the schemes do not take it) on sex and education (the
# searches are exponential in a QI's values: OPS has 2^(n-1) partitions),
# and GSPS with zip too.
demo_job schemes ''
demo_job schemes3 ''
python3 - demo/schemes.toml demo/schemes3.toml <<'PY'
import sys
for p, qis in ((sys.argv[1], ("sex", "education")), (sys.argv[2], ("zip", "sex", "education"))):
    blocks = open(p).read().split("[[quasi_identifiers]]")
    keep = [b for b in blocks[1:] if any(f'"{q}"' in b for q in qis)]
    open(p, "w").write(blocks[0] + "".join("[[quasi_identifiers]]" + b for b in keep))
PY
for s in bhs ops gops sps gsps hs ghs; do
    for m in dm hdm glm; do
        run "schemes-$s-$m" run demo/schemes.toml --quiet --scheme "$s" --metric "$m" --k 2
    done
done
run schemes3-gsps run demo/schemes3.toml --quiet --scheme gsps --metric hdm --k 2
run schemes-pruning-off run demo/schemes.toml --quiet --scheme sps --k 2 --pruning-off dp,classes,blocks,stuck
run schemes-capped run demo/schemes.toml --quiet --scheme gsps --k 4 --max-suppression 1
run schemes-l run demo/job.toml --quiet --scheme sps

# Cell-based runs.
demo_job cells ''
for a in cdgh cndgh; do
    run "cells-$a" run demo/cells.toml --quiet --algorithm "$a" --k 3 --reconstruct demo/out-cells/recon.csv --seed 7
    run "cells-$a-l" run demo/job.toml --quiet --algorithm "$a" --report demo/out/cells-report.json
done
run cells-capped run demo/cells.toml --quiet --algorithm cdgh --k 5 --max-suppression 0
run cells-node run demo/cells.toml --quiet --algorithm cdgh --node zip=1,age=1,birth_date=1,sex=1,education=1

# A generated extract, memory evaluator and SQL evaluator.
mkdir -p gen
run generate generate --rows 20000 --seed 3 --database gen/people.duckdb --table people --quiet
sed -i 's|^report = .*|report = "out-gen/report.json"\ncsv = "out-gen/people.csv"|' gen/people.job.toml
run gen-run run gen/people.job.toml --quiet
run gen-run-k50 run gen/people.job.toml --quiet --k 50 --metric dm
# The same on the SQL evaluator (base sets above 10 rows stay in DuckDB).
sed -e 's|^# \[engine\]|[engine]\nmemory_rows = 10|' -e 's|out-gen/|out-gensql/|' gen/people.job.toml >gen/sql.job.toml
run gen-sql run gen/sql.job.toml --quiet --algorithm incognito
run gen-sql-topdown run gen/sql.job.toml --quiet --algorithm topdown --metric dm
run gen-cells run gen/people.job.toml --quiet --algorithm cndgh --k 10

# Adult, when the shared data is here.
if [ -d "$adult" ]; then
    cp "$adult"/*.csv adult/
    cat >adult/job.toml <<'EOF'
[source]
csv = "adult.csv"
[output]
csv = "out/adult-k.csv"
report = "out/report.json"
[privacy]
k = 5
max_suppression = 0.02
[search]
metric = "glm"
EOF
    for q in age education marital-status native-country race sex workclass; do
        printf '[[quasi_identifiers]]\ncolumn = "%s"\nhierarchy = { file = "hierarchy_%s.csv" }\n' "$q" "$q" >>adult/job.toml
    done
    run adult run adult/job.toml --quiet
    run adult-dm run adult/job.toml --quiet --metric dm --k 10 --algorithm incognito
    run adult-bhs run adult/job.toml --quiet --scheme bhs --metric hdm --k 10
    run adult-cdgh run adult/job.toml --quiet --algorithm cdgh --k 10 --reconstruct adult/out/recon.parquet
else
    echo "same-output: ../shared/data/adult not found; Adult runs skipped" >&2
fi
rm -f "$result/.stamp"
echo "recorded $(ls "$result" | wc -l) runs in $result"
