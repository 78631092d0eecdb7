"""commands.ncu_source: what `--source` asks ncu for, and each result's per-line data, files named
as the user knows them (gpuprof's NVRTC kernels as kernels/<family>/<file>)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from gpuprof.commands import ncu as core
from gpuprof.commands import ncu_source
from gpuprof.commands.target import Target
from gpuprof.errors import EnvironmentProblem
from gpuprof.parsers import ncu_rep
from gpuprof.tools import _proc
from gpuprof.tools import ncu as ncu_tool

REPO = Path(__file__).resolve().parents[2]
WARPTILE = REPO / "kernels" / "matmul" / "warptile.cu"


def imported(report: Path) -> core.NcuRun:
    return core.execute(core.NcuRequest(Target(import_path=report), source=True))


def test_source_adds_the_sections_and_the_source_to_ncus_arguments():
    plain = core.NcuRequest(Target()).ncu_options()
    asked = core.NcuRequest(Target(), source=True).ncu_options()
    assert asked.sections == plain.sections + ncu_tool.SOURCE_SECTIONS and asked.import_source
    argv = ncu_tool.profile_argv("ncu", asked, Path("base"), ["./prog"])
    assert argv[argv.index("--import-source") + 1] == "yes"
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--section"][-2:] == ["SourceCounters", "WarpStateStats"]
    assert "--import-source" not in ncu_tool.profile_argv("ncu", plain, Path("base"), ["./prog"])
    # sections the user named are kept and not repeated; a --set adds only what it may lack
    mine = core.NcuRequest(Target(), sections=("WarpStateStats",), source=True).ncu_options()
    assert mine.sections == ("WarpStateStats", "SourceCounters")
    full = core.NcuRequest(Target(), set_name="full", source=True).ncu_options()
    assert full.set_name == "full" and full.sections == ncu_tool.SOURCE_SECTIONS


def test_the_cost_note_names_what_is_added():
    note = ncu_source.cost_note(core.NcuRequest(Target(), source=True))
    assert "SourceCounters, WarpStateStats" in note and "--import-source yes" in note and "replay passes" in note
    mine = core.NcuRequest(Target(), sections=ncu_tool.SOURCE_SECTIONS, source=True)
    assert "sections" not in ncu_source.cost_note(mine)


@pytest.mark.parametrize("recorded, shown", [
    ("/checkout1/kernels/matmul/warptile.cu", "kernels/matmul/warptile.cu"),  # recorded in another checkout
    ("kernels/matmul/warptile.cu", "kernels/matmul/warptile.cu"),  # NVRTC's #line name itself
    ("/elsewhere/kernels/matmul/not_a_gpuprof_kernel.cu", "/elsewhere/kernels/matmul/not_a_gpuprof_kernel.cu"),
    ("/opt/src/matmul_lineinfo.cu", "/opt/src/matmul_lineinfo.cu"),
    ("0123456789abcdef0123456789abcdef01234567.cubin.cu", "0123456789abcdef0123456789abcdef01234567.cubin.cu"),
])
def test_shown_file(recorded, shown, tmp_path):
    assert ncu_source.shown_file(recorded, tmp_path) == shown


def test_a_file_under_the_working_folder_is_shown_relative_to_it(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "k.cu").write_text("x\n")
    assert ncu_source.shown_file(str(tmp_path / "src" / "k.cu"), tmp_path) == "src/k.cu"


def test_warptile_lines_name_warptile_cu_and_its_line_numbers(where_reports):
    run = imported(where_reports["warptile"])
    ((source,),) = [r.source for r in run.results]
    assert source.files == {"/checkout1/kernels/matmul/warptile.cu": "kernels/matmul/warptile.cu"}
    text = WARPTILE.read_text().splitlines()
    assert {line.file for line in source.lines} == {"kernels/matmul/warptile.cu"}
    # each line's text (embedded in the report) is that line of the file here: the numbers map one to one
    assert all(line.text == text[line.line - 1].strip() for line in source.lines)
    assert {s.file for s in source.sass if s.file} == {"kernels/matmul/warptile.cu"}


def test_each_result_gets_the_sources_of_its_own_rows(where_reports):
    run = imported(where_reports["plain"])
    assert [r.label for r in run.results] == [r.rows[0].kernel_name for r in run.results]
    for result in run.results:
        assert [s.kernel_id for s in result.source] == [row.id for row in result.rows]
        assert all(s.kernel_name == row.demangled_name for s, row in zip(result.source, result.rows, strict=True))


def test_line_text_comes_from_the_file_when_the_report_embeds_none(where_reports, tmp_path):
    run = imported(where_reports["plain"])
    naive = run.results[0].source[0]
    file = tmp_path / "matmul_lineinfo.cu"
    file.write_text((REPO / "tests" / "programs" / "matmul_lineinfo.cu").read_text())
    bare = replace(naive, files={str(file): str(file)},
                   lines=tuple(replace(line, file=str(file), text=None) for line in naive.lines))
    named = ncu_source.user_named(bare, tmp_path)
    assert next(line for line in named.lines if line.line == 18).text == "acc += A[row * n + k] * B[k * n + col];"
    assert {line.file for line in named.lines} == {"matmul_lineinfo.cu"}


def test_without_ncu_report_source_says_how_to_get_it(where_reports, monkeypatch):
    run = core.NcuRun(None, "as recorded", [core.NcuResult("k", where_reports["plain"],
                                                           core.import_report(where_reports["plain"]).results[0].rows)],
                      "ncu_report module")
    monkeypatch.setattr(_proc, "run", lambda argv, **kw: _proc.Completed(argv, ncu_rep.CHILD_UNAVAILABLE, "", "x"))
    with pytest.raises(EnvironmentProblem, match="pip install ncu-report"):
        ncu_source.with_sources(run)


def test_results_without_a_report_or_rows_are_left_alone():
    run = core.NcuRun("matmul", "none", [core.NcuResult("naive", None, error="ncu wrote no report")], "")
    assert ncu_source.with_sources(run) == run


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """A wheel's layout: kernels/ at <site-packages>/gpuprof/_kernels, no source checkout to fall back on."""
    root = tmp_path / "site-packages" / "gpuprof" / "_kernels"
    (root / "matmul").mkdir(parents=True)
    (root / "matmul" / "warptile.cu").write_text(WARPTILE.read_text())
    monkeypatch.setattr(ncu_source, "kernels_root", lambda: root)
    work = tmp_path / "work"
    work.mkdir()
    return root, work


