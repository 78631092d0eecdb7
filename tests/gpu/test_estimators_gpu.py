"""On a GPU (issue 39): reduce kernels that estimate — skip a fraction and scale, sample a stride,
stop half-way and extrapolate — pass the random-input check within reduce's tolerance but are WRONG
on needle inputs, with the class named; one that estimates only on dense inputs passes the check and
is IMPOSSIBLE by ncu's DRAM read bytes under --with ncu. The honest rows stay OK on both."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gpuprof import results

pytestmark = pytest.mark.gpu

ESTIMATORS = Path(__file__).resolve().parents[1] / "kernels" / "adversarial" / "estimators"


def _run(out: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpuprof", "run", "reduce", "--kernels-dir", str(ESTIMATORS),
                           "--size", "2^28", "--max-time", "0.3", "--json", str(out), *args],
                          capture_output=True, text=True, timeout=550, check=False)


def test_every_estimator_is_wrong_on_needles_and_the_honest_rows_are_ok(tmp_path):
    out = tmp_path / "reduce.json"
    done = _run(out, "--variants", "vectorized_atomic,last_block,cub,torch,skip_fraction,strided_sample,early_exit")
    assert done.returncode == 1, done.stdout + done.stderr
    rows = {r.variant: r for r in results.load(out).rows}
    for name in ("skip_fraction", "strided_sample", "early_exit"):
        assert rows[name].check.status == results.WRONG, (name, rows[name].check.reasons)
        assert any("needle inputs" in reason for reason in rows[name].check.reasons), rows[name].check.reasons
    for name in ("vectorized_atomic", "last_block", "cub", "torch"):
        assert rows[name].check.status == results.OK, (name, rows[name].check.reasons)


def test_an_estimator_that_spares_needles_is_impossible_by_its_dram_reads(tmp_path):
    pytest.importorskip("ncu_report")
    out = tmp_path / "witness.json"
    done = _run(out, "--variants", "vectorized_atomic,cub,needle_aware", "--with", "ncu",
                "--with-out", str(tmp_path / "story"))
    assert done.returncode == 1, done.stdout + done.stderr
    rows = {r.variant: r for r in results.load(out).rows}
    seen = {name: (r.check.status, r.check.reasons, r.ncu and r.ncu.dram_read_bytes) for name, r in rows.items()}
    assert rows["needle_aware"].check.status == results.IMPOSSIBLE, seen
    assert any("read from DRAM" in reason for reason in rows["needle_aware"].check.reasons)
    for name in ("vectorized_atomic", "cub"):
        assert rows[name].check.status == results.OK, (name, rows[name].check.reasons)
