#!/usr/bin/env bash
# Telemetry overhead on decode (issue 3 benchmark, not a test): decode tokens/s with the
# sampler at 50 Hz over decode tokens/s with telemetry off (--sample-hz 0), runs
# interleaved in ABBA order so that drift (heat, other load) hits both sides alike.
# Target: ratio >= 0.99.
#
#   bench/telemetry-overhead.sh EDGEPROBE_BINARY MODEL.gguf [ROUNDS=4] [-- extra bench args]
#
# Each run: edgeprobe bench -m MODEL -p 0 -n 64 -r 5 -o json --sample-hz {50|0}.
# Reads results[0].decode.tokens_per_s.median from the JSON (python3, no jq needed).
set -euo pipefail

if [[ $# -lt 2 ]]; then
  sed -n '2,10p' "$0" >&2
  exit 2
fi
edgeprobe=$1
model=$2
rounds=${3:-4}
shift $(( $# >= 3 ? 3 : 2 ))
[[ ${1:-} == "--" ]] && shift
extra=("$@")

[[ -x $edgeprobe ]] || { echo "not executable: $edgeprobe" >&2; exit 2; }
[[ -r $model ]] || { echo "cannot read model: $model" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

run() {  # run HZ OUTFILE
  "$edgeprobe" bench -m "$model" -p 0 -n 64 -r 5 -o json --sample-hz "$1" "${extra[@]}" >"$2"
}

decode_tps() {
  python3 - "$1" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
# Provisional path: results[].decode.tokens_per_s.median (the bench result schema).
print(doc["results"][0]["decode"]["tokens_per_s"]["median"])
PY
}

on=()
off=()
for ((i = 0; i < rounds; i++)); do
  # ABBA: 50 Hz first in even rounds, off first in odd rounds.
  if ((i % 2 == 0)); then order=(50 0); else order=(0 50); fi
  for hz in "${order[@]}"; do
    out="$work/run-$i-$hz.json"
    run "$hz" "$out"
    tps=$(decode_tps "$out")
    if [[ $hz == 0 ]]; then off+=("$tps"); else on+=("$tps"); fi
    echo "round $i sample-hz $hz: decode $tps t/s" >&2
  done
done

python3 - "${#on[@]}" "${on[@]}" "${off[@]}" <<'PY'
import statistics, sys
n = int(sys.argv[1])
on = [float(v) for v in sys.argv[2:2 + n]]
off = [float(v) for v in sys.argv[2 + n:]]
pairs = [a / b for a, b in zip(on, off) if b > 0]
ratio = statistics.median(on) / statistics.median(off)
print(f"decode t/s with sampling at 50 Hz: median {statistics.median(on):.3f} over {len(on)} runs")
print(f"decode t/s with telemetry off:     median {statistics.median(off):.3f} over {len(off)} runs")
print(f"ratio (median on / median off): {ratio:.4f}   median of per-round ratios: {statistics.median(pairs):.4f}")
print("target >= 0.99:", "met" if ratio >= 0.99 else "NOT met")
PY
