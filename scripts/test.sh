#!/usr/bin/env bash
# The whole test suite: builds what changed, then runs every ctest test.
# Run scripts/setup.sh once first (it installs the packages and llama.cpp).
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=$(scripts/build-llama.sh)
[ -f build/CMakeCache.txt ] || cmake --preset default -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build --preset default
ctest --preset default -j 2 "$@"
