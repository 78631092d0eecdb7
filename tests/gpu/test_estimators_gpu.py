"""On a GPU (issue 39): reduce kernels that estimate — skip a fraction and scale, sample a stride,
stop half-way and extrapolate — pass the random-input check within reduce's tolerance but are WRONG
on needle inputs, with the class named; the honest rungs and the vendor rows stay OK on them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gpuprof import results

pytestmark = pytest.mark.gpu

ESTIMATORS = Path(__file__).resolve().parents[1] / "kernels" / "adversarial" / "estimators"


def test_every_estimator_is_wrong_on_needles_and_the_honest_rows_are_ok(tmp_path):
    out = tmp_path / "reduce.json"
    done = subprocess.run([sys.executable, "-m", "gpuprof", "run", "reduce", "--kernels-dir", str(ESTIMATORS),
                           "--variants", "vectorized_atomic,last_block,cub,torch", "--size", "2^28",
                           "--max-time", "0.3", "--json", str(out)], capture_output=True, text=True, timeout=500,
                          check=False)
    assert done.returncode == 1, done.stdout + done.stderr
    rows = {r.variant: r for r in results.load(out).rows}
    for name in ("skip_fraction", "strided_sample", "early_exit"):
        assert rows[name].check.status == results.WRONG, (name, rows[name].check.reasons)
        assert any("needle inputs" in reason for reason in rows[name].check.reasons), rows[name].check.reasons
    for name in ("vectorized_atomic", "last_block", "cub", "torch"):
        assert rows[name].check.status == results.OK, (name, rows[name].check.reasons)
