"""ceilings: datasheet peaks per precision keyed by the GPU, scaled to the card; measured ones kept apart."""

from __future__ import annotations

import json

import pytest

from gpuprof import results
from gpuprof.analysis import ceilings
from gpuprof.analysis.ceilings import Ceilings, Measured
from gpuprof.gpu import DeviceInfo
from gpuprof.measure import device_ceilings

T = 1e12


def h100(**changes) -> DeviceInfo:
    """The DeviceInfo of the H100 80GB HBM3 the fixtures were recorded on (PERFORMANCE.md)."""
    fields = {"index": 0, "name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-test", "compute_capability": "9.0",
              "arch": "sm_90", "sm_count": 132, "l2_bytes": 50 * 2**20, "total_memory_bytes": 80 * 2**30,
              "memory_bus_width_bits": 5120, "memory_clock_khz": 2_619_000, "sm_clock_khz": 1_980_000,
              "driver_version": 13000, "runtime_version": 13000, "attributes": {}}
    return DeviceInfo(**{**fields, **changes})


@pytest.mark.parametrize(("name", "model"), [
    ("NVIDIA H100 80GB HBM3", "H100 SXM5"),
    ("NVIDIA H100 PCIe", "H100 PCIe"),
    ("NVIDIA H100 NVL", "H100 NVL"),
    ("NVIDIA H200", "H200 SXM"),
    ("NVIDIA A100-SXM4-80GB", "A100 SXM4 80GB"),
    ("NVIDIA A100-SXM4-40GB", "A100 40GB"),
    ("NVIDIA A100 80GB PCIe", "A100 PCIe 80GB"),
    ("NVIDIA A100-PCIE-40GB", "A100 40GB"),
    ("NVIDIA L4", "L4"),
    ("NVIDIA GeForce RTX 4090", "GeForce RTX 4090"),
    ("NVIDIA GeForce RTX 4080", "GeForce RTX 4080"),
    ("NVIDIA L40S", None),  # not an L4
    ("NVIDIA GH200 480GB", None),  # not an H200
    ("Tesla V100-SXM2-16GB", None),
])
def test_the_device_name_picks_the_right_datasheet(name, model):
    sheet = ceilings.datasheet_for(name)
    assert (sheet.model if sheet else None) == model


def test_h100_sxm_figures_are_the_dense_datasheet_ones_at_its_own_clock():
    limits = ceilings.theoretical(h100())
    assert limits.ceiling("flop", "fp32").value == pytest.approx(66.9 * T)
    assert limits.ceiling("flop", "tf32").value == pytest.approx(494.7 * T)  # 989 is the sparse figure
    assert limits.ceiling("flop", "bf16").value == pytest.approx(989.4 * T)
    assert limits.ceiling("flop", "fp16").value == pytest.approx(989.4 * T)
    fp64 = limits.ceiling("flop", "fp64")
    assert (fp64.name, fp64.value) == ("FP64 tensor", pytest.approx(66.9 * T))  # DMMA beats the FP64 pipe
    assert limits.ceiling("bytes").value == pytest.approx(3.35 * T)
    assert "H100 SXM5" in limits.source and "dense" in limits.source


def test_peaks_scale_with_the_cards_max_clock_and_sm_count():
    slow = ceilings.theoretical(h100(sm_clock_khz=1_485_000))  # a card reporting a lower max clock
    assert slow.ceiling("flop", "tf32").value == pytest.approx(494.7 * T * 1485 / 1980)
    assert "1485 MHz" in slow.source
    half = ceilings.theoretical(h100(sm_count=66))  # a MIG slice, say
    assert half.ceiling("flop", "fp32").value == pytest.approx(66.9 * T / 2)
    assert half.ceiling("bytes").value == pytest.approx(3.35 * T)


def test_h100_pcie_is_not_judged_by_the_sxm_sheet():
    pcie = ceilings.theoretical(h100(name="NVIDIA H100 PCIe", sm_count=114, sm_clock_khz=1_755_000))
    assert pcie.ceiling("flop", "fp32").value == pytest.approx(51.2 * T)
    assert pcie.ceiling("bytes").value == pytest.approx(2.039 * T)


def test_a_gpu_without_a_datasheet_gets_fp32_arithmetic_and_no_tensor_ceiling():
    other = ceilings.theoretical(h100(name="NVIDIA Future GPU"))
    assert other.ceiling("flop", "fp32").value == pytest.approx(2 * 128 * 132 * 1.98e9)
    assert other.ceiling("flop", "tf32") is None  # never the FP32 figure in its place
    assert other.ceiling("bytes").value == pytest.approx(h100().theoretical_bandwidth_bytes_s)
    assert "no datasheet entry" in other.source


def test_measured_ceilings_are_kept_apart(tmp_path, monkeypatch):
    monkeypatch.setattr(device_ceilings, "CACHE_DIR", tmp_path)
    info = h100()
    # The cache file as `devicequery --measure` has always written it.
    device_ceilings.save(info, Measured(bandwidth_bytes_s=3.0 * T, fp32_flops=51.7 * T, tf32_flops=368 * T,
                                 source="measured 2026-11-20"))
    assert json.loads(device_ceilings.cache_path(info).read_text())["fp32_flops"] == pytest.approx(51.7 * T)
    limits = device_ceilings.load(info)
    assert limits.ceiling("flop", "fp32").value == pytest.approx(66.9 * T)  # the datasheet, not cuBLAS
    assert limits.measured_ceiling("flop", "fp32").value == pytest.approx(51.7 * T)
    assert limits.measured_ceiling("flop", "fp32").name == "measured cuBLAS SGEMM"
    assert limits.measured_ceiling("flop", "tf32").value == pytest.approx(368 * T)
    assert limits.measured_ceiling("flop", "fp16") is None


def test_no_cache_means_no_measured_figure(tmp_path, monkeypatch):
    monkeypatch.setattr(device_ceilings, "CACHE_DIR", tmp_path)
    limits = device_ceilings.load(h100())
    assert limits.measured is None and limits.measured_ceiling("flop", "fp32") is None


def test_a_results_file_carries_enough_to_find_its_ceilings(fixtures_dir):
    env = results.load(fixtures_dir / "results" / "smoke_a.json").environment
    limits = ceilings.from_environment(env)
    assert limits is not None
    assert limits.ceiling("flop", "tf32").value == pytest.approx(494.7 * T)
    assert limits.l2_bytes == 50 * 2**20
    assert ceilings.from_environment({"gpu_name": "test GPU"}) is None


def test_a_ceilings_object_without_a_precision_gives_none():
    limits = Ceilings(bandwidth_bytes_s=None, flops={"fp32": 1.0})
    assert limits.ceiling("bytes") is None and limits.ceiling("flop", "bf16") is None
