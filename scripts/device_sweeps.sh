#!/usr/bin/env bash
# Define sweeps of new rungs on a GPU machine, one `gpuprof run` per point (each checked, then timed).
# Usage (from the repo root): SWEEPS="fused winograd BK=4;fused winograd -;matmul interleaved STAGES=4,INTERLEAVE=1" \
#   OUT=dir bash scripts/device_sweeps.sh
# A spec is "family variants defines|-" (variants comma-separated; defines NAME=VALUE comma-separated;
# "-" for the manifest's). Optional fourth field: a --size. One line per point in $OUT/sweeps.txt
# (the variant rows of its table); each point's JSON in $OUT/sweeps.tgz.
set -u -o pipefail
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
LOGS=$(mktemp -d /tmp/gpuprof-sweeps.XXXX)
export PYTHONUNBUFFERED=1 LC_ALL=C GPUPROF_CACHE_DIR=${GPUPROF_CACHE_DIR:-/tmp/gpuprof-cache}
if ls .whl/*.whl >/dev/null 2>&1 && [ ! -d /tmp/site ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
fi
export PYTHONPATH=/tmp/site:$PWD
IFS=';' read -r -a specs <<< "${SWEEPS:-}"
point=0
for spec in "${specs[@]}"; do
  [ -n "$spec" ] || continue
  set -- $spec
  family=$1 variants=$2 defines=${3:--} size=${4:--}
  args=(run "$family" -v "$variants" --json "$LOGS/point$point.json")
  [ "$defines" != "-" ] && for d in ${defines//,/ }; do args+=(-D "$d"); done
  [ "$size" != "-" ] && args+=(--size "$size")
  start=$SECONDS
  COLUMNS=160 timeout "${POINT_TIMEOUT:-150}" python3 -m gpuprof "${args[@]}" > "$LOGS/point$point.txt" 2>&1
  code=$?
  { echo "== $family $variants [$defines] ${size/-/default size}: exit $code, $((SECONDS - start)) s"
    grep -E " (OK|WRONG|FAULT|TIMEOUT|SKIPPED) " "$LOGS/point$point.txt" | cut -c1-160
    [ $code -ne 0 ] && [ $code -ne 1 ] && tail -3 "$LOGS/point$point.txt" | cut -c1-200
  } | tee -a "$OUT/sweeps.txt"
  point=$((point + 1))
  tar czf "$OUT/sweeps.tgz" -C "$LOGS" .
done
