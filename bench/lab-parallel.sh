#!/usr/bin/env bash
# Lab parallelism check (issue 13 target: 3 devices together in at most 1.2x the slowest
# device's own time), a benchmark, not a test. Three local "devices" (the local
# transport, three workdirs) run the same short bench: first each alone, then all three
# in one `lab run`; the figure is wall(all three) / max(wall of each alone), per round.
#
#   bench/lab-parallel.sh [EDGEPROBE] [MODEL.gguf] [ROUNDS=3] [-- extra bench args]
#
# The three devices here share this machine's cores: with fewer than three free cores the
# jobs compete for CPU and the ratio measures the machine, not the controller. Each
# device's job uses one thread (-t 1) so that a machine with three or more idle cores
# shows what the controller itself costs; run it on such a machine for the figure.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh
split_args "$@"
if [[ ${args[0]:-} == "-h" || ${args[0]:-} == "--help" ]]; then
  sed -n '2,12p' "$0" >&2
  exit 2
fi
edgeprobe=$(realpath "${args[0]:-build/src/cli/edgeprobe}")
model=${args[1]:-${XDG_CACHE_HOME:-$HOME/.cache}/edgeprobe/models/synth-tinyllama-1.1b-q4_0-seed42-r2.gguf}
rounds=${args[2]:-3}
[[ -x $edgeprobe ]] || { echo "not executable: $edgeprobe (build it, or pass its path)" >&2; exit 2; }
[[ -r $model ]] || { echo "cannot read model: $model" >&2; exit 2; }
echo "cores online: $(nproc); load average: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
{
  echo "all:"
  echo "  hosts:"
  for d in d1 d2 d3; do echo "    $d: {transport: local, workdir: $work/$d}"; done
} > "$work/lab.yml"
flags=(-m "$model" -p 64 -n 32 -t 1 -r 3 --ceilings off -q "${extra[@]}")

wall() {  # wall DEVICES: seconds of one lab run over those devices
  local t0 t1
  t0=$(date +%s.%N)
  "$edgeprobe" lab run -i "$work/lab.yml" --devices "$1" --db "$work/lab.db" -o json "${flags[@]}" > "$work/last.json" ||
    { echo "lab run over $1 failed:" >&2; cat "$work/last.json" >&2; exit 1; }
  t1=$(date +%s.%N)
  python3 -c "print(f'{$t1 - $t0:.2f}')"
}

ratios=()
for ((i = 0; i < rounds; i++)); do
  a1=$(wall d1); a2=$(wall d2); a3=$(wall d3)
  all=$(wall d1,d2,d3)
  r=$(python3 -c "print(f'{$all / max($a1, $a2, $a3):.3f}')")
  ratios+=("$r")
  echo "round $((i + 1))/$rounds: alone $a1 / $a2 / $a3 s; all three $all s; ratio $r" >&2
done
python3 -c "import statistics,sys; v=sorted(map(float,sys.argv[1:])); print(f'all three / slowest alone: median {statistics.median(v):.3f} of {len(v)} rounds (min {v[0]:.3f}, max {v[-1]:.3f})')" "${ratios[@]}"
