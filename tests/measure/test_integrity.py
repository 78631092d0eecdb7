"""The integrity guards' decisions on the CPU: numpy stands in for CuPy, Python functions for kernels.

What each fake kernel does mirrors one adversarial kernel in tests/kernels/adversarial/ (the GPU
test runs those): zeroing its inputs, returning early after its first call, caching on its output,
drifting on later calls, running on another stream. Correct kernels (also one whose atomics
reorder a sum from launch to launch) must pass."""

from __future__ import annotations

import dataclasses
import json
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from gpuprof.analysis.ceilings import Ceilings
from gpuprof.commands import run as run_core
from gpuprof.families.interface import FamilyHost
from gpuprof.measure import check, integrity
from gpuprof.results import IMPOSSIBLE, OK, WRONG, CheckResult, size_label

NUMPY_NAMES = ("float64", "float32", "uint8", "isnan", "count_nonzero", "sqrt", "mean", "maximum", "abs",
               "nanmax", "ascontiguousarray", "array_equal", "full", "nan")


class FakeStream:
    def synchronize(self) -> None:
        pass


@pytest.fixture
def fake_cupy(monkeypatch):
    device = types.SimpleNamespace(synchronize=lambda: None)
    fake = types.SimpleNamespace(**{n: getattr(np, n) for n in NUMPY_NAMES},
                                 cuda=types.SimpleNamespace(Device=lambda: device))
    monkeypatch.setattr(check, "cupy", lambda: fake)
    return fake


class VecaddModule:
    """vecadd's host side in numpy: c = a + b."""

    @staticmethod
    def make_inputs(size, seed):
        rng = np.random.default_rng(seed % 2**32)
        return {"a": rng.uniform(-1, 1, size["n"]).astype(np.float32),
                "b": rng.uniform(-1, 1, size["n"]).astype(np.float32)}

    @staticmethod
    def make_output(size):
        return np.full(size["n"], np.nan, dtype=np.float32)

    @staticmethod
    def reference(inputs, size):
        return inputs["a"].astype(np.float64) + inputs["b"].astype(np.float64)

    @staticmethod
    def tolerance(variant, size):
        return 1e-6


SIZES = [{"n": 1}, {"n": 4097}, {"n": 100_000}]


def honest(inputs, out, size):
    return lambda stream: np.add(inputs["a"], inputs["b"], out=out)


def zeroes_inputs(inputs, out, size):
    def launch(stream):
        inputs["a"][:] = 0
        inputs["b"][:] = 0
        out[:] = 0

    return launch


def run_check(launch_for, inplace=False, sizes=SIZES, launches=None, module=VecaddModule):
    return check.check_variant(FamilyHost(module), "v", launch_for, sizes, FakeStream(), inplace, launches)


def time_it(prepared, launch_for, launches=5):
    """What run_variant does around timing: new input values and a poisoned output, then the timed
    launches on the same buffers."""
    check.refresh_inputs(FamilyHost(VecaddModule), prepared)
    launch = launch_for(prepared.inputs, prepared.out, prepared.size)
    for _ in range(launches):
        launch(FakeStream())
    return check.recheck_after_timing(FamilyHost(VecaddModule), prepared, FakeStream())


# ---------------------------------------------------------------- inputs


def test_a_correct_kernel_passes_and_its_timed_output_is_still_right(fake_cupy):
    result, prepared = run_check(honest)
    assert result.status == OK and result.reasons == []
    assert time_it(prepared, honest) == []


def test_a_kernel_that_zeroes_its_inputs_and_writes_zeros_is_wrong(fake_cupy):
    result, _ = run_check(zeroes_inputs)
    assert result.status == WRONG
    assert any("modified its inputs (a, b)" in r for r in result.reasons), result.reasons
    assert result.max_rel_error > 0.5  # the reference came from the untouched copy, not from zeros


def test_an_inplace_family_does_not_hold_the_change_against_it_but_the_reference_is_still_pristine(fake_cupy):
    def writes_then_scribbles(inputs, out, size):
        def launch(stream):
            np.add(inputs["a"], inputs["b"], out=out)
            inputs["a"][:] = 7  # uses its input as scratch, by design of an in-place family

        return launch

    result, _ = run_check(writes_then_scribbles, inplace=True)
    assert result.status == OK, result.reasons
    result, _ = run_check(zeroes_inputs, inplace=True)
    assert result.status == WRONG and not any("modified" in r for r in result.reasons)


def test_a_changed_input_is_seen_bitwise_and_nan_equals_itself(fake_cupy):
    a = np.array([np.nan, 1.0], dtype=np.float32)
    assert check.changed_inputs({"a": a.copy()}, {"a": a}) == []
    b = a.copy()
    b[1] = -1.0
    assert check.changed_inputs({"a": b}, {"a": a}) == ["a"]
    assert check.changed_inputs({"a": a.astype(np.float64)}, {"a": a}) == ["a"]


