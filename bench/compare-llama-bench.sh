#!/usr/bin/env bash
# edgeprobe against the reference llama-bench (same llama.cpp build, same model, threads
# and test sizes), interleaved so that machine noise hits both alike. Prints
# edgeprobe/llama-bench for prefill and decode tokens/s (medians of repetitions, then the
# median over rounds) and for peak RSS of the whole process (GNU time). The decode rate
# is taken over every step on both sides (llama-bench's definition).
#
#   bench/compare-llama-bench.sh [MODEL] [THREADS=1,2] [ROUNDS=3] [PP=128] [TG=32] [REPS=5]
#
# MODEL defaults to the synthesized TinyLlama-1.1B Q4_0 (synth:tinyllama-1.1b:q4_0).
# Target (issue 2): tokens/s ratios within 0.97-1.03, RSS ratio <= 1.10.
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:-synth:tinyllama-1.1b:q4_0}
threads=${2:-1,2}
rounds=${3:-3}
pp=${4:-128}
tg=${5:-32}
reps=${6:-5}
edgeprobe=${EDGEPROBE:-build/src/cli/edgeprobe}
prefix=$(scripts/build-llama.sh)
llama_bench="$prefix/bin/llama-bench"
[ -x "$edgeprobe" ] || { echo "build edgeprobe first (scripts/setup.sh)" >&2; exit 3; }
[ -x "$llama_bench" ] || { echo "no llama-bench at $llama_bench" >&2; exit 3; }
[ -x /usr/bin/time ] || { echo "needs GNU time (apt-get install time)" >&2; exit 3; }

# shellcheck source=bench/lib.sh
source bench/lib.sh
model=$(resolve_model "$edgeprobe" "$model") || exit 2

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for t in ${threads//,/ }; do
  for r in $(seq 1 "$rounds"); do
    echo "round $r/$rounds, $t thread(s): edgeprobe" >&2
    /usr/bin/time -f "%M" -o "$out/ep-$t-$r.rss" \
      "$edgeprobe" bench -m "$model" -t "$t" -p "$pp" -n "$tg" -r "$reps" -o json -q --no-hash --no-store > "$out/ep-$t-$r.json"
    echo "round $r/$rounds, $t thread(s): llama-bench" >&2
    /usr/bin/time -f "%M" -o "$out/lb-$t-$r.rss" \
      "$llama_bench" -m "$model" -t "$t" -p "$pp" -n "$tg" -r "$reps" -o json > "$out/lb-$t-$r.json" 2>/dev/null
  done
done

python3 - "$out" "$threads" "$rounds" "$pp" "$tg" <<'PY'
import json, statistics, sys
out, threads, rounds, pp, tg = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
def ep(t, r):
    j = json.load(open(f"{out}/ep-{t}-{r}.json"))
    res = {x["test"]: x for x in j["results"]}
    # llama-bench's tg rate counts every step, the first included; edgeprobe's decode rate
    # leaves the first generated token out. Compare like with like: every step here too.
    all_steps = [len(r["decode_step_ms"]) / (sum(r["decode_step_ms"]) / 1e3) for r in res[f"tg{tg}"]["repetitions"]]
    return (res[f"pp{pp}"]["prefill"]["tokens_per_s"]["median"], statistics.median(all_steps))
def lb(t, r):
    rows = json.load(open(f"{out}/lb-{t}-{r}.json"))
    get = lambda p, n: statistics.median(next(x for x in rows if x["n_prompt"] == p and x["n_gen"] == n)["samples_ts"])
    return (get(pp, 0), get(0, tg))
def rss(kind, t, r):
    return int(open(f"{out}/{kind}-{t}-{r}.rss").read().split()[-1])
print(f"| threads | metric | edgeprobe | llama-bench | ratio (median over {rounds} interleaved rounds) |")
print("|---|---|---|---|---|")
for t in threads:
    e = [ep(t, r) for r in range(1, rounds + 1)]
    l = [lb(t, r) for r in range(1, rounds + 1)]
    for i, name in enumerate([f"prefill pp{pp} t/s", f"decode tg{tg} t/s"]):
        ratio = statistics.median(e[k][i] / l[k][i] for k in range(rounds))
        print(f"| {t} | {name} | {statistics.median(x[i] for x in e):.2f} | {statistics.median(x[i] for x in l):.2f} | {ratio:.3f} |")
    re = [rss("ep", t, r) for r in range(1, rounds + 1)]
    rl = [rss("lb", t, r) for r in range(1, rounds + 1)]
    print(f"| {t} | peak RSS MiB | {statistics.median(re)/1024:.0f} | {statistics.median(rl)/1024:.0f} | {statistics.median(a/b for a, b in zip(re, rl)):.3f} |")
PY
