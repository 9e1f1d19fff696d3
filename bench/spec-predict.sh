#!/usr/bin/env bash
# spec-predict.sh: how close `edgeprobe predict --draft` comes to the speed-up `bench --draft`
# measures (a benchmark, not a test; issue 49).
#
# For each configuration (draft-max 2, 4, 8 x threads 1, 2): bench --draft on trained:main
# with trained:draft (-p 0 -n 128, REPS interleaved pairs of plain and speculative decoding),
# then predict for the same files, thread count and draft length at the run's measured
# acceptance per draft position (--acceptance-from the bench result). The costs are
# predict's own, from the probe and the per-step costs; only the acceptance is measured.
# Error = predicted / measured - 1 of the speed-up (the median of the run's pairs). The
# table also gives the speed-up the same formula makes of the run's measured costs, so that
# a miss can be put on the formula or on the predicted costs. Target: median |error| <= 15 %.
# The load average is printed around each run: the pairs are timed, a busy host moves them.
#
# usage: bench/spec-predict.sh [-b BUILD_DIR] [-r REPS] [--quick]
#   --quick    two configurations (draft-max 2 and 8 at 1 thread) instead of six
# env:   EDGEPROBE overrides the binary's path.
set -euo pipefail
cd "$(dirname "$0")/.."

build=build
reps=5
quick=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    -b) build="$2"; shift 2 ;;
    -r) reps="$2"; shift 2 ;;
    --quick) quick=1; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "spec-predict: unknown argument $1" >&2; exit 2 ;;
  esac
done
edgeprobe="${EDGEPROBE:-$build/src/cli/edgeprobe}"
[[ -x "$edgeprobe" ]] || { echo "spec-predict: $edgeprobe not built (cmake --build $build)" >&2; exit 3; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
n=128

# threads | draft-max
configs=("1|2" "1|4" "1|8" "2|2" "2|4" "2|8")
if [[ $quick == 1 ]]; then configs=("1|2" "1|8"); fi

echo "== load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
i=0
for c in "${configs[@]}"; do
  IFS='|' read -r threads k <<<"$c"
  before=$(cut -d' ' -f1 /proc/loadavg)
  "$edgeprobe" bench -m trained:main --draft trained:draft --draft-max "$k" -t "$threads" -p 0 -n "$n" -r "$reps" \
    --ceilings off --no-store -o json -q > "$tmp/bench.$i.json"
  echo "$before $(cut -d' ' -f1 /proc/loadavg)" > "$tmp/load.$i"
  read -r target draft < <(python3 - "$tmp/bench.$i.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
print(doc["provenance"]["models"][0]["path"], doc["results"][0]["speculative"]["draft"]["path"])
PY
)
  "$edgeprobe" predict -m "$target" --draft "$draft" --draft-max "$k" -t "$threads" -p 0 -n "$n" \
    --acceptance-from "$tmp/bench.$i.json" -o json --quiet > "$tmp/predict.$i.json"
  echo "configuration $((i + 1))/${#configs[@]} (t$threads, draft-max $k) done" >&2
  i=$((i + 1))
done
echo "== load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

printf '%s\n' "${configs[@]}" > "$tmp/configs.txt"
python3 - "$tmp" "${#configs[@]}" <<'PY'
import json, statistics, sys
tmp, count = sys.argv[1], int(sys.argv[2])
configs = open(f"{tmp}/configs.txt").read().split()


def measured_costs(s):
    """What one verify step cost in the run: as doctor's speculative finding reads them."""
    pairs = s["pairs"]
    plain_tokens = sum(max(0, p["tokens"] - 1) for p in pairs)
    target = sum(p["plain_ms"] for p in pairs) / plain_tokens
    draft = sum(p["draft_ms"] for p in pairs) / s["drafted"]
    verify = (sum(p["verify_ms"] for p in pairs) - s["plain_steps"] * target) / s["verify_steps"]
    return target, draft, verify


print("| t | draft-max | alpha (measured) | tokens / step | target ms pred / meas | draft ms pred / meas "
      "| verify ms pred / meas | break-even alpha | speed-up predicted | from measured costs | measured (pairs) "
      "| error | load before / after |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
errors, formula_errors, notes = [], [], []
for i in range(count):
    threads, k = configs[i].split("|")
    k = int(k)
    bench = json.load(open(f"{tmp}/bench.{i}.json"))
    spec = bench["results"][0]["speculative"]
    measured = spec["summary"]["speed_up"]
    row = json.load(open(f"{tmp}/predict.{i}.json"))["rows"][0]["speculative"][0]
    mt, md, mv = measured_costs(spec)
    e = row["expected_tokens"]
    from_measured = e * mt / (k * md + mv)
    predicted = row["speed_up"]
    err = predicted / measured - 1
    errors.append(abs(err))
    formula_errors.append(abs(from_measured / measured - 1))
    for n in json.load(open(f"{tmp}/predict.{i}.json"))["rows"][0].get("notes", []):
        if n not in notes:
            notes.append(n)
    be = row["break_even_acceptance"]
    load = open(f"{tmp}/load.{i}").read().split()
    print(f"| {threads} | {k} | {row['acceptance']['alpha']:.2f} | {e:.2f} "
          f"| {row['target_token_ms']:.3f} / {mt:.3f} | {row['draft_token_ms']:.3f} / {md:.3f} "
          f"| {row['verify_ms']:.3f} / {mv:.3f} | {'never' if be is None else f'{be:.2f}'} | x{predicted:.2f} "
          f"| x{from_measured:.2f} | x{measured:.2f} (x{spec['summary']['speed_up_min']:.2f}..x{spec['summary']['speed_up_max']:.2f}) "
          f"| {err * 100:+.1f}% | {load[0]} / {load[1]} |")
print()
for n in notes:
    print(f"note (predict): {n}")
print(f"the formula alone (the run's measured costs): median |error| {statistics.median(formula_errors) * 100:.1f}%, "
      f"worst {max(formula_errors) * 100:.1f}%")
med = statistics.median(errors)
print(f"speed-up: median |error| {med * 100:.1f}%, worst {max(errors) * 100:.1f}% over {count} configurations "
      f"(target <= 15%): {'met' if med <= 0.15 else 'NOT met'}")
sys.exit(0 if med <= 0.15 else 1)
PY
