"""`run` / `suite --with ncu,sanitize`: after check and timing, each variant once under Nsight Compute
and under compute-sanitizer, summarised into its row's `ncu` and `sanitizer` fields, so one row
holds whether it is right, how fast, why, and whether it is safe (docs/row-story.md).

The profilers run exactly as `gpuprof ncu` and `gpuprof sanitize` run them (one child for a
family's variants, each variant in its NVTX range; the sanitizer tools side by side, at the
family's middle check size), so a row's `ncu` is what `gpuprof ncu FAMILY -v VARIANT` prints."""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from gpuprof.analysis.kernel_summary import duration_weighted
from gpuprof.errors import EnvironmentProblem, UsageError
from gpuprof.parsers.ncu_metrics import NcuKernelRow
from gpuprof.parsers.ncu_source import WARP_STATE
from gpuprof.progress import ProgressFn
from gpuprof.results import OK, SKIPPED, Row
from gpuprof.row_parts import CLEAN, FINDINGS, NOT_JUDGED, NcuPart, SanitizerPart
from gpuprof.variants.catalog import Family
from gpuprof.variants.selection import VariantOptions

CHOICES = ("ncu", "sanitize")
# gpuprof ncu's default sections plus the warp-state breakdown, for the top stall reason: 19 -> 20
# replay passes on the H100 (ncu 2025.3.1).
WARP_STATE_SECTION = "WarpStateStats"
# Warp states that are not stalls: issuing, and eligible but not picked this cycle.
NOT_STALLS = ("selected", "not_selected")


def parse_with(text: str | None) -> tuple[str, ...]:
    """'ncu,sanitize' -> ('ncu', 'sanitize'); an unknown word is a UsageError naming the choices."""
    if not text:
        return ()
    words = [w.strip() for w in text.split(",") if w.strip()]
    unknown = [w for w in words if w not in CHOICES]
    if unknown or not words:
        raise UsageError(f"--with {text}: choose from {', '.join(CHOICES)} (comma-separated)")
    return tuple(dict.fromkeys(words))


def require_tools(tools: Iterable[str]) -> None:
    """Find the profilers before any variant runs: a missing one is exit 3 now, not after the timing."""
    from gpuprof.tools import ncu as ncu_tool
    from gpuprof.tools import sanitizer

    try:
        if "ncu" in tools:
            ncu_tool.find_ncu(None)
        if "sanitize" in tools:
            sanitizer.find_sanitizer(None)
    except EnvironmentProblem as exc:
        raise EnvironmentProblem(f"--with {','.join(tools)}: {exc.message}") from None


def size_text(family: Family, size: dict[str, int]) -> str:
    """A size as --size takes it: 'm=4096,n=4096,k=4096'."""
    return ",".join(f"{dim}={size[dim]}" for dim in family.dims)


def attach(rows: list[Row], family: Family, size: dict[str, int], options: VariantOptions, tools: tuple[str, ...],
           out_dir: Path, progress: ProgressFn | None = None) -> None:
    """Fill each row's `ncu` (rows checked OK) and `sanitizer` (every row that ran) in place."""
    from dataclasses import replace

    from gpuprof.commands.target import Target

    ran = [r for r in rows if r.check.status != SKIPPED]
    target = Target(families=(family.locator,), options=options)
    if "ncu" in tools:
        ok = [r for r in ran if r.check.status == OK]
        if ok:  # at the row's own size, as timed
            _attach_ncu(ok, replace(target, size=size_text(family, size)), out_dir / "ncu", progress)
            witness_bytes(ok, family)
    if "sanitize" in tools and ran:  # at the family's middle check size, as `gpuprof sanitize` runs
        _attach_sanitizer(ran, target, out_dir / "sanitize", progress)


def witness_bytes(rows: list[Row], family: Family) -> None:
    """Rows whose profiled launch read clearly fewer DRAM bytes than the op must move become
    IMPOSSIBLE, the byte counts named (analysis/byte_witness.py)."""
    from gpuprof import families
    from gpuprof.analysis import byte_witness
    from gpuprof.gpu import device_info
    from gpuprof.results import IMPOSSIBLE

    host = families.host(family)
    judged = [(row, row.ncu, must_read) for row in rows if row.ncu is not None and row.ncu.dram_read_bytes is not None
              and (must_read := host.bytes_read(row.size))]
    if not judged:
        return  # nothing profiled, or a family that does not say what its op reads
    l2_bytes = device_info().l2_bytes
    for row, ncu, must_read in judged:
        why = byte_witness.shortfall(ncu.dram_read_bytes, must_read, ncu.dram_write_bytes,
                                     host.bytes_moved(row.size) - must_read, l2_bytes)
        if why:
            row.check.status = IMPOSSIBLE
            row.check.reasons.append(why)


