#!/usr/bin/env bash
# The test command: every test, the Spark ones against a real local Spark
# Connect server. Installs pyspark (which ships the server) into a virtual
# environment under the cargo target directory once, starts the server on
# 127.0.0.1 (tools/spark-server.sh: local[2], 512 MB driver), runs `cargo nextest` with
# KANON_SPARK_URL pointing at it, and stops the server by its process id.
# Without Java or the Python registry the server cannot start: the Spark tests
# then print a notice and skip, the others run as always.
#
# Usage: tests/spark.sh [nextest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/kanon-target}"
# shellcheck source=../tools/spark-server.sh
. tools/spark-server.sh
trap stop_server EXIT

if start_server; then
  export KANON_SPARK_URL="sc://127.0.0.1:$port"
else
  unset KANON_SPARK_URL
fi
cargo nextest run --release --no-fail-fast "$@"
