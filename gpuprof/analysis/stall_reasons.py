"""Pure: ncu's warp stall reasons in the user's words, and the hottest lines and reasons of a kernel.

A sample lands on the instruction the warp is waiting to issue, not on the one that caused the
wait: a load's latency shows on the first instruction that uses the loaded value, and a barrier's
wait on the instruction after `__syncthreads()`. The reason names are the suffixes of ncu's
smsp__pcsamp_warps_issue_stalled_<reason> and smsp__average_warps_issue_stalled_<reason>_per_issue_active
metrics (docs/ncu-source.md).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from gpuprof.parsers.ncu_metrics import NcuKernelRow
from gpuprof.parsers.ncu_source import WARP_STATE, KernelSource, LineStats

CAUSE_WIDTH = 60  # the causes are written this short: whole beside label, cycles and share at 100 columns


@dataclass(frozen=True)
class StallReason:
    name: str  # ncu's name
    label: str  # a CUDA programmer's words, short enough for a table cell (at most 12 characters)
    cause: str  # what usually puts warps there (at most CAUSE_WIDTH characters)
    remedy: str  # what to try
    actionable: bool = True  # False where nothing is wrong: issuing, or ready while another warp issues


_REASONS = (
    StallReason("long_scoreboard", "gmem latency",
                "waiting for a global/local memory (L1TEX) load to return",
                "coalesce accesses, reuse data from shared memory or registers, more warps or independent loads "
                "in flight"),
    StallReason("lg_throttle", "gmem queue",
                "too many global/local memory instructions queued (LSU full)",
                "coalesce and widen accesses (float4), fewer separate loads, no register spills"),
    StallReason("short_scoreboard", "smem latency",
                "waiting for a shared-memory or special-math (MUFU) result",
                "remove bank conflicts, keep reused shared values in registers"),
    StallReason("mio_throttle", "smem queue",
                "the shared-memory/special-math (MIO) queue is full",
                "fewer, wider shared accesses (LDS.128), register tiling, remove bank conflicts"),
    StallReason("barrier", "syncthreads",
                "waiting at a block barrier for the block's other warps",
                "balance the work between barriers, fewer barriers, smaller blocks"),
    StallReason("membar", "mem fence",
                "waiting on a memory fence (__threadfence, a release/acquire)",
                "fewer fences, narrower scope (block instead of device)"),
    StallReason("math_pipe_throttle", "math busy",
                "the arithmetic pipe it needs is busy (compute-bound on it)",
                "fine if compute is the limit; else fewer instructions or another pipe (tensor cores, FP32)"),
    StallReason("tex_throttle", "tex queue",
                "the texture unit's queue is full (texture fetches)",
                "fewer texture fetches, or spread them among other work"),
    StallReason("wait", "fixed wait",
                "a fixed wait for an earlier instruction's result",
                "more independent instructions (ILP) or more warps to switch to"),
    StallReason("not_selected", "not picked",
                "ready, but another warp was issued: latency is hidden",
                "nothing: this is the sign of enough parallelism", actionable=False),
    StallReason("selected", "issuing",
                "the warp was issuing an instruction (not a stall)",
                "to go faster do less work: fewer or cheaper instructions", actionable=False),
    StallReason("dispatch_stall", "dispatch",
                "picked, but the dispatcher held it back (pipeline conflict)",
                "usually nothing to do; large when many warps compete for one pipe"),
    StallReason("no_instruction", "inst fetch",
                "no instruction fetched yet (instruction-cache miss, jump)",
                "smaller code in hot loops (less unrolling), fewer branches"),
    StallReason("branch_resolving", "branch",
                "waiting for a branch target or for threads to reconverge",
                "fewer branches and less divergence within a warp"),
    StallReason("drain", "store drain",
                "at exit, waiting for the warp's stores to reach memory",
                "usually small; fewer, coalesced stores at the end"),
    StallReason("sleeping", "sleeping",
                "asleep (__nanosleep) or all its threads are blocked",
                "check spin-waits and nanosleep back-off"),
    StallReason("imc_miss", "const miss",
                "a constant-cache miss (kernel parameters, __constant__ data)",
                "usual at a kernel's start; let a warp's threads read the same constant"),
    StallReason("misc", "misc",
                "a hardware reason ncu groups as miscellaneous",
                "nothing specific"),
    StallReason("gmma", "wgmma wait",
                "waiting for a warpgroup matrix multiply (wgmma) to finish",
                "more wgmma work in flight: deeper pipelining, larger tiles"),
    StallReason("warpgroup_arrive", "wg arrive",
                "waiting at a warpgroup arrive/fence before a wgmma",
                "more independent work between the fence and the wgmma"),
)
REASONS: dict[str, StallReason] = {r.name: r for r in _REASONS}


def describe(name: str) -> StallReason:
    """The reason in words; a name this list lacks (a newer ncu) is shown as ncu spells it."""
    return REASONS.get(name) or StallReason(name, name.replace("_", " "), "a reason gpuprof has no description for",
                                            "see the Nsight Compute Profiling Guide")


def hottest_lines(source: KernelSource, n: int) -> list[LineStats]:
    """The n lines with the most samples (none without samples), most first; ties by file and line."""
    sampled = [line for line in source.lines if line.samples > 0]
    return sorted(sampled, key=lambda line: (-line.samples, line.file, line.line))[:max(n, 0)]


def top_reasons(stalls: Mapping[str, float], n: int = 2) -> list[tuple[str, float]]:
    """The n largest reasons with their share (%) of the total, largest first; none when empty."""
    total = sum(stalls.values())
    if total <= 0:
        return []
    ranked = sorted(((r, v) for r, v in stalls.items() if v > 0), key=lambda rv: (-rv[1], rv[0]))
    return [(reason, 100.0 * value / total) for reason, value in ranked[:n]]


# Warp states that are not stalls: issuing, and eligible but not picked this cycle.
NOT_STALLS = ("selected", "not_selected")


def warp_state_cycles(launches: Iterable[NcuKernelRow]) -> dict[str, float]:
    """WarpStateStats' warp cycles per issued instruction by stall reason (issuing and not picked left
    out), each launch weighted by its duration; {} when the launches carry no WarpStateStats."""
    cycles: dict[str, float] = {}
    for launch in launches:
        weight = launch.duration_ns or 0.0
        for name, value in launch.metrics.items():
            m = WARP_STATE.fullmatch(name)
            if m and isinstance(value, float) and math.isfinite(value) and m.group(1) not in NOT_STALLS:
                cycles[m.group(1)] = cycles.get(m.group(1), 0.0) + value * weight
    return cycles


def stall_shares(launches: Iterable[NcuKernelRow]) -> dict[str, float]:
    """Every stall reason as its share (%) of all stalled cycles over the launches (warp_state_cycles),
    largest first; {} without WarpStateStats."""
    cycles = warp_state_cycles(launches)
    stalled = math.fsum(cycles.values())
    if stalled <= 0:
        return {}
    return {reason: 100.0 * value / stalled for reason, value in sorted(cycles.items(), key=lambda rv: (-rv[1], rv[0]))}


def top_stall(launches: Iterable[NcuKernelRow]) -> tuple[str | None, float | None]:
    """The stall reason with the most warp cycles per issued instruction over the launches
    (warp_state_cycles), and its share (%) of all stalled cycles; (None, None) without WarpStateStats."""
    shares = stall_shares(launches)
    if not shares:
        return None, None
    reason = next(iter(shares))  # largest first, ties by name
    return reason, shares[reason]


def kernel_reasons(source: KernelSource) -> list[tuple[str, float, float]]:
    """(reason, warp cycles per issued instruction, share %) for the kernel, most first.

    From the WarpStateStats ratios where the report has them; otherwise from the samples, with the
    cycles left out (NaN)."""
    if source.warp_states:
        total = sum(source.warp_states.values())
        ranked = sorted(source.warp_states.items(), key=lambda rv: (-rv[1], rv[0]))
        return [(r, v, 100.0 * v / total if total else 0.0) for r, v in ranked if v > 0]
    return [(r, float("nan"), share) for r, share in top_reasons(source.stalls, len(source.stalls))]


def lines_at(source: KernelSource, place: str) -> list[LineStats]:
    """The lines a user's FILE:LINE names: the file as shown, its base name, or the recorded name's end."""
    file, _, number = place.rpartition(":")
    if not file or not number.isdigit():
        return []
    wanted = int(number)
    return [line for line in source.lines if line.line == wanted and _same_file(file, line.file, source.files)]


def _same_file(given: str, shown: str, recorded: Mapping[str, str]) -> bool:
    names = {shown, *(r for r, s in recorded.items() if s == shown)}
    return any(n == given or n.endswith("/" + given.lstrip("./")) for n in names)
