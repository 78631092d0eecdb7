#!/usr/bin/env bash
# GPU tests one file at a time, each under its own timeout, so a slow or hanging file costs only
# its own result and a device call that runs out of time still returns every finished file's line.
# Usage (on a GPU machine, from the repo root): OUT=dir bash scripts/device_gpu_tests.sh tests/gpu/test_a.py ...
# One summary line per file in $OUT/gpu_tests_summary.txt; pytest's output per file in
# $OUT/gpu_tests.tgz, re-packed after each file (only 8 files come back from a device call).
set -u -o pipefail
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
LOGS=$(mktemp -d /tmp/gpuprof-gpu-tests.XXXX)
export PYTHONUNBUFFERED=1 LC_ALL=C GPUPROF_CACHE_DIR=${GPUPROF_CACHE_DIR:-/tmp/gpuprof-cache}
if ls .whl/*.whl >/dev/null 2>&1 && [ ! -d /tmp/site ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
fi
export PYTHONPATH=/tmp/site:$PWD
[ -d .nsyslibs/lib ] && export GPUPROF_NSYS_LIBS=$PWD/.nsyslibs/lib
for file in "$@"; do
  name=$(basename "$file" .py)
  start=$SECONDS
  timeout "${FILE_TIMEOUT:-400}" python3 -m pytest "$file" -m gpu -q -p no:cacheprovider --tb=short -rfs \
    > "$LOGS/$name.txt" 2>&1
  code=$?
  line=$(grep -E "^[0-9]+ (passed|failed|skipped|errors?)|^=+ .*(passed|failed|error).* =+$|no tests ran" "$LOGS/$name.txt" | tail -1)
  echo "$name: exit $code, $((SECONDS - start)) s: ${line:-no summary (timed out?)}" | tee -a "$OUT/gpu_tests_summary.txt"
  tar czf "$OUT/gpu_tests.tgz" -C "$LOGS" .
done
