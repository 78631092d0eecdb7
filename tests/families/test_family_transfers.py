"""transfers (issue 15 item 4) without a GPU: the manifest, the host arrays and exact reference,
the chunking, the overlap figure, the link ceiling and floor, and the timer's host-synchronous path
(with a fake harness: no hold, one unit at a time from a drained stream, the untimed reset first)."""

from __future__ import annotations

import itertools
import mmap
import textwrap
from types import SimpleNamespace

import numpy as np
import pytest

from gpuprof import families
from gpuprof.analysis import ceilings, derive
from gpuprof.errors import EnvironmentProblem, InputError, UsageError
from gpuprof.families import transfers
from gpuprof.families.interface import UNTIMED_RESET, FamilyHost
from gpuprof.measure import timing
from gpuprof.results import OK, CheckResult, Row, Timing
from gpuprof.variants import catalog, launch_plan


def family():
    return catalog.load_family("transfers")


def test_manifest_every_variant_declares_memory_and_is_host_synchronous():
    fam = family()
    assert fam.variant_names == ["pageable", "pinned", "mapped", "managed_prefetch", "streamed", "torch"]
    for v in fam.variants:
        assert launch_plan.host_synchronous(v), v.name
        assert transfers.memory(v) in transfers.MEMORY
    kinds = {v.name: transfers.memory(v) for v in fam.variants}
    assert kinds == {"pageable": "pageable_host", "pinned": "page_locked", "mapped": "page_locked_mapped",
                     "managed_prefetch": "managed", "streamed": "page_locked", "torch": "page_locked"}
    assert fam.variant("streamed").plan == "chunked_streams" and fam.variant("zero_copy").name == "mapped"
    assert transfers.RATE == "link" and families.host(catalog.load_family("transfers")).module is transfers


def test_other_families_stay_on_the_held_timer():
    for fam in catalog.load_all():
        if fam.name != "transfers":
            assert not any(launch_plan.host_synchronous(v) for v in fam.variants), fam.name


def test_host_synchronous_must_be_a_boolean(tmp_path):
    text = (catalog.kernels_root() / "transfers" / "family.toml").read_text()
    bad = text.replace('memory = "pageable_host", host_synchronous = true',
                       'memory = "pageable_host", host_synchronous = "yes"')
    folder = tmp_path / "transfers"
    folder.mkdir()
    for cu in (catalog.kernels_root() / "transfers").glob("*.cu"):
        (folder / cu.name).write_text(cu.read_text())
    (folder / "family.toml").write_text(bad)
    with pytest.raises(InputError, match="host_synchronous must be true or false"):
        catalog.parse_manifest(folder / "family.toml")


def test_unknown_memory_kind_is_refused():
    v = catalog.Variant(name="x", technique="t", options={"memory": "pinnned"})
    with pytest.raises(InputError, match="options.memory is 'pinnned'"):
        transfers.memory(v)


def test_host_arrays_are_pageable_page_aligned_and_alone_on_their_pages():
    inputs = transfers.make_inputs({"n": 4097}, seed=1)
    out = transfers.make_output({"n": 4097})
    for array in (*inputs.values(), out):
        assert isinstance(array, np.ndarray) and array.dtype == np.float32 and array.shape == (4097,)
        assert array.ctypes.data % mmap.PAGESIZE == 0
    assert np.isnan(out).all()
    assert np.abs(inputs["a"]).max() <= 1.0 and np.abs(inputs["a"]).min() > 0.0  # random, not zeros
    assert not np.array_equal(inputs["a"], transfers.make_inputs({"n": 4097}, seed=2)["a"])


def test_reference_is_the_float32_sum_and_the_check_is_exact():
    inputs = transfers.make_inputs({"n": 1000}, seed=3)
    ref = transfers.reference(inputs, {"n": 1000})
    assert ref.dtype == np.float64
    assert np.array_equal(ref, (inputs["a"] + inputs["b"]).astype(np.float64))
    assert transfers.tolerance(None, {"n": 1000}) == 0.0
    # one float32 ulp off in one element is already wrong
    from gpuprof.measure.check import scaled_error

    out = (inputs["a"] + inputs["b"]).astype(np.float32)
    assert scaled_error(out, ref) == (0.0, 0)
    out[500] = np.nextafter(out[500], np.float32(np.inf))
    assert scaled_error(out, ref)[0] > 0.0


def test_changed_inputs_works_on_host_arrays():
    from gpuprof.measure.check import changed_inputs, snapshot

    inputs = transfers.make_inputs({"n": 64}, seed=4)
    pristine = snapshot(inputs)
    assert changed_inputs(inputs, pristine) == []
    inputs["b"][3] = 7.0
    assert changed_inputs(inputs, pristine) == ["b"]


