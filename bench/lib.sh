# Shared by the bench scripts (sourced, not run).

# resolve_model EDGEPROBE MODEL: prints the GGUF path for MODEL. A synth:SHAPE:QUANT spec
# is synthesized once through edgeprobe itself, so every tool compared reads one file.
resolve_model() {
  local edgeprobe=$1 model=$2
  if [[ "$model" == synth:* ]]; then
    "$edgeprobe" bench -m "$model" -p 8 -n 0 -r 1 --no-warmup --no-hash -q -o json --no-store --ceilings off >/dev/null
    local shape_quant=${model#synth:}
    model="${EDGEPROBE_MODEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/edgeprobe/models}/synth-${shape_quant%%:*}-${shape_quant#*:}-seed42-r2.gguf"
  fi
  [ -f "$model" ] || { echo "model '$model' not found" >&2; return 2; }
  echo "$model"
}

# split_args ARGS... [-- EXTRA...]: sets the arrays args (before --) and extra (after it,
# passed on to edgeprobe bench).
split_args() {
  args=()
  extra=()
  while [[ $# -gt 0 ]]; do
    if [[ $1 == "--" ]]; then
      shift
      extra=("$@")
      return
    fi
    args+=("$1")
    shift
  done
}

# bench_rates JSONFILE: "PREFILL DECODE", the medians over the repetitions of an
# `edgeprobe bench -o json` result holding one prefill-only and one decode test.
bench_rates() {
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

# abba_pairs A B PAIRS WORKDIR: PAIRS interleaved pairs of the caller's `run SIDE OUTFILE`
# for sides A and B (ABBA: A first in even pairs, B first in odd ones), each run's rates
# read by bench_rates and echoed per pair on stderr; then the paired ratios A/B for
# prefill and decode (bench/paired_stats.py).
abba_pairs() {
  local a=$1 b=$2 pairs=$3 work=$4 i side out r line
  local -a order runs_a=() runs_b=()
  for ((i = 0; i < pairs; i++)); do
    if ((i % 2 == 0)); then order=("$a" "$b"); else order=("$b" "$a"); fi
    line="pair $((i + 1))/$pairs:"
    for side in "${order[@]}"; do
      out="$work/run-$i-$side.json"
      run "$side" "$out"
      r=$(bench_rates "$out")
      if [[ $side == "$a" ]]; then runs_a+=("$r"); else runs_b+=("$r"); fi
      line+=" $side pp/tg $(printf '%s' "$r" | awk '{printf "%.1f/%.1f", $1, $2}') t/s;"
    done
    echo "$line" >&2
  done
  python3 bench/paired_stats.py rates "$a/$b" "${#runs_a[@]}" "${runs_a[@]}" "${runs_b[@]}"
}
