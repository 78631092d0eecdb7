"""`gpuprof ncu --set basic|why|full`: what each preset asks ncu for, the pass count it announces
(checked against the reports recorded with those sections), and every collected section and metric
kept in the rows and in --json."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from gpuprof.cli import app
from gpuprof.commands import ncu as core
from gpuprof.commands.ncu_source import collection_note
from gpuprof.commands.target import Target
from gpuprof.parsers import ncu_rep
from gpuprof.tools import ncu as ncu_tool
from tests.ncu_full_reports import DEFAULT, FULL, SECTIONS, report_path, requires_ncu_report


def options(set_name: str | None, **kw) -> ncu_tool.NcuOptions:
    return core.NcuRequest(Target(), set_name=set_name, **kw).ncu_options()


def test_basic_is_the_default_collection():
    assert options("basic") == options(None)
    assert not core.NcuRequest(Target(), set_name="basic").shows_source


def test_why_adds_the_stall_sections_and_the_source():
    why = options("why")
    assert why == options(None, source=True)
    assert why.set_name is None and why.import_source
    assert core.NcuRequest(Target(), set_name="why").shows_source


def test_full_is_ncus_full_set_with_the_source():
    full = options("full")
    argv = ncu_tool.profile_argv("ncu", full, core.DEFAULT_OUT / "x", ["./prog"])
    assert argv[argv.index("--set") + 1] == "full" and argv[argv.index("--import-source") + 1] == "yes"
    assert all(m in full.metrics for m in ncu_tool.METRICS)  # gpuprof's own metrics stay


def test_another_set_name_goes_to_ncu_as_its_own():
    detailed = options("detailed")
    assert detailed.set_name == "detailed" and detailed.sections == () and not detailed.import_source
    assert collection_note(core.NcuRequest(Target(), set_name="detailed")) is None


def test_sections_given_replace_a_presets_sections():
    assert options("why", sections=("MemoryWorkloadAnalysis",)).sections == (
        "MemoryWorkloadAnalysis", *ncu_tool.SOURCE_SECTIONS)


@pytest.mark.parametrize("name", sorted(ncu_tool.PRESETS))
def test_the_note_before_profiling_names_what_is_collected_and_the_passes(name):
    preset = ncu_tool.PRESETS[name]
    note = collection_note(core.NcuRequest(Target(), set_name=name))
    assert note is not None and f"--set {name}" in note and f"{preset.h100_passes} replay passes" in note
    assert ("--import-source yes" in note) == preset.source
    assert collection_note(core.NcuRequest(Target(import_path=core.DEFAULT_OUT / "r.ncu-rep"), set_name=name)) is None


@requires_ncu_report
@pytest.mark.parametrize("name, prefix", [("basic", DEFAULT), ("why", SECTIONS), ("full", FULL)])
def test_the_announced_passes_are_what_ncu_used_for_those_sections(name, prefix):
    # Each recording was made with that collection (the .source.txt sidecars in tests/fixtures/tools/).
    rows = ncu_rep.load_report(report_path("plain_matmul_lineinfo", prefix))
    assert {r.replay_passes for r in rows} == {ncu_tool.PRESETS[name].h100_passes}


@requires_ncu_report
def test_every_section_collected_is_kept_with_its_metrics():
    row = ncu_rep.load_report(report_path("plain_matmul_lineinfo", FULL))[0]
    by_id = {s.identifier: s for s in row.sections}
    assert {"SourceCounters", "WarpStateStats", "MemoryWorkloadAnalysis", "SchedulerStats"} <= set(by_id)
    shown = by_id["SpeedOfLight"].metrics
    assert "gpu__time_duration.sum" in shown and all(m in row.metrics for m in shown if m in row.units)
    again = ncu_rep.rows_from_json(ncu_rep.rows_to_json([row]))
    assert again[0].sections == row.sections and again[0].replay_passes == row.replay_passes


@requires_ncu_report
def test_json_carries_sections_metrics_and_passes_and_the_table_says_the_passes():
    report = report_path("plain_matmul_lineinfo", FULL)
    result = CliRunner().invoke(app, ["ncu", "--import", str(report), "--json", "-"], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["schema"] == "gpuprof.ncu" and document["schema_version"] == core.JSON_VERSION
    row = document["run"]["results"][0]["rows"][0]
    assert row["replay_passes"] == 38 and len(row["metrics"]) > 2000
    assert "WarpStateStats" in {s["identifier"] for s in row["sections"]}
    assert "replayed each profiled launch 38 times" in result.stderr
