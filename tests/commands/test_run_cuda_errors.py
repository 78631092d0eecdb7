"""A CUDA error a row raises through PyTorch (torch.AcceleratorError, e.g. a CUDA graph's replay
failing) makes that row FAULT, naming the step it happened in, like one raised through CuPy: it is
never a worker crash that ends the run with a traceback."""

from __future__ import annotations

import dataclasses
import sys
import types

import pytest

from gpuprof.commands import run as run_core
from gpuprof.variants import catalog
from tests.measure.test_integrity import copy_of_vecadd, fake_run_core
from tests.measure.test_integrity import fake_cupy as numpy_for_cupy  # noqa: F401  (a fixture, used by name)


class AcceleratorError(RuntimeError):
    """Stands in for torch.AcceleratorError (torch >= 2.8)."""


class CupyCudaError(Exception):
    pass


def _fake_core(monkeypatch, tmp_path, launch_factory):
    tmp_path.mkdir(parents=True, exist_ok=True)
    family = catalog.parse_manifest(copy_of_vecadd(tmp_path))
    fake_run_core(monkeypatch, launch_factory, cuda_error=CupyCudaError)
    return dataclasses.replace(family, check_sizes=({"n": 7},))


def failing(error: type[BaseException]):
    def factory(inputs, out, size):
        def launch(stream):
            raise error("CUDA error: invalid argument\nSearch for `cudaErrorInvalidValue' ...")
        return launch
    return factory


@pytest.mark.usefixtures("numpy_for_cupy")
def test_a_torch_cuda_error_is_the_rows_fault_with_its_step(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(AcceleratorError=AcceleratorError))
    family = _fake_core(monkeypatch, tmp_path, failing(AcceleratorError))
    steps: list[str] = []
    row = run_core.run_variant(family, family.variant("grid"), {"n": 1000}, None, check_only=True, emit=steps.append)
    assert row.check.status == "fault"
    assert row.check.reasons == ["CUDA error during check: CUDA error: invalid argument"]
    assert steps == ["compile", "check"]


@pytest.mark.usefixtures("numpy_for_cupy")
def test_without_torch_loaded_only_cupys_errors_are_caught_and_others_still_propagate(tmp_path, monkeypatch):
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    family = _fake_core(monkeypatch, tmp_path, failing(CupyCudaError))
    row = run_core.run_variant(family, family.variant("grid"), {"n": 1000}, None, check_only=True,
                               emit=lambda step: None)
    assert row.check.status == "fault" and row.check.reasons[0].startswith("CUDA error during check:")
    family = _fake_core(monkeypatch, tmp_path / "second", failing(ValueError))  # a bug, not a CUDA error: not swallowed
    with pytest.raises(ValueError):
        run_core.run_variant(family, family.variant("grid"), {"n": 1000}, None, check_only=True,
                             emit=lambda step: None)


