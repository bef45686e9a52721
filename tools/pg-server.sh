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
#
# `start_pg_tls` / `stop_pg_tls`: a second cluster the same way, on
# 127.0.0.1 and 127.0.0.2 port $pg_tls_port, that takes TLS connections only
# (ssl = on; pg_hba.conf: hostssl … scram-sha-256, hostnossl … reject), with
# a CA and a server certificate for localhost / 127.0.0.1 (not 127.0.0.2)
# made by openssl in its folder. On success $pg_tls_url is its URL (no
# sslmode) and $pg_tls_ca the CA's certificate (PEM, readable by all). Returns 1, with a
# notice, without openssl too.
pg_port="${KANON_PG_PORT:-15432}"
pg_tls_port="${KANON_PG_TLS_PORT:-15433}"
pg_pid=""
pg_dir=""
pg_url=""
pg_tls_pid=""
pg_tls_dir=""
pg_tls_url=""
pg_tls_ca=""

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

# The CA and the server's certificate and key, in $1 (the data folder):
# ca.crt, server.crt (localhost, 127.0.0.1), server.key (0600).
_pg_certificates() {
  local data="$1"
  (
    set -e
    cd "$data"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 -subj "/CN=kanon test CA"
    openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj "/CN=localhost"
    printf 'subjectAltName = DNS:localhost, IP:127.0.0.1\nbasicConstraints = CA:FALSE\nkeyUsage = digitalSignature, keyEncipherment\nextendedKeyUsage = serverAuth\n' > server.ext
    openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days 2 -extfile server.ext
    chmod 600 server.key
    rm -f server.csr server.ext ca.srl
  )
}

# Start a cluster on port $1 (tls: $2 = tls); sets _pg_pid, _pg_dir, _pg_url.
_pg_start() {
  local port="$1" tls="${2:-}" bin
  _pg_pid="" _pg_dir="" _pg_url=""
  if ! bin=$(pg_bindir); then
    echo "notice: no PostgreSQL server binaries (Debian's package postgresql); the PostgreSQL tests cannot run" >&2
    return 1
  fi
  if [ -n "$tls" ] && ! command -v openssl >/dev/null 2>&1; then
    echo "notice: no openssl (Debian's package openssl); the PostgreSQL TLS tests cannot run" >&2
    return 1
  fi
  _pg_dir=$(mktemp -d /tmp/kanon-pg.XXXXXX)
  chmod 755 "$_pg_dir"
  local as=()
  if [ "$(id -u)" = 0 ]; then
    if ! id postgres >/dev/null 2>&1; then
      echo "notice: running as root with no postgres user; the PostgreSQL tests cannot run" >&2
      return 1
    fi
    chown postgres "$_pg_dir"
    as=(runuser -u postgres --)
  fi
  local password="kanon-test-$RANDOM$RANDOM"
  echo "$password" > "$_pg_dir/pw"
  chmod 644 "$_pg_dir/pw"
  if ! "${as[@]}" "$bin/initdb" -D "$_pg_dir/data" -U kanon --pwfile="$_pg_dir/pw" \
      --auth-local=trust --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 > "$_pg_dir/initdb.log" 2>&1; then
    echo "notice: initdb failed (log: $_pg_dir/initdb.log); the PostgreSQL tests cannot run" >&2
    return 1
  fi
  rm -f "$_pg_dir/pw"
  local listen="127.0.0.1" extra=()
  if [ -n "$tls" ]; then
    if ! _pg_certificates "$_pg_dir/data" > "$_pg_dir/openssl.log" 2>&1; then
      echo "notice: openssl could not make the certificates (log: $_pg_dir/openssl.log); the PostgreSQL TLS tests cannot run" >&2
      return 1
    fi
    [ "$(id -u)" = 0 ] && chown postgres "$_pg_dir"/data/server.* "$_pg_dir"/data/ca.*
    cp "$_pg_dir/data/ca.crt" "$_pg_dir/ca.crt"
    printf 'local all all trust\nhostssl all all 127.0.0.0/8 scram-sha-256\nhostnossl all all 0.0.0.0/0 reject\n' > "$_pg_dir/data/pg_hba.conf"
    listen="127.0.0.1,127.0.0.2"
    extra=(-c ssl=on -c ssl_cert_file=server.crt -c ssl_key_file=server.key)
  fi
  "${as[@]}" "$bin/postgres" -D "$_pg_dir/data" -h "$listen" -p "$port" -k "$_pg_dir" \
    -c fsync=off -c synchronous_commit=off -c full_page_writes=off "${extra[@]}" > "$_pg_dir/server.log" 2>&1 &
  _pg_pid=$!
  for _ in $(seq 1 60); do
    if ! kill -0 "$_pg_pid" 2>/dev/null; then
      echo "notice: the PostgreSQL server exited at start (log: $_pg_dir/server.log); the PostgreSQL tests cannot run" >&2
      _pg_pid=""
      return 1
    fi
    if "$bin/pg_isready" -q -h 127.0.0.1 -p "$port"; then
      _pg_url="postgresql://kanon:$password@127.0.0.1:$port/postgres"
      echo "PostgreSQL server up on 127.0.0.1:$port (pid $_pg_pid${tls:+, TLS only})" >&2
      return 0
    fi
    sleep 0.5
  done
  echo "notice: the PostgreSQL server did not answer in 30 s (log: $_pg_dir/server.log); the PostgreSQL tests cannot run" >&2
  _pg_stop "$_pg_pid" "$_pg_dir"
  return 1
}

# Stop the cluster of pid $1 in folder $2 and remove the folder.
_pg_stop() {
  local pid="$1" dir="$2"
  if [ -n "$pid" ]; then
    # SIGINT to the postmaster (its pid is the first line of postmaster.pid;
    # runuser, $pid when root, passes no signal on): fast shutdown.
    local postmaster
    postmaster=$(head -n 1 "$dir/data/postmaster.pid" 2>/dev/null || echo "$pid")
    kill -INT "$postmaster" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  if [ -n "$dir" ]; then
    rm -rf "$dir"
  fi
}

start_pg() {
  local rc=0
  _pg_start "$pg_port" || rc=1
  pg_pid="$_pg_pid" pg_dir="$_pg_dir" pg_url="$_pg_url"
  return $rc
}

stop_pg() {
  _pg_stop "$pg_pid" "$pg_dir"
  pg_pid="" pg_dir=""
}

start_pg_tls() {
  local rc=0
  _pg_start "$pg_tls_port" tls || rc=1
  pg_tls_pid="$_pg_pid" pg_tls_dir="$_pg_dir" pg_tls_url="$_pg_url"
  pg_tls_ca=""
  [ $rc = 0 ] && pg_tls_ca="$pg_tls_dir/ca.crt"
  return $rc
}

stop_pg_tls() {
  _pg_stop "$pg_tls_pid" "$pg_tls_dir"
  pg_tls_pid="" pg_tls_dir="" pg_tls_ca=""
}
