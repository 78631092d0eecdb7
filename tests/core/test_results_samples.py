"""Issue 26: a results file whose samples are not all finite times above zero is refused on load
(exit 2 naming the file and the row), by every command that reads it: nothing is dropped silently."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from gpuprof import results
from gpuprof.cli import app
from gpuprof.errors import InputError

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "results" / "h100_ci_a.json"


def _with_sample(tmp_path: Path, value: float, index: int = 3) -> Path:
    data = json.loads(RECORDED.read_text())
    data["rows"][4]["timing"]["samples_s"][index] = value
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))  # NaN and Infinity as Python's json writes them
    return path


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, 0.0, -1e-3])
def test_a_non_finite_zero_or_negative_sample_makes_the_file_invalid(tmp_path, value):
    path = _with_sample(tmp_path, value)
    for lean in (False, True):
        with pytest.raises(InputError, match=r"bad.json: .*matmul/smem_tiled/4096x4096x4096: timing.samples_s\[\d+\] "
                                             r"is .*every sample must be a finite time above 0"):
            results.load(path, lean=lean)


@pytest.mark.parametrize("command", ["show", "compare"])
def test_show_and_compare_refuse_it_with_exit_2(tmp_path, command):
    path = _with_sample(tmp_path, math.nan, index=0)
    args = ["show", str(path)] if command == "show" else ["compare", str(RECORDED), str(path)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert "matmul/smem_tiled/4096x4096x4096: timing.samples_s[0] is nan" in result.output.replace("\n", "")


def test_recorded_files_load_unchanged():
    assert all(row.timing is not None and min(row.timing.samples_s) > 0 for row in results.load(RECORDED).rows)


def test_clock_median_from_the_text_equals_numpys_median_of_the_real_clocks():
    rng = np.random.default_rng(1)
    for n in range(1, 80):
        values = rng.choice([1980.0, 1755.0, 11980.0, 1980.05, math.nan, 0.0, -1.0, math.inf], n) if n % 3 \
            else np.full(n, 1980.0)
        text = json.dumps(values.tolist())[1:-1]  # as a row line holds them: NaN, Infinity
        fine = values[np.isfinite(values) & (values > 0)]
        assert results.clock_median(text) == (float(np.median(fine)) if fine.size else None)
