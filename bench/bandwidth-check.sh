#!/usr/bin/env bash
# bandwidth-check.sh: is edgeprobe's bandwidth figure right? (a benchmark, not a test)
#
# 1. edgeprobe probe's memory bandwidth against bench/stream_ref, a STREAM-like reference
#    run with the same buffer sizes and thread counts. Target: within +-15 %.
# 2. With a model (-m), the roofline efficiencies `edgeprobe bench` reports for pp512 and
#    tg64 (and llama-bench's rates against the same ceilings, when llama-bench is found),
#    over --rounds interleaved rounds, medians last. Decode: the efficiency against the
#    binding ceiling (min of bandwidth and the model's matvec kernels; target 0.8-1.1) and
#    the share of pure bandwidth, both. Prefill: at most 1 (the ceiling is an upper bound).
#
# usage: bench/bandwidth-check.sh [-b BUILD_DIR] [-t THREADS] [-m MODEL.gguf] [--buffer-mib N] [--rounds N]
#                                 [--llama-bench PATH]
# env:   EDGEPROBE, STREAM_REF, LLAMA_BENCH override the binaries' paths.
set -euo pipefail

build=build
threads=2
model=""
buffer_mib=1024
rounds=3
llama_bench="${LLAMA_BENCH:-}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    -b) build="$2"; shift 2 ;;
    -t) threads="$2"; shift 2 ;;
    -m) model="$2"; shift 2 ;;
    --buffer-mib) buffer_mib="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --llama-bench) llama_bench="$2"; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "bandwidth-check: unknown argument $1" >&2; exit 2 ;;
  esac
done
edgeprobe="${EDGEPROBE:-$build/src/cli/edgeprobe}"
stream_ref="${STREAM_REF:-$build/bench/stream_ref}"
for bin in "$edgeprobe" "$stream_ref"; do
  [[ -x "$bin" ]] || { echo "bandwidth-check: $bin not built (cmake --build $build)" >&2; exit 3; }
done
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

echo "== 1. edgeprobe probe vs STREAM-like reference ($threads threads, ${buffer_mib} MiB buffer, $rounds rounds)"
# The two programs run one after the other, so load from other processes can favour either:
# alternating them for a few rounds and keeping each figure's best makes the ratio about the
# kernels rather than about which one ran while the machine was busy. A private cache dir
# so an old cached figure is never compared.
for ((round = 1; round <= rounds; round++)); do
  XDG_CACHE_HOME="$tmp/cache" "$edgeprobe" probe --refresh --no-compute -o json -t "$threads" \
    --buffer-mib "$buffer_mib" > "$tmp/probe.$round.json"
  buffer_bytes="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ceilings"]["bandwidth"]["buffer_bytes"])' "$tmp/probe.$round.json")"
  # edgeprobe's read streams the whole buffer and its copy moves one half onto the other;
  # the reference's arrays are each half the buffer, so its copy moves the same bytes and
  # its sum reads both arrays (the whole buffer), as edgeprobe's read does.
  "$stream_ref" --bytes "$((buffer_bytes / 2))" --threads "$threads" > "$tmp/ref.$round.jsonl"
done

python3 - "$tmp" "$rounds" <<'PY'
import json, sys
tmp, rounds = sys.argv[1], int(sys.argv[2])
probe, ref, share = {}, {}, 1.0
for i in range(1, rounds + 1):
    bw = json.load(open(f"{tmp}/probe.{i}.json"))["ceilings"]["bandwidth"]
    for p in bw["points"]:
        if p["scope"] == "device":
            k = ("sum" if p["kernel"] == "read" else p["kernel"], p["threads"])
            probe[k] = max(probe.get(k, 0), p["best_gb_per_s"])
            share = min(share, p.get("cpu_share") or 1)
    for line in open(f"{tmp}/ref.{i}.jsonl"):
        if line.strip():
            r = json.loads(line)
            k = (r["kernel"], r["threads"])
            ref[k] = max(ref.get(k, 0), r["best_gb_per_s"])
print(f"{'kernel':<8} {'threads':>7} {'edgeprobe':>10} {'reference':>10} {'ratio':>6}   (GB/s, best of {rounds} rounds)")
worst = 0.0
for (kernel, t), v in sorted(probe.items()):
    r = ref.get((kernel, t))
    if not r:
        continue
    worst = max(worst, abs(v / r - 1))
    print(f"{'read/sum' if kernel == 'sum' else kernel:<8} {t:>7} {v:>10.2f} {r:>10.2f} {v / r:>6.2f}")
