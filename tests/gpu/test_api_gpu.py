"""On a GPU: the Python API times CuPy and PyTorch callables with the same engine as `gpuprof run`."""

from __future__ import annotations

import pytest

from gpuprof import results
from gpuprof.api import benchmark

pytestmark = pytest.mark.gpu


def test_cupy_callable_is_timed_cold_with_raw_samples():
    import cupy as cp

    n = 1 << 24
    a, b = cp.random.random(n, dtype=cp.float32), cp.random.random(n, dtype=cp.float32)
    c = cp.empty_like(a)
    result = benchmark(lambda: cp.add(a, b, out=c), bytes=12.0 * n, label="cupy add", max_time_s=0.5)
    assert result.timing.mode == "cold" and len(result.timing.samples_s) >= 10
    assert result.rate is not None and 1e11 < result.rate < 4e12  # bytes/s: under the H100's DRAM peak
    frame = result.to_frame()
    assert list(frame["label"]) == ["cupy add"] and frame["samples"][0] >= 10


def test_torch_callable_runs_on_the_timing_stream():
    torch = pytest.importorskip("torch")
    a = torch.rand((1024, 1024), device="cuda")
    c = torch.empty_like(a)
    result = benchmark(lambda: torch.matmul(a, a, out=c), flop=2.0 * 1024**3, mode="hot", max_time_s=0.5)
    # Were the matmul on another stream, the events would time an empty interval (~µs).
    assert result.median_s > 5e-6


def test_pytest_plugin_writes_a_results_file(pytester, tmp_path):
    pytester.makepyfile(test_k="""
        import cupy as cp
        def test_add(gpuprof_bench):
            a = cp.ones(1 << 20, dtype=cp.float32)
            out = a + a
            gpuprof_bench.check(out, 2 * a, tolerance=1e-6)
            gpuprof_bench(lambda: a + a, bytes=12.0 * (1 << 20), max_time_s=0.3)
    """)
    out = tmp_path / "r.json"
    result = pytester.runpytest_subprocess("-p", "no:gpuprof", "-p", "gpuprof.pytest_plugin", f"--gpuprof-json={out}")
    result.assert_outcomes(passed=1)
    (row,) = results.load(out).rows
    assert row.id == "pytest/test_add/" and len(row.timing.samples_s) >= 10


