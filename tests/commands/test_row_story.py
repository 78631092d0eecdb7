"""`run --with ncu,sanitize`: the row's `ncu` summary from recorded H100 reports, the sanitizer
verdict from each tool's result, which rows get which field, and `show` printing them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuprof import results, row_parts
from gpuprof.cli import app
from gpuprof.commands import row_story
from gpuprof.commands.sanitize import SanitizeResult, SanitizeRun, Skipped
from gpuprof.errors import UsageError
from gpuprof.parsers.sanitizer_log import SanitizerFinding
from gpuprof.variants import catalog
from gpuprof.variants.selection import VariantOptions
from tests.ncu_full_reports import kernel_rows, requires_ncu_report

RESULTS = Path(__file__).resolve().parents[1] / "fixtures" / "results" / "h100_matmul_all.json"


def test_with_takes_ncu_and_sanitize_in_any_order_once_each():
    assert row_story.parse_with("ncu") == ("ncu",)
    assert row_story.parse_with("sanitize, ncu,ncu") == ("sanitize", "ncu")
    assert row_story.parse_with(None) == ()
    assert row_story.parse_with("ncu,") == ("ncu",)
    for bad in ("nsys", ",", "ncu,memcheck"):
        with pytest.raises(UsageError, match="choose from ncu, sanitize"):
            row_story.parse_with(bad)


@requires_ncu_report
def test_the_ncu_summary_of_recorded_kernels_names_what_holds_each_back():
    rows = kernel_rows()
    naive = row_story.ncu_summary([rows["matmul_naive"]])
    assert naive.top_stall == "lg_throttle" and naive.top_stall_pct > 90  # uncoalesced: the LSU queue
    assert naive.registers == 32 and naive.kernels == 1
    assert naive.duration_ns == rows["matmul_naive"].duration_ns
    assert naive.instructions == rows["matmul_naive"].metrics["smsp__inst_executed.sum"]
    warptile = row_story.ncu_summary([rows["matmul_warptile"]])
    assert warptile.top_stall == "dispatch_stall" and warptile.occupancy_limiter == "registers+shared_mem"
    assert warptile.flop == pytest.approx(2 * 4096**3, rel=1e-3)


@requires_ncu_report
def test_several_kernels_of_one_variant_are_summed_and_weighted_by_their_time():
    rows = kernel_rows()
    both = [rows["matmul_naive"], rows["matmul_tiled"]]
    summary = row_story.ncu_summary(both)
    assert summary.kernels == 2
    assert summary.duration_ns == pytest.approx(sum(r.duration_ns for r in both))
    weights = [r.duration_ns for r in both]
    expected = sum(r.sm_throughput_pct * w for r, w in zip(both, weights)) / sum(weights)
    assert summary.sm_pct == pytest.approx(expected)
    assert summary.registers == rows["matmul_naive"].registers_per_thread  # the longest launch's


def finding(tool: str, kind: str, file: str | None = None, line: int | None = None) -> SanitizerFinding:
    return SanitizerFinding(tool=tool, kind=kind, message=kind, kernel="k(int*)", file=file, line=line)


def test_the_sanitizer_verdict_is_clean_only_when_every_tool_that_ran_was():
    clean = [SanitizeResult("matmul/a", tool, error_count=0) for tool in ("memcheck", "initcheck")]
    summary = row_story.sanitizer_summary(clean, {"racecheck": "no shared memory"})
    assert summary.verdict == "clean" and summary.findings == 0
    assert summary.tools == {"memcheck": "clean", "initcheck": "clean", "racecheck": "skipped: no shared memory"}
    found = clean + [SanitizeResult("matmul/a", "racecheck", findings=[finding("racecheck", "race", "a.cu", 12)],
                                    error_count=1, warning_count=0)]
    summary = row_story.sanitizer_summary(found, {})
    assert summary.verdict == "findings" and summary.findings == 1
    assert summary.first == "racecheck: race a.cu:12" and summary.tools["racecheck"] == "1 finding"
    broken = [SanitizeResult("matmul/a", "memcheck", error="the tool timed out")]
    assert row_story.sanitizer_summary(broken, {}).verdict == "not judged"
    assert row_story.sanitizer_summary([], {"memcheck": "vendor"}).verdict == "not judged"


@requires_ncu_report
def test_attach_profiles_ok_rows_and_sanitizes_every_row_that_ran(monkeypatch, tmp_path):
    from gpuprof.commands import ncu as ncu_core
    from gpuprof.commands import sanitize as sanitize_core

    loaded = results.load(RESULTS)
    rows = loaded.rows[:3]
    rows[1].check.status = results.WRONG
    rows[2].check.status = results.SKIPPED
    asked: dict[str, object] = {}

    def fake_ncu(request, progress=None):
        asked["ncu"] = request
        names = request.target.variants.split(",")
        tiled = [kernel_rows()["matmul_tiled"]]
        return ncu_core.NcuRun("matmul", "none", [ncu_core.NcuResult(n, tmp_path / "r.ncu-rep", tiled) for n in names],
                               "")

    def fake_sanitize(request, progress=None):
        asked["sanitize"] = request
        names = request.target.variants.split(",")
        return SanitizeRun([SanitizeResult(f"matmul/{n}", "memcheck", error_count=0) for n in names],
                           [Skipped(f"matmul/{n}", "racecheck", "vendor") for n in names])

    monkeypatch.setattr(ncu_core, "execute", fake_ncu)
    monkeypatch.setattr(sanitize_core, "execute", fake_sanitize)
    family = catalog.load_family("matmul")
    row_story.attach(rows, family, dict(rows[0].size), VariantOptions(), ("ncu", "sanitize"), tmp_path)
    assert asked["ncu"].target.variants == rows[0].variant  # OK rows only, at the row's size
    assert asked["ncu"].target.size == ",".join(f"{d}={rows[0].size[d]}" for d in family.dims)
    assert "WarpStateStats" in asked["ncu"].sections
    assert asked["sanitize"].target.variants == f"{rows[0].variant},{rows[1].variant}"  # WRONG too: it ran
    assert asked["sanitize"].target.size is None  # the family's middle check size, as `gpuprof sanitize`
    assert rows[0].ncu is not None and rows[0].ncu.top_stall == "mio_throttle"
    assert rows[0].ncu.schema == row_parts.NCU_SCHEMA and rows[0].ncu.report == str(tmp_path / "r.ncu-rep")
    assert rows[1].ncu is None and rows[2].ncu is None and rows[2].sanitizer is None
    assert rows[1].sanitizer is not None and rows[1].sanitizer.verdict == "clean"
    assert rows[1].sanitizer.tools["racecheck"] == "skipped: vendor" and rows[1].sanitizer.size


def test_show_prints_the_ncu_and_sanitizer_fields_and_they_survive_a_save(tmp_path):
    document = json.loads(RESULTS.read_text())
    row = document["rows"][0]
    row["ncu"] = {"schema": row_parts.NCU_SCHEMA, "kernels": 1, "duration_ns": 2.5e6, "sm_pct": 75.5,
                  "memory_pct": 90.0, "achieved_occupancy_pct": 98.4, "occupancy_limiter": "registers",
                  "registers": 32, "dram_bytes": 4.8e7, "top_stall": "mio_throttle", "top_stall_pct": 62.6}
    row["sanitizer"] = {"schema": row_parts.SANITIZER_SCHEMA, "verdict": "findings", "findings": 2,
                        "first": "racecheck: race smem.cu:40", "tools": {"racecheck": "2 findings"}}
    path = tmp_path / "with.json"
    path.write_text(json.dumps(document))
    results.save(results.load(path), tmp_path / "again.json")
    shutil.move(tmp_path / "again.json", path)
    shown = CliRunner().invoke(app, ["show", str(path)], env={"COLUMNS": "100"})
    text = " ".join(shown.output.split())
    assert "why and how safe (--with)" in text and "2 finding(s)" in text
    assert "first finding: racecheck: race smem.cu:40" in text and "smem queue 63 %" in text
    assert all(len(line) <= 100 for line in shown.output.splitlines())


def test_with_and_check_only_do_not_go_together():
    result = CliRunner().invoke(app, ["run", "vecadd", "--with", "ncu", "--check-only"], env={"COLUMNS": "100"})
    assert result.exit_code == 2 and "--with profiles timed variants" in result.output
    result = CliRunner().invoke(app, ["run", "vecadd", "--with", "nsys"], env={"COLUMNS": "100"})
    assert result.exit_code == 2 and "choose from ncu, sanitize" in result.output


def test_a_suite_passes_with_to_every_case_and_its_kernels_dir(monkeypatch, tmp_path):
    from gpuprof.commands import suite as suite_core

    asked = []

    def fake_run_family(request, progress=None, checkpoint=None, worker=None):
        asked.append(request)
        done = results.Results(environment={}, rows=[])
        checkpoint(done)
        return done

    monkeypatch.setattr(suite_core, "run_family", fake_run_family)
    monkeypatch.setattr(suite_core.isolation, "Worker", lambda timeout_s: _NullWorker(timeout_s))
    adversarial = Path(__file__).resolve().parents[1] / "suites" / "adversarial.toml"
    suite_core.run_suite(suite_core.load(adversarial), with_tools=("sanitize",), with_out=tmp_path)
    assert asked and all(r.with_tools == ("sanitize",) for r in asked)
    assert {r.with_out for r in asked} == {tmp_path / f"case{n}" for n in range(1, len(asked) + 1)}
    assert all(r.variant_options.kernels_dir is not None and r.variant_options.kernels_dir.name == "adversarial"
               for r in asked)


class _NullWorker:
    def __init__(self, timeout_s):
        self.timeout_s = timeout_s

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_a_suite_with_with_on_several_gpus_is_refused(tmp_path):
    smoke = Path(__file__).resolve().parents[2] / "suites" / "smoke.toml"
    result = CliRunner().invoke(app, ["suite", str(smoke), "--with", "ncu", "--gpus", "all", "--json",
                                      str(tmp_path / "x.json")], env={"COLUMNS": "100"})
    assert result.exit_code == 2 and "--with profiles on one GPU" in result.output


def test_a_row_that_read_less_than_its_inputs_is_impossible_and_an_honest_one_is_not(monkeypatch):
    from types import SimpleNamespace

    from gpuprof import gpu

    monkeypatch.setattr(gpu, "device_info", lambda: SimpleNamespace(l2_bytes=50 * 2**20))
    reduce = catalog.load_family("reduce")
    size = {"n": 2**28}
    rows = []
    for name, read in (("vectorized_atomic", 1.074e9), ("estimate", 1.01e9)):  # the 94 % estimator
        row = results.Row(family="reduce", variant=name, size=size, vendor=False,
                          check=results.CheckResult(status=results.OK))
        row.ncu = row_parts.NcuPart(dram_read_bytes=read, dram_write_bytes=0.0)
        rows.append(row)
    row_story.witness_bytes(rows, reduce)
    assert rows[0].check.status == results.OK
    assert rows[1].check.status == results.IMPOSSIBLE
    assert "94 % of the 1.07 GB its inputs hold" in rows[1].check.reasons[-1]