triad = ", ".join(f"{v:.2f}" for (k, t), v in sorted(ref.items()) if k == "triad")
print(f"decode ceiling (edgeprobe best read): {max(v for (k, t), v in probe.items() if k == 'sum'):.2f} GB/s; "
      f"reference triad by threads: {triad} GB/s")
if share < 0.9:
    print(f"note: probe threads got as little as {share * 100:.0f}% of the CPU: other processes were running")
print(f"worst deviation {worst * 100:.1f} % -> {'PASS' if worst <= 0.15 else 'OUTSIDE'} the +-15 % target")
PY

if [[ -z "$model" ]]; then
  echo "== 2. roofline efficiencies: skipped (pass -m tinyllama-1.1b-q4_0.gguf)"
  exit 0
fi
echo "== 2. roofline efficiencies of $model: pp512 + tg64, $threads threads, $rounds interleaved rounds"
# Each round gets a private cache, so the bench probes its ceilings afresh (bandwidth, the
# model's prefill shapes and decode matvecs) under the same conditions as the run it judges;
# llama-bench, when found, runs right after on the same model and is judged against the
# same round's ceilings. The machine is noisy: read the medians over rounds, not one round.
if [[ -z "$llama_bench" ]]; then
  for candidate in "${XDG_CACHE_HOME:-$HOME/.cache}"/edgeprobe/llama.cpp-*/bin/llama-bench; do
    [[ -x "$candidate" ]] && llama_bench="$candidate" && break
  done
fi
for ((round = 1; round <= rounds; round++)); do
  echo "   round $round/$rounds: edgeprobe bench${llama_bench:+, llama-bench}" >&2
  XDG_CACHE_HOME="$tmp/cache-bench.$round" "$edgeprobe" bench -m "$model" -p 512 -n 64 -t "$threads" -r 3 -o json -q \
    --no-store --no-hash > "$tmp/bench.$round.json"
  if [[ -n "$llama_bench" ]]; then
    "$llama_bench" -m "$model" -p 512 -n 64 -t "$threads" -r 3 -o json > "$tmp/llama-bench.$round.json" 2>/dev/null || true
  fi
done
python3 - "$tmp" "$rounds" <<'PY'
import json, os, statistics, sys
tmp, rounds = sys.argv[1], int(sys.argv[2])
rows = []
for i in range(1, rounds + 1):
    doc = json.load(open(f"{tmp}/bench.{i}.json"))
    row = {}
    for r in doc.get("results", []):
        roof = r.get("roofline") or {}
        if r["config"]["n_prompt"] > 0:
            row["pp"] = (r.get("prefill") or {}).get("tokens_per_s", {}).get("median")
            row["pp_ceiling"] = roof.get("prefill_ceiling_tokens_per_s")
            row["pp_eff"] = roof.get("prefill_efficiency")
            row["pp_basis"] = roof.get("prefill_compute_basis")
            row["pp_gflops"] = roof.get("prefill_compute_gflop_per_s")
        if r["config"]["n_gen"] > 0:
            row["tg"] = (r.get("decode") or {}).get("tokens_per_s", {}).get("median")
            for k in ("decode_ceiling_tokens_per_s", "decode_bound", "decode_efficiency", "decode_bandwidth_efficiency",
                      "decode_bandwidth_ceiling_tokens_per_s", "decode_kernel_ceiling_tokens_per_s", "bandwidth_gb_per_s",
                      "decode_kernel_gb_per_s", "decode_achieved_gb_per_s"):
                row[k] = roof.get(k)
            row["notes"] = roof.get("notes", [])
    path = f"{tmp}/llama-bench.{i}.json"
    if os.path.exists(path) and os.path.getsize(path) > 0:
        for t in json.load(open(path)):
            ts = statistics.median(t["samples_ts"])
            if t["n_prompt"] > 0 and t["n_gen"] == 0:
                row["lb_pp"] = ts
            elif t["n_gen"] > 0 and t["n_prompt"] == 0:
                row["lb_tg"] = ts
    rows.append(row)

def f(v, fmt="{:.2f}"):
    return fmt.format(v) if isinstance(v, (int, float)) else "n/a"

