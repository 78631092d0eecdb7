"""ncu's metrics for one launch -> the typed NcuKernelRow, shared by the CSV pages and the .ncu-rep reader.

Also the records themselves, metric-label names, base units and the bracket scanner for demangled
kernel names, so every reader derives every field the same way.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gpuprof.errors import ParseError
from gpuprof.parsers.ncu_levels import RooflineLevels, levels_from_metrics

# ---------------------------------------------------------------------------------------------
# Records

@dataclass(frozen=True)
class NcuAdvice:
    """One rule result of the details page (Rule Type OPT/INF/WRN/ERR)."""

    kernel_id: int
    section: str  # section identifier, e.g. "SpeedOfLight", "Occupancy"
    rule: str  # rule identifier, e.g. "AchievedOccupancy"
    kind: str  # "OPT", "INF", "WRN", "ERR" as ncu prints it
    message: str
    estimated_speedup_pct: float | None = None
    speedup_type: str | None = None  # "local" / "global"


@dataclass(frozen=True)
class NcuSection:
    """One ncu section of a profiled launch: its identifier (what `--section` takes), its title and
    the metrics it shows (header first, then body); their values are in NcuKernelRow.metrics."""

    identifier: str
    name: str
    metrics: tuple[str, ...] = ()


@dataclass(frozen=True)
class NcuKernelRow:
    """One profiled kernel launch. Numbers are in base units (ns, byte, hz); None = not in the report."""

    id: int
    kernel_name: str  # function base name: no return type, namespace, template args or params
    demangled_name: str  # as ncu printed it (NVTX rename prefix removed)
    process_id: int | None = None
    process_name: str | None = None
    device: int | None = None
    compute_capability: str | None = None
    context_id: int | None = None
    stream_id: int | None = None
    block: tuple[int, int, int] | None = None
    grid: tuple[int, int, int] | None = None
    nvtx_ranges: tuple[str, ...] = ()  # push/pop stack, outermost first; "domain@name" outside the default domain
    duration_ns: float | None = None
    sm_throughput_pct: float | None = None
    memory_throughput_pct: float | None = None
    dram_throughput_pct: float | None = None
    achieved_occupancy_pct: float | None = None
    theoretical_occupancy_pct: float | None = None
    occupancy_limiter: str | None = None  # smallest launch__occupancy_limit_*; ties joined by "+"
    registers_per_thread: int | None = None
    shared_mem_per_block_bytes: float | None = None
    dram_bytes: float | None = None
    dram_bytes_per_s: float | None = None
    flop_fp32: float | None = None
    flop_fp64: float | None = None
    flop_fp16: float | None = None
    # Tensor-pipe math ops by source precision (sm__ops_path_tensor_src_*; an MMA's FMA counts 2,
    # as in 2·M·N·K — checked on the H100 with ncu 2025.3.1), None where ncu did not report them.
    flop_tf32_tensor: float | None = None
    flop_bf16_tensor: float | None = None
    flop_fp16_tensor: float | None = None
    flop_fp8_tensor: float | None = None
    flop_fp64_tensor: float | None = None
    ops_int8_tensor: float | None = None  # integer ops: not FLOPs, not in `flop`
    tensor_instructions: float | None = None  # sm__inst_executed_pipe_tensor.sum (warp instructions)
    device_name: str | None = None  # device__attribute_display_name: picks the datasheet ceilings
    device_sm_count: int | None = None
    device_max_clock_hz: float | None = None  # device__attribute_clock_rate: the max SM clock
    sm_frequency_hz: float | None = None
    peak_fp32_flops: float | None = None  # FLOP/s
    peak_fp64_flops: float | None = None
    peak_dram_bytes_per_s: float | None = None
    roofline_levels: RooflineLevels | None = None  # per memory level and precision; None: not in the report
    replay_passes: int | None = None  # profiler__replayer_passes: how many times ncu ran this launch
    sections: tuple[NcuSection, ...] = ()  # the sections collected, as ncu groups their metrics (.ncu-rep only)
    metrics: dict[str, float | str] = field(default_factory=dict, repr=False, hash=False)
    units: dict[str, str] = field(default_factory=dict, repr=False, hash=False)
    advice: tuple[NcuAdvice, ...] = field(default=(), repr=False)
    # Values no launch can have (a negative or zero duration, a NaN or negative counter, a % far above
    # 100), as "metric = value": each is left out of the fields above (None), never shown as measured.
    impossible: tuple[str, ...] = ()

    @property
    def flop(self) -> float | None:
        """FLOPs of the FP16/FP32/FP64 pipes (SASS instructions) plus the tensor pipe (None when none was collected)."""
        parts = list(self.flop_by_precision.values())
        return sum(parts) if parts else None

    @property
    def flop_by_precision(self) -> dict[str, float]:
        """FLOPs per precision key of analysis.ceilings (fp32: the FP32 pipe; tf32/bf16/fp8: tensor;
        fp16: the half pipe and FP16 tensor ops; fp64: the FP64 pipe and DMMA), only those reported."""
        parts: dict[str, float] = {}
        for key, value in (("fp32", self.flop_fp32), ("fp64", self.flop_fp64), ("fp16", self.flop_fp16),
                           ("tf32", self.flop_tf32_tensor), ("bf16", self.flop_bf16_tensor),
                           ("fp16", self.flop_fp16_tensor), ("fp8", self.flop_fp8_tensor),
                           ("fp64", self.flop_fp64_tensor)):
            if value is not None:
                parts[key] = parts.get(key, 0.0) + value
        return parts

    @property
    def precision(self) -> str:
        """The precision doing most of the FLOPs (its roof is the one this kernel is judged against)."""
        parts = self.flop_by_precision
        return max(parts, key=lambda k: parts[k]) if parts and max(parts.values()) > 0 else "fp32"

    @property
    def arithmetic_intensity(self) -> float | None:
        """FLOP per DRAM byte, or None when either side is missing (or no DRAM traffic)."""
        flop = self.flop
        if flop is None or not self.dram_bytes:
            return None
        return flop / self.dram_bytes


# ---------------------------------------------------------------------------------------------
# Metric names and values

# Details-page labels -> metric names, from the 2025.3.1 section files (read through ncu_report on
# tests/fixtures/cupy-h100/vecadd_cupy.ncu-rep) and docs/tools.md, "ncu: metric names". "Memory Throughput" is in two
# sections: a % in SpeedOfLight and a byte/s rate in MemoryWorkloadAnalysis; the unit decides.
LABELS: dict[str, str] = {
    "Duration": "gpu__time_duration.sum",
    "Compute (SM) Throughput": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "Memory Throughput": "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "DRAM Throughput": "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "L1/TEX Cache Throughput": "l1tex__throughput.avg.pct_of_peak_sustained_active",
    "L2 Cache Throughput": "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "Elapsed Cycles": "gpc__cycles_elapsed.max",
    "SM Active Cycles": "sm__cycles_active.avg",
    "SM Frequency": "gpc__cycles_elapsed.avg.per_second",
    "DRAM Frequency": "dram__cycles_elapsed.avg.per_second",
    "Theoretical Occupancy": "sm__maximum_warps_per_active_cycle_pct",
    "Theoretical Active Warps per SM": "sm__maximum_warps_avg_per_active_cycle",
    "Achieved Occupancy": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "Achieved Active Warps Per SM": "sm__warps_active.avg.per_cycle_active",
    "Block Limit Registers": "launch__occupancy_limit_registers",
    "Block Limit Shared Mem": "launch__occupancy_limit_shared_mem",
    "Block Limit Warps": "launch__occupancy_limit_warps",
    "Block Limit SM": "launch__occupancy_limit_blocks",
    "Block Limit Barriers": "launch__occupancy_limit_barriers",
    "Cluster Occupancy": "launch__occupancy_cluster_pct",
    "Overall GPU Occupancy": "launch__occupancy_cluster_gpu_pct",
    "Max Active Clusters": "launch__cluster_max_active",
    "Max Cluster Size": "launch__cluster_max_potential_size",
    "Grid Size": "launch__grid_size",
    "Block Size": "launch__block_size",
    "Threads": "launch__thread_count",
    "Registers Per Thread": "launch__registers_per_thread",
    "Static Shared Memory Per Block": "launch__shared_mem_per_block_static",
    "Dynamic Shared Memory Per Block": "launch__shared_mem_per_block_dynamic",
    "Driver Shared Memory Per Block": "launch__shared_mem_per_block_driver",
    "Shared Memory Configuration Size": "launch__shared_mem_config_size",
    "Function Cache Configuration": "launch__func_cache_config",
    "Cluster Size": "launch__cluster_size",
    "Cluster Scheduling Policy": "launch__cluster_scheduling_policy",
    "Waves Per SM": "launch__waves_per_multiprocessor",
    "Uses Green Context": "launch__uses_green_context",
    "Stack Size": "launch__stack_size",
    "# SMs": "launch__sm_count",
    "# TPCs": "launch__tpc_count",
    "Enabled TPC IDs": "launch__tpc_enabled",
}


_NUMBER = re.compile(r"[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][+-]?\d+)?|[+-]?\.\d+")
_ABSENT = {"", "n/a", "N/A", "na", "-", "--"}
_TIME_NS = {"ns": 1.0, "nsecond": 1.0, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6, "s": 1e9, "second": 1e9}
# ncu scales by 1000, not 1024 (docs/tools.md, "ncu: CSV pages, units and locale")
_SI = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
_SCALED = re.compile(r"([KMGT]?)(byte|hz|inst|cycle|sector|request|warp|thread)(/.+)?")


def _number(cell: str) -> float | None:
    """'17,856' / '17856' / '2,608,243,727.60' / '384.00' -> float; anything else (or inf) -> None."""
    s = cell.strip()
    if not _NUMBER.fullmatch(s):
        return None
    value = float(s.replace(",", ""))
    return value if math.isfinite(value) else None


def to_base_unit(value: float, unit: str) -> tuple[float, str]:
    """Scale an auto-unit value (us, Ghz, Kbyte/block, Gbyte/s ...) to ncu's base unit."""
    if unit in _TIME_NS:
        return value * _TIME_NS[unit], "ns"
    m = _SCALED.fullmatch(unit)
    if m:
        return value * _SI[m.group(1)], m.group(2) + (m.group(3) or "")
    return value, unit


