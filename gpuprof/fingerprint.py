"""The environment a result was measured in: GPU, driver, toolkit, libraries, clock policy, commit."""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import platform
import re
from functools import cache
from pathlib import Path
from typing import Any

import gpuprof
from gpuprof.errors import EnvironmentProblem
from gpuprof.tools import _proc

CLOCK_POLICY = "unlocked: clocks as found, never changed by gpuprof"


def now_utc() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def environment() -> dict[str, Any]:
    from gpuprof.gpu import cuda_version_text, cupy, device_info

    info = device_info()
    cp = cupy()
    env: dict[str, Any] = {
        "gpu_name": info.name,
        "gpu_uuid": info.uuid,
        "compute_capability": info.compute_capability,
        "sm_count": info.sm_count,
        "l2_bytes": info.l2_bytes,
        "memory_bytes": info.total_memory_bytes,
        "driver_version": nvml_driver_version() or cuda_version_text(info.driver_version),
        "cuda_driver_api": cuda_version_text(info.driver_version),
        "cuda_runtime": cuda_version_text(info.runtime_version),
        "nvrtc": ".".join(map(str, cp.cuda.nvrtc.getVersion())),
        "toolkit_version": nvcc_version(),
        "cupy_version": cp.__version__,
        "torch_version": _torch_version(),
        "libraries": library_versions(cp),
        "clock_policy": CLOCK_POLICY,
        # the board's enforced power limit: a tensor-core run at another limit is capped differently
        "power_limit_w": nvml_power_limit_w(info.uuid),
        "gpuprof_version": gpuprof.__version__,
        "git_commit": git_commit(),
        "python": platform.python_version(),
    }
    return env


def library_versions(cp: Any) -> dict[str, str]:
    """The vendor libraries' versions the vendor rows name in their footnote: CUB as the toolkit's
    nvcc builds it (the `cub` rows), CUTLASS's headers (the `cutlass` row), cuFFT as CuPy loads it;
    only those found."""
    from gpuprof.tools.cutlass_headers import cutlass_version

    found: dict[str, str] = {}
    cub = cub_version()
    if cub:
        found["cub"] = cub
    cutlass = cutlass_version()
    if cutlass:
        found["cutlass"] = cutlass
    try:
        found["cufft"] = str(cp.cuda.cufft.getVersion())
    except Exception:  # noqa: BLE001, S110 - a CuPy without cuFFT: the footnote says less
        pass
    return found


@cache
def cub_version() -> str | None:
    """CUB_VERSION (MMMmmmpp) as the toolkit's nvcc sees it, as 'M.m.p'; None without nvcc. Asked of
    nvcc's own preprocessor, so its include path (a wrapper script, a versioned folder) is its own."""
    from gpuprof.tools.compile_dir import compiler_env, private_folder

    try:
        nvcc = _proc.find_tool("nvcc")
        with private_folder("gpuprof-cub-") as tmp:  # a plain path: nvcc's shell reads the names it gets
            probe = tmp / "version.cu"
            probe.write_text("#include <cub/version.cuh>\ngpuprof_cub_version CUB_VERSION\n")
            done = _proc.run([nvcc, "-E", "-x", "cu", str(probe)], timeout_s=60, cwd=tmp,
                             env=compiler_env(tmp), isolated=True)
    except (EnvironmentProblem, OSError):
        return None
    m = re.search(r"gpuprof_cub_version\s+(?:#[^\n]*\n\s*)*(\d+)", done.stdout)
    if not m:
        return None
    number = int(m.group(1))
    return f"{number // 100000}.{number // 100 % 1000}.{number % 100}"


def nvml_driver_version() -> str | None:
    try:
        import pynvml

        pynvml.nvmlInit()
        version = pynvml.nvmlSystemGetDriverVersion()
        return version.decode() if isinstance(version, bytes) else str(version)
    except Exception:  # noqa: BLE001  # nvidia-ml-py missing or NVML unavailable: fall back to the CUDA driver API
        return None


def nvml_power_limit_w(uuid: str | None) -> float | None:
    """The enforced power limit of the GPU with this UUID, in W (NVML); None where NVML cannot say."""
    try:
        import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByUUID(uuid)
        return round(pynvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1e3, 1)
    except Exception:  # noqa: BLE001  # nvidia-ml-py missing, NVML unavailable, the query unsupported
        return None


@cache
def nvcc_version() -> str | None:
    try:
        done = _proc.run([_proc.find_tool("nvcc"), "--version"], timeout_s=30)
    except EnvironmentProblem:
        return None
    m = re.search(r"release (\d+\.\d+), V([\d.]+)", done.stdout)
    return m.group(2) if m else None


def _torch_version() -> str | None:
    """PyTorch's installed version, read from its metadata: importing torch to ask costs seconds and
    a GiB of host memory in a process that may never use it (the CLI, each `suite --gpus` process)."""
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return None


@cache
def git_commit() -> str | None:
    """The commit of gpuprof's own checkout, when it runs from one."""
    root = Path(__file__).resolve().parent.parent
    if not (root / ".git").exists():
        return None
    try:
        done = _proc.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"], timeout_s=10)
    except EnvironmentProblem:
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None