def ratio(a, b):
    return a / b if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b > 0 else None

print(f"{'round':>5} {'pp t/s':>7} {'pp ceil':>7} {'pp eff':>6} {'lb pp':>7} {'lb eff':>6} | {'tg t/s':>6} "
      f"{'bw ceil':>7} {'kern ceil':>9} {'bound':>9} {'tg eff':>6} {'bw eff':>6} {'lb tg':>6} {'lb eff':>6} {'lb bw':>6}")
cols = {k: [] for k in ("pp_eff", "lb_pp_eff", "decode_efficiency", "decode_bandwidth_efficiency", "lb_tg_eff",
                        "lb_tg_bw_eff", "bandwidth_gb_per_s", "decode_kernel_gb_per_s", "decode_achieved_gb_per_s",
                        "pp", "lb_pp", "tg", "lb_tg", "pp_gflops")}
for i, r in enumerate(rows, 1):
    r["lb_pp_eff"] = ratio(r.get("lb_pp"), r.get("pp_ceiling"))
    r["lb_tg_eff"] = ratio(r.get("lb_tg"), r.get("decode_ceiling_tokens_per_s"))
    r["lb_tg_bw_eff"] = ratio(r.get("lb_tg"), r.get("decode_bandwidth_ceiling_tokens_per_s"))
    for k in cols:
        if isinstance(r.get(k), (int, float)):
            cols[k].append(r[k])
    print(f"{i:>5} {f(r.get('pp'), '{:.1f}'):>7} {f(r.get('pp_ceiling'), '{:.1f}'):>7} {f(r.get('pp_eff')):>6} "
          f"{f(r.get('lb_pp'), '{:.1f}'):>7} {f(r.get('lb_pp_eff')):>6} | {f(r.get('tg'), '{:.1f}'):>6} "
          f"{f(r.get('decode_bandwidth_ceiling_tokens_per_s'), '{:.1f}'):>7} "
          f"{f(r.get('decode_kernel_ceiling_tokens_per_s'), '{:.1f}'):>9} {r.get('decode_bound') or 'n/a':>9} "
          f"{f(r.get('decode_efficiency')):>6} {f(r.get('decode_bandwidth_efficiency')):>6} "
          f"{f(r.get('lb_tg'), '{:.1f}'):>6} {f(r.get('lb_tg_eff')):>6} {f(r.get('lb_tg_bw_eff')):>6}")
med = {k: statistics.median(v) if v else None for k, v in cols.items()}
print(f"medians over {rounds} rounds:")
print(f"  prefill: edgeprobe {f(med['pp'], '{:.1f}')} t/s, efficiency {f(med['pp_eff'])}; llama-bench "
      f"{f(med['lb_pp'], '{:.1f}')} t/s, {f(med['lb_pp_eff'])} of the same ceiling "
      f"(compute {f(med['pp_gflops'], '{:.0f}')} GFLOP/s, {rows[-1].get('pp_basis') or 'n/a'})")
print(f"  decode:  edgeprobe {f(med['tg'], '{:.1f}')} t/s = {f(med['decode_achieved_gb_per_s'])} GB/s; bandwidth "
      f"{f(med['bandwidth_gb_per_s'])} GB/s, matvec kernels {f(med['decode_kernel_gb_per_s'])} GB/s")
print(f"           efficiency {f(med['decode_efficiency'])} against the binding ceiling, "
      f"{f(med['decode_bandwidth_efficiency'])} of pure bandwidth; llama-bench {f(med['lb_tg'], '{:.1f}')} t/s: "
      f"{f(med['lb_tg_eff'])} / {f(med['lb_tg_bw_eff'])}")
pp_ok = med["pp_eff"] is not None and med["pp_eff"] <= 1.0 and (med["lb_pp_eff"] is None or med["lb_pp_eff"] <= 1.0)
tg_ok = med["decode_efficiency"] is not None and 0.8 <= med["decode_efficiency"] <= 1.1
print(f"prefill efficiency {'PASS' if pp_ok else 'OUTSIDE'} (<= 1: the ceiling is an upper bound); "
      f"decode efficiency {'PASS' if tg_ok else 'OUTSIDE'} the 0.8-1.1 target")
for note in sorted({n for r in rows for n in r.get("notes", [])}):
    print("  note:", note)
PY
