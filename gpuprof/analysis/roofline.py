"""Pure: roofline ceilings and one point per kernel, from ncu's rows.

The roofs are the ones `run` judges rows against (analysis.ceilings: datasheet peaks per precision
and DRAM bandwidth, for the GPU ncu names), so `run`, `ncu` and the JSON agree. Each point sits
under the compute roof of the precision doing most of its FLOPs: a TF32 GEMM under the TF32
tensor roof, not the FP32 one. Without a datasheet entry for the GPU, ncu's own FP32/FP64 peaks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpuprof.analysis import ceilings
from gpuprof.parsers import ncu_levels
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
    levels: LevelPoint | None = None  # the same kernel under the roofs of every memory level, where the report has them

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
    return Point(label, flop / dram, flop / seconds, precision, level_point(label, rows))


# ---------------------------------------------------------------------------------------------
# The hierarchical roofline: one memory roof per level of the hierarchy, each point judged against
# the tightest (docs/tools.md, "ncu: hierarchical roofline"). A kernel under no DRAM limit can still
# be held by its L1 or L2 traffic: uncoalesced loads fetch many sectors per useful byte, and a
# shared-memory tile's reads all go through the L1 data pipe.

# Below this share of its binding roof a kernel is held by something no roof shows: occupancy,
# latency, barriers, launch overhead (the ladder's "latency" limiter, the verdict's "latency-bound").
LATENCY_FRACTION = 0.40
PRECISION_NAMES = {"fp32": "FP32", "fp64": "FP64", "fp16": "FP16", "tensor": "tensor"}
LEVEL_WORDS = {"L1 pipe": "the L1 data pipe", "L1": "L1", "L2": "L2", "DRAM": "DRAM"}
# Where a verdict names a cause: uncoalesced accesses or shared memory explain an L1 bound when
# they are this large a part of it.
EXCESSIVE_SECTORS_PCT = 25.0
SHARED_SHARE = 0.5


@dataclass(frozen=True)
class LevelBound:
    """One memory level's roof at a kernel's intensity there."""

    level: str  # parsers.ncu_levels.LEVELS: "L1 pipe", "L1", "L2", "DRAM"
    intensity: float  # FLOP per byte moved at this level
    bandwidth: float  # the level's peak bytes/s
    attainable: float  # FLOP/s this level allows: min(compute peak, intensity x bandwidth)


@dataclass(frozen=True)
class LevelPoint:
    """A kernel (or variant) under one precision's roofs, one per memory level."""

    label: str
    precision: str  # "fp32", "fp64", "fp16", "tensor"
    flops: float  # achieved FLOP/s
    peak_flops: float  # the precision's compute peak
    levels: tuple[LevelBound, ...]  # in parsers.ncu_levels.LEVELS order, those the report gave
    shared_pipe_pct: float | None = None
    excessive_sectors_pct: float | None = None

    @property
    def binding(self) -> LevelBound | None:
        """The tightest memory roof where it is below the compute peak; None: compute-bound."""
        tight = min(self.levels, key=lambda b: b.attainable, default=None)
        return tight if tight is not None and tight.attainable < self.peak_flops else None

    @property
    def bound(self) -> str:
        """"L1", "L2", "DRAM" or "compute" (the L1 data pipe is part of the L1)."""
        binding = self.binding
        return "compute" if binding is None else binding.level.split()[0]

    @property
    def attainable(self) -> float:
        binding = self.binding
        return self.peak_flops if binding is None else binding.attainable

    @property
    def fraction(self) -> float:
        """Achieved over the binding roof."""
        return self.flops / self.attainable if self.attainable > 0 else 0.0

    def level(self, name: str) -> LevelBound | None:
        return next((b for b in self.levels if b.level == name), None)

    def ridge(self, bound: LevelBound) -> float:
        """FLOP per byte above which this level no longer limits: the compute peak over its bandwidth."""
        return self.peak_flops / bound.bandwidth

    def busy_pct(self, bound: LevelBound) -> float:
        """The level's traffic as a share of its peak bandwidth."""
        return 100.0 * self.flops / bound.intensity / bound.bandwidth

    @property
    def cause(self) -> str:
        """What explains an L1 bound, in numbers ("" when nothing does)."""
        if self.bound != "L1":
            return ""
        if self.excessive_sectors_pct is not None and self.excessive_sectors_pct >= EXCESSIVE_SECTORS_PCT:
            return f"uncoalesced: {self.excessive_sectors_pct:.0f} % of sectors excessive"
        pipe = self.level("L1 pipe")
        if pipe is not None and self.shared_pipe_pct is not None \
                and self.shared_pipe_pct >= SHARED_SHARE * self.busy_pct(pipe):
            return f"shared memory: {self.shared_pipe_pct:.0f} % of the L1 data pipe's peak"
        return ""

    @property
    def far_from_every_roof(self) -> bool:
        """Below LATENCY_FRACTION of its binding roof: held by occupancy, latency, barriers or launch."""
        return self.fraction < LATENCY_FRACTION

    @property
    def verdict(self) -> str:
        """e.g. "L1-bound (uncoalesced: 85 % of sectors excessive)", "L2-bound", "compute-bound"; below
        LATENCY_FRACTION of its tightest roof "latency-bound (far from every roof; the tightest is L1)",
        the word the ladder and the advice heading use for the same kernel."""
        if self.far_from_every_roof:
            return f"latency-bound (far from every roof; the tightest is {self.bound})"
        cause = self.cause
        return f"{self.bound}-bound" + (f" ({cause})" if cause else "")

    @property
    def reason(self) -> str:
        """The verdict's numbers: the binding roof and how close the kernel comes to it."""
        name = PRECISION_NAMES.get(self.precision, self.precision)
        achieved = f"achieved {_tflops(self.flops)} ({100 * self.fraction:.0f} %)"
        binding = self.binding
        if binding is not None:
            return (f"{binding.intensity:.3g} FLOP/B at {LEVEL_WORDS[binding.level]} caps {name} at "
                    f"{_tflops(binding.attainable)}; {achieved}")
        nearest = min(self.levels, key=lambda b: b.intensity / self.ridge(b), default=None)
        text = f"{name} peak {_tflops(self.peak_flops)}; {achieved}"
        if nearest is not None:
            text += (f"; nearest memory roof {LEVEL_WORDS[nearest.level]} ({nearest.intensity:.3g} FLOP/B, "
                     f"ridge {self.ridge(nearest):.3g})")
        return text


