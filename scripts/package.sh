#!/usr/bin/env bash
# Builds a self-contained edgeprobe bundle for one target and writes
#   dist/edgeprobe-VERSION-linux-TARGET.tar.gz  and  .tar.gz.sha256
# The bundle carries its own glibc loader and every shared library the binary and the ggml
# CPU variants need, so it starts on a device with no matching system libraries at all
# (Android over adb, an older Jetson). See README.txt inside it.
#
# Usage: scripts/package.sh [--target aarch64-linux-gnu] [--build-dir DIR]
# Without --target it packages for this machine (x86_64-linux-gnu). Without --build-dir it
# configures a Release build in build-dist-TARGET; an already configured DIR is packaged as
# it was configured (its llama.cpp, its build type).
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=
BUILD_DIR=
log() { echo "package: $*" >&2; }
die() { echo "package: error: $*" >&2; exit "${2:-2}"; }

while [ $# -gt 0 ]; do
  case "$1" in
    --target) [ $# -ge 2 ] || die "--target needs a value"; TARGET=$2; shift 2 ;;
    --target=*) TARGET=${1#--target=}; shift ;;
    --build-dir) [ $# -ge 2 ] || die "--build-dir needs a value"; BUILD_DIR=$2; shift 2 ;;
    *) die "unknown argument '$1' (usage: package.sh [--target aarch64-linux-gnu] [--build-dir DIR])" ;;
  esac
done

host_triple="$(uname -m)-linux-gnu"
cross=
if [ -n "$TARGET" ] && [ "$TARGET" != "$host_triple" ]; then cross=1; else TARGET=$host_triple; fi
arch=${TARGET%%-*}
case "$arch" in
  aarch64) loader_name=ld-linux-aarch64.so.1 ;;
  x86_64) loader_name=ld-linux-x86-64.so.2 ;;
  *) die "no bundle layout for target '$TARGET' (known: x86_64-linux-gnu, aarch64-linux-gnu)" ;;
esac
version=$(sed -n 's/^project(edgeprobe VERSION \([0-9.]*\).*/\1/p' "$REPO_ROOT/CMakeLists.txt")
[ -n "$version" ] || die "cannot read the project version from CMakeLists.txt" 3

if [ -n "$BUILD_DIR" ] && [ -f "$BUILD_DIR/CMakeCache.txt" ]; then
  # An existing build: package what it was configured with (its llama.cpp, its build type).
  cached() { sed -n "s/^$1:[A-Z]*=//p" "$BUILD_DIR/CMakeCache.txt"; }
  toolchain=$(cached CMAKE_TOOLCHAIN_FILE)
  if [ -n "$cross" ] && [ "$(basename "$toolchain")" != "$TARGET.cmake" ]; then
    die "$BUILD_DIR is not a $TARGET build (toolchain '${toolchain:-none}')"
  fi
  llama_prefix=$(dirname "$(cached EDGEPROBE_GGML_BACKEND_DIR)")
  log "building edgeprobe $version for $TARGET in the existing $BUILD_DIR"
else
  llama_prefix=$("$REPO_ROOT/scripts/build-llama.sh" ${cross:+--target "$TARGET"})
  BUILD_DIR=${BUILD_DIR:-$REPO_ROOT/build-dist-$TARGET}
  # A build directory configured against another llama.cpp (an older cache flavour) keeps
  # that prefix in its cache: configure it afresh, or the bundle mixes the two.
  if [ -f "$BUILD_DIR/CMakeCache.txt" ] &&
     ! grep -qx "EDGEPROBE_GGML_BACKEND_DIR:PATH=$llama_prefix/bin" "$BUILD_DIR/CMakeCache.txt"; then
    log "$BUILD_DIR was configured against another llama.cpp: configuring it afresh for $llama_prefix"
    rm -rf "$BUILD_DIR/CMakeCache.txt" "$BUILD_DIR/CMakeFiles"
  fi
  cmake_args=(-S "$REPO_ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release
              -DCMAKE_PREFIX_PATH="$llama_prefix" -DEDGEPROBE_BUILD_TESTS=OFF -DEDGEPROBE_BUILD_BENCH=OFF
              # A device streams its units to the lab controller, which stores them: the
              # bundle needs no libpq (and its Kerberos/LDAP/TLS libraries).
              -DEDGEPROBE_POSTGRESQL=OFF)
  [ -z "$cross" ] || cmake_args+=(-DCMAKE_TOOLCHAIN_FILE="$REPO_ROOT/cmake/$TARGET.cmake")
  # ccache, where installed, comes from CMakeLists.txt (with the base directory that lets
  # another clone reuse it).
  log "building edgeprobe $version for $TARGET in $BUILD_DIR"
  cmake "${cmake_args[@]}" >&2
fi
[ -f "$llama_prefix/.complete" ] || die "llama.cpp at '$llama_prefix' is not a finished build (scripts/build-llama.sh)" 3
cmake --build "$BUILD_DIR" -j "${JOBS:-$(nproc)}" --target edgeprobe >&2
binary="$BUILD_DIR/src/cli/edgeprobe"
[ -x "$binary" ] || die "the build produced no $binary" 3

