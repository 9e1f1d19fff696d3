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
model=${args[1]:-${XDG_CACHE_HOME:-$HOME/.cache}/edgeprobe/models/synth-tinyllama-1.1b-q4_0-seed42-r2.gguf}
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

echo "lab overhead: $pairs ABBA pairs of pp64+tg32 x $reps repetitions, lab run (local) vs bench" >&2
abba_pairs lab direct "$pairs" "$work"
