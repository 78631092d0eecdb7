"""Several tables (a suite, a results file): the footer lines every table shares are printed once,
after the last table, and the failed rows are listed last; a single table keeps its whole footer."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from gpuprof.cli import app

RESULTS = Path(__file__).resolve().parents[1] / "fixtures" / "results"


def show(name: str) -> str:
    result = CliRunner().invoke(app, ["show", str(RESULTS / name)], env={"COLUMNS": "100"})
    return result.output


def test_a_suites_shared_lines_are_printed_once_after_the_tables_and_the_failures_last():
    out = show("h100_course.json")
    flat = " ".join(out.split())
    assert flat.count("timing: cold — L2 flushed") == 1 and flat.count("check: max |out-ref|") == 1
    assert out.index("every table above") > out.rindex("variant ")  # after the last table's header
    assert flat.count("GB/s = 12·n bytes") >= 2  # a family's own formula stays under each of its tables
    assert "failed:" not in out  # the re-recorded course: every row that ran is OK


def test_the_failed_rows_are_listed_after_the_shared_lines():
    out = show("h100_course_b.json.gz")  # five rows WRONG as recorded
    failed = out.index("row(s) failed:")
    assert failed > out.index("every table above") and "WRONG" in out[failed:]


def test_a_single_table_keeps_its_whole_footer():
    out = show("h100_matmul_all.json")
    assert "every table above" not in out and "timing: cold" in out and "check: max |out-ref|" in out
