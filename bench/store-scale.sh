#!/usr/bin/env bash
# A store that holds a lab's years (issue 23 item 8), a benchmark, not a test: fills a
# SQLite file and a PostgreSQL database (a throwaway cluster of its own, stopped at the
# end) with generated bench runs (bench/store_fill.cpp; default 100,000 runs x 10
# configurations x 10 repetitions = 10 million repetitions, row sizes from a real store),
# then times what a user does on it with the real edgeprobe binary: `runs` (all, one
# device), `export`, `compare` and `report` of one run; through the store seam the
# queries the CLI has no flags for yet (latest 50, by model); and the live write path
# (one committed transaction per repetition) next to the fill's batched rate.
#
#   bench/store-scale.sh [--keep DIR] [--before EDGEPROBE] [--after EDGEPROBE] [--samples N]
#                        [--limit S] [--no-warm-up] [--runs N] [--configs K] [--reps M]
#                        [--decode-steps S] [--fill-schema V]
#
# The stores are filled at schema v--fill-schema (default 3, the schema before the
# indexes). With --before (an edgeprobe built before them) that store is timed first;
# then --after (default build/src/cli/edgeprobe) opens it, which migrates it (timed), and
# everything is timed again. --keep DIR keeps the stores and the cluster in DIR and reuses
# what an earlier run filled there (a migrated store is timed "after" only). Every figure
# is the median of --samples runs (default 5), commands and backends interleaved, since
# the machine's speed drifts; compare medians and ratios, not one absolute time. A command
# still running after --limit seconds (default 60) is stopped, recorded as "timeout>S",
# and not run again in that phase.
set -euo pipefail
cd "$(dirname "$0")/.."

keep="" before="" after=build/src/cli/edgeprobe samples=5 limit=60 warm=yes
runs=100000 configs=10 reps=10 decode_steps=32 fill_schema=3
while [[ $# -gt 0 ]]; do
  if [[ $1 == --no-warm-up ]]; then warm="" && shift && continue; fi
  case $1 in
    --keep) keep=$2 ;;
    --before) before=$2 ;;
    --after) after=$2 ;;
    --samples) samples=$2 ;;
    --limit) limit=$2 ;;
    --runs) runs=$2 ;;
    --configs) configs=$2 ;;
    --reps) reps=$2 ;;
    --decode-steps) decode_steps=$2 ;;
    --fill-schema) fill_schema=$2 ;;
    -h | --help) sed -n '2,24p' "$0" >&2; exit 2 ;;
    *) echo "store-scale.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  [[ $# -ge 2 ]] || { echo "store-scale.sh: $1 needs a value" >&2; exit 2; }
  shift 2
done
fill=$(realpath build/bench/store_fill)
after=$(realpath "$after")
[[ -x $fill ]] || { echo "not executable: $fill (ninja -C build store_fill)" >&2; exit 2; }
[[ -x $after ]] || { echo "not executable: $after (build edgeprobe, or pass --after)" >&2; exit 2; }
[[ -z $before || -x $before ]] || { echo "not executable: $before" >&2; exit 2; }
[[ -z $before ]] || before=$(realpath "$before")
command -v sqlite3 >/dev/null || { echo "store-scale.sh: needs the sqlite3 shell (Debian: sqlite3)" >&2; exit 2; }

if [[ -n $keep ]]; then
  mkdir -p "$keep"
  dir=$(realpath "$keep")
else
  dir=$(mktemp -d)
fi
db=$dir/results.db

