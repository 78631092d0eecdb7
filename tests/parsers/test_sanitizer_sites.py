"""Both sides of a race, counted as the tool counts them (issue 24 item 7): racecheck findings keep
every site they name (the write and the read, or both writes), each with file:line and, through
`sanitize --import`, its source line; single-line messages of the tool are not records; API errors
show their host stack instead of advice about -lineinfo."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from rich.console import Console
from typer.testing import CliRunner

from gpuprof.cli import app
from gpuprof.commands.sanitize import import_log
from gpuprof.parsers.sanitizer_log import SanitizerSite, parse_log
from gpuprof.render.sanitize_view import findings_view

from .conftest import load

ANALYSIS = "sanitizer_2025.3.1_racecheck_default_analysis.txt"  # recorded: a write races with a write and a read
HAZARDS = "sanitizer_2025.3.1_racecheck_hazard_report.txt"  # recorded: per-hazard records, two threads each
TRITON = "sanitizer_handmade_memcheck_triton_api_errors.txt"  # hand-made from recorded formats (its sidecar)
API = "sanitizer_2025.3.1_memcheck_api_errors.txt"


def text_of(renderable) -> str:
    console = Console(width=100, record=True)
    console.print(renderable)
    return console.export_text()


def test_an_analysis_record_keeps_every_site_with_its_hazards():
    (race,) = parse_log(load(ANALYSIS).text).findings
    assert race.sites == (
        SanitizerSite("Write", "shared_race(int *)", "app.cu", 64),
        SanitizerSite("Write", "shared_race(int *)", "app.cu", 64, hazards=63),
        SanitizerSite("Read", "shared_race(int *)", "app.cu", 65, hazards=264),
    )
    assert (race.file, race.line, race.count, race.detail) == ("app.cu", 64, 327, "WAW,RAW|WAR")


def test_a_hazard_record_keeps_both_threads():
    first = parse_log(load(HAZARDS).text).findings[0]
    assert first.sites == (SanitizerSite("Write", "shared_race(int *)", "app.cu", 64, thread=(32, 0, 0)),
                           SanitizerSite("Write", "shared_race(int *)", "app.cu", 64, thread=(96, 0, 0)))


def test_import_shows_the_write_and_the_read_with_their_source_lines(tmp_path, monkeypatch):
    """The recorded log beside a source whose lines 64 and 65 are the racing write and read."""
    monkeypatch.chdir(tmp_path)  # places are shown relative to the working folder
    log = tmp_path / ANALYSIS
    shutil.copyfile(load(ANALYSIS).path, log)
    lines = [f"// line {n}" for n in range(1, 64)] + ["    s[threadIdx.x] = threadIdx.x;  // the write",
                                                       "    int v = s[(threadIdx.x + 1) % 128];  // the read"]
    (tmp_path / "app.cu").write_text("\n".join(lines) + "\n")
    result = import_log(log)
    shown = text_of(findings_view([result]))
    assert "write app.cu:64" in shown and "and read  app.cu:65 (264 hazards)" in shown
    assert "and write app.cu:64 (63 hazards)" in shown
    assert shown.count("s[threadIdx.x] = threadIdx.x;") == 1  # a place's line once, under its first mention
    assert "int v = s[(threadIdx.x + 1) % 128];" in shown


def test_import_json_has_every_site(tmp_path):
    result = CliRunner().invoke(app, ["sanitize", "--import", str(load(ANALYSIS).path), "--json", "-"])
    assert result.exit_code == 1, result.output
    (run,) = json.loads(result.stdout)["runs"]
    (finding,) = run["findings"]
    assert [(s["access"], s["line"], s["hazards"]) for s in finding["sites"]] == [
        ("Write", 64, None), ("Write", 64, 63), ("Read", 65, 264)]


def test_records_are_counted_as_the_tool_counts_them():
    """A Triton program's memcheck log: 12 invalid writes and 4 API errors are the 16 the tool
    counts; its "Target application returned an error" line is a message, not a 17th record."""
    s = parse_log(load(TRITON).text)
    assert s.error_count == s.printed_count == len(s.findings) == 16 and s.mismatch is None
    assert sorted({f.kind for f in s.findings}) == ["api_error", "invalid_write"]
    assert "Target application returned an error" in s.notes and not s.truncated
    writes = [f for f in s.findings if f.kind == "invalid_write"]
    assert {(f.file, f.line) for f in writes} == {("/work/app.py", 15)}


def test_an_unknown_headline_with_detail_under_it_is_still_a_record():
    text = ("========= COMPUTE-SANITIZER\n========= Some new kind of error\n=========     at k()+0x10 in a.cu:3\n"
            "========= \n========= A message about the run\n========= ERROR SUMMARY: 1 error\n")
    s = parse_log(text)
    assert [(f.kind, f.file, f.line) for f in s.findings] == [("other", "a.cu", 3)]
    assert s.notes == ("A message about the run",) and s.mismatch is None


def test_api_errors_show_their_host_stack_not_lineinfo_advice():
    triton = text_of(findings_view([import_log(load(TRITON).path)]))
    assert "api error CUDA_ERROR_ILLEGAL_ADDRESS from cuStreamSynchronize" in triton
    assert "host stack: c10::cuda::synchronize (libc10_cuda.so) ← _PyEval_EvalFrameDefault (python3)" in triton
    assert "lineinfo" not in triton.split("api error", 1)[1]
    recorded = text_of(findings_view([import_log(load(API).path)]))
    assert "api error cudaErrorInvalidValue from cudaMemcpy" in recorded and "host stack: main (app)" in recorded
    assert "lineinfo" not in recorded


def test_a_finding_without_line_info_still_gets_the_lineinfo_advice(tmp_path):
    fx = load("sanitizer_2025.3.1_memcheck_oob_write_no_lineinfo.txt")
    assert "compile with -lineinfo" in text_of(findings_view([import_log(Path(fx.path))]))