@pytest.mark.parametrize(("n", "chunks"), [(1, 16), (15, 16), (16, 16), (4097, 16), (1000003, 7), (67108864, 16)])
def test_chunks_tile_the_array_exactly(n, chunks):
    bounds = transfers.chunk_bounds(n, chunks)
    assert bounds[0][0] == 0 and bounds[-1][1] == n
    assert all(hi > lo for lo, hi in bounds)
    assert all(a[1] == b[0] for a, b in itertools.pairwise(bounds))
    assert len(bounds) == min(n, chunks)
    sizes = [hi - lo for lo, hi in bounds]
    assert max(sizes) - min(sizes) <= 1


def test_overlap_figure():
    # serial 15 ms, streamed 10.5 ms; symmetric link: H2D 2/3 of the copy time, so 1/3 is hideable
    figure = transfers.overlap(15e-3, 10.5e-3, 2.0, 1.0)
    assert figure["hidden"] == pytest.approx(0.3)
    assert figure["possible"] == pytest.approx(1 / 3)
    assert figure["of_possible"] == pytest.approx(0.9)
    assert transfers.overlap(15e-3, 15e-3, 2.0, 1.0)["hidden"] == 0.0


def _row(variant: str, median_s: float, status: str = OK, n: int = 1 << 26) -> Row:
    timing_ = Timing(mode="cold", samples_s=[median_s] * 3, stop_reason="converged",
                     summary=SimpleNamespace(median_s=median_s))
    return Row(family="transfers", variant=variant, size={"n": n}, vendor=variant == "torch",
               check=CheckResult(status=status), timing=timing_, bytes=12.0 * n)


def test_notes_name_the_rows_by_manifest_options_not_names():
    fam = family()
    rows = [_row("pageable", 40e-3), _row("pinned", 15e-3), _row("streamed", 10.5e-3), _row("torch", 15e-3)]
    (line,) = transfers.notes(rows, fam, None)
    assert "streamed hides 30% of pinned's one-stream time" in line
    assert "at most 33% can be hidden" in line and "90% of the possible" in line
    measured = ceilings.Measured(bandwidth_bytes_s=3e12, fp32_flops=None, link_h2d_bytes_s=50e9, link_d2h_bytes_s=25e9)
    (line,) = transfers.notes(rows, fam, measured)
    assert "at most 50% can be hidden" in line and "measured H2D/D2H rates" in line
    assert transfers.notes([_row("pinned", 15e-3), _row("streamed", 10e-3, status="wrong")], fam, None) == []
    assert transfers.notes([_row("pinned", 15e-3)], fam, None) == []


def test_link_ceiling_floor_and_duplex_footnote():
    limits = ceilings.from_model("NVIDIA H100 80GB HBM3", 132, 1980)
    assert limits.link_bytes_s == pytest.approx(63.0e9, rel=1e-3)  # PCIe Gen5 x16, one direction
    assert "PCIe Gen5 x16" in limits.link_source
    assert limits.ceiling("link").value == limits.link_bytes_s
    n = 1 << 26
    row = _row("pinned", 15e-3)
    floor = derive.physical_floor(row, limits, "link")
    assert floor.seconds == pytest.approx(12 * n / (2 * limits.link_bytes_s))
    assert derive.physical_floor(row, limits, "bytes").seconds < floor.seconds  # DRAM floor far lower
    fast = _row("streamed", floor.seconds * 0.5)
    assert derive.impossible_reason(fast, limits, rate_kind="link") is not None
    assert derive.impossible_reason(row, limits, rate_kind="link") is None
    duplex = _row("streamed", 12 * n / limits.link_bytes_s / 1.4)  # above one direction's rate, below two
    figures = derive.figures(duplex, limits, "link")
    assert figures.pct_of_ceiling > 100 and figures.over_ceiling == derive.LINK_DUPLEX
    measured = ceilings.Measured(bandwidth_bytes_s=3e12, fp32_flops=None, link_h2d_bytes_s=54e9, link_d2h_bytes_s=54e9)
    assert measured.ceiling("link", "fp32").value == pytest.approx(54e9)
    assert ceilings.Measured(bandwidth_bytes_s=3e12, fp32_flops=None).ceiling("link", "fp32") is None


# ---- the timer's host-synchronous path, with a fake harness ------------------------------------------

class FakeEvent:
    def __init__(self, log: list, name: str) -> None:
        self.log, self.name = log, name

    def record(self, stream) -> None:
        self.log.append(f"record {self.name}")

    def synchronize(self) -> None:
        self.log.append(f"wait {self.name}")


class FakeHarness:
    def __init__(self) -> None:
        self.log: list[str] = []
        self.stream = SimpleNamespace(synchronize=lambda: self.log.append("sync"))
        self.flush_bytes = 100 << 20
        self.nvml = SimpleNamespace(batch=lambda: SimpleNamespace(reasons=[], throttled=False, sm_clock_mhz=None),
                                    read=lambda: None, available=False)
        self._events = [FakeEvent(self.log, "start"), FakeEvent(self.log, "end")]

    def events(self, count):
        while len(self._events) < count:
            self._events.append(FakeEvent(self.log, f"e{len(self._events)}"))
        return self._events[:count]

    def flush(self):
        self.log.append("flush")

    def hold(self):
        self.log.append("hold")

    def release(self):
        self.log.append("release")

    def probe_clock(self, after=False):
        self.log.append("probe")

    def clock_mhz(self, after=True):
        return 1980.0

    def took_too_long(self):
        return False


