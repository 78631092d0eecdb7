"""`run` / `suite --with ncu,sanitize`: after check and timing, each variant once under Nsight Compute
and under compute-sanitizer, summarised into its row's `ncu` and `sanitizer` fields, so one row
holds whether it is right, how fast, why, and whether it is safe (docs/row-story.md).

The profilers run exactly as `gpuprof ncu` and `gpuprof sanitize` run them (one child for a
family's variants, each variant in its NVTX range; the sanitizer tools side by side, at the
family's middle check size), so a row's `ncu` is what `gpuprof ncu FAMILY -v VARIANT` prints."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from gpuprof.analysis import ladder
from gpuprof.analysis.kernel_summary import duration_weighted
from gpuprof.analysis.stall_reasons import hottest_lines, stall_shares, top_stall
from gpuprof.errors import EnvironmentProblem, InputError, UsageError
from gpuprof.parsers.ncu_metrics import NcuKernelRow
from gpuprof.parsers.ncu_source import KernelSource, LineStats
from gpuprof.progress import ProgressFn
from gpuprof.results import OK, SKIPPED, Row
from gpuprof.row_parts import CLEAN, FINDINGS, MAX_FOUND, NOT_JUDGED, Advice, Finding, HotLine, NcuPart, SanitizerPart
from gpuprof.variants.catalog import Family
from gpuprof.variants.selection import VariantOptions

CHOICES = ("ncu", "sanitize")
# gpuprof ncu's default sections plus `ncu --source`'s (tools.ncu.SOURCE_SECTIONS): the warp-state
# breakdown (the stalls) and the per-instruction samples (the hot lines). 19 -> 27 replay passes of
# each launch on the H100 (ncu 2025.3.1, docs/ncu-source.md); the source text is read from the
# kernel files afterwards, not embedded in the report.
WITH_SECTIONS = ("SourceCounters", "WarpStateStats")
# A row's ncu part keeps its memory levels under row_parts.LEVEL_KEYS: ncu_levels' names for them.
LEVEL_NAMES = {"l1": "L1", "l2": "L2", "dram": "DRAM"}
HOT_LINES = 5  # per variant: enough to point at the loop body, few enough to read in a row
MAX_ADVICE = 6  # ncu's OPT/WRN rule results kept per variant, largest estimated speedup first
ADVICE_KINDS = ("OPT", "WRN")


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

    host = families.host(family)
    judged = [(row, row.ncu, must_read) for row in rows if row.ncu is not None and row.ncu.dram_read_bytes is not None
              and (must_read := host.bytes_read(row.size))]
    if not judged:
        return  # nothing profiled, or a family that does not say what its op reads
    l2_bytes = device_info().l2_bytes
    for row, ncu, must_read in judged:
        byte_witness.mark(row, ncu.dram_read_bytes, must_read, ncu.dram_write_bytes,
                          host.bytes_moved(row.size) - must_read, l2_bytes)


def _attach_ncu(rows: list[Row], target: Any, out_dir: Path, progress: ProgressFn | None) -> None:
    from gpuprof.commands import ncu as ncu_core
    from gpuprof.tools import ncu as ncu_tool

    request = ncu_core.NcuRequest(replace(target, variants=",".join(r.variant for r in rows)), out_dir=out_dir,
                                  sections=(*ncu_tool.SECTIONS, *WITH_SECTIONS))
    run = with_sources(ncu_core.execute(request, progress))
    by_label = {result.label: result for result in run.results}
    for row in rows:
        result = by_label.get(row.variant)
        if result is None:
            row.ncu = NcuPart(error="ncu returned nothing for this variant")
        elif result.error or result.note:
            row.ncu = NcuPart(error=result.error or result.note)
        else:
            row.ncu = replace(ncu_summary(result.rows, result.source), report=str(result.report))


def with_sources(run: Any) -> Any:
    """The run with each variant's per-line data (commands/ncu_source.py), or as it was where the
    report cannot be read that way (no ncu_report module, an unreadable report): a row then has no
    hot lines, and everything else."""
    from gpuprof.commands import ncu_source

    try:
        return ncu_source.with_sources(run)
    except (EnvironmentProblem, InputError):
        return run


def ncu_summary(launches: list[NcuKernelRow], sources: Iterable[KernelSource] = ()) -> NcuPart:
    """One variant's profiled launches as the row keeps them: sums of time, work and bytes per memory
    level, duration-weighted percentages, the longest launch's registers and occupancy limiter, the
    binding roof (analysis/ladder.py's judgement), the stall breakdown, ncu's advice and, from
    `sources` (its launches' per-line data, where read), the hottest lines."""
    longest = max(launches, key=lambda r: r.duration_ns or 0.0)
    measured = ladder.measured_limiter("", launches)

    def total(values: Iterable[float | None]) -> float | None:
        known = [v for v in values if v is not None]
        return math.fsum(known) if known else None

    def weighted(field: str) -> float | None:
        return duration_weighted(launches, lambda r: getattr(r, field))

    stalls = stall_shares(launches)
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
        level_bytes={key: b for key, name in LEVEL_NAMES.items()
                     if (b := ladder.level_bytes(launches, name)) is not None and math.isfinite(b)},
        level_peaks=level_peaks(longest),
        limiter=measured.limiter if measured else None,
        top_stall=stall,
        top_stall_pct=share,
        stalls=stalls,
        hot_lines=hot_lines(list(sources)),
        advice=advice(launches),
    )


def level_peaks(launch: NcuKernelRow) -> dict[str, float]:
    """Each memory level's peak bandwidth (bytes/s) as ncu reports it for the launch, at its clocks."""
    bandwidth = launch.roofline_levels.bandwidth if launch.roofline_levels is not None else {}
    return {key: bandwidth[name] for key, name in LEVEL_NAMES.items()
            if isinstance(bandwidth.get(name), float) and math.isfinite(bandwidth[name]) and bandwidth[name] > 0}


def hot_lines(sources: list[KernelSource]) -> tuple[HotLine, ...]:
    """The variant's HOT_LINES source lines with the most sampled warp stalls, its launches' samples
    summed per line: each with its share of all the samples and its own stalls by reason."""
    total = sum(s.samples for s in sources)
    if total <= 0:
        return ()
    merged: dict[tuple[str, int], LineStats] = {}
    for source in sources:
        for line in source.lines:
            had = merged.get((line.file, line.line))
            if had is None:
                merged[(line.file, line.line)] = line
            else:
                stalls = {r: had.stalls.get(r, 0) + line.stalls.get(r, 0) for r in {*had.stalls, *line.stalls}}
                merged[(line.file, line.line)] = replace(had, samples=had.samples + line.samples, stalls=stalls,
                                                         text=had.text or line.text)
    together = KernelSource(kernel_id=0, kernel_name="", samples=total, lines=tuple(merged.values()))
    return tuple(HotLine(line.file, line.line, together.share(line.samples), line.text or "",
                         {r: 100.0 * n / line.samples for r, n in sorted(line.stalls.items(), key=lambda rn: -rn[1])})
                 for line in hottest_lines(together, HOT_LINES))


def advice(launches: list[NcuKernelRow]) -> tuple[Advice, ...]:
    """ncu's OPT and WRN rule results over the launches, once per rule and message, largest estimated
    speedup first, each message's first sentence."""
    from gpuprof.analysis.advice_order import first_sentence

    ranked = sorted((a for r in launches for a in r.advice if a.kind in ADVICE_KINDS),
                    key=lambda a: -(a.estimated_speedup_pct or 0.0))
    kept: dict[tuple[str, str], Advice] = {}
    for a in ranked:
        message = first_sentence(a.message)
        rule = a.rule or a.section or a.kind
        speedup = a.estimated_speedup_pct if a.estimated_speedup_pct is None or math.isfinite(
            a.estimated_speedup_pct) else None
        kept.setdefault((rule, message), Advice(rule, message, speedup, a.kind))
    return tuple(kept.values())[:MAX_ADVICE]


def _number(value: float | str | None) -> float | None:
    return value if isinstance(value, float) and math.isfinite(value) else None


def _attach_sanitizer(rows: list[Row], target: Any, out_dir: Path, progress: ProgressFn | None) -> None:
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
    found: list[Finding] = []
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
            found += [typed_finding(result, f) for f in result.findings[:MAX_FOUND - len(found)]]
            if result.findings and first is None:
                f = result.findings[0]
                place = f"{f.file}:{f.line}" if f.file and f.line else (f.kernel or "")
                first = f"{result.tool}: {f.kind} {place}".strip()
    for tool, reason in skipped.items():
        tools[tool] = f"skipped: {reason}"
    verdict = FINDINGS if findings else (CLEAN if judged and results else NOT_JUDGED)
    return SanitizerPart(verdict=verdict, findings=findings, first=first, tools=tools, found=tuple(found))


def typed_finding(result: Any, finding: Any) -> Finding:
    """One SanitizerFinding as a row keeps it: the file as the user opens it and its line's text where
    the sanitize run found the file (SanitizeResult.source_of), the tool's message's first line."""
    source = result.source_of(finding)
    message = finding.message.strip().splitlines()
    return Finding(tool=result.tool, kind=finding.kind, kernel=finding.kernel or "",
                   file=source.file if source is not None else finding.file or "", line=finding.line,
                   text=(source.text or "") if source is not None else "", message=message[0] if message else "")
