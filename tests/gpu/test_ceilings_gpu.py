"""On a GPU: every honest row of matmul is judged against its own precision's datasheet ceiling and
stays at or under 100 %, with the measured-ceiling cache hidden; ncu counts a TF32 GEMM's tensor FLOPs."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from gpuprof import results
from gpuprof.cli import app
from gpuprof.measure import device_ceilings

pytestmark = pytest.mark.gpu


@pytest.fixture
def no_measured_cache(tmp_path, monkeypatch):
    """As on a machine where `devicequery --measure` never ran."""
    monkeypatch.setattr(device_ceilings, "CACHE_DIR", tmp_path)


def test_matmul_all_variants_prints_no_percentage_above_100(no_measured_cache, tmp_path):
    out = tmp_path / "matmul.json"
    result = CliRunner().invoke(app, ["run", "matmul", "--variants", "all", "--json", str(out)],
                                env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    table = result.output.split("timing:")[0]
    shown = [float(x) for x in re.findall(r"(\d+(?:\.\d+)?) %", table)]
    assert shown and max(shown) <= 100.0, table
    assert "TF32 tensor, dense" in result.output
    rows = {r.variant: r for r in results.load(out).rows}
    assert rows["cublas_tf32"].precision == "tf32"
    assert rows["cublas_tf32"].derived.ceiling_name == "TF32 tensor, dense"
    assert 50 < rows["cublas_tf32"].derived.pct_of_ceiling <= 100  # ~80 % on an H100 SXM
    assert all(r.check.status == results.OK for r in rows.values())


def test_vecadd_in_graph_mode_is_flagged_not_impossible(no_measured_cache):
    result = CliRunner().invoke(app, ["run", "vecadd", "--variants", "grid,vectorized", "--size", "2^20",
                                      "--timing", "graph"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    table = result.output.split("timing:")[0]
    for value, flag in re.findall(r"(\d+(?:\.\d+)?) %( \*\d)?", table):
        assert float(value) <= 100.0 or flag, table  # above 100 % only with a flag ...
    if "*1" in table:
        assert "*1 above 100 %: L2-resident data" in result.output  # ... and its footnote
