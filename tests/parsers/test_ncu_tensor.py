"""Tensor-core FLOPs from ncu (issue 12 item 5), on a recorded H100 profile of four 2048³ torch GEMMs
(FP32 SIMT, TF32, BF16, FP16): FLOPs by precision, and each GEMM under the roof of its precision."""

from __future__ import annotations

import pytest

from gpuprof.analysis import roofline
from gpuprof.parsers.ncu_csv import parse_raw_csv
from gpuprof.tools.ncu import METRICS, TENSOR_OPS

NAME = "ncu-2025.3.1__torch-gemm-fp32-tf32-bf16-fp16__raw.csv"
GEMM_FLOP = 2 * 2048**3  # 17179869184


@pytest.fixture
def gemms(fixture):
    rows = parse_raw_csv(fixture(NAME).text, NAME)
    return {r.nvtx_ranges[-1]: r for r in rows}


def test_the_recording_asked_for_every_tensor_metric_gpuprof_collects(fixture):
    recorded = fixture(NAME).sidecar
    assert all(name in recorded for name in TENSOR_OPS) and set(TENSOR_OPS) <= set(METRICS)
    assert "sm__inst_executed_pipe_tensor.sum" in METRICS


def test_tensor_ops_are_flops_by_precision(gemms):
    assert list(gemms) == ["fp32", "tf32", "bf16", "fp16"]
    assert gemms["tf32"].flop_tf32_tensor == GEMM_FLOP
    assert gemms["bf16"].flop_bf16_tensor == GEMM_FLOP
    assert gemms["fp16"].flop_fp16_tensor == GEMM_FLOP
    for precision, row in gemms.items():
        assert row.precision == precision
        # The whole GEMM, not its epilogue: 2·M·N·K to within the FP32 epilogue's few FLOPs.
        assert row.flop == pytest.approx(GEMM_FLOP, rel=1e-3)
    assert gemms["fp32"].flop_tf32_tensor == 0 and gemms["fp32"].flop_fp32 == pytest.approx(GEMM_FLOP, rel=1e-3)
    assert gemms["tf32"].tensor_instructions == 262144
    assert gemms["tf32"].ops_int8_tensor == 0 and gemms["tf32"].flop_fp64_tensor == 0


def test_the_device_is_named_so_the_roof_is_the_datasheets(gemms):
    row = gemms["tf32"]
    assert (row.device_name, row.device_sm_count, row.device_max_clock_hz) == ("NVIDIA H100 80GB HBM3", 132, 1.98e9)
    roof = roofline.roof_from_rows(list(gemms.values()))
    assert roof.peak("tf32") == pytest.approx(494.7e12) and roof.peak("fp32") == pytest.approx(66.9e12)
    assert roof.peak_bytes_s == pytest.approx(3.35e12)
    assert "H100 SXM5" in roof.source


def test_the_tf32_gemm_lands_compute_bound_on_the_tf32_roof(gemms):
    roof = roofline.roof_from_rows(list(gemms.values()))
    tf32 = roofline.point("tf32", [gemms["tf32"]])
    assert tf32.precision == "tf32"
    assert tf32.intensity == pytest.approx(gemms["tf32"].flop / 36493312)  # ~471 FLOP/B
    assert tf32.bound(roof) == "compute"
    assert tf32.fraction_of_roof(roof) == pytest.approx(gemms["tf32"].flop / 49568e-9 / 494.7e12)  # ~70 %
    assert 0.5 < tf32.fraction_of_roof(roof) <= 1.0  # under its own roof, not 5x over the FP32 one


@pytest.mark.parametrize("precision", ["fp32", "tf32", "bf16", "fp16"])
def test_every_gemm_is_under_the_roof_of_its_precision(gemms, precision):
    roof = roofline.roof_from_rows(list(gemms.values()))
    p = roofline.point(precision, [gemms[precision]])
    assert p.precision == precision and p.bound(roof) == "compute"
    assert 0.5 < p.fraction_of_roof(roof) <= 1.0


def test_without_a_datasheet_the_roof_is_ncus_highest_peak_and_has_no_tensor_roof(fixture):
    from gpuprof.parsers.ncu_csv import load_csv

    rows = load_csv(fixture("ncu_2025.3.1_raw_page_roofline_metrics.csv").path)
    renamed = [r.__class__(**{**r.__dict__, "device_name": "NVIDIA Future GPU"}) for r in rows]
    roof = roofline.roof_from_rows(renamed)
    assert roof.peak_flops == max(r.peak_fp32_flops for r in rows)  # not the first row's (audit N3)
    assert roof.peak("tf32") is None and "ncu peak metrics" in roof.source
    assert roofline.Point("x", 500.0, 300e12, "tf32").bound(roof) == "no tf32 roof"


def test_the_plot_draws_the_tf32_roof_beside_the_fp32_one(gemms, tmp_path):
    pytest.importorskip("matplotlib")
    from gpuprof.render.roofline_plot import save_roofline

    roof = roofline.roof_from_rows(list(gemms.values()))
    points = [roofline.point(p, [gemms[p]]) for p in gemms]
    path = save_roofline(points, roof, tmp_path / "roof.svg", "torch GEMMs")
    text = path.read_text()
    assert "TF32 tensor, dense 494.7 TFLOP/s" in text and "FP32 (non-tensor) 66.9 TFLOP/s" in text
