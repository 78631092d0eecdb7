#!/usr/bin/env bash
# The device run: install gpuprof without network, run the GPU tests, then the benchmarks.
# Usage (on a GPU machine, from the repo root): bash scripts/device_run.sh [tests|bench|ncu|truth|all]...
# Everything lands in one tarball, $OUT/device_run.tgz (default OUT=./out), plus the console output.
set -u -o pipefail
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
LOGS=$(mktemp -d /tmp/gpuprof-run.XXXX)
export PYTHONUNBUFFERED=1 LC_ALL=C GPUPROF_CACHE_DIR=${GPUPROF_CACHE_DIR:-/tmp/gpuprof-cache}
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
steps=${*:-all}
# FAMILIES="vecadd matmul" limits the run to those families (others are removed from this copy).
if [ -n "${FAMILIES:-}" ]; then
  for d in kernels/*/; do f=$(basename "$d")
    case " $FAMILIES " in *" $f "*) ;; *) rm -rf "$d" "gpuprof/families/$f.py";; esac
  done
fi
has() { [[ " $steps " == *" $1 "* || " $steps " == *" all "* ]]; }
finish() { tar czf "$OUT/device_run.tgz" -C "$LOGS" . ; }
trap finish EXIT

if has tests; then
  timeout ${TESTS_TIMEOUT:-300} python3 -m pytest tests/gpu -m gpu -q -p no:cacheprovider -x --durations=8 2>&1 | tee "$LOGS/gpu_tests.txt"
fi
if has bench; then
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv | tee "$LOGS/gpu_state.txt"
  python3 -m gpuprof devicequery --measure --json > "$LOGS/devicequery.json"
  python3 -m gpuprof run vecadd --json "$LOGS/vecadd.json" 2>&1 | tee "$LOGS/run_vecadd.txt"
  python3 -m gpuprof run matmul --variants all --size 256 --check-only > /dev/null  # warm the compile cache
  TIMEFORMAT="wall time of 'gpuprof run matmul --variants all' (warm compile cache): %R s"
  { time timeout 200 python3 -m gpuprof run matmul --variants all --json "$LOGS/matmul.json" > "$LOGS/run_matmul.txt" 2>&1 ; } 2>> "$LOGS/run_matmul.txt"
  cat "$LOGS/run_matmul.txt"
fi
if has ncu; then
  TIMEFORMAT="wall time of 'gpuprof ncu matmul --variants naive,smem_tiled,cublas': %R s"
  { time timeout 200 python3 -m gpuprof ncu matmul --variants naive,smem_tiled,cublas --out "$LOGS/ncu" --plot "$LOGS/roofline.png" > "$LOGS/ncu_matmul.txt" 2>&1 ; } 2>> "$LOGS/ncu_matmul.txt"
  cat "$LOGS/ncu_matmul.txt"
  cp "$LOGS/roofline.png" "$OUT/" 2>/dev/null
  # the same kernels under plain ncu, for the side-by-side in docs/PERFORMANCE.md
  for v in naive smem_tiled cublas; do
    timeout 60 ncu --clock-control none --nvtx --nvtx-include "matmul/$v/" --section SpeedOfLight --section Occupancy --section LaunchStats \
      python3 -m gpuprof launch matmul $v --count 1 --warmup 2 > "$LOGS/plain_ncu_$v.txt" 2>&1
    grep -E "Duration|Registers Per Thread|Achieved Occupancy|Compute \(SM\) Throughput|^  [a-z_]+.*\(" "$LOGS/plain_ncu_$v.txt" | head -12
  done
  TIMEFORMAT="wall time of 'gpuprof ncu matmul --variants smem_tiled': %R s"
  { time timeout 60 python3 -m gpuprof ncu matmul --variants smem_tiled --out "$LOGS/ncu1" > /dev/null 2>&1 ; } 2>&1 | tee "$LOGS/ncu_one_variant_time.txt"
fi
if has gate; then
  # issue 4: two back-to-back smoke suites must compare without SLOWER rows; a genuinely slower
  # warptile build (smaller block tile) must be SLOWER with exit 1.
  timeout 150 python3 -m gpuprof suite suites/smoke.toml --json "$LOGS/smoke_a.json" > "$LOGS/smoke_a.txt" 2>&1
  timeout 150 python3 -m gpuprof suite suites/smoke.toml --json "$LOGS/smoke_b.json" > "$LOGS/smoke_b.txt" 2>&1
  python3 -m gpuprof compare "$LOGS/smoke_a.json" "$LOGS/smoke_b.json" --markdown "$LOGS/compare_ab.md" 2>&1 | tee "$LOGS/compare_ab.txt"
  echo "compare a b: exit ${PIPESTATUS[0]}" | tee -a "$LOGS/compare_ab.txt"
  timeout 100 python3 -m gpuprof run matmul -v smem_tiled,warptile,cublas -s 2048 --max-time 0.5 \
    -D NUM_THREADS=128 -D BM=128 -D BN=128 -D MINBLOCKS=2 --json "$LOGS/smoke_slow.json" > "$LOGS/smoke_slow.txt" 2>&1
  python3 -m gpuprof compare "$LOGS/smoke_a.json" "$LOGS/smoke_slow.json" 2>&1 | tee "$LOGS/compare_slow.txt"
  echo "compare a slow: exit ${PIPESTATUS[0]}" | tee -a "$LOGS/compare_slow.txt"
fi
if has sanitize; then
  TIMEFORMAT="wall time of 'gpuprof sanitize': %R s"
  { time timeout ${SANITIZE_TIMEOUT:-300} python3 -m gpuprof sanitize ${SANITIZE_FAMILIES:-${FAMILIES:-}} ${SANITIZE_ARGS:-} --out "$LOGS/sanitize" > "$LOGS/sanitize.txt" 2>&1 ; } 2>> "$LOGS/sanitize.txt"
  grep -E "clean|finding|could not|error|wall time" "$LOGS/sanitize.txt" | cut -c1-160 | tail -40
fi
if has families; then
  for f in ${RUN_FAMILIES:-transpose reduce softmax scan conv2d}; do
    [ -d "kernels/$f" ] || continue
    timeout ${FAMILY_TIMEOUT:-150} python3 -m gpuprof run "$f" --max-time 0.5 --json "$LOGS/run_$f.json" > "$LOGS/run_$f.txt" 2>&1
    echo "== gpuprof run $f: exit $?"; head -20 "$LOGS/run_$f.txt" | cut -c1-170
  done
fi
if has truth; then
  timeout ${TRUTH_TIMEOUT:-240} python3 benchmarks/timing_truth.py --out "$LOGS" 2>&1 | tee "$LOGS/timing_truth.txt"
fi
