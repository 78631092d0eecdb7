"""CUTLASS's SIMT SGEMM tile configurations ranked at one size, as the matmul family's `cutlass` row
chooses among them (the fastest runs): `python benchmarks/cutlass_configs.py 4096 4096 4096`."""

from __future__ import annotations

import sys


def main() -> int:
    m, n, k = (int(x) for x in (sys.argv[1:4] if len(sys.argv) >= 4 else (4096, 4096, 4096)))
    import cupy as cp

    from gpuprof.families._cutlass import configurations

    a = cp.random.uniform(-1, 1, (m, k), dtype=cp.float32)
    b = cp.random.uniform(-1, 1, (k, n), dtype=cp.float32)
    c = cp.empty((m, n), dtype=cp.float32)
    _, ranked = configurations(a, b, c, m, n, k)
    for _, name, ms in ranked:
        print(f"{name:34s} {ms:8.3f} ms  {2.0 * m * n * k / ms / 1e9:6.2f} TFLOP/s  ({m}x{n}x{k}, median of 3)")
    return 0 if ranked else 1


if __name__ == "__main__":
    sys.exit(main())
