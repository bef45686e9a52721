#!/usr/bin/env bash
# Sourced by bench/scale.sh, bench/cbg.sh and bench/spark.sh: `extract N`
# makes sure $data/people_N.duckdb holds `kanon generate`'s N rows (seed 1)
# with its job file beside it, generating them once. The marker
# people_N.duckdb.rows is written only after a generation that succeeded.
# Needs $data and $kanon.
extract() {
  local n="$1" db="$data/people_$1.duckdb"
  if [ "$(cat "$db.rows" 2>/dev/null)" != "$n" ] || [ ! -f "$db" ]; then
    rm -f "$db.rows"
    echo "generating $n rows into $db" >&2
    "$kanon" generate --rows "$n" --seed 1 --database "$db" --table people --job "$data/people_$n.job.toml" --quiet >&2
    echo "$n" > "$db.rows"
  fi
}
