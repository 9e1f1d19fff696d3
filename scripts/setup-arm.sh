#!/usr/bin/env bash
# The arm64 side, for the Arm bundle tests (tests/arm, run under qemu-user):
#   1. installs the cross compiler, qemu-user and the arm64 -dev libraries edgeprobe links
#      (Debian multiarch; as root, or through sudo),
#   2. cross-builds the pinned llama.cpp for aarch64 with its Arm CPU variants, once, into
#      the cache (scripts/build-llama.sh --target aarch64-linux-gnu),
#   3. writes dist/edgeprobe-VERSION-linux-aarch64-linux-gnu.tar.gz (scripts/package.sh).
# Run after scripts/setup.sh. Without the bundle the Arm tests skip and say why.
set -euo pipefail
cd "$(dirname "$0")/.."
target=aarch64-linux-gnu

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"
  elif command -v sudo >/dev/null 2>&1; then sudo "$@"
  else echo "setup-arm: needs root to run: $*" >&2; exit 3
  fi
}

host_packages=(g++-aarch64-linux-gnu qemu-user file binutils)
# libvulkan-dev:arm64: the loader the bundle's Vulkan backend links against (the board's own is used
# at run time; the bundle does not carry one).
arm_packages=(libsqlite3-dev:arm64 libssl-dev:arm64 libhwloc-dev:arm64 libfmt-dev:arm64 zlib1g-dev:arm64 libyaml-dev:arm64
              libvulkan-dev:arm64)
missing=()
for p in "${host_packages[@]}" "${arm_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  dpkg --print-foreign-architectures | grep -qx arm64 || as_root dpkg --add-architecture arm64
  echo "setup-arm: installing ${missing[*]}" >&2
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

scripts/build-llama.sh --target "$target" >/dev/null
scripts/package.sh --target "$target"