@pytest.mark.parametrize("recorded", [
    "/checkout1/kernels/matmul/warptile.cu",  # NVRTC's #line name, joined to the folder ncu ran in
    "kernels/matmul/warptile.cu",
    "/usr/lib/python3/site-packages/gpuprof/_kernels/matmul/warptile.cu",  # nvcc's path on another install
])
def test_an_installed_package_names_its_kernels_where_it_has_them(installed, recorded):
    root, work = installed
    assert ncu_source.shown_file(recorded, work) == str(root / "matmul" / "warptile.cu")
    assert ncu_source.local_file(recorded, work) == root / "matmul" / "warptile.cu"
    assert ncu_source.shown_file("/elsewhere/kernels/matmul/mine.cu", work) == "/elsewhere/kernels/matmul/mine.cu"


def test_an_installed_package_under_the_working_folder_is_shown_relative_to_it(installed, monkeypatch):
    root, _ = installed
    assert ncu_source.shown_file("kernels/matmul/warptile.cu", root.parents[1]) == "gpuprof/_kernels/matmul/warptile.cu"


def test_hot_lines_of_a_builtin_kernel_get_their_text_from_the_installed_package(where_reports, installed):
    """The issue-38 case: a report whose source text is not embedded, read where gpuprof is a wheel."""
    root, work = installed
    run = imported(where_reports["warptile"])
    ((source,),) = [r.source for r in run.results]
    recorded = next(iter(source.files))
    bare = replace(source, files={recorded: recorded},
                   lines=tuple(replace(line, file=recorded, text=None) for line in source.lines))
    named = ncu_source.user_named(bare, work)
    text = WARPTILE.read_text().splitlines()
    assert {line.file for line in named.lines} == {str(root / "matmul" / "warptile.cu")}
    assert all(line.text == text[line.line - 1].strip() for line in named.lines)
    assert named.files == {recorded: str(root / "matmul" / "warptile.cu")}
