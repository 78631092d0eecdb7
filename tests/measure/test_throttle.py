"""Throttling seen: a fake NVML reports power / thermal caps around some batches of timing.measure;
the row counts those samples, the table shows "k/n throttled", the JSON keeps them, and
--discard-throttled samples again instead."""

from __future__ import annotations

import json
import types

import pytest
from rich.console import Console

from gpuprof import results
from gpuprof.analysis.derive import derive
from gpuprof.analysis.tables import Table
from gpuprof.measure import throttle, timing
from gpuprof.render.tables import run_table
from gpuprof.results import OK, CheckResult, Row
from gpuprof.variants import catalog

SW_POWER_CAP, SW_THERMAL, GPU_IDLE, APP_CLOCKS = 0x4, 0x20, 0x1, 0x2
PER_SAMPLE_S = 10e-3  # 5 samples per 50 ms batch after the first (min_samples) one


class FakeNvml:
    """pynvml's calls that Monitor makes; `masks` gives the reasons of each reading in turn."""

    NVML_CLOCK_SM = 0

    def __init__(self, masks_by_batch: dict[int, int], readings_per_batch: int = 3) -> None:
        self.masks_by_batch, self.per_batch, self.reads = masks_by_batch, readings_per_batch, 0

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle):
        batch, within = divmod(self.reads, self.per_batch)
        self.reads += 1
        # the cap shows only in the reading taken while the batch runs (the middle one)
        return self.masks_by_batch.get(batch, GPU_IDLE) if within == 1 else GPU_IDLE | APP_CLOCKS

    def nvmlDeviceGetClockInfo(self, handle, which):
        return 1755 if self.masks_by_batch.get((self.reads - 1) // self.per_batch) else 1980


class FakeStream:
    def synchronize(self):
        pass


def fake_harness(nvml) -> types.SimpleNamespace:
    return types.SimpleNamespace(stream=FakeStream(), flush_bytes=0, took_too_long=lambda: False,
                                 clock_mhz=lambda: 1980.0, nvml=throttle.Monitor(nvml, "handle"))


@pytest.fixture
def fake_engine(monkeypatch):
    """timing.measure with its GPU parts replaced: every batch yields noisy samples (so it runs to
    max_samples) and reads NVML once while it 'runs', like the real take()."""

    def sampler(launch, harness, mode, per_launch_s):
        def take(n):
            harness.nvml.read()
            return [PER_SAMPLE_S * (1 + 0.1 * (i % 3)) for i in range(n)]

        return take, PER_SAMPLE_S, "", 1

    monkeypatch.setattr(timing, "time_one_cold", lambda launch, harness: PER_SAMPLE_S)
    monkeypatch.setattr(timing, "_sampler", sampler)


POLICY = {"min_samples": 10, "max_samples": 64, "max_time_s": 60.0, "warmup": 0}


def test_samples_of_throttled_batches_are_counted_and_named(fake_engine):
    nvml = FakeNvml({1: SW_POWER_CAP, 3: SW_THERMAL})  # batches of 10, 5, 5, 5, ... samples
    t = timing.measure(lambda stream: None, fake_harness(nvml), timing.TimingPolicy(**POLICY))
    assert len(t.samples_s) == 64 and t.stop_reason == "max_samples"
    assert len(t.throttled) == 64
    assert t.throttled_count == 10  # batches 1 and 3, five samples each
    assert t.throttled[:10] == [False] * 10 and t.throttled[10:15] == [True] * 5
    assert t.throttle_reasons == ["sw_power_cap", "sw_thermal_slowdown"]  # gpu_idle, app clocks ignored
    assert t.discarded_throttled == 0
    assert t.nvml_sm_clock_mhz[10] == 1755 and t.nvml_sm_clock_mhz[0] == 1980


def test_discard_throttled_samples_again(fake_engine):
    nvml = FakeNvml({1: SW_POWER_CAP, 3: SW_THERMAL})
    t = timing.measure(lambda stream: None, fake_harness(nvml), timing.TimingPolicy(discard_throttled=True, **POLICY))
    assert len(t.samples_s) == 64 and not any(t.throttled)
    assert t.discarded_throttled == 10
    assert t.throttle_reasons == ["sw_power_cap", "sw_thermal_slowdown"]  # still said, though dropped


def test_without_nvml_nothing_is_counted(fake_engine):
    t = timing.measure(lambda stream: None, fake_harness(None), timing.TimingPolicy(**POLICY))
    assert len(t.samples_s) == 64 and t.throttled == [] and t.throttled_count == 0 and t.nvml_sm_clock_mhz == []


def test_a_failing_nvml_query_stops_asking_instead_of_failing_the_timing():
    class Broken(FakeNvml):
        def nvmlDeviceGetCurrentClocksEventReasons(self, handle):
            raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")

    monitor = throttle.Monitor(Broken({}), "h")
    monitor.read()
    assert not monitor.available and not monitor.batch().throttled


def test_throttling_names_keep_only_caps():
    assert throttle.throttling_names(0x1 | 0x2 | 0x10 | 0x100) == []
    assert throttle.throttling_names(0x4 | 0x8 | 0x20 | 0x40 | 0x80) == [
        "sw_power_cap", "hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"]


def test_throttled_samples_show_in_the_run_table_and_survive_the_json(fake_engine, tmp_path):
    nvml = FakeNvml({1: SW_POWER_CAP, 3: SW_THERMAL})
    t = timing.measure(lambda stream: None, fake_harness(nvml), timing.TimingPolicy(**POLICY))
    fam = catalog.load_family("vecadd")
    size = {"n": 2**28}
    row = Row(family="vecadd", variant="grid", size=size, vendor=False, check=CheckResult(status=OK, max_rel_error=0.0),
              timing=t, flop=float(size["n"]), bytes=12.0 * size["n"])
    path = results.save(results.Results(environment={}, rows=[row]), tmp_path / "r.json")
    loaded = results.load(path).rows[0].timing
    assert loaded.throttled == t.throttled and loaded.throttle_reasons == t.throttle_reasons
    assert json.loads(path.read_text())["rows"][0]["timing"]["throttled"].count(True) == 10
    for width in (80, 100, 160):  # where the samples column is left out, the caption says it instead
        console = Console(width=width, record=True)
        derive([row], "bytes", "grid", None, None)
        console.print(run_table(Table(fam, [row], "grid", None, "cold"), None, width=width))
        text = console.export_text()
        assert "10/64" in text and "throttled" in text, text
        assert "grid" in text


def test_an_old_results_file_without_the_new_fields_still_loads(fixtures_dir):
    old = results.load(fixtures_dir / "results" / "smoke_a.json")
    timed = [r.timing for r in old.rows if r.timing]
    assert timed and all(t.throttled == [] and t.discarded_throttled == 0 for t in timed)


@pytest.mark.parametrize(("host_can_queue", "samples", "stop"), [
    (3, 64, "max_samples"),  # a host-bound unit: batches shrink until the host queues them within the hold
    (0, 0, "host_too_slow_to_queue_batches"),  # not even one sample in time: stop, never loop forever
])
def test_batches_shrink_when_the_host_cannot_queue_them_in_time(monkeypatch, host_can_queue, samples, stop):
    """On the H100 a Python-driven MNIST training step (~30 launches per sample) outlasted the hold
    with every batch, and the row ended with no samples at all."""
    sizes: list[int] = []

    def sampler(launch, harness, mode, per_launch_s):
        def take(n):
            sizes.append(n)
            harness.nvml.read()
            return [PER_SAMPLE_S * (1 + 0.1 * (i % 3)) for i in range(n)]

        return take, PER_SAMPLE_S, "", 1

    monkeypatch.setattr(timing, "time_one_cold", lambda launch, harness: PER_SAMPLE_S)
    monkeypatch.setattr(timing, "_sampler", sampler)
    harness = fake_harness(FakeNvml({}))
    harness.took_too_long = lambda: sizes[-1] > host_can_queue
    t = timing.measure(lambda stream: None, harness, timing.TimingPolicy(**POLICY))
    assert len(t.samples_s) == samples and t.stop_reason == stop
    assert sizes[0] == 10 and min(sizes) >= 1
    if samples:
        assert all(n <= host_can_queue for n in sizes[sizes.index(min(sizes)):])