# ---- a PostgreSQL cluster of our own: a socket in $dir, no TCP port ---------------------
bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[[ -x $bindir/pg_ctl ]] || { echo "store-scale.sh: no PostgreSQL server binaries (Debian: postgresql)" >&2; exit 2; }
as_server() { if [[ $(id -u) == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }
pgdata=$dir/pg
if [[ ! -d $pgdata ]]; then
  mkdir -p "$pgdata"
  [[ $(id -u) != 0 ]] || chown postgres "$pgdata" "$dir"
  as_server "$bindir/initdb" -D "$pgdata" -A trust -U postgres -E UTF8 --locale=C >/dev/null
fi
stop_pg() { as_server "$bindir/pg_ctl" -D "$pgdata" -m fast -w stop >/dev/null 2>&1 || true; }
# $1: extra server settings. The fill runs without fsync (a killed fill is thrown away);
# the timing runs with PostgreSQL's defaults, so a live commit pays its fsync.
start_pg() {
  stop_pg
  as_server "$bindir/pg_ctl" -D "$pgdata" -l "$pgdata/server.log" -w -t 120 \
    -o "-c listen_addresses='' -c unix_socket_directories='$dir' -c shared_buffers=512MB $1" start >/dev/null
}
cleanup() {
  stop_pg
  [[ -n $keep ]] || rm -rf "$dir"
}
trap cleanup EXIT
url="postgresql://postgres@/scale?host=$dir"
psql_scale() { "$bindir/psql" -X -q -A -t -v ON_ERROR_STOP=1 -d "$url" -c "$1"; }

# ---- fill (or reuse) ---------------------------------------------------------------------
shape="runs=$runs configs=$configs reps=$reps decode_steps=$decode_steps schema=$fill_schema"
fill_args=(--runs "$runs" --configs "$configs" --reps "$reps" --decode-steps "$decode_steps" --schema "$fill_schema")
if [[ $(cat "$dir/sqlite.filled" 2>/dev/null) != "$shape" ]]; then
  rm -f "$db" "$db-wal" "$db-shm" "$dir/sqlite.filled"
  echo "filling $db ($shape)" >&2
  "$fill" fill --sqlite "$db" "${fill_args[@]}" | tail -1 | tee "$dir/sqlite.fill-rate"
  echo "$shape" >"$dir/sqlite.filled"
fi
start_pg "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_wal_size=8GB"
if [[ $(cat "$dir/pg.filled" 2>/dev/null) != "$shape" ]]; then
  rm -f "$dir/pg.filled"
  "$bindir/psql" -X -q -d "postgresql://postgres@/postgres?host=$dir" -c "DROP DATABASE IF EXISTS scale" -c "CREATE DATABASE scale"
  echo "filling $url ($shape)" >&2
  "$fill" fill --pg "$url" "${fill_args[@]}" | tail -1 | tee "$dir/pg.fill-rate"
  psql_scale "CHECKPOINT"  # the fill's WAL is not kept past the restart below
  echo "$shape" >"$dir/pg.filled"
fi
start_pg ""

sizes() {
  echo "sizes: sqlite $(du -sh "$db" | cut -f1) (file), postgresql" \
    "$(psql_scale "SELECT pg_size_pretty(pg_database_size('scale'))") (database)"
}
sizes
sqlite_version() { sqlite3 "file:$db?mode=ro" "PRAGMA user_version"; }
pg_version() { psql_scale "SELECT version FROM edgeprobe_schema"; }

# ---- timing ------------------------------------------------------------------------------
# A run in the middle of the store and a later one of the same device and model
# (store_fill: run i is on device i % 200, of model (i / 7) % 30; compare refuses runs of
# different models).
run_a=$((runs / 2)) run_b=""
for ((j = run_a + 200; j <= runs; j += 200)); do
  if (((j - 1) / 7 % 30 == (run_a - 1) / 7 % 30)); then run_b=$j && break; fi
done
[[ -n $run_b ]] || run_b=$((run_a + 1 <= runs ? run_a + 1 : run_a))
device=$(sqlite3 "file:$db?mode=ro" "SELECT device_id FROM runs WHERE id = $run_a")
model=$(sqlite3 "file:$db?mode=ro" "SELECT json_extract(provenance_json, '\$.models[0].path') FROM runs WHERE id = $run_a")
model=${model##*/}
cases=(runs-all runs-device export-json export-md compare report)
store_cases=(latest-50 device-latest-50 model-latest-50)

# seconds BINARY CASE STORE: wall time of one command, its output thrown away.
seconds() {
  local bin=$1 case=$2 store=$3 t0 t1
  local -a cmd
  case $case in
    runs-all) cmd=("$bin" runs --db "$store") ;;
    runs-device) cmd=("$bin" runs --db "$store" --device "$device") ;;
    export-json) cmd=("$bin" export "$run_a" --db "$store" -o json) ;;
    export-md) cmd=("$bin" export "$run_a" --db "$store" -o md) ;;
    compare) cmd=("$bin" compare "$run_a" "$run_b" --db "$store") ;;
    report) cmd=("$bin" report "$run_a" --db "$store" --output -) ;;
    latest-50) cmd=("$fill" list --store "$store" --last 50) ;;
    device-latest-50) cmd=("$fill" list --store "$store" --last 50 --device "$device") ;;
    model-latest-50) cmd=("$fill" list --store "$store" --last 50 --model "$model") ;;
  esac
  t0=$(date +%s%N)
  local rc=0
  timeout "$limit" "${cmd[@]}" >/dev/null || rc=$?
  t1=$(date +%s%N)
  if [[ $rc == 124 ]]; then echo "timeout>${limit}s"; return; fi
  [[ $rc == 0 ]] || { echo "store-scale.sh: failed ($rc): ${cmd[*]}" >&2; exit 1; }
  echo "scale=3; ($t1 - $t0) / 1000000000" | bc
}

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

