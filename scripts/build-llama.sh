#!/usr/bin/env bash
# Builds the pinned llama.cpp once into a cache prefix outside the repository and prints
# that prefix on stdout. Later calls (and CI on the same machine) find it and return at once.
#
# Source: the official llama.cpp release that the npm package node-llama-cpp@3.21.1 carries
# as llama/gitRelease.bundle (commit 80fb11a). We take it from the npm registry because that
# is the one source of it this project's machines can reach.
#
# Usage: build-llama.sh [--target aarch64-linux-gnu]
# Without --target it builds for this machine. With a target it cross-builds with the CMake
# toolchain file cmake/<target>.cmake into a prefix of its own (suffix -<target>).
set -euo pipefail

TARGET=
while [ $# -gt 0 ]; do
  case "$1" in
    --target) TARGET=${2:-}; shift 2 || { echo "build-llama: --target needs a value" >&2; exit 2; } ;;
    --target=*) TARGET=${1#--target=}; shift ;;
    *) echo "build-llama: unknown argument '$1' (usage: build-llama.sh [--target aarch64-linux-gnu])" >&2; exit 2 ;;
  esac
done
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
TOOLCHAIN=
if [ -n "$TARGET" ]; then
  TOOLCHAIN="$REPO_ROOT/cmake/$TARGET.cmake"
  if [ ! -f "$TOOLCHAIN" ]; then
    echo "build-llama: no toolchain file for target '$TARGET' (known: $(cd "$REPO_ROOT/cmake" && ls *-*.cmake | sed 's/\.cmake$//' | tr '\n' ' '))" >&2
    exit 2
  fi
fi

NLC_VERSION=3.21.1
LLAMA_COMMIT=80fb11ac73e66d89eae2c6a91d8a77428fa733ed
# Bump when the build options below change, so an old cache is not reused by mistake.
# The native build (flavour 2) adds llama-server, which the endpoint engine's tests start;
# flavour 3 adds the Vulkan backend (libggml-vulkan.so, loaded beside the CPU variants).
# Cross builds carry only the libraries; their flavour vk-2 adds the Vulkan backend for
# Linux boards (Mali with panvk, Adreno with turnip, Jetson, Raspberry Pi 5).
if [ -z "$TARGET" ]; then BUILD_FLAVOUR=dl-allvariants-vk-3; else BUILD_FLAVOUR=dl-allvariants-vk-2; fi
CACHE_ROOT=${EDGEPROBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/edgeprobe}
PREFIX="$CACHE_ROOT/llama.cpp-${LLAMA_COMMIT:0:7}-$BUILD_FLAVOUR${TARGET:+-$TARGET}"
JOBS=${JOBS:-$(nproc)}

log() { echo "build-llama: $*" >&2; }

if [ -f "$PREFIX/.complete" ]; then
  log "using cached llama.cpp at $PREFIX"
  echo "$PREFIX"
  exit 0
fi

work="$CACHE_ROOT/work-${LLAMA_COMMIT:0:7}-$BUILD_FLAVOUR${TARGET:+-$TARGET}"
rm -rf "$work"
mkdir -p "$work"
log "fetching node-llama-cpp@$NLC_VERSION from the npm registry"
(cd "$work" && npm pack --silent "node-llama-cpp@$NLC_VERSION" >/dev/null)
tar -xzf "$work/node-llama-cpp-$NLC_VERSION.tgz" -C "$work" package/llama/gitRelease.bundle
git clone --quiet "$work/package/llama/gitRelease.bundle" "$work/src"
got=$(git -C "$work/src" rev-parse HEAD)
if [ "$got" != "$LLAMA_COMMIT" ]; then
  log "error: the bundle holds commit $got, expected $LLAMA_COMMIT; refusing to build an unpinned llama.cpp"
  exit 3
fi

cross_args=()
server_arg=-DLLAMA_BUILD_SERVER=ON
if [ -n "$TARGET" ]; then
  server_arg=-DLLAMA_BUILD_SERVER=OFF
  # Only the libraries edgeprobe links (libllama, ggml and its CPU variants): no tools or
  # common library, which would double a cross build that runs on few cores.
  cross_args=(-DCMAKE_TOOLCHAIN_FILE="$TOOLCHAIN" -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_COMMON=OFF)
  case "$TARGET" in
    aarch64-*)
      # The armv9.2 variants need SME, which g++ 12 (Debian's cross compiler) does not know;
      # leave them out rather than fail. The armv8.0 .. armv8.6 (SVE2, i8mm) variants remain.
      if ! echo 'int x;' | "${TARGET}-gcc" -march=armv9.2-a+sme -x c -c - -o /dev/null 2>/dev/null; then
        log "note: ${TARGET}-gcc has no SME; the armv9.2 CPU variants are left out"
        sed -i '/ggml_add_cpu_backend_variant(armv9\.2_[12] /d' "$work/src/ggml/src/CMakeLists.txt"
      fi
      ;;
  esac
