"""benchmarks/timing_truth.py's ncu side: kernels summed per launch, all `count` launches kept."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "timing_truth.py"


@pytest.fixture(scope="module")
def truth():
    spec = importlib.util.spec_from_file_location("timing_truth", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cublas_512_two_kernels_per_launch_are_summed(truth):
    # The audit's case: 7 launches of cuBLAS 512^3, each a 5.8 µs and an 11.8 µs kernel. The old
    # code took the median of single kernels (8.8 µs); one launch is their sum, 17.6 µs.
    durations = [5.8e-6, 11.8e-6] * 7
    samples = truth.per_launch(durations, 7)
    assert len(samples) == 7 and samples == pytest.approx([17.6e-6] * 7)


def test_single_kernel_launches_keep_every_sample(truth):
    assert truth.per_launch([1e-3, 1.1e-3, 0.9e-3], 3) == [1e-3, 1.1e-3, 0.9e-3]  # no warm-up dropped


def test_a_kernel_count_that_does_not_split_into_launches_is_an_error(truth):
    with pytest.raises(RuntimeError, match="not a multiple"):
        truth.per_launch([1e-3] * 8, 7)


def test_cases_can_be_chosen_by_name_and_an_unknown_one_is_an_error(truth):
    assert truth.chosen_cases("all") == truth.CASES
    assert truth.chosen_cases("matmul/cublas/512, vecadd/grid/2^20") == [("matmul", "cublas", "512"),
                                                                        ("vecadd", "grid", "2^20")]
    with pytest.raises(SystemExit, match="unknown case"):
        truth.chosen_cases("matmul/cublas/513")
