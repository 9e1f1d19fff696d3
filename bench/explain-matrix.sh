#!/usr/bin/env bash
# explain-matrix.sh: explain on the scenarios a user meets (issue 43): a forced lower CPU
# variant, fewer threads, a cpuset of one CPU, a cgroup quota, a background CPU hog, mmap
# off with a cold page cache, a slower KV type, alone, in pairs and in triples; explained
# from plain bench runs and from doctor runs, on a ~60 MB model (15 scenarios) and on
# TinyLlama-1.1B's shape (6), each fault also measured alone against A in interleaved
# rounds. Prints a row per scenario and phase and the pass rates (target: 90 % of
# scenarios pass every check on each kind, 100 % keep the identity and the hardware line).
# Runs as root (cgroups, the page cache), alone; the whole matrix takes over an hour.
#   usage: bench/explain-matrix.sh [-b BUILD] [--kind bench|doctor|both] [--shape small|1.1b|both]
#          [--rounds N] [--only variant,quota+hog] [--json FILE]
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 bench/explain_matrix.py "$@"
