#!/bin/bash
# lava-lab.sh: bring up (start) and tear down (stop) a complete, real LAVA
# 2023.01 instance (Debian 12 packages) on this one machine, for edgeprobe's
# slow integration tests.
#
#   tests/lab/lava/lava-lab.sh start DIR   # prints LAVA_URL=... LAVA_TOKEN=...
#   . DIR/env                              # LAVA_URL, LAVA_TOKEN, XDG_CONFIG_HOME (lavacli)
#   lavacli jobs submit job.yaml
#   tests/lab/lava/lava-lab.sh stop DIR
#
# What runs (all as children of this script, no systemd, no apache):
#   - a private PostgreSQL 15 cluster in DIR/pg (Unix socket in DIR/pg only,
#     listen_addresses=''), reached by lava-server through the environment
#     variable LAVA_YAML_SETTINGS_DATABASES (see DIR/server.env);
#   - gunicorn (lava_server.wsgi, eventlet, 2 workers) on 127.0.0.1:<free port>;
#   - lava-scheduler;
#   - two lava-worker processes, ep-site-a and ep-site-b (DIR/worker-a, DIR/worker-b);
#   - one throwaway sshd on 127.0.0.1:<free port> (keys in DIR/ssh), the
#     target of devices dut-01 (ep-site-a, tag ep-dut-01) and dut-02
#     (ep-site-b, tag ep-dut-02), device type ssh.
# Files written outside DIR: the device dictionaries
# /etc/lava-server/dispatcher-config/devices/dut-0[12].jinja2 and the health
# check /etc/lava-server/dispatcher-config/health-checks/ssh.yaml (removed by
# stop if start created them), and the job overlays /lava-<job id> that the
# ssh device type unpacks on the target (/ of this machine; stop removes the
# ones that did not exist before start).
#
# Environment knobs:
#   EP_LAVA_START_TIMEOUT  seconds to wait for workers/devices (default 300)
#   EP_LAVA_INITIAL_HEALTH UNKNOWN (default: a health check runs on each device
#                          before it takes jobs) or GOOD (skip it, faster)
#   EP_LAVA_PING_INTERVAL  lava-worker --ping-interval (default 20, LAVA's
#                          default); jobs start and finish on pings, so 5
#                          makes every job about 15 s shorter
#   EP_LAVA_NO_INSTALL=1   never call apt-get
set -euo pipefail

PG_BIN=/usr/lib/postgresql/15/bin
PY=/usr/bin/python3
LAVA_ETC=/etc/lava-server/dispatcher-config
PKGS=(lava-server lava-dispatcher lavacli postgresql openssh-server curl)
ADMIN=ep-admin
START_TIMEOUT=${EP_LAVA_START_TIMEOUT:-300}
INITIAL_HEALTH=${EP_LAVA_INITIAL_HEALTH:-UNKNOWN}
PING_INTERVAL=${EP_LAVA_PING_INTERVAL:-20}

