#!/usr/bin/env bash
# predict-accuracy.sh: how close `edgeprobe predict` comes to `edgeprobe bench` (a benchmark,
# not a test; issue 25).
#
# Every configuration is predicted first, from the probe alone (a shape and a quantization:
# no model file; a quantization never run here is predicted from its kernel probes only),
# then measured with bench. Error = measured / predicted - 1, with the measured rate the
# best repetition (this host's noise only slows a run down), decode and prefill apart.
# Target: median |error| <= 10 % and every configuration <= 25 %, per phase.
#
# usage: bench/predict-accuracy.sh [-b BUILD_DIR] [-r REPS] [--quick] [--variant LOWER]
#   --quick    three configurations instead of the full set (a smoke run)
#   --variant  the lower CPU variant of the set (default: haswell, x86's AVX2 build)
# env:   EDGEPROBE overrides the binary's path.
set -euo pipefail
cd "$(dirname "$0")/.."

build=build
reps=3
quick=0
variant=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    -b) build="$2"; shift 2 ;;
    -r) reps="$2"; shift 2 ;;
    --quick) quick=1; shift ;;
    --variant) variant="$2"; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "predict-accuracy: unknown argument $1" >&2; exit 2 ;;
  esac
done
edgeprobe="${EDGEPROBE:-$build/src/cli/edgeprobe}"
[[ -x "$edgeprobe" ]] || { echo "predict-accuracy: $edgeprobe not built (cmake --build $build)" >&2; exit 3; }
# haswell (AVX2) is what an x86 build without AVX-512 falls back to; elsewhere pass --variant.
[[ -z "$variant" ]] && variant=haswell
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
p=512
n=64

# name | model (shape quant) | threads | depth | variant
configs=(
  "tinyllama q4_0 t2|tinyllama-1.1b q4_0|2|0|"
  "tinyllama q4_0 t1|tinyllama-1.1b q4_0|1|0|"
  "tinyllama q4_0 t2 d2048|tinyllama-1.1b q4_0|2|2048|"
  "tinyllama q4_k_m t2|tinyllama-1.1b q4_k_m|2|0|"
  "tinyllama q4_k_m t2 d2048|tinyllama-1.1b q4_k_m|2|2048|"
  "tinyllama q8_0 t2|tinyllama-1.1b q8_0|2|0|"
  "tinyllama q8_0 t1|tinyllama-1.1b q8_0|1|0|"
  "tinyllama f16 t2|tinyllama-1.1b f16|2|0|"
  "llama-3.2-3b q4_0 t2|llama-3.2-3b q4_0|2|0|"
  "tinyllama q4_0 t2 $variant|tinyllama-1.1b q4_0|2|0|$variant"
)
if [[ $quick == 1 ]]; then configs=("${configs[@]:0:1}" "${configs[3]}" "${configs[6]}"); fi

echo "== predicting ${#configs[@]} configurations from the probe alone (pp$p, tg$n)"
i=0
for c in "${configs[@]}"; do
  IFS='|' read -r name model threads depth var <<<"$c"
  read -r shape quant <<<"$model"
  vflag=()
  [[ -n "$var" ]] && vflag=(--cpu-variant "$var")
  "$edgeprobe" predict -m "$shape" -q "$quant" -t "$threads" -p "$p" -n "$n" -d "$depth" "${vflag[@]}" \
    -o json --quiet > "$tmp/predict.$i.json"
  i=$((i + 1))
done

echo "== measuring them with bench ($reps repetitions each)"
i=0
for c in "${configs[@]}"; do
  IFS='|' read -r name model threads depth var <<<"$c"
  read -r shape quant <<<"$model"
  vflag=()
  [[ -n "$var" ]] && vflag=(--cpu-variant "$var")
  "$edgeprobe" bench -m "synth:$shape:$quant" -t "$threads" -p "$p" -n "$n" -d "$depth" -r "$reps" "${vflag[@]}" \
    --no-hash --no-store -o json -q > "$tmp/bench.$i.json"
  i=$((i + 1))
done

printf '%s\n' "${configs[@]}" > "$tmp/configs.txt"
python3 - "$tmp" "${#configs[@]}" <<'PY'
import json, statistics, sys
tmp, count = sys.argv[1], int(sys.argv[2])
names = [line.split("|")[0] for line in open(f"{tmp}/configs.txt").read().splitlines()]
rows = {"prefill": [], "decode": []}
print(f"| configuration | pp predicted | pp measured (best) | pp error | tg predicted | tg measured (best) | tg error | tg bound |")
print("|---|---|---|---|---|---|---|---|")
for i in range(count):
    pred = json.load(open(f"{tmp}/predict.{i}.json"))["rows"][0]
    bench = json.load(open(f"{tmp}/bench.{i}.json"))
    best = {"prefill": None, "decode": None}
    for r in bench["results"]:
        if r.get("error"):
            continue
        for rep in r["repetitions"]:
            for phase, key in (("prefill", "prefill_tokens_per_s"), ("decode", "decode_tokens_per_s")):
                if r["config"]["n_prompt" if phase == "prefill" else "n_gen"] > 0 and \
                   r["config"]["n_gen" if phase == "prefill" else "n_prompt"] == 0 and rep.get(key):
                    best[phase] = max(best[phase] or 0, rep[key])
    cells = []
    for phase, key in (("prefill", "prefill_tokens_per_s"), ("decode", "decode_tokens_per_s")):
        p = pred.get(key)
        m = best[phase]
        if p and m:
            err = m / p["value"] - 1
            rows[phase].append((names[i], err))
            cells += [f"{p['value']:.2f}", f"{m:.2f}", f"{err * 100:+.1f}%"]
        else:
            cells += [f"{p['value']:.2f}" if p else "n/a", f"{m:.2f}" if m else "n/a", "n/a"]
    print(f"| {names[i]} | " + " | ".join(cells) + f" | {pred.get('decode_bound') or '-'} |")
print()
ok = True
for phase in ("prefill", "decode"):
    errs = [abs(e) for _, e in rows[phase]]
    if not errs:
        print(f"{phase}: no configuration measured")
        ok = False
        continue
    med, worst = statistics.median(errs), max(errs)
    within = med <= 0.10 and worst <= 0.25
    ok = ok and within
    print(f"{phase}: median |error| {med * 100:.1f}%, worst {worst * 100:.1f}% over {len(errs)} configurations "
          f"(target <= 10% and <= 25%): {'met' if within else 'NOT met'}")
sys.exit(0 if ok else 1)
PY
