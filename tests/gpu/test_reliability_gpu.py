"""On a GPU: a variant that faults, hangs or is wrong costs only its own row; Ctrl-C keeps a valid JSON."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from gpuprof import results

pytestmark = pytest.mark.gpu

REPO = Path(__file__).resolve().parents[2]
FAULTY_SUITE = REPO / "tests" / "suites" / "faulty.toml"


def _gpuprof(args: list[str], env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "gpuprof", *args], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _processes_with(marker: str) -> list[int]:
    """PIDs of live processes whose environment holds marker (the CLI and any worker it started)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "environ").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_faulting_hanging_and_wrong_variants_do_not_stop_the_suite(tmp_path):
    out = tmp_path / "faulty.json"
    proc = _gpuprof(["suite", str(FAULTY_SUITE), "--timeout", "30", "--json", str(out)])
    stdout, stderr = proc.communicate(timeout=480)
    assert proc.returncode == 1, stdout + stderr
    rows = {r.variant: r for r in results.load(out).rows}
    expected = {"grid": results.OK, "illegal_address": results.FAULT, "vectorized": results.OK,
                "infinite_loop": results.TIMEOUT, "torch": results.OK, "wrong": results.WRONG,
                "one_block": results.OK, "smem_tiled": results.OK, "cublas": results.OK}
    assert {name: row.check.status for name, row in rows.items()} == expected
    for name, status in expected.items():
        row = rows[name]
        if status == results.OK:
            assert row.timing is not None and row.timing.summary.n >= 10, name  # the good ones are timed
        else:
            assert row.timing is None and row.check.reasons, name
    assert "illegal memory access" in rows["illegal_address"].check.reasons[0]
    timed_out = rows["infinite_loop"].check.reasons[0]
    assert "no answer within 30 s during check; its worker process was stopped" in timed_out
    expected = (("illegal_address", "FAULT"), ("infinite_loop", "TIMEOUT"), ("wrong", "WRONG"))
    assert all(f"vecadd/{v}/16777216 {s}" in stderr for v, s in expected)


def test_ctrl_c_during_a_suite_exits_130_and_leaves_valid_json(tmp_path):
    out = tmp_path / "smoke.json"
    marker = f"GPUPROF_TEST_RUN={uuid.uuid4().hex}"
    env = {**os.environ, "GPUPROF_TEST_RUN": marker.split("=", 1)[1]}
    proc = _gpuprof(["suite", str(REPO / "suites" / "smoke.toml"), "--json", str(out)], env=env)
    deadline = time.monotonic() + 240
    while not out.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)  # the file appears after the first variant
    assert out.exists(), "no results written within 240 s"
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stdout + stderr
    assert "interrupted" in stderr and "Traceback" not in stderr
    saved = results.load(out)  # valid, complete JSON ...
    assert 1 <= len(saved.rows) < 6  # ... with what finished, not the whole suite
    assert all(r.check.status == results.OK for r in saved.rows)
    json.loads(out.read_text())
    time.sleep(1.0)
    assert _processes_with(marker) == []  # no worker left behind
