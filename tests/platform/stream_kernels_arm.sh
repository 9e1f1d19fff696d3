#!/usr/bin/env bash
# stream_kernels_arm.sh: the bandwidth probe's kernels cross-compiled for AArch64 (NEON) and
# checked for correct sums and copies under qemu-user. Correctness only: figures measured
# under emulation mean nothing. Skips (exit 0, with the reason) where the cross compiler or
# qemu is absent: apt-get install g++-aarch64-linux-gnu qemu-user.
#
# usage: tests/platform/stream_kernels_arm.sh        (from anywhere)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cxx="${CXX_AARCH64:-aarch64-linux-gnu-g++}"
sysroot="${AARCH64_SYSROOT:-/usr/aarch64-linux-gnu}"
command -v "$cxx" >/dev/null || { echo "stream_kernels_arm: skipped: $cxx not installed"; exit 0; }
command -v qemu-aarch64 >/dev/null || { echo "stream_kernels_arm: skipped: qemu-aarch64 not installed"; exit 0; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$cxx" -std=c++20 -O2 -Wall -Wextra -Wpedantic -Werror -I"$root/src" \
  "$root/tests/platform/stream_kernels_check.cpp" "$root/src/probe/bandwidth_kernels.cpp" -o "$tmp/check"
status=0
out="$(qemu-aarch64 -L "$sysroot" "$tmp/check")" || status=$?
echo "$out"
[[ $status -eq 0 ]] || { echo "stream_kernels_arm: FAIL (exit $status)" >&2; exit 1; }
grep -q '^neon ' <<<"$out" || { echo "stream_kernels_arm: the NEON kernel did not run" >&2; exit 1; }
echo "stream_kernels_arm: PASS (aarch64 kernels correct under qemu)"
