"""`gpuprof ncu FAMILY` profiles the family's variants in one child under one ncu and splits the
report per variant by NVTX range; a failed batch falls back to one child per variant. CPU only:
a fake ncu answers with reports recorded on the H100, read by the real reader."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from gpuprof.cli import app
from gpuprof.commands import ncu as ncu_core
from gpuprof.commands.ncu import rows_by_variant
from gpuprof.parsers.ncu_metrics import NcuKernelRow
from gpuprof.tools import _proc
from gpuprof.tools import ncu as ncu_tool
from tests.cli.test_ncu_success import RecordedNcu, recorded
from tests.ncu_full_reports import requires_ncu_report

SINGLE_READER = ncu_tool.read_report_isolated


def _includes(argv: list[str]) -> list[str]:
    return [argv[i + 1] for i, a in enumerate(argv) if a == "--nvtx-include"]


class BatchNcu(RecordedNcu):
    """One ncu run of several variants leaves one report holding all their launches. Recorded
    reports hold one variant each, so the batch report's rows are the union of the recorded
    reports of the variants it was asked for (each read by the real ncu_report reader)."""

    def __init__(self, fail_batch: bool = False) -> None:
        super().__init__()
        self.fail_batch = fail_batch
        self.batches: dict[str, list[str]] = {}  # report path -> variants it holds

    def __call__(self, argv, *, timeout_s, cwd=None, env=None):
        argv = list(argv)
        includes = _includes(argv)
        if "--export" not in argv or len(includes) < 2:
            return super().__call__(argv, timeout_s=timeout_s, cwd=cwd, env=env)
        self.calls.append(argv)
        if self.fail_batch:
            return _proc.Completed(argv, 1, "", "==ERROR== The application returned an error code (1).")
        base = Path(argv[argv.index("--export") + 1])
        variants = [inc.split("/")[1] for inc in includes]
        shutil.copyfile(recorded(variants[0])[0], base.with_suffix(".ncu-rep"))
        self.batches[str(base.with_suffix(".ncu-rep"))] = variants
        return _proc.Completed(argv, 0, "", recorded(variants[0])[1])

    def read(self, report: Path, timeout_s: float = 0) -> list[NcuKernelRow]:
        variants = self.batches.get(str(report))
        if variants is None:
            return SINGLE_READER(report)
        return [row for v in variants for row in SINGLE_READER(recorded(v)[0])]


def _install(monkeypatch, fake: BatchNcu) -> BatchNcu:
    monkeypatch.setattr(_proc, "find_tool", lambda name, explicit=None, extra_dirs=(), hint="": f"/opt/fake/{name}")
    monkeypatch.setattr(_proc, "run", fake)
    monkeypatch.setattr(ncu_tool, "read_report_isolated", fake.read)
    return fake


@requires_ncu_report
def test_family_runs_in_one_child_and_rows_split_per_variant(monkeypatch, tmp_path):
    fake = _install(monkeypatch, BatchNcu())
    result = CliRunner().invoke(app, ["ncu", "vecadd", "-v", "grid,torch", "--out", str(tmp_path / "out"),
                                      "--json", str(tmp_path / "ncu.json")])
    assert result.exit_code == 0, result.output
    (argv,) = fake.calls  # one ncu, one launch child for both variants
    assert _includes(argv) == ["vecadd/grid/", "vecadd/torch/"]
    launch = argv[argv.index("launch"):]
    assert launch[1:3] == ["vecadd", "grid,torch"]
    data = json.loads((tmp_path / "ncu.json").read_text())["run"]
    kernels = {r["label"]: [row["kernel_name"] for row in r["rows"]] for r in data["results"]}
    assert kernels["grid"] == ["vecadd_grid"]
    assert len(kernels["torch"]) == 1 and "vectorized_elementwise_kernel" in kernels["torch"][0]
    assert {r["report"] for r in data["results"]} == {str(tmp_path / "out" / "vecadd_2_variants.ncu-rep")}
    assert "vecadd_grid" in result.output and "vectorized_elementwise_kernel" in result.output


@requires_ncu_report
def test_failed_batch_falls_back_to_one_child_per_variant(monkeypatch, tmp_path):
    fake = _install(monkeypatch, BatchNcu(fail_batch=True))
    result = CliRunner().invoke(app, ["ncu", "vecadd", "-v", "grid,torch", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert [_includes(a) for a in fake.calls] == [["vecadd/grid/", "vecadd/torch/"], ["vecadd/grid/"],
                                                  ["vecadd/torch/"]]
    assert "vecadd_grid" in result.output and "vectorized_elementwise_kernel" in result.output


@requires_ncu_report
def test_variant_missing_from_the_batch_report_is_profiled_alone_and_its_error_kept(monkeypatch, tmp_path):
    """The batch report lacks torch's launches (as if its kernel never ran inside its range): torch
    runs again alone, and when that run profiles nothing its error is reported against torch only."""
    fake = BatchNcu()
    real_read = fake.read
    fake.read = lambda report, timeout_s=0: [r for r in real_read(report) if r.nvtx_ranges[-1] != "torch"]
    _install(monkeypatch, fake)
    original = fake.__class__.__call__

    def no_torch_alone(self, argv, *, timeout_s, cwd=None, env=None):
        if _includes(list(argv)) == ["vecadd/torch/"]:
            self.calls.append(list(argv))
            return _proc.Completed(argv, 0, "", "==PROF== Disconnected\n==WARNING== No kernels were profiled.\n")
        return original(self, argv, timeout_s=timeout_s, cwd=cwd, env=env)

    monkeypatch.setattr(BatchNcu, "__call__", no_torch_alone)
    result = CliRunner().invoke(app, ["ncu", "vecadd", "-v", "grid,torch", "--out", str(tmp_path)])
    assert result.exit_code == 1, result.output  # a variant could not be profiled: a finding
    assert len(fake.calls) == 2
    assert "vecadd_grid" in result.output
    assert "torch:" in result.output and "grid:" not in result.output


def test_rows_go_to_the_range_inside_the_family_range(monkeypatch):
    def row(*ranges: str) -> NcuKernelRow:
        return NcuKernelRow(id=0, kernel_name="k", demangled_name="k", nvtx_ranges=ranges)

    rows = [row("conv2d", "direct"), row("conv2d", "cudnn", "cudnn_inner"), row("other", "direct"), row()]
    grouped = rows_by_variant(rows, "conv2d", ["direct", "cudnn"])
    assert grouped["direct"] == [rows[0]] and grouped["cudnn"] == [rows[1]]


def test_user_variant_runs_alone_outside_the_batch(monkeypatch, tmp_path):
    calls: list[tuple[str, tuple[str, ...]]] = []

    def one(tool, options, out_dir, target):
        calls.append((target.variant, target.add))
        return ncu_core.NcuResult(target.variant, None, error="x"), ""

    def batch(tool, options, out_dir, family, targets):
        calls.append((",".join(t.variant for t in targets), ()))
        return {t.variant: ncu_core.NcuResult(t.variant, None) for t in targets}, "r"

    monkeypatch.setattr(ncu_tool, "find_ncu", lambda explicit=None: "/opt/fake/ncu")
    monkeypatch.setattr(ncu_core, "_profile_one", one)
    monkeypatch.setattr(ncu_core, "_profile_batch", batch)
    run = ncu_core.profile_family("vecadd", ["grid", "mine", "torch"], {"n": 1}, tmp_path, ncu_tool.NcuOptions(),
                                  added={"mine": ("--add", "mine.cu")})
    assert calls == [("grid,torch", ()), ("mine", ("--add", "mine.cu"))]
    assert [r.label for r in run.results] == ["grid", "mine", "torch"]


@requires_ncu_report
def test_default_sections_still_give_every_recorded_advice_and_table_field():
    """Sections were trimmed for speed: every section whose rules gave advice on the recorded H100
    reports is still collected (that the table's fields still arrive is tests/gpu's to check)."""
    for variant in ("grid", "torch"):
        (row,) = SINGLE_READER(recorded(variant)[0])
        assert {a.section for a in row.advice} <= set(ncu_tool.SECTIONS)
        argv = ncu_tool.profile_argv("ncu", ncu_tool.NcuOptions(), Path("r"), ["app"])
        asked = {argv[i + 1] for i, a in enumerate(argv) if a == "--section"}
        assert asked == set(ncu_tool.SECTIONS) and "MemoryWorkloadAnalysis" not in asked


def test_a_variant_named_like_its_family_is_selected_by_the_family_range():
    """ncu 2025.3 on the H100 profiled nothing for 'fused/fused/' (a range inside one of the same
    name); the child runs only the variants asked for, so 'fused/' selects the same launches."""
    from gpuprof.tools.target import LaunchTarget

    assert LaunchTarget("fused", "fused", {"n": 1}).nvtx_include == "fused/"
    assert LaunchTarget("fused", "eager", {"n": 1}).nvtx_include == "fused/eager/"
    assert LaunchTarget("matmul", "naive", {"n": 1}).nvtx_include == "matmul/naive/"

    def row(*ranges: str) -> NcuKernelRow:
        return NcuKernelRow(id=0, kernel_name="k", demangled_name="k", nvtx_ranges=ranges)

    rows = [row("fused", "fused"), row("fused", "eager", "aten::conv2d")]  # the batch's report: both
    grouped = rows_by_variant(rows, "fused", ["fused", "eager"])
    assert grouped == {"fused": [rows[0]], "eager": [rows[1]]}