log() { printf '[lava-lab %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

usage() {
  echo "usage: $0 start DIR | stop DIR | dispatch DIR JOB.yaml LOG" >&2
  exit 2
}

free_port() {
  $PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# ---------------------------------------------------------------- install --
install_packages() {
  local missing=() p
  for p in "${PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    log "packages already installed"
    return 0
  fi
  [ "${EP_LAVA_NO_INSTALL:-0}" = 1 ] && die "missing packages: ${missing[*]} (EP_LAVA_NO_INSTALL=1)"
  log "installing: ${missing[*]}"
  # Keep maintainer scripts from starting the system PostgreSQL cluster,
  # sshd etc. (no systemd here: invoke-rc.d would use the SysV scripts).
  local made_policy=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
    made_policy=1
  fi
  local t0=$SECONDS rc=0
  timeout 900 apt-get update -qq || true
  DEBIAN_FRONTEND=noninteractive timeout 1800 \
    apt-get install -y --no-install-recommends "${missing[@]}" >"$DIR/logs/apt-install.log" 2>&1 || rc=$?
  [ $made_policy = 1 ] && rm -f /usr/sbin/policy-rc.d
  [ $rc = 0 ] || { tail -20 "$DIR/logs/apt-install.log" >&2; die "apt-get install failed ($rc)"; }
  log "install took $((SECONDS - t0)) s: $(grep -E 'newly installed' "$DIR/logs/apt-install.log" || true)"
}

# --------------------------------------------------------------- postgres --
# Server-side environment (postgres socket) shared by every lava-server process.
write_server_env() {
  cat >"$DIR/server.env" <<EOF
# source this to run 'lava-server manage ...' against this instance
export DJANGO_SETTINGS_MODULE=lava_server.settings.prod
export LAVA_YAML_SETTINGS_DATABASES='{default: {ENGINE: django.db.backends.postgresql, NAME: lavaserver, USER: lavaserver, PASSWORD: "", HOST: "$DIR/pg", PORT: 5432}}'
export PGHOST='$DIR/pg' PGPORT=5432
# Job logs and outputs under DIR: LAVA numbers jobs from 1 in every new database, and in
# the shared /var/lib/lava-server/default/media a new job 1 would append to an old one's log.
export LAVA_SETTINGS_MEDIA_ROOT='$DIR/media/'
EOF
  mkdir -p "$DIR/media"
  chown lavaserver:lavaserver "$DIR/media"
}

start_postgres() {
  mkdir -p "$DIR/pg"
  chown postgres:postgres "$DIR/pg"
  chmod 755 "$DIR/pg"
  if [ ! -f "$DIR/pg/data/PG_VERSION" ]; then
    log "initdb $DIR/pg/data"
    runuser -u postgres -- "$PG_BIN/initdb" -D "$DIR/pg/data" -U postgres --auth=trust \
      -E UTF8 --locale=C.UTF-8 >"$DIR/logs/initdb.log" 2>&1 || die "initdb failed, see $DIR/logs/initdb.log"
  fi
  touch "$DIR/logs/postgresql.log"
  chown postgres "$DIR/logs/postgresql.log"
  runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$DIR/pg/data" -l "$DIR/logs/postgresql.log" -w -t 60 \
    -o "-c listen_addresses='' -c unix_socket_directories='$DIR/pg' -c port=5432 -c fsync=off" \
    start >/dev/null || die "postgres did not start, see $DIR/logs/postgresql.log"
  echo started >"$DIR/state/pg.started"
}

setup_database() {
  # Same steps as lava-server's postinst when PostgreSQL is up: create the
  # role and database, then migrate (postinst.py --db). psql follows PGHOST.
  if [ -f "$DIR/state/db.done" ]; then
    log "database already set up"
    return 0
  fi
  log "postinst.py --db (create role/db, migrate)"
  local t0=$SECONDS
  (cd / && $PY /usr/share/lava-server/postinst.py --db) >"$DIR/logs/postinst-db.log" 2>&1 ||
    { tail -20 "$DIR/logs/postinst-db.log" >&2; die "postinst.py --db failed"; }
  log "database set up in $((SECONDS - t0)) s"
  touch "$DIR/state/db.done"
}

lsm() { (cd / && lava-server manage "$@"); }

# ------------------------------------------------------------- processes --
# spawn NAME CMD...: start CMD in its own session (process group), record pid.
spawn() {
  local name=$1
  shift
  EP_LAVA_LAB=$DIR setsid "$@" </dev/null >>"$DIR/logs/$name.out" 2>&1 &
  echo $! >"$DIR/state/$name.pid"
}

alive() { [ -f "$DIR/state/$1.pid" ] && kill -0 "$(cat "$DIR/state/$1.pid")" 2>/dev/null; }

api() { # api PATH -> JSON on stdout
  curl -fsS --max-time 20 -H "Authorization: Token $LAVA_TOKEN" "$LAVA_URL/api/v0.2/$1"
}

start_sshd() {
  local d=$DIR/ssh
  mkdir -p "$d" /run/sshd
  chmod 700 "$d"
  [ -f "$d/host_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C ep-lava-host -f "$d/host_ed25519"
  [ -f "$d/id_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C ep-lava-dut -f "$d/id_ed25519"
  cp "$d/id_ed25519.pub" "$d/authorized_keys"
  chmod 600 "$d/authorized_keys"
  SSH_PORT=$(cat "$DIR/state/ssh.port" 2>/dev/null || free_port)
  echo "$SSH_PORT" >"$DIR/state/ssh.port"
  cat >"$d/sshd_config" <<EOF
Port $SSH_PORT
ListenAddress 127.0.0.1
HostKey $d/host_ed25519
PidFile $DIR/state/sshd.daemon.pid
PermitRootLogin prohibit-password
PubkeyAuthentication yes
AuthorizedKeysFile $d/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
X11Forwarding no
PrintMotd no
Subsystem sftp /usr/lib/openssh/sftp-server
SetEnv EP_LAVA_LAB=$DIR
AcceptEnv LANG LC_*
EOF
  /usr/sbin/sshd -t -f "$d/sshd_config" || die "sshd config test failed"
  spawn sshd /usr/sbin/sshd -D -e -f "$d/sshd_config" -o ListenAddress=127.0.0.1
  for _ in $(seq 50); do
    ssh -q -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
      -i "$d/id_ed25519" -p "$SSH_PORT" root@127.0.0.1 true 2>/dev/null && return 0
    alive sshd || die "sshd exited, see $DIR/logs/sshd.out"
    sleep 0.2
  done
  die "cannot ssh to 127.0.0.1:$SSH_PORT"
}

start_server() {
  HTTP_PORT=$(cat "$DIR/state/http.port" 2>/dev/null || free_port)
  echo "$HTTP_PORT" >"$DIR/state/http.port"
  LAVA_URL=http://127.0.0.1:$HTTP_PORT
  touch "$DIR/logs/gunicorn.log"
  chown lavaserver:lavaserver "$DIR/logs/gunicorn.log"
  # As lava-server-gunicorn.service does, with WORKERS=2 and a local bind.
  spawn gunicorn /usr/bin/gunicorn lava_server.wsgi --log-level INFO --log-file "$DIR/logs/gunicorn.log" \
    -u lavaserver -g lavaserver --worker-class eventlet --workers 2 --bind "127.0.0.1:$HTTP_PORT" --timeout 120
  # As lava-scheduler.service does (runs as root there too).
  spawn scheduler lava-server manage lava-scheduler --level DEBUG --log-file "$DIR/logs/lava-scheduler.log"
  for _ in $(seq 150); do
    curl -fsS --max-time 5 -o /dev/null "$LAVA_URL/api/v0.2/system/version/" 2>/dev/null && return 0
    alive gunicorn || die "gunicorn exited, see $DIR/logs/gunicorn.log"
    sleep 0.4
  done
  die "lava-server did not answer on $LAVA_URL"
}

setup_objects() {
  # superuser + API token
  if [ ! -f "$DIR/state/api.token" ]; then
    lsm users add --superuser --staff --passwd "$(head -c 12 /dev/urandom | base64)" "$ADMIN" >/dev/null
    lsm tokens add --user "$ADMIN" --description edgeprobe-lab | tail -1 >"$DIR/state/api.token"
  fi
  LAVA_TOKEN=$(cat "$DIR/state/api.token")
  # workers
  local w
  for w in ep-site-a ep-site-b; do
    if [ ! -f "$DIR/state/$w.token" ]; then
      lsm workers add --description "edgeprobe lab $w" "$w" | sed -n 's/^Token: //p' >"$DIR/state/$w.token"
    fi
  done
  # device type, health check, devices, dictionaries
  lsm device-types details ssh >/dev/null 2>&1 || lsm device-types add ssh >/dev/null
  mkdir -p "$LAVA_ETC/devices" "$LAVA_ETC/health-checks"
  if [ ! -e "$LAVA_ETC/health-checks/ssh.yaml" ]; then
    cat >"$LAVA_ETC/health-checks/ssh.yaml" <<'EOF'
# Written by edgeprobe tests/lab/lava/lava-lab.sh: trivial ssh health check.
device_type: ssh
job_name: ssh health check
timeouts:
  job: {minutes: 5}
  action: {minutes: 2}
  connection: {minutes: 1}
priority: medium
visibility: public
actions:
- deploy:
    to: ssh
    os: debian
    timeout: {minutes: 2}
- boot:
    method: ssh
    connection: ssh
    prompts: ['root@[^:]+:.*# ']
    timeout: {minutes: 2}
- test:
    timeout: {minutes: 2}
    definitions:
    - from: inline
      name: health
      path: inline/health.yaml
      repository:
        metadata: {format: Lava-Test Test Definition 1.0, name: health, description: ssh health check}
        run:
          steps:
          - 'true'
EOF
    chown lavaserver:lavaserver "$LAVA_ETC/health-checks/ssh.yaml"
    echo "$LAVA_ETC/health-checks/ssh.yaml" >>"$DIR/state/etc-files"
  fi
  local dev worker tag
  for dev in dut-01:ep-site-a:ep-dut-01 dut-02:ep-site-b:ep-dut-02; do
    IFS=: read -r dev worker tag <<<"$dev"
    local f=$LAVA_ETC/devices/$dev.jinja2
    if [ ! -e "$f" ] || grep -q 'edgeprobe tests/lab/lava' "$f"; then
      grep -qx "$f" "$DIR/state/etc-files" 2>/dev/null || [ -e "$f" ] || echo "$f" >>"$DIR/state/etc-files"
      cat >"$f" <<EOF
{# Written by edgeprobe tests/lab/lava/lava-lab.sh for $DIR #}
{% extends 'ssh.jinja2' %}
{% set ssh_host = '127.0.0.1' %}
{% set ssh_port = $SSH_PORT %}
{% set ssh_user = 'root' %}
{% set ssh_identity_file = '$DIR/ssh/id_ed25519' %}
EOF
      chown lavaserver:lavaserver "$f"
    else
      die "$f exists and was not written by this script"
    fi
    if ! lsm devices details "$dev" >/dev/null 2>&1; then
      lsm devices add --device-type ssh --worker "$worker" --tags "$tag" \
        --description "edgeprobe lab $dev" "$dev" >/dev/null
    fi
    lsm devices update --worker "$worker" --health "$INITIAL_HEALTH" "$dev" >/dev/null
  done
}

start_workers() {
  local w d
  for w in ep-site-a ep-site-b; do
    d=$DIR/worker-${w#ep-site-}
    mkdir -p "$d"
    spawn "$w" lava-worker --name "$w" --worker-dir "$d" --url "$LAVA_URL/" \
      --token-file "$DIR/state/$w.token" --log-file "$DIR/logs/$w.log" --level DEBUG \
      --ping-interval "$PING_INTERVAL"
  done
}

wait_ready() {
  local deadline=$((SECONDS + START_TIMEOUT)) ws ds
  while :; do
    ws=$(api "workers/?limit=100" 2>/dev/null | $PY -c '
import json,sys; d=json.load(sys.stdin)
print(" ".join("%s=%s/%s" % (w["hostname"], w["state"], w["health"]) for w in d["results"] if w["hostname"].startswith("ep-site-")))' || true)
    ds=$(api "devices/?limit=100" 2>/dev/null | $PY -c '
import json,sys; d=json.load(sys.stdin)
print(" ".join("%s=%s/%s" % (x["hostname"], x["state"], x["health"]) for x in d["results"] if x["hostname"] in ("dut-01","dut-02")))' || true)
    if [[ $ws == *"ep-site-a=Online/Active"* && $ws == *"ep-site-b=Online/Active"* &&
      $ds == *"dut-01=Idle/Good"* && $ds == *"dut-02=Idle/Good"* ]]; then
      log "ready: $ws $ds"
      return 0
    fi
    local p
    for p in gunicorn scheduler ep-site-a ep-site-b sshd; do
      alive "$p" || die "$p exited, see $DIR/logs/"
    done
    [ $SECONDS -lt $deadline ] || die "not ready after ${START_TIMEOUT}s: workers: $ws devices: $ds"
    sleep 3
  done
}

write_client_files() {
  cat >"$DIR/lavacli.yaml" <<EOF
# lavacli identity for this instance: XDG_CONFIG_HOME=$DIR lavacli ...
default:
  uri: $LAVA_URL/RPC2
  username: $ADMIN
  token: $LAVA_TOKEN
ep-lab:
  uri: $LAVA_URL/RPC2
  username: $ADMIN
  token: $LAVA_TOKEN
EOF
  chmod 600 "$DIR/lavacli.yaml"
  cat >"$DIR/env" <<EOF
export LAVA_URL='$LAVA_URL'
export LAVA_TOKEN='$LAVA_TOKEN'
export LAVA_USER='$ADMIN'
export LAVA_SSH_PORT='$SSH_PORT'
export LAVA_SSH_KEY='$DIR/ssh/id_ed25519'
export XDG_CONFIG_HOME='$DIR'
EOF
}

do_start() {
  local t0=$SECONDS
  [ "$(id -u)" = 0 ] || die "must run as root"
  mkdir -p "$DIR/logs" "$DIR/state"
  chmod 755 "$DIR"
  if alive gunicorn || alive scheduler; then die "$DIR already running (stop it first)"; fi
  rm -f "$DIR"/state/*.pid
  [ ${#DIR} -lt 90 ] || die "DIR path too long for a Unix socket path: $DIR"
  ls -d /lava-[0-9]* >"$DIR/state/preexisting-lava-dirs" 2>/dev/null || true
  install_packages
  runuser -u postgres -- test -x "$DIR" || die "user postgres cannot reach $DIR (make its parents o+x)"
  write_server_env
  # shellcheck disable=SC1091
  . "$DIR/server.env"
  start_postgres
  setup_database
  start_sshd
  start_server
  setup_objects
  start_workers
  write_client_files
  wait_ready
  log "start took $((SECONDS - t0)) s"
  echo "LAVA_URL=$LAVA_URL"
  echo "LAVA_TOKEN=$LAVA_TOKEN"
}

# ------------------------------------------------------------------ stop --
pids_of_lab() { # every process that carries our marker or names DIR/ (not our own ancestry)
  $PY - "$DIR" <<'PYEOF'
import os, sys
d = sys.argv[1]
mark, path = ("EP_LAVA_LAB=" + d).encode(), (d + "/").encode()
def ppid(p):
    try:
        with open("/proc/%d/stat" % p) as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except Exception:
        return 0
mine, q = set(), os.getpid()
while q > 0:
    mine.add(q)
    q = ppid(q)
for e in os.listdir("/proc"):
    if not e.isdigit() or int(e) in mine:
        continue
    try:
        with open("/proc/%s/environ" % e, "rb") as f:
            env = f.read().split(b"\0")
        with open("/proc/%s/cmdline" % e, "rb") as f:
            cmd = f.read().replace(b"\0", b" ")
    except Exception:
        continue
    if mark in env or path in cmd:
        print(e)
PYEOF
}

descendants() { # descendants PID...
  ps -e -o pid=,ppid= | $PY -c '
import sys
roots = set(sys.argv[1:]); kids = {}
for line in sys.stdin:
    p, pp = line.split(); kids.setdefault(pp, []).append(p)
out, todo = [], list(roots)
while todo:
    for k in kids.get(todo.pop(), []):
        out.append(k); todo.append(k)
print(" ".join(out))' "$@"
}

stop_group() { # stop_group NAME SIG: signal the process group started by spawn
  local f=$DIR/state/$1.pid
  [ -f "$f" ] || return 0
  kill -"$2" -- "-$(cat "$f")" 2>/dev/null || true
}

do_stop() {
  local t0=$SECONDS name
  [ -d "$DIR/state" ] || die "$DIR is not a lava-lab directory"
  # Workers first (they end their lava-run children), then the server side.
  local roots=()
  for name in ep-site-a ep-site-b scheduler gunicorn sshd; do
    [ -f "$DIR/state/$name.pid" ] && roots+=("$(cat "$DIR/state/$name.pid")")
  done
  local tree=""
  [ ${#roots[@]} -gt 0 ] && tree=$(descendants "${roots[@]}")
  for name in ep-site-a ep-site-b scheduler gunicorn sshd; do stop_group "$name" TERM; done
  # sshd sessions are in sessions of their own: signal the whole tree.
  [ -n "$tree" ] && kill -TERM $tree 2>/dev/null || true
  for _ in $(seq 50); do
    local left=0
    for name in ep-site-a ep-site-b scheduler gunicorn sshd; do alive "$name" && left=1; done
    [ $left = 0 ] && break
    sleep 0.2
  done
  for name in ep-site-a ep-site-b scheduler gunicorn sshd; do stop_group "$name" KILL; done
  [ -n "$tree" ] && kill -KILL $tree 2>/dev/null || true
  if [ -f "$DIR/state/pg.started" ] && [ -f "$DIR/pg/data/postmaster.pid" ]; then
    timeout 60 runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$DIR/pg/data" -m fast -w -t 30 stop >/dev/null 2>&1 ||
      timeout 30 runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$DIR/pg/data" -m immediate -w -t 20 stop >/dev/null 2>&1 || true
    rm -f "$DIR/state/pg.started"
  fi
  # Sweep: anything still carrying our marker or DIR in its command line.
  local stray
  for _ in 1 2 3; do
    stray=$(pids_of_lab | tr '\n' ' ')
    [ -z "${stray// /}" ] && break
    log "killing stray processes: $stray"
    kill -KILL $stray 2>/dev/null || true
    sleep 0.5
  done
  rm -f "$DIR"/state/*.pid
  # Files written outside DIR.
  if [ -f "$DIR/state/etc-files" ]; then
    while read -r f; do rm -f "$f"; done <"$DIR/state/etc-files"
    rm -f "$DIR/state/etc-files"
  fi
  local d
  for d in /lava-[0-9]*; do
    [ -e "$d" ] || continue
    grep -qxF "$d" "$DIR/state/preexisting-lava-dirs" 2>/dev/null || rm -rf "$d"
  done
  stray=$(pids_of_lab | tr '\n' ' ')
  [ -z "${stray// /}" ] || die "processes left: $stray"
  log "stop took $((SECONDS - t0)) s"
}

# -------------------------------------------------------------- dispatch --
# dispatch DIR JOB.yaml LOG: dispatcher-only run, no server, no database:
# a throwaway sshd under DIR, the rendered device dictionary (default
# fixtures/dut-01.yaml, or $EP_LAVA_DEVICE) with its ssh host/port/identity
# replaced, then `lava-run --job-id 1 --output-dir DIR/dispatch-out
# --device DIR/dispatch-device.yaml JOB.yaml > LOG 2>&1` (lava-run writes its
# log records, one JSON/YAML flow mapping a line, to stderr). Exit status: 0 if the
# job's lava/job result is pass.
do_dispatch() {
  local job=$1 out=$2 t0=$SECONDS rc=0
  local device=${EP_LAVA_DEVICE:-$(dirname "$(readlink -f "$0")")/fixtures/dut-01.yaml}
  [ "$(id -u)" = 0 ] || die "must run as root"
  [ -f "$job" ] && [ -f "$device" ] || die "missing $job or $device"
  mkdir -p "$DIR/logs" "$DIR/state"
  if alive gunicorn || alive sshd; then die "$DIR is in use (stop it first)"; fi
  ls -d /lava-[0-9]* >"$DIR/state/preexisting-lava-dirs" 2>/dev/null || true
  trap 'do_stop >/dev/null 2>&1 || true' EXIT
  start_sshd
  $PY - "$device" "$DIR/dispatch-device.yaml" "$SSH_PORT" "$DIR/ssh/id_ed25519" <<'PYEOF'
import sys, yaml
src, dst, port, key = sys.argv[1:]
d = yaml.safe_load(open(src))
ssh = d["actions"]["deploy"]["methods"]["ssh"]
ssh.update(host="127.0.0.1", port=int(port), user="root", identity_file=key)
yaml.safe_dump(d, open(dst, "w"), default_flow_style=False)
PYEOF
  rm -rf "$DIR/dispatch-out"
  mkdir -p "$DIR/dispatch-out"
  EP_LAVA_LAB=$DIR timeout "${EP_LAVA_DISPATCH_TIMEOUT:-600}" lava-run --job-id "${EP_LAVA_JOB_ID:-1}" \
    --output-dir "$DIR/dispatch-out" --device "$DIR/dispatch-device.yaml" "$job" >"$out" 2>&1 || rc=$?
  local result
  result=$(grep -F '"case": "job"' "$out" | tail -1 || true)
  log "lava-run exit $rc in $((SECONDS - t0)) s: ${result:-no job result}"
  trap - EXIT
  do_stop
  [[ $result == *'"result": "pass"'* ]]
}

# ------------------------------------------------------------------ main --
[ $# -ge 2 ] || usage
mkdir -p "$2"
DIR=$(cd "$2" && pwd -P)
case $1 in
start) [ $# -eq 2 ] || usage; do_start ;;
stop) [ $# -eq 2 ] || usage; do_stop ;;
dispatch) [ $# -eq 4 ] || usage; do_dispatch "$(readlink -f "$3")" "$4" ;;
*) usage ;;
esac
