"""`gpuprof ncu --import` on the `--set full` reports recorded on the H100: the roofline by memory
level in the terminal (within 100 columns, or whole with --wide) and in the PNG; the CSV fallback."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuprof.cli import app
from gpuprof.parsers import ncu_rep
from gpuprof.tools import _proc
from tests.ncu_full_reports import FULL_CSV, TOOLS_DIR, report_path, requires_ncu_report

NAIVE_VERDICT = "matmul_naive: L1-bound (uncoalesced: 85 % of sectors excessive)"


def invoke(*args: str, columns: int = 100):
    return CliRunner().invoke(app, ["ncu", "--import", *args], env={"COLUMNS": str(columns)})


def joined(text: str) -> str:
    return " ".join(text.split())


@requires_ncu_report
def test_default_view_fits_100_columns_and_names_the_binding_level():
    result = invoke(str(report_path("plain_matmul_lineinfo")))
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert all(len(line) <= 100 for line in lines)
    assert not any(re.search(r"…(\s|$)", line) for line in lines), result.output
    assert "roofline by memory level" in result.output
    rows = {line.split()[0]: line.split() for line in lines if line.startswith(("matmul_naive ", "matmul_tiled "))
            and "L1 pipe" in line}
    assert rows["matmul_naive"][1:4] == ["L1", "pipe", "0.0151"] and "96.0" in rows["matmul_naive"]
    assert rows["matmul_tiled"][1:4] == ["L1", "pipe", "0.305"] and "90.0" in rows["matmul_tiled"]
    text = joined(result.output)
    assert NAIVE_VERDICT in text and "achieved 0.486 TFLOP/s (96 %)" in text
    assert "matmul_tiled: L1-bound (shared memory: 86 % of the L1 data pipe's peak)" in text
    assert "not shown at this width:" in text  # optional columns left out, and named


@requires_ncu_report
def test_wide_prints_at_the_tables_own_width():
    """--wide at 100 columns: full kernel names and every column, no header squeezed to 'lau…'."""
    result = invoke(str(report_path("plain_matmul_lineinfo")), "--wide")
    assert result.exit_code == 0, result.output
    assert "…" not in result.output
    header = next(line for line in result.output.splitlines() if line.startswith("kernel "))
    assert header.split() == ["kernel", "NVTX", "range", "launches", "total", "mean", "share", "regs", "occupancy",
                              "SM", "%", "mem", "%", "limiter"]
    assert len(header) > 100
    assert "matmul_naive(const float *, const float *, float *, int)" in result.output
    level_header = next(line for line in result.output.splitlines() if line.startswith("kernel / variant "))
    assert " ".join(level_header.split()).endswith("% of roof precision L1 pipe L1 L2 DRAM")
    assert "not shown at this width" not in result.output


@requires_ncu_report
def test_plot_draws_the_levels(tmp_path):
    pytest.importorskip("matplotlib")
    png = tmp_path / "levels.png"
    result = invoke(str(report_path("matmul_warptile")), "--plot", str(png))
    assert result.exit_code == 0, result.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "matmul_warptile: compute-bound" in joined(result.output)


def without_ncu_report(monkeypatch, tmp_path, raw_page: Path) -> Path:
    """ncu_report missing: `ncu --import` answers with the recorded raw page (and a details page
    without rule results); returns the report path to pass."""
    pages = {"raw": raw_page, "details": TOOLS_DIR / "ncu_2025.3.1_details_page_metrics_only.csv"}

    def fake(argv, *, timeout_s, cwd=None, env=None):
        argv = list(argv)
        if argv[1:3] == ["-m", "gpuprof.parsers.ncu_rep"]:
            return _proc.Completed(argv, ncu_rep.CHILD_UNAVAILABLE, "", "pip install ncu-report")
        return _proc.Completed(argv, 0, pages[argv[argv.index("--page") + 1]].read_text(), "")

    monkeypatch.setattr(_proc, "find_tool", lambda name, explicit=None, extra_dirs=(), hint="": f"/opt/fake/{name}")
    monkeypatch.setattr(_proc, "run", fake)
    report = tmp_path / "r.ncu-rep"
    report.write_bytes(b"recorded")
    return report


def test_csv_fallback_gives_the_same_verdict(monkeypatch, tmp_path):
    """Without ncu_report the report is read through `ncu --import --page raw`: the same metric
    names, the same verdict."""
    raw = tmp_path / "raw.csv"
    raw.write_bytes(gzip.decompress((TOOLS_DIR / f"{FULL_CSV}plain_matmul_lineinfo.csv.gz").read_bytes()))
    result = invoke(str(without_ncu_report(monkeypatch, tmp_path, raw)), "--per-launch")
    assert result.exit_code == 0, result.output
    assert "report read by ncu --import CSV" in joined(result.output)
    assert NAIVE_VERDICT in joined(result.output)


def test_csv_without_the_level_metrics_says_they_are_missing(monkeypatch, tmp_path):
    raw = TOOLS_DIR / "ncu_2025.3.1_raw_page_roofline_metrics.csv"
    result = invoke(str(without_ncu_report(monkeypatch, tmp_path, raw)), columns=120)
    assert result.exit_code == 0, result.output
    text = joined(result.output)
    assert "roofline by memory level" not in text
    assert "memory levels (L1, L2): not in this report, so DRAM alone is judged" in text
