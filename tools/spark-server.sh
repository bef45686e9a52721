#!/usr/bin/env bash
# A local Spark Connect server for kanon's tests and benchmarks, sourced by
# tests/spark.sh and bench/spark.sh. `start_server` installs pyspark (which
# ships the server) into a virtual environment under the cargo target
# directory once, starts the server on 127.0.0.1:$port (local[2], driver
# memory $KANON_SPARK_MEMORY, default 512m; $KANON_SPARK_CONF, space-separated
# key=value pairs, each passed as one more --conf, e.g.
# KANON_SPARK_CONF="spark.driver.maxResultSize=256m") and waits until it answers;
# `stop_server` stops it by its process id. start_server returns 1, with a
# notice, when Java or pyspark is missing or the server does not come up.
# $KANON_SPARK_STREAM_DURATION, when set (tests/spark.sh: 1s), is how long the
# server sends one result stream before it ends it for the client to reattach
# (Spark's default: 2m).
pyspark_version="4.2.1"
home="${CARGO_TARGET_DIR:-$HOME/.cache/kanon-target}/spark"
venv="$home/venv-$pyspark_version"
port="${KANON_SPARK_PORT:-15002}"
mkdir -p "$home"

start_server() {
  if ! command -v java >/dev/null 2>&1; then
    echo "notice: no java on PATH; the Spark tests cannot run" >&2
    return 1
  fi
  if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import pyspark" 2>/dev/null; then
    echo "installing pyspark $pyspark_version into $venv" >&2
    rm -rf "$venv"
    if ! { python3 -m venv "$venv" && "$venv/bin/python" -m pip install -q "pyspark==$pyspark_version"; } >&2; then
      echo "notice: pyspark could not be installed; the Spark tests cannot run" >&2
      rm -rf "$venv"
      return 1
    fi
  fi
  local spark_home
  spark_home=$("$venv/bin/python" -c "import os, pyspark; print(os.path.dirname(pyspark.__file__))")
  local work="$home/server-$port" conf=() kv
  for kv in ${KANON_SPARK_CONF:-}; do conf+=(--conf "$kv"); done
  if [ -n "${KANON_SPARK_STREAM_DURATION:-}" ]; then
    conf+=(--conf "spark.connect.execute.reattachable.senderMaxStreamDuration=$KANON_SPARK_STREAM_DURATION")
  fi
  rm -rf "$work" && mkdir -p "$work"
  (
    cd "$work"
    SPARK_HOME="$spark_home" exec "$spark_home/bin/spark-submit" \
      --master "local[2]" --driver-memory "${KANON_SPARK_MEMORY:-512m}" \
      --conf spark.connect.grpc.binding.address=127.0.0.1 \
      --conf spark.connect.grpc.binding.port="$port" \
      --conf spark.sql.warehouse.dir="$work/warehouse" \
      --conf spark.ui.enabled=false ${conf[@]+"${conf[@]}"} \
      --class org.apache.spark.sql.connect.service.SparkConnectServer spark-internal
  ) > "$work/server.log" 2>&1 &
  server_pid=$!
  # Up when the port answers (about 10 s).
  for _ in $(seq 1 120); do
    if ! kill -0 "$server_pid" 2>/dev/null; then
      echo "notice: the Spark Connect server exited at start (log: $work/server.log); the Spark tests cannot run" >&2
      server_pid=""
      return 1
    fi
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "Spark Connect server up on 127.0.0.1:$port (pid $server_pid)" >&2
      return 0
    fi
    sleep 1
  done
  echo "notice: the Spark Connect server did not answer in 120 s (log: $work/server.log); the Spark tests cannot run" >&2
  kill "$server_pid" 2>/dev/null || true
  server_pid=""
  return 1
}

server_pid=""
stop_server() {
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
}
