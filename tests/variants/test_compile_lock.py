"""Processes compiling the same kernel take turns (variants/nvrtc.py one_compiler_at_a_time)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

# Enters the lock, says so, and holds it until the release file exists (no sleeps to race).
HOLD = """
import os, sys, time
from gpuprof.variants.nvrtc import one_compiler_at_a_time
with one_compiler_at_a_time(sys.argv[1], ("-DX=1",)):
    print("in", time.monotonic(), flush=True)
    while sys.argv[2] and not os.path.exists(sys.argv[2]):
        time.sleep(0.01)
    print("out", time.monotonic(), flush=True)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="fcntl locks")
def test_same_source_waits_for_the_first_compiler_and_another_source_does_not(tmp_path):
    env = {"GPUPROF_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    release = tmp_path / "release"

    def start(source: str, hold: Path | str) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-c", HOLD, source, str(hold)], stdout=subprocess.PIPE,
                                text=True, env=env)

    first = start("kernel A", release)
    assert first.stdout.readline().startswith("in")  # the first holds the lock from here on
    other = start("kernel B", "")
    other_out = dict(line.split() for line in other.communicate(timeout=120)[0].splitlines())
    assert first.poll() is None  # a different kernel compiled while the first still held its lock
    same = start("kernel A", "")
    time.sleep(0.2)
    release.touch()
    first_out = dict(line.split() for line in first.communicate(timeout=120)[0].splitlines())
    same_out = dict(line.split() for line in same.communicate(timeout=120)[0].splitlines())
    assert float(same_out["in"]) >= float(first_out["out"])  # the same kernel waited its turn
    assert float(other_out["out"]) < float(first_out["out"])