# ---------------------------------------------------------------- new values in the same buffers


def memo_kernel(inputs, out, size):
    """tests/kernels/adversarial/memo_tiles.cu in numpy: right on its first launch for a pair of
    buffers, then copies what it remembered for those buffers (keyed by identity, as the kernel keys
    by address) instead of computing."""
    remembered: dict[tuple, np.ndarray] = MEMO.setdefault("cache", {})
    key = (id(inputs["a"]), id(inputs["b"]), inputs["a"].shape)  # the shape too, as the kernel keys on M, N, K

    def launch(stream):
        if key in remembered:
            out[...] = remembered[key]
        else:
            np.add(inputs["a"], inputs["b"], out=out)
            remembered[key] = out.copy()

    return launch


MEMO: dict = {}


def test_refreshed_inputs_are_new_values_in_the_same_arrays_and_the_output_is_poisoned(fake_cupy):
    _, prepared = run_check(honest)
    arrays = {name: id(a) for name, a in prepared.inputs.items()}
    before = {name: a.copy() for name, a in prepared.inputs.items()}
    prepared.out[...] = 1.0
    check.refresh_inputs(FamilyHost(VecaddModule), prepared)
    assert {name: id(a) for name, a in prepared.inputs.items()} == arrays  # a cache keyed on them still hits
    assert all(not np.array_equal(before[n], prepared.inputs[n]) for n in before)
    assert all(np.array_equal(prepared.pristine[n], prepared.inputs[n]) for n in before)  # the reference's copy
    assert np.isnan(prepared.out).all()


def test_a_kernel_that_replays_results_for_its_buffers_passes_the_check_but_not_new_values(fake_cupy):
    MEMO.clear()
    result, prepared = run_check(memo_kernel)
    assert result.status == OK  # every check launch of a size saw the same values
    # The values refreshed before timing show it: the timed launches replayed the check's result.
    [timed] = time_it(prepared, memo_kernel)
    assert timed.startswith("result changed while timed: error") and "on new input values in the same buffers" in timed
    # And so do the values refreshed after timing, on their own.
    reasons = check.check_on_new_values(FamilyHost(VecaddModule), prepared, memo_kernel, FakeStream())
    assert len(reasons) == 1 and reasons[0].startswith("wrong on new input values in the same buffers after timing")
    assert "reuse a result computed for earlier inputs" in reasons[0]


def test_what_a_launch_closure_prepares_from_its_inputs_is_made_again_for_new_values(fake_cupy):
    """transpose's copy row copies a prepared in^T; transfers' managed row fills managed buffers from
    the host inputs: both when the closure is made, as untimed set-up."""
    def prepares_once(inputs, out, size):
        ready = inputs["a"] + inputs["b"]
        return lambda stream: np.copyto(out, ready)

    _, prepared = run_check(prepares_once)
    assert time_it(prepared, prepares_once) == []
    assert check.check_on_new_values(FamilyHost(VecaddModule), prepared, prepares_once, FakeStream()) == []


@dataclasses.dataclass
class HostBatch:
    images: np.ndarray


def test_a_dataclass_of_host_arrays_is_refreshed_in_place_with_its_device_twin(fake_cupy):
    class WithHostBatch(VecaddModule):
        @staticmethod
        def make_inputs(size, seed):
            inputs = VecaddModule.make_inputs(size, seed)
            return {**inputs, "host": HostBatch(inputs["a"].copy())}

    def copies_from_host(inputs, out, size):
        return lambda stream: np.add(inputs["host"].images, inputs["b"], out=out)

    _, prepared = run_check(copies_from_host, module=WithHostBatch)
    images = prepared.inputs["host"].images
    check.refresh_inputs(FamilyHost(WithHostBatch), prepared)
    assert prepared.inputs["host"].images is images and np.array_equal(images, prepared.inputs["a"])
    assert check.check_on_new_values(FamilyHost(WithHostBatch), prepared, copies_from_host, FakeStream()) == []


def test_a_correct_kernel_is_right_on_new_values(fake_cupy):
    _, prepared = run_check(honest)
    assert time_it(prepared, honest) == []
    assert check.check_on_new_values(FamilyHost(VecaddModule), prepared, honest, FakeStream()) == []


# ---------------------------------------------------------------- after timing


def counted_kernel(body):
    """A launch factory whose kernel is body(call number from 1, inputs, out); .calls["n"] counts calls."""
    calls = {"n": 0}

    def factory(inputs, out, size):
        def launch(stream):
            calls["n"] += 1
            body(calls["n"], inputs, out)

        return launch

    factory.calls = calls
    return factory


