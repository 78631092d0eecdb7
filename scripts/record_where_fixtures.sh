#!/usr/bin/env bash
# Records full-set Nsight Compute reports with the source embedded, for the per-line hot-spot and
# stall-reason readers: a plain CUDA C++ program built with -lineinfo (two tutorial-shaped matmul
# kernels) and the course's matmul warptile and cuBLAS rungs. On a GPU machine, from the repo root:
#   OUT=/some/dir bash scripts/record_where_fixtures.sh
# Clocks are left alone (--clock-control none). Reports land in $OUT/where/.
set -u -o pipefail
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT/where"
export PYTHONPATH=${PYTHONPATH:-$PWD}
nvcc -O3 -arch=sm_90 -lineinfo -o /tmp/matmul_lineinfo tests/programs/matmul_lineinfo.cu || exit 1
timeout 240 ncu --set full --import-source yes --clock-control none -f \
  -o "$OUT/where/plain_matmul_lineinfo" /tmp/matmul_lineinfo 2048 > "$OUT/where/plain_matmul_lineinfo.log" 2>&1
echo "== ncu --set full plain program: exit $?"
for v in warptile cublas; do
  timeout 240 ncu --set full --import-source yes --clock-control none --nvtx --nvtx-include "matmul/$v/" -f \
    -o "$OUT/where/matmul_$v" python3 -m gpuprof launch matmul "$v" --count 1 --warmup 2 > "$OUT/where/matmul_$v.log" 2>&1
  echo "== ncu --set full matmul/$v: exit $?"
done
ls -la "$OUT/where"
