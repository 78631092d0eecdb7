"""The one place that opens the GPU: imports CuPy, picks the device, reads its properties; and counts
the GPUs a child process may use."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from types import ModuleType
from typing import Any

from gpuprof.errors import EnvironmentProblem


def cupy() -> ModuleType:
    """CuPy, or an EnvironmentProblem that says how to install it."""
    try:
        import cupy as cp
    except ImportError:
        raise EnvironmentProblem(
            "CuPy is not installed; pip install 'gpuprof[cuda13]' (CUDA 13 driver) or 'gpuprof[cuda12]'"
        ) from None
    except OSError as exc:  # CuPy makes its cache under $HOME at import: HOME=/dev/null
        where = f" ({exc.filename})" if exc.filename else ""
        raise EnvironmentProblem(f"CuPy could not start: {exc.strerror or exc}{where}; is $HOME a writable "
                                 "folder? (or set CUPY_CACHE_DIR)") from None
    return cp


@cache
def require_gpu() -> int:
    """Index of the CUDA device to use; EnvironmentProblem (exit 3) when there is none."""
    cp = cupy()
    try:
        count = cp.cuda.runtime.getDeviceCount()
    except Exception as exc:  # noqa: BLE001  (CUDARuntimeError: no driver, insufficient driver, no device)
        raise EnvironmentProblem(why_no_gpu(exc)) from None
    if count < 1:
        raise EnvironmentProblem("no CUDA GPU found; this command needs one")
    return 0


def visible_gpu_count() -> int:
    """How many GPUs a CUDA program started from this process may use, counted without CuPy and
    without initialising CUDA here (sanitize's parent only sizes its pool of children): the entries of
    CUDA_VISIBLE_DEVICES when it is set, else NVML's device count, in nvidia-smi's numbering (the one
    `suite --gpus` gives its GPU processes). EnvironmentProblem when there is no driver to ask."""
    import os

    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return len([d for d in visible.split(",") if d.strip() and not d.strip().startswith("-")])
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            return int(pynvml.nvmlDeviceGetCount())
        finally:
            pynvml.nvmlShutdown()
    except Exception as exc:  # noqa: BLE001  (NVMLError_LibraryNotFound, _DriverNotLoaded, ...)
        raise EnvironmentProblem(why_no_gpu(exc)) from None


CPU_ONLY_HINT = "list, build, compare and --import work without one"
_INSUFFICIENT_DRIVER = 35  # cudaErrorInsufficientDriver


def why_no_gpu(exc: BaseException) -> str:
    """The cause in the user's words. The CUDA runtime says 'insufficient driver' both when the driver is
    too old and when there is no driver at all; only the first is worth updating a driver for."""
    if not nvidia_driver_found():
        return ("no NVIDIA driver found on this machine (libcuda.so.1 cannot be loaded and there is no "
                f"/proc/driver/nvidia); this command needs an NVIDIA GPU with its driver ({CPU_ONLY_HINT})")
    if getattr(exc, "status", None) == _INSUFFICIENT_DRIVER or "InsufficientDriver" in str(exc):
        driver, runtime = _cuda_versions()
        if driver and runtime:
            return (f"the NVIDIA driver supports CUDA up to {cuda_version_text(driver)}, older than the CUDA "
                    f"{cuda_version_text(runtime)} CuPy was built for; update the driver, or install the CuPy "
                    f"for CUDA {driver // 1000} (pip install 'gpuprof[cuda{driver // 1000}]')")
        return "the NVIDIA driver is older than the CUDA runtime CuPy was built for; update the driver"
    return f"no CUDA GPU is usable here ({_short(exc)}); this command needs one"


def nvidia_driver_found() -> bool:
    """Whether an NVIDIA driver is installed: its kernel module (Linux) or its user-space library
    (also WSL, where /proc/driver/nvidia does not exist)."""
    import ctypes
    import os

    if os.path.exists("/proc/driver/nvidia/version"):
        return True
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True


def _cuda_versions() -> tuple[int, int]:
    """(the driver's CUDA version, CuPy's runtime version); 0 where it cannot be read."""
    rt = cupy().cuda.runtime
    versions = []
    for read in (rt.driverGetVersion, rt.runtimeGetVersion):
        try:
            versions.append(int(read()))
        except Exception:  # noqa: BLE001  (a runtime that cannot even say its version)
            versions.append(0)
    return versions[0], versions[1]


def _short(exc: BaseException) -> str:
    return str(exc).split("\n")[0]


@dataclass(frozen=True)
class DeviceInfo:
    """What the timing engine and the ceilings need to know about the device."""

    index: int
    name: str
    uuid: str
    compute_capability: str
    arch: str  # "sm_90"
    sm_count: int
    l2_bytes: int
    total_memory_bytes: int
    memory_bus_width_bits: int
    memory_clock_khz: int
    sm_clock_khz: int
    driver_version: int
    runtime_version: int
    attributes: dict[str, Any]

    @property
    def theoretical_bandwidth_bytes_s(self) -> float:
        # DDR: two transfers per memory clock over the whole bus.
        return 2.0 * self.memory_clock_khz * 1e3 * self.memory_bus_width_bits / 8


# cudaDeviceAttr names read for devicequery (everything deviceQuery prints, and more).
_ATTRIBUTES = [
    "MultiProcessorCount", "ClockRate", "MemoryClockRate", "GlobalMemoryBusWidth", "L2CacheSize",
    "MaxPersistingL2CacheSize", "TotalConstantMemory", "MaxSharedMemoryPerBlock",
    "MaxSharedMemoryPerBlockOptin", "MaxSharedMemoryPerMultiprocessor", "ReservedSharedMemoryPerBlock",
    "MaxRegistersPerBlock", "MaxRegistersPerMultiprocessor", "WarpSize", "MaxThreadsPerMultiProcessor",
    "MaxThreadsPerBlock", "MaxBlocksPerMultiprocessor", "MaxBlockDimX", "MaxBlockDimY", "MaxBlockDimZ",
    "MaxGridDimX", "MaxGridDimY", "MaxGridDimZ", "MaxPitch", "TextureAlignment", "AsyncEngineCount",
    "ConcurrentKernels", "KernelExecTimeout", "Integrated", "CanMapHostMemory", "EccEnabled",
    "UnifiedAddressing", "ManagedMemory", "ConcurrentManagedAccess", "ComputePreemptionSupported",
    "CooperativeLaunch", "PciDomainId", "PciBusId", "PciDeviceId", "ComputeMode", "MemoryPoolsSupported",
    "HostNativeAtomicSupported", "PageableMemoryAccess", "StreamPrioritiesSupported",
    "GlobalL1CacheSupported", "LocalL1CacheSupported", "SingleToDoublePrecisionPerfRatio",
]


def read_attributes(device: int) -> dict[str, Any]:
    rt = cupy().cuda.runtime
    out: dict[str, Any] = {}
    for name in _ATTRIBUTES:
        attr = getattr(rt, f"cudaDevAttr{name}", None)
        if attr is None:
            continue
        try:
            out[name] = rt.deviceGetAttribute(attr, device)
        except Exception:  # noqa: BLE001  (an attribute this driver or runtime does not support)
            out[name] = None
    return out


@cache
def device_info() -> DeviceInfo:
    device = require_gpu()
    cp = cupy()
    rt = cp.cuda.runtime
    props = rt.getDeviceProperties(device)
    attrs = read_attributes(device)
    major, minor = props["major"], props["minor"]
    uuid = props.get("uuid", b"")
    uuid_text = _format_uuid(uuid) if isinstance(uuid, (bytes, bytearray)) else str(uuid)
    return DeviceInfo(
        index=device,
        name=props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"]),
        uuid=uuid_text,
        compute_capability=f"{major}.{minor}",
        arch=f"sm_{major}{minor}",
        sm_count=int(attrs.get("MultiProcessorCount") or props["multiProcessorCount"]),
        l2_bytes=int(attrs.get("L2CacheSize") or props["l2CacheSize"]),
        total_memory_bytes=int(props["totalGlobalMem"]),
        memory_bus_width_bits=int(attrs.get("GlobalMemoryBusWidth") or 0),
        memory_clock_khz=int(attrs.get("MemoryClockRate") or 0),
        sm_clock_khz=int(attrs.get("ClockRate") or 0),
        driver_version=rt.driverGetVersion(),
        runtime_version=rt.runtimeGetVersion(),
        attributes=attrs,
    )


def _format_uuid(raw: bytes | bytearray) -> str:
    h = bytes(raw[:16]).hex()
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def cuda_version_text(version: int) -> str:
    """12080 -> '12.8'."""
    return f"{version // 1000}.{(version % 1000) // 10}"