def first_call_only_kernel():
    """Writes its output on its first call only (returns early after)."""
    return counted_kernel(lambda n, inputs, out: np.add(inputs["a"], inputs["b"], out=out) if n == 1 else None)


def test_a_kernel_that_exits_early_after_its_first_call_is_wrong_after_timing(fake_cupy):
    first_call_only = first_call_only_kernel()
    # A family that asks for one launch per size (check_launches = 1): the check alone cannot see it.
    result, prepared = run_check(first_call_only, sizes=[{"n": 100_000}], launches=1)
    assert result.status == OK
    reasons = time_it(prepared, first_call_only)
    assert reasons and reasons[0].startswith("result changed while timed: 100000 of 100000 outputs not written")


def test_a_kernel_that_drifts_on_later_calls_is_wrong_after_timing(fake_cupy):
    calls = {"n": 0}

    def drifts(inputs, out, size):
        def launch(stream):
            calls["n"] += 1
            np.add(inputs["a"], inputs["b"], out=out)
            out[0] += 1e-3 * (calls["n"] - 1)  # right once; then a counter that is never reset

        return launch

    result, prepared = run_check(drifts, sizes=[{"n": 1000}], launches=1)
    assert result.status == OK
    assert time_it(prepared, drifts)[0].startswith("result changed while timed: error")


def test_a_reordered_sum_within_tolerance_is_not_a_change(fake_cupy):
    flip = {"n": 0}

    def reorders(inputs, out, size):
        def launch(stream):
            flip["n"] += 1
            np.add(inputs["a"], inputs["b"], out=out)
            out[:] = np.nextafter(out, np.float32(np.inf) if flip["n"] % 2 else np.float32(-np.inf))  # one ulp

        return launch

    result, prepared = run_check(reorders, sizes=[{"n": 1000}])
    assert result.status == OK
    assert time_it(prepared, reorders) == []


def test_inputs_changed_during_timing_are_named(fake_cupy):
    calls = {"n": 0}

    def zeroes_later(inputs, out, size):
        def launch(stream):
            calls["n"] += 1
            np.add(inputs["a"], inputs["b"], out=out)
            if calls["n"] > 1:
                inputs["b"][:1] = 0

        return launch

    result, prepared = run_check(zeroes_later, sizes=[{"n": 1000}], launches=1)
    assert result.status == OK
    assert "modified its inputs while timed (b)" in time_it(prepared, zeroes_later)


# ---------------------------------------------------------------- several launches per size


class CountingModule(VecaddModule):
    """VecaddModule that counts its float64 references (the expensive part of a check)."""

    references = 0

    @classmethod
    def reference(cls, inputs, size):
        cls.references += 1
        return VecaddModule.reference(inputs, size)


def counted(launch_for):
    """launch_for wrapped so that every launch is counted (per size, in order)."""
    launches = []

    def factory(inputs, out, size):
        launch = launch_for(inputs, out, size)

        def counted_launch(stream):
            launches.append(size["n"])
            launch(stream)

        return counted_launch

    return factory, launches


def test_a_correct_kernel_is_launched_three_times_per_size_against_one_reference(fake_cupy, monkeypatch):
    monkeypatch.setattr(CountingModule, "references", 0)
    factory, launches = counted(honest)
    result, prepared = run_check(factory, module=CountingModule)
    assert check.CHECK_LAUNCHES == 3
    assert result.status == OK and result.reasons == []
    assert launches == [s["n"] for s in SIZES for _ in range(3)]
    assert CountingModule.references == len(SIZES)  # once per size, not once per launch
    assert prepared.size == SIZES[-1] and not np.isnan(prepared.out).any()


def test_a_race_that_shows_on_the_second_launch_is_wrong_and_the_launch_is_named(fake_cupy):
    def stale_once(n, inputs, out):
        np.add(inputs["a"], inputs["b"], out=out)
        if n == 2:
            out[-1] += 0.5  # a look-back that read a stale tile once

    racy = counted_kernel(stale_once)
    calls = racy.calls

    result, _ = run_check(racy, sizes=[{"n": 4097}, {"n": 100_000}])
    assert result.status == WRONG
    assert len(result.reasons) == 1, result.reasons
    assert result.reasons[0].startswith("4097: launch 2 of 3: error "), result.reasons
    assert result.reasons[0].endswith("> tolerance 1e-06")
    assert result.max_rel_error > 0.1  # the worst launch's error is the one recorded
    # A single launch would have passed it: the audit's C5.
    calls["n"] = 0
    assert run_check(racy, sizes=[{"n": 4097}], launches=1)[0].status == OK


