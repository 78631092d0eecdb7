"""`gpuprof sanitize --jobs N`: runs overlap, results keep target-then-tool order."""

from __future__ import annotations

import threading
import time

import pytest

from gpuprof.commands import sanitize
from gpuprof.commands.sanitize import SanitizeResult
from gpuprof.tools.target import LaunchTarget


@pytest.mark.parametrize("jobs", [1, 3])
def test_results_keep_their_order_whatever_the_parallelism(tmp_path, monkeypatch, jobs):
    running, peak, lock = [0], [0], threading.Lock()

    def fake_run_one(exe, name, target, label, log, leak_check=False):
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.05 if name == "memcheck" else 0.01)  # finish out of order
        with lock:
            running[0] -= 1
        return SanitizeResult(label, name, log=log)

    monkeypatch.setattr(sanitize.tool, "find_sanitizer", lambda explicit=None: "compute-sanitizer")
    monkeypatch.setattr(sanitize, "run_one", fake_run_one)
    targets = [LaunchTarget("vecadd", v, {"n": 4097}) for v in ("grid", "vectorized", "one_block")]
    results = sanitize.sanitize_targets(targets, ["memcheck", "racecheck"], tmp_path, jobs=jobs)
    assert [(r.label, r.tool) for r in results] == [
        (f"vecadd/{v}", t) for v in ("grid", "vectorized", "one_block") for t in ("memcheck", "racecheck")]
    if jobs == 1:
        assert peak[0] == 1
    else:
        assert peak[0] > 1  # they did overlap
