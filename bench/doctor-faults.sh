#!/usr/bin/env bash
# doctor on injected faults (issue 5 benchmark, not a test). For each fault this machine
# can produce: the finding doctor puts first, the slowdown doctor estimated (or measured)
# for it, and the slowdown measured here by running the same bench test healthy and with
# the fault, interleaved. Then the wall time of full `edgeprobe doctor` runs over the wall
# time of llama-bench's default run (-p 512 -n 128 -r 5) on the same model, median over ROUNDS
# interleaved pairs (BUDGET=S passes --budget S): target <= 2.
#
#   bench/doctor-faults.sh [MODEL=synth:tinyllama-1.1b:q4_0] [ROUNDS=2]
#   FAULTS=f16,cold bench/doctor-faults.sh   # only the faults whose key is listed
#   (keys: x64 f16 t8 taskset quota hog cold; the timing runs only without FAULTS)
#
# Slowdowns compare doctor's reference turn (128 prompt tokens, then 32 generated):
# seconds with the fault over seconds without it, median over ROUNDS interleaved pairs;
# for the load fault, the first load's milliseconds instead.
# Faults that need root (cgroup quota, dropping the page cache) are skipped without it.
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:-synth:tinyllama-1.1b:q4_0}
rounds=${2:-2}
edgeprobe=${EDGEPROBE:-$PWD/build/src/cli/edgeprobe}
prefix=$(scripts/build-llama.sh 2>/dev/null)
llama_bench="$prefix/bin/llama-bench"
[ -x "$edgeprobe" ] || { echo "build edgeprobe first (scripts/setup.sh)" >&2; exit 3; }
# shellcheck source=bench/lib.sh
source bench/lib.sh
model=$(resolve_model "$edgeprobe" "$model") || exit 2
work=$(mktemp -d)
cgroup=""
hog=""
cleanup() {
  [ -n "$hog" ] && kill "$hog" 2>/dev/null || true
  [ -n "$cgroup" ] && rmdir "$cgroup" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# Turn seconds of a bench result: 128/pp + 32/tg (or the first load's ms with METRIC=load).
turn_s() {
  python3 - "$1" "${METRIC:-turn}" <<'PY'
import json, sys
r = {x["test"]: x for x in json.load(open(sys.argv[1]))["results"] if x["status"] == "ok"}
if sys.argv[2] == "load":
    print(r["pp128"]["load"]["cold_ms"])
else:
    print(128 / r["pp128"]["prefill"]["tokens_per_s"]["median"] + 32 / r["tg32"]["decode"]["tokens_per_s"]["median"])
PY
}
# wrap: a command prefix that injects the fault ("" for none)
bench_turn() {  # bench_turn OUT PREFIX ARGS...
  local out=$1 prefix=$2
  shift 2
  sh -c "$prefix \"\$@\"" sh "$edgeprobe" bench -m "$model" -p 128 -n 32 -r 3 -o json -q --no-store "$@" >"$out"
  turn_s "$out"
}

fault_names=()
fault_prefix=()
fault_args=()
fault_setup=()
fault_keys=()
add_fault() {  # add_fault KEY NAME PREFIX ARGS [SETUP]
  [ -z "${FAULTS:-}" ] || [[ ",$FAULTS," == *",$1,"* ]] || return 0
  fault_keys+=("$1"); fault_names+=("$2"); fault_prefix+=("$3"); fault_args+=("$4"); fault_setup+=("${5:-}")
}

add_fault x64 "lowest CPU variant (x64)" "" "--cpu-variant x64"
f16="$work/tinyllama-twin-q4_0.gguf"  # f16 weights under a q4_0 name
add_fault f16 "f16 weights named q4_0" "" "" "f16"
add_fault t8 "8 threads on 2 CPUs" "" "-t 8"
add_fault taskset "2 threads confined to 1 CPU" "taskset -c 0" "-t 2"
if [ "$(id -u)" = 0 ] && [ -w /sys/fs/cgroup/cpu ]; then
  cgroup=/sys/fs/cgroup/cpu/edgeprobe-doctor-bench-$$
  mkdir -p "$cgroup"
  echo 100000 >"$cgroup/cpu.cfs_period_us"
  echo 30000 >"$cgroup/cpu.cfs_quota_us"
  add_fault quota "cgroup CPU quota 30 %" "echo \$\$ > $cgroup/cgroup.procs && exec" "-t 2"
fi
add_fault hog "a competing CPU-bound process" "" "" "hog"
add_fault cold "no mmap from a cold page cache" "" "-mmp 0" "cold"

if [ -n "$(printf '%s\n' "${fault_setup[@]}" | grep -x f16 || true)" ]; then
  echo "synthesizing the f16 twin of the model (once)" >&2
  f16_src="${XDG_CACHE_HOME:-$HOME/.cache}/edgeprobe/models/doctor-bench-f16-twin.gguf"
  [ -f "$f16_src" ] || "$edgeprobe" synth --shape tinyllama-1.1b -q f16 --output "$f16_src" >/dev/null
  ln -sf "$f16_src" "$f16"
fi

printf '| fault | doctor names first | doctor\x27s factor | measured slowdown | basis |\n|---|---|---|---|---|\n' >"$work/table.md"
for i in "${!fault_names[@]}"; do
  name=${fault_names[$i]} prefix=${fault_prefix[$i]} args=${fault_args[$i]} setup=${fault_setup[$i]}
  echo "fault: $name" >&2
  m=$model
  [ "$setup" = f16 ] && m=$f16
  export METRIC=turn
  [ "$setup" = cold ] && METRIC=load
  start_hog() { if [ "$setup" = hog ]; then (while :; do :; done) & hog=$!; fi; }
  stop_hog() { if [ -n "$hog" ]; then kill "$hog"; wait "$hog" 2>/dev/null || true; hog=""; fi; }
  drop_cache() { if [ "$setup" = cold ]; then python3 -c "import os,sys; fd=os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd,0,0,os.POSIX_FADV_DONTNEED)" "$m"; fi; }
  # doctor with the fault
  drop_cache
  start_hog
  # shellcheck disable=SC2086
  sh -c "$prefix \"\$@\"" sh "$edgeprobe" doctor -m "$m" $args -o json -q >"$work/doctor-$i.json" || true
  stop_hog
  # measured slowdown: the same bench healthy and with the fault, interleaved
  ratios=()
  for r in $(seq 1 "$rounds"); do
    healthy=$(bench_turn "$work/h.json" "")
    drop_cache
    start_hog
    # shellcheck disable=SC2086
    faulty=$(sh -c "$prefix \"\$@\"" sh "$edgeprobe" bench -m "$m" -p 128 -n 32 -r 3 -o json -q --no-store $args >"$work/f.json" && turn_s "$work/f.json")
    stop_hog
    ratios+=("$(python3 -c "print($faulty / $healthy)")")
  done
  python3 - "$work/doctor-$i.json" "$name" "${ratios[@]}" >>"$work/table.md" <<'PY'
import json, statistics, sys
name, ratios = sys.argv[2], [float(x) for x in sys.argv[3:]]
try:
    d = json.load(open(sys.argv[1]))["doctor"]
    top = d["findings"][0]
    est = top.get("speedup", top.get("estimated_speedup"))  # the second: results from before one name
    basis = (top.get("speedup_basis") or "-").split(":")[0]
    print(f"| {name} | {top['id']} ({top['severity']}) | {'x%.2f' % est if est else '-'} | x{statistics.median(ratios):.2f} | {basis} |")
except Exception as e:
    print(f"| {name} | doctor failed: {e} | - | x{statistics.median(ratios):.2f} | - |")
PY
done

cat "$work/table.md"
[ -n "${FAULTS:-}" ] && exit 0
echo "timing full doctor runs against llama-bench's default run, $rounds interleaved pairs (ABBA)" >&2
ratios=()
for r in $(seq 1 "$rounds"); do
  time_doctor() { local t0; t0=$(date +%s.%N); "$edgeprobe" doctor -m "$model" -q ${BUDGET:+--budget "$BUDGET"} >/dev/null; python3 -c "import time; print(time.time() - $t0)"; }
  time_llama() { local t0; t0=$(date +%s.%N); "$llama_bench" -m "$model" >/dev/null 2>&1; python3 -c "import time; print(time.time() - $t0)"; }
  if [ $((r % 2)) = 1 ]; then d=$(time_doctor); l=$(time_llama); else l=$(time_llama); d=$(time_doctor); fi
  echo "  pair $r: doctor $d s, llama-bench $l s" >&2
  ratios+=("$(python3 -c "print($d / $l)")")
done
python3 - "${ratios[@]}" <<'PY'
import statistics, sys
r = [float(x) for x in sys.argv[1:]]
each = ", ".join(f"{x:.2f}" for x in r)
print(f"\ndoctor / llama-bench default run: median x{statistics.median(r):.2f} over {len(r)} interleaved pairs ({each}) (target <= 2)")
PY
