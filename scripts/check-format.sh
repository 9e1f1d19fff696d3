#!/usr/bin/env bash
# clang-format on changed lines: every line changed since the commit in .ci/format-base (where
# the check began; older code is left as it was rather than rewritten in one commit) must be
# as .clang-format writes it. Prints the diff that would fix it and exits 1 otherwise.
#   scripts/check-format.sh          check (CI runs it)
#   scripts/check-format.sh --fix    rewrite those lines in the working tree
set -euo pipefail
cd "$(dirname "$0")/.."
base=$(cat .ci/format-base)
command -v git-clang-format >/dev/null || { echo "check-format: git-clang-format not found (apt-get install clang-format)" >&2; exit 3; }
if [ "${1:-}" = "--fix" ]; then
  git clang-format --quiet --extensions c,cc,cpp,h,hpp "$base" -- src tests bench || true
  exit 0
fi
diff=$(git clang-format --diff --extensions c,cc,cpp,h,hpp "$base" -- src tests bench 2>&1 || true)
case "$diff" in
  ""|"no modified files to format"|"clang-format did not modify any files") echo "check-format: lines changed since ${base:0:9} follow .clang-format" >&2; exit 0 ;;
esac
echo "$diff"
echo "check-format: lines changed since ${base:0:9} differ from .clang-format; scripts/check-format.sh --fix rewrites them" >&2
exit 1