_NOT_FINITE = {"nan", "-nan", "inf", "+inf", "-inf", "infinity", "-infinity"}


def _value(cell: str, unit: str) -> tuple[float | str, str]:
    if cell.strip().lower() in _NOT_FINITE:  # a number no counter can be: kept, and flagged where it is used
        return float(cell.strip()), unit
    number = _number(cell)
    if number is None:
        return cell, unit
    return to_base_unit(number, unit)


def _int(cell: str, where: str, path: str | Path | None) -> int:
    number = _number(cell)
    if number is None or number != int(number):
        raise ParseError(path, where, f"expected an integer, got {cell!r}")
    return int(number)


def _opt_int(cell: str | None, where: str, path: str | Path | None) -> int | None:
    return None if cell is None or cell.strip() in _ABSENT else _int(cell, where, path)


def _opt_count(value: float | None) -> int | None:
    """A count ncu reports as a float; None when absent or not a whole non-negative number."""
    return int(value) if value is not None and value >= 0 and value == int(value) else None


def _dims(cell: str | None, where: str, path: str | Path | None) -> tuple[int, int, int] | None:
    if cell is None or cell.strip() in _ABSENT:
        return None
    m = re.fullmatch(r"\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)", cell.strip())
    if not m:
        raise ParseError(path, where, f"expected '(x, y, z)', got {cell!r}")
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def parse_nvtx_cell(cell: str) -> tuple[str, ...]:
    """`2561  "<default domain>:outer:none:..." "<default domain>:inner:..." ` -> ("outer", "inner")."""
    ranges = []
    for entry in re.findall(r'"([^"]*)"', cell):
        parts = entry.split(":")
        # Domain:Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg; a range name may itself hold ':'.
        name = ":".join(parts[1:-6]) if len(parts) >= 8 else (parts[1] if len(parts) > 1 else parts[0])
        domain = parts[0]
        ranges.append(name if domain in ("<default domain>", "") else f"{domain}@{name}")
    return tuple(ranges)