def test_only_the_first_failing_launch_of_a_size_gives_a_reason_and_launch_one_keeps_its_wording(fake_cupy):
    def always_off(inputs, out, size):
        def launch(stream):
            np.add(inputs["a"], inputs["b"], out=out)
            out[0] += 1.0

        return launch

    result, _ = run_check(always_off)
    assert result.status == WRONG
    assert [r.split(":")[0] for r in result.reasons] == [size_label(s) for s in SIZES]  # one per size
    assert all("launch" not in r for r in result.reasons)  # launch 1 failed: the old wording


def test_a_kernel_that_writes_only_on_its_first_call_is_wrong_at_the_check(fake_cupy):
    first_call_only = first_call_only_kernel()
    result, _ = run_check(first_call_only, sizes=[{"n": 100_000}])
    assert result.status == WRONG
    assert result.reasons == ["100000: launch 2 of 3: 100000 of 100000 outputs not written (still NaN)"]
    assert first_call_only.calls["n"] == 3


def test_inputs_changed_on_a_later_launch_are_seen_after_the_last(fake_cupy):
    def zero_on_third(n, inputs, out):
        np.add(inputs["a"], inputs["b"], out=out)
        if n == 3:
            inputs["b"][:1] = 0

    zeroes_on_third = counted_kernel(zero_on_third)

    result, _ = run_check(zeroes_on_third, sizes=[{"n": 1000}])
    assert result.status == WRONG
    assert result.reasons == ["1000: modified its inputs (b); the family reads them only"]


def test_an_inplace_familys_inputs_are_restored_in_their_own_arrays_before_each_launch(fake_cupy):
    seen = []

    def overwrites_its_input(inputs, out, size):
        a, b = inputs["a"], inputs["b"]  # held by the closure, as a compiled launch holds pointers

        def launch(stream):
            seen.append((a.copy(), b.copy()))
            np.add(a, b, out=out)
            a[:] = out  # in place by design: a relaunch without a restore would add b twice

        return launch

    result, prepared = run_check(overwrites_its_input, inplace=True, sizes=[{"n": 1000}])
    assert result.status == OK, result.reasons
    assert len(seen) == 3
    for a, b in seen:
        assert np.array_equal(a, prepared.pristine["a"]) and np.array_equal(b, prepared.pristine["b"])
    # Not restored (the family is not in-place): launch 2 reads what launch 1 wrote, and both
    # guards say so.
    seen.clear()
    result, _ = run_check(overwrites_its_input, sizes=[{"n": 1000}])
    assert result.status == WRONG
    assert result.reasons[0].startswith("1000: launch 2 of 3: error ")
    assert "1000: modified its inputs (a); the family reads them only" in result.reasons


def test_the_output_is_poisoned_again_before_each_relaunch(fake_cupy):
    unwritten = []

    def looks_at_its_output(inputs, out, size):
        def launch(stream):
            unwritten.append(bool(np.isnan(out).all()))
            np.add(inputs["a"], inputs["b"], out=out)

        return launch

    assert run_check(looks_at_its_output, sizes=[{"n": 100}])[0].status == OK
    assert unwritten == [True, True, True]


def test_check_at_needs_one_launch_at_least(fake_cupy):
    with pytest.raises(ValueError, match="at least one launch"):
        check.check_at(FamilyHost(VecaddModule), honest, {"n": 10}, FakeStream(), 1e-6, launches=0)


# ---------------------------------------------------------------- the audits' verdicts


def test_off_stream_verdict():
    # Correct: once the end event on the timed stream completes, the device idles (a sync latency).
    assert not integrity.off_stream_verdict([(1e-3, 10e-6), (1e-3, 40e-6), (1e-3, 5e-6)])
    assert not integrity.off_stream_verdict([(5e-6, 30e-6)] * 3)  # tiny kernel, sync latency only
    assert not integrity.off_stream_verdict([(20e-3, 3e-3)] * 3)  # long kernel: the margin grows with it
    # torch.add 2^26 on a side stream (H100): the events saw the host queue it (55-155 µs), then the
    # device worked ~250 µs more.
    assert integrity.off_stream_verdict([(155e-6, 250e-6), (66e-6, 255e-6), (55e-6, 260e-6)])
    # One trial hit an OS hiccup during the sync: not enough on its own.
    assert not integrity.off_stream_verdict([(1e-3, 10e-6), (1e-3, 5e-3), (1e-3, 10e-6)])
    assert not integrity.off_stream_verdict([])


