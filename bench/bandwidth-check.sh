#!/usr/bin/env bash
# bandwidth-check.sh: is edgeprobe's bandwidth figure right? (a benchmark, not a test)
#
# 1. edgeprobe probe's memory bandwidth against bench/stream_ref, a STREAM-like reference
#    run with the same buffer sizes and thread counts. Target: within +-15 %.
# 2. With a model (-m), the decode efficiency `edgeprobe bench` reports for it with 2
#    threads. For tinyllama-1.1b q4_0 on the 2-core dev machine llama-bench's tg runs at
#    ~18 GB/s effective, at the bandwidth limit, so a correct tool reports 0.8-1.1.
#
# usage: bench/bandwidth-check.sh [-b BUILD_DIR] [-t THREADS] [-m MODEL.gguf] [--buffer-mib N]
# env:   EDGEPROBE, STREAM_REF override the binaries' paths.
set -euo pipefail

build=build
threads=2
model=""
buffer_mib=1024
while [[ $# -gt 0 ]]; do
  case "$1" in
    -b) build="$2"; shift 2 ;;
    -t) threads="$2"; shift 2 ;;
    -m) model="$2"; shift 2 ;;
    --buffer-mib) buffer_mib="$2"; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
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

echo "== 1. edgeprobe probe vs STREAM-like reference ($threads threads, ${buffer_mib} MiB buffer)"
# A private cache dir so an old cached figure is never compared.
XDG_CACHE_HOME="$tmp/cache" "$edgeprobe" probe --refresh --no-compute -o json -t "$threads" \
  --buffer-mib "$buffer_mib" > "$tmp/probe.json"
buffer_bytes="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ceilings"]["bandwidth"]["buffer_bytes"])' "$tmp/probe.json")"
# edgeprobe's read streams the whole buffer and its copy moves one half onto the other;
# the reference's arrays are each half the buffer, so its copy moves the same bytes and
# its sum reads both arrays (the whole buffer), as edgeprobe's read does.
"$stream_ref" --bytes "$((buffer_bytes / 2))" --threads "$threads" > "$tmp/ref.jsonl"

python3 - "$tmp/probe.json" "$tmp/ref.jsonl" <<'EOF'
import json, sys
probe = json.load(open(sys.argv[1]))["ceilings"]["bandwidth"]
ref = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
def ref_at(kernel, t):
    return next((r["best_gb_per_s"] for r in ref if r["kernel"] == kernel and r["threads"] == t), None)
print(f"{'kernel':<6} {'threads':>7} {'edgeprobe':>10} {'reference':>10} {'ratio':>6}")
worst = 0.0
for p in probe["points"]:
    if p["scope"] != "device":
        continue
    r = ref_at("sum" if p["kernel"] == "read" else p["kernel"], p["threads"])
    if not r:
        continue
    ratio = p["best_gb_per_s"] / r
    worst = max(worst, abs(ratio - 1))
    name = "read/sum" if p["kernel"] == "read" else p["kernel"]
    print(f"{name:<8} {p['threads']:>5} {p['best_gb_per_s']:>10.2f} {r:>10.2f} {ratio:>6.2f}")
best_ref = max(r["best_gb_per_s"] for r in ref if r["kernel"] in ("copy", "scale", "add", "triad", "sum"))
print(f"decode ceiling (edgeprobe best read): {probe['read_best_gb_per_s']:.2f} GB/s; "
      f"best reference kernel: {best_ref:.2f} GB/s; triad: "
      + ", ".join(f"{r['best_gb_per_s']:.2f}" for r in ref if r["kernel"] == "triad") + " GB/s")
print(f"worst deviation {worst*100:.1f} % -> {'PASS' if worst <= 0.15 else 'OUTSIDE'} the +-15 % target")
EOF

if [[ -z "$model" ]]; then
  echo "== 2. decode efficiency: skipped (pass -m tinyllama-1.1b-q4_0.gguf)"
  exit 0
fi
echo "== 2. decode efficiency of $model, tg64, 2 threads"
# Provisional: the result path results[].roofline.decode_efficiency follows the bench
# schema being written alongside this script.
XDG_CACHE_HOME="$tmp/cache" "$edgeprobe" bench -m "$model" -p 0 -n 64 -t 2 -o json > "$tmp/bench.json"
python3 - "$tmp/bench.json" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
for r in doc.get("results", []):
    roof = r.get("roofline") or {}
    eff = roof.get("decode_efficiency")
    if eff is None:
        print("decode_efficiency: unavailable", roof.get("notes", ""))
        continue
    verdict = "PASS" if 0.8 <= eff <= 1.1 else "OUTSIDE"
    print(f"decode: {roof.get('decode_achieved_gb_per_s', 0):.2f} GB/s achieved, ceiling "
          f"{roof.get('decode_ceiling_tokens_per_s', 0):.1f} t/s, efficiency {eff:.2f} -> {verdict} the 0.8-1.1 target")
EOF
