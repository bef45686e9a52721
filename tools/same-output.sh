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
# Then every subcommand's --help, more check runs (failing, --json, --svg,
# the risk fixture's population table), init (CSV, DuckDB, Parquet, a CSV
# with NULLs, its exit-2 cases, and runs of the jobs it writes), nightly
# runs (reuse, pseudonyms, drift) and history, limit, and the same kinds of
# runs on PostgreSQL and Spark when their servers start (tools/pg-server.sh,
# tools/spark-server.sh; without them a notice and those runs are skipped,
# so compare two recordings made with the same servers at hand). Remote
# releases are read back sorted on every column (psql; a local pyspark).
#
# Masked, as they differ from run to run: timings ("0.18 s", "seconds" in
# JSON, the history's seconds column), the history's started_at timestamps,
# the binary's path and the working folder. KANON_SAME_OUTPUT_SERVERS
# ("postgres spark" by default) picks the servers to try; the ports are fixed
# (job files and so history rows quote them): KANON_PG_PORT (15442) and
# KANON_SPARK_PORT (15012).
set -euo pipefail
kanon=$(realpath "$1")
result=$(realpath -m "$2")
here=$(cd "$(dirname "$0")/.." && pwd)
adult="$here/../shared/data/adult"
work="${TMPDIR:-/tmp}/kanon-same-output"
rm -rf "$work" "$result"
mkdir -p "$work" "$result"
# Called through a link named kanon: clap's usage lines say argv[0]'s name.
mkdir -p "$work/bin"
ln -s "$kanon" "$work/bin/kanon"
# Settings a caller's environment could bring in; the runs set their own.
unset KANON_KEY KANON_TRACE KANON_SPARK_MESSAGE_BYTES PGPASSWORD PGPASSFILE PGSSLMODE PGSSLROOTCERT
cp -r "$here/fixtures/demo/." "$work/demo"
rm -rf "$work/demo/out"
cd "$work"
mkdir -p demo/out demo/out-schemes demo/out-schemes3 demo/out-cells gen/out-gen gen/out-gensql adult/out

# A job with the demo's QIs; $1 = name, $2 = extra [privacy] lines, $3 = [search] lines.
demo_job() {
    sed -e "s|out/|out-$1/|g" -e '/^l_diversity/d' -e '/^algorithm/d' -e '/^metric/d' demo/job.toml >"demo/$1.toml"
    printf '%s\n' "$2" >>"demo/$1.toml"
}

# mask KANON WORK FILE...: in place, what differs from run to run and
# nothing else. Each mask, and why:
# - the binary's path and the working folder (a link's or a temporary path);
# - "0.18 s" at a line's end or before ";", "," or ")": a run's time;
# - a JSON "seconds" or "..._seconds" value (a number, or an object of
#   them), whether pretty-printed or compact (limit): timings;
# - ISO timestamps (2026-11-28T02:02:55.607494Z, the history's started_at):
#   each digit becomes #, so the history's columns keep their widths;
# - the history table's seconds column (a run's time), the whole cell.
mask='
import re, sys
kanon, work = sys.argv[1], sys.argv[2]
digits = lambda m: re.sub(r"-?[0-9][0-9.eE+-]*", "T", m.group(0))
for path in sys.argv[3:]:
    text = open(path, encoding="utf-8", errors="surrogateescape").read()
    text = text.replace(work + "/bin/kanon", "kanon").replace(kanon, "kanon").replace(work, "<work>")
    text = re.sub(r"[0-9][0-9.]* s(?=$|[;,)])", "<seconds> s", text, flags=re.M)
    text = re.sub(r"\"(\w+_)?seconds\": ?([{][^}]*[}]|-?[0-9][0-9.eE+-]*)", digits, text)
    text = re.sub(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?Z",
                  lambda m: re.sub("[0-9]", "#", m.group(0)), text)
    lines, cut = text.split("\n"), None
    for i, line in enumerate(lines):
        if re.match(r"started_at +model +.* seconds +node$", line):
            cut = (line.index(" seconds ") + 1, line.index(" node") + 1)
        elif cut and line.startswith("####-"):
            a, b = cut
            lines[i] = line[:a] + "<s>".ljust(b - a) + line[b:]
        else:
            cut = None
    open(path, "w", encoding="utf-8", errors="surrogateescape").write("\n".join(lines))'

