"""`gpuprof ncu` end to end on CPU: a fake ncu that writes reports recorded on the H100 through
gpuprof's own invocation, then the real reader, tables, advice, roofline table and PNG."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuprof.cli import app
from gpuprof.parsers import ncu_rep
from gpuprof.tools import _proc
from tests.ncu_full_reports import requires_ncu_report

TOOLS = Path(__file__).resolve().parent.parent / "fixtures" / "tools"
# The newest ncu whose reports are recorded (scripts/record_fixtures.sh adds a release beside the old).
NCU_VERSION = max((p.name.split("__")[0].removeprefix("ncu-") for p in TOOLS.glob("ncu-*__launch_vecadd_grid.ncu-rep")),
                  key=lambda v: tuple(int(x) for x in v.split(".")))
REAL_RUN = _proc.run


def recorded(variant: str) -> tuple[Path, str]:
    stem = f"ncu-{NCU_VERSION}__launch_vecadd_{variant}"
    return TOOLS / f"{stem}.ncu-rep", (TOOLS / f"{stem}.log").read_text()


class RecordedNcu:
    """ncu as it answered on the H100: `--export BASE` leaves the recorded report at BASE.ncu-rep.

    The report reader's child process (python -m gpuprof.parsers.ncu_rep) really runs, unless
    `reader_missing` makes it answer as it does without the ncu_report module; then `--import`
    is answered with recorded CSV pages."""

    def __init__(self, reader_missing: bool = False, pages: dict[str, Path] | None = None) -> None:
        self.calls: list[list[str]] = []
        self.reader_missing, self.pages = reader_missing, pages or {}

    def __call__(self, argv, *, timeout_s, cwd=None, env=None):
        argv = list(argv)
        if argv[1:3] == ["-m", "gpuprof.parsers.ncu_rep"]:
            if self.reader_missing:
                return _proc.Completed(argv, ncu_rep.CHILD_UNAVAILABLE, "", "pip install ncu-report")
            return REAL_RUN(argv, timeout_s=timeout_s, cwd=cwd, env=env)
        self.calls.append(argv)
        if "--import" in argv:
            page = argv[argv.index("--page") + 1]
            return _proc.Completed(argv, 0, self.pages[page].read_text(), "")
        base = Path(argv[argv.index("--export") + 1])
        variant = argv[argv.index("--nvtx-include") + 1].split("/")[1] if "--nvtx-include" in argv else "torch"
        report, log = recorded(variant)
        shutil.copyfile(report, base.with_suffix(".ncu-rep"))
        return _proc.Completed(argv, 0, "", log)


@pytest.fixture
def fake_ncu(monkeypatch):
    monkeypatch.setattr(_proc, "find_tool", lambda name, explicit=None, extra_dirs=(), hint="": f"/opt/fake/{name}")

    def install(fake: RecordedNcu) -> RecordedNcu:
        monkeypatch.setattr(_proc, "run", fake)
        return fake

    return install




@requires_ncu_report
def test_family_tables_advice_roofline_and_png(fake_ncu, tmp_path):
    pytest.importorskip("matplotlib")
    fake = fake_ncu(RecordedNcu())
    png = tmp_path / "roof.png"
    result = CliRunner().invoke(app, ["ncu", "vecadd", "-v", "grid,torch", "--out", str(tmp_path / "out"),
                                      "--plot", str(png)])
    assert result.exit_code == 0, result.output
    assert len(fake.calls) == 2  # the batch (its recorded report holds grid only), then torch alone
    out = result.output
    for words in ("vecadd_grid", "vectorized_elementwise_kernel", "ncu rule advice", "roofline: FP32",
                  "memory", "roofline plot written"):
        assert words in out
    assert "…" not in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert out.count("reports:") == 1


@requires_ncu_report
def test_command_summary_one_row_per_kernel_with_launch_filter(fake_ncu, tmp_path):
    fake = fake_ncu(RecordedNcu())
    result = CliRunner().invoke(app, ["ncu", "--launch-skip", "2", "--out", str(tmp_path), "--",
                                      "python", "mlp.py"])
    assert result.exit_code == 0, result.output
    (argv,) = fake.calls
    # The first launch of each kernel configuration, after 2 warm-ups of each (docs/tools.md, "ncu: launch filters").
    assert argv[argv.index("--launch-skip") + 1] == "2" and argv[argv.index("--launch-count") + 1] == "1"
    assert argv[argv.index("--filter-mode") + 1] == "per-launch-config"
    assert argv[-2:] == ["python", "mlp.py"]
    assert "1 kernels, 1 launches profiled" in result.output
    assert "first 2 skipped, 1 profiled" in result.output
    assert "vectorized_elementwise_kernel" in result.output and "torch" in result.output


def test_launch_count_is_global_and_zero_per_kernel_means_every_launch(fake_ncu, tmp_path):
    fake = fake_ncu(RecordedNcu(reader_missing=True, pages={
        "raw": TOOLS / "ncu_2025.3.1_raw_page_metrics.csv",
        "details": TOOLS / "ncu_2025.3.1_details_page_default_basic_set.csv"}))
    CliRunner().invoke(app, ["ncu", "--launch-count", "5", "--out", str(tmp_path), "--", "python", "x.py"])
    CliRunner().invoke(app, ["ncu", "--launches-per-kernel", "0", "--out", str(tmp_path), "--", "python", "x.py"])
    first, second = [a for a in fake.calls if "--export" in a]
    assert first[first.index("--launch-count") + 1] == "5" and "--filter-mode" not in first
    assert "--launch-count" not in second and "--filter-mode" not in second


def test_csv_fallback_merges_advice_and_shows_per_launch_rows(fake_ncu, tmp_path):
    """Without ncu_report the report is read through `ncu --import` (raw page + details page for the rules)."""
    fake = fake_ncu(RecordedNcu(reader_missing=True, pages={
        "raw": TOOLS / "ncu_2025.3.1_raw_page_metrics.csv",
        "details": TOOLS / "ncu_2025.3.1_details_page_default_basic_set.csv"}))
    result = CliRunner().invoke(app, ["ncu", "--per-launch", "--out", str(tmp_path), "--", "./app"])
    assert result.exit_code == 0, result.output
    assert [a[a.index("--page") + 1] for a in fake.calls if "--import" in a] == ["raw", "details"]
    assert "ncu --import CSV" in result.output
    assert "vecAdd" in result.output and "ncu rule advice" in result.output
    assert "(no OPT or WRN rule results" not in result.output  # the details page's rules were merged


def test_corrupt_report_is_one_line_exit_2(monkeypatch, tmp_path):
    bad = tmp_path / "bad.ncu-rep"
    bad.write_bytes(recorded("grid")[0].read_bytes()[:100])
    monkeypatch.setattr(_proc, "run",
                        lambda argv, **kw: _proc.Completed(argv, -6, "", "[libprotobuf FATAL] CHECK failed"))
    result = CliRunner().invoke(app, ["ncu", "--import", str(bad)])
    assert result.exit_code == 2, result.output
    (line,) = [ln for ln in result.output.splitlines() if ln.startswith("error:")]
    assert "not a readable .ncu-rep" in line and "SIGABRT" in line and "Traceback" not in result.output


def test_recorded_fixtures_carry_the_tool_version():
    """Fixture names say which tool release wrote them (scripts/record_fixtures.sh writes them so)."""
    recorded_files = [p for p in TOOLS.iterdir() if "__" in p.name and not p.name.endswith(".source.txt")]
    assert recorded_files
    for p in recorded_files:
        tool, _, version = p.name.split("__")[0].partition("-")
        assert tool in ("ncu", "nsys", "sanitizer", "torch") and version[:1].isdigit(), p.name
        prefix, _, rest = p.name.partition("__")
        sidecars = [s.name.partition("__")[2].removesuffix(".source.txt")
                    for s in TOOLS.glob(f"{prefix}__*.source.txt")]
        assert any(rest.startswith(stem) for stem in sidecars), f"{p.name} has no .source.txt"


@requires_ncu_report
def test_roofline_png_puts_each_variant_at_its_intensity_and_rate(monkeypatch, tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    from gpuprof.analysis import roofline
    from gpuprof.render.roofline_plot import save_roofline
    from gpuprof.tools.ncu import read_report_isolated

    rows = {v: read_report_isolated(recorded(v)[0]) for v in ("grid", "torch")}
    points = [roofline.point(v, r) for v, r in rows.items()]
    roof = roofline.roof_from_rows(rows["grid"])
    assert roof is not None and all(points)
    # vecadd moves at most 12 DRAM bytes per FLOP (caches only remove traffic): far left of the ridge.
    for p in points:
        assert 1 / 12 * 0.95 <= p.intensity < roof.ridge / 10
        assert p.bound(roof) == "memory" and 0 < p.fraction_of_roof(roof) <= 1
    saved: list[Figure] = []
    original = Figure.savefig
    monkeypatch.setattr(Figure, "savefig", lambda self, *a, **k: (saved.append(self), original(self, *a, **k))[1])
    path = save_roofline(points, roof, tmp_path / "roof.png", "vecadd roofline")
    assert matplotlib.get_backend().lower() == "agg"
    assert path.read_bytes()[:4] == b"\x89PNG"
    (ax,) = saved[0].axes
    plotted = sorted(float(v) for c in ax.collections for xy in c.get_offsets() for v in xy)
    expected = sorted(v for p in points for v in (p.intensity, p.flops / 1e12))
    assert plotted == pytest.approx(expected)
    assert sorted(t.get_text() for t in ax.texts) == ["grid", "torch"]
    roof_line = ax.get_lines()[0]
    assert max(roof_line.get_ydata()) == pytest.approx(roof.peak_flops / 1e12)


@requires_ncu_report
@pytest.mark.parametrize("keep", [0.3, 0.9])
def test_truncated_report_through_the_real_reader_is_one_line_exit_2(tmp_path, keep):
    blob = recorded("torch")[0].read_bytes()
    bad = tmp_path / "cut.ncu-rep"
    bad.write_bytes(blob[: int(len(blob) * keep)])
    result = CliRunner().invoke(app, ["ncu", "--import", str(bad)])
    assert result.exit_code == 2, result.output
    (line,) = [ln for ln in result.output.splitlines() if ln.startswith("error:")]
    assert str(bad) in line and "Traceback" not in result.output


@pytest.mark.parametrize("keep", [0, 0.5])
def test_truncated_sqlite_export_is_one_line_exit_2(monkeypatch, tmp_path, keep):
    from gpuprof.commands import nsys as nsys_core
    from gpuprof.errors import EnvironmentProblem

    def no_nsys(explicit=None):
        raise EnvironmentProblem("no nsys")

    monkeypatch.setattr(nsys_core.tools, "find_nsys", no_nsys)
    blob = (TOOLS / "nsys_2025.3.2_export_small.sqlite").read_bytes()
    bad = tmp_path / "cut.sqlite"
    bad.write_bytes(blob[: int(len(blob) * keep)] if keep else b"not sqlite at all" * 64)
    result = CliRunner().invoke(app, ["nsys", "--import", str(bad), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2, result.output
    (line,) = [ln for ln in result.output.splitlines() if ln.startswith("error:")]
    assert "cut.sqlite" in line


@requires_ncu_report
def test_ladder_fits_100_columns_and_the_json_carries_the_rungs(fake_ncu, tmp_path):
    fake = fake_ncu(RecordedNcu())
    args = ["ncu", "vecadd", "--ladder", "-v", "grid,torch", "--out", str(tmp_path / "out")]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    for argv in fake.calls:  # each rung's top stall: WarpStateStats, said before profiling
        assert argv[argv.index("WarpStateStats") - 1] == "--section"
    assert "collecting section WarpStateStats" in " ".join(result.output.split())
    ladder = result.output[result.output.index("vecadd ladder"):result.output.index("reports:")]
    assert all(len(line) <= 100 for line in ladder.splitlines())
    assert "not shown at this width:" in ladder  # the optional columns named, not cut
    assert "rung 1 → 2 (grid → torch): time ×0.87" in " ".join(ladder.split())
    result = CliRunner().invoke(app, [*args, "--json", str(tmp_path / "ncu.json")], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    rungs = json.loads((tmp_path / "ncu.json").read_text())["ladder"]
    assert [(r["label"], r["reference"]) for r in rungs] == [("grid", False), ("torch", True)]
    assert rungs[0]["measured_limiter"] == "dram"  # no level counters in this report: SpeedOfLight's DRAM %


@pytest.mark.parametrize("where", [["--import", "x.ncu-rep"], ["--", "./app"]])
def test_ladder_needs_a_family(where, tmp_path):
    (tmp_path / "x.ncu-rep").write_bytes(b"")
    result = CliRunner().invoke(app, ["ncu", "--ladder", *where], env={"COLUMNS": "100"}, catch_exceptions=False)
    assert result.exit_code == 2 and "--ladder does not apply" in result.output and "with a FAMILY" in result.output


@pytest.fixture
def profiled_variants(monkeypatch) -> dict:
    """The variants `ncu FAMILY` hands to profile_family (stood in for: no ncu here), under "variants"."""
    from gpuprof.commands import ncu as core

    seen: dict = {}

    def fake_profile(family, variants, *args, **kwargs):
        seen["variants"] = variants
        return core.NcuRun(family, "none", [core.NcuResult(v, None) for v in variants], "")

    monkeypatch.setattr(core, "profile_family", fake_profile)
    monkeypatch.setattr(core.ncu_tool, "find_ncu", lambda explicit=None: "/opt/fake/ncu")
    return seen


def test_ladder_orders_hand_written_variants_first_then_vendor(profiled_variants, tmp_path):
    from gpuprof.commands import ncu as core
    from gpuprof.commands.target import Target
    from gpuprof.variants import catalog

    seen = profiled_variants
    core.execute(core.NcuRequest(Target(families=("matmul",)), out_dir=tmp_path, ladder=True))
    variants = catalog.load_family("matmul").variants
    vendor = [v.name for v in variants if v.vendor]
    assert len(vendor) >= 2  # cuBLAS (FP32 and TF32) and CUTLASS
    assert seen["variants"] == [v.name for v in variants if not v.vendor] + vendor


def test_a_variant_that_launches_no_kernel_is_not_profiled_and_not_a_failure(profiled_variants, tmp_path):
    seen = profiled_variants
    result = CliRunner().invoke(app, ["ncu", "transpose", "-v", "naive,copy", "--out", str(tmp_path)],
                                env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    assert seen["variants"] == ["naive"]  # the manifest's launches_kernel = false keeps copy out of ncu
    assert "copy: not profiled: its work is a DMA copy, not a kernel" in " ".join(result.output.split())
    alone = CliRunner().invoke(app, ["ncu", "transpose", "-v", "copy", "--out", str(tmp_path)], env={"COLUMNS": "100"})
    assert alone.exit_code == 2 and "copy: no kernel launched" in alone.output
