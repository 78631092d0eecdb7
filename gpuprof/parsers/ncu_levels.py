"""ncu's hierarchical roofline inputs for one launch: achieved and peak rates per memory level and
per precision, read from the metrics the way ncu's SpeedOfLight_Hierarchical*RooflineChart sections
compute them (docs/tools.md, "ncu: hierarchical roofline").

The same metric names arrive from a .ncu-rep and from the raw CSV page, so both readers go through
`levels_from_metrics`. A `--set full` report carries the sections' derived metrics and per-cycle
rates; gpuprof's default collection asks for the raw counters behind them, so each quantity has
the section's own formula first and the raw-counter form after it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

# Levels in the order a load meets them. "L1", "L2" and "DRAM" are ncu's three roofs; "L1 pipe" is
# gpuprof's: the L1/shared data pipe (global, local and shared accesses alike), which shares the L1 roof.
LEVELS = ("L1 pipe", "L1", "L2", "DRAM")
PRECISIONS = ("fp32", "fp64", "fp16", "tensor")

# Bytes per counted cycle, from the sections' metric definitions: an L1 writeback cycle or an L1
# data-pipe wavefront moves up to 128 bytes, an L2-to-crossbar cycle 32.
L1_BYTES_PER_CYCLE = 128
L2_BYTES_PER_CYCLE = 32
# Ops per thread instruction in the sections' work expressions (an HFMA2 is two half FMAs).
_OPS = {"f": {"add": 1, "mul": 1, "fma": 2}, "d": {"add": 1, "mul": 1, "fma": 2}, "h": {"add": 2, "mul": 2, "fma": 4}}
_PRECISION_OF = {"f": "fp32", "d": "fp64", "h": "fp16"}
_TENSOR_RATE = re.compile(r"sm__ops_path_tensor_(?P<path>.+)\.sum\.per_cycle_elapsed")
_TENSOR_COUNT = re.compile(r"sm__ops_path_tensor_(?P<path>src_[a-z0-9_]+)\.sum")
_TENSOR_PATH_COUNT = re.compile(r"sm__ops_path_tensor_(?P<path>op_[a-z]+_src_[a-z0-9_]+_sparsity_off)\.sum")


@dataclass(frozen=True)
class RooflineLevels:
    """Rates per second of one launch. None of the dicts holds a key the report could not give.

    traffic / bandwidth: achieved and peak bytes/s per level of LEVELS. work / peak_work: achieved
    and peak FLOP/s per precision of PRECISIONS ("tensor": the tensor path named in tensor_path).
    """

    traffic: dict[str, float] = field(default_factory=dict)
    bandwidth: dict[str, float] = field(default_factory=dict)
    work: dict[str, float] = field(default_factory=dict)
    peak_work: dict[str, float] = field(default_factory=dict)
    tensor_path: str | None = None  # e.g. "op_hgmma_src_fp16_sparsity_off", as ncu names the path
    shared_pipe_pct: float | None = None  # shared-memory wavefronts, % of the L1 data pipe's peak
    global_sectors: float | None = None  # L2 sectors global accesses asked for (SourceCounters)
    global_sectors_excessive: float | None = None  # of those, beyond what coalesced accesses need

    @property
    def excessive_sectors_pct(self) -> float | None:
        if not self.global_sectors or self.global_sectors_excessive is None:
            return None
        return 100.0 * self.global_sectors_excessive / self.global_sectors


Lookup = Callable[..., float | None]  # num(*names): the first of the names present, as a number


def levels_from_metrics(num: Lookup, metrics: Mapping[str, float | str],
                        duration_ns: float | None) -> RooflineLevels | None:
    """The hierarchical roofline of one launch, or None when the report has no cache level (L1 or
    L2) with its peak, or no precision with its peak."""
    seconds = duration_ns * 1e-9 if duration_ns else None

    def rate(per_second: tuple[str, ...], total: tuple[str, ...] = (), scale: float = 1.0) -> float | None:
        value = num(*per_second)
        if value is None and seconds:
            count = num(*total) if total else None
            value = count / seconds if count is not None else None
        return None if value is None else value * scale

    def product(a: float | None, b: float | None, scale: float = 1.0) -> float | None:
        return None if a is None or b is None else a * b * scale

    l1_hz, l2_hz = num("l1tex__cycles_elapsed.avg.per_second"), num("lts__cycles_elapsed.avg.per_second")
    sm_hz = num("sm__cycles_elapsed.avg.per_second", "gpc__cycles_elapsed.avg.per_second")
    traffic: dict[str, float | None] = {}
    bandwidth: dict[str, float | None] = {}

    # L1: bytes written back from L1 to the SM for global/local loads (lgds on sm_90+: also DSMEM).
    wb = ("l1tex__lsu_writeback_active_mem_lgds.sum", "l1tex__lsu_writeback_active_mem_lg.sum",
          "l1tex__lsu_writeback_active.sum")
    traffic["L1"] = num("derived__l1tex__lsu_writeback_bytes_mem_lgds.sum.per_second",
                        "derived__l1tex__lsu_writeback_bytes_mem_lg.sum.per_second",
                        "derived__l1tex__lsu_writeback_bytes.sum.per_second") or \
        rate(tuple(f"{n}.per_second" for n in wb), wb, L1_BYTES_PER_CYCLE)
    l1_peak = num("derived__l1tex__lsu_writeback_bytes_mem_lgds.sum.peak_sustained",
                  "derived__l1tex__lsu_writeback_bytes_mem_lg.sum.peak_sustained",
                  "derived__l1tex__lsu_writeback_bytes.sum.peak_sustained")
    if l1_peak is None:
        active_peak = num(*(f"{n}.peak_sustained" for n in wb))
        l1_peak = None if active_peak is None else active_peak * L1_BYTES_PER_CYCLE
    bandwidth["L1"] = product(l1_peak, l1_hz)

    # L1 pipe: data-pipe wavefronts of every LSU access, 128 bytes each; its peak is one wavefront
    # per L1 cycle (l1tex__cycles_elapsed.sum counts the cycles of all L1s).
    pipe_peak_hz = product(num("l1tex__data_pipe_lsu_wavefronts.sum.peak_sustained"), l1_hz) or \
        num("l1tex__cycles_elapsed.sum.per_second")
    pipe = rate(("l1tex__data_pipe_lsu_wavefronts.sum.per_second",), ("l1tex__data_pipe_lsu_wavefronts.sum",))
    busy_pct = num("l1tex__data_pipe_lsu_wavefronts.sum.pct_of_peak_sustained_elapsed")
    if pipe is None:
        pipe = product(busy_pct, pipe_peak_hz, 0.01)
    traffic["L1 pipe"] = None if pipe is None else pipe * L1_BYTES_PER_CYCLE
    bandwidth["L1 pipe"] = None if pipe_peak_hz is None else pipe_peak_hz * L1_BYTES_PER_CYCLE
    shared_pct = num("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum.pct_of_peak_sustained_elapsed")
    shared = rate((), ("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",))
    if shared_pct is None and shared is not None and pipe_peak_hz:
        shared_pct = 100.0 * shared / pipe_peak_hz

    # L2: bytes from the L2 slices to the crossbar (towards the SMs).
    traffic["L2"] = num("derived__lts__lts2xbar_bytes.sum.per_second") or \
        rate(("lts__lts2xbar_cycles_active.sum.per_second",), ("lts__lts2xbar_cycles_active.sum",), L2_BYTES_PER_CYCLE)
    l2_peak = num("derived__lts__lts2xbar_bytes.sum.peak_sustained")
    if l2_peak is None:
        active_peak = num("lts__lts2xbar_cycles_active.sum.peak_sustained")
        l2_peak = None if active_peak is None else active_peak * L2_BYTES_PER_CYCLE
    bandwidth["L2"] = product(l2_peak, l2_hz)

    traffic["DRAM"] = rate(("dram__bytes.sum.per_second",), ("dram__bytes.sum",))
    bandwidth["DRAM"] = product(num("dram__bytes.sum.peak_sustained"), num("dram__cycles_elapsed.avg.per_second"))

    work, peak_work = _sass_work(num, rate, sm_hz)
    tensor_path, tensor_work, tensor_peak = _tensor_work(num, metrics, sm_hz, seconds)
    work["tensor"], peak_work["tensor"] = tensor_work, tensor_peak

    kept = RooflineLevels(
        traffic={k: v for k, v in traffic.items() if v is not None},
        bandwidth={k: v for k, v in bandwidth.items() if v},
        work={k: v for k, v in work.items() if v is not None},
        peak_work={k: v for k, v in peak_work.items() if v},
        tensor_path=tensor_path,
        shared_pipe_pct=shared_pct,
        global_sectors=num("memory_l2_theoretical_sectors_global"),
        global_sectors_excessive=num("derived__memory_l2_theoretical_sectors_global_excessive"),
    )
    caches = {"L1 pipe", "L1", "L2"} & set(kept.traffic) & set(kept.bandwidth)
    if not caches or not set(kept.work) & set(kept.peak_work):
        return None  # DRAM alone is the plain roofline (parsers.ncu_metrics' peak fields)
    return kept


def _sass_work(num: Lookup, rate: Callable[..., float | None],
               sm_hz: float | None) -> tuple[dict[str, float | None], dict[str, float | None]]:
    """FLOP/s of the FP32, FP64 and FP16 pipes: the sections' per-cycle form, else counts over the duration."""
    smsp_hz = num("smsp__cycles_elapsed.avg.per_second")
    work: dict[str, float | None] = {}
    peak: dict[str, float | None] = {}
    for p, ops in _OPS.items():
        parts = []
        for op, weight in ops.items():
            name = f"sass_thread_inst_executed_op_{p}{op}_pred_on.sum"
            per_cycle = num(f"smsp__{name}.per_cycle_elapsed")
            value = per_cycle * smsp_hz if per_cycle is not None and smsp_hz else rate((), (f"sm__{name}",))
            if value is not None:
                parts.append(value * weight)
        key = _PRECISION_OF[p]
        work[key] = sum(parts) if parts else None
        fma_peak = num(f"sm__sass_thread_inst_executed_op_{p}fma_pred_on.sum.peak_sustained")
        peak[key] = None if fma_peak is None or sm_hz is None else fma_peak * ops["fma"] * sm_hz
    return work, peak