def test_escaped_work_is_what_the_timed_stream_did_not_bracket():
    probe = "gpuprof_clock_probe"
    add = "void at::native::vectorized_elementwise_kernel<4>"
    # The H100 case: torch's add on its own stream ran while the timed stream (141) was held.
    side = [("gpuprof_block_until_released", 141, 0.0, 900.0), (add, 13, 10.0, 275.0),
            (probe, 141, 901.0, 903.0), (probe, 141, 904.0, 906.0)]
    assert integrity.escaped_work(side) == [(add, 13)]
    # ... or after the second marker (queued late, not joined).
    assert integrity.escaped_work([(probe, 7, 0.0, 1.0), (probe, 7, 2.0, 3.0), (add, 9, 2.5, 300.0)]) == [(add, 9)]
    # A chunked pipeline forked from the timed stream and joined back: other streams, inside the span.
    forked = [(probe, 7, 0.0, 1.0), ("Memcpy HtoD (Pinned -> Device)", 20, 1.5, 90.0), ("vecadd", 21, 60.0, 95.0),
              ("Memcpy DtoH (Device -> Pinned)", 22, 95.0, 140.0), (probe, 7, 140.0, 141.0)]
    assert integrity.escaped_work(forked) == []
    # No markers (the profiler missed them): nothing can be said.
    assert integrity.escaped_work([(add, 13, 0.0, 5.0)]) == []


def test_skips_verdict():
    assert not integrity.skips_verdict([1e-3] * 3, [1.01e-3, 0.99e-3, 1e-3])
    assert not integrity.skips_verdict([8e-6] * 3, [3e-6] * 3)  # below the noise floor of one cold launch
    assert integrity.skips_verdict([1e-3] * 3, [4e-6] * 3)  # caches: does nothing on a written output
    assert not integrity.skips_verdict([], [])


def test_skips_when_written_times_poisoned_and_written_launches(monkeypatch):
    state = {"written": False}

    def fake_time_cold(launch, harness, held=True):
        took = 4e-6 if state["written"] else 1e-3  # a caching kernel
        state["written"] = True
        return took

    monkeypatch.setattr(integrity, "_time_cold", fake_time_cold)
    reason = integrity.skips_when_written(None, lambda: state.update(written=False), harness=None)
    assert reason and reason.startswith(integrity.SKIPS_REASON) and "4.0 µs on a written output" in reason

    monkeypatch.setattr(integrity, "_time_cold", lambda launch, harness, held=True: 1e-3)
    assert integrity.skips_when_written(None, lambda: None, harness=None) is None


@pytest.mark.parametrize(("held", "held_seconds", "expected", "calls"), [
    (True, 9e-6, 9e-6, ["held"]),  # device time only: the host's queuing time is not in the span
    (True, None, 60e-6, ["held", "cold"]),  # the launch waited out the hold: timed unheld instead
    (False, 9e-6, 60e-6, ["cold"]),  # host-synchronous: never queued behind a hold
])
def test_the_skips_audit_times_behind_a_hold_unless_it_cannot(monkeypatch, held, held_seconds, expected, calls):
    """On the H100 unheld event spans of a cuBLAS or torch call were 23-105 µs of host queuing
    and differed 2x between a poisoned and a written output, flagging correct vendor rows."""
    seen = []
    monkeypatch.setattr(integrity, "cupy", lambda: types.SimpleNamespace(
        cuda=types.SimpleNamespace(Device=lambda: types.SimpleNamespace(synchronize=lambda: None))))
    monkeypatch.setattr(integrity, "time_one_held", lambda launch, harness: seen.append("held") or held_seconds)
    monkeypatch.setattr(integrity, "time_one_cold", lambda launch, harness: seen.append("cold") or 60e-6)
    harness = types.SimpleNamespace(stream=FakeStream())
    assert integrity._time_cold(lambda stream: None, harness, held) == expected
    assert seen == calls


# ---------------------------------------------------------------- run_variant's decision


@pytest.mark.parametrize(("recheck", "new_values", "skips", "elsewhere", "status", "reason"), [
    ([], [], None, None, OK, None),
    (["result changed while timed: x"], [], None, None, WRONG, "result changed while timed"),
    ([], ["wrong on new input values: x"], None, None, WRONG, "wrong on new input values"),
    ([], [], "does less work when its output already holds a result", None, WRONG, "does less work"),
    ([], [], None, integrity.OFF_STREAM_REASON, IMPOSSIBLE, "another stream"),
    (["result changed while timed: x"], [], None, integrity.OFF_STREAM_REASON, WRONG, "result changed"),
])
def test_audit_timed_launches_sets_the_status(monkeypatch, recheck, new_values, skips, elsewhere, status, reason):
    monkeypatch.setattr(run_core, "recheck_after_timing", lambda *a: list(recheck))
    monkeypatch.setattr(run_core, "check_on_new_values", lambda *a: list(new_values))
    monkeypatch.setattr(run_core.integrity, "skips_when_written", lambda *a, **k: skips)
    monkeypatch.setattr(run_core.integrity, "off_stream", lambda *a, **k: elsewhere)
    result = CheckResult(status=OK, max_rel_error=0.0, tolerance=1e-6)
    run_core.audit_timed_launches(result, None, None, (None, None), types.SimpleNamespace(stream=FakeStream()), False)
    assert result.status == status
    if reason:
        assert any(reason in r for r in result.reasons)
    else:
        assert result.reasons == []