# ---------------------------------------------------------------------------------------------
# From metrics to the typed row (shared with ncu_rep)


class _Metrics:
    """Typed lookups over one kernel's metric dict that raise ParseError naming the metric."""

    def __init__(self, metrics: Mapping[str, float | str], where: str, path: str | Path | None) -> None:
        self.m, self.where, self.path = metrics, where, path
        self.impossible: dict[str, str] = {}  # metric -> "metric = value (why)", for the row

    def num(self, *names: str) -> float | None:
        """The first of names the report holds, as a number; None when none is there, or when the
        value is impossible for a counter (then recorded in self.impossible, never used)."""
        for name in names:
            v = self.m.get(name)
            if v is None or (isinstance(v, str) and v.strip() in _ABSENT):
                continue
            if isinstance(v, str):
                raise ParseError(self.path, f"{self.where}, metric '{name}'", f"expected a number, got {v!r}")
            why = impossible_value(name, float(v))
            if why:
                self.impossible[name] = f"{name} = {v:g} ({why})"
                return None
            return settled(name, float(v))
        return None

    def flop(self, kind: str) -> float | None:
        add, mul, fma = (self.instructions(kind + op) for op in ("add", "mul", "fma"))
        if add is None and mul is None and fma is None:
            return None
        return (add or 0.0) + (mul or 0.0) + 2.0 * (fma or 0.0)  # an FMA is two FLOPs

    def instructions(self, op: str) -> float | None:
        """Predicated-on thread instructions of one op (fadd, dfma ...): the count gpuprof asks for,
        else a `--set full` report's per-cycle rate times its elapsed cycles (docs/tools.md, "ncu:
        hierarchical roofline")."""
        name = f"sass_thread_inst_executed_op_{op}_pred_on.sum"
        count = self.num(f"sm__{name}")
        if count is not None:
            return count
        per_cycle, cycles = self.num(f"smsp__{name}.per_cycle_elapsed"), self.num("smsp__cycles_elapsed.avg")
        return None if per_cycle is None or cycles is None else per_cycle * cycles

    def product(self, a: str, b: str, factor: float = 1.0, *fallback_b: str) -> float | None:
        x, y = self.num(a), self.num(b, *fallback_b)
        return None if x is None or y is None else x * y * factor


