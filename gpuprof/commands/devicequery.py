"""`gpuprof devicequery`'s core: deviceQuery's fields, live NVML state, versions, measured ceilings."""

from __future__ import annotations

import math
from typing import Any

from gpuprof import fingerprint
from gpuprof.analysis import ceilings
from gpuprof.gpu import DeviceInfo, cupy, device_info
from gpuprof.measure import device_ceilings


def query() -> dict[str, Any]:
    info = device_info()
    a = info.attributes
    limits = device_ceilings.load(info)
    return {
        "device": {
            "index": info.index,
            "name": info.name,
            "uuid": info.uuid,
            "compute_capability": info.compute_capability,
            "multiprocessors": info.sm_count,
            "total_global_memory_bytes": info.total_memory_bytes,
            "gpu_max_clock_mhz": info.sm_clock_khz / 1e3,
            "memory_clock_mhz": info.memory_clock_khz / 1e3,
            "memory_bus_width_bits": info.memory_bus_width_bits,
            "theoretical_bandwidth_gb_s": info.theoretical_bandwidth_bytes_s / 1e9,
            "l2_cache_bytes": info.l2_bytes,
            "max_persisting_l2_bytes": persisting_l2_bytes(info),
            "total_constant_memory_bytes": a.get("TotalConstantMemory"),
            "shared_memory_per_block_bytes": a.get("MaxSharedMemoryPerBlock"),
            "shared_memory_per_block_optin_bytes": a.get("MaxSharedMemoryPerBlockOptin"),
            "shared_memory_per_sm_bytes": a.get("MaxSharedMemoryPerMultiprocessor"),
            "registers_per_block": a.get("MaxRegistersPerBlock"),
            "registers_per_sm": a.get("MaxRegistersPerMultiprocessor"),
            "warp_size": a.get("WarpSize"),
            "max_threads_per_sm": a.get("MaxThreadsPerMultiProcessor"),
            "max_threads_per_block": a.get("MaxThreadsPerBlock"),
            "max_blocks_per_sm": a.get("MaxBlocksPerMultiprocessor"),
            "max_block_dims": [a.get("MaxBlockDimX"), a.get("MaxBlockDimY"), a.get("MaxBlockDimZ")],
            "max_grid_dims": [a.get("MaxGridDimX"), a.get("MaxGridDimY"), a.get("MaxGridDimZ")],
            "max_pitch_bytes": a.get("MaxPitch"),
            "texture_alignment_bytes": a.get("TextureAlignment"),
            "concurrent_copy_engines": a.get("AsyncEngineCount"),
            "concurrent_kernels": bool(a.get("ConcurrentKernels")),
            "kernel_run_time_limit": bool(a.get("KernelExecTimeout")),
            "integrated": bool(a.get("Integrated")),
            "can_map_host_memory": bool(a.get("CanMapHostMemory")),
            "ecc_enabled": bool(a.get("EccEnabled")),
            "unified_addressing": bool(a.get("UnifiedAddressing")),
            "managed_memory": bool(a.get("ManagedMemory")),
            "concurrent_managed_access": bool(a.get("ConcurrentManagedAccess")),
            "compute_preemption": bool(a.get("ComputePreemptionSupported")),
            "cooperative_launch": bool(a.get("CooperativeLaunch")),
            "compute_mode": a.get("ComputeMode"),
            "pci_domain_bus_device": [a.get("PciDomainId"), a.get("PciBusId"), a.get("PciDeviceId")],
        },
        "versions": {
            "driver": fingerprint.nvml_driver_version(),
            "cuda_driver_api": _version(info.driver_version),
            "cuda_runtime": _version(info.runtime_version),
            "nvrtc": ".".join(map(str, cupy().cuda.nvrtc.getVersion())),
            "toolkit_nvcc": fingerprint.nvcc_version(),
            "cupy": cupy().__version__,
        },
        "live": nvml_state(info),
        "ceilings": {  # what `run` judges each row against: the datasheet, per precision
            "source": limits.source,
            "bandwidth_gb_s": None if limits.bandwidth_bytes_s is None else limits.bandwidth_bytes_s / 1e9,
            "host_link_gb_s": _giga(limits.link_bytes_s),
            **{f"{key}_tflop_s": _tera(value) for key, value in limits.flops.items()},
        },
        "measured_ceilings": _measured_ceilings(limits.measured),
    }


