#!/usr/bin/env bash
# The test command: every test, the Spark ones against a real local Spark
# Connect server and the PostgreSQL ones against a real throwaway cluster.
# Installs pyspark (which ships the server) into a virtual environment under
# the cargo target directory once, starts the server on 127.0.0.1
# (tools/spark-server.sh: local[2], 512 MB driver) and a PostgreSQL cluster in
# a temporary folder (tools/pg-server.sh; a second, TLS-only one too), runs
# `cargo nextest` with KANON_SPARK_URL, KANON_PG_URL and KANON_PG_TLS_URL
# (its CA: KANON_PG_TLS_CA) pointing at them, and stops them by their
# process ids. A server that cannot start (no Java, no Python registry, no
# PostgreSQL binaries) makes its tests print a notice and skip; the others
# run as always.
#
# Usage: tests/spark.sh [nextest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/kanon-target}"
# shellcheck source=../tools/spark-server.sh
. tools/spark-server.sh
# shellcheck source=../tools/pg-server.sh
. tools/pg-server.sh
trap 'stop_server; stop_pg; stop_pg_tls' EXIT

if start_server; then
  export KANON_SPARK_URL="sc://127.0.0.1:$port"
else
  unset KANON_SPARK_URL
fi
if start_pg; then
  export KANON_PG_URL="$pg_url"
else
  unset KANON_PG_URL
fi
# A second cluster that takes TLS connections only, and its CA (tests/postgres.rs's TLS test).
if start_pg_tls; then
  export KANON_PG_TLS_URL="$pg_tls_url" KANON_PG_TLS_CA="$pg_tls_ca"
else
  unset KANON_PG_TLS_URL KANON_PG_TLS_CA
fi
cargo nextest run --release --no-fail-fast "$@"
