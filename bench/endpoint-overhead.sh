#!/usr/bin/env bash
# What a server costs over the same model in-process (issue 15 benchmark, not a test):
# the same model and threads run in-process and through llama-server on loopback,
# interleaved; prints server/in-process ratios for TTFT and decode tokens/s.
#
#   bench/endpoint-overhead.sh [EDGEPROBE] [MODEL.gguf|synth:SHAPE:QUANT] [ROUNDS=10] [PROMPT=64] [TOKENS=16] [THREADS=2] [-- extra bench args]
#
# EDGEPROBE defaults to build/src/cli/edgeprobe, MODEL to synth:tiny:q4_0; LLAMA_SERVER
# in the environment overrides the llama-server of the cached llama.cpp build
# (scripts/build-llama.sh prints its prefix).
#
# Both sides run the same workload code: `bench --api completions` sends each repetition
# as one streamed completion request with PROMPT token ids and TOKENS to generate
# (ignore_eos), in-process through the engine's own completer, and with --endpoint to
# llama-server (cache_prompt off, so the server prefills the whole prompt too). Each run
# is one timed request (-r 1); the in-process run has its warm-up request first (a fresh
# process), the server, running all along, needs none. Rounds alternate the order ABBA;
# each gives one paired ratio server/in-process, so drift between minutes cancels. The
# figures: the median paired ratio with a distribution-free 95 % interval
# (bench/paired_stats.py), and the best-of-rounds ratio (best TTFT over best TTFT, best
# decode rate over best decode rate), which the machine's noise disturbs least.
# llama-server (this build) answers a reply that ends inside a UTF-8 character with an
# error (its output parser); a round where that happens is run again with the next seed on
# both sides, and the count is printed.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh
split_args "$@"
if [[ ${args[0]:-} == "-h" || ${args[0]:-} == "--help" ]]; then
  sed -n '2,20p' "$0" >&2
  exit 2
fi
edgeprobe=${args[0]:-build/src/cli/edgeprobe}
model_spec=${args[1]:-synth:tiny:q4_0}
rounds=${args[2]:-10}
prompt=${args[3]:-64}
tokens=${args[4]:-16}
threads=${args[5]:-2}
[[ -x $edgeprobe ]] || { echo "not executable: $edgeprobe (build it, or pass its path)" >&2; exit 2; }
model=$(resolve_model "$edgeprobe" "$model_spec")
server=${LLAMA_SERVER:-$(scripts/build-llama.sh 2>/dev/null)/bin/llama-server}
[[ -x $server ]] || { echo "no llama-server at $server (scripts/build-llama.sh builds it)" >&2; exit 3; }

work=$(mktemp -d)
server_pid=
cleanup() {
  [[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$server" -m "$model" --host 127.0.0.1 --port "$port" -t "$threads" -c $((prompt + tokens + 64)) -np 1 \
  --alias bench >"$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 600); do
  curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log" >&2; echo "llama-server exited" >&2; exit 3; }
  sleep 0.2
done
curl -sf "http://127.0.0.1:$port/health" >/dev/null || { echo "llama-server did not come up" >&2; exit 3; }

common=(bench --api completions --pg "$prompt,$tokens" -p 0 -n 0 -t "$threads" -r 1 --no-hash --no-store --ceilings off
        --sample-hz 0 -q -o json)
run() {  # run inproc|server OUT SEED
  if [[ $1 == inproc ]]; then
    "$edgeprobe" "${common[@]}" --seed "$3" -m "$model" "${extra[@]}" >"$2" 2>"$2.err"
  else
    "$edgeprobe" "${common[@]}" --seed "$3" --no-warmup --endpoint "http://127.0.0.1:$port" --api-model bench "${extra[@]}" \
      >"$2" 2>"$2.err"
  fi
}
figures() {  # figures OUT: "ttft_ms decode_tokens_per_s" medians of the run
  python3 - "$1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
if r.get("error"):
    sys.exit(f"{sys.argv[1]}: the run failed: {r['error']}")
print(r["ttft_ms"]["median"], r["decode"]["tokens_per_s"]["median"])
PY
}

echo "endpoint overhead: $rounds ABBA rounds of pp$prompt+tg$tokens, -t $threads, in-process vs llama-server on loopback" >&2
samples=()
rerolled=0
for ((i = 0; i < rounds; i++)); do
  if ((i % 2 == 0)); then order=(inproc server); else order=(server inproc); fi
  line="round $((i + 1))/$rounds:"
  declare -A got=()
  # llama-server refuses a reply that ends inside a UTF-8 character (its output parser;
  # random-weight models end there often): such a round is run again, both sides, with
  # the next seed, and counted.
  for ((attempt = 0; attempt < 6; attempt++)); do
    seed=$((1000 * i + attempt))
    ok=1
    for side in "${order[@]}"; do
      if run "$side" "$work/$side-$i.json" "$seed"; then
        got[$side]=$(figures "$work/$side-$i.json")
      else
        ok=0
        grep -q "Content-only format" "$work/$side-$i.json.err" || { cat "$work/$side-$i.json.err" >&2; exit 3; }
        rerolled=$((rerolled + 1))
        break
      fi
    done
    ((ok)) && break
  done
  ((ok)) || { echo "round $((i + 1)): six seeds refused by the server's output parser" >&2; exit 3; }
  for side in "${order[@]}"; do
    line+=" $side ttft $(cut -d' ' -f1 <<<"${got[$side]}") ms, $(cut -d' ' -f2 <<<"${got[$side]}") t/s;"
  done
  samples+=("${got[inproc]} ${got[server]}")
  echo "$line" >&2
done

echo "rounds run again with another seed after llama-server refused a reply ending mid-character: $rerolled" >&2
python3 - "${samples[@]}" <<'PY'
import statistics, sys
sys.path.insert(0, "bench")
from paired_stats import median_ci
rows = [tuple(map(float, s.split())) for s in sys.argv[1:]]
def report(name, idx, better_low):
    a = [r[idx] for r in rows]       # in-process
    b = [r[idx + 2] for r in rows]   # server
    ratios = sorted(y / x for x, y in zip(a, b) if x > 0)
    best = (min(b) / min(a)) if better_low else (max(b) / max(a))
    ci = median_ci(ratios)
    ci_text = f"95 % CI [{ci[0]:.3f}, {ci[1]:.3f}] (coverage {ci[2]:.3f})" if ci else "too few rounds for a CI"
    print(f"{name}: server/in-process median paired ratio {statistics.median(ratios):.3f}, {ci_text}; "
          f"best-of-rounds ratio {best:.3f} (in-process best {min(a) if better_low else max(a):.2f}, "
          f"server best {min(b) if better_low else max(b):.2f}; n={len(ratios)})")
report("TTFT ms", 0, True)
report("decode tokens/s", 1, False)
PY