LIMITS = ("registers", "shared_mem", "warps", "blocks", "barriers")
PCT_CEILING = 110.0  # a % of peak a little above 100 is rounding and clock drift; far above it, impossible
# A % of an idle unit comes out a hair below zero (ncu derives it as a difference of counters: the tensor
# pipe's % is -0.09 to -0.0002 on kernels that never touch it, recorded on the H200): that is zero.
PCT_NOISE = 1.0


def settled(name: str, value: float) -> float:
    """value, with a percentage within PCT_NOISE below zero read as the zero it is."""
    return 0.0 if -PCT_NOISE <= value < 0 and "pct" in name else value


def impossible_value(name: str, value: float) -> str | None:
    """Why no launch can have this value of a metric gpuprof reads (all are durations, counts, rates
    or percentages), or None: NaN or infinite, negative (a % only when below -PCT_NOISE), a zero
    duration, a % far above 100."""
    if not math.isfinite(value):
        return "not a number"
    if settled(name, value) < 0:
        return "negative"
    if name == "gpu__time_duration.sum" and value == 0:
        return "a launch takes time"
    if "pct" in name and value > PCT_CEILING:
        return "above 100 %"
    return None


def row_from_metrics(
    ident: Mapping[str, str],
    metrics: dict[str, float | str],
    units: dict[str, str],
    advice: tuple[NcuAdvice, ...],
    where: str,
    path: str | Path | None,
) -> NcuKernelRow:
    """Derive the typed fields from identity columns + a metric-name -> base-unit value dict.

    Shared by both CSV pages and by parsers.ncu_rep, so all three paths agree on every field.
    """
    m = _Metrics(metrics, where, path)
    if "ID" not in ident or "Kernel Name" not in ident:
        raise ParseError(path, where, "row has no ID or Kernel Name")
    nvtx: tuple[str, ...] = ()
    for col, cell in ident.items():
        if "Push/Pop_Range" in col:
            nvtx = parse_nvtx_cell(cell)
    printed = ident["Kernel Name"]
    if nvtx:  # --print-nvtx-rename kernel prefixes the innermost push/pop range name
        innermost = nvtx[-1].rsplit("@", 1)[-1]
        if printed.startswith(innermost + "/"):
            printed = printed[len(innermost) + 1 :]
    limits = {k: m.num(f"launch__occupancy_limit_{k}") for k in LIMITS}
    present = {k: v for k, v in limits.items() if v is not None}
    limiter = None
    if present:
        low = min(present.values())
        limiter = "+".join(k for k, v in present.items() if v == low)
    static, dynamic = m.num("launch__shared_mem_per_block_static"), m.num("launch__shared_mem_per_block_dynamic")
    smem = static + dynamic if static is not None and dynamic is not None else m.num("launch__shared_mem_per_block")
    dram = m.num("dram__bytes.sum")
    if dram is None:
        rd, wr = m.num("dram__bytes_read.sum"), m.num("dram__bytes_write.sum")
        dram = rd + wr if rd is not None and wr is not None else None
    sm_hz = m.num("sm__cycles_elapsed.avg.per_second", "gpc__cycles_elapsed.avg.per_second")
    block = _dims(ident.get("Block Size"), f"{where}, column 'Block Size'", path) or _metric_dims(m, "block")
    grid = _dims(ident.get("Grid Size"), f"{where}, column 'Grid Size'", path) or _metric_dims(m, "grid")
    regs = m.num("launch__registers_per_thread")
    return NcuKernelRow(
        id=_int(ident["ID"], f"{where}, column 'ID'", path),
        kernel_name=kernel_base_name(printed),
        demangled_name=printed,
        process_id=_opt_int(ident.get("Process ID"), f"{where}, column 'Process ID'", path),
        process_name=ident.get("Process Name") or None,
        device=_opt_int(ident.get("Device"), f"{where}, column 'Device'", path),
        compute_capability=ident.get("CC") or None,
        context_id=_opt_int(ident.get("Context"), f"{where}, column 'Context'", path),
        stream_id=_opt_int(ident.get("Stream"), f"{where}, column 'Stream'", path),
        block=block,
        grid=grid,
        nvtx_ranges=nvtx,
        duration_ns=m.num("gpu__time_duration.sum"),
        replay_passes=_opt_count(m.num("profiler__replayer_passes")),
        sm_throughput_pct=m.num("sm__throughput.avg.pct_of_peak_sustained_elapsed"),
        memory_throughput_pct=m.num("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"),
        dram_throughput_pct=m.num(
            "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
            "dram__throughput.avg.pct_of_peak_sustained_elapsed",
        ),
        achieved_occupancy_pct=m.num("sm__warps_active.avg.pct_of_peak_sustained_active"),
        theoretical_occupancy_pct=m.num("sm__maximum_warps_per_active_cycle_pct"),
        occupancy_limiter=limiter,
        registers_per_thread=None if regs is None else int(regs),
        shared_mem_per_block_bytes=smem,
        dram_bytes=dram,
        dram_bytes_per_s=m.num("dram__bytes.sum.per_second"),
        flop_fp32=m.flop("f"),
        flop_fp64=m.flop("d"),
        flop_fp16=m.flop("h"),
        flop_tf32_tensor=m.num("sm__ops_path_tensor_src_tf32_dst_fp32.sum"),
        flop_bf16_tensor=m.num("sm__ops_path_tensor_src_bf16_dst_fp32.sum"),
        flop_fp16_tensor=m.num("sm__ops_path_tensor_src_fp16.sum"),
        flop_fp8_tensor=m.num("sm__ops_path_tensor_src_fp8.sum"),
        flop_fp64_tensor=m.num("sm__ops_path_tensor_src_fp64.sum"),
        ops_int8_tensor=m.num("sm__ops_path_tensor_src_int8.sum"),
        tensor_instructions=m.num("sm__inst_executed_pipe_tensor.sum"),
        device_name=_text(metrics.get("device__attribute_display_name")),
        device_sm_count=None if (sms := m.num("device__attribute_multiprocessor_count")) is None else int(sms),
        device_max_clock_hz=None if (khz := m.num("device__attribute_clock_rate")) is None else khz * 1e3,
        sm_frequency_hz=sm_hz,
        # Peaks as ncu's SpeedOfLight_RooflineChart section computes them (docs/tools.md, "ncu: roofline peaks").
        peak_fp32_flops=m.product(
            "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained",
            "sm__cycles_elapsed.avg.per_second",
            2.0,
            "gpc__cycles_elapsed.avg.per_second",
        ),
        peak_fp64_flops=m.product(
            "sm__sass_thread_inst_executed_op_dfma_pred_on.sum.peak_sustained",
            "sm__cycles_elapsed.avg.per_second",
            2.0,
            "gpc__cycles_elapsed.avg.per_second",
        ),
        peak_dram_bytes_per_s=m.product("dram__bytes.sum.peak_sustained", "dram__cycles_elapsed.avg.per_second"),
        roofline_levels=levels_from_metrics(m.num, metrics, m.num("gpu__time_duration.sum")),
        metrics=_flagged_as_text(metrics, m.impossible),
        units=units,
        advice=advice,
        impossible=tuple(m.impossible.values()),
    )


