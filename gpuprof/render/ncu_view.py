"""ncu rows -> Rich tables: one row per kernel, rule advice per variant, and the roofline points."""

from __future__ import annotations

from rich.table import Table

from gpuprof.analysis.roofline import Point, Roof
from gpuprof.commands.ncu import NcuRun
from gpuprof.render import units


def _num(value: float | None, fmt: str = "{:.1f}") -> str:
    return "-" if value is None else fmt.format(value)


def _bytes(value: float | None) -> str:
    if value is None:
        return "-"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value:.0f} B"


def _dims(d: tuple[int, int, int] | None) -> str:
    return "-" if d is None else "x".join(str(x) for x in d if x != 1) or "1"


def kernels_table(run: NcuRun) -> Table:
    title = f"{run.family or 'ncu'}: Nsight Compute, --clock-control {run.clock_control} (report read by {run.reader})"
    table = Table(title=title, title_justify="left")
    for head in ("variant", "kernel", "duration", "SM %", "mem %", "DRAM %", "occupancy ach/theo", "limiter",
                 "regs", "smem/block", "grid", "block", "DRAM bytes", "FLOP", "FLOP/B"):
        table.add_column(head, justify="left" if head in ("variant", "kernel", "limiter") else "right")
    for result in run.results:
        if result.error:
            table.add_row(result.label, "[red]not profiled (reason below)[/]", *[""] * 13)
            continue
        for r in result.rows:
            table.add_row(
                result.label, r.kernel_name[:40],
                units.seconds(r.duration_ns * 1e-9 if r.duration_ns is not None else None),
                _num(r.sm_throughput_pct), _num(r.memory_throughput_pct), _num(r.dram_throughput_pct),
                f"{_num(r.achieved_occupancy_pct)} / {_num(r.theoretical_occupancy_pct, '{:.1f}')}",
                r.occupancy_limiter or "-", _num(r.registers_per_thread, "{:.0f}"),
                _bytes(r.shared_mem_per_block_bytes), _dims(r.grid), _dims(r.block), _bytes(r.dram_bytes),
                _num(r.flop, "{:.3g}") if r.flop else "-", _num(r.arithmetic_intensity, "{:.3g}"),
            )
    table.caption = ("duration: gpu__time_duration.sum; SM/mem/DRAM %: of peak sustained (SpeedOfLight); "
                     "FLOP = fadd + fmul + 2·ffma (FP32+FP64+FP16 SASS counters); FLOP/B = FLOP / dram__bytes.sum.")
    table.caption_justify = "left"
    return table


def advice_table(run: NcuRun, limit: int = 4) -> Table:
    table = Table(title="ncu rule advice (largest estimated speedup first)", title_justify="left")
    table.add_column("variant", no_wrap=True)
    table.add_column("rule")
    table.add_column("est. speedup", justify="right")
    table.add_column("advice")
    for result in run.results:
        items = sorted((a for a in result.advice if a.kind in ("OPT", "WRN")),
                       key=lambda a: -(a.estimated_speedup_pct or 0.0))
        for a in items[:limit]:
            table.add_row(result.label, a.rule or a.section or "-",
                          "-" if a.estimated_speedup_pct is None else f"{a.estimated_speedup_pct:.1f} %",
                          _first_sentence(a.message))
    return table


def _first_sentence(text: str, limit: int = 220) -> str:
    text = " ".join(text.split())
    cut = text.find(". ")
    text = text[: cut + 1] if 0 < cut < limit else text
    return text if len(text) <= limit else text[: limit - 1] + "…"


def roofline_table(points: list[Point], roof: Roof) -> Table:
    table = Table(title=(f"roofline: FP32 {roof.peak_flops / 1e12:.1f} TFLOP/s, DRAM {roof.peak_bytes_s / 1e12:.2f} TB/s, "
                         f"ridge {roof.ridge:.1f} FLOP/B ({roof.source})"), title_justify="left")
    for head in ("variant", "FLOP/B", "achieved", "roof there", "% of roof", "bound"):
        table.add_column(head, justify="left" if head in ("variant", "bound") else "right")
    for p in points:
        table.add_row(p.label, f"{p.intensity:.3g}", units.rate(p.flops, "flop"),
                      units.rate(roof.attainable(p.intensity, p.precision), "flop"),
                      units.percent(p.fraction_of_roof(roof)), f"{p.bound(roof)} ({roof.name(p.precision)})")
    return table
