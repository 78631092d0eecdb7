"""Pure: roofline ceilings and one point per kernel, from ncu's rows.

The roofs are the ones `run` judges rows against (analysis.ceilings: datasheet peaks per precision
and DRAM bandwidth, for the GPU ncu names), so `run`, `ncu` and the JSON agree. Each point sits
under the compute roof of the precision doing most of its FLOPs: a TF32 GEMM under the TF32
tensor roof, not the FP32 one. Without a datasheet entry for the GPU, ncu's own FP32/FP64 peaks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpuprof.analysis import ceilings
from gpuprof.parsers.ncu_metrics import NcuKernelRow

ROOF_PRECISIONS = ("fp32", "fp64", "tf32", "bf16", "fp16", "fp8")


@dataclass(frozen=True)
class Roof:
    peak_flops: float  # FLOP/s of the FP32 pipe (the roof every plot draws)
    peak_bytes_s: float  # DRAM bytes/s
    source: str
    compute: dict[str, float] = field(default_factory=dict, hash=False)  # FLOP/s per precision key
    names: dict[str, str] = field(default_factory=dict, hash=False)  # e.g. "tf32" -> "TF32 tensor, dense"

    def peak(self, precision: str = "fp32") -> float | None:
        return self.compute.get(precision) or (self.peak_flops if precision == "fp32" else None)

    @property
    def ridge(self) -> float:
        """FLOP/byte where the memory roof meets the FP32 compute roof."""
        return self.peak_flops / self.peak_bytes_s

    def ridge_for(self, precision: str) -> float | None:
        peak = self.peak(precision)
        return peak / self.peak_bytes_s if peak else None

    def attainable(self, intensity: float, precision: str = "fp32") -> float | None:
        peak = self.peak(precision)
        return min(peak, intensity * self.peak_bytes_s) if peak else None

    def name(self, precision: str) -> str:
        return self.names.get(precision, precision.upper())


@dataclass(frozen=True)
class Point:
    label: str
    intensity: float  # FLOP per DRAM byte
    flops: float  # achieved FLOP/s
    precision: str = "fp32"  # the precision doing most of the FLOPs: whose roof applies

    def bound(self, roof: Roof) -> str:
        ridge = roof.ridge_for(self.precision)
        if ridge is None:
            return f"no {self.precision} roof"
        return "memory" if self.intensity < ridge else "compute"

    def fraction_of_roof(self, roof: Roof) -> float | None:
        attainable = roof.attainable(self.intensity, self.precision)
        return self.flops / attainable if attainable else None


def roof_from_rows(rows: list[NcuKernelRow]) -> Roof | None:
    """The datasheet roofs of the GPU the rows ran on (scaled to its SM count and max clock, as in
    `run`); else ncu's own peaks, the highest among the rows (each variant is profiled in its own
    process at the clocks of the moment, and a roof must sit above every point)."""
    device = next((r for r in rows if r.device_name), None)
    if device is not None:
        limits = ceilings.from_model(device.device_name or "", device.device_sm_count,
                                     device.device_max_clock_hz / 1e6 if device.device_max_clock_hz else None,
                                     compute_capability=device.compute_capability)
        found = {p: c for p in ROOF_PRECISIONS if (c := limits.ceiling("flop", p))}
        if limits.bandwidth_bytes_s and "fp32" in found and ceilings.datasheet_for(device.device_name or ""):
            return Roof(found["fp32"].value, limits.bandwidth_bytes_s, limits.source,
                        compute={p: c.value for p, c in found.items()}, names={p: c.name for p, c in found.items()})
    fp32 = max((r.peak_fp32_flops for r in rows if r.peak_fp32_flops), default=None)
    dram = max((r.peak_dram_bytes_per_s for r in rows if r.peak_dram_bytes_per_s), default=None)
    if not fp32 or not dram:
        return None
    fp64 = max((r.peak_fp64_flops for r in rows if r.peak_fp64_flops), default=None)
    compute = {"fp32": fp32, **({"fp64": fp64} if fp64 else {})}
    return Roof(fp32, dram, "ncu peak metrics (FP32/FP64 FMA, DRAM) at the highest clock among the kernels; "
                            "no tensor roof without a datasheet entry for this GPU", compute=compute,
                names={"fp32": "FP32 (non-tensor)", "fp64": "FP64"})


def point(label: str, rows: list[NcuKernelRow]) -> Point | None:
    """One point for a variant: its kernels' FLOPs and DRAM bytes summed, over their summed time,
    under the roof of the precision that did most of those FLOPs."""
    by_precision: dict[str, float] = {}
    for r in rows:
        for key, value in r.flop_by_precision.items():
            by_precision[key] = by_precision.get(key, 0.0) + value
    flop = sum(by_precision.values())
    dram = sum(r.dram_bytes or 0.0 for r in rows)
    seconds = sum((r.duration_ns or 0.0) for r in rows) * 1e-9
    if flop <= 0 or dram <= 0 or seconds <= 0:
        return None
    precision = max(by_precision, key=lambda k: by_precision[k])
    return Point(label, flop / dram, flop / seconds, precision)