# run NAME ARGS...: one kanon invocation, its outputs recorded under NAME.
run() {
    local name=$1
    shift
    local dir="$result/$name"
    mkdir -p "$dir"
    set +e
    env -u KANON_TRACE "$work/bin/kanon" "$@" >"$dir/stdout" 2>"$dir/stderr"
    echo $? >"$dir/exit"
    set -e
    python3 -c "$mask" "$kanon" "$work" "$dir/stdout" "$dir/stderr"
    # The files the run wrote: reports without their timings, releases as
    # they are (a database's table is compared through its CSV copy).
    for f in $(find "$work" -path '*/out*' -type f -newer "$result/.stamp" | sort); do
        local rel=${f#"$work"/}
        mkdir -p "$dir/files/$(dirname "$rel")"
        case "$f" in
        *.json) cp "$f" "$dir/files/$rel" && python3 -c "$mask" "$kanon" "$work" "$dir/files/$rel" ;;
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

# Each subcommand's help, as clap prints it: the options, their defaults and
# the long help are output too.
run help --help
run version --version
for c in run check hierarchy pareto generate limit init history; do
    run "help-$c" "$c" --help
done

# check on a release of its own (demo/out-check): the source (fails: exit
# 4), the release (meets the job), the release against a stricter job (k =
# 10, entropy ℓ, t-closeness: exit 4, a line per failing model) and against
# recursive ℓ, as text, --json and --svg; a missing table (exit 2).
# stricter NAME: demo/NAME-strict.toml, NAME's job with k = 10, entropy ℓ and t-closeness.
stricter() {
    sed -e 's/^k = 3/k = 10/' \
        -e 's|l = 2 }|l = 2, kind = "entropy" }\nt_closeness = { column = "diagnosis", t = 0.2 }|' "demo/$1.toml" >"demo/$1-strict.toml"
}
sed 's|out/|out-check/|g' demo/job.toml >demo/check.toml
stricter check
sed 's|l = 2 }|l = 3, kind = "recursive", c = 2 }|' demo/check.toml >demo/recursive.toml
mkdir -p demo/out-check
run check-run run demo/check.toml --quiet
run check-source check demo/check.toml
run check-source-json check demo/check.toml --json
run check-source-svg check demo/check.toml --svg demo/out-check/source.svg
run check-table check demo/check.toml --table patients_k3
run check-table-json check demo/check.toml --table patients_k3 --json
run check-table-svg check demo/check.toml --table patients_k3 --svg demo/out-check/release.svg
run check-strict check demo/check-strict.toml --table patients_k3
run check-strict-json check demo/check-strict.toml --table patients_k3 --json
run check-recursive check demo/recursive.toml --table patients_k3 --json
run check-missing-table check demo/check.toml --table no_such_table
run check-gen check gen/people.job.toml --table people_k5 --json

# The risk fixture (fixtures/risk): a population table for the journalist
# and marketer figures, a lower threshold; run, then check the source and
# the release (against a population size; against the population table, which
# check reads as it is, the release's "*" classes are not in it: exit 2).
cp -r "$here/fixtures/risk" risk
mkdir -p risk/out
cat >risk/job.toml <<'TOML'
[source]
csv = "sample.csv"
[output]
database = "out/risk.duckdb"
table = "sample_k2"
csv = "out/sample_k2.csv"
report = "out/report.json"
drop = ["id"]
[privacy]
k = 2
max_suppression = 0.1
[risk]
threshold = 0.1
population_table = { csv = "population.csv" }
[[quasi_identifiers]]
column = "age_band"
hierarchy = "suppress"
[[quasi_identifiers]]
column = "sex"
hierarchy = "suppress"
[[quasi_identifiers]]
column = "zip3"
hierarchy = "suppress"
TOML
sed 's|^population_table = .*|population = 1000|' risk/job.toml >risk/population.toml
run risk-run run risk/job.toml --quiet
run risk-check check risk/job.toml --svg risk/out/source.svg
run risk-check-json check risk/job.toml --json
run risk-check-population check risk/population.toml --json
run risk-check-table check risk/population.toml --table sample_k2 --json --svg risk/out/release.svg
run risk-check-table-not-in-population check risk/job.toml --table sample_k2

# init: the job it writes (every choice a comment) and what it says, for the
# demo's CSV, a DuckDB release table (named in another case), the generated
# extract's only table, a Parquet file and a CSV with NULLs and one column of
# each kind init tells apart; then a run of each job it wrote (for a DuckDB
# source a copy that also writes a CSV, as init's writes only a database);
# and its exit-2 cases. Each job goes in an out-init-* folder of its own.
mkdir -p demo/out-init-csv demo/out-init-db demo/out-init-parquet demo/out-parquet gen/out-init init/out-mixed init/out-noqi
# with_csv JOB CSV: a copy of JOB (JOB's stem + -csv.toml) that also writes the release to CSV.
with_csv() {
    sed "/^report = /a csv = \"$2\"" "$1" >"${1%.toml}-csv.toml"
}
run init-csv init demo/patients.csv --out demo/out-init-csv/job.toml
run init-csv-run run demo/out-init-csv/job.toml --quiet
run init-db init demo/out-check/demo.duckdb --table PATIENTS_K3 --out demo/out-init-db/job.toml
with_csv demo/out-init-db/job.toml patients_k3_k5.csv
run init-db-run run demo/out-init-db/job-csv.toml --quiet
run init-gen init gen/people.duckdb --out gen/out-init/job.toml
with_csv gen/out-init/job.toml people_k5.csv
run init-gen-run run gen/out-init/job-csv.toml --quiet
# A Parquet file: the demo's rows at the lattice's bottom (k = 1), written by kanon.
sed -e '/^database = /d' -e '/^table = /d' -e '/^l_diversity/d' -e 's/^k = 3/k = 1/' -e 's|out/report.json|out-parquet/report.json|' \
    -e 's|^csv = "out/patients_k3.csv"|parquet = "out-parquet/patients.parquet"|' demo/job.toml >demo/parquet.toml
run init-parquet-source run demo/parquet.toml --quiet --node zip=0,age=0,birth_date=0,sex=0,education=0
run init-parquet init demo/out-parquet/patients.parquet --out demo/out-init-parquet/job.toml
run init-parquet-run run demo/out-init-parquet/job.toml --quiet
# 60 rows, each value a fixed function of the row number: a key, a direct
# identifier, codes and numbers with NULLs (hierarchy files), dates, a
# boolean, a constant, varied text, sensitive columns, and a column with ";"
# and NULLs (which a hierarchy file cannot hold).
python3 - >init/mixed.csv <<'PY'
import datetime
print("patient_id,email,zip,age,visit_date,smoker,country,city,income,diagnosis,weight_kg,ward_code,note")
for i in range(1, 61):
    zip_ = "" if i % 11 == 0 else "537%02d" % (i * 7 % 20)
    age = "" if i % 13 == 0 else str(18 + i * 37 % 70)
    visit = (datetime.date(2024, 1, 1) + datetime.timedelta(days=i * 53 % 700)).isoformat()
    income = "%d.%02d" % (20000 + i * 7919 % 60000, i % 100)
    note = "" if i % 7 == 0 else ["a;b", "c;d", "e"][i % 3]
    print(f"{i},p{i}@example.org,{zip_},{age},{visit},{str(i % 3 == 0).lower()},NL,Town {i % 45},{income},"
          f"{['Flu', 'Asthma', 'Diabetes', 'Migraine'][i % 4]},{50 + i * 13 % 50}.{i % 10},W{i * 3 % 40:02d},{note}")
PY
run init-mixed init init/mixed.csv --out init/out-mixed/job.toml
run init-mixed-run run init/out-mixed/job.toml --quiet
# Exit 2: the job exists (never overwritten), --table with a file, no such
# source, table or folder, several tables without --table, no column that
# looks like a quasi-identifier.
run init-exists init demo/patients.csv --out demo/out-init-csv/job.toml
run init-table-csv init demo/patients.csv --table patients --out demo/out-init-csv/other.toml
run init-missing init demo/no-such.csv --out demo/out-init-csv/missing.toml
run init-unknown-table init gen/people.duckdb --table nobody --out gen/out-init/unknown.toml
run init-no-folder init demo/patients.csv --out demo/no-such-folder/job.toml
run init-tables init demo/out-check/demo.duckdb --out demo/out-init-db/tables.toml
seq 1 30 | sed 's/.*/&,user&@example.org/' | sed '1i id,email' >init/noqi.csv
run init-no-qi init init/noqi.csv --out init/out-noqi/job.toml

# Nightly runs (docs/nightly.md): [search] reuse and a pseudonymized id on
# the demo; night 1 (no previous report: a search), night 2 (the same rows:
# reused), night 3 (60 of the 74 rows), then k = 10 (the node fails: a
# warning and a search), --compare, --reuse=required failing (exit 3),
# --node with reuse and a missing key (exit 2), and the history of them all.
cp demo/patients.csv demo/night.csv
sed -e 's|out/|out-nightly/|g' -e 's|^csv = "patients.csv"|csv = "night.csv"|' \
    -e 's|^drop = .*|drop = ["name", "ssn"]\npseudonymize = ["id"]|' \
    -e 's|^metric = "glm"|metric = "glm"\nreuse = "previous"|' demo/job.toml >demo/nightly.toml
mkdir -p demo/out-nightly
run nightly-history-empty history demo/nightly.toml
run nightly-no-key run demo/nightly.toml --quiet
KANON_KEY=same-output-key run nightly-1 run demo/nightly.toml --quiet
KANON_KEY=same-output-key run nightly-2 run demo/nightly.toml --quiet
head -n 61 demo/patients.csv >demo/night.csv
KANON_KEY=same-output-key run nightly-3 run demo/nightly.toml --quiet
KANON_KEY=same-output-key run nightly-k10 run demo/nightly.toml --quiet --k 10
KANON_KEY=same-output-key run nightly-compare run demo/nightly.toml --quiet --k 5 --compare
KANON_KEY=same-output-key run nightly-required run demo/nightly.toml --quiet --k 20 --reuse=required
KANON_KEY=same-output-key run nightly-off run demo/nightly.toml --quiet --k 4 --reuse off
KANON_KEY=same-output-key run nightly-node run demo/nightly.toml --quiet --node zip=2,age=3,birth_date=3,sex=0,education=2
run nightly-history history demo/nightly.toml
run nightly-history-json history demo/nightly.toml --json

# history of the other jobs: every demo/job.toml run above (its searches,
# metrics, nodes, schemes and cells), the generated extract's, a job with
# [output] history = false (nothing recorded), and a files-only job (exit 2).
run history-demo history demo/job.toml
run history-demo-json history demo/job.toml --json
run history-gen history gen/people.job.toml --json
sed -e 's|out-check/|out-nohistory/|g' -e 's|^drop = .*|&\nhistory = false|' demo/check.toml >demo/nohistory.toml
mkdir -p demo/out-nohistory
run history-off-run run demo/nohistory.toml --quiet
run history-off history demo/nohistory.toml
run history-files-only history demo/parquet.toml

# limit: its JSON line (the timings masked; the rows, combinations and how it
# wrote are not) for the GROUP BY, --scan, --hashed and --plain-only, on the
# demo, a Parquet output and the generated extract; a level above its
# hierarchy (exit 2).
demo_node=zip=2,age=3,birth_date=3,sex=0,education=2
run limit-demo limit demo/check.toml --node "$demo_node" --quiet
run limit-demo-scan limit demo/check.toml --node "$demo_node" --quiet --scan
run limit-demo-hashed limit demo/check.toml --node "$demo_node" --quiet --hashed
run limit-demo-plain limit demo/check.toml --node "$demo_node" --quiet --plain-only
run limit-parquet limit demo/parquet.toml --node zip=1,age=1,birth_date=1,sex=1,education=1 --quiet
run limit-gen limit gen/people.job.toml --node "$(sed -n 's/.* at node \([^:]*\):.*/\1/p' "$result/gen-run/stdout")" --quiet
run limit-above-height limit demo/check.toml --node zip=9,age=3,birth_date=3,sex=0,education=2 --quiet

# The remote engines, when their servers start: a run, a second run into the
# same release, --node, another search and metric, two nightly runs (reuse,
# pseudonyms), check (source, release, --json, --svg, a stricter job),
# history, pareto, and the engine's exit-2 refusals (limit, a scheme). Each
# release is read back sorted on every column, with its columns' types.
servers="${KANON_SAME_OUTPUT_SERVERS-postgres spark}"
export KANON_PG_PORT="${KANON_PG_PORT:-15442}" KANON_SPARK_PORT="${KANON_SPARK_PORT:-15012}"
# shellcheck source=pg-server.sh
. "$here/tools/pg-server.sh"
# shellcheck source=spark-server.sh
. "$here/tools/spark-server.sh"
# The servers started here stop on any exit (by their process ids).
trap 'stop_server; stop_pg' EXIT
trap 'exit 130' INT TERM
mkdir -p demo/out-remote

# remote_job NAME ENGINE SOURCE TABLE [OUTPUT]: demo/NAME.toml, the demo's
# job (privacy, search, QIs) on an engine ([engine] lines ENGINE, [source]
# line SOURCE), released to TABLE, its report in demo/out-remote.
remote_job() {
    {
        printf '[engine]\n%s\n[source]\n%s\n[output]\ntable = "%s"\nreport = "out-remote/%s.json"\n' "$2" "$3" "$4" "$1"
        printf 'drop = ["name", "ssn"]\n%s\n\n' "${5:-}"
        sed -n '/^\[privacy\]/,$p' demo/job.toml
    } >"demo/$1.toml"
}
# A feasible node that is not the optimum, for the --node runs.
remote_node=zip=2,age=3,birth_date=3,sex=1,education=2
# The demo's columns as DuckDB reads its CSV (Spark's names; PostgreSQL's with text).
demo_types="id BIGINT, name STRING, ssn STRING, zip BIGINT, age BIGINT, birth_date DATE, sex STRING, education STRING, diagnosis STRING"

if [[ " $servers " != *" postgres "* ]]; then
    echo "same-output: PostgreSQL not asked for (KANON_SAME_OUTPUT_SERVERS); its runs skipped" >&2
elif ! start_pg; then
    echo "same-output: no PostgreSQL server (see the notice above); its runs skipped" >&2
else
    # The password goes by PGPASSWORD, so the jobs' text (and their
    # job_sha256 in the history) is the same from run to run.
    pg_password=${pg_url#postgresql://kanon:}
    export PGPASSWORD=${pg_password%%@*}
    psql=("$(pg_bindir)/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$pg_port" -U kanon -d postgres)
    "${psql[@]}" <<SQL
CREATE SCHEMA so;
CREATE TABLE so.patients (${demo_types//STRING/text});
\copy so.patients FROM '$work/demo/patients.csv' WITH (FORMAT csv, HEADER true)
ANALYZE so.patients;
SQL
    # pg_rows NAME TABLE: TABLE's columns and types, and its rows sorted
    # (ORDER BY the row: column by column), recorded under run NAME.
    pg_rows() {
        local f="$result/$1/files/postgres/$2"
        mkdir -p "$(dirname "$f")"
        if [ "$("${psql[@]}" -A -t -c "SELECT to_regclass('$2') IS NULL")" = t ]; then
            echo "no table $2" >"$f.missing"
            return
        fi
        "${psql[@]}" -A -t -c "SELECT attname || ' ' || format_type(atttypid, atttypmod) FROM pg_attribute
            WHERE attrelid = '$2'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum" >"$f.columns"
        "${psql[@]}" -c "COPY (SELECT * FROM $2 t ORDER BY t) TO STDOUT (FORMAT csv, HEADER true)" >"$f.csv"
    }
    pg_engine=$(printf 'kind = "postgres"\nurl = "postgresql://kanon@127.0.0.1:%s/postgres"' "$pg_port")
    remote_job pg "$pg_engine" 'table = "so.patients"' so.release
    remote_job pg-node "$pg_engine" 'table = "so.patients"' so.node
    remote_job pg-topdown "$pg_engine" 'table = "so.patients"' so.topdown
    remote_job pg-night "$pg_engine" 'table = "so.patients"' so.night 'pseudonymize = ["id"]'
    stricter pg
    run pg-run run demo/pg.toml --quiet
    pg_rows pg-run so.release
    run pg-node run demo/pg-node.toml --quiet --node "$remote_node"
    pg_rows pg-node so.node
    run pg-topdown-dm run demo/pg-topdown.toml --quiet --algorithm topdown --metric dm
    pg_rows pg-topdown-dm so.topdown
    KANON_KEY=same-output-key run pg-night-1 run demo/pg-night.toml --quiet --reuse
    KANON_KEY=same-output-key run pg-night-2 run demo/pg-night.toml --quiet --reuse
    pg_rows pg-night-2 so.night
    run pg-check-source check demo/pg.toml
    run pg-check-table check demo/pg.toml --table so.release --svg demo/out-remote/pg-release.svg
    run pg-check-table-json check demo/pg.toml --table so.release --json
    run pg-check-strict check demo/pg-strict.toml --table so.release --json
    # Again into so.release (the checks above read the first run's): the same
    # columns, so the rows are replaced in place.
    run pg-run-k4 run demo/pg.toml --quiet --k 4
    pg_rows pg-run-k4 so.release
    run pg-history history demo/pg.toml
    run pg-history-json history demo/pg.toml --json
    run pg-pareto pareto demo/pg.toml --quiet --json demo/out-remote/pg-front.json --csv demo/out-remote/pg-front.csv
    run pg-limit limit demo/pg.toml --node zip=2,age=3,birth_date=3,sex=0,education=2 --quiet
    run pg-scheme run demo/pg.toml --quiet --scheme sps
fi

if [[ " $servers " != *" spark "* ]]; then
    echo "same-output: Spark not asked for (KANON_SAME_OUTPUT_SERVERS); its runs skipped" >&2
elif ! start_server; then
    echo "same-output: no Spark Connect server (see the notice above); its runs skipped" >&2
else
    # A local pyspark (the server's virtual environment) writes the demo as
    # Parquet for the server to read, and at the end reads the releases back
    # from the server's warehouse folder: each table's schema and its rows
    # sorted on every column, one value per tab-separated field.
    cat >spark-local.py <<'PY'
import sys
from pyspark.sql import SparkSession
s = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
s.sparkContext.setLogLevel("ERROR")
if sys.argv[1] == "write":
    _, _, csv, types, parquet = sys.argv
    s.read.option("header", True).schema(types).csv(csv).coalesce(1).write.mode("overwrite").parquet(parquet)
else:
    _, _, warehouse, tables = sys.argv
    for line in open(tables):
        table, out = line.split()
        try:
            df = s.read.parquet(f"{warehouse}/{table}")
        except Exception:
            open(out + ".missing", "w").write(f"no table {table}\n")
            continue
        with open(out + ".columns", "w") as f:
            f.writelines(f"{c.name} {c.dataType.simpleString()}\n" for c in df.schema.fields)
        with open(out + ".tsv", "w") as f:
            f.write("\t".join(df.columns) + "\n")
            for row in df.orderBy(*df.columns).collect():
                f.write("\t".join("\\N" if v is None else str(v) for v in row) + "\n")
s.stop()
PY
    "$venv/bin/python" spark-local.py write "$work/demo/patients.csv" "$demo_types" "$work/demo/patients.parquet" 2>spark-local.log
    # spark_rows NAME TABLE: read TABLE back at the end, recorded under run NAME.
    : >spark-tables
    spark_rows() {
        mkdir -p "$result/$1/files/spark"
        echo "$2 $result/$1/files/spark/$2" >>spark-tables
    }
    spark_engine=$(printf 'kind = "spark"\nurl = "sc://127.0.0.1:%s"' "$port")
    spark_source="parquet = \"$work/demo/patients.parquet\""
    remote_job spark "$spark_engine" "$spark_source" so_release
    remote_job spark-node "$spark_engine" "$spark_source" so_node
    remote_job spark-topdown "$spark_engine" "$spark_source" so_topdown
    remote_job spark-night "$spark_engine" "$spark_source" so_night 'pseudonymize = ["id"]'
    stricter spark
    run spark-run run demo/spark.toml --quiet
    run spark-node run demo/spark-node.toml --quiet --node "$remote_node"
    spark_rows spark-node so_node
    run spark-topdown-dm run demo/spark-topdown.toml --quiet --algorithm topdown --metric dm
    spark_rows spark-topdown-dm so_topdown
    KANON_KEY=same-output-key run spark-night-1 run demo/spark-night.toml --quiet --reuse
    KANON_KEY=same-output-key run spark-night-2 run demo/spark-night.toml --quiet --reuse
    spark_rows spark-night-2 so_night
    run spark-check-source check demo/spark.toml
    run spark-check-table check demo/spark.toml --table so_release --svg demo/out-remote/spark-release.svg
    run spark-check-table-json check demo/spark.toml --table so_release --json
    run spark-check-strict check demo/spark-strict.toml --table so_release --json
    # Last into so_release (the checks above read the first run's).
    run spark-run-k4 run demo/spark.toml --quiet --k 4
    spark_rows spark-run-k4 so_release
    run spark-history history demo/spark.toml
    run spark-history-json history demo/spark.toml --json
    run spark-pareto pareto demo/spark.toml --quiet --json demo/out-remote/spark-front.json
    run spark-limit limit demo/spark.toml --node zip=2,age=3,birth_date=3,sex=0,education=2 --quiet
    run spark-scheme run demo/spark.toml --quiet --scheme sps
    "$venv/bin/python" spark-local.py read "$home/server-$port/warehouse" spark-tables 2>>spark-local.log
fi
rm -f "$result/.stamp"
echo "recorded $(ls "$result" | wc -l) runs in $result"
