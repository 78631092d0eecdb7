"""`gpuprof ncu --source` end to end on CPU: the recorded full-set reports through the real reader
child, for --import, a family run and `-- COMMAND` (a fake ncu leaves the recorded report)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuprof.cli import app
from gpuprof.tools import _proc

TOOLS = Path(__file__).resolve().parent.parent / "fixtures" / "tools"
NO_SOURCE = TOOLS / "ncu-2025.3.1__launch_vecadd_grid.ncu-rep"  # gpuprof's default sections only
REAL_RUN = _proc.run


def invoke(*args: str, columns: int = 100):
    result = CliRunner(env={"COLUMNS": str(columns)}).invoke(app, ["ncu", *args])
    assert "Traceback" not in result.output
    return result


def fits(output: str, width: int) -> bool:
    """Every line within width; the summary's `reports:` line is left whole for copying (soft wrap)."""
    too_wide = [line for line in output.splitlines() if len(line) > width and not line.startswith("reports: ")]
    assert not too_wide, too_wide[0]
    return True


class RecordedReport:
    """ncu that leaves `report` at --export BASE; the reader children really run."""

    def __init__(self, report: Path) -> None:
        self.report, self.calls = report, []

    def __call__(self, argv, *, timeout_s, cwd=None, env=None):
        argv = list(argv)
        if argv[1:2] == ["-m"]:
            return REAL_RUN(argv, timeout_s=timeout_s, cwd=cwd, env=env)
        self.calls.append(argv)
        shutil.copyfile(self.report, Path(argv[argv.index("--export") + 1]).with_suffix(".ncu-rep"))
        return _proc.Completed(argv, 0, "", "==PROF== Profiling ... - 38 passes\n")


@pytest.fixture
def fake_ncu(monkeypatch):
    monkeypatch.setattr(_proc, "find_tool", lambda name, explicit=None, extra_dirs=(), hint="": f"/opt/fake/{name}")

    def install(report: Path) -> RecordedReport:
        fake = RecordedReport(report)
        monkeypatch.setattr(_proc, "run", fake)
        return fake

    return install


def test_import_source_fits_100_columns_and_names_the_hot_lines(where_reports):
    result = invoke("--import", str(where_reports["plain"]), "--source")
    assert result.exit_code == 0, result.output
    out = result.output
    assert fits(out, 100)
    for words in ("matmul_naive: 3,262,152 warp samples", "matmul_tiled:", "stall reasons", "gmem queue",
                  "hottest lines", "matmul_lineinfo.cu:18", "acc += A[row * n + k]", "matmul_lineinfo.cu:34",
                  "acc += As[threadIdx.y][k]", "try (gmem queue):", "sect/req"):
        assert words in out, words
    # the inner-product line heads the naive kernel's table, with its share and its reason
    hot = next(line for line in out.splitlines() if line.startswith("matmul_lineinfo.cu:18"))
    assert "99.8%" in hot and "gmem queue 94%" in hot and "16.5" in hot and "85%" in hot
    assert "not shown at this width" in out  # the columns left out are named


def test_wide_shows_every_column_and_the_whole_path(where_reports):
    result = invoke("--import", str(where_reports["plain"]), "--source", "--wide")
    assert result.exit_code == 0, result.output
    assert "/checkout1/tests/programs/matmul_lineinfo.cu:18" in result.output
    assert "ncu name" in result.output and "2nd stall" in result.output and "lg_throttle" in result.output


def test_json_carries_the_lines(where_reports):
    result = invoke("--import", str(where_reports["plain"]), "--source", "--json", "-")
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    naive = document["run"]["results"][0]["source"][0]
    assert naive["schema"] == "gpuprof.ncu.source/1" and naive["missing"] is None
    line = max(naive["lines"], key=lambda x: x["samples"])
    assert (line["line"], line["text"]) == (18, "acc += A[row * n + k] * B[k * n + col];")
    assert line["file"].endswith("matmul_lineinfo.cu") and line["stalls"]["lg_throttle"] > 0
    assert {"global_requests", "global_sectors", "global_sectors_ideal", "shared_wavefronts",
            "shared_wavefronts_ideal", "instructions"} <= set(line)
    assert naive["sass"][0]["offset"] == 0 and naive["warp_states"]["lg_throttle"] > 400