# ---------------------------------------------------------------- the Python API


def test_api_benchmark_of_off_stream_work_is_impossible_and_has_no_rate(monkeypatch):
    from gpuprof import api
    from gpuprof.analysis.stats import summarize
    from gpuprof.results import Timing

    samples = [3e-6] * 10
    timed = Timing(mode="cold", samples_s=samples, stop_reason="converged", summary=summarize(samples))
    monkeypatch.setattr(api, "cupy", lambda: None)
    monkeypatch.setattr(api.timing, "shared_harness", lambda: None)
    monkeypatch.setattr(api.timing, "measure", lambda launch, harness, policy: timed)
    monkeypatch.setattr(api.integrity, "off_stream", lambda launch, harness: integrity.OFF_STREAM_REASON + ": figures")
    result = api.benchmark(lambda: None, bytes=3.2e9, label="side stream")
    assert result.status == IMPOSSIBLE and not result.ok
    assert result.rate is None and result.median_s == 3e-6  # the time is kept, the rate is not given
    assert result.reasons == (integrity.OFF_STREAM_REASON + ": figures",)
    assert result.to_dict()["status"] == IMPOSSIBLE

    monkeypatch.setattr(api.integrity, "off_stream", lambda launch, harness: None)
    monkeypatch.setattr(api, "device_info", lambda: None)
    datasheet = Ceilings(bandwidth_bytes_s=3.35e12, flops={"fp32": 67e12})
    monkeypatch.setattr(api.device_ceilings, "load", lambda info: datasheet)
    good = api.benchmark(lambda: None, bytes=3.2e3)  # 1 GB/s: far from any floor
    assert good.ok and good.rate == pytest.approx(3.2e3 / 3e-6)
    # The physical floor is the backstop for off-stream work the audit cannot see:
    # 3.2 GB in 3 µs is ~1 PB/s, 300x the datasheet bandwidth.
    floor = api.benchmark(lambda: None, bytes=3.2e9)
    assert floor.status == IMPOSSIBLE and floor.rate is None and "physical floor" in floor.reasons[0]


def test_api_benchmark_verifies_before_and_after_timing_on_new_values(monkeypatch):
    from gpuprof import api
    from gpuprof.analysis.stats import summarize
    from gpuprof.errors import UsageError
    from gpuprof.results import Timing

    samples = [1e-3] * 10
    timed = Timing(mode="cold", samples_s=samples, stop_reason="converged", summary=summarize(samples))
    device = types.SimpleNamespace(synchronize=lambda: None)
    monkeypatch.setattr(api, "cupy", lambda: types.SimpleNamespace(cuda=types.SimpleNamespace(Device=lambda: device)))
    monkeypatch.setattr(check, "cupy", lambda: types.SimpleNamespace(cuda=types.SimpleNamespace(Device=lambda: device)))
    monkeypatch.setattr(api.timing, "shared_harness", lambda: types.SimpleNamespace(stream=FakeStream()))
    monkeypatch.setattr(api, "on_stream", lambda fn: lambda stream: fn())
    monkeypatch.setattr(api.timing, "measure", lambda launch, harness, policy: [launch(0) for _ in range(3)] and timed)
    monkeypatch.setattr(api.integrity, "off_stream", lambda launch, harness: None)
    x, y = np.arange(4.0), np.full(4, np.nan)
    seen: list[str] = []

    def refresh():
        seen.append("refresh")
        x[...] = x + 10

    def verify():
        seen.append("verify")
        assert np.array_equal(y, 2 * x), "y is not 2x"

    def memo():  # right once, then replays its first result
        seen.append("fn")
        if np.isnan(y).all():
            y[...] = 2 * x

    result = api.benchmark(memo, refresh=refresh, verify=verify)
    assert result.status == WRONG and result.rate is None
    # The values refreshed before timing already show it: the timed launches replayed the first result.
    assert result.reasons[0].startswith("verify failed after the last timed launch: y is not 2x")
    assert seen[:4] == ["fn", "verify", "refresh", "fn"]  # checked once, then new values before timing
    y[...] = np.nan
    assert api.benchmark(lambda: y.__setitem__(..., 2 * x), refresh=refresh, verify=verify).ok
    wrong = api.benchmark(lambda: y.__setitem__(..., 3 * x), refresh=refresh, verify=verify)
    assert wrong.status == WRONG and wrong.reasons[0].startswith("verify failed on the first launch")
    assert wrong.timing.summary is None  # not timed
    with pytest.raises(UsageError, match="needs verify"):
        api.benchmark(lambda: None, refresh=refresh)


