#!/usr/bin/env bash
# KV-state transfer on loopback against raw TCP, and KV bytes per token against the
# formula 2 * n_layer * n_kv_head * head_dim * bytes_per_element.
#
#   bench/kv-transfer.sh [BUILD_DIR] [ROUNDS]
#
# Each round measures raw TCP (Python sockets, the same byte count as one state) and then
# one bench process whose prefills run on a kv-serve node (--prefill-remote): the state's
# throughput is its frame's bytes over its receive time on the decode node (receive and
# checksum; the server checksums while serializing). Rounds
# interleave the two so host-speed swings hit both; the ratio is taken per round and the
# median reported (target >= 0.8). Environment: KV_PROMPT (tokens, default 2048),
# KV_SHAPE (synth flags for the model, default a 22-layer model with a small FFN so the
# prefill is quick and the state large).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${2:-5}
prompt=${KV_PROMPT:-2048}
edgeprobe=$build/src/cli/edgeprobe
[ -x "$edgeprobe" ] || { echo "kv-transfer: build $edgeprobe first" >&2; exit 3; }
work=$(mktemp -d)
server_pid=
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

model=$work/kv-bench.gguf
# shellcheck disable=SC2086
"$edgeprobe" synth ${KV_SHAPE:---n-vocab 4096 --n-embd 256 --n-layer 22 --n-ff 512 --n-head 4 --n-head-kv 4 --n-ctx 4096} \
  -q q8_0 --output "$model" >/dev/null
export EDGEPROBE_KV_TOKEN=kv-bench-$$-$RANDOM
"$edgeprobe" kv-serve -m "$model" --listen 127.0.0.1:0 --port-file "$work/port" --max-ctx $((prompt + 16)) -t 1 \
  2>"$work/serve.err" &
server_pid=$!
for _ in $(seq 300); do [ -s "$work/port" ] && break; sleep 0.1; done
[ -s "$work/port" ] || { cat "$work/serve.err" >&2; exit 3; }
port=$(cat "$work/port")

raw_tcp_mbit() {  # bytes -> Mbit/s received over loopback TCP
  python3 - "$1" <<'PY'
import socket, sys, threading, time
n = int(sys.argv[1])
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(1)
def send():
    c = socket.create_connection(srv.getsockname()); c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    c.sendall(bytes(n)); c.close()
threading.Thread(target=send).start()
conn, _ = srv.accept()
buf = bytearray(n); view = memoryview(buf); got = 0
first = conn.recv_into(view, n); t0 = time.perf_counter(); got = first
while got < n:
    k = conn.recv_into(view[got:], n - got)
    if k == 0: break
    got += k
dt = time.perf_counter() - t0
print((got - first) * 8 / 1e6 / dt)
PY
}

results=$work/rounds.txt
: >"$results"
for r in $(seq "$rounds"); do
  # The warm-up's transfer maps the receive buffer; the timed one reuses it, as every
  # transfer after a session's first does.
  "$edgeprobe" bench -m "$model" -p "$prompt" -n 0 -r 1 -t 1 --ceilings off --sample-hz 0 --no-store -q \
    -o json --prefill-remote "127.0.0.1:$port" >"$work/bench.json"
  read -r state_bytes state_mbit per_token n_past < <(python3 - "$work/bench.json" <<'PY'
import json, sys
rec = json.load(open(sys.argv[1]))["results"][0]["repetitions"][0]["prefill_remote"]
assert rec["mode"] == "remote", rec.get("fallback_reason")
print(rec["state_bytes"], rec["link_mbit_s"], rec["kv_bytes_per_token"], rec["n_past"])
PY
)
  raw=$(raw_tcp_mbit "$state_bytes")
  echo "$r $state_mbit $raw $state_bytes $per_token $n_past" >>"$results"
  echo "round $r: state $state_mbit Mbit/s, raw TCP $raw Mbit/s ($state_bytes bytes)" >&2
done

python3 - "$results" "$model" "$edgeprobe" <<'PY'
import json, statistics, subprocess, sys
rows = [l.split() for l in open(sys.argv[1])]
ratios = [float(r[1]) / float(r[2]) for r in rows]

# The model's shape from its GGUF header (the same reader edgeprobe uses is C++; read the
# few keys we need here).
import struct
def gguf_meta(path):
    f = open(path, "rb"); assert f.read(4) == b"GGUF"
    ver, = struct.unpack("<I", f.read(4)); n_t, n_kv = struct.unpack("<QQ", f.read(16))
    def s(): n, = struct.unpack("<Q", f.read(8)); return f.read(n).decode()
    sizes = {0:1,1:1,2:2,3:2,4:4,5:4,6:4,7:1,10:8,11:8,12:8}
    def val(t):
        if t == 8: return s()
        if t == 9:
            et, n = struct.unpack("<IQ", f.read(12)); return [val(et) for _ in range(n)]
        fmt = {0:"B",1:"b",2:"H",3:"h",4:"I",5:"i",6:"f",7:"?",10:"Q",11:"q",12:"d"}[t]
        return struct.unpack("<" + fmt, f.read(sizes[t]))[0]
    meta = {}
    for _ in range(n_kv):
        k = s(); t, = struct.unpack("<I", f.read(4)); meta[k] = val(t)
    return meta
m = gguf_meta(sys.argv[2])
arch = m["general.architecture"]
n_layer, n_embd = m[arch + ".block_count"], m[arch + ".embedding_length"]
n_head, n_head_kv = m[arch + ".attention.head_count"], m[arch + ".attention.head_count_kv"]
formula = 2 * n_layer * n_head_kv * (n_embd // n_head) * 2  # f16 K and V
per_token = statistics.median(float(r[4]) for r in rows)
print(f"state transfer / raw TCP on loopback: median {statistics.median(ratios):.2f} "
      f"(rounds: {', '.join(f'{x:.2f}' for x in ratios)}; target >= 0.8)")
print(f"state {statistics.median(float(r[1]) for r in rows):.0f} Mbit/s, raw TCP {statistics.median(float(r[2]) for r in rows):.0f} Mbit/s, "
      f"{int(rows[0][3])} bytes for {rows[0][5]} tokens")
print(f"KV bytes/token: {per_token:.1f} measured, {formula} by 2*n_layer*n_kv_head*head_dim*2 "
      f"(n_layer {n_layer}, n_kv_head {n_head_kv}, head_dim {n_embd // n_head}, f16): ratio {per_token / formula:.4f}")
PY
