"""`gpuprof compare` through CliRunner: exit codes, one-line errors, table, JSON and Markdown."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import gpuprof.cli.compare  # noqa: F401  (registers the command on app)
from gpuprof.cli._app import app
from gpuprof.results import CheckResult, Results, Row, Timing, save

H100 = "NVIDIA H100 80GB HBM3"
runner = CliRunner()


def results(median=1e-3, noise=0.005, seed=0, status="ok", **environment) -> Results:
    """One vecadd/grid row whose samples are median * (1 + noise * N(0, 1)); WRONG rows carry none."""
    samples = (median * (1 + noise * np.random.default_rng(seed).standard_normal(40))).tolist()
    timing = Timing(mode="cold", samples_s=samples, stop_reason="target_spread", summary=None)
    row = Row(family="vecadd", variant="grid", size={"n": 1 << 26}, vendor=False,
              check=CheckResult(status=status), timing=timing if status == "ok" else None)
    env = {"gpu_name": H100, "gpu_uuid": "GPU-aaaa", "driver_version": "580.159.04",
           "toolkit_version": "13.0", "clock_policy": "default"}
    return Results(environment={**env, **environment}, rows=[row])


@pytest.fixture
def files(tmp_path):
    """Write (base, new) Results to base.json and new.json; return their paths as strings."""
    def write(base: Results, new: Results) -> tuple[str, str]:
        return str(save(base, tmp_path / "base.json")), str(save(new, tmp_path / "new.json"))
    return write


def invoke(*args: str):
    return runner.invoke(app, ["compare", *args], env={"COLUMNS": "200"})


def error_lines(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.strip()]


def test_identical_results_pass(files):
    result = invoke(*files(results(seed=1), results(seed=1)))
    assert result.exit_code == 0, result.output
    assert "vecadd/grid/67108864" in result.stdout and "SAME" in result.stdout
    assert "within_noise" in result.stdout


def test_five_percent_slower_fails_with_one_line(files):
    result = invoke(*files(results(seed=1), results(median=1.05e-3, seed=2)))
    assert result.exit_code == 1
    assert "SLOWER" in result.stdout and "clear_gap" in result.stdout
    (line,) = error_lines(result)
    assert line.startswith("error: the gate fails on 1 row(s): vecadd/grid/67108864 SLOWER (clear_gap): +")
    assert "Traceback" not in result.output


def test_five_percent_faster_passes(files):
    result = invoke(*files(results(seed=1), results(median=0.95e-3, seed=2)))
    assert result.exit_code == 0
    assert "FASTER" in result.stdout


def test_noisy_overlap_is_inconclusive_and_passes(files):
    result = invoke(*files(results(noise=0.10, seed=1), results(median=1.02e-3, noise=0.10, seed=2)))
    assert result.exit_code == 0
    assert "INCONCLUSIVE" in result.stdout and "overlapping" in result.stdout


def test_newly_wrong_row_fails(files):
    result = invoke(*files(results(seed=1), results(status="wrong")))
    assert result.exit_code == 1
    assert "WRONG" in result.stdout
    (line,) = error_lines(result)
    assert "vecadd/grid/67108864 WRONG (newly_wrong): check 'wrong' in NEW, was ok in BASE" in line


@pytest.mark.parametrize(("preset", "code"), [("strict", 1), ("default", 1), ("permissive", 0)])
def test_preset_sets_the_min_effect(files, preset, code):
    paths = files(results(noise=0.002, seed=1), results(median=1.03e-3, noise=0.002, seed=2))
    assert invoke(*paths, "--preset", preset).exit_code == code


def test_unknown_preset_is_a_usage_error(files):
    result = invoke(*files(results(), results()), "--preset", "loose")
    assert result.exit_code == 2
    assert "loose" in result.output and "Traceback" not in result.output


def test_json_format_is_a_verdict_list(files):
    result = invoke(*files(results(seed=1), results(median=1.05e-3, seed=2)), "--format", "json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["passed"] is False and data["policy"]["name"] == "default"
    (verdict,) = data["verdicts"]
    assert (verdict["row_id"], verdict["status"], verdict["reason"]) == ("vecadd/grid/67108864", "SLOWER", "clear_gap")
    assert verdict["ci_low"] > 1.02 and verdict["p_value"] < 0.01


def test_markdown_summary_is_written(files, tmp_path):
    summary = tmp_path / "summary.md"
    result = invoke(*files(results(seed=1), results(median=1.05e-3, seed=2)), "--markdown", str(summary))
    assert result.exit_code == 1
    text = summary.read_text()
    assert text.startswith("## gpuprof compare: ❌ regression")
    assert "| `vecadd/grid/67108864` | **SLOWER** |" in text
    assert "- **fails:** vecadd/grid/67108864 SLOWER (clear_gap): +" in text


def test_markdown_folds_same_rows_into_details(files, tmp_path):
    summary = tmp_path / "summary.md"
    assert invoke(*files(results(seed=1), results(seed=1)), "--markdown", str(summary)).exit_code == 0
    text = summary.read_text()
    assert text.startswith("## gpuprof compare: ✅ no regression")
    assert "<details><summary>1 rows SAME</summary>" in text


def test_markdown_into_missing_directory_is_exit_2(files, tmp_path):
    result = invoke(*files(results(), results()), "--markdown", str(tmp_path / "nope" / "summary.md"))
    assert result.exit_code == 2
    (line,) = error_lines(result)
    assert line.startswith("error: cannot write ") and line.endswith("does not exist")


def _future(path: Path) -> None:
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "schema_version": 99}))


@pytest.mark.parametrize(
    ("spoil", "message"),
    [
        (lambda p: p.unlink(), "cannot read"),
        (lambda p: p.write_text("hello, not json"), "not valid JSON (line 1, column 1"),
        (lambda p: p.write_text('{"benchmarks": []}'), 'not a gpuprof results file (no "schema": "gpuprof.results")'),
        (_future, "schema_version 99 is newer than this gpuprof reads (1); upgrade gpuprof"),
        (lambda p: p.write_text(p.read_text()[: len(p.read_text()) // 2]), "not valid JSON"),
    ],
    ids=["missing", "not-json", "foreign-schema", "future-schema", "truncated"],
)
def test_bad_file_is_exit_2_with_one_line(files, spoil, message):
    base, new = files(results(), results())
    spoil(Path(new))
    result = invoke(base, new)
    assert result.exit_code == 2
    (line,) = error_lines(result)
    assert line.startswith("error: ") and message in line and "new.json" in line
    assert "Traceback" not in result.output


def test_different_gpu_is_refused_unless_allowed(files):
    paths = files(results(seed=1), results(seed=1, gpu_name="NVIDIA A100-SXM4-80GB"))
    result = invoke(*paths)
    assert result.exit_code == 2
    (line,) = error_lines(result)
    assert "not comparable" in line and "--allow-different-gpu" in line
    allowed = invoke(*paths, "--allow-different-gpu")
    assert allowed.exit_code == 0
    assert "warning:" in allowed.stderr and "compared anyway" in allowed.stderr


def test_driver_change_is_a_warning_only(files):
    result = invoke(*files(results(seed=1), results(seed=1, driver_version="590.1")))
    assert result.exit_code == 0
    assert "warning: different driver: '580.159.04' in" in result.stderr


def test_compare_imports_nothing_gpu_related():
    code = ("import sys, gpuprof.cli.compare; "
            "print(sorted(m for m in ('torch', 'cupy', 'pynvml', 'nvtx', 'triton') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[2])
    assert out.stdout.strip() == "[]"


# --- issue 13: presets from the file, history, fail-on, exports ---

def test_the_suites_preset_in_new_is_used_unless_preset_is_given(files):
    """A 1.5 % change: SLOWER under strict (min effect 1 %), SAME under default (2 %)."""
    base, new = results(noise=0.001, seed=1), results(median=1.015e-3, noise=0.001, seed=2)
    new.compare = {"preset": "strict"}
    paths = files(base, new)
    from_file = invoke(*paths)
    assert from_file.exit_code == 1 and "preset strict" in from_file.stdout
    overridden = invoke(*paths, "--preset", "default")
    assert overridden.exit_code == 0 and "preset default" in overridden.stdout


def test_several_base_files_give_history_and_a_trend(tmp_path):
    paths = []
    for i, median in enumerate([1.0e-3, 1.001e-3, 0.999e-3]):
        paths.append(str(save(results(median=median, seed=i), tmp_path / f"base{i}.json")))
    new = str(save(results(median=1.0e-3, seed=9), tmp_path / "new.json"))
    summary = tmp_path / "summary.md"
    result = invoke(*paths, new, "--markdown", str(summary))
    assert result.exit_code == 0, result.output
    assert "history: 3 BASE runs" in result.stdout
    text = summary.read_text()
    assert "| trend |" in text and "history: 3 BASE runs" in text
    same = invoke("--base", paths[0], "--base", paths[1], "--base", paths[2], new)
    assert same.exit_code == 0 and "history: 3 BASE runs" in same.stdout


def test_one_file_is_a_usage_error(files):
    base, _ = files(results(), results())
    result = invoke(base)
    assert result.exit_code == 2 and "give BASE and NEW" in error_lines(result)[-1]


def test_export_for_github_action_benchmark(files, tmp_path):
    out = tmp_path / "gab.json"
    result = invoke(*files(results(seed=1), results(median=1.05e-3, seed=2)), "--export-gab", str(out))
    assert result.exit_code == 1
    (entry,) = json.loads(out.read_text())
    assert entry["name"] == "vecadd/grid/67108864" and entry["unit"] == "us"
    assert entry["value"] == pytest.approx(1050, rel=0.01)
    assert entry["range"].startswith("± ") and entry["extra"].startswith("SLOWER (clear_gap)")


def test_untimed_in_new_fails_and_fail_on_none_lets_it_pass(files):
    new = results(seed=2)
    new.rows[0].timing.samples_s = []
    paths = files(results(seed=1), new)
    result = invoke(*paths)
    assert result.exit_code == 1 and "untimed_in_new" in error_lines(result)[-1]
    assert "1 timed in BASE but no samples in NEW" in result.stdout
    assert invoke(*paths, "--fail-on", "none").exit_code == 0


def test_mode_mismatch_is_exit_2_unless_allowed(files):
    new = results(seed=1)
    new.rows[0].timing.mode = "graph"
    paths = files(results(seed=1), new)
    refused = invoke(*paths)
    assert refused.exit_code == 2 and "--allow-mismatch" in error_lines(refused)[-1]
    assert invoke(*paths, "--allow-mismatch").exit_code == 0


def test_json_reports_the_run_shift_and_the_summary(files):
    result = invoke(*files(results(seed=1), results(seed=1)), "--format", "json")
    data = json.loads(result.stdout)
    assert data["run_shift"]["ratio"] is None and "cannot tell" in data["run_shift"]["summary"]
    assert data["fail_on"] == ["too-few-samples", "untimed"] and data["summary"][0].startswith("1 rows compared")


@pytest.mark.parametrize(("new_rows", "words"), [
    ("none", "new.json has no rows: nothing was compared"),
    ("other", "no row in common: none of"),
    ("untimed", "no row of"),
])
def test_a_broken_new_file_fails_the_gate_with_one_line(files, new_rows, words):
    new = results(seed=2)
    if new_rows == "none":
        new.rows.clear()
    elif new_rows == "other":
        new.rows[0].variant = "vectorized"
    else:
        new.rows[0].timing.samples_s = []
    result = invoke(*files(results(seed=1), new))
    assert result.exit_code == 1, result.output
    (line,) = error_lines(result)
    assert line.startswith("error: the gate fails: ") and words in line, line
    assert "the gate fails: " in result.stdout and "no regression" not in result.output


def test_a_different_power_limit_is_a_warning_and_an_unrecorded_one_is_not():
    """The H200's tensor-core rows ran under its software power cap in the course run; two boards at
    different limits cap at different points. Files from before the limit was recorded say nothing."""
    from gpuprof.analysis.comparability import environment_warnings

    capped, full = results(seed=1, power_limit_w=500.0), results(seed=1, power_limit_w=700.0)
    (warning,) = [w for w in environment_warnings(capped, full, False) if "power limit" in w]
    assert warning.startswith("different power limit: 500 W in BASE, 700 W in NEW")
    assert not [w for w in environment_warnings(results(seed=1), full, False) if "power limit" in w]
    assert not [w for w in environment_warnings(full, results(seed=1, power_limit_w=700.0), False)
                if "power limit" in w]
