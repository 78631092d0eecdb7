"""`gpuprof compare`'s core (commands/compare.py): it loads, judges and writes what it is asked, without the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuprof.analysis.compare import Status
from gpuprof.analysis.compare_presets import PRESETS
from gpuprof.commands.compare import CompareRequest, execute
from gpuprof.errors import InputError, UsageError
from gpuprof.results import load, save

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "results"


def test_execute_judges_labels_by_path_and_reports_each_step():
    base, new = RECORDED / "smoke_a.json", RECORDED / "smoke_slow.json"
    steps = []
    report = execute(CompareRequest((base,), new, PRESETS["default"]), steps.append)
    assert (report.base_label, report.new_label) == (str(base), str(new))
    assert [v.row_id for v in report.verdicts if v.status is Status.SLOWER] == ["matmul/warptile/2048x2048x2048"]
    assert [(s.variant, s.step, s.index, s.total) for s in steps] == [
        (str(base), "load", 0, 2), (str(new), "load", 1, 2), (str(new), "compare", 0, 1)]


def test_outputs_are_written_in_order_from_the_report(tmp_path):
    first, second = tmp_path / "summary.md", tmp_path / "report.json"
    steps = []
    request = CompareRequest((RECORDED / "smoke_a.json",), RECORDED / "smoke_b.json", PRESETS["default"],
                             outputs=((first, lambda r: f"{len(r.verdicts)} rows\n"),
                                      (second, lambda r: iter(["{", "}\n"]))))  # text in pieces, too
    execute(request, steps.append)
    assert first.read_text() == "6 rows\n" and second.read_text() == "{}\n"
    assert [(s.variant, s.step) for s in steps if s.step == "write"] == [(str(first), "write"), (str(second), "write")]


def test_without_a_policy_news_suite_preset_is_used(tmp_path):
    new = load(RECORDED / "smoke_b.json")
    new.compare = {"preset": "strict"}
    report = execute(CompareRequest((RECORDED / "smoke_a.json",), save(new, tmp_path / "new.json")))
    assert report.policy is PRESETS["strict"]
    assert execute(CompareRequest((RECORDED / "smoke_a.json",), RECORDED / "smoke_b.json")).policy is PRESETS["default"]


def test_several_bases_give_history(tmp_path):
    bases = (RECORDED / "smoke_a.json", RECORDED / "smoke_b.json")
    report = execute(CompareRequest(bases, RECORDED / "smoke_b.json", PRESETS["default"]))
    assert report.history is not None and report.history.runs == 2
    assert report.base_label == str(bases[-1])


def test_no_base_is_a_usage_error_and_a_bad_file_an_input_error(tmp_path):
    with pytest.raises(UsageError, match="at least one BASE"):
        execute(CompareRequest((), RECORDED / "smoke_b.json"))
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    with pytest.raises(InputError, match="not valid JSON"):
        execute(CompareRequest((broken,), RECORDED / "smoke_b.json"))
