#!/usr/bin/env bash
# Lab controller overhead (issue 13 target: ratio 0.97-1.03), a benchmark, not a test:
# tokens/s of `edgeprobe lab run` on the local transport (the controller starts
# `edgeprobe run --plan` on "the device", here this machine, reads its JSON Lines and
# commits every repetition to a store) over the same bench run by `edgeprobe bench`.
#
#   bench/lab-overhead.sh [EDGEPROBE] [MODEL.gguf] [PAIRS=10] [REPS=5] [-- extra bench args]
#
# EDGEPROBE defaults to build/src/cli/edgeprobe, MODEL to the synthesized TinyLlama-1.1B
# Q4_0 in ~/.cache/edgeprobe/models. Each run is pp64 and tg32 x REPS, ceilings off.
# Pairs alternate their order (ABBA) so drift on a noisy machine cancels; the figure is
# the median of the paired ratios lab/direct with a distribution-free 95 % interval
# (bench/paired_stats.py), prefill and decode apart.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh
split_args "$@"
if [[ ${args[0]:-} == "-h" || ${args[0]:-} == "--help" ]]; then
  sed -n '2,13p' "$0" >&2
  exit 2
fi
edgeprobe=$(realpath "${args[0]:-build/src/cli/edgeprobe}")
model=${args[1]:-${XDG_CACHE_HOME:-$HOME/.cache}/edgeprobe/models/synth-tinyllama-1.1b-q4_0-seed42.gguf}
pairs=${args[2]:-10}
reps=${args[3]:-5}
[[ -x $edgeprobe ]] || { echo "not executable: $edgeprobe (build it, or pass its path)" >&2; exit 2; }
[[ -r $model ]] || { echo "cannot read model: $model (scripts/setup.sh writes it)" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf 'all:\n  hosts:\n    here: {transport: local, workdir: %s/device}\n' "$work" > "$work/lab.yml"
flags=(-m "$model" -p 64 -n 32 -r "$reps" --ceilings off "${extra[@]}")

run() {  # run direct|lab OUTFILE: the bench result document (bench -o json's shape)
  if [[ $1 == direct ]]; then
    "$edgeprobe" bench "${flags[@]}" --no-store -q -o json --output "$2"
  else
    rm -f "$work/lab.db"
    "$edgeprobe" lab run -i "$work/lab.yml" --db "$work/lab.db" -q -o json "${flags[@]}" > "$2.lab"
    local run_id
    run_id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["devices"][0]["jobs"][0]["run_id"])' "$2.lab")
    "$edgeprobe" export "$run_id" --db "$work/lab.db" -o json > "$2"
  fi
}

rates() {  # rates JSONFILE: prefill and decode tokens/s (medians over the repetitions)
  python3 - "$1" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
pp = tg = None
for r in doc["results"]:
    if r.get("error"):
        sys.exit(f"{sys.argv[1]}: a test failed: {r['error']}")
    if r["config"]["n_gen"] > 0:
        tg = r["decode"]["tokens_per_s"]["median"]
    else:
        pp = r["prefill"]["tokens_per_s"]["median"]
print(pp, tg)
PY
}

echo "lab overhead: $pairs ABBA pairs of pp64+tg32 x $reps repetitions, lab run (local) vs bench" >&2
lab=()
direct=()
for ((i = 0; i < pairs; i++)); do
  if ((i % 2 == 0)); then order=(lab direct); else order=(direct lab); fi
  line="pair $((i + 1))/$pairs:"
  for side in "${order[@]}"; do
    out="$work/run-$i-$side.json"
    run "$side" "$out"
    r=$(rates "$out")
    if [[ $side == lab ]]; then lab+=("$r"); else direct+=("$r"); fi
    line+=" $side pp/tg $(printf '%s' "$r" | awk '{printf "%.1f/%.1f", $1, $2}') t/s;"
  done
  echo "$line" >&2
done

python3 - "${#lab[@]}" "${lab[@]}" "${direct[@]}" <<'PY'
import statistics, sys
n = int(sys.argv[1])
lab = [tuple(map(float, v.split())) for v in sys.argv[2:2 + n]]
direct = [tuple(map(float, v.split())) for v in sys.argv[2 + n:2 + 2 * n]]
sys.path.insert(0, "bench")
from paired_stats import median_ci
for k, name in ((0, "prefill"), (1, "decode")):
    a = [x[k] for x in lab]
    b = [x[k] for x in direct]
    ratios = sorted(x / y for x, y in zip(a, b) if y > 0)
    ci = median_ci(ratios)
    ci_text = f"{100 * ci[2]:.1f} % CI {ci[0]:.4f} .. {ci[1]:.4f}" if ci else "too few pairs for an interval"
    print(f"{name}: paired ratio lab/direct, median of {len(ratios)} pairs: {statistics.median(ratios):.4f}  ({ci_text}); "
          f"medians {statistics.median(a):.1f} vs {statistics.median(b):.1f} t/s")
PY
