"""The gate on deterministic counters and sanitizer verdicts, on the CI suite recorded on the H100
with `--with ncu,sanitize`: two identical files pass; a planted register or DRAM-byte increase is
reported (and fails with --fail-on counters); a new sanitizer finding fails the gate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuprof import results
from gpuprof.analysis.compare import compare_results, gate
from gpuprof.analysis.compare_presets import DEFAULT_FAIL_ON, FailOn, policy_for
from gpuprof.analysis.counter_gate import counter_changes, new_findings
from gpuprof.cli import app

RESULTS = Path(__file__).resolve().parents[1] / "fixtures" / "results"
WITH, PLAIN = RESULTS / "h100_ci_with.json", RESULTS / "h100_ci_plain.json"


def planted(tmp_path: Path, change) -> Path:
    document = json.loads(WITH.read_text())
    change({row["variant"]: row for row in document["rows"]})
    path = tmp_path / "new.json"
    path.write_text(json.dumps(document))
    return path


def compare(base: Path, new: Path, fail_on=DEFAULT_FAIL_ON):
    return compare_results(results.load(base), results.load(new), policy_for("default"), fail_on=fail_on)


def test_the_recorded_file_has_both_fields_on_every_row():
    rows = results.load(WITH).rows
    assert rows and all(r.ncu and not r.ncu.error and r.sanitizer for r in rows)


def test_a_file_against_itself_has_no_counter_change_and_no_new_finding():
    report = compare(WITH, WITH)
    assert report.counters == [] and report.findings == [] and gate(report) == []


def test_a_planted_register_and_dram_increase_is_reported_and_fails_only_when_asked(tmp_path):
    def more(rows):
        rows["warptile"]["ncu"]["registers"] += 8
        rows["grid"]["ncu"]["dram_bytes"] *= 1.10  # past the 5 % DRAM allows
        rows["vectorized"]["ncu"]["dram_bytes"] *= 1.02  # within it

    report = compare(WITH, planted(tmp_path, more))
    changed = {(c.row_id.split("/")[1], c.counter) for c in report.counters}
    assert changed == {("warptile", "registers"), ("grid", "dram_bytes")}
    assert gate(report) == []  # reported, not failing, by default
    strict = compare(WITH, planted(tmp_path, more), fail_on=DEFAULT_FAIL_ON | {FailOn.COUNTERS})
    lines = gate(strict)
    assert any("warptile" in line and "registers per thread 240 -> 248" in line for line in lines), lines


def test_a_new_sanitizer_finding_fails_the_gate(tmp_path):
    def finding(rows):
        rows["smem_tiled"]["sanitizer"] = {"schema": "gpuprof.row.sanitizer/1", "verdict": "findings",
                                           "findings": 3, "first": "racecheck: race_hazard smem_tiled.cu:40",
                                           "tools": {"racecheck": "3 findings"}}

    report = compare(WITH, planted(tmp_path, finding))
    [new] = report.findings
    assert new.row_id.startswith("matmul/smem_tiled/") and new.base_verdict == "clean"
    assert any("the sanitizer finds something new (BASE: clean): racecheck: race_hazard smem_tiled.cu:40" in line
               for line in gate(report))


def test_rows_without_the_fields_are_not_judged():
    base, new = results.load(PLAIN), results.load(WITH)
    ids = {r.id: r for r in base.rows}
    pairs = [(r.id, ids[r.id], r) for r in new.rows if r.id in ids]
    assert pairs and counter_changes(pairs) == [] and new_findings([(i, n, b) for i, b, n in pairs]) == []


@pytest.mark.parametrize("fail_on, code", [([], 0), (["--fail-on", "counters"], 1)])
def test_the_cli_says_so_and_fails_with_fail_on_counters(tmp_path, fail_on, code):
    new = planted(tmp_path, lambda rows: rows["cublas"]["ncu"].__setitem__("instructions",
                                                                           rows["cublas"]["ncu"]["instructions"] * 2))
    done = CliRunner().invoke(app, ["compare", str(WITH), str(new), *fail_on, "--json", str(tmp_path / "c.json")],
                              env={"COLUMNS": "120"})
    assert done.exit_code == code, done.output
    assert "counters of `--with ncu` grew past their limit" in " ".join(done.output.split())
    document = json.loads((tmp_path / "c.json").read_text())
    assert [c["counter"] for c in document["counters"]] == ["instructions"]
