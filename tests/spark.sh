#!/usr/bin/env bash
# The test command: every test, the Spark ones against a real local Spark
# Connect server and the PostgreSQL ones against a real throwaway cluster.
# Installs pyspark (which ships the server) into a virtual environment under
# the cargo target directory once, starts the server on 127.0.0.1
# (tools/spark-server.sh: local[2], 512 MB driver; it ends each result stream
# after 1 s, as Spark does after 2 min, so any statement longer than that
# makes the client reattach; KANON_SPARK_STREAM_DURATION= keeps Spark's
# default) and a PostgreSQL cluster in a temporary folder
# (tools/pg-server.sh; a second, TLS-only one too), runs
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

# In CI (CI=true, as .ci/run sets it) a server that cannot start fails the
# run at once, naming it; elsewhere its tests skip, listed after the run.
in_ci() { [ "${CI:-}" = true ] || [ "${CI:-}" = 1 ]; }
export KANON_SPARK_STREAM_DURATION="${KANON_SPARK_STREAM_DURATION-1s}"
if start_server; then
  export KANON_SPARK_URL="sc://127.0.0.1:$port"
elif in_ci; then
  echo "error: CI: the Spark Connect server did not start (see the notice above)" >&2
  exit 1
else
  unset KANON_SPARK_URL
fi
if start_pg; then
  export KANON_PG_URL="$pg_url"
elif in_ci; then
  echo "error: CI: the PostgreSQL cluster did not start (see the notice above)" >&2
  exit 1
else
  unset KANON_PG_URL
fi
# A second cluster that takes TLS connections only, and its CA (tests/postgres.rs's TLS test).
if start_pg_tls; then
  export KANON_PG_TLS_URL="$pg_tls_url" KANON_PG_TLS_CA="$pg_tls_ca"
elif in_ci; then
  echo "error: CI: the PostgreSQL TLS cluster did not start (see the notice above)" >&2
  exit 1
else
  unset KANON_PG_TLS_URL KANON_PG_TLS_CA
fi
# Each skipped test adds a line here (tests/util.rs, `missing`).
KANON_SKIPS=$(mktemp /tmp/kanon-skips.XXXXXX)
export KANON_SKIPS
status=0
cargo nextest run --release --no-fail-fast "$@" || status=$?
if [ -s "$KANON_SKIPS" ]; then
  echo "skipped, for what was missing:" >&2
  sort "$KANON_SKIPS" | sed 's/^/  /' >&2
fi
rm -f "$KANON_SKIPS"
exit "$status"
