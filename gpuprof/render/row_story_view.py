"""The `ncu` and `sanitizer` fields of result rows (`run`/`suite --with`, `show`) as one table per
family: why each variant is as fast as it is, and whether the sanitizer tools found anything."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from gpuprof.analysis.stall_reasons import describe
from gpuprof.render import units
from gpuprof.render.fit import Column, fitted_table, print_table
from gpuprof.results import Row
from gpuprof.row_parts import CLEAN, FINDINGS, NcuPart, SanitizerPart


def print_row_story(console: Console, rows: Sequence[Row], wide: bool) -> None:
    """One table per family that has rows with either field; nothing when none has."""
    families: dict[str, list[Row]] = {}
    for row in rows:
        if row.ncu is not None or row.sanitizer is not None:
            families.setdefault(row.family, []).append(row)
    for family, members in families.items():
        print_table(console, story_table(family, members, None if wide else console.width), wide)


def story_table(family: str, rows: Sequence[Row], width: int | None) -> Any:
    columns = [
        Column("variant", justify="left"),
        Column("ncu time"),
        Column("SM %", 3),
        Column("mem %", 3),
        Column("occupancy", 2),
        Column("regs", 4),
        Column("DRAM", 5),
        Column("top stall", 1, justify="left"),
        Column("sanitizer", justify="left"),
    ]
    cells = [[escape(row.variant), *_ncu_cells(row.ncu), _sanitizer_cell(row.sanitizer)] for row in rows]
    notes = [f"{row.variant}: ncu: {row.ncu.error}" for row in rows if row.ncu and row.ncu.error]
    first = [f"{row.variant}: first finding: {row.sanitizer.first}" for row in rows
             if row.sanitizer and row.sanitizer.first]
    caption = "\n".join([
        ("ncu: each variant once under Nsight Compute at the row's size (gpuprof ncu --source's sections); "
        "top stall = the warp state with the most cycles per issued instruction, share of stalled cycles"),
        "sanitizer: memcheck, racecheck, initcheck, synccheck at the family's middle check size",
        *notes, *first])
    return fitted_table(columns, cells, width, title=f"{family}: why and how safe (--with)", caption=escape(caption))


def _ncu_cells(ncu: NcuPart | None) -> list[str]:
    if ncu is None:
        return ["-"] * 7
    if ncu.error:
        return ["not profiled", *["-"] * 6]
    occupancy = _pct(ncu.achieved_occupancy_pct)
    if ncu.occupancy_limiter:
        occupancy += f" ({ncu.occupancy_limiter})"
    stall = ncu.top_stall
    top = f"{describe(stall).label} {_pct(ncu.top_stall_pct)}" if stall else "-"
    duration = ncu.duration_ns
    registers = ncu.registers
    return [units.seconds(duration * 1e-9 if duration is not None else None), _pct(ncu.sm_pct),
            _pct(ncu.memory_pct), occupancy, str(registers) if registers is not None else "-",
            units.nbytes(ncu.dram_bytes), top]


def _pct(value: float | None) -> str:
    """A percentage as ncu gives it (already ×100)."""
    return "-" if value is None else f"{value:.0f} %"


def _sanitizer_cell(sanitizer: SanitizerPart | None) -> Text | str:
    if sanitizer is None:
        return "-"
    if sanitizer.verdict == FINDINGS:
        return Text(f"{sanitizer.findings} finding(s)", style="red")
    if sanitizer.verdict == CLEAN:
        skipped = [tool for tool, said in sanitizer.tools.items() if said.startswith("skipped")]
        return "clean" + (f" ({', '.join(skipped)} skipped)" if skipped else "")
    return Text("not judged", style="yellow")
