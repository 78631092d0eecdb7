"""devicequery: deviceQuery's units in the table, plain numbers in JSON, and the persisting-L2
field read by name, by number or from the property struct (issue 14 item 10)."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest
from rich.console import Console

from gpuprof.commands import devicequery
from gpuprof.render.devicequery_view import devicequery_tables, label_text, size_text, value_text

# An H100 SXM's deviceQuery-relevant values as gpuprof's JSON carries them.
H100 = {"device": {
    "name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0", "multiprocessors": 132,
    "total_global_memory_bytes": 84_942_979_072, "gpu_max_clock_mhz": 1980.0, "memory_clock_mhz": 2619.0,
    "memory_bus_width_bits": 5120, "theoretical_bandwidth_gb_s": 3352.3, "l2_cache_bytes": 52_428_800,
    "max_persisting_l2_bytes": 32_505_856, "shared_memory_per_block_bytes": 49_152,
    "shared_memory_per_sm_bytes": 233_472, "max_block_dims": [1024, 1024, 64], "ecc_enabled": True,
    "total_constant_memory_bytes": 65_536, "texture_alignment_bytes": 512,
}, "live": {"power_w": 71.3, "temperature_c": 31, "sm_clock_mhz": 345}}


@pytest.mark.parametrize(("key", "value", "text"), [
    ("total_global_memory_bytes", 84_942_979_072, "79.1 GiB"),
    ("l2_cache_bytes", 52_428_800, "50 MiB"),
    ("shared_memory_per_block_bytes", 49_152, "48 KiB"),
    ("shared_memory_per_sm_bytes", 233_472, "228 KiB"),
    ("texture_alignment_bytes", 512, "512 bytes"),
    ("gpu_max_clock_mhz", 1980.0, "1.98 GHz"),
    ("sm_clock_mhz", 345, "345 MHz"),
    ("memory_bus_width_bits", 5120, "5,120-bit"),
    ("max_block_dims", [1024, 1024, 64], "1,024 x 1,024 x 64"),
    ("max_persisting_l2_bytes", None, "not reported"),
    ("ecc_enabled", True, "yes"),
])
def test_values_are_shown_in_devicequerys_units(key, value, text):
    assert value_text(key, value) == text


def test_labels_drop_the_unit_the_value_now_carries():
    assert label_text("l2_cache_bytes") == "l2 cache"
    assert label_text("theoretical_bandwidth_gb_s") == "theoretical bandwidth"
    assert label_text("multiprocessors") == "multiprocessors"


def test_size_text_never_rounds_a_capacity_to_a_wrong_whole_number():
    assert size_text(3 * 2**20 + 2**19) == "3.5 MiB"


@pytest.mark.parametrize("width", [80, 100])
def test_table_shows_units_and_no_raw_byte_counts(width):
    console = Console(width=width, record=True)
    for table in devicequery_tables(H100):
        console.print(table)
    text = console.export_text()
    assert "50 MiB" in text and "1.98 GHz" in text and "31 M" in text  # 31 MiB persisting L2
    assert "52,428,800" not in text and "…" not in text


@dataclass
class FakeInfo:
    index: int = 0
    attributes: dict = field(default_factory=dict)


def fake_cupy(monkeypatch, by_number=None, props=None):
    def get_attribute(attr, device):
        if by_number is None:
            raise RuntimeError("cudaErrorInvalidValue")
        assert attr == 108
        return by_number

    runtime = SimpleNamespace(deviceGetAttribute=get_attribute, getDeviceProperties=lambda d: props or {})
    monkeypatch.setattr(devicequery, "cupy", lambda: SimpleNamespace(cuda=SimpleNamespace(runtime=runtime)))


def test_persisting_l2_by_name_first(monkeypatch):
    fake_cupy(monkeypatch, by_number=1)
    assert devicequery.persisting_l2_bytes(FakeInfo(attributes={"MaxPersistingL2CacheSize": 32_505_856})) == 32_505_856


def test_persisting_l2_by_attribute_number_when_cupy_lacks_the_name(monkeypatch):
    fake_cupy(monkeypatch, by_number=32_505_856)
    assert devicequery.persisting_l2_bytes(FakeInfo()) == 32_505_856


def test_persisting_l2_from_the_property_struct_last(monkeypatch):
    fake_cupy(monkeypatch, props={"persistingL2CacheMaxSize": 32_505_856})
    assert devicequery.persisting_l2_bytes(FakeInfo()) == 32_505_856
    fake_cupy(monkeypatch)
    assert devicequery.persisting_l2_bytes(FakeInfo()) is None
