"""Pure: a run table's rows as the ladder `gpuprof ncu --ladder` prints (analysis/ladder.py), from the
counters each row keeps (its NcuPart) instead of an ncu report: what changed from the rung before
and which limiter moved, in the same words as the terminal.

A row's part is turned back into the one kernel record ladder.build reads (duration, DRAM % and
bytes, per-level bytes, FLOP against the compute peak of the row's precision, instructions,
registers, occupancy limiter), so the verdicts are ladder.py's own. A limiter the part states
(judged when the row was made, from the full per-level roofline) wins over the one these few
counters allow."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from gpuprof.analysis import ladder
from gpuprof.analysis.stall_reasons import describe
from gpuprof.parsers.ncu_levels import RooflineLevels
from gpuprof.parsers.ncu_metrics import NcuKernelRow
from gpuprof.row_parts import NcuPart

# NcuPart's level keys -> the level names of parsers.ncu_levels.
_LEVEL_NAMES = {"l1": "L1", "l2": "L2", "dram": "DRAM"}


def kernel_record(label: str, part: NcuPart, peak_flops: float | None) -> NcuKernelRow:
    """The part as one kernel launch. FLOP count against the compute peak only where the peak of the
    row's own precision is known (peak_flops): a TF32 row is not judged against the FP32 pipe."""
    duration = part.duration_ns
    levels = None
    if part.level_bytes and duration:
        levels = RooflineLevels(traffic={_LEVEL_NAMES[k]: v / (duration * 1e-9)
                                         for k, v in part.level_bytes.items() if k in _LEVEL_NAMES})
    metrics: dict[str, float | str] = {ladder.INSTRUCTIONS: part.instructions} if part.instructions is not None else {}
    return NcuKernelRow(id=0, kernel_name=label, demangled_name=label, duration_ns=duration,
                        sm_throughput_pct=part.sm_pct, memory_throughput_pct=part.memory_pct,
                        dram_throughput_pct=part.dram_pct, achieved_occupancy_pct=part.achieved_occupancy_pct,
                        occupancy_limiter=part.occupancy_limiter, registers_per_thread=part.registers,
                        shared_mem_per_block_bytes=part.shared_mem_bytes, dram_bytes=part.dram_bytes,
                        flop_fp32=part.flop if peak_flops else None, peak_fp32_flops=peak_flops,
                        roofline_levels=levels, metrics=metrics)


def rungs(steps: Sequence[tuple[str, NcuPart, float | None]]) -> list[ladder.Rung]:
    """One rung per (label, part, compute peak of the row's precision), in ladder order."""
    built = ladder.build([ladder.Step(label, [kernel_record(label, part, peak)],
                                      stalls=part.stalls or _top_stall(part))
                          for label, part, peak in steps])
    out: list[ladder.Rung] = []
    for rung, (_, part, _) in zip(built, steps):
        if not part.stalls and part.top_stall and part.top_stall_pct is not None:  # its own share, not 100 %
            rung = replace(rung, top_stall=f"{describe(part.top_stall).label} {part.top_stall_pct:.0f} %")
        if part.limiter:
            rung = replace(rung, measured_limiter=part.limiter, measured=rung.measured if
                           rung.measured_limiter == part.limiter else "")
        if out:
            rung = replace(rung, changes=ladder.changes(out[-1], rung))
        out.append(rung)
    return out


def _top_stall(part: NcuPart) -> dict[str, float]:
    return {part.top_stall: part.top_stall_pct or 0.0} if part.top_stall else {}
