"""On a GPU: examples/cnn_train.py, a CNN training step written as a first PyTorch tutorial writes
it (not gpuprof's code), under `gpuprof ncu -- …` (one row per kernel, cuDNN's convolutions among
them) and `gpuprof sanitize --tool memcheck -- …` (clean). The wall time goal of issue 25 is
measured by `scripts/device_run.sh speed`, not asserted here."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ["python3", str(ROOT / "examples" / "cnn_train.py")]


def _gpuprof(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpuprof", *args], capture_output=True, text=True, check=False,
                          timeout=timeout, env={**os.environ, "COLUMNS": "120"}, cwd=ROOT)


def test_ncu_profiles_every_kernel_of_the_training_step(tmp_path):
    pytest.importorskip("torch")
    if shutil.which("ncu") is None:
        pytest.skip("ncu is not on PATH")
    out = tmp_path / "ncu.json"
    done = _gpuprof("ncu", "--out", str(tmp_path / "reports"), "--json", str(out), "--", *PROGRAM)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [row for result in json.loads(out.read_text())["run"]["results"] for row in result["rows"]]
    names = " ".join(row["kernel_name"] for row in rows)
    assert len(rows) >= 20, names  # forward, backward and the optimizer: some 30 distinct kernels
    assert "conv" in names.lower() or "implicit" in names.lower() or "gemm" in names.lower(), names


def test_memcheck_finds_the_training_step_clean(tmp_path):
    pytest.importorskip("torch")
    if shutil.which("compute-sanitizer") is None:
        pytest.skip("compute-sanitizer is not on PATH")
    done = _gpuprof("sanitize", "--tool", "memcheck", "--out", str(tmp_path), "--", *PROGRAM)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "memcheck" in done.stdout and "clean" in done.stdout, done.stdout
