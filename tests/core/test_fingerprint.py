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