def _tensor_work(num: Lookup, metrics: Mapping[str, float | str], sm_hz: float | None,
                 seconds: float | None) -> tuple[str | None, float | None, float | None]:
    """The busiest floating-point tensor path: its ops/s and its peak (ncu draws one roof per path).

    Specific paths (`op_hgmma_src_fp16_sparsity_off`) win over the per-source totals (`src_fp16`),
    whose peak is the fastest instruction's, sparse included. Without per-cycle rates (gpuprof's
    default collection): the busiest dense instruction path's op count over the duration, against
    its peak (ops per cycle at the SM clock); else the per-source counts, with no peak."""
    rates: dict[str, float] = {}
    for name in metrics:
        m = _TENSOR_RATE.fullmatch(name)
        if m and "int" not in m["path"] and (v := num(name)):
            rates[m["path"]] = v
    if rates and sm_hz:
        specific = {k: v for k, v in rates.items() if k.startswith("op_")} or rates
        path = max(specific, key=lambda k: specific[k])
        peak = num(f"sm__ops_path_tensor_{path}.sum.peak_sustained")
        return path, specific[path] * sm_hz, None if peak is None else peak * sm_hz
    if not seconds:
        return None, None, None
    dense = {m["path"]: v for name in metrics if (m := _TENSOR_PATH_COUNT.fullmatch(name)) and (v := num(name))}
    if dense and sm_hz:  # the instruction's own dense path (HMMA, HGMMA), whose peak gpuprof collects
        path = max(dense, key=lambda k: dense[k])
        peak = num(f"sm__ops_path_tensor_{path}.sum.peak_sustained")
        return path, dense[path] / seconds, None if peak is None else peak * sm_hz
    counts: dict[str, float] = {}
    for name in metrics:
        m = _TENSOR_COUNT.fullmatch(name)
        if m and "int" not in m["path"] and (v := num(name)):
            counts[m["path"]] = v
    if not counts:
        return None, None, None
    path = max(counts, key=lambda k: counts[k])
    return path, sum(counts.values()) / seconds, None
