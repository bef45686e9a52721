#!/usr/bin/env bash
# ARX 3.9.2's re-identification risk analysis of a CSV table, as one JSON line: the
# figures tests/risk.rs checks kanon's src/risk.rs against.
# Usage: bench/arx-risk/run.sh --data FILE --qis a,b,c [--fraction F | --population N]
#                              [--population-table FILE] [--threshold T] [--delimiter C]
# Example (the figures in tests/risk.rs):
#   bench/arx-risk/run.sh --data fixtures/risk/sample.csv --qis age_band,sex,zip3 --fraction 0.01
#   bench/arx-risk/run.sh --data fixtures/risk/sample.csv --qis age_band,sex,zip3 --fraction 0.3 \
#       --population-table fixtures/risk/population.csv
# Besides ARX's figures it prints `snb_published`: the SNB model on Chen & McNulty's
# equations, solved by ARX's bundled solver (ARX 3.9.2's own SNB differs; docs/risk.md).
# Needs ARX beside the clone (../shared/peers/arx/lib/*.jar) and a JDK (17); prints a notice and
# exits 0 without them. Classes are compiled into a temporary directory, never into the repo.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
lib=$(cd "$here/../../../shared/peers/arx/lib" 2>/dev/null && pwd) || {
  echo "notice: ../shared/peers/arx is absent; ARX's risk analysis skipped"
  exit 0
}
command -v javac >/dev/null || { echo "notice: javac not found; ARX's risk analysis skipped"; exit 0; }
classes=$(mktemp -d)
trap 'rm -rf "$classes"' EXIT
javac -nowarn -d "$classes" -cp "$lib/*" "$here/Risk.java"
java -cp "$classes:$lib/*" Risk "$@"
