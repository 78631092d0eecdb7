"""`show` of a results file from an earlier gpuprof (issue 27): a fact the file does not hold is taken
from the catalogue or shown as unknown, never a default that makes a wrong figure, and no footnote
contradicts the row it explains."""

from __future__ import annotations

import json
from pathlib import Path

from gpuprof.analysis.derive import BEYOND_MARGIN, FLOOR_MARGIN, WITHIN_MARGIN
from gpuprof.commands.show import show
from gpuprof.results import UNKNOWN_PRECISION

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "results" / "h100_matmul_all.json"


def _earlier(tmp_path: Path, **renames: str) -> Path:
    """The fixture as a gpuprof before the per-row precision key wrote it (and before "derived")."""
    data = json.loads(FIXTURE.read_text())
    for row in data["rows"]:
        row.pop("precision", None)
        row.pop("derived", None)
        row["variant"] = renames.get(row["variant"], row["variant"])
    path = tmp_path / "earlier.json"
    path.write_text(json.dumps(data))
    return path


def _rows(report):
    return [row for table in report.tables for row in table.rows]


def test_a_missing_precision_is_the_catalogues(tmp_path):
    now = {r.variant: r for r in _rows(show(FIXTURE))}
    earlier = {r.variant: r for r in _rows(show(_earlier(tmp_path)))}
    assert earlier["cublas_tf32"].precision == "tf32"
    for name, row in earlier.items():  # the same figures as the file that says its precisions
        assert row.derived.pct_of_ceiling == now[name].derived.pct_of_ceiling, name
        assert row.derived.over_ceiling == now[name].derived.over_ceiling, name


def test_a_variant_the_catalogue_does_not_know_has_no_ceiling_rather_than_fp32s(tmp_path):
    rows = {r.variant: r for r in _rows(show(_earlier(tmp_path, cublas_tf32="someone_elses_tf32")))}
    row = rows["someone_elses_tf32"]
    assert row.precision == UNKNOWN_PRECISION
    assert row.derived.rate and row.derived.pct_of_ceiling is None and row.derived.over_ceiling is None


def test_no_footnote_contradicts_its_row(tmp_path):
    limit = 100 / (1 - FLOOR_MARGIN)
    data = json.loads(FIXTURE.read_text())
    for row in data["rows"]:  # the old default: every row fp32, the TF32 GEMM far above FP32's peak
        row["precision"] = "fp32"
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps(data))
    checked = 0
    for path in (FIXTURE, _earlier(tmp_path), wrong):
        for row in _rows(show(path)):
            d = row.derived
            if d.over_ceiling is not None:
                checked += 1
                assert d.pct_of_ceiling is not None and d.pct_of_ceiling > 100, row.id
            if d.over_ceiling == WITHIN_MARGIN:
                assert d.pct_of_ceiling <= limit, f"{row.id}: {d.pct_of_ceiling:.1f} % is beyond the margin"
            if d.pct_of_ceiling is not None and d.pct_of_ceiling > limit and row.flop_count == "executed" \
                    and d.rate_kind == "flop":
                assert d.over_ceiling == BEYOND_MARGIN, row.id
    assert checked  # the fp32-labelled TF32 GEMM has a footnote, and it says the figure cannot be
