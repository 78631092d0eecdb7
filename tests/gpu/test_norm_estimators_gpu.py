"""On a GPU (issue 39): softmax and layer-norm kernels that take a row statistic from part of the row
(a sampled max, a sum or statistics that stop once they "converge", a 50 % sample) are WRONG with the
input class named; every built-in rung and vendor row of softmax, fused, reduce and scan stays OK on
the classes they declare (the benchmark size included); and `run --audit` makes the reduce estimator
that spares needle inputs IMPOSSIBLE by its DRAM bytes while the honest rows get the counts as a note."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gpuprof import results
from gpuprof.errors import EnvironmentProblem

pytestmark = pytest.mark.gpu

ADVERSARIAL = Path(__file__).resolve().parents[1] / "kernels" / "adversarial"
ESTIMATORS = ADVERSARIAL / "estimators"
FLAGGED = (results.WRONG, results.IMPOSSIBLE, results.FAULT, results.TIMEOUT)


def _run(out: Path, family: str, *args: str) -> tuple[subprocess.CompletedProcess, dict[str, results.Row]]:
    done = subprocess.run([sys.executable, "-m", "gpuprof", "run", family, "--json", str(out), *args],
                          capture_output=True, text=True, timeout=590, check=False)
    rows = {r.variant: r for r in results.load(out).rows} if out.exists() else {}
    return done, rows


def _named(row: results.Row, *words: str) -> bool:
    return any(word in reason for reason in row.check.reasons for word in words)


def test_softmax_estimators_are_wrong_on_spikes_and_every_shipped_row_is_ok(tmp_path):
    honest = ("naive", "online", "block_row", "warp_shuffle", "vectorized", "sized", "triton", "torch")
    done, rows = _run(tmp_path / "softmax.json", "softmax", "--kernels-dir", str(ESTIMATORS), "--check-only",
                      "--variants", ",".join((*honest, "sampled_max", "early_exit")))
    assert done.returncode == 1, done.stdout + done.stderr
    for name in ("sampled_max", "early_exit"):
        assert rows[name].check.status == results.WRONG, (name, rows[name].check.reasons)
        assert _named(rows[name], "spike inputs"), rows[name].check.reasons
    for name in honest:
        assert rows[name].check.status == results.OK, (name, rows[name].check.reasons)


def test_layernorm_estimators_are_wrong_with_the_class_named_and_the_honest_rows_ok(tmp_path):
    done, rows = _run(tmp_path / "layernorm.json", str(ADVERSARIAL / "layernorm"), "--check-only")
    assert done.returncode == 1, done.stdout + done.stderr
    assert _named(rows["sampled_stats"], "alternating inputs"), rows["sampled_stats"].check.reasons
    assert _named(rows["early_exit"], "spike inputs"), rows["early_exit"].check.reasons
    for name in ("sampled_stats", "early_exit"):
        assert rows[name].check.status == results.WRONG, (name, rows[name].check.reasons)
    for name in ("block_row", "torch"):
        assert rows[name].check.status == results.OK, (name, rows[name].check.reasons)


@pytest.mark.parametrize("family", ["fused", "reduce", "scan"])
def test_no_shipped_row_is_flagged_on_the_classes(tmp_path, family):
    done, rows = _run(tmp_path / f"{family}.json", family, "--check-only")
    flagged = {name: (r.check.status, r.check.reasons) for name, r in rows.items() if r.check.status in FLAGGED}
    assert not flagged, flagged
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_audit_makes_the_needle_sparing_estimator_impossible_by_its_bytes(tmp_path):
    from gpuprof.tools import ncu

    try:
        ncu.find_ncu(None)
    except EnvironmentProblem:
        pytest.skip("ncu is not installed")
    done, rows = _run(tmp_path / "audit.json", "reduce", "--kernels-dir", str(ESTIMATORS), "--size", "2^28",
                      "--max-time", "0.3", "--variants", "vectorized_atomic,cub,needle_aware", "--audit",
                      "--with-out", str(tmp_path / "with"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert rows["needle_aware"].check.status == results.IMPOSSIBLE, rows["needle_aware"].check.reasons
    assert _named(rows["needle_aware"], "read from DRAM"), rows["needle_aware"].check.reasons
    for name in ("vectorized_atomic", "cub"):
        assert rows[name].check.status == results.OK, (name, rows[name].check.reasons)
        assert any(note.startswith("byte audit: ncu counted") for note in rows[name].check.notes), rows[name].check
