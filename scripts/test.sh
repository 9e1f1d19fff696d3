#!/usr/bin/env bash
# The whole test suite: builds what changed, then runs every ctest test. Arguments go
# to ctest: `scripts/test.sh -L unit` runs the fast tier only, `-L integration` or
# `-L slow` the others, `-R NAME` the tests matching NAME.
# Run scripts/setup.sh once first (it installs the packages and llama.cpp).
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=$(scripts/build-llama.sh)
[ -f build/CMakeCache.txt ] || cmake --preset default -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build --preset default
ctest --preset default -j 2 "$@"
