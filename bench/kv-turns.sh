#!/usr/bin/env bash
# A session's later turns over a slow link: the state as a tail (only the cells the decode
# node lacks: its own reply and the new turn) against the whole state every turn.
#
#   bench/kv-turns.sh [BUILD_DIR] [ROUNDS=3] [MBIT=30] [ONE_WAY_MS=10]
#
# Two network namespaces joined by a veth pair with tbf at MBIT and a propagation delay
# of ONE_WAY_MS each way (tests/support/link_delay: a netfilter-queue delay, since these
# kernels have no netem). kv-serve runs in one, `edgeprobe session --prefill-remote` in the
# other, --prefill-transfer tail and whole alternating round by round. Prints, over the
# later turns (turn index >= 1), the median state bytes and TTFT of each, and the median
# of the per-turn ratios whole/tail. Needs root, iproute2 and iptables.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${2:-3}
mbit=${3:-30}
delay_ms=${4:-10}
edgeprobe=$build/src/cli/edgeprobe
delayer=$build/tests/support/link_delay
for tool in "$edgeprobe" "$delayer"; do
  [ -x "$tool" ] || { echo "kv-turns: build $tool first (scripts/setup.sh)" >&2; exit 3; }
done
[ "$(id -u)" = 0 ] || { echo "kv-turns: needs root (network namespaces)" >&2; exit 3; }
command -v iptables >/dev/null || { echo "kv-turns: needs iptables (apt-get install iptables)" >&2; exit 3; }

work=$(mktemp -d)
ns_p=ep-kvturns-p-$$ ns_d=ep-kvturns-d-$$
cleanup() {
  for ns in "$ns_p" "$ns_d"; do
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    [ -n "$pids" ] && kill $pids 2>/dev/null
    ip netns del "$ns" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT
ip netns add "$ns_p"
ip netns add "$ns_d"
ip link add kvt-p-$$ netns "$ns_p" type veth peer name kvt-d-$$ netns "$ns_d"
ip -n "$ns_p" addr add 10.232.0.1/30 dev kvt-p-$$
ip -n "$ns_d" addr add 10.232.0.2/30 dev kvt-d-$$
for pair in "$ns_p kvt-p-$$" "$ns_d kvt-d-$$"; do
  set -- $pair
  ip -n "$1" link set lo up
  ip -n "$1" link set "$2" up
  # 1 ms bucket: a state must not cross its first 10 ms at line speed.
  tc -n "$1" qdisc replace dev "$2" root tbf rate "${mbit}mbit" burst $((mbit * 125 > 3028 ? mbit * 125 : 3028)) \
    limit $((mbit * 125000 / 4 + 262144))
  ip netns exec "$1" "$delayer" 7 "$delay_ms" >"$work/delay-$1" 2>&1 &
  for _ in $(seq 50); do grep -q ready "$work/delay-$1" && break; sleep 0.1; done
  ip netns exec "$1" iptables -w 5 -A INPUT -i "$2" -j NFQUEUE --queue-num 7
done

model=$work/kv-turns.gguf
"$edgeprobe" synth --n-vocab 4096 --n-embd 512 --n-layer 8 --n-ff 1024 --n-head 8 --n-head-kv 8 --n-ctx 4096 \
  -q q8_0 --output "$model" >/dev/null
export EDGEPROBE_KV_TOKEN=kv-turns-$$-$RANDOM
ip netns exec "$ns_p" "$edgeprobe" kv-serve -m "$model" --listen 10.232.0.1:0 --port-file "$work/port" \
  --max-ctx 4096 -t 1 2>"$work/serve.err" &
for _ in $(seq 300); do [ -s "$work/port" ] && break; sleep 0.1; done
[ -s "$work/port" ] || { cat "$work/serve.err" >&2; exit 3; }
server=10.232.0.1:$(cat "$work/port")

for r in $(seq 1 "$rounds"); do
  order=(tail whole)
  [ $((r % 2)) = 0 ] && order=(whole tail)
  for transfer in "${order[@]}"; do
    echo "round $r/$rounds: $transfer" >&2
    ip netns exec "$ns_d" "$edgeprobe" session -m "$model" --rounds 1 --conversations 8 --max-tokens 16 -c 4096 \
      -t 1 --sample-hz 0 --no-store -q -o json --prefill-remote "$server" --prefill-transfer "$transfer" \
      >"$work/$transfer-$r.json"
  done
done

python3 - "$work" "$rounds" "$mbit" "$delay_ms" <<'PY'
import json, statistics, sys
work, rounds, mbit, delay = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
def later_turns(path):
    out = {}
    for c in json.load(open(path))["configs"]:
        for t in c["turns"]:
            rec = t.get("prefill_remote", {})
            if t["turn_index"] >= 1 and rec.get("mode") == "remote":
                out[(t["conversation_id"], t["turn_index"])] = rec
    return out
ratios, figures = [], {"tail": {"bytes": [], "ttft": []}, "whole": {"bytes": [], "ttft": []}}
for r in range(1, rounds + 1):
    tail, whole = later_turns(f"{work}/tail-{r}.json"), later_turns(f"{work}/whole-{r}.json")
    for key in tail.keys() & whole.keys():
        for name, rec in (("tail", tail[key]), ("whole", whole[key])):
            figures[name]["bytes"].append(rec["state_bytes"])
            figures[name]["ttft"].append(rec["ttft_ms"])
        ratios.append(whole[key]["ttft_ms"] / tail[key]["ttft_ms"])
print(f"link: {mbit} Mbit/s, {delay} ms each way; {len(ratios)} later turns over {rounds} rounds")
for name, f in figures.items():
    print(f"  {name:5}: median state {statistics.median(f['bytes']) / 1e3:8.1f} kB, median TTFT {statistics.median(f['ttft']):7.1f} ms")
print(f"  TTFT whole/tail, median of per-turn ratios: {statistics.median(ratios):.2f}"
      f" (quartiles {statistics.quantiles(ratios, n=4)[0]:.2f}-{statistics.quantiles(ratios, n=4)[2]:.2f})")
PY
