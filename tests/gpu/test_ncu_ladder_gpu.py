"""On a GPU with ncu: `gpuprof ncu matmul --ladder` judges every hand-written rung against the
manifest's expected_limiter (none is "not stated" or "not measured"), the vendor rungs last.

The verdicts are printed (pytest -s) for docs/ladder.md."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpuprof.variants import catalog

pytestmark = pytest.mark.gpu
REPO = Path(__file__).resolve().parents[2]


def test_matmul_ladder_judges_every_hand_written_rung(tmp_path):
    if shutil.which("ncu") is None:
        pytest.skip("ncu is not on PATH")
    done = subprocess.run([sys.executable, "-m", "gpuprof", "ncu", "matmul", "--ladder", "--out", str(tmp_path),
                           "--json", "-"], capture_output=True, text=True, timeout=1800, check=False, cwd=REPO,
                          env={**os.environ, "COLUMNS": "100"})
    assert done.returncode == 0, done.stderr[-3000:]
    rungs = json.loads(done.stdout)["ladder"]
    family = catalog.load_family("matmul")
    hand = [v.name for v in family.variants if not v.vendor]
    assert [r["label"] for r in rungs] == hand + [v.name for v in family.variants if v.vendor]
    for rung in rungs:
        print(f"{rung['label']}: {rung['verdict']} ({rung['verdict_reason']}); {', '.join(rung['changes'])}")
    assert all(r["verdict"] in ("confirmed", "refuted") for r in rungs if not r["reference"])
    assert all(r["top_stall"] for r in rungs)  # WarpStateStats, collected for --ladder without --source
    shown = done.stderr[done.stderr.index("matmul ladder"):done.stderr.index("reports:")]
    assert "rung 1 → 2" in shown and all(len(line) <= 100 for line in shown.splitlines())
