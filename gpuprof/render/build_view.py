"""`gpuprof build`'s table and JSON: ptxas's resource report per kernel, with the shared memory the
launch adds (the manifest's dynamic_smem) and the theoretical occupancy those resources allow.

The table fits the console (render/fit.py): names and define values are never cut; where the
defines do not fit as a column they are listed under the table, one kernel a line."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.table import Table
from rich.text import Text

from gpuprof.analysis.occupancy import Occupancy, limits_for, theoretical_occupancy
from gpuprof.commands.build import BuildResult
from gpuprof.render.fit import Column, fitted_table

# Higher: left out sooner (render/fit.py). The defines go first: they move under the table, one
# kernel a line, rather than vanish (and, the widest column, they make room for the others).
_DROP_DEFINES, _DROP_BARRIERS, _DROP_STACK, _DROP_FAMILY, _DROP_SPILLS, _DROP_LIMIT, _DROP_BLOCKS = 8, 7, 6, 5, 4, 2, 1


def occupancy_of(result: BuildResult, arch: str) -> Occupancy | None:
    """The kernel's theoretical occupancy on `arch`; None without a block size, ptxas's report, or
    limits gpuprof knows for the architecture (docs/occupancy.md)."""
    limits = limits_for(arch)
    if limits is None or result.usage is None or result.threads_per_block is None:
        return None
    try:
        return theoretical_occupancy(result.threads_per_block, result.usage.registers,
                                     result.usage.shared_bytes + result.dynamic_smem_bytes, limits)
    except ValueError:
        return None


def build_json(result: BuildResult, arch: str) -> dict[str, Any]:
    usage = dict(result.usage.__dict__) if result.usage else None
    occ = occupancy_of(result, arch)
    return {"family": result.family, "variant": result.variant, "defines": result.defines, "resources": usage,
            "threads_per_block": result.threads_per_block, "dynamic_smem_bytes": result.dynamic_smem_bytes,
            "smem_bytes": usage["shared_bytes"] + result.dynamic_smem_bytes if usage else None,
            "occupancy": None if occ is None else {
                "blocks_per_sm": occ.blocks_per_sm, "warps_per_sm": occ.warps_per_sm,
                "theoretical_pct": round(100.0 * occ.occupancy, 2), "limiters": list(occ.limiters),
                "note": occ.note or None},
            "error": result.error}


def _defines(result: BuildResult) -> str:
    return " ".join(f"{k}={v}" for k, v in result.defines.items())


def build_table(results: Sequence[BuildResult], arch: str, width: int | None) -> Table:
    """The resource table at `width` (None: every column)."""
    families = {r.family for r in results}
    columns = [
        Column("family", _DROP_FAMILY if len(families) == 1 else 0, justify="left"),
        Column("variant", justify="left"),
        Column("registers"),
        Column("smem (B)"),
        Column("blocks/SM", _DROP_BLOCKS),  # the occupancy column says the same in warps
        Column("occupancy"),
        Column("limit", _DROP_LIMIT, justify="left"),
        Column("spill st/ld (B)", _DROP_SPILLS, dropped_note=_spill_note(results)),
        Column("stack (B)", _DROP_STACK),
        Column("barriers", _DROP_BARRIERS),
        Column("defines", _DROP_DEFINES, justify="left", dropped_note=_defines_note(results)),
    ]
    rows: list[list[str | Text]] = []
    for r in results:
        u = r.usage
        if u is None:
            rows.append([r.family, r.variant, Text("error", style="red"), *["-"] * 7, _defines(r)])
            continue
        occ = occupancy_of(r, arch)
        spill = f"{u.spill_store_bytes}/{u.spill_load_bytes}"
        rows.append([
            r.family, r.variant, str(u.registers), str(u.shared_bytes + r.dynamic_smem_bytes),
            "-" if occ is None else str(occ.blocks_per_sm),
            "-" if occ is None else f"{round(100.0 * occ.occupancy, 1):g} %",
            "-" if occ is None else occ.limiter,
            Text(spill, style="red") if u.spills else spill, str(u.stack_bytes), str(u.barriers), _defines(r),
        ])
    title = f"nvcc -arch={arch} resource report (ptxas -v)" + (f": {next(iter(families))}" if len(families) == 1
                                                                 else "")
    return fitted_table(columns, rows, width, title=title, caption="\n".join(_caption(results, arch)))


def _caption(results: Sequence[BuildResult], arch: str) -> list[str]:
    lines = ["smem = static (ptxas) + dynamic (the manifest's dynamic_smem) per block."]
    if limits_for(arch) is None:
        lines.append(f"blocks/SM, occupancy: gpuprof knows the limits of sm_90 only, not {arch} "
                     "(docs/occupancy.md).")
    else:
        lines.append(f"blocks/SM, occupancy: theoretical, CUDA's occupancy rules for {arch} from registers, "
                     "smem and block size; limit = what stops one more block (docs/occupancy.md).")
    if any(r.usage and r.threads_per_block is None for r in results):
        lines.append("-: no block size (a file built without a family).")
    for r in results:
        occ = occupancy_of(r, arch)
        if occ is not None and occ.note:
            lines.append(f"{r.variant}: {occ.note}.")
    return lines


def _defines_note(results: Sequence[BuildResult]) -> str:
    several = len({r.family for r in results}) > 1
    lines = [f"{r.family}/{r.variant}: {_defines(r)}" if several else f"{r.variant}: {_defines(r)}"
             for r in results if r.defines]
    return "defines —\n" + "\n".join(lines) if lines else ""


def _spill_note(results: Sequence[BuildResult]) -> str:
    spilled = [f"{r.variant} {r.usage.spill_store_bytes}/{r.usage.spill_load_bytes} B"
               for r in results if r.usage and r.usage.spills]
    return f"spill stores/loads: {', '.join(spilled)}." if spilled else ""
