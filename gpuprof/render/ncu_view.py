"""ncu rows -> Rich tables that fit the terminal: one row per distinct kernel (or per launch), the
rules' advice as a list under the table, and the roofline points."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Group
from rich.text import Text

from gpuprof.analysis.advice_order import first_sentence
from gpuprof.analysis.kernel_summary import KernelSummary, summarize_kernels
from gpuprof.analysis.roofline import Point, Roof
from gpuprof.commands.ncu import NcuRun
from gpuprof.parsers.ncu_metrics import NcuAdvice, NcuKernelRow
from gpuprof.render import units
from gpuprof.render.fit import Column, fitted_table
from gpuprof.render.kernel_names import short_names

if TYPE_CHECKING:
    from rich.table import Table

# Occupancy limiters as the table prints them (launch__occupancy_limit_<name>).
LIMITER_WORDS = {"registers": "regs", "shared_mem": "smem", "warps": "warps", "blocks": "blocks",
                 "barriers": "barriers"}


def _num(value: float | None, fmt: str = "{:.1f}") -> str:
    return "-" if value is None else fmt.format(value)


def _dims(d: tuple[int, int, int] | None) -> str:
    return "-" if d is None else "x".join(str(x) for x in d if x != 1) or "1"


def _ns(value: float | None) -> str:
    return units.seconds(value * 1e-9 if value is not None else None)


def limiter_text(limiter: str | None) -> str:
    return "-" if not limiter else "+".join(LIMITER_WORDS.get(part, part) for part in limiter.split("+"))


def _occupancy(achieved: float | None, theoretical: float | None) -> str:
    return f"{_num(achieved, '{:.0f}')}/{_num(theoretical, '{:.0f}')}"


def kernel_label(names: dict[str, str], full_name: str, wide: bool) -> str:
    return full_name if wide else names[full_name]


def _title(run: NcuRun, what: str) -> str:
    filtered = f"; {run.launch_filter}" if run.launch_filter else ""
    return f"{run.family or 'ncu'}: {what} (Nsight Compute, --clock-control {run.clock_control}{filtered})"


_CAPTION = ("kernel: name stem (full names: --wide, --json); occupancy: achieved/theoretical %; "
            "SM/mem %: of peak sustained (SpeedOfLight); limiter: what caps blocks per SM")


IMPOSSIBLE_MARK = " !"
_IMPOSSIBLE_CAPTION = "; !: the report holds values no launch can have, left out (listed below)"


def impossible_lines(run: NcuRun) -> list[str]:
    """One line per launch whose report values are impossible (parsers.ncu_metrics.impossible_value):
    the kernel, its ID and each metric with its value; they are left out of every figure."""
    return [f"{r.demangled_name} (ID {r.id}): {'; '.join(r.impossible)}"
            for result in run.results for r in result.rows if r.impossible]


def summary_table(run: NcuRun, width: int | None, wide: bool = False) -> Table:
    """One row per distinct kernel, largest total time first."""
    summaries = summarize_kernels(r for result in run.results for r in result.rows)
    names = short_names([s.name for s in summaries])
    columns = [Column("kernel", 0, "left"), Column("NVTX range", 3, "left"), Column("launches", 0),
               Column("total", 0), Column("mean", 4), Column("share", 0), Column("regs", 5),
               Column("occupancy", 2), Column("SM %", 1), Column("mem %", 1), Column("limiter", 2, "left")]
    rows: list[list[str | Text]] = [
        [kernel_label(names, s.name, wide) + (IMPOSSIBLE_MARK if s.impossible else ""), s.nvtx_range or "-",
         str(s.launches), _ns(s.total_ns), _ns(s.mean_ns), f"{s.share_pct:.1f} %", _num(s.registers, "{:.0f}"),
         _occupancy(s.achieved_occupancy_pct, s.theoretical_occupancy_pct), _num(s.sm_pct, "{:.0f}"),
         _num(s.memory_pct, "{:.0f}"), limiter_text(s.limiter)]
        for s in summaries]
    launches = sum(s.launches for s in summaries)
    return fitted_table(columns, rows, None if wide else width,
                        title=_title(run, f"{len(summaries)} kernels, {launches} launches profiled"),
                        caption=_CAPTION + "; share: of the profiled launches' summed duration"
                        + (_IMPOSSIBLE_CAPTION if any(s.impossible for s in summaries) else ""))


def launches_table(run: NcuRun, width: int | None, wide: bool = False) -> Table:
    """One row per profiled launch, grouped by variant (or NVTX range)."""
    names = short_names([r.demangled_name for result in run.results for r in result.rows])
    # A family's rows are labelled by variant; a program's by the NVTX range each launch ran in.
    columns = [Column("variant" if run.family else "NVTX range", 0, "left"), Column("kernel", 0, "left"),
               Column("duration", 0),
               Column("SM %", 1), Column("mem %", 1), Column("DRAM %", 3), Column("occupancy", 2),
               Column("limiter", 2, "left"), Column("regs", 4), Column("smem/block", 6), Column("grid", 5),
               Column("block", 5), Column("DRAM bytes", 7), Column("FLOP", 7), Column("FLOP/B", 6)]
    rows: list[list[str | Text]] = []
    for result in run.results:
        if result.error:
            rows.append([result.label, "not profiled (reason below)", *["-"] * (len(columns) - 2)])
            continue
        for r in result.rows:
            label = result.label if run.family else (r.nvtx_ranges[-1] if r.nvtx_ranges else "-")
            rows.append([
                label, kernel_label(names, r.demangled_name, wide) + (IMPOSSIBLE_MARK if r.impossible else ""),
                _ns(r.duration_ns),
                _num(r.sm_throughput_pct), _num(r.memory_throughput_pct), _num(r.dram_throughput_pct),
                _occupancy(r.achieved_occupancy_pct, r.theoretical_occupancy_pct), limiter_text(r.occupancy_limiter),
                _num(r.registers_per_thread, "{:.0f}"), units.nbytes(r.shared_mem_per_block_bytes), _dims(r.grid),
                _dims(r.block), units.nbytes(r.dram_bytes), _num(r.flop, "{:.3g}") if r.flop else "-",
                _num(r.arithmetic_intensity, "{:.3g}"),
            ])
    launches = sum(len(result.rows) for result in run.results)
    caption = (_CAPTION + "; FLOP = fadd + fmul + 2·ffma (FP32+FP64+FP16 SASS counters); "
               "FLOP/B = FLOP / dram__bytes.sum" + (_IMPOSSIBLE_CAPTION if any(r.impossible for r in rows_of(run))
                                                    else ""))
    return fitted_table(columns, rows, None if wide else width,
                        title=_title(run, f"{launches} launches, report read by {run.reader}"), caption=caption)


def advice_list(items: Sequence[tuple[str, Sequence[NcuAdvice], str | None]], limit: int = 4,
                full: bool = False) -> Group:
    """The rules' advice under the table: per kernel or variant (label, advice, measured limiter),
    the kinds of advice its limiter makes relevant first, then the largest estimated speedup
    (analysis/advice_order.py)."""
    from gpuprof.analysis.advice_order import order_advice, ordered_by

    lines: list[Text] = [Text("ncu rule advice (per kernel: what its measured limiter makes relevant first)",
                              style="bold")]
    for label, advice, limiter in items:
        chosen = order_advice((a for a in advice if a.kind in ("OPT", "WRN")), limiter)
        if not chosen:
            continue
        heading = Text(f"  {label}", style="cyan")
        heading.append(f" ({ordered_by(limiter)})", style="dim")
        lines.append(heading)
        for a in chosen[:limit]:
            speedup = "" if a.estimated_speedup_pct is None else f", est. speedup {a.estimated_speedup_pct:.1f} %"
            line = Text("    - ")
            line.append(f"{a.rule or a.section or a.kind}{speedup}: ", style="bold")
            line.append(" ".join(a.message.split()) if full else first_sentence(a.message))
            lines.append(line)
    if len(lines) == 1:
        lines.append(Text("  (no OPT or WRN rule results in the report)"))
    return Group(*lines)


def measured_limiter(label: str, rows: Sequence[NcuKernelRow]) -> str | None:
    """The limiter the ladder would measure for these launches (analysis/ladder.py); None without data."""
    from gpuprof.analysis.ladder import measured_limiter as measure

    measured = measure(label, rows)
    return measured.limiter if measured else None


def summary_advice(run: NcuRun, top: int = 5, full: bool = False) -> Group:
    summaries = summarize_kernels(r for result in run.results for r in result.rows)
    names = short_names([s.name for s in summaries])
    return advice_list([(names[s.name], s.advice, measured_limiter(s.name, s.rows)) for s in summaries[:top]],
                       full=full)


def variant_advice(run: NcuRun, full: bool = False) -> Group:
    return advice_list([(result.label, result.advice, measured_limiter(result.label, result.rows))
                        for result in run.results], full=full)


NO_LEVELS = ("memory levels (L1, L2): not in this report, so DRAM alone is judged; gpuprof's default metrics "
             "and ncu --set full carry them")


def why_no_levels(points: list[Point], rows: list[NcuKernelRow]) -> str:
    """Why the points are judged against DRAM alone: the report has no cache levels, or it has them
    but no peak for the precision doing most of the FLOPs (a cuBLAS HGEMM's half-precision FMAs and
    FP16-accumulate tensor ops: gpuprof's metrics carry the FP32, FP64 and FP32-accumulate peaks)."""
    peaks = {k for r in rows if r.roofline_levels is not None for k in r.roofline_levels.peak_work}
    if not any(r.roofline_levels is not None for r in rows):
        return NO_LEVELS
    from gpuprof.analysis.roofline import PRECISION_NAMES

    missing = sorted({PRECISION_NAMES.get(p.precision, p.precision) for p in points if p.precision not in peaks})
    if not missing:
        return NO_LEVELS
    return (f"memory levels (L1, L2): in the report, but it holds no {' or '.join(missing)} peak, the precision "
            "of most of these FLOPs, so DRAM alone is judged")


def roofline_table(points: list[Point], roof: Roof, width: int | None, rows: list[NcuKernelRow] | None = None):
    """Per kernel or variant, the roof that binds it: by memory level where the report has the
    hierarchical data (docs/tools.md, "ncu: hierarchical roofline"), else against DRAM alone.
    rows: the launches behind the points, to say why a point has no levels."""
    if any(p.levels is not None for p in points):
        return level_table(points, roof, width)
    columns = [Column("kernel / variant", 0, "left"), Column("FLOP/B", 0), Column("achieved", 1),
               Column("roof there", 2), Column("% of roof", 0), Column("bound", 1, "left")]
    table_rows = [[p.label, f"{p.intensity:.3g}", units.rate(p.flops, "flop"),
                   units.rate(roof.attainable(p.intensity, p.precision), "flop"),
                   units.percent(p.fraction_of_roof(roof)), p.bound(roof)] for p in points]
    title = (f"roofline: FP32 {roof.peak_flops / 1e12:.1f} TFLOP/s, DRAM {roof.peak_bytes_s / 1e12:.2f} TB/s, "
             f"ridge {roof.ridge:.1f} FLOP/B")
    reason = NO_LEVELS if rows is None else why_no_levels(points, rows)
    return fitted_table(columns, table_rows, width, title=title, caption=f"peaks: {roof.source}\n{reason}")


def kernel_points(summaries: list[KernelSummary], names: dict[str, str]) -> list[Point]:
    from gpuprof.analysis import roofline

    return [p for s in summaries if (p := roofline.point(names[s.name], list(s.rows)))]


def rows_of(run: NcuRun) -> list[NcuKernelRow]:
    return [r for result in run.results for r in result.rows]


_LEVEL_CAPTION = ("bound: the tightest roof (L1 pipe: the L1/shared data pipe, 128 B per wavefront; L1: ncu's L1 "
                  "writeback roof); FLOP/B and roof there: at that level; L1 pipe ... DRAM: FLOP per byte at each "
                  "level; peaks: ncu's metrics at the profiled clocks")


# A kernel without the per-level counters in a table of kernels with them: judged against DRAM alone.
DRAM_ONLY_MARK = "†"
DRAM_ONLY_NOTE = (f"{DRAM_ONLY_MARK}: no per-level counters for this kernel: judged against DRAM and the compute "
                  "peak alone")


def level_table(points: list[Point], roof: Roof, width: int | None):
    """The hierarchical roofline: the binding level, its intensity and roof, how close each kernel
    comes; each verdict with its numbers in the caption. A point without the hierarchical data
    keeps its DRAM-only verdict."""
    from gpuprof.analysis.roofline import LEVEL_WORDS

    levels = [lv for lv in LEVEL_WORDS if any(p.levels and p.levels.level(lv) for p in points)]
    columns = [Column("kernel / variant", 0, "left"), Column("bound", 0, "left"), Column("FLOP/B", 1),
               Column("achieved", 0), Column("roof there", 2), Column("% of roof", 0), Column("precision", 7, "left"),
               *(Column(lv, 3 + i) for i, lv in enumerate(levels))]
    rows = []
    verdicts = []
    for p in points:
        hp = p.levels
        if hp is None:
            rows.append([p.label, ("DRAM" if p.bound(roof) == "memory" else p.bound(roof)) + DRAM_ONLY_MARK,
                         f"{p.intensity:.3g}", units.rate(p.flops, "flop"),
                         units.rate(roof.attainable(p.intensity, p.precision), "flop"),
                         units.percent(p.fraction_of_roof(roof)), p.precision, *["-"] * len(levels)])
            continue
        binding = hp.binding
        rows.append([p.label, "compute" if binding is None else binding.level,
                     "-" if binding is None else f"{binding.intensity:.3g}", units.rate(hp.flops, "flop"),
                     units.rate(hp.attainable, "flop"), units.percent(hp.fraction), hp.precision,
                     *(f"{b.intensity:.3g}" if (b := hp.level(lv)) else "-" for lv in levels)])
        verdicts.append(f"{p.label}: {hp.verdict}: {hp.reason}")
    dram_only = [DRAM_ONLY_NOTE] if any(p.levels is None for p in points) else []
    caption = "\n".join([*verdicts, _LEVEL_CAPTION, *dram_only])
    return fitted_table(columns, rows, width, title="roofline by memory level", caption=caption)

