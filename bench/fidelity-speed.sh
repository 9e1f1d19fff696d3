#!/usr/bin/env bash
# fidelity-speed.sh: what edgeprobe fidelity costs against llama-perplexity's two passes on
# the same work (a benchmark, not a test; issue 44).
#
# Each pair runs, interleaved ABBA (A first in odd pairs, B first in even ones):
#   A  edgeprobe fidelity -m MODEL --reference REF (both models in one process)
#   B  llama-perplexity -m REF --kl-divergence-base FILE, then -m MODEL --kl-divergence
# with the same text, -c, chunk count and threads. Printed: each pair's wall seconds and
# peak RSS (/usr/bin/time -v; B's is the larger of its two passes), the median of the
# paired ratios A/B with its distribution-free interval, the ratio of the best runs (host
# noise only slows), both peak RSS, and the size of llama-perplexity's full-vocabulary
# base file (edgeprobe writes none). Target: A/B <= 1, peak RSS bounded.
#
# usage: bench/fidelity-speed.sh [-b BUILD_DIR] [-m MODEL] [-r REF] [--text FILE] [-c N]
#                                [--chunks K] [-t THREADS] [--pairs N]
# env:   EDGEPROBE, LLAMA_PERPLEXITY override the binaries' paths.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"

build=build
model=synth:tiny:q4_k_m
ref=synth:tiny:f16
text=/usr/share/common-licenses/GPL-3
ctx=256
chunks=8
threads=2
pairs=5
while [[ $# -gt 0 ]]; do
  case "$1" in
    -b) build="$2"; shift 2 ;;
    -m) model="$2"; shift 2 ;;
    -r) ref="$2"; shift 2 ;;
    --text) text="$2"; shift 2 ;;
    -c) ctx="$2"; shift 2 ;;
    --chunks) chunks="$2"; shift 2 ;;
    -t) threads="$2"; shift 2 ;;
    --pairs) pairs="$2"; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "fidelity-speed: unknown argument $1" >&2; exit 2 ;;
  esac
done
edgeprobe="${EDGEPROBE:-$build/src/cli/edgeprobe}"
prefix=$(sed -n 's/^CMAKE_PREFIX_PATH:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null | head -1)
perplexity="${LLAMA_PERPLEXITY:-$prefix/bin/llama-perplexity}"
[ -x "$edgeprobe" ] || { echo "fidelity-speed: no edgeprobe at $edgeprobe (build it, or set EDGEPROBE)" >&2; exit 2; }
[ -x "$perplexity" ] || { echo "fidelity-speed: no llama-perplexity at $perplexity (set LLAMA_PERPLEXITY)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "fidelity-speed: needs /usr/bin/time (apt-get install time)" >&2; exit 2; }
model_path=$(resolve_model "$edgeprobe" "$model")
ref_path=$(resolve_model "$edgeprobe" "$ref")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# timed OUT CMD...: runs CMD, prints "WALL_S PEAK_KIB" from /usr/bin/time -v.
timed() {
  local out=$1; shift
  /usr/bin/time -v -o "$work/time" "$@" >"$out" 2>&1 || { echo "fidelity-speed: failed: $*" >&2; tail -5 "$out" >&2; exit 3; }
  python3 - "$work/time" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
m = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)", t)
wall = int(m.group(1) or 0) * 3600 + int(m.group(2)) * 60 + float(m.group(3))
rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", t).group(1))
print(wall, rss)
PY
}

run_a() {
  timed "$work/a.out" "$edgeprobe" fidelity -m "$model_path" --reference "$ref_path" --text "$text" -c "$ctx" \
    --chunks "$chunks" -t "$threads" -q -o json
}
run_b() {
  local r1 r2
  r1=$(timed "$work/b1.out" "$perplexity" -m "$ref_path" -f "$text" -c "$ctx" --chunks "$chunks" -t "$threads" \
    --kl-divergence-base "$work/base.kld")
  r2=$(timed "$work/b2.out" "$perplexity" -m "$model_path" -c "$ctx" --chunks "$chunks" -t "$threads" \
    --kl-divergence-base "$work/base.kld" --kl-divergence)
  stat -c %s "$work/base.kld" >"$work/base_bytes"
  rm -f "$work/base.kld"
  python3 -c "import sys; a=sys.argv[1:]; print(round(float(a[0])+float(a[2]),2), max(int(a[1]), int(a[3])))" $r1 $r2
}

echo "fidelity-speed: $model_path against $ref_path, -c $ctx --chunks $chunks -t $threads, $pairs pairs"
a_runs=() b_runs=()
for ((i = 0; i < pairs; i++)); do
  if ((i % 2 == 0)); then ra=$(run_a); rb=$(run_b); else rb=$(run_b); ra=$(run_a); fi
  a_runs+=("$ra"); b_runs+=("$rb")
  echo "pair $((i + 1))/$pairs: edgeprobe ${ra% *} s ${ra#* } KiB | llama-perplexity (2 passes) ${rb% *} s ${rb#* } KiB"
done
python3 - "$here" "$(cat "$work/base_bytes")" "${a_runs[@]}" -- "${b_runs[@]}" <<'PY'
import statistics, sys
sys.path.insert(0, sys.argv[1])
from paired_stats import median_ci
base_bytes = int(sys.argv[2])
rest = sys.argv[3:]
k = rest.index("--")
a = [tuple(map(float, x.split())) for x in rest[:k]]
b = [tuple(map(float, x.split())) for x in rest[k + 1:]]
ratios = sorted(x[0] / y[0] for x, y in zip(a, b))
ci = median_ci(ratios)
print(f"wall A/B (edgeprobe / llama-perplexity): median of paired ratios {statistics.median(ratios):.3f}"
      + (f" [{ci[0]:.3f}, {ci[1]:.3f}] ({ci[2]*100:.0f} %)" if ci else " (too few pairs for an interval)")
      + f", best/best {min(x[0] for x in a) / min(y[0] for y in b):.3f}")
print(f"peak RSS: edgeprobe {max(x[1] for x in a)/1024:.1f} MiB, llama-perplexity {max(y[1] for y in b)/1024:.1f} MiB "
      f"(largest pass); llama-perplexity's base file {base_bytes/1e6:.1f} MB, edgeprobe's none")
PY
