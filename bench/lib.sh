# Shared by the bench scripts (sourced, not run).

# resolve_model EDGEPROBE MODEL: prints the GGUF path for MODEL. A synth:SHAPE:QUANT spec
# is synthesized once through edgeprobe itself, so every tool compared reads one file.
resolve_model() {
  local edgeprobe=$1 model=$2
  if [[ "$model" == synth:* ]]; then
    "$edgeprobe" bench -m "$model" -p 8 -n 0 -r 1 --no-warmup --no-hash -q -o json --no-store --ceilings off >/dev/null
    local shape_quant=${model#synth:}
    model="${EDGEPROBE_MODEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/edgeprobe/models}/synth-${shape_quant%%:*}-${shape_quant#*:}-seed42.gguf"
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
