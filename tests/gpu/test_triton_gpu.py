"""On a GPU with Triton: the Triton variants go through the same check and timing engine as the CUDA
ones (every check size, cold / hot / graph timing), beside the vendor variant, and run alone the
way ncu and compute-sanitizer launch them."""

from __future__ import annotations

import shutil

import pytest
from typer.testing import CliRunner

from gpuprof import families, results
from gpuprof.analysis.derive import derive
from gpuprof.commands.run import RunRequest, run_family
from gpuprof.measure.timing import TimingPolicy
from gpuprof.variants import catalog

pytestmark = pytest.mark.gpu

QUICK = TimingPolicy(mode="cold", min_samples=5, max_time_s=0.3)

# Sizes that time both softmax paths: 50304 columns take the online kernel, 4096 the one-tile kernel.
CASES = [
    ("vecadd", {"n": 1 << 24}, "grid"),
    ("softmax", {"rows": 2048, "cols": 50304}, "vectorized"),
    ("softmax", {"rows": 16384, "cols": 4096}, "vectorized"),
]


@pytest.fixture(autouse=True)
def triton_installed():
    pytest.importorskip("triton", reason="the Triton variants need Triton (pip install triton)")


@pytest.mark.parametrize(("family", "size", "cuda"), CASES, ids=lambda c: c if isinstance(c, str) else None)
def test_triton_variant_is_checked_and_timed_beside_cuda_and_vendor(family, size, cuda):
    outcome = run_family(RunRequest(family=family, variants=[cuda, "triton", "torch"], size=size, policy=QUICK))
    rows = {r.variant: r for r in outcome.rows}
    triton = rows["triton"]
    assert triton.check.status == results.OK, triton.check.reasons
    assert triton.check.sizes_checked == [*catalog.load_family(family).check_sizes, size]
    assert triton.vendor is False and triton.technique.startswith("Triton")
    assert triton.timing is not None and len(triton.timing.samples_s) >= 5
    assert all(s > 0 for s in triton.timing.samples_s)
    fam = catalog.load_family(family)
    derive(outcome.rows, families.host(catalog.load_family(family)).RATE, cuda, fam.vendor_reference, None)
    derived = {r.variant: r.derived for r in outcome.rows}
    assert derived["triton"].vs_baseline and derived["triton"].vs_vendor  # compared with CUDA and torch
    # A memory-bound kernel that moved its bytes: well above 100 GB/s, below any HBM3e's ceiling.
    assert 1e11 < derived["triton"].rate < 6e12


@pytest.mark.parametrize("mode", ["cold", "hot", "graph", "cupti"])
def test_triton_launches_time_in_every_mode(mode):
    """graph captures Triton's launches into a CUDA graph; cupti reads the kernels' own timestamps."""
    policy = TimingPolicy(mode=mode, min_samples=10, max_time_s=0.5)
    outcome = run_family(RunRequest(family="vecadd", variants=["triton"], size={"n": 1 << 24}, policy=policy))
    (row,) = outcome.rows
    assert row.check.status == results.OK, row.check.reasons
    assert row.timing is not None and row.timing.mode == mode
    assert len(row.timing.samples_s) >= 10 and all(s > 0 for s in row.timing.samples_s)


@pytest.mark.parametrize("family", ["vecadd", "softmax"])
def test_triton_variant_launches_alone_like_under_a_profiler(family):
    """`gpuprof launch` is the child ncu, nsys and compute-sanitizer watch: warm-ups outside the
    NVTX ranges (Triton compiles there), then the ranged launches, plain allocations."""
    from gpuprof.cli import app

    fam = catalog.load_family(family)
    size = ",".join(f"{k}={v}" for k, v in fam.check_sizes[-1].items())
    result = CliRunner().invoke(app, ["launch", family, "triton", "-s", size, "--count", "2", "--warmup", "1",
                                      "--plain-alloc"])
    assert result.exit_code == 0, result.output


def test_triton_variants_are_clean_under_memcheck(tmp_path):
    if shutil.which("compute-sanitizer") is None:
        pytest.skip("compute-sanitizer is not on PATH")
    from gpuprof.commands.sanitize import sanitize_size, sanitize_targets
    from gpuprof.tools.target import LaunchTarget

    targets = [LaunchTarget(f.name, v.name, sanitize_size(list(f.check_sizes)), plain_allocations=True)
               for f in catalog.load_all() for v in f.variants if v.is_triton]
    assert {t.family for t in targets} >= {"vecadd", "softmax"}
    results_ = sanitize_targets(targets, ["memcheck"], tmp_path).results
    dirty = [(r.label, r.error, [x.message for x in r.findings[:2]]) for r in results_ if not r.clean]
    assert not dirty


def test_cli_run_shows_the_triton_row():
    from gpuprof.cli import app

    result = CliRunner().invoke(app, ["run", "vecadd", "-v", "grid,triton,torch", "-s", "2^22", "--max-time", "0.3"])
    assert result.exit_code == 0, result.output
    assert "triton" in result.output and "WRONG" not in result.output and "SKIPPED" not in result.output
