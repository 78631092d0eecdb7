"""Pure: roofline ceilings and one point per kernel, from ncu's rows (or measured device ceilings)."""

from __future__ import annotations

from dataclasses import dataclass

from gpuprof.parsers.ncu_metrics import NcuKernelRow


@dataclass(frozen=True)
class Roof:
    peak_flops: float  # FLOP/s, FP32 FFMA
    peak_bytes_s: float  # DRAM bytes/s
    source: str

    @property
    def ridge(self) -> float:
        """FLOP/byte where the memory roof meets the compute roof."""
        return self.peak_flops / self.peak_bytes_s

    def attainable(self, intensity: float) -> float:
        return min(self.peak_flops, intensity * self.peak_bytes_s)


@dataclass(frozen=True)
class Point:
    label: str
    intensity: float  # FLOP per DRAM byte
    flops: float  # achieved FLOP/s

    def bound(self, roof: Roof) -> str:
        return "memory" if self.intensity < roof.ridge else "compute"

    def fraction_of_roof(self, roof: Roof) -> float:
        return self.flops / roof.attainable(self.intensity)


def roof_from_rows(rows: list[NcuKernelRow]) -> Roof | None:
    """ncu's own peaks at the clocks it ran at (SpeedOfLight_RooflineChart's arithmetic)."""
    for row in rows:
        if row.peak_fp32_flops and row.peak_dram_bytes_per_s:
            return Roof(row.peak_fp32_flops, row.peak_dram_bytes_per_s, "ncu peak metrics (FP32 FFMA, DRAM)")
    return None


def point(label: str, rows: list[NcuKernelRow]) -> Point | None:
    """One point for a variant: its kernels' FLOPs and DRAM bytes summed, over their summed time."""
    flop = sum(r.flop or 0.0 for r in rows)
    dram = sum(r.dram_bytes or 0.0 for r in rows)
    seconds = sum((r.duration_ns or 0.0) for r in rows) * 1e-9
    if flop <= 0 or dram <= 0 or seconds <= 0:
        return None
    return Point(label, flop / dram, flop / seconds)
