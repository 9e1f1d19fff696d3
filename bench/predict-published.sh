#!/usr/bin/env bash
# predict-published.sh: how close `predict` for a device not at hand comes to published
# llama.cpp measurements (a benchmark, not a test; issue 47).
#
# Every measurement of data/predict/measurements.json is predicted from its device's
# catalogue spec (data/predict/devices.json) with the efficiencies fitted on the split "fit"
# entries only (src/predict/published.h; the same function `predict --device-spec` calls),
# and compared per split, phase and device class: how many could be predicted (a device
# without a bandwidth figure has no decode, one without cores no prefill), median |error|
# (error = measured / predicted - 1), the share inside the printed interval, and the
# interval's median width (high / low - 1). The validation rows are devices never seen in
# fitting; the fit rows are in-sample, for comparison.
# Targets (issue 47): median |error| <= 20 % per phase, >= 80 % inside the interval.
#
# usage: bench/predict-published.sh [-b BUILD_DIR] [--rows]
#   --rows   also print one JSON line per measurement (predicted, interval, error, bound)
set -euo pipefail
cd "$(dirname "$0")/.."

build=build
rows=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    -b) build="$2"; shift 2 ;;
    --rows) rows="--rows"; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "predict-published: unknown argument $1" >&2; exit 2 ;;
  esac
done

helper="$build/bench/predict_published"
if [[ ! -x "$helper" ]]; then
  echo "predict-published: $helper not built (cmake --build --preset default --target predict_published)" >&2
  exit 2
fi
echo "# predict-published $(date -u +%Y-%m-%dT%H:%MZ), $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "# data: $(sha256sum data/predict/devices.json data/predict/measurements.json | awk '{printf "%s %s  ", substr($1,1,12), $2}')"
"$helper" data/predict $rows
