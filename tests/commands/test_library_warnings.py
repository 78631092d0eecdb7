"""Library warnings raised while a row's work runs are kept on the row, never printed raw: PyTorch's
TF32 one becomes a footnote (†) of the rows it affects, once per table; any other is listed once at
the end of the run; the JSON keeps them per row (an optional "warnings")."""

from __future__ import annotations

import dataclasses
import json
import warnings

import numpy as np
import pytest
from rich.console import Console
from typer.testing import CliRunner

from gpuprof import results
from gpuprof.analysis.tables import Report
from gpuprof.analysis.tables import Table as RunTable
from gpuprof.cli import app
from gpuprof.commands import run as run_core
from gpuprof.measure import library_warnings
from gpuprof.render.tables import print_run_tables
from gpuprof.variants import catalog
from tests.measure.test_integrity import copy_of_vecadd, fake_run_core
from tests.measure.test_integrity import fake_cupy as numpy_for_cupy  # noqa: F401  (a fixture, used by name)
from tests.render.test_run_table import H100, fake_core, manifest_rows

# What Inductor says (torch/_inductor/compile_fx.py) compiling a float32 matmul with TF32 off.
TF32_TEXT = ("TensorFloat32 tensor cores for float32 matrix multiplication available but not enabled. "
             "Consider setting `torch.set_float32_matmul_precision('high')` for better performance.")
TF32 = {"library": "torch", "category": "UserWarning", "message": TF32_TEXT}
OTHER = {"library": "cupy", "category": "PerformanceWarning", "message": "an other library warning"}
FOOTNOTE = "† PyTorch warned that TF32 tensor cores were available but off"


def warning_launch(inputs, out, size):
    def launch(stream):
        warnings.warn(TF32_TEXT, UserWarning, stacklevel=1)  # on every launch, as a library would
        warnings.warn("an other library warning", RuntimeWarning, stacklevel=1)
        np.add(inputs["a"], inputs["b"], out=out)

    return launch


@pytest.mark.usefixtures("numpy_for_cupy")
def test_a_rows_launch_warnings_are_kept_on_its_row_and_not_printed(tmp_path, monkeypatch, capsys):
    family = catalog.parse_manifest(copy_of_vecadd(tmp_path))
    fake_run_core(monkeypatch, warning_launch)
    family = dataclasses.replace(family, check_sizes=({"n": 7}, {"n": 4097}))
    with warnings.catch_warnings(record=True) as escaped:
        warnings.simplefilter("always")
        rows = [run_core.run_variant(family, family.variant("grid"), {"n": 1000}, None, check_only=True,
                                     emit=lambda step: None) for _ in range(2)]
    assert escaped == [] and capsys.readouterr().err == ""  # nothing raw, for either row
    this_file = "test_library_warnings"
    assert [row.warnings for row in rows] == [[  # each once, though every launch raised them; the second row too
        {"library": this_file, "category": "UserWarning", "message": TF32_TEXT},
        {"library": this_file, "category": "RuntimeWarning", "message": "an other library warning"}]] * 2
    assert rows[0].check.status == "ok"


def test_the_library_is_the_installed_package_the_warning_came_from():
    assert library_warnings.library_of("/x/lib/python3.11/site-packages/torch/_inductor/compile_fx.py") == "torch"
    assert library_warnings.library_of("/usr/lib/python3/dist-packages/cupy/_core/core.py") == "cupy"
    assert library_warnings.library_of("/home/me/bench.py") == "bench"
    assert library_warnings.is_tf32_off(TF32) and not library_warnings.is_tf32_off(OTHER)


def _rows(warned: dict[str, list[dict[str, str]]]):
    rows = manifest_rows("matmul", {"naive": 0.5, "warptile": 47.05, "cublas": 52.07})
    for row in rows:
        row.warnings = list(warned.get(row.variant, []))
    return rows


def _printed(tables_rows, outside=()) -> str:
    from gpuprof.analysis.derive import derive

    family = catalog.load_family("matmul")
    tables = []
    for rows in tables_rows:
        derive(rows, "flop", family.baseline, family.vendor_reference, H100)
        tables.append(RunTable(family, rows, family.baseline, family.vendor_reference, "cold"))
    console = Console(width=100, record=True, color_system=None)
    print_run_tables(console, Report(results.Results(environment={}, rows=[r for t in tables_rows for r in t]),
                                     tables, H100), wide=False, outside_warnings=outside)
    return console.export_text()


def test_the_tf32_warning_is_a_footnote_of_its_rows_once_per_table():
    text = _printed([_rows({"warptile": [TF32], "cublas": [TF32]})])
    assert len([line for line in text.splitlines() if line.startswith(("warptile †", "cublas (vendor) †"))]) == 2
    assert not any(line.startswith("naive †") for line in text.splitlines())
    assert text.count(FOOTNOTE) == 1
    assert (FOOTNOTE + ": these rows ran in full FP32, the precision they are judged at (fp32).") in " ".join(
        text.split())
    assert "TensorFloat32" not in text and "library warnings" not in text  # said in gpuprof's words only


def test_other_warnings_are_listed_once_at_the_end_with_the_rows_that_raised_them():
    two_tables = [_rows({"naive": [OTHER], "warptile": [TF32, OTHER]}), _rows({"cublas": [OTHER]})]
    lines = _printed(two_tables, outside=[OTHER, {"library": "torch", "category": "UserWarning", "message": "m"}])
    lines = lines.splitlines()
    start = lines.index("library warnings (each once):")
    assert lines[start + 1:start + 3] == [
        "  cupy PerformanceWarning: an other library warning (matmul/naive/4096x4096x4096 and 2 more rows)",
        "  torch UserWarning: m"]


def test_gpuprof_run_prints_the_footnote_and_keeps_the_warnings_per_row_in_its_json(monkeypatch, tmp_path):
    fake_core(monkeypatch, _rows({"warptile": [TF32], "cublas": [OTHER]}))
    out = tmp_path / "run.json"
    result = CliRunner().invoke(app, ["run", "matmul", "--variants", "naive,warptile,cublas", "--json", str(out)],
                                env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    flat = " ".join(result.stdout.split())
    assert flat.count(FOOTNOTE) == 1 and "this row ran in full FP32" in flat
    assert "cupy PerformanceWarning: an other library warning (matmul/cublas/4096x4096x4096)" in flat
    rows = {r["variant"]: r for r in json.loads(out.read_text())["rows"]}
    assert "warnings" not in rows["naive"]  # written only where there are some
    assert rows["warptile"]["warnings"] == [TF32] and rows["cublas"]["warnings"] == [OTHER]
    assert [r.warnings for r in results.load(out).rows] == [[], [TF32], [OTHER]]


def test_the_report_page_marks_the_row_and_keeps_the_footnote_under_its_table(fixtures_dir, tmp_path):
    from dataclasses import replace

    from gpuprof.commands.report import ReportRequest, execute
    from gpuprof.render.report_html import page

    loaded = results.load(fixtures_dir / "results" / "smoke_a.json")
    marked = next(r for r in loaded.rows if r.family == "matmul" and not r.vendor)
    rows = [replace(r, warnings=[TF32]) if r is marked else r for r in loaded.rows]
    path = tmp_path / "tf32.json"
    results.save(replace(loaded, rows=rows), path)
    text = page(execute(ReportRequest(path)))
    assert f"{marked.variant} †</td>" in text
    assert text.count(FOOTNOTE) == 1
    assert text.index(FOOTNOTE) < text.index('<h2 id="how-measured">')  # under its table