def _flagged_as_text(metrics: dict[str, float | str], impossible: dict[str, str]) -> dict[str, float | str]:
    """The launch's metrics with every impossible number (those read above, and any NaN, infinite or
    negative counter among the rest) kept as its text, so no later sum or JSON takes it for a number."""
    for name, value in metrics.items():
        if isinstance(value, float) and name not in impossible and not name.startswith("device__attribute"):
            why = "not a number" if not math.isfinite(value) else "negative" if settled(name, value) < 0 else None
            if why:
                impossible[name] = f"{name} = {value:g} ({why})"
    return {k: f"{v:g}" if k in impossible and isinstance(v, float) else settled(k, v) if isinstance(v, float) else v
            for k, v in metrics.items()}


def _text(value: float | str | None) -> str | None:
    return value.strip() or None if isinstance(value, str) else None


def _metric_dims(m: _Metrics, which: str) -> tuple[int, int, int] | None:
    xyz = [m.num(f"launch__{which}_dim_{a}") for a in "xyz"]
    return None if any(v is None for v in xyz) else (int(xyz[0]), int(xyz[1]), int(xyz[2]))  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# Bracket scanning for demangled names

_OPEN = {")": "(", ">": "<", "]": "["}


def _matching_open(s: str, end: int) -> int:
    """Index of the bracket opening the one that closes at `end` (-1 if unbalanced)."""
    stack: list[str] = []
    for i in range(end, -1, -1):
        c = s[i]
        if c in _OPEN:
            stack.append(_OPEN[c])
        elif c in "(<[":
            if not stack or stack.pop() != c:
                return -1
            if not stack:
                return i
    return -1