# ---------------------------------------------------------------- the manifest's in-place key


def test_inplace_is_a_family_level_manifest_key(tmp_path):
    from gpuprof.errors import InputError
    from gpuprof.variants import catalog

    source = (catalog.kernels_root() / "vecadd" / "family.toml").read_text()
    folder = tmp_path / "vecadd"
    folder.mkdir()
    for cu in (catalog.kernels_root() / "vecadd").iterdir():
        (folder / cu.name).write_bytes(cu.read_bytes())
    assert catalog.parse_manifest(folder / "family.toml").inplace is False  # none of today's families is
    (folder / "family.toml").write_text("inplace = true\n" + source)
    assert catalog.parse_manifest(folder / "family.toml").inplace is True
    (folder / "family.toml").write_text('inplace = "yes"\n' + source)
    with pytest.raises(InputError, match="'inplace' must be true or false"):
        catalog.parse_manifest(folder / "family.toml")
    assert not any(f.inplace for f in catalog.load_all())



def copy_of_vecadd(tmp_path):
    from gpuprof.variants import catalog

    folder = tmp_path / "vecadd"
    folder.mkdir()
    for file in (catalog.kernels_root() / "vecadd").iterdir():
        (folder / file.name).write_bytes(file.read_bytes())
    return folder / "family.toml"


def test_check_launches_is_a_family_level_manifest_key(tmp_path):
    from gpuprof.errors import InputError
    from gpuprof.variants import catalog

    manifest = copy_of_vecadd(tmp_path)
    source = manifest.read_text()
    assert catalog.parse_manifest(manifest).check_launches is None  # the check's own number
    manifest.write_text("check_launches = 1\n" + source)
    assert catalog.parse_manifest(manifest).check_launches == 1
    for bad in ("0", "-2", "2.5", '"3"', "true"):
        manifest.write_text(f"check_launches = {bad}\n" + source)
        with pytest.raises(InputError, match=r"'check_launches' is .*; it must be a whole number of at least 1") as err:
            catalog.parse_manifest(manifest)
        assert "\n" not in err.value.message
    assert all(f.check_launches is None for f in catalog.load_all())  # no family needs fewer today


def fake_run_core(monkeypatch, factory, cuda_error: type[BaseException] = RuntimeError) -> None:
    """run_core.run_variant without a GPU: NumPy for CuPy (with the fake_cupy fixture), a fake
    stream, vecadd's host module, and `factory` as every variant's launch factory; CuPy's CUDA
    errors are `cuda_error`."""
    from gpuprof import families

    cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(CUDARuntimeError=cuda_error),
                                 driver=types.SimpleNamespace(CUDADriverError=cuda_error))
    monkeypatch.setattr(run_core, "cupy", lambda: types.SimpleNamespace(
        cuda=cuda, get_default_memory_pool=lambda: types.SimpleNamespace(free_all_blocks=lambda: None)))
    monkeypatch.setattr(run_core.timing, "shared_harness", lambda: types.SimpleNamespace(stream=FakeStream()))
    monkeypatch.setattr(run_core, "make_launch_factory", lambda family, variant, host: factory)
    monkeypatch.setattr(families, "host", lambda name: FamilyHost(types.SimpleNamespace(
        **{k: getattr(VecaddModule, k) for k in ("make_inputs", "make_output", "reference", "tolerance")},
        flop=lambda size: 0, bytes_moved=lambda size: 12 * size["n"])))


def test_run_variant_passes_the_manifests_check_launches_down(tmp_path, fake_cupy, monkeypatch):
    from gpuprof.variants import catalog

    manifest = copy_of_vecadd(tmp_path)
    manifest.write_text("check_launches = 1\n" + manifest.read_text())
    family = catalog.parse_manifest(manifest)
    factory, launches = counted(honest)
    fake_run_core(monkeypatch, factory)
    family = dataclasses.replace(family, check_sizes=({"n": 7}, {"n": 4097}))
    row = run_core.run_variant(family, family.variant("grid"), {"n": 1000}, None, check_only=True,
                               emit=lambda step: None)
    assert row.check.status == OK, row.check.reasons
    assert launches == [7, 4097, 1000]  # one launch per size, as the manifest asked
    launches.clear()
    row = run_core.run_variant(dataclasses.replace(family, check_launches=None), family.variant("grid"), {"n": 1000},
                               None, check_only=True, emit=lambda step: None)
    assert launches == [7] * 3 + [4097] * 3 + [1000] * 3


