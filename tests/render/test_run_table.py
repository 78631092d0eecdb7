"""The run table: each row's % of its own precision's ceiling, flags and footnotes above 100 %, the
family's own formula, the stop reason of an untimed row; the core marks IMPOSSIBLE rows before the
JSON is written and `gpuprof run` exits 1 on them."""

from __future__ import annotations

import json
import re

import pytest
from rich.console import Console
from typer.testing import CliRunner

from gpuprof import families, results
from gpuprof.analysis import ceilings
from gpuprof.analysis.ceilings import Measured
from gpuprof.analysis.derive import derive
from gpuprof.analysis.stats import summarize
from gpuprof.analysis.tables import Table
from gpuprof.cli import app
from gpuprof.commands import run as run_core
from gpuprof.measure import device_ceilings
from gpuprof.render.tables import run_table
from gpuprof.results import IMPOSSIBLE, OK, CheckResult, Row, Timing
from gpuprof.variants import catalog
from tests.analysis.test_ceilings import h100

H100 = ceilings.theoretical(h100())
# `gpuprof run matmul --variants all` at 4096³ on the H100 (docs/PERFORMANCE.md), TFLOP/s.
MATMUL_RATES = {"naive": 0.50, "coalesced": 6.35, "smem_tiled": 8.66, "blocktile_1d": 17.58, "blocktile_2d": 21.17,
                "vectorized": 33.95, "warptile": 47.05, "cublas": 52.07, "cublas_tf32": 396.4}


def manifest_rows(family_name: str, rates: dict[str, float], size: dict[str, int] | None = None,
                  mode: str = "cold") -> list[Row]:
    """Rows as the run core makes them (precision and FLOP count from the manifest), timed at `rates`."""
    family = catalog.load_family(family_name)
    host = families.host(catalog.load_family(family_name))
    rows = []
    for variant in family.variants:
        if variant.name not in rates:
            continue
        row = run_core._blank_row(family, variant, size or dict(family.default_size), host)
        work = row.flop if host.RATE == "flop" else row.bytes
        median = work / (rates[variant.name] * (1e12 if host.RATE == "flop" else 1e9))
        samples = [0.999 * median, median, 1.001 * median]
        row.check = CheckResult(status=OK, max_rel_error=1e-6, tolerance=1e-4)
        row.timing = Timing(mode=mode, samples_s=samples, stop_reason="converged", summary=summarize(samples))
        rows.append(row)
    return rows


def render(family_name: str, rows: list[Row], limits, width: int = 160, mode: str = "cold") -> str:
    family = catalog.load_family(family_name)
    derive(rows, families.host(catalog.load_family(family_name)).RATE, family.baseline, family.vendor_reference, limits)
    console = Console(width=width, record=True, color_system=None)
    console.print(run_table(Table(family, rows, family.baseline, family.vendor_reference, mode), limits, width=width))
    return console.export_text()


def row_line(text: str, first_cell: str) -> str:
    return next(x for x in text.splitlines() if x.lstrip("│┃ ").startswith(first_cell))


def percentages(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"(\d+(?:\.\d+)?) %", text)]


def test_matmul_all_variants_prints_no_percentage_above_100_and_tf32_is_judged_as_tf32():
    assert catalog.load_family("matmul").variant("cublas_tf32").precision == "tf32"  # from the manifest
    rows = manifest_rows("matmul", MATMUL_RATES)
    text = render("matmul", rows, H100)
    table_part = text.split("timing:")[0]
    assert percentages(table_part) and max(percentages(table_part)) <= 100.0
    line = next(x for x in table_part.splitlines() if "cublas_tf32" in x)
    assert "80.1 %" in line  # 396.4 / 494.7
    assert "TF32 tensor, dense 494.70 TFLOP/s (cublas_tf32)" in text
    assert "FP32 (non-tensor) 66.90 TFLOP/s" in text
    assert "*1" not in text  # nothing flagged


def test_measured_ceilings_are_a_separate_column_never_the_ceiling():
    limits = ceilings.Ceilings(H100.bandwidth_bytes_s, H100.flops, H100.source, H100.l2_bytes,
                               Measured(bandwidth_bytes_s=3.0e12, fp32_flops=51.7e12, tf32_flops=368e12,
                                        source="measured 2026-11-20 (D2D copy 2 GiB; torch matmul 8192^3)"))
    text = render("matmul", manifest_rows("matmul", {"cublas": 52.07, "cublas_tf32": 396.4}), limits)
    assert "% measured" in text
    cublas = row_line(text, "cublas (vendor)")
    assert "77.8 %" in cublas and "100.7 % *1" in cublas  # datasheet 77.8 %; cuBLAS-measured 100.7 %, flagged
    assert "% measured: of the measured cuBLAS SGEMM" in text and "not the hardware" in text
    assert "*1 above 100 %: faster than `devicequery --measure` measured" in text


