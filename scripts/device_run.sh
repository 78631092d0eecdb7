#!/usr/bin/env bash
# The device run: install gpuprof without network, run the GPU tests, then the benchmarks.
# Usage (on the lent GPU machine, from the repo root): bash scripts/device_run.sh [tests|bench|truth|all]...
# Logs and JSON go under $OUT (default ./out).
set -u -o pipefail
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 LC_ALL=C GPUPROF_CACHE_DIR=${GPUPROF_CACHE_DIR:-/tmp/gpuprof-cache}
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
steps=${*:-all}
has() { [[ " $steps " == *" $1 "* || " $steps " == *" all "* ]]; }

if has tests; then
  python3 -m pytest tests -m gpu -q -p no:cacheprovider 2>&1 | tee "$OUT/gpu_tests.txt"
fi
if has bench; then
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv | tee "$OUT/gpu_state.txt"
  python3 -m gpuprof devicequery --measure --json > "$OUT/devicequery.json"
  python3 -m gpuprof run vecadd --json "$OUT/vecadd.json" 2>&1 | tee "$OUT/run_vecadd.txt"
  python3 -m gpuprof run matmul --variants all --size 256 --check-only > /dev/null  # warm the compile cache
  TIMEFORMAT="wall time of 'gpuprof run matmul --variants all' (warm compile cache): %R s"
  { time python3 -m gpuprof run matmul --variants all --json "$OUT/matmul.json" > "$OUT/run_matmul.txt" 2>&1 ; } 2>> "$OUT/run_matmul.txt"
  cat "$OUT/run_matmul.txt"
fi
if has truth; then
  python3 benchmarks/timing_truth.py --out "$OUT" 2>&1 | tee "$OUT/timing_truth.txt"
fi