# ---------------------------------------------------------------- the CUPTI window


class _FakeProfile:
    """torch.profiler.profile that 'records' the trace events it was given."""

    def __init__(self, events):
        self.events = events

    def __call__(self, activities):
        return self

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def export_chrome_trace(self, path):
        Path(path).write_text(json.dumps({"traceEvents": self.events}), encoding="utf-8")


def _fake_torch(monkeypatch, events):
    torch = types.SimpleNamespace(cuda=types.SimpleNamespace(is_available=lambda: True))
    profiler = types.SimpleNamespace(ProfilerActivity=types.SimpleNamespace(CUDA="cuda"), profile=_FakeProfile(events))
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setitem(sys.modules, "torch.profiler", profiler)
    monkeypatch.setattr(integrity, "cupy", lambda: types.SimpleNamespace(
        cuda=types.SimpleNamespace(Device=lambda: types.SimpleNamespace(synchronize=lambda: None))))


def _window_harness(timeouts):
    """timeouts: what took_too_long answers after each window, in turn."""
    calls = []
    answers = iter(timeouts)
    harness = types.SimpleNamespace(
        stream=FakeStream(), hold=lambda: calls.append("hold"), release=lambda: calls.append("release"),
        probe_clock=lambda after=False: calls.append("probe"), took_too_long=lambda: next(answers))
    return harness, calls


WINDOW = ["hold", "probe", "launch", "probe", "release"]
RECORDS = [("gpuprof_clock_probe", 13, 10.0, 11.0), ("add_kernel", 14, 5.0, 6.0),
           ("gpuprof_clock_probe", 13, 20.0, 21.0)]


@pytest.mark.parametrize(("timeouts", "expected", "windows"), [
    ([False], RECORDS, 1),
    ([True, False], RECORDS, 2),  # the host was held up once (CUPTI's first enabling): tried again
    ([True, True], None, 2),  # twice: no verdict, the timing audit decides
])
def test_the_cupti_window_is_entered_warm_and_trusted_only_if_the_hold_held(monkeypatch, timeouts, expected, windows):
    events = [{"cat": "kernel", "name": name, "args": {"stream": stream}, "ts": start, "dur": end - start}
              for name, stream, start, end in RECORDS]
    events.append({"cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 1.0, "dur": 1.0})  # not GPU work
    _fake_torch(monkeypatch, events)
    monkeypatch.setattr(integrity, "_profiler_started", False)
    harness, calls = _window_harness(timeouts)
    assert integrity._cupti_activities(lambda stream: calls.append("launch"), harness) == expected
    # CUPTI is first enabled (it waits for the device) before any hold, never inside one
    assert calls == ["probe"] + WINDOW * windows
    assert integrity._profiler_started
    calls.clear()
    harness.took_too_long = lambda: False
    integrity._cupti_activities(lambda stream: calls.append("launch"), harness)
    assert calls == WINDOW  # enabled once per process


def test_off_stream_warms_the_launch_before_any_trial(monkeypatch):
    """A first call loads its modules (lazily, in PyTorch): timed, it inflated the event span until
    the side-stream work it hid fell under the ratio (H100). One untimed call comes first."""
    calls = []
    monkeypatch.setattr(integrity, "cupy", lambda: types.SimpleNamespace(
        cuda=types.SimpleNamespace(Device=lambda: types.SimpleNamespace(synchronize=lambda: calls.append("sync")))))
    monkeypatch.setattr(integrity, "_timed_then_idle", lambda launch, harness: calls.append("trial") or (1e-4, 0.0))
    harness = types.SimpleNamespace(stream=FakeStream())
    assert integrity.off_stream(lambda stream: calls.append("launch"), harness, cupti=False) is None
    assert calls == ["launch", "sync", "trial", "trial", "trial"]


def test_the_torch_profilers_schedule_advice_is_silenced_and_other_warnings_are_not():
    import warnings

    from gpuprof.measure.timing import quiet_torch_profiler

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with quiet_torch_profiler():
            # torch 2.11's words, from profiler.py's _warn_once, seen above every run table on the H100
            warnings.warn("Warning: Profiler clears events at the end of each cycle.Only events from the current "
                          "cycle will be reported.", UserWarning, stacklevel=1)
            warnings.warn("something else", UserWarning, stacklevel=1)
    assert [str(w.message) for w in seen] == ["something else"]