def test_json_without_source_has_empty_source_lists(where_reports):
    result = invoke("--import", str(where_reports["plain"]), "--json", "-")
    assert [r["source"] for r in json.loads(result.stdout)["run"]["results"]] == [[], []]


def test_sass_of_one_line(where_reports):
    result = invoke("--import", str(where_reports["plain"]), "--source", "--sass", "matmul_lineinfo.cu:18")
    assert result.exit_code == 0, result.output
    assert "matmul_naive: SASS of matmul_lineinfo.cu:18" in result.output and "LDG.E" in result.output
    assert "SASS of" in result.output and "matmul_tiled: SASS" not in result.output  # its lines start at 23
    assert fits(result.output, 100)
    missing = invoke("--import", str(where_reports["plain"]), "--source", "--sass", "matmul_lineinfo.cu:999")
    assert "--sass matmul_lineinfo.cu:999: no profiled kernel has that line" in missing.output


def test_a_report_without_source_says_why(where_reports):
    result = invoke("--import", str(NO_SOURCE), "--source")
    assert result.exit_code == 0, result.output
    flat = " ".join(result.output.split())
    assert "no per-line data: the report has no sampled warp stalls per instruction" in flat
    assert "SourceCounters" in flat and "--import-source yes" in flat


def test_family_run_collects_the_source_and_names_warptile_cu(fake_ncu, where_reports, tmp_path):
    fake = fake_ncu(where_reports["warptile"])
    result = invoke("matmul", "-v", "warptile", "--source", "--out", str(tmp_path), "--json", "-")
    assert result.exit_code == 0, result.output
    (argv,) = fake.calls
    assert argv[argv.index("--import-source") + 1] == "yes"
    assert {"SourceCounters", "WarpStateStats"} <= {argv[i + 1] for i, a in enumerate(argv) if a == "--section"}
    assert "SourceCounters, WarpStateStats" in " ".join(result.stderr.split())  # said before profiling
    ((source,),) = [r["source"] for r in json.loads(result.stdout)["run"]["results"]]
    assert {line["file"] for line in source["lines"]} == {"kernels/matmul/warptile.cu"}
    assert "warptile.cu:243" in result.stderr


def test_command_run_collects_the_source_and_names_the_programs_lines(fake_ncu, where_reports, tmp_path):
    fake = fake_ncu(where_reports["plain"])
    result = invoke("--source", "--out", str(tmp_path), "--", "./prog", "1024")
    assert result.exit_code == 0, result.output
    (argv,) = fake.calls
    assert argv[-2:] == ["./prog", "1024"] and "--import-source" in argv
    assert "matmul_lineinfo.cu:18" in result.output and "matmul_lineinfo.cu:34" in result.output


@pytest.mark.parametrize(("args", "why"), [(["--source-lines", "0"], "--source-lines 0: give at least 1"),
                                           (["--sass", "matmul_lineinfo.cu"], "--sass takes FILE:LINE"),
                                           (["--sass", "18"], "--sass takes FILE:LINE")])
def test_bad_source_options_are_one_line_exit_2(where_reports, args, why):
    result = invoke("--import", str(where_reports["plain"]), "--source", *args)
    assert result.exit_code == 2 and why in result.output


def test_sass_alone_implies_source(where_reports):
    result = invoke("--import", str(where_reports["plain"]), "--sass", "matmul_lineinfo.cu:34")
    assert result.exit_code == 0, result.output
    assert "hottest lines" in result.output and "SASS of matmul_lineinfo.cu:34" in result.output