def _measured_ceilings(measured: ceilings.Measured | None) -> dict[str, Any]:
    """cuBLAS and a D2D copy, shown apart as "vs measured"."""
    if measured is None:
        return {"source": "not measured (gpuprof devicequery --measure)"}
    return {
        "source": measured.source,
        "copy_bandwidth_gb_s": measured.bandwidth_bytes_s / 1e9,
        "link_h2d_gb_s": _giga(measured.link_h2d_bytes_s),
        "link_d2h_gb_s": _giga(measured.link_d2h_bytes_s),
        "cublas_fp32_tflop_s": _tera(measured.fp32_flops),
        "cublas_tf32_tflop_s": _tera(measured.tf32_flops),
        "cublas_bf16_tflop_s": _tera(measured.bf16_flops),
    }


# cudaDevAttrMaxPersistingL2CacheSize in driver_types.h; CuPy's runtime module may not export the name.
_ATTR_MAX_PERSISTING_L2 = 108


def persisting_l2_bytes(info: DeviceInfo) -> int | None:
    """The most L2 a program may set aside for persisting accesses (cudaLimitPersistingL2CacheSize's
    ceiling): the attribute by name, else by number, else cudaDeviceProp.persistingL2CacheMaxSize."""
    value = info.attributes.get("MaxPersistingL2CacheSize")
    if value is not None:
        return int(value)
    rt = cupy().cuda.runtime
    try:
        return int(rt.deviceGetAttribute(_ATTR_MAX_PERSISTING_L2, info.index))
    except Exception:  # noqa: BLE001, S110  # any failure means no such attribute here: try the property struct
        pass
    try:
        value = rt.getDeviceProperties(info.index).get("persistingL2CacheMaxSize")
    except Exception:  # noqa: BLE001  # no such property either: the field is unknown, never an error
        return None
    return None if value is None else int(value)


def _version(v: int) -> str:
    return f"{v // 1000}.{(v % 1000) // 10}"


def _giga(v: float | None) -> float | None:
    return None if v is None else v / 1e9


def _tera(v: float | None) -> float | None:
    return None if v is None else v / 1e12


# NVML's clocks_event_reasons bit -> name (nvml.h, nvmlClocksEventReason*).
_THROTTLE_REASONS = {
    0x1: "gpu_idle", 0x2: "applications_clocks_setting", 0x4: "sw_power_cap", 0x8: "hw_slowdown",
    0x10: "sync_boost", 0x20: "sw_thermal_slowdown", 0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown", 0x100: "display_clock_setting",
}


def nvml_state(info: DeviceInfo) -> dict[str, Any]:
    """Live clocks, power, temperature and throttle reasons; {'error': ...} without NVML."""
    try:
        import pynvml
    except ImportError:
        return {"error": "nvidia-ml-py is not installed (pip install nvidia-ml-py)"}
    try:
        pynvml.nvmlInit()
        try:  # by UUID, so CUDA_VISIBLE_DEVICES cannot make NVML describe another GPU
            handle = pynvml.nvmlDeviceGetHandleByUUID(info.uuid)
        except pynvml.NVMLError:
            handle = pynvml.nvmlDeviceGetHandleByIndex(info.index)
        n = pynvml
        state: dict[str, Any] = {
            "sm_clock_mhz": n.nvmlDeviceGetClockInfo(handle, n.NVML_CLOCK_SM),
            "memory_clock_mhz": n.nvmlDeviceGetClockInfo(handle, n.NVML_CLOCK_MEM),
            "max_sm_clock_mhz": n.nvmlDeviceGetMaxClockInfo(handle, n.NVML_CLOCK_SM),
            "max_memory_clock_mhz": n.nvmlDeviceGetMaxClockInfo(handle, n.NVML_CLOCK_MEM),
            "power_w": n.nvmlDeviceGetPowerUsage(handle) / 1e3,
            "power_limit_w": n.nvmlDeviceGetEnforcedPowerLimit(handle) / 1e3,
            "temperature_c": n.nvmlDeviceGetTemperature(handle, n.NVML_TEMPERATURE_GPU),
            "persistence_mode": bool(n.nvmlDeviceGetPersistenceMode(handle)),
        }
        reasons = n.nvmlDeviceGetCurrentClocksEventReasons(handle) if hasattr(
            n, "nvmlDeviceGetCurrentClocksEventReasons") else n.nvmlDeviceGetCurrentClocksThrottleReasons(handle)
        state["throttle_reasons"] = [name for bit, name in _THROTTLE_REASONS.items() if reasons & bit] or ["none"]
        return state
    except Exception as exc:  # noqa: BLE001  # NVML absent or a query unsupported on this GPU: reported, not fatal
        return {"error": f"NVML: {exc}"}