def _tflops(value: float) -> str:
    return f"{value / 1e12:.3g} TFLOP/s"


def level_points(label: str, rows: list[NcuKernelRow]) -> dict[str, LevelPoint]:
    """Per precision the rows did work in (and the report has a peak for), their point under its
    roofs: rates summed over the rows' time (bytes and FLOPs add up, each launch weighted by its
    duration), the highest peaks among them."""
    work, peaks, timed = _summed_work(rows)
    if not timed:
        return {}
    total = sum(d for _, d in timed)
    traffic, bandwidth = _weighted_sums_and_maxima(timed, lambda lv: lv.traffic, lambda lv: lv.bandwidth)
    shared = sum((lv.shared_pipe_pct or 0.0) * d for lv, d in timed) / total \
        if any(lv.shared_pipe_pct is not None for lv, _ in timed) else None
    sectors = sum(lv.global_sectors or 0.0 for lv, _ in timed)
    excessive = [lv.global_sectors_excessive for lv, _ in timed if lv.global_sectors_excessive is not None]
    excessive_pct = 100.0 * sum(excessive) / sectors if sectors and excessive else None
    points = {}
    for precision, flops in work.items():
        peak = peaks.get(precision)
        if flops <= 0 or not peak:
            continue
        bounds = tuple(LevelBound(level, flops / traffic[level], bandwidth[level],
                                  min(peak, flops / traffic[level] * bandwidth[level]))
                       for level in ncu_levels.LEVELS if traffic.get(level, 0.0) > 0 and bandwidth.get(level))
        points[precision] = LevelPoint(label, precision, flops, peak, bounds, shared, excessive_pct)
    return points


def level_point(label: str, rows: list[NcuKernelRow]) -> LevelPoint | None:
    """The point of the precision doing most of the work, whose roofs judge the kernel; None when
    the report has no peak for that precision (a tensor kernel outside `--set full`: no tensor
    peak is collected by default) or no hierarchical data at all."""
    work, _, _ = _summed_work(rows)
    if not work or max(work.values()) <= 0:
        return None
    return level_points(label, rows).get(max(work, key=lambda k: work[k]))


def _summed_work(rows: list[NcuKernelRow]):
    """Achieved FLOP/s per precision over the rows' summed time, the highest peaks, and the rows'
    hierarchical records with their durations."""
    timed = [(r.roofline_levels, r.duration_ns or 0.0) for r in rows
             if r.roofline_levels is not None and (r.duration_ns or 0.0) > 0]
    work, peaks = _weighted_sums_and_maxima(timed, lambda lv: lv.work, lambda lv: lv.peak_work)
    return work, peaks, timed


def _weighted_sums_and_maxima(timed, summed, maxed) -> tuple[dict[str, float], dict[str, float]]:
    """Per key, the duration-weighted mean of `summed(levels)` over the timed records (rates add
    up over time) and the maximum of `maxed(levels)` (peaks: the highest)."""
    total = sum(d for _, d in timed)
    sums: dict[str, float] = {}
    maxima: dict[str, float] = {}
    for levels, d in timed:
        for key, value in summed(levels).items():
            sums[key] = sums.get(key, 0.0) + value * d / total
        for key, value in maxed(levels).items():
            maxima[key] = max(maxima.get(key, 0.0), value)
    return sums, maxima