def test_a_percentage_above_100_carries_a_flag_and_a_footnote():
    rows = manifest_rows("vecadd", {"grid": 3495}, size={"n": 2**20}, mode="graph")
    text = render("vecadd", rows, H100, mode="graph")
    grid = row_line(text, "grid")
    assert "104.3 % *1" in grid
    assert "*1 above 100 %: L2-resident data" in text


def test_conv2d_fft_is_flagged_as_nominal_flops_and_the_footer_gives_conv2d_formula():
    size = {"n": 8, "c": 32, "h": 64, "w": 64, "k": 32, "r": 15, "s": 15}
    text = render("conv2d", manifest_rows("conv2d", {"direct": 5.0, "fft": 75.89, "cudnn": 19.88}, size), H100)
    fft = row_line(text, "fft")
    assert "113.4 % *1" in fft and "not an FMA algorithm" in text
    assert "2·N·K·P·Q·C·R·S" in text and "2·M·N·K" not in text


@pytest.mark.parametrize("family_name", ["vecadd", "matmul", "conv2d", "reduce", "scan", "softmax", "transpose"])
def test_every_family_prints_its_own_formula(family_name):
    host = families.host(catalog.load_family(family_name))
    assert host.FORMULA.startswith("TFLOP/s" if host.RATE == "flop" else "GB/s")
    assert host.FORMULA in " ".join(render(family_name, [], H100).split())  # wrapped lines joined


def test_a_row_with_no_samples_shows_its_stop_reason():
    row = manifest_rows("vecadd", {"grid": 3000})[0]
    row.timing = Timing(mode="cold", samples_s=[], stop_reason="host_too_slow_to_queue_batches", summary=None)
    text = render("vecadd", [row], H100, width=200)
    assert "0 host_too_slow_to_queue_batches" in text


@pytest.mark.parametrize("width", [80, 100, 160])
def test_the_matmul_table_keeps_variant_names_whole(width):
    text = render("matmul", manifest_rows("matmul", MATMUL_RATES), H100, width=width)
    for name in MATMUL_RATES:
        assert re.search(rf"^{name}\b", text, re.MULTILINE), name
    assert "…" not in text and max(map(len, text.splitlines())) <= width


# ---------------------------------------------------------------- core and CLI wiring


def test_the_core_marks_an_impossible_row_before_the_json_is_written(monkeypatch):
    family = catalog.load_family("vecadd")
    honest, cheat = manifest_rows("vecadd", {"grid": 3000, "vectorized": 900_000})
    by_name = {"grid": honest, "vectorized": cheat}
    monkeypatch.setattr(run_core, "run_variant", lambda fam, variant, *a, **k: by_name[variant.name])
    monkeypatch.setattr(run_core.fingerprint, "environment", lambda: {"gpu_name": h100().name})
    monkeypatch.setattr(run_core, "device_info", h100)
    monkeypatch.setattr(device_ceilings, "load", lambda info: H100)
    written = []
    request = run_core.RunRequest(family="vecadd", isolate=False)
    run_core._run_variants(family, [family.variant("grid"), family.variant("vectorized")], families.host(family),
                           dict(family.default_size), request, None,
                           lambda partial: written.append(json.loads(json.dumps(results.to_dict(partial)))), None)
    last = written[-1]["rows"]
    assert [r["check"]["status"] for r in last] == [OK, IMPOSSIBLE]
    assert last[0]["derived"]["ceiling_name"] == "DRAM bandwidth"
    assert last[1]["derived"]["rate"] is None


def fake_core(monkeypatch, rows: list[Row], limits=H100) -> None:
    """`gpuprof run` through the real core (judging, speedups, its table), each variant's row made
    up instead of measured, without worker processes or a GPU."""
    by_name = {r.variant: r for r in rows}
    monkeypatch.setattr(run_core, "run_variant", lambda fam, variant, *a, **k: by_name[variant.name])
    monkeypatch.setattr(run_core.fingerprint, "environment", lambda: {"gpu_name": h100().name})
    monkeypatch.setattr(run_core, "gpu_ceilings", lambda: limits)

    def run_tables(request, progress=None, checkpoint=None, worker=None):
        family = catalog.load_family(request.family)
        chosen = [v for v in family.select(request.variants) if v.name in by_name]
        return run_core._run_variants(family, chosen, families.host(family),
                                      request.size or dict(family.default_size), request, progress, checkpoint, None)

    monkeypatch.setattr(run_core, "run_tables", run_tables)


def test_gpuprof_run_exits_1_on_an_impossible_row(monkeypatch):
    fake_core(monkeypatch, manifest_rows("matmul", {"cublas": 52.07, "warptile": 400.0}))
    result = CliRunner().invoke(app, ["run", "matmul", "--variants", "warptile,cublas"])
    assert result.exit_code == 1, result.output
    assert "IMPOSSIBLE" in result.output and "physical floor" in result.output


def test_gpuprof_run_matmul_all_exits_0_without_a_percentage_above_100(monkeypatch):
    fake_core(monkeypatch, manifest_rows("matmul", MATMUL_RATES))
    result = CliRunner().invoke(app, ["run", "matmul", "--variants", "all"], env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    assert max(percentages(result.output.split("timing:")[0])) <= 100.0
