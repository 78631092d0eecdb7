"""Shared test plumbing: skip GPU tests without a usable GPU, skip compile tests without nvcc.

`@pytest.mark.gpu` is declared in pyproject.toml; `@pytest.mark.nvcc` is declared here. Both are
decided once per session, at collection, so a skipped test never sets up its fixtures.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

import pytest
from hypothesis import settings
from typer.testing import CliRunner

from gpuprof.errors import EnvironmentProblem

# Property tests are reproducible: the same examples on every run (no random seed, no example
# database carried between runs). HYPOTHESIS_PROFILE=explore searches with fresh randomness.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

pytest_plugins = ["pytester"]  # for the tests of gpuprof's own pytest plugin

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
GPU_SKIP_REASON = "needs a CUDA GPU"
NVCC_SKIP_REASON = "needs nvcc (the CUDA toolkit) on PATH or in $CUDA_HOME/bin"


@cache
def gpu_problem() -> str | None:
    """None when a CUDA GPU is usable here, else why not (CuPy missing, no driver, no device)."""
    from gpuprof.gpu import require_gpu

    try:
        require_gpu()
    except EnvironmentProblem as exc:
        return exc.message
    return None


def gpu_usable() -> bool:
    return gpu_problem() is None


@cache
def nvcc_path() -> str | None:
    """nvcc as gpuprof itself finds it (PATH, then $CUDA_HOME/bin), or None."""
    from gpuprof.tools._proc import find_tool

    try:
        return find_tool("nvcc")
    except EnvironmentProblem:
        return None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "nvcc: compiles CUDA with nvcc; skipped cleanly without it")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if any(item.get_closest_marker("gpu") for item in items) and not gpu_usable():
        skip_gpu = pytest.mark.skip(reason=GPU_SKIP_REASON)
        for item in items:
            if item.get_closest_marker("gpu"):
                item.add_marker(skip_gpu)
    if any(item.get_closest_marker("nvcc") for item in items) and nvcc_path() is None:
        skip_nvcc = pytest.mark.skip(reason=NVCC_SKIP_REASON)
        for item in items:
            if item.get_closest_marker("nvcc"):
                item.add_marker(skip_nvcc)


@pytest.fixture
def nvcc_available() -> str:
    """The nvcc path; skips the test where there is none."""
    path = nvcc_path()
    if path is None:
        pytest.skip(NVCC_SKIP_REASON)
    return path


@pytest.fixture
def runner() -> CliRunner:
    # The human console follows $COLUMNS (render/console.py): pin it, so a developer's exported
    # COLUMNS does not change what the tests see; 160 is what a pipe gets without it.
    return CliRunner(env={"COLUMNS": "160"})


@pytest.fixture
def fixtures_dir() -> Path:
    """Recorded tool outputs (tests/fixtures/, see its README)."""
    return TESTS / "fixtures"


@pytest.fixture
def no_gpu() -> str:
    """For tests of the no-GPU error: skips where a GPU is usable; returns why none is usable here."""
    problem = gpu_problem()
    if problem is None:
        pytest.skip("checks the no-GPU error, but a CUDA GPU is usable here")
    return problem


@pytest.fixture
def build_clean():
    """build_clean(family, variant, defines) -> ResourceUsage: compiles with nvcc for sm_90 with
    those -D overrides, and fails the test on a compile error or any spill."""
    from gpuprof.commands.build import build_variant
    from gpuprof.variants import catalog

    def build(family: str, variant: str, defines: dict[str, int]):
        fam = catalog.load_family(family)
        result = build_variant(fam, fam.variant(variant).with_defines(defines), "sm_90")
        assert result.error is None, result.error
        assert not result.usage.spills
        return result.usage

    return build


@pytest.fixture(scope="session")
def where_reports() -> dict[str, Path]:
    """The recorded reports with source, unzipped once per session (tests/ncu_full_reports.py):
    {"plain": path, "warptile": path, "sections": path}."""
    pytest.importorskip("ncu_report")
    from tests.ncu_full_reports import WHERE_REPORTS, report_path

    return {key: report_path(name, prefix) for key, (prefix, name) in WHERE_REPORTS.items()}


@pytest.fixture(autouse=True)
def _no_cupti_injection(request, monkeypatch):
    """Outside GPU tests, `nsys`/`profile -- COMMAND` find no CUPTI injection library unless a test asks
    for one (the `cupti_injection` fixture, or its own stand-in): the CPU tests' fake machines and
    programs must not build or load the real one."""
    if request.node.get_closest_marker("gpu") or "cupti_injection" in request.fixturenames:
        return
    from gpuprof.commands import nsys_cupti

    def unavailable():
        raise EnvironmentProblem("the CUPTI injection library is not used in this test")

    monkeypatch.setattr(nsys_cupti, "prepare", unavailable)


@pytest.fixture
def cupti_injection():
    """The real CUPTI and the injection library built for it here; skips where CUPTI or g++ is missing."""
    from gpuprof.commands import nsys_cupti

    try:
        return nsys_cupti.prepare()
    except EnvironmentProblem as exc:
        pytest.skip(f"no CUPTI injection library here: {exc.message}")
