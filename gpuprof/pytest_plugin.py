"""pytest plugin: a `gpuprof_bench` fixture so a kernel test can assert correctness and record timings.

    def test_my_kernel(gpuprof_bench):
        out = my_kernel(x)
        gpuprof_bench.check(out, reference(x), tolerance=1e-5)   # fails the test when wrong
        gpuprof_bench(lambda: my_kernel(x), bytes=8 * x.size)    # times it, keeps the samples

Given the arrays it reads and writes and a float64 reference, the timed callable is first checked on
`gpuprof run`'s input classes with the same tolerance models (gpuprof.api.benchmark's `inputs`,
`out`, `reference`, `tolerance`, `input_classes`), and the test fails when it is wrong on one:

    gpuprof_bench(lambda: my_sum(x, out), inputs={"x": x}, out=out,
                  reference=lambda a: a["x"].sum(keepdims=True), tolerance=1e-5)

`pytest --gpuprof-json results.json` writes every timing as a gpuprof results file (rows
`pytest/<label>/`), which `gpuprof compare` can gate like any other.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

RESULTS_KEY = pytest.StashKey[list]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("gpuprof")
    group.addoption("--gpuprof-json", metavar="PATH", default=None,
                    help="write the gpuprof_bench timings of this session as a gpuprof results file")


def pytest_configure(config: pytest.Config) -> None:
    config.stash[RESULTS_KEY] = []


class Bench:
    """The fixture's object: call it to time a callable; .check to compare an output with a reference."""

    def __init__(self, node: pytest.Item, store: list) -> None:
        self.node, self.store = node, store

    def __call__(self, fn: Any, *, label: str | None = None, **options: Any):
        from gpuprof.api import benchmark

        result = benchmark(fn, label=label or self.node.name, **options)
        self.store.append(result)
        if not result.ok:  # recorded (as such) in --gpuprof-json, and the test fails
            pytest.fail(f"gpuprof_bench {result.label}: timing is {result.status}: {'; '.join(result.reasons)}")
        return result

    @staticmethod
    def check(out: Any, ref: Any, tolerance: float) -> float:
        """max |out-ref| / max(|ref|, rms(ref)) as `gpuprof run` computes it; fails above tolerance."""
        from gpuprof.gpu import cupy
        from gpuprof.measure.check import scaled_error

        cp = cupy()
        err, not_written = scaled_error(cp.asarray(out), cp.asarray(ref, dtype=cp.float64))
        if not_written:
            pytest.fail(f"{not_written} outputs are NaN (not written?)")
        if not err <= tolerance:
            pytest.fail(f"error {err:.2e} > tolerance {tolerance:.0e}")
        return err


@pytest.fixture
def gpuprof_bench(request: pytest.FixtureRequest) -> Bench:
    return Bench(request.node, request.config.stash[RESULTS_KEY])


def pytest_sessionfinish(session: pytest.Session) -> None:
    path = session.config.getoption("--gpuprof-json")
    timed = session.config.stash.get(RESULTS_KEY, [])
    if not path or not timed:
        return
    from gpuprof import fingerprint, results
    from gpuprof.results import CheckResult, Row

    rows = [Row(family="pytest", variant=r.label, size={}, vendor=False,
                check=CheckResult(status=r.status, reasons=list(r.reasons)),
                timing=r.timing, flop=r.flop, bytes=r.bytes) for r in timed]
    results.save(results.Results(environment=fingerprint.environment(), rows=rows, command="pytest",
                                 created_utc=fingerprint.now_utc()), Path(path))
