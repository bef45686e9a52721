#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for kanon's tests and benchmarks, sourced by
# tests/spark.sh and bench/postgres.sh. `start_pg` runs initdb into a new
# temporary folder (as the `postgres` user when run as root: the server
# refuses root), starts the server on 127.0.0.1:$pg_port with password
# (SCRAM) authentication for user kanon, and waits until it answers;
# `stop_pg` stops it by its process id and removes the folder. On success
# $pg_url is the connection URL (with the password, for tests only).
# start_pg returns 1, with a notice, when the server binaries are missing
# (Debian's package `postgresql`) or the server does not come up.
pg_port="${KANON_PG_PORT:-15432}"
pg_pid=""
pg_dir=""
pg_url=""

pg_bindir() {
  local d
  if command -v pg_config >/dev/null 2>&1 && [ -x "$(pg_config --bindir)/postgres" ]; then
    pg_config --bindir
    return 0
  fi
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$d/postgres" ] && [ -x "$d/initdb" ]; then
      echo "$d"
      return 0
    fi
  done
  return 1
}

start_pg() {
  local bin
  if ! bin=$(pg_bindir); then
    echo "notice: no PostgreSQL server binaries (Debian's package postgresql); the PostgreSQL tests cannot run" >&2
    return 1
  fi
  pg_dir=$(mktemp -d /tmp/kanon-pg.XXXXXX)
  chmod 755 "$pg_dir"
  local as=()
  if [ "$(id -u)" = 0 ]; then
    if ! id postgres >/dev/null 2>&1; then
      echo "notice: running as root with no postgres user; the PostgreSQL tests cannot run" >&2
      return 1
    fi
    chown postgres "$pg_dir"
    as=(runuser -u postgres --)
  fi
  local password="kanon-test-$RANDOM$RANDOM"
  echo "$password" > "$pg_dir/pw"
  chmod 644 "$pg_dir/pw"
  if ! "${as[@]}" "$bin/initdb" -D "$pg_dir/data" -U kanon --pwfile="$pg_dir/pw" \
      --auth-local=trust --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 > "$pg_dir/initdb.log" 2>&1; then
    echo "notice: initdb failed (log: $pg_dir/initdb.log); the PostgreSQL tests cannot run" >&2
    return 1
  fi
  rm -f "$pg_dir/pw"
  "${as[@]}" "$bin/postgres" -D "$pg_dir/data" -h 127.0.0.1 -p "$pg_port" -k "$pg_dir" \
    -c fsync=off -c synchronous_commit=off -c full_page_writes=off > "$pg_dir/server.log" 2>&1 &
  pg_pid=$!
  for _ in $(seq 1 60); do
    if ! kill -0 "$pg_pid" 2>/dev/null; then
      echo "notice: the PostgreSQL server exited at start (log: $pg_dir/server.log); the PostgreSQL tests cannot run" >&2
      pg_pid=""
      return 1
    fi
    if "$bin/pg_isready" -q -h 127.0.0.1 -p "$pg_port"; then
      pg_url="postgresql://kanon:$password@127.0.0.1:$pg_port/postgres"
      echo "PostgreSQL server up on 127.0.0.1:$pg_port (pid $pg_pid)" >&2
      return 0
    fi
    sleep 0.5
  done
  echo "notice: the PostgreSQL server did not answer in 30 s (log: $pg_dir/server.log); the PostgreSQL tests cannot run" >&2
  stop_pg
  return 1
}

stop_pg() {
  if [ -n "$pg_pid" ]; then
    # SIGINT to the postmaster (its pid is the first line of postmaster.pid;
    # runuser, $pg_pid when root, passes no signal on): fast shutdown.
    local postmaster
    postmaster=$(head -n 1 "$pg_dir/data/postmaster.pid" 2>/dev/null || echo "$pg_pid")
    kill -INT "$postmaster" 2>/dev/null || true
    wait "$pg_pid" 2>/dev/null || true
    pg_pid=""
  fi
  if [ -n "$pg_dir" ]; then
    rm -rf "$pg_dir"
    pg_dir=""
  fi
}
