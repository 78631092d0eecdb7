"""The environment fingerprint reads library versions without importing the libraries."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys

import pytest


def test_the_torch_version_comes_from_its_metadata_without_importing_torch():
    try:
        installed = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("PyTorch is not installed here")
    probe = ("import sys; from gpuprof import fingerprint; "
             "print(fingerprint._torch_version()); print('torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.split() == [installed, "False"]


def test_the_power_limit_comes_from_nvml_by_uuid_in_watts(monkeypatch):
    """NVML gives milliwatts for the board's enforced limit; without NVML (this CPU machine, or a
    failing query) the record is None, never an error."""
    import types

    from gpuprof import fingerprint

    asked = []
    fake = types.SimpleNamespace(nvmlInit=lambda: None,
                                 nvmlDeviceGetHandleByUUID=lambda uuid: asked.append(uuid) or "handle",
                                 nvmlDeviceGetEnforcedPowerLimit=lambda handle: 700000)
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    assert fingerprint.nvml_power_limit_w("GPU-1234") == 700.0 and asked == ["GPU-1234"]

    def broken():
        raise RuntimeError("NVML Shared Library Not Found")

    monkeypatch.setitem(sys.modules, "pynvml", types.SimpleNamespace(nvmlInit=broken))
    assert fingerprint.nvml_power_limit_w("GPU-1234") is None
