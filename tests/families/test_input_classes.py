"""Needle inputs (issue 39): a sum of a few whole numbers among zeros is exact in FP32 whatever the
order, while an estimate — part of the input skipped, sampled or cut short, then scaled — misses
the reduce tolerance by orders of magnitude, at the benchmark size as at the check sizes."""

from __future__ import annotations

import numpy as np
import pytest

from gpuprof import families
from gpuprof.families import input_classes, reduce
from gpuprof.measure.check import scaled_error
from gpuprof.variants import catalog
from gpuprof.variants.catalog import Variant

N = 1 << 22  # large enough for 4096-float4 strides; small enough for CPU tests


def needles(n: int = N, seed: int = 7) -> np.ndarray:
    inputs = {"in": np.random.default_rng(seed).uniform(0, 1, n).astype(np.float32)}
    input_classes.apply("needles", inputs, seed)
    return inputs["in"]


def test_needles_are_few_whole_numbers_among_zeros():
    x = needles()
    nonzero = x[x != 0]
    assert len(nonzero) == input_classes.NEEDLES
    assert np.all(nonzero == np.round(nonzero))
    assert nonzero.min() >= input_classes.NEEDLE_LOW and nonzero.max() < input_classes.NEEDLE_HIGH


def test_their_sum_and_prefix_sums_are_exact_in_fp32_in_any_order():
    x = needles()
    exact = float(np.sum(x.astype(np.float64)))
    assert float(np.sum(x, dtype=np.float32)) == exact  # pairwise
    assert float(np.cumsum(x, dtype=np.float32)[-1]) == exact  # serial chain
    assert float(np.sum(x.reshape(-1, 1024), axis=1, dtype=np.float32).sum(dtype=np.float32)) == exact  # blocked


def test_positions_change_with_the_seed_and_cover_every_offset_in_a_cache_line():
    offsets = set()
    for seed in range(8):
        offsets |= set((np.flatnonzero(needles(seed=seed)) % 32).tolist())
    assert offsets == set(range(32))
    assert not np.array_equal(np.flatnonzero(needles(seed=1)), np.flatnonzero(needles(seed=2)))


def test_integer_and_small_inputs_are_left_or_filled_as_they_can():
    inputs = {"labels": np.arange(10, dtype=np.int32), "tiny": np.ones(3, np.float32)}
    input_classes.apply("needles", inputs, 1)
    assert np.array_equal(inputs["labels"], np.arange(10))
    assert np.all(inputs["tiny"] >= input_classes.NEEDLE_LOW)  # fewer elements than needles: all needles
    with pytest.raises(ValueError, match="unknown input class"):
        input_classes.apply("sparkles", inputs, 1)


def _estimates(x: np.ndarray) -> dict[str, float]:
    x4 = x.reshape(-1, 4).sum(axis=1, dtype=np.float64)  # float4 chunks, as the kernels read them
    idx = np.arange(len(x4))
    half = len(x4) // 2
    return {
        "skip 1 float4 in 16, scale 16/15": float(x4[idx % 16 != 15].sum() * 16 / 15),
        "1 float4 in 8, times 8": float(x4[::8].sum() * 8),
        "first half, times 2": float(x4[:half].sum() * 2),
    }


STUDENT = Variant(name="mine", technique="t", user=True)  # no error_model: the serial bound


@pytest.mark.parametrize("seed", range(5))
def test_every_estimator_misses_the_reduce_tolerance_on_needles_but_not_on_uniform_inputs(seed):
    variant = catalog.load_family("reduce").variant("vectorized_atomic")
    family_tolerance = reduce.tolerance(variant, {"n": 1 << 28})  # the benchmark size's, the loosest
    tolerance = input_classes.tolerance("needles", family_tolerance, variant.precision)
    assert tolerance == input_classes.EXACT_TOLERANCE
    x = needles(seed=seed)
    ref = np.array([np.sum(x.astype(np.float64))])
    for name, estimate in _estimates(x).items():
        err, _ = scaled_error(np.array([estimate], np.float32), ref)
        assert err > 10 * tolerance, (name, err, tolerance)
    uniform = np.random.default_rng(seed).uniform(0, 1, N).astype(np.float32)
    ref = np.array([np.sum(uniform.astype(np.float64))])
    skipped = _estimates(uniform)["skip 1 float4 in 16, scale 16/15"]
    serial = reduce.tolerance(STUDENT, {"n": 1 << 28})  # a variant that claims no order
    assert scaled_error(np.array([skipped], np.float32), ref)[0] < serial  # what random inputs let through