# Where the target's shared libraries live on this machine: llama.cpp's prefix, then the
# Debian multiarch directories, then the cross compiler's runtime.
search_dirs=("$llama_prefix/lib" "/usr/lib/$TARGET" "/lib/$TARGET" "/usr/$TARGET/lib")

name="edgeprobe-$version-linux-$TARGET"
dist="$REPO_ROOT/dist"
stage="$dist/$name"
rm -rf "$stage"
mkdir -p "$stage/bin" "$stage/lib" "$stage/data"
install -m 755 "$binary" "$stage/bin/edgeprobe"
cp "$llama_prefix"/bin/libggml-cpu-*.so "$stage/lib/"
# GPU backends beside the CPU variants, loaded the same way (docs/gpu.md).
gpu_backends=()
for lib in "$llama_prefix"/bin/libggml-vulkan.so; do
  [ -e "$lib" ] || continue
  cp "$lib" "$stage/lib/"
  gpu_backends+=("$stage/lib/$(basename "$lib")")
done
cp "$REPO_ROOT/data/conversations.jsonl" "$stage/data/"
mkdir -p "$stage/data/predict"
cp "$REPO_ROOT/data/predict/devices.json" "$REPO_ROOT/data/predict/measurements.json" "$stage/data/predict/"
# Shell completion, generated from the CLI definition by the binary itself; a cross build
# that cannot run here (no qemu-user) goes without it, and says so.
mkdir -p "$stage/share/completion"
if "$binary" completion bash > "$stage/share/completion/edgeprobe.bash" 2>/dev/null &&
   "$binary" completion zsh > "$stage/share/completion/_edgeprobe" 2>/dev/null; then
  completion_note="Shell completion: source share/completion/edgeprobe.bash (bash), or put
share/completion/_edgeprobe in a directory of your \$fpath (zsh)."
else
  rm -rf "$stage/share"
  completion_note="(No shell completion: the $arch binary could not run where the bundle was built.)"
  log "no shell completion in the bundle: $binary does not run on this machine"
fi

find_lib() {
  local d
  for d in "${search_dirs[@]}"; do
    if [ -e "$d/$1" ]; then echo "$d/$1"; return 0; fi
  done
  return 1
}

