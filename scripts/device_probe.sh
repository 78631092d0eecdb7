#!/usr/bin/env bash
# First look at a lent GPU machine: versions, then gpuprof end to end. Logs under $OUT.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 LC_ALL=C
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
export GPUPROF_CACHE_DIR=/tmp/gpuprof-cache
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  python3 -c "import cupy, torch, sys; print(sys.version); print('cupy', cupy.__version__, 'torch', torch.__version__, torch.version.cuda)"
  python3 -c "import typer, rich, pandas, scipy; print('typer', typer.__version__, 'rich ok', 'pandas', pandas.__version__)"
  which ncu compute-sanitizer nvcc; ncu --version | tail -1
} 2>&1 | tee "$OUT/env.txt"
time python3 -m gpuprof devicequery --measure 2>&1 | tee "$OUT/devicequery.txt"
time python3 -m gpuprof run vecadd --json "$OUT/vecadd.json" 2>&1 | tee "$OUT/run_vecadd.txt"
time python3 -m gpuprof run matmul --json "$OUT/matmul.json" 2>&1 | tee "$OUT/run_matmul.txt"
for mode in hot graph; do python3 -m gpuprof run vecadd -v grid,vectorized,torch -s 2^25 -t $mode 2>&1 | tee -a "$OUT/modes.txt"; done
