#!/usr/bin/env bash
# bandwidth-check.sh: is edgeprobe's bandwidth figure right? (a benchmark, not a test)
#
# 1. edgeprobe probe's memory bandwidth against bench/stream_ref, a STREAM-like reference
#    built -O3 -march=native -ffast-math, run with the same buffer sizes and thread counts,
#    interleaved over --rounds rounds (at least 5 to judge). Target (issue 19): the probe's
#    read >= 0.95 of the reference's read (sum) at every thread count, as the ratio of the
#    best passes over all rounds; the median of the per-round ratios and its interval are
#    printed next to it. Copy is shown, not judged (the probe's copy streams its stores).
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
rounds=5
llama_bench="${LLAMA_BENCH:-}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    -b) build="$2"; shift 2 ;;
    -t) threads="$2"; shift 2 ;;
    -m) model="$2"; shift 2 ;;
    --buffer-mib) buffer_mib="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --llama-bench) llama_bench="$2"; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
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
# they alternate which goes first, round by round, and the comparison uses each one's best
# pass over all rounds (noise only ever slows a pass down) and the per-round ratios. A
# private cache dir so an old cached figure is never compared.
# The reference follows the probe's latest run (round 1 runs the probe first): arrays of half
# its buffer (the probe may round or cap the size asked), and as many timed passes per
# kernel as the probe's read took, so neither best pass comes from more tries under noise.
ref_bytes=0
ref_reps=0
run_probe() {
  XDG_CACHE_HOME="$tmp/cache" "$edgeprobe" probe --refresh --no-compute -o json -t "$threads" \
    --buffer-mib "$buffer_mib" > "$tmp/probe.$1.json"
  read -r ref_bytes ref_reps < <(python3 -c 'import json,sys
bw = json.load(open(sys.argv[1]))["ceilings"]["bandwidth"]
passes = max(p["passes"] for p in bw["points"] if p["kernel"] == "read" and p["scope"] == "device")
print(bw["buffer_bytes"] // 2, passes + 1)' "$tmp/probe.$1.json")
}
run_ref() {
  # edgeprobe's read streams the whole buffer and its copy moves one half onto the other;
  # the reference's arrays are each half the buffer, so its copy moves the same bytes and
  # its sum reads both arrays (the whole buffer), as edgeprobe's read does.
  "$stream_ref" --bytes "$ref_bytes" --threads "$threads" --reps "$ref_reps" > "$tmp/ref.$1.jsonl"
}
for ((round = 1; round <= rounds; round++)); do
  echo "   round $round/$rounds" >&2
  if ((round % 2)); then run_probe "$round"; run_ref "$round"; else run_ref "$round"; run_probe "$round"; fi
done

python3 - "$tmp" "$rounds" <<'PY'
import json, math, statistics, sys
tmp, rounds = sys.argv[1], int(sys.argv[2])
probe, ref, share = [], [], 1.0   # per round: {(kernel, threads): best GB/s}
isa, huge = set(), []
for i in range(1, rounds + 1):
    bw = json.load(open(f"{tmp}/probe.{i}.json"))["ceilings"]["bandwidth"]
    isa.add(bw.get("kernel_isa") or "?")
    if bw.get("huge_page_share") is not None:
        huge.append(bw["huge_page_share"])
    row = {}
    for p in bw["points"]:
        if p["scope"] == "device":
            k = ("sum" if p["kernel"] == "read" else p["kernel"], p["threads"])
            row[k] = max(row.get(k, 0), p["best_gb_per_s"])
            share = min(share, p.get("cpu_share") or 1)
    probe.append(row)
    row = {}
    for line in open(f"{tmp}/ref.{i}.jsonl"):
        if line.strip():
            r = json.loads(line)
            k = (r["kernel"], r["threads"])
            row[k] = max(row.get(k, 0), r["best_gb_per_s"])
    ref.append(row)

def median_interval(xs, coverage=0.9):
    # Distribution-free interval for the median: order statistics x(k) .. x(n-k+1) with the
    # largest k whose binomial coverage is still >= `coverage`.
    xs, n = sorted(xs), len(xs)
    best = (xs[0], xs[-1], 1 - 2 * 0.5 ** n)
    for k in range(2, n // 2 + 1):
        c = 1 - 2 * sum(math.comb(n, j) for j in range(k)) / 2 ** n
        if c < coverage:
            break
        best = (xs[k - 1], xs[n - k], c)
    return best

print(f"probe kernels: {', '.join(sorted(isa))}; huge pages: "
      + (f"{min(huge) * 100:.0f}-{max(huge) * 100:.0f}% of the buffer" if huge else "unknown"))
print(f"{'kernel':<8} {'threads':>7} {'edgeprobe':>10} {'reference':>10} {'ratio':>6}   {'paired median [interval]':<30}"
      f"(GB/s: best pass over {rounds} rounds)")
keys = sorted({k for row in probe for k in row} & {k for row in ref for k in row})
failed = []
for kernel, t in keys:
    p_best = max(row.get((kernel, t), 0) for row in probe)
    r_best = max(row.get((kernel, t), 0) for row in ref)
    pairs = [a[(kernel, t)] / b[(kernel, t)] for a, b in zip(probe, ref) if a.get((kernel, t)) and b.get((kernel, t))]
    lo, hi, cov = median_interval(pairs)
    paired = f"{statistics.median(pairs):.3f} [{lo:.3f}, {hi:.3f}] {cov * 100:.0f}%"
    verdict = ""
    if kernel == "sum":
        ok = p_best / r_best >= 0.95
        verdict = "PASS" if ok else "BELOW 0.95"
        if not ok:
            failed.append(t)
    print(f"{'read/sum' if kernel == 'sum' else kernel:<8} {t:>7} {p_best:>10.2f} {r_best:>10.2f} {p_best / r_best:>6.3f}   "
          f"{paired:<30}{verdict}")
for t in sorted({t for k, t in keys if k == "sum"}):
    print(f"read at {t} thread(s), per round (edgeprobe/reference GB/s): "
          + " ".join(f"{a.get(('sum', t), 0):.1f}/{b.get(('sum', t), 0):.1f}" for a, b in zip(probe, ref)))
triad = ", ".join(f"{max(row.get(('triad', t), 0) for row in ref):.2f}" for t in sorted({t for k, t in keys}))
print(f"decode ceiling (edgeprobe best read): {max(max(v for (k, t), v in row.items() if k == 'sum') for row in probe):.2f} GB/s; "
      f"reference triad by threads: {triad} GB/s")
if share < 0.9:
    print(f"note: probe threads got as little as {share * 100:.0f}% of the CPU: other processes were running")
if rounds < 5:
    print("note: fewer than 5 rounds: not judged")
print(f"read >= 0.95 of the reference at every thread count: {'PASS' if not failed and rounds >= 5 else 'OUTSIDE' if failed else 'n/a'}")
PY

stream_ab="${STREAM_AB:-$build/bench/stream_ab}"
if [[ -x "$stream_ab" ]]; then
  echo "== 1b. the same read kernels alternating pass by pass in one process (bench/stream_ab: ABBA, 30 pairs)"
  "$stream_ab" --bytes "$((ref_bytes * 2))" --threads "$threads" --passes 30 > "$tmp/ab.jsonl"
  python3 - "$tmp/ab.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    d = json.loads(line)
    print(f"read at {d['threads']} thread(s), {d['isa']}: best {d['probe_best_gb_per_s']:.2f} / {d['ref_best_gb_per_s']:.2f} GB/s"
          f" = {d['best_ratio']:.3f}; paired median {d['paired_median_ratio']:.3f}")
PY
fi

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