# Copies every DT_NEEDED library (transitively) of the given ELF files into lib/, but the
# Vulkan loader: it must be the device's own, which finds the device's GPU drivers (a
# board without one gets the GPU backend named as not loaded, with the reason).
queue=("$stage/bin/edgeprobe" "$stage"/lib/libggml-cpu-*.so ${gpu_backends[@]+"${gpu_backends[@]}"})
while [ ${#queue[@]} -gt 0 ]; do
  elf=${queue[0]}
  queue=("${queue[@]:1}")
  for needed in $(readelf -d "$elf" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    [ -e "$stage/lib/$needed" ] && continue
    [ "$needed" = libvulkan.so.1 ] && continue
    src=$(find_lib "$needed") || die "$needed (needed by $(basename "$elf")) is not in: ${search_dirs[*]}" 3
    cp -L "$src" "$stage/lib/$needed"
    queue+=("$stage/lib/$needed")
  done
done
interp=$(readelf -l "$stage/bin/edgeprobe" | sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')
[ "$(basename "$interp")" = "$loader_name" ] || die "unexpected program interpreter '$interp'" 3
loader=$(find_lib "$loader_name") || die "the loader $loader_name is not in: ${search_dirs[*]}" 3
cp -L "$loader" "$stage/lib/$loader_name"
chmod 755 "$stage/lib/$loader_name"

# Symbols and debug info are for the build machine: strip the copies (a phone's
# /data/local/tmp is small, adb push is slow). The distribution's libraries come stripped.
strip_tool=strip
[ -z "$cross" ] || strip_tool=$TARGET-strip
command -v "$strip_tool" >/dev/null || die "$strip_tool is not installed (the target's binutils)" 3
unstripped=$(du -sk "$stage" | cut -f1)
"$strip_tool" --strip-unneeded "$stage/bin/edgeprobe" "$stage"/lib/libggml*.so* "$stage"/lib/libllama.so*
log "stripped the binaries: $(( unstripped / 1024 )) MiB -> $(( $(du -sk "$stage" | cut -f1) / 1024 )) MiB unpacked"

# The kernel glibc was built for (ELF ABI note of libc.so.6): the bundle's minimum.
min_kernel=$(file -L "$stage/lib/libc.so.6" | sed -n 's/.*for GNU\/Linux \([0-9.]*\).*/\1/p')
glibc=$(strings "$stage/lib/libc.so.6" | sed -n 's/^GNU C Library ([^)]*) [^0-9]*\([0-9][0-9.]*\).*/\1/p' | head -1)

cat > "$stage/edgeprobe" <<EOF
#!/bin/sh
# Starts bin/edgeprobe with the bundle's own glibc loader and libraries, so the device's
# system libraries (or their absence: Android has no glibc) do not matter.
here=\$(cd "\$(dirname "\$0")" && pwd)
# MANIFEST lists every file with its size: a file a broken copy or a cut-short download
# left out or truncated is named here, before the loader fails on it less clearly.
if [ ! -f "\$here/MANIFEST" ]; then
  echo "edgeprobe: the bundle is incomplete (MANIFEST is missing); unpack $name.tar.gz again" >&2
  exit 2
fi
while read -r size f; do
  if [ ! -f "\$here/\$f" ]; then
    echo "edgeprobe: the bundle is incomplete (\$f is missing); unpack $name.tar.gz again" >&2
    exit 2
  fi
  actual=\$(wc -c < "\$here/\$f" | tr -d ' ')
  if [ "\$actual" != "\$size" ]; then
    echo "edgeprobe: the bundle is truncated (\$f has \$actual of its \$size bytes); unpack $name.tar.gz again" >&2
    exit 2
  fi
done < "\$here/MANIFEST"
machine=\$(uname -m)
if [ "\$machine" != "$arch" ] && [ "\$machine" != "${arch/aarch64/arm64}" ] &&
   ! grep -qs '^enabled' /proc/sys/fs/binfmt_misc/qemu-$arch; then
  echo "edgeprobe: this bundle is for $arch, this machine is \$machine; use the linux-\$machine bundle" >&2
  exit 2
fi
EDGEPROBE_GGML_BACKEND_DIR=\${EDGEPROBE_GGML_BACKEND_DIR:-\$here/lib}
EDGEPROBE_DATA_DIR=\${EDGEPROBE_DATA_DIR:-\$here/data}
export EDGEPROBE_GGML_BACKEND_DIR EDGEPROBE_DATA_DIR
exec "\$here/lib/$loader_name" --library-path "\$here/lib" "\$here/bin/edgeprobe" "\$@"
EOF
chmod 755 "$stage/edgeprobe"

variants=$(cd "$stage/lib" && ls libggml-cpu-*.so | sed 's/^libggml-cpu-//; s/\.so$//' | tr '\n' ' ')
gpu_note="No GPU backend in this bundle."
if [ -e "$stage/lib/libggml-vulkan.so" ]; then
  gpu_note="GPU: lib/libggml-vulkan.so, llama.cpp's Vulkan backend, uses the device's own Vulkan loader
(libvulkan.so.1) and driver (Mesa's panvk or turnip, NVIDIA's): -ngl 99 offloads to it.
Without them './edgeprobe sysinfo' names why it did not load. Android's GPU drivers need
a bionic (NDK) build, which this bundle is not."
fi
cat > "$stage/README.txt" <<EOF
edgeprobe $version for Linux on $arch ($TARGET)

Start it with the launcher in this directory, never bin/edgeprobe directly:
  ./edgeprobe sysinfo
  ./edgeprobe bench                      # the default model is synthesized on first use
  ./edgeprobe bench -m synth:tiny -r 1   # a quick first check

The bundle needs no system libraries: lib/ holds its own glibc $glibc loader
($loader_name), libc, libm, libstdc++, libgomp, and llama.cpp's libraries with the ggml
CPU variants ($variants). The best variant for the CPU loads by default;
--cpu-variant NAME forces one. Linux kernel $min_kernel or newer (glibc's minimum).
$gpu_note

Android (no root needed; arm64 phones):
  adb push $name.tar.gz /data/local/tmp/
  adb shell
  cd /data/local/tmp && tar -xzf $name.tar.gz && cd $name
  sh ./edgeprobe bench -m synth:tiny -r 1
  (/data/local/tmp is the one place adb shell may run programs from; storage such as
  /sdcard is mounted noexec. Use 'sh ./edgeprobe' if the execute bit was lost.)
  The store and synthesized models go to \$HOME/.cache/edgeprobe; under adb shell set
  HOME=/data/local/tmp first if \$HOME is not writable.

Jetson, Raspberry Pi (64-bit OS) and other Linux boards:
  tar -xzf $name.tar.gz && ./$name/edgeprobe bench
  The system glibc may be older than the bundle's: the launcher never uses it.

Under qemu-user the tool says so: CPU features are the emulated CPU's, timings are not
the performance of any device.

$completion_note
EOF

(cd "$stage" && find bin lib data $( [ -d "$stage/share" ] && echo share ) -type f | LC_ALL=C sort | while read -r f; do echo "$(stat -c %s "$f") $f"; done) \
  > "$stage/MANIFEST"

mkdir -p "$dist"
# The launcher and MANIFEST first: an archive cut short still unpacks the check.
tar -C "$dist" -czf "$dist/$name.tar.gz" "$name/edgeprobe" "$name/MANIFEST" "$name/README.txt" \
  "$name/bin" "$name/lib" "$name/data" $( [ -d "$stage/share" ] && echo "$name/share" )
(cd "$dist" && sha256sum "$name.tar.gz" > "$name.tar.gz.sha256")
rm -rf "$stage"
log "wrote $dist/$name.tar.gz ($(du -h "$dist/$name.tar.gz" | cut -f1), $(stat -c %s "$dist/$name.tar.gz") bytes); minimum kernel $min_kernel"
echo "$dist/$name.tar.gz"
