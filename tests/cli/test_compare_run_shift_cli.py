"""`gpuprof compare --fail-on run-shift=PCT` and the whole-run line, on the recorded H100 CI runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import gpuprof.cli.compare  # noqa: F401  (registers the command on app)
from gpuprof.cli._app import app

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "results"
runner = CliRunner()


@pytest.fixture
def slower_run(tmp_path) -> str:
    """The second recorded CI run with every sample 5 % slower (a driver update at the same clock)."""
    data = json.loads((RECORDED / "h100_ci_b.json").read_text())
    for row in data["rows"]:
        row["timing"]["samples_s"] = [s * 1.05 for s in row["timing"]["samples_s"]]
    path = tmp_path / "new.json"
    path.write_text(json.dumps(data))
    return str(path)


def test_a_whole_run_slowdown_passes_by_default_and_is_said_once(slower_run):
    result = runner.invoke(app, ["compare", str(RECORDED / "h100_ci_a.json"), slower_run, "--wide"])
    assert result.exit_code == 0, result.output
    assert "every row, controls included, is 4.6 % slower at the same clock (1995 MHz)" in result.output


def test_fail_on_run_shift_stops_the_line(slower_run):
    result = runner.invoke(app, ["compare", str(RECORDED / "h100_ci_a.json"), slower_run,
                                 "--fail-on", "run-shift=3", "--format", "json"])
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["schema_version"] == 2 and data["run_shift"]["fail_limit"] == pytest.approx(0.03)
    (failure,) = data["failures"]
    assert failure.startswith("run shift: the whole run 4.6 % slower") and "3 %" in failure
    assert {v["resource"] for v in data["verdicts"]} == {"DRAM", "compute"}
    loose = runner.invoke(app, ["compare", str(RECORDED / "h100_ci_a.json"), slower_run, "--fail-on", "run-shift=5"])
    assert loose.exit_code == 0


@pytest.mark.parametrize("value", ["run-shift", "run-shift=abc", "run-shift=-1"])
def test_a_bad_run_shift_limit_is_a_usage_error(slower_run, value):
    result = runner.invoke(app, ["compare", str(RECORDED / "h100_ci_a.json"), slower_run, "--fail-on", value])
    assert result.exit_code == 2 and "run-shift" in result.output
