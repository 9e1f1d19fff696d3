#!/usr/bin/env bash
# The hub under load (issue 48), a benchmark, not a test: fills a SQLite store with
# generated bench runs (bench/store_fill.cpp; default 100,000 runs x 2 configurations x 3
# repetitions), starts `edgeprobe serve` on loopback (the time it takes to index the store
# is printed), then runs --clients concurrent keep-alive clients for --seconds over the
# main pages and prints, per page, requests, errors, p50 and p99 latency, and the
# throughput of all. The target (issue 48): p99 < 250 ms for every page on 2 cores, and
# no error. The clients run on the same machine as the hub, so on 2 cores they take CPU
# from it: the figures are an upper bound on the hub's own latency.
#
#   bench/hub-load.sh [--runs N] [--clients C] [--seconds S] [--keep DIR] [--edgeprobe PATH]
set -euo pipefail
cd "$(dirname "$0")/.."

runs=100000 clients=64 seconds=60 keep="" edgeprobe=build/src/cli/edgeprobe
while [[ $# -gt 0 ]]; do
  case $1 in
    --runs) runs=$2 ;;
    --clients) clients=$2 ;;
    --seconds) seconds=$2 ;;
    --keep) keep=$2 ;;
    --edgeprobe) edgeprobe=$2 ;;
    -h | --help) sed -n '2,12p' "$0" >&2; exit 2 ;;
    *) echo "hub-load.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  [[ $# -ge 2 ]] || { echo "hub-load.sh: $1 needs a value" >&2; exit 2; }
  shift 2
done
fill=build/bench/store_fill
[[ -x $fill ]] || { echo "not executable: $fill (cmake --build --preset default --target store_fill)" >&2; exit 2; }
[[ -x $edgeprobe ]] || { echo "not executable: $edgeprobe" >&2; exit 2; }
if [[ -n $keep ]]; then mkdir -p "$keep" && dir=$(realpath "$keep"); else dir=$(mktemp -d); fi
cleanup() {
  [[ -n ${hub_pid:-} ]] && kill "$hub_pid" 2>/dev/null && wait "$hub_pid" 2>/dev/null
  [[ -n $keep ]] || rm -rf "$dir"
}
trap cleanup EXIT

db=$dir/hub-$runs.db
if [[ ! -f $db ]]; then
  echo "filling $db with $runs runs" >&2
  "$fill" fill --sqlite "$db" --runs "$runs" --configs 2 --reps 3 --decode-steps 16 >&2
fi
rm -f "$dir/port"
start=$(date +%s.%N)
"$edgeprobe" serve --db "$db" --listen 127.0.0.1:0 --port-file "$dir/port" -q &
hub_pid=$!
while [[ ! -f $dir/port ]]; do
  kill -0 "$hub_pid" 2>/dev/null || { echo "hub-load.sh: serve exited" >&2; exit 3; }
  sleep 0.2
done
echo "indexed $runs runs and listening after $(echo "$(date +%s.%N) - $start" | bc) s; RSS $(ps -o rss= -p "$hub_pid") KiB" >&2

python3 - "$(cat "$dir/port")" "$clients" "$seconds" "$runs" <<'PY'
import http.client, json, random, sys, threading, time
port, clients, seconds, runs = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
c.request("GET", "/api/leaderboards"); boards = json.loads(c.getresponse().read())
board = boards[0] if boards else {"model": "none", "quant": "none"}
from urllib.parse import quote
pages = {
    "runs": lambda: "/runs",
    "runs filtered": lambda: "/runs?device=%02x&sort=decode&order=desc" % random.randrange(256),
    "runs page 100": lambda: "/runs?page=100",
    "api runs": lambda: "/api/runs?per_page=200",
    "run": lambda: "/runs/%d" % random.randint(1, runs),
    "leaderboards": lambda: "/leaderboards",
    "leaderboard": lambda: "/leaderboard?model=%s&quant=%s" % (quote(board["model"]), quote(board["quant"])),
    "compare": lambda: "/compare?a=%d&b=%d" % (random.randint(1, runs), random.randint(1, runs)),
}
names = list(pages)
lat = {n: [] for n in names}; errors = {n: 0 for n in names}; lock = threading.Lock()
stop = time.time() + seconds
def client(i):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    k = i
    while time.time() < stop:
        name = names[k % len(names)]; k += 1
        t0 = time.perf_counter()
        try:
            conn.request("GET", pages[name]()); r = conn.getresponse(); r.read()
            ok = r.status == 200 or (name == "compare" and r.status == 400)  # two runs of different models: refused with the reason
            if r.getheader("Connection") == "close": conn.close(); conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        except Exception:
            ok = False; conn.close(); conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        dt = time.perf_counter() - t0
        with lock:
            lat[name].append(dt)
            if not ok: errors[name] += 1
threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
t0 = time.time(); [t.start() for t in threads]; [t.join() for t in threads]; wall = time.time() - t0
def pct(xs, p): xs = sorted(xs); return xs[min(len(xs) - 1, int(p * len(xs)))] * 1000 if xs else float("nan")
print("| page | requests | errors | p50 ms | p99 ms |\n|---|---:|---:|---:|---:|")
for n in names:
    print("| %s | %d | %d | %.1f | %.1f |" % (n, len(lat[n]), errors[n], pct(lat[n], 0.5), pct(lat[n], 0.99)))
total = sum(len(v) for v in lat.values())
print("\n%d clients, %.0f s: %d requests, %.0f requests/s, %d errors" % (clients, wall, total, total / wall, sum(errors.values())))
PY
