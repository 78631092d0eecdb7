"""The pytest plugin loads without a GPU, adds --gpuprof-json and provides the gpuprof_bench fixture."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def importable(monkeypatch):
    """The child pytest must import gpuprof whether or not it is pip-installed here."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))

# Load the plugin by module name and block the installed entry point, so the test behaves the
# same whether or not gpuprof is pip-installed in this environment.
PLUGIN = ["-p", "no:gpuprof", "-p", "gpuprof.pytest_plugin"]


def test_option_is_listed(pytester: pytest.Pytester):
    result = pytester.runpytest_subprocess(*PLUGIN, "--help")
    result.stdout.fnmatch_lines(["*--gpuprof-json=PATH*"])


def test_fixture_is_available_and_writes_nothing_without_timings(pytester: pytest.Pytester):
    pytester.makepyfile(test_student="""
        def test_uses_fixture(gpuprof_bench):
            assert callable(gpuprof_bench) and callable(gpuprof_bench.check)
    """)
    out = pytester.path / "r.json"
    result = pytester.runpytest_subprocess(*PLUGIN, f"--gpuprof-json={out}")
    result.assert_outcomes(passed=1)
    assert not out.exists()  # nothing was timed, so no results file