fi

# Vulkan: the GPU backend of phones' and boards' Linux (Mali, Adreno, Jetson) and the one
# a CPU-only machine can test for real, on Mesa's lavapipe. Needs glslc (run here, also in a
# cross build, as are the shader generator it builds with the host compiler), the Vulkan
# headers, SPIRV-Headers, and the target's Vulkan loader to link against (scripts/setup.sh
# and, for arm64, scripts/setup-arm.sh install them).
vk_header=/usr/include/vulkan/vulkan_core.h
vk_lib=/usr/lib/${TARGET:-$(gcc -dumpmachine)}/libvulkan.so
if ! command -v glslc >/dev/null || [ ! -f "$vk_header" ] || [ ! -e "$vk_lib" ]; then
  log "error: the Vulkan backend needs glslc, libvulkan-dev and $vk_lib (run scripts/setup.sh${TARGET:+ and scripts/setup-arm.sh} as root, or apt-get install glslc libvulkan-dev${TARGET:+ libvulkan-dev:arm64} spirv-headers mesa-vulkan-drivers)"
  exit 3
fi
gpu_args=(-DGGML_VULKAN=ON)
vk_version=$(sed -n 's/^#define VK_HEADER_VERSION \([0-9]*\)$/\1/p' "$vk_header")
if [ "${vk_version:-0}" -lt 272 ]; then
  # The pinned ggml-vulkan fills VK_EXT_layer_settings structs (headers 1.3.272 and
  # later) for its validation-layer mode, unguarded; Debian 12 ships 1.3.239. The mode is
  # off unless built with GGML_VULKAN_VALIDATE, so the instance gets no settings chain.
  vk_src="$work/src/ggml/src/ggml-vulkan/ggml-vulkan.cpp"
  sed -i '/std::vector<vk::LayerSettingEXT> settings = {/,/vk::LayerSettingsCreateInfoEXT layer_setting_info(settings);/d' "$vk_src"
  sed -i 's/extensions, &layer_setting_info);/extensions, nullptr);/' "$vk_src"
  if grep -n 'LayerSettingEXT\|layer_setting_info' "$vk_src" >&2; then
    log "error: could not take VK_EXT_layer_settings out of ggml-vulkan.cpp for Vulkan headers 1.3.$vk_version"
    exit 3
  fi
  log "note: Vulkan headers 1.3.$vk_version predate VK_EXT_layer_settings; ggml-vulkan's validation settings are left out"
fi

log "building llama.cpp ${LLAMA_COMMIT:0:7} ${TARGET:+for $TARGET }with all CPU variants${gpu_args[*]:+ and Vulkan} into $PREFIX (about 20 minutes on 2 cores)"
# GGML_BACKEND_DL + GGML_CPU_ALL_VARIANTS: every x86/Arm CPU variant becomes its own
# libggml-cpu-<tag>.so, so the best one loads by default and a lower one can be loaded on
# purpose (the seed's silent fallback, reproduced for real). GGML_NATIVE must be off with DL.
cmake -S "$work/src" -B "$work/build" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_INSTALL_PREFIX="$PREFIX" \
  -DCMAKE_INSTALL_RPATH='$ORIGIN/../lib' \
  -DBUILD_SHARED_LIBS=ON \
  -DGGML_BACKEND_DL=ON -DGGML_CPU_ALL_VARIANTS=ON -DGGML_NATIVE=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF "$server_arg" \
  -DLLAMA_BUILD_APP=OFF -DLLAMA_OPENSSL=OFF \
  -DLLAMA_BUILD_NUMBER=0 -DLLAMA_BUILD_COMMIT="${LLAMA_COMMIT:0:7}" ${cross_args[@]+"${cross_args[@]}"} ${gpu_args[@]+"${gpu_args[@]}"} >&2
cmake --build "$work/build" -j "$JOBS" >&2
cmake --install "$work/build" >&2
echo "$LLAMA_COMMIT" > "$PREFIX/.commit"
[ -z "$TARGET" ] || echo "$TARGET" > "$PREFIX/.target"
touch "$PREFIX/.complete"
rm -rf "$work"
log "llama.cpp installed at $PREFIX"
echo "$PREFIX"
