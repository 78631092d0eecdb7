"""Sweep tile parameters of one matmul variant at one size, next to cuBLAS FP32 in the same run.

  python benchmarks/matmul_sweep.py --variant warptile --size 4096 \
      --configs '[{"BM":128,"BN":128}, {"BM":128,"BN":256,"STAGES":4}]'
Each config overrides the manifest's defines; invalid ones (static_assert) are reported and skipped.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from gpuprof.commands.run import RunRequest, run_family
from gpuprof.errors import GpuprofError
from gpuprof.measure.timing import TimingPolicy
from gpuprof.variants import catalog
from gpuprof.variants.sizes import parse_size


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--variant", default="warptile")
    parser.add_argument("--size", default="4096")
    parser.add_argument("--configs", required=True, help="JSON list of define overrides")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    family = catalog.load_family("matmul")
    size = parse_size(family, args.size)
    policy = TimingPolicy(mode="cold", min_samples=10, max_time_s=1.0)
    cublas = run_family(RunRequest(family="matmul", variants=["cublas"], size=size, policy=policy)).rows[0]
    ref = 2.0 * size["m"] * size["n"] * size["k"] / cublas.timing.summary.median_s
    print(f"cublas: {ref / 1e12:.2f} TFLOP/s", flush=True)
    rows = []
    for overrides in json.loads(args.configs):
        try:
            row = run_family(RunRequest(family="matmul", variants=[args.variant], size=size, policy=policy,
                                        defines=overrides)).rows[0]
        except GpuprofError as exc:
            print(f"{overrides}: {exc.message[:200]}", flush=True)
            continue
        rate = 2.0 * size["m"] * size["n"] * size["k"] / row.timing.summary.median_s if row.timing else None
        rows.append({"defines": overrides, "status": row.check.status, "tflops": rate and rate / 1e12,
                     "vs_cublas": rate and rate / ref, "reasons": row.check.reasons})
        print(json.dumps(rows[-1]), flush=True)
    best = max((r for r in rows if r["tflops"]), key=lambda r: r["tflops"], default=None)
    print(f"best: {best}")
    if args.out:
        args.out.write_text(json.dumps({"cublas_tflops": ref / 1e12, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
