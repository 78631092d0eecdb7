"""On a GPU: the suite writes what the gate needs (preset, resolution, controls); --gpus merges GPUs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gpuprof import results

pytestmark = pytest.mark.gpu

REPO = Path(__file__).resolve().parents[2]


def _gpuprof(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpuprof", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout, check=False)


def _gpu_count() -> int:
    from gpuprof.commands.suite_gpus import visible_gpu_count

    return visible_gpu_count()


def test_suite_results_carry_the_preset_and_each_rows_resolution(tmp_path):
    out = tmp_path / "smoke.json"
    done = _gpuprof("suite", "suites/smoke.toml", "--json", str(out))
    assert done.returncode == 0, done.stderr
    saved = results.load(out)
    assert saved.compare == {"preset": "default"}
    assert saved.timing_policy["target_resolution"] == 0.008
    for row in saved.rows:
        assert row.timing.resolution is not None and row.timing.resolution > 0, row.id
        # Resolved, or the budget ran out and the row says so.
        assert row.timing.resolution <= 0.008 or row.timing.stop_reason in ("resolution_budget", "max_samples"), row.id
        # the unit's wall time (compile, check, timing), for a later `suite --gpus --history`
        assert row.gpu["unit_wall_s"] > 0 and row.gpu["name"] == saved.environment["gpu_name"], row.id
        _assert_steps(row)


def _assert_steps(row):
    """Where the unit's time went: every step of the core, adding up to at most its wall time."""
    steps = row.gpu["steps_s"]
    assert {"compile", "check", "time", "verify"} <= set(steps) and all(s >= 0 for s in steps.values()), row.id
    assert sum(steps.values()) <= row.gpu["unit_wall_s"] + 0.01, row.id


def test_two_back_to_back_suites_pass_the_gate(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    for out in (a, b):
        assert _gpuprof("suite", "suites/smoke.toml", "--json", str(out)).returncode == 0
    gate = _gpuprof("compare", str(a), str(b))
    assert gate.returncode == 0, gate.stdout + gate.stderr
    assert "0 SLOWER (fail)" in gate.stdout and "the whole run is" in gate.stdout


def test_suite_on_two_gpus_spreads_rows_and_merges_one_file(tmp_path):
    if _gpu_count() < 2:
        pytest.skip("needs two GPUs")
    out = tmp_path / "two.json"
    done = _gpuprof("suite", "suites/smoke.toml", "--gpus", "all", "--json", str(out))
    assert done.returncode == 0, done.stderr
    saved = results.load(out)
    assert [r.id for r in saved.rows] == [
        "vecadd/grid/67108864", "vecadd/vectorized/67108864", "vecadd/torch/67108864",
        "matmul/smem_tiled/2048x2048x2048", "matmul/warptile/2048x2048x2048", "matmul/cublas/2048x2048x2048"]
    used = {r.gpu["index"] for r in saved.rows}
    assert len(used) >= 2 and all(r.gpu["uuid"] and r.gpu["name"] for r in saved.rows)
    for row in saved.rows:
        _assert_steps(row)
    assert len(saved.environment["gpus"]) == len(used)
