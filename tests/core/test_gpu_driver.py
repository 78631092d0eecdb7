"""gpu.py's cause of a GPU that cannot be used: no driver at all is not a 'too old driver' (no GPU needed)."""

from __future__ import annotations

import types

import pytest

from gpuprof import gpu
from gpuprof.errors import EnvironmentProblem


class InsufficientDriver(Exception):
    """What CuPy raises on cudaGetDeviceCount both without a driver and with a too-old one."""

    status = 35

    def __init__(self) -> None:
        super().__init__("cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version")


def fake_cupy(driver: int, runtime: int = 13020, error: Exception | None = None) -> types.SimpleNamespace:
    def count() -> int:
        if error is not None:
            raise error
        return 1

    runtime_api = types.SimpleNamespace(getDeviceCount=count, driverGetVersion=lambda: driver,
                                        runtimeGetVersion=lambda: runtime)
    return types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=runtime_api))


@pytest.fixture
def cupy_says(monkeypatch):
    def install(cp, driver_found: bool) -> None:
        monkeypatch.setattr(gpu, "cupy", lambda: cp)
        monkeypatch.setattr(gpu, "nvidia_driver_found", lambda: driver_found)
        gpu.require_gpu.cache_clear()

    yield install
    gpu.require_gpu.cache_clear()


def test_no_driver_at_all_is_not_called_an_insufficient_driver(cupy_says):
    cupy_says(fake_cupy(driver=0, error=InsufficientDriver()), driver_found=False)
    with pytest.raises(EnvironmentProblem) as caught:
        gpu.require_gpu()
    assert caught.value.exit_code == 3
    message = caught.value.message
    assert message.startswith("no NVIDIA driver found on this machine")
    assert "insufficient" not in message.lower() and "update the driver" not in message
    assert "list, build, compare and --import work without one" in message


def test_a_driver_older_than_cupys_runtime_says_both_versions_and_the_fix(cupy_says):
    cupy_says(fake_cupy(driver=12080, runtime=13020, error=InsufficientDriver()), driver_found=True)
    with pytest.raises(EnvironmentProblem, match=r"supports CUDA up to 12\.8, older than the CUDA 13\.2 CuPy was "
                                                 r"built for; update the driver, or .*gpuprof\[cuda12\]"):
        gpu.require_gpu()


def test_other_runtime_errors_keep_their_first_line(cupy_says):
    cupy_says(fake_cupy(driver=13020, error=RuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected\n"
                                                         "more")), driver_found=True)
    with pytest.raises(EnvironmentProblem, match=r"^no CUDA GPU is usable here \(cudaErrorNoDevice: no CUDA-capable "
                                                 r"device is detected\); this command needs one$"):
        gpu.require_gpu()


def test_driver_found_by_its_kernel_module_or_its_library(monkeypatch):
    import ctypes
    import os

    def no_library(name):
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(os.path, "exists", lambda path: path == "/proc/driver/nvidia/version")
    monkeypatch.setattr(ctypes, "CDLL", no_library)
    assert gpu.nvidia_driver_found()
    monkeypatch.setattr(os.path, "exists", lambda path: False)
    assert not gpu.nvidia_driver_found()
    loaded = []
    monkeypatch.setattr(ctypes, "CDLL", loaded.append)  # WSL: the library, no /proc/driver/nvidia
    assert gpu.nvidia_driver_found() and loaded == ["libcuda.so.1"]


def test_suite_gpus_count_is_one_line_not_nvmls_exception(monkeypatch):
    import sys

    from gpuprof.commands.suite_gpus import visible_gpu_count

    class LibraryNotFound(Exception):
        pass

    def no_library() -> None:
        raise LibraryNotFound("NVML Shared Library Not Found")

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setitem(sys.modules, "pynvml", types.SimpleNamespace(nvmlInit=no_library))
    monkeypatch.setattr(gpu, "nvidia_driver_found", lambda: False)
    with pytest.raises(EnvironmentProblem, match=r"^--gpus: no NVIDIA driver found on this machine"):
        visible_gpu_count()


def test_visible_gpu_count_asks_nvml_without_cuda_visible_devices(monkeypatch):
    import sys

    calls = []
    nvml = types.SimpleNamespace(nvmlInit=lambda: calls.append("init"), nvmlDeviceGetCount=lambda: 8,
                                 nvmlShutdown=lambda: calls.append("shutdown"))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    assert gpu.visible_gpu_count() == 8 and calls == ["init", "shutdown"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "5,7")  # what CUDA programs started from here see
    assert gpu.visible_gpu_count() == 2
