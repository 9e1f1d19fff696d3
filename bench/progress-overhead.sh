#!/usr/bin/env bash
# Progress display overhead (issue 18 benchmark, not a test): tokens/s of a bench with the
# progress bar drawn on a terminal (a pseudo-terminal made by script(1)) over the same
# bench with -q (no display). The display draws only between repetitions, at most 5
# times a second, so the target is a ratio of 1 within the noise.
#
#   bench/progress-overhead.sh [EDGEPROBE] [MODEL.gguf] [PAIRS=12] [REPS=5] [-- extra bench args]
#
# EDGEPROBE defaults to build/src/cli/edgeprobe, MODEL to the synthesized TinyLlama-1.1B
# Q4_0 in ~/.cache/edgeprobe/models (scripts/setup.sh writes it). Each run is
# `bench -p 64 -n 32 -r REPS --no-warmup` (pp64 and tg32, so the bar is redrawn between
# REPS repetitions of each), --output to a file so the terminal gets only the bar.
#
# Both sides run under script(1) (see run()); only -q differs.
# Built for a noisy machine, like bench/telemetry-overhead.sh: pairs of one run with the
# display and one without, the order alternating (ABBA), so drift between minutes
# cancels; the figure is the median of the paired ratios on/off with a distribution-free
# 95 % interval of the median (binomial order statistics), and the ratio of the best run
# of each side (the least disturbed one). Prefill and decode are reported apart.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v script >/dev/null || { echo "needs script(1) (util-linux / bsdutils)" >&2; exit 3; }

# shellcheck source=bench/lib.sh
source bench/lib.sh
split_args "$@"
if [[ ${args[0]:-} == "-h" || ${args[0]:-} == "--help" ]]; then
  sed -n '2,19p' "$0" >&2
  exit 2
fi
edgeprobe=${args[0]:-build/src/cli/edgeprobe}
model=${args[1]:-${XDG_CACHE_HOME:-$HOME/.cache}/edgeprobe/models/synth-tinyllama-1.1b-q4_0-seed42-r2.gguf}
pairs=${args[2]:-12}
reps=${args[3]:-5}

[[ -x $edgeprobe ]] || { echo "not executable: $edgeprobe (build it, or pass its path)" >&2; exit 2; }
[[ -r $model ]] || { echo "cannot read model: $model (scripts/setup.sh writes it)" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

run() {  # run on|off OUTFILE
  local cmd=("$edgeprobe" bench -m "$model" -p 64 -n 32 -r "$reps" --no-warmup --no-hash --no-store --ceilings off
             -o json --output "$2" "${extra[@]}")
  # Both sides run on a pseudo-terminal made by script (-e: the command's exit status,
  # -q: no banner), so both are a new session: with autogroup scheduling a new session
  # gets its own share of a busy machine, and a run outside one would be measured against
  # a run inside one, not the display. The only difference is -q.
  [[ $1 == off ]] && cmd+=(-q)
  script -qec "$(printf '%q ' "${cmd[@]}")" /dev/null >"$2.tty"
  if [[ $1 == on ]]; then
    grep -q 'repetitions' "$2.tty" || { echo "no progress bar on the terminal in run $2" >&2; exit 1; }
  else
    [[ ! -s $2.tty ]] || { echo "output on the terminal with -q in run $2" >&2; exit 1; }
  fi
}

echo "progress overhead: $pairs ABBA pairs of pp64+tg32 x $reps repetitions, bar on a pty vs -q" >&2
abba_pairs on off "$pairs" "$work"