# phase NAME BINARY CASES...: every case on both backends, $samples rounds, interleaved,
# after one untimed round (the page cache then holds what each command reads; cold
# figures on a slow disk measure the disk, see warm_up); one "PHASE BACKEND CASE
# MEDIAN_S" line per case into $dir/figures.
phase() {
  local name=$1 bin=$2 i c backend store
  shift 2
  local -A times=() over=()
  local t
  for c in "$@"; do
    for backend in sqlite postgresql; do
      [[ $backend == sqlite ]] && store=$db || store=$url
      t=$(seconds "$bin" "$c" "$store")
      [[ $t != timeout* ]] || over[$backend/$c]=$t
    done
  done
  for ((i = 0; i < samples; i++)); do
    for c in "$@"; do
      for backend in sqlite postgresql; do
        [[ -z ${over[$backend/$c]:-} ]] || continue
        [[ $backend == sqlite ]] && store=$db || store=$url
        t=$(seconds "$bin" "$c" "$store")
        if [[ $t == timeout* ]]; then over[$backend/$c]=$t; else times[$backend/$c]+="$t "; fi
      done
    done
  done
  for c in "$@"; do
    for backend in sqlite postgresql; do
      if [[ -n ${over[$backend/$c]:-} ]]; then t=${over[$backend/$c]}; else
        t=$(tr ' ' '\n' <<<"${times[$backend/$c]}" | grep . | median); fi
      echo "$name $backend $c $t" | tee -a "$dir/figures"
    done
  done
}

# Read both stores once, in file order: listing 100,000 runs from a cold cache is
# random reads across the whole file (pages of all tables interleave), minutes on a
# disk that serves a few hundred reads a second; in order it is one pass.
warm_up() {
  local t0=$(date +%s)
  cat "$db" "$pgdata"/base/*/* >/dev/null 2>&1 || true
  echo "warm-up: read both stores in $(($(date +%s) - t0)) s" >&2
}
: >"$dir/figures"
[[ -z $warm ]] || warm_up
echo "load before timing: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
# What export writes for one run, per backend and format, into $dir/export-SIDE-*.
save_exports() {
  local bin=$1 side=$2 backend store format
  for backend in sqlite postgresql; do
    [[ $backend == sqlite ]] && store=$db || store=$url
    for format in json md csv; do
      "$bin" export "$run_a" --db "$store" -o "$format" >"$dir/export-$side-$backend.$format"
    done
  done
}
timed_before=""
if [[ -n $before && $(sqlite_version) == "$fill_schema" && $(pg_version) == "$fill_schema" ]]; then
  phase before "$before" "${cases[@]}"
  save_exports "$before" before
  timed_before=yes
fi
# The first open by the new binary migrates; timed as one export (of a small run's size).
for backend in sqlite postgresql; do
  [[ $backend == sqlite ]] && store=$db || store=$url
  from=$([[ $backend == sqlite ]] && sqlite_version || pg_version)
  t0=$(date +%s%N)
  "$after" export 1 --db "$store" -o json >/dev/null
  t1=$(date +%s%N)
  echo "migrate $backend v$from->v$([[ $backend == sqlite ]] && sqlite_version || pg_version)" \
    "$(echo "scale=3; ($t1 - $t0) / 1000000000" | bc)" | tee -a "$dir/figures"
done
phase after "$after" "${cases[@]}" "${store_cases[@]}"
# The migration must not change a byte of what a stored run exports.
if [[ -n $timed_before ]]; then
  save_exports "$after" after
  for f in "$dir"/export-before-*; do
    if cmp -s "$f" "${f/export-before-/export-after-}"; then same=identical; else same=DIFFERENT; fi
    echo "export ${f##*/export-before-} before/after migration: $same" | tee -a "$dir/figures"
  done
fi

# Live units: the runner's path (one committed transaction per repetition, fsync'd), on
# the full store; 200 units each, medians of 3. They add one small run per sample.
for backend in sqlite postgresql; do
  [[ $backend == sqlite ]] && store=$db || store=$url
  rates=$(for ((i = 0; i < 3; i++)); do
    "$fill" live --store "$store" --units 200 | sed -n 's/.*units_per_s=\([0-9.]*\).*/\1/p'
  done | median)
  echo "live $backend units_per_s $rates" | tee -a "$dir/figures"
done
for backend in sqlite pg; do
  [[ -r $dir/$backend.fill-rate ]] && echo "fill $backend $(cat "$dir/$backend.fill-rate")" | tee -a "$dir/figures"
done
sizes | tee -a "$dir/figures"
echo "load after timing: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

# Before/after side by side, with the ratio before/after.
awk '$1 == "before" {b[$2 " " $3] = $4} $1 == "after" {a[$2 " " $3] = $4}
     END {printf "%-11s %-17s %14s %14s %7s\n", "backend", "case", "before_s", "after_s", "ratio";
          for (k in a) {split(k, p, " "); r = (k in b && a[k] > 0 && b[k] !~ /timeout/ && a[k] !~ /timeout/) ? sprintf("%.1f", b[k] / a[k]) : "-";
                        printf "%-11s %-17s %14s %14s %7s\n", p[1], p[2], (k in b) ? b[k] : "-", a[k], r}}' \
  "$dir/figures" | sort
echo "figures: $dir/figures" >&2
