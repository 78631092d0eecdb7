"""Device ceilings for '% of ceiling' and the roofline: measured ones cached per GPU, else theoretical."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from gpuprof.gpu import DeviceInfo
from gpuprof.paths import CACHE_DIR

# FP32 lanes per SM by compute capability (CUDA C Programming Guide, arithmetic instruction table).
FP32_LANES_PER_SM = {"7.0": 64, "7.5": 64, "8.0": 64, "8.6": 128, "8.7": 128, "8.9": 128, "9.0": 128,
                     "10.0": 128, "12.0": 128}


@dataclass(frozen=True)
class Ceilings:
    bandwidth_bytes_s: float
    fp32_flops: float | None
    tf32_flops: float | None = None
    bf16_flops: float | None = None
    source: str = "theoretical"  # or "measured <date>"

    def for_rate(self, rate: str, precision: str = "fp32") -> float | None:
        """The ceiling a row is judged against: bandwidth, or the peak of the row's own precision
        (the manifest's `precision`, kept in Row.precision; never guessed from a variant's name)."""
        if rate == "bytes":
            return self.bandwidth_bytes_s
        if precision == "tf32" and self.tf32_flops:
            return self.tf32_flops
        if precision in ("bf16", "fp16") and self.bf16_flops:
            return self.bf16_flops
        return self.fp32_flops


def theoretical(info: DeviceInfo) -> Ceilings:
    lanes = FP32_LANES_PER_SM.get(info.compute_capability)
    fp32 = 2.0 * lanes * info.sm_count * info.sm_clock_khz * 1e3 if lanes and info.sm_clock_khz else None
    return Ceilings(bandwidth_bytes_s=info.theoretical_bandwidth_bytes_s, fp32_flops=fp32,
                    source="theoretical (datasheet arithmetic: bus width x memory clock; lanes x SMs x boost clock)")


def cache_path(info: DeviceInfo) -> Path:
    return CACHE_DIR / "ceilings" / f"{info.uuid}.json"


def load(info: DeviceInfo) -> Ceilings:
    path = cache_path(info)
    try:
        return Ceilings(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return theoretical(info)


def save(info: DeviceInfo, ceilings: Ceilings) -> Path:
    from gpuprof.results import atomic_write_text

    path = cache_path(info)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(asdict(ceilings), indent=1))
    return path