def _after_top_level(s: str, sep: str) -> str:
    """The text after the last `sep` that is outside all brackets."""
    depth, cut = 0, 0
    i = 0
    while i < len(s):
        c = s[i]
        if c in "(<[":
            depth += 1
        elif c in ")>]":
            depth = max(0, depth - 1)
        elif depth == 0 and s.startswith(sep, i):
            cut = i + len(sep)
            i += len(sep)
            continue
        i += 1
    return s[cut:]


def kernel_base_name(name: str) -> str:
    """`void at::<unnamed>::foo<float, 4>(int, T2)` -> `foo`; names without a parameter list pass through."""
    return _after_top_level(kernel_qualified_name(name), "::") or name.strip()


def kernel_qualified_name(name: str) -> str:
    """`void at::<unnamed>::foo<float, 4>(int, T2)` -> `at::{unnamed}::foo`: the function with its
    namespaces, without return type, template arguments or parameters (anonymous namespaces as
    `{unnamed}` or `{anon}`)."""
    s = name.strip().replace("<unnamed>", "{unnamed}").replace("(anonymous namespace)", "{anon}")
    if s.endswith(")"):
        start = _matching_open(s, len(s) - 1)
        if start > 0:
            s = s[:start].rstrip()
    if s.endswith(">"):
        start = _matching_open(s, len(s) - 1)
        if start > 0:
            s = s[:start].rstrip()
    s = _after_top_level(s, " ")
    return s or name.strip()
