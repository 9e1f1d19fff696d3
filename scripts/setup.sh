#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to a measured result:
#   1. installs the Debian packages the build needs (when run as root; else says which),
#   2. builds the pinned llama.cpp once into a cache outside the repository (~17 min the
#      first time on 2 cores, seconds afterwards),
#   3. builds the edgeprobe binary (scripts/test.sh builds the tests),
#   4. trains the small model family (trained:main, trained:draft; docs/models.md) once into
#      the model cache (~10 min the first time on 2 cores, seconds afterwards),
#   5. runs `edgeprobe bench` on its built-in default model (a synthesized TinyLlama-1.1B
#      shape, Q4_0), unless --no-run is given.
set -euo pipefail
cd "$(dirname "$0")/.."

run_default=1
for arg in "$@"; do
  case "$arg" in
    --no-run) run_default=0 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown option '$arg' (use --no-run or --help)" >&2; exit 2 ;;
  esac
done

packages=(build-essential g++ cmake ninja-build pkg-config git ca-certificates nodejs npm python3
          libcli11-dev nlohmann-json3-dev libfmt-dev libsqlite3-dev libssl-dev libhwloc-dev
          libgtest-dev libgmock-dev libbenchmark-dev time chromium)
packages+=(libyaml-dev openssh-client)  # lab: the inventory's YAML, the ssh transport (ssh, scp)
packages+=(openssh-server iproute2)  # lab and KV tests: sshd "devices" in network namespaces, veth links, tbf rates
packages+=(libpq-dev postgresql)  # the PostgreSQL results store (libpq) and the server its tests start
packages+=(clang libclang-rt-14-dev)  # libFuzzer for the KV frame parser's fuzz test (tests/kv)
packages+=(libcurl4-openssl-dev)  # the HTTP endpoint engine (src/http) talks to servers through libcurl
packages+=(libcpp-httplib-dev)  # the results hub (edgeprobe serve, src/hub) is a cpp-httplib server
packages+=(iptables libnetfilter-queue-dev)  # network tests: a link's latency (netfilter-queue delay; netem is not in this kernel)
packages+=(glslc libvulkan-dev spirv-headers mesa-vulkan-drivers)  # the Vulkan backend, and lavapipe (a Vulkan device on the CPU) its tests run on
packages+=(lava-server lava-dispatcher lavacli curl)  # LAVA (lab submit --engine lava): its schema check, dispatcher and a whole server in the lab tests
packages+=(bible-kjv bible-kjv-text sentencepiece)  # the trained models: the KJV corpus (`bible`) and its tokenizer (spm_train)
packages+=(clang-format)  # CI: scripts/check-format.sh on changed lines
packages+=(ccache)  # a second clone or worktree (CI's clean clone) compiles only what differs (CMakeLists.txt)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# npm may come from outside Debian (e.g. a NodeSource node); any working npm will do.
if command -v npm >/dev/null 2>&1; then
  missing=("${missing[@]/npm}")
  missing=("${missing[@]/nodejs}")
fi
missing=($(printf '%s\n' "${missing[@]}" | grep -v '^$' || true))
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then
    echo "setup: installing ${missing[*]}" >&2
    apt-get update -qq
    # No service of these packages is wanted running (the tests start their own PostgreSQL,
    # sshd and LAVA): policy-rc.d keeps maintainer scripts from starting them, which on a
    # machine without systemd can fail the install.
    made_policy=0
    if [ ! -e /usr/sbin/policy-rc.d ]; then
      printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d && made_policy=1
    fi
    rc=0
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2 || rc=$?
    [ "$made_policy" = 1 ] && rm -f /usr/sbin/policy-rc.d
    [ "$rc" = 0 ] || exit "$rc"
  elif command -v sudo >/dev/null 2>&1; then
    sudo apt-get update -qq
    sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
  else
    echo "setup: missing packages: ${missing[*]}; install them with apt-get and run again" >&2
    exit 3
  fi
fi

prefix=$(scripts/build-llama.sh)
echo "setup: llama.cpp at $prefix" >&2

# The -U's forget what an earlier configure found under another llama.cpp prefix (a build
# flavour bump), so an existing build/ follows the new one.
cmake --preset default -DCMAKE_PREFIX_PATH="$prefix" -Ullama_DIR -Uggml_DIR -Ullama_LIBRARY \
  -UEDGEPROBE_GGML_BACKEND_DIR >/dev/null
# The binary first, so the first result does not wait for the test suite's build
# (scripts/test.sh builds the rest).
cmake --build --preset default --target edgeprobe
echo "setup: built build/src/cli/edgeprobe" >&2

# The trained models (docs/models.md): trained once, cached by recipe hash in
# ~/.cache/edgeprobe/models; afterwards this only checks them.
train_start=$(date +%s)
build/src/cli/edgeprobe train >&2
echo "setup: trained models ready in $(( $(date +%s) - train_start ))s" >&2

if [ "$run_default" = 1 ]; then
  echo "setup: running 'edgeprobe bench' on the built-in synthesized model" >&2
  build/src/cli/edgeprobe bench -r 3
fi