def _attach_ncu(rows: list[Row], target: Any, out_dir: Path, progress: ProgressFn | None) -> None:
    from dataclasses import replace

    from gpuprof.commands import ncu as ncu_core
    from gpuprof.tools import ncu as ncu_tool

    request = ncu_core.NcuRequest(replace(target, variants=",".join(r.variant for r in rows)), out_dir=out_dir,
                                  sections=(*ncu_tool.SECTIONS, WARP_STATE_SECTION))
    run = ncu_core.execute(request, progress)
    by_label = {result.label: result for result in run.results}
    for row in rows:
        result = by_label.get(row.variant)
        if result is None:
            row.ncu = NcuPart(error="ncu returned nothing for this variant")
        elif result.error or result.note:
            row.ncu = NcuPart(error=result.error or result.note)
        else:
            row.ncu = replace(ncu_summary(result.rows), report=str(result.report))


def ncu_summary(launches: list[NcuKernelRow]) -> NcuPart:
    """One variant's profiled launches as the row keeps them: sums of time and work, duration-weighted
    percentages, the longest launch's registers and limiter, and the top stall reason."""
    longest = max(launches, key=lambda r: r.duration_ns or 0.0)

    def total(values: Iterable[float | None]) -> float | None:
        known = [v for v in values if v is not None]
        return math.fsum(known) if known else None

    def weighted(field: str) -> float | None:
        return duration_weighted(launches, lambda r: getattr(r, field))

    stall, share = top_stall(launches)
    return NcuPart(
        kernels=len(launches),
        duration_ns=total(r.duration_ns for r in launches),
        sm_pct=weighted("sm_throughput_pct"),
        memory_pct=weighted("memory_throughput_pct"),
        dram_pct=weighted("dram_throughput_pct"),
        achieved_occupancy_pct=weighted("achieved_occupancy_pct"),
        occupancy_limiter=longest.occupancy_limiter,
        registers=longest.registers_per_thread,
        shared_mem_bytes=longest.shared_mem_per_block_bytes,
        dram_bytes=total(r.dram_bytes for r in launches),
        dram_read_bytes=total(_number(r.metrics.get("dram__bytes_read.sum")) for r in launches),
        dram_write_bytes=total(_number(r.metrics.get("dram__bytes_write.sum")) for r in launches),
        flop=total(r.flop for r in launches),
        instructions=total(_number(r.metrics.get("smsp__inst_executed.sum")) for r in launches),
        top_stall=stall,
        top_stall_pct=share,
    )


def top_stall(launches: list[NcuKernelRow]) -> tuple[str | None, float | None]:
    """The warp state (not issuing) with the most cycles per issued instruction, summed over the
    launches weighted by their duration, and its share (%) of all stalled cycles."""
    cycles: dict[str, float] = {}
    for launch in launches:
        weight = launch.duration_ns or 0.0
        for name, value in launch.metrics.items():
            m = WARP_STATE.fullmatch(name)
            number = _number(value)
            if m and number is not None and m.group(1) not in NOT_STALLS:
                cycles[m.group(1)] = cycles.get(m.group(1), 0.0) + number * weight
    stalled = math.fsum(cycles.values())
    if stalled <= 0:
        return None, None
    reason = max(sorted(cycles), key=lambda r: cycles[r])
    return reason, 100.0 * cycles[reason] / stalled


def _number(value: float | str | None) -> float | None:
    return value if isinstance(value, float) and math.isfinite(value) else None


def _attach_sanitizer(rows: list[Row], target: Any, out_dir: Path, progress: ProgressFn | None) -> None:
    from dataclasses import replace

    from gpuprof.commands import sanitize as sanitize_core

    request = sanitize_core.SanitizeRequest(replace(target, variants=",".join(r.variant for r in rows)),
                                            out_dir=out_dir)
    family = target.select()[0][0]
    checked_at = sanitize_core.sanitize_size(list(family.check_sizes))
    run = sanitize_core.execute(request, progress)
    for row in rows:
        label = f"{row.family}/{row.variant}"
        results = [r for r in run.results if r.label == label]
        skipped = {s.tool: s.reason for s in run.skipped if s.label == label}
        row.sanitizer = replace(sanitizer_summary(results, skipped), size=dict(checked_at))


def sanitizer_summary(results: list[Any], skipped: dict[str, str]) -> SanitizerPart:
    """Per tool: "clean", "N findings" (with the first one's kind and place), "not judged: why", or
    "skipped: why"; and the verdict over all: clean only when every tool that ran was clean."""
    tools: dict[str, str] = {}
    findings = 0
    first: str | None = None
    judged = True
    for result in results:
        if result.error:
            tools[result.tool] = f"not judged: {result.error}"
            judged = False
        elif result.clean:
            tools[result.tool] = "clean"
        else:
            count = result.counted if result.counted is not None else len(result.findings)
            findings += count
            tools[result.tool] = f"{count} finding{'s' if count != 1 else ''}"
            if result.findings and first is None:
                f = result.findings[0]
                place = f"{f.file}:{f.line}" if f.file and f.line else (f.kernel or "")
                first = f"{result.tool}: {f.kind} {place}".strip()
    for tool, reason in skipped.items():
        tools[tool] = f"skipped: {reason}"
    verdict = FINDINGS if findings else (CLEAN if judged and results else NOT_JUDGED)
    return SanitizerPart(verdict=verdict, findings=findings, first=first, tools=tools)