@pytest.fixture
def fake_elapsed(monkeypatch):
    monkeypatch.setattr(timing, "_elapsed_s", lambda start, end: 0.015)


def _launch(log):
    def launch(stream):
        log.append("unit")

    launch.untimed_reset = lambda stream: log.append("reset")
    return launch


def test_host_synchronous_samples_never_hold_and_start_from_a_drained_stream(fake_elapsed):
    harness = FakeHarness()
    policy = timing.TimingPolicy(mode="cold", min_samples=3, max_samples=3, max_time_s=1.0)
    result = timing.measure(_launch(harness.log), harness, policy, host_synchronous=True)
    assert result.samples_s == [0.015] * 3 and result.note == timing.HOST_SYNCHRONOUS_NOTE
    assert "hold" not in harness.log and "release" not in harness.log
    sampled = harness.log[harness.log.index("probe"):]
    one = ["reset", "sync", "flush", "sync", "record start", "unit", "record end", "wait end"]
    assert sampled[1:1 + 3 * len(one)] == one * 3
    # every unit, warm-up included, starts after its untimed reset
    units = [i for i, x in enumerate(harness.log) if x == "unit"]
    assert all("reset" in harness.log[max(0, i - 5):i] for i in units)


def test_hot_mode_skips_the_flush(fake_elapsed):
    harness = FakeHarness()
    policy = timing.TimingPolicy(mode="hot", min_samples=2, max_samples=2, max_time_s=1.0)
    launch = lambda stream: harness.log.append("unit")
    timing.measure(launch, harness, policy, host_synchronous=True)
    sampled = harness.log[harness.log.index("probe"):]
    assert "flush" not in sampled and sampled[1:6] == ["sync", "record start", "unit", "record end", "wait end"]


def test_the_held_path_is_unchanged_for_other_variants(fake_elapsed):
    harness = FakeHarness()
    policy = timing.TimingPolicy(mode="cold", min_samples=2, max_samples=2, max_time_s=1.0)
    timing.measure(lambda stream: harness.log.append("unit"), harness, policy)
    assert "hold" in harness.log and harness.log.index("hold") < harness.log.index("release")
    held = harness.log[harness.log.index("hold"):harness.log.index("release")]
    assert held.count("unit") == 2 and "sync" not in held  # the whole batch queued behind the hold


@pytest.mark.parametrize("mode", ["graph", "cupti"])
def test_graph_and_cupti_modes_refuse_a_host_synchronous_unit(mode, fake_elapsed):
    policy = timing.TimingPolicy(mode=mode)
    with pytest.raises(EnvironmentProblem, match="host-synchronous variant cannot be timed"):
        timing.measure(lambda stream: None, FakeHarness(), policy, host_synchronous=True)


def test_an_untimed_reset_needs_the_host_synchronous_path(fake_elapsed):
    with pytest.raises(UsageError, match="must be host-synchronous"):
        timing.measure(_launch([]), FakeHarness(), timing.TimingPolicy(), host_synchronous=False)


def test_time_one_cold_runs_the_reset_first(fake_elapsed):
    harness = FakeHarness()
    timing.time_one_cold(_launch(harness.log), harness)
    assert harness.log[:3] == ["reset", "sync", "flush"]


def test_launch_wrappers_keep_the_untimed_reset(monkeypatch):
    fam = family()
    variant = fam.variant("managed_prefetch")
    compiled = SimpleNamespace(functions={"transfers_managed_prefetch": object()}, function=None)
    monkeypatch.setattr(launch_plan.nvrtc, "compile_variant", lambda v: compiled)
    reset = lambda stream: None

    def plan(variant, functions, inputs, out, size, ctx):
        def launch(stream):
            pass

        launch.untimed_reset = reset
        return launch

    host = FamilyHost(SimpleNamespace(plan=plan))
    launch = launch_plan.make_launch_factory(fam, variant, host)({}, None, {"n": 10})
    assert getattr(launch, UNTIMED_RESET) is reset


def test_course_suite_runs_every_transfers_variant():
    import tomllib

    suite = tomllib.loads((catalog.kernels_root().parent / "suites" / "course.toml").read_text())
    (case,) = [c for c in suite["case"] if c["family"] == "transfers"]
    assert case["variants"] == "all"


def test_module_docstring_defines_overlap():
    doc = textwrap.dedent(transfers.__doc__)
    assert "hidden = (t_serial - t_streamed) / t_serial" in doc and "possible" in doc


def test_managed_prefetch_without_the_driver_is_an_environment_problem():
    import ctypes.util

    from gpuprof.errors import EnvironmentProblem

    try:
        ctypes.CDLL("libcuda.so.1")
        pytest.skip("a CUDA driver is installed here")
    except OSError:
        pass
    with pytest.raises(EnvironmentProblem, match="cuMemPrefetchAsync_v2"):
        transfers._prefetcher(transfers.CU_MEM_LOCATION_TYPE_HOST)
