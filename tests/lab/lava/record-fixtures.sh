#!/bin/bash
# record-fixtures.sh DIR [OUT]: run the fixture scenarios against a LAVA lab
# started with `lava-lab.sh start DIR` and save what the REST API returns
# into OUT (default: tests/lab/lava/fixtures next to this script).
#
# Scenarios (job definitions are OUT/job-*.yaml):
#   complete     job-complete.yaml on dut-01, finishes Complete
#   ssh-dies     job-ssh-dies.yaml on dut-02, kills its own sshd session
#   cancel       job-cancel.yaml on dut-01, `lavacli jobs cancel` during `sleep 60`
#   maintenance  job-maintenance.yaml for dut-02 while dut-02 is in Maintenance
# For each: NAME.detail.json (GET /api/v0.2/jobs/ID/), NAME.logs.yaml
# (GET .../logs/), NAME.tests.json (GET .../tests/), NAME.suites.json
# (GET .../suites/), and NAME.timing.txt. Bytes are saved as returned.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd -P)
[ $# -ge 1 ] || { echo "usage: $0 DIR [OUT]" >&2; exit 2; }
DIR=$(cd "$1" && pwd -P)
OUT=${2:-$HERE/fixtures}
mkdir -p "$OUT"
# shellcheck disable=SC1091
. "$DIR/env"
PY=/usr/bin/python3
SCENARIOS=${EP_LAVA_SCENARIOS:-complete ssh-dies cancel maintenance}

log() { printf '[record %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }

get() { # get PATH FILE: raw REST body into FILE, returns HTTP code on stdout
  curl -sS --max-time 60 -o "$2" -w '%{http_code}' -H "Authorization: Token $LAVA_TOKEN" "$LAVA_URL/api/v0.2/$1"
}

field() { # field ID KEY
  curl -fsS --max-time 20 -H "Authorization: Token $LAVA_TOKEN" "$LAVA_URL/api/v0.2/jobs/$1/" |
    $PY -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$2"
}

wait_state() { # wait_state ID STATE SECONDS
  local deadline=$((SECONDS + $3)) s
  while :; do
    s=$(field "$1" state)
    [ "$s" = "$2" ] && return 0
    [ $SECONDS -lt $deadline ] || { log "job $1 still $s after $3 s"; return 1; }
    sleep 2
  done
}

wait_log() { # wait_log ID TEXT SECONDS: until the streamed log contains TEXT
  local deadline=$((SECONDS + $3))
  while :; do
    curl -fsS --max-time 20 -H "Authorization: Token $LAVA_TOKEN" "$LAVA_URL/api/v0.2/jobs/$1/logs/" 2>/dev/null |
      grep -qF "$2" && return 0
    [ $SECONDS -lt $deadline ] || { log "job $1: '$2' not in log after $3 s"; return 1; }
    sleep 1
  done
}

save() { # save NAME ID
  local c
  c=$(get "jobs/$2/" "$OUT/$1.detail.json")
  echo "GET jobs/$2/ -> $c" >>"$OUT/$1.timing.txt"
  c=$(get "jobs/$2/logs/" "$OUT/$1.logs.yaml")
  echo "GET jobs/$2/logs/ -> $c" >>"$OUT/$1.timing.txt"
  c=$(get "jobs/$2/tests/" "$OUT/$1.tests.json")
  echo "GET jobs/$2/tests/ -> $c" >>"$OUT/$1.timing.txt"
  c=$(get "jobs/$2/suites/" "$OUT/$1.suites.json")
  echo "GET jobs/$2/suites/ -> $c" >>"$OUT/$1.timing.txt"
}

device_snapshot() { # device_snapshot NAME DEVICE LABEL
  get "devices/$2/" "$OUT/$1.device-$2-$3.json" >/dev/null
}

submit() { lavacli jobs submit "$1"; }

scenario_complete() {
  local t0=$SECONDS id
  id=$(submit "$OUT/job-complete.yaml")
  log "complete: job $id"
  wait_state "$id" Finished 300
  echo "job $id: submit to Finished $((SECONDS - t0)) s" >"$OUT/complete.timing.txt"
  save complete "$id"
  lavacli jobs show "$id" >"$OUT/complete.lavacli-show.txt"
}

scenario_ssh_dies() {
  local t0=$SECONDS id
  id=$(submit "$OUT/job-ssh-dies.yaml")
  log "ssh-dies: job $id"
  wait_state "$id" Finished 400
  echo "job $id: submit to Finished $((SECONDS - t0)) s" >"$OUT/ssh-dies.timing.txt"
  device_snapshot ssh-dies dut-02 after-job
  save ssh-dies "$id"
  # lava/job case: error_type / error_msg (also via lavacli results)
  lavacli results "$id" lava job >"$OUT/ssh-dies.lavacli-results-lava-job.txt" 2>&1 || true
  # the device should run its health check and come back Good
  local deadline=$((SECONDS + 300)) h=""
  while [ $SECONDS -lt $deadline ]; do
    h=$(curl -fsS -H "Authorization: Token $LAVA_TOKEN" "$LAVA_URL/api/v0.2/devices/dut-02/" |
      $PY -c 'import json,sys; d=json.load(sys.stdin); print(d["state"]+"/"+d["health"])')
    [ "$h" = Idle/Good ] && break
    sleep 3
  done
  echo "dut-02 after health check: $h after $((SECONDS - t0)) s since submit" >>"$OUT/ssh-dies.timing.txt"
  device_snapshot ssh-dies dut-02 after-healthcheck
  get "jobs/?health_check=true&actual_device=dut-02&ordering=-id&limit=1" "$OUT/ssh-dies.healthcheck-jobs.json" >/dev/null
}

scenario_cancel() {
  local t0=$SECONDS id
  id=$(submit "$OUT/job-cancel.yaml")
  log "cancel: job $id"
  wait_log "$id" '"msg": "+ sleep 60"' 240
  sleep 6 # let the worker push the log lines before the sleep (5 s interval)
  lavacli jobs cancel "$id"
  echo "job $id: cancel sent $((SECONDS - t0)) s after submit" >"$OUT/cancel.timing.txt"
  get "jobs/$id/" "$OUT/cancel.detail-just-after-cancel.json" >/dev/null
  wait_state "$id" Finished 180
  echo "job $id: submit to Finished $((SECONDS - t0)) s" >>"$OUT/cancel.timing.txt"
  save cancel "$id"
  device_snapshot cancel dut-01 after-job
}

scenario_maintenance() {
  local t0=$SECONDS id
  lavacli devices update --health MAINTENANCE dut-02
  id=$(submit "$OUT/job-maintenance.yaml")
  log "maintenance: job $id (waiting 30 s)"
  sleep 30
  get "jobs/$id/" "$OUT/maintenance.detail-after-30s.json" >/dev/null
  device_snapshot maintenance dut-02 in-maintenance
  lavacli jobs cancel "$id"
  wait_state "$id" Finished 60
  echo "job $id: submitted, cancelled after 30 s, Finished at $((SECONDS - t0)) s" >"$OUT/maintenance.timing.txt"
  save maintenance "$id"
  lavacli devices update --health GOOD dut-02
  device_snapshot maintenance dut-02 back-to-good
}

for s in $SCENARIOS; do
  "scenario_${s//-/_}"
done
log "done"