def measure() -> ceilings.Measured:
    """Measure copy bandwidth and FP32/TF32/BF16 cuBLAS throughput; cache them for this GPU. They
    are what cuBLAS and a copy reach, not the hardware: `run` shows them only as "vs measured"."""
    info = device_info()
    cp = cupy()
    n_bytes = min(2**31, info.total_memory_bytes // 8)
    src = cp.full(n_bytes // 4, 1.0, dtype=cp.float32)
    dst = cp.empty_like(src)
    src_ptr, dst_ptr = src.data.ptr, dst.data.ptr
    copy_s = _best_median(lambda s: cp.cuda.runtime.memcpyAsync(dst_ptr, src_ptr, n_bytes,
                                                                 cp.cuda.runtime.memcpyDeviceToDevice, s.ptr))
    bandwidth = 2.0 * n_bytes / copy_s  # read plus write
    del src, dst
    h2d, d2h = _link_rates(min(2**28, n_bytes))
    fp32 = _matmul_rate(8192, "float32", tf32=False)
    tf32 = _matmul_rate(8192, "float32", tf32=True)
    bf16 = _matmul_rate(8192, "bfloat16", tf32=False)
    measured = ceilings.Measured(bandwidth_bytes_s=bandwidth, fp32_flops=fp32, tf32_flops=tf32, bf16_flops=bf16,
                                 link_h2d_bytes_s=h2d, link_d2h_bytes_s=d2h,
                                 source=f"measured {fingerprint.now_utc()} (D2D copy 2 GiB; pinned H2D and D2H "
                                        "copies 256 MiB; torch matmul 8192^3)")
    device_ceilings.save(info, measured)
    return measured


def _link_rates(n_bytes: int) -> tuple[float, float]:
    """(H2D, D2H) bytes/s of a cudaMemcpyAsync between page-locked host memory and the device:
    the host link's measured peak, each direction alone (the transfers family's "vs measured")."""
    import cupyx

    cp = cupy()
    host = cupyx.empty_pinned(n_bytes, dtype=cp.uint8)
    host[...] = 1
    device = cp.empty(n_bytes, dtype=cp.uint8)
    rt = cp.cuda.runtime
    rates = []
    for dst, src, kind in ((device.data.ptr, host.ctypes.data, rt.memcpyHostToDevice),
                           (host.ctypes.data, device.data.ptr, rt.memcpyDeviceToHost)):
        seconds = _best_median(lambda s, dst=dst, src=src, kind=kind: rt.memcpyAsync(dst, src, n_bytes, kind, s.ptr))
        rates.append(n_bytes / seconds)
    return rates[0], rates[1]


def _best_median(launch, repeats: int = 20) -> float:
    from gpuprof.measure import timing

    t = timing.measure(launch, timing.shared_harness(),
                       timing.TimingPolicy(mode="hot", min_samples=repeats, max_time_s=2.0))
    return t.summary.median_s if t.summary else math.nan


def _matmul_rate(n: int, dtype: str, tf32: bool) -> float | None:
    from gpuprof.families import _torch

    t = _torch.torch()
    a = t.rand((n, n), device="cuda", dtype=getattr(t, dtype)) - 0.5
    b = t.rand((n, n), device="cuda", dtype=getattr(t, dtype)) - 0.5
    c = t.empty((n, n), device="cuda", dtype=getattr(t, dtype))

    def launch(stream) -> None:
        _torch.set_tf32(tf32)
        with _torch.on_stream(stream):
            t.matmul(a, b, out=c)

    seconds = _best_median(launch, repeats=10)
    _torch.set_tf32(False)
    return 2.0 * n**3 / seconds