def test_the_blocked_order_leaves_an_estimate_less_room_on_uniform_inputs():
    """Held to its declared order ("blocked"), the same estimate fails on most uniform draws, where the
    serial bound let every one through; the needles above fail it on every draw."""
    blocked = reduce.tolerance(catalog.load_family("reduce").variant("vectorized_atomic"), {"n": 1 << 28})
    caught = 0
    for seed in range(5):
        uniform = np.random.default_rng(seed).uniform(0, 1, N).astype(np.float32)
        ref = np.array([np.sum(uniform.astype(np.float64))])
        skipped = _estimates(uniform)["skip 1 float4 in 16, scale 16/15"]
        caught += scaled_error(np.array([skipped], np.float32), ref)[0] > blocked
    assert caught >= 3


def test_a_narrower_precision_keeps_the_family_tolerance():
    assert input_classes.tolerance("needles", 1e-3, "fp16") == 1e-3
    assert input_classes.tolerance("needles", 1e-9, "fp32") == 1e-9


def test_the_statistic_families_declare_their_classes():
    declared = {name: families.host(catalog.load_family(name)) for name in ("reduce", "scan", "softmax", "fused",
                                                                              "vecadd")}
    assert declared["reduce"].INPUT_CLASSES == ("needles", "alternating", "heavy_tail")
    assert declared["scan"].INPUT_CLASSES == ("needles",)
    assert declared["softmax"].INPUT_CLASSES == ("spikes", "alternating", "constants")
    assert declared["fused"].INPUT_CLASSES == ("spikes", "alternating", "constants")
    assert declared["vecadd"].INPUT_CLASSES == ()
    assert declared["reduce"].EXACT_SUMS and declared["scan"].EXACT_SUMS
    assert not declared["softmax"].EXACT_SUMS and not declared["fused"].EXACT_SUMS


# ---------------------------------------------------------------- what a results file and the footer say


def _softmax_row(check):
    from gpuprof.results import Row

    return Row(family="softmax", variant="naive", size={"rows": 8, "cols": 128}, vendor=False, check=check)


def test_a_row_records_the_classes_it_was_checked_on_and_the_footer_names_them():
    """A course run's JSON shows that the classes ran (only the sizes did before); the terminal says
    so once per table."""
    from gpuprof.errors import InputError
    from gpuprof.families import registry
    from gpuprof.render.tables import RunTable, footer
    from gpuprof.results import CheckResult, Results, from_dict, to_dict

    softmax = registry.resolve("softmax")
    classes = list(families.host(softmax).INPUT_CLASSES)
    assert classes == ["spikes", "alternating", "constants"]
    checked, plain = CheckResult(status="ok", input_classes=classes), CheckResult(status="ok")
    data = to_dict(Results(environment={}, rows=[_softmax_row(checked), _softmax_row(plain)]))
    assert data["rows"][0]["check"]["input_classes"] == classes and "input_classes" not in data["rows"][1]["check"]
    assert from_dict(data).rows[0].check.input_classes == classes
    lines = footer(RunTable(softmax, [_softmax_row(checked)], "naive", None, "cold"), None)
    assert any(line.startswith("input classes: also checked at every size on spikes, alternating, constants")
               for line in lines), lines
    assert not any(line.startswith("input classes") for line in
                   footer(RunTable(softmax, [_softmax_row(plain)], "naive", None, "cold"), None))
    data["rows"][0]["check"]["input_classes"] = "spikes"
    with pytest.raises(InputError, match="input_classes"):
        from_dict(data)
