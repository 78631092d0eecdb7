"""Pure: ncu's rule advice ordered by what the kernel's measured limiter makes relevant.

ncu estimates each rule's speedup on its own, so a memory-bound vector add would lead with "All
compute pipelines are under-utilized" (94 %): true, and no help. Each rule is put in a kind (memory,
compute, latency: occupancy, stalls and issue; launch; other) by its name, else by its section; the
kinds are ordered by the limiter the ladder measured (analysis/ladder.py, `measured_limiter`; its
values are catalog.LIMITERS), and within a group of kinds the largest estimated speedup comes first.
A rule whose own estimate is below NEGLIGIBLE_PCT (L2 compression at 0.0 %) goes after the rest.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Protocol, TypeVar

MEMORY, COMPUTE, LATENCY, LAUNCH, OTHER = "memory", "compute", "latency", "launch", "other"
NEGLIGIBLE_PCT = 1.0  # an estimated speedup below this: ncu itself expects nothing from the fix

# Rule names as ncu 2025.3.1 reports them (the recorded reports under tests/fixtures/tools).
_KIND_OF_RULE = {
    "MemoryCacheAccessPattern": MEMORY, "MemoryL2Compression": MEMORY, "SharedMemoryConflicts": MEMORY,
    "UncoalescedGlobalAccess": MEMORY, "UncoalescedSharedAccess": MEMORY,
    "HighPipeUtilization": COMPUTE, "SOLFPRoofline": COMPUTE,
    "AchievedOccupancy": LATENCY, "TheoreticalOccupancy": LATENCY, "IssueSlotUtilization": LATENCY,
    "CPIStall": LATENCY,
    "LaunchConfiguration": LAUNCH, "WorkloadImbalance": LAUNCH,
}
# Sections whose other rules (a newer ncu's) are read as the section's kind.
_KIND_OF_SECTION = {
    "MemoryWorkloadAnalysis": MEMORY, "MemoryWorkloadAnalysis_Chart": MEMORY, "MemoryWorkloadAnalysis_Tables": MEMORY,
    "ComputeWorkloadAnalysis": COMPUTE, "InstructionStats": COMPUTE,
    "Occupancy": LATENCY, "WarpStateStats": LATENCY, "SchedulerStats": LATENCY,
    "LaunchStats": LAUNCH, "WorkloadDistribution": LAUNCH,
}
# SpeedOfLight's SOLBottleneck points at the section to read next: its kind is that section's.
_BOTTLENECK_POINTERS = (("Memory Workload Analysis", MEMORY), ("Compute Workload Analysis", COMPUTE),
                        ("Launch Statistics", LAUNCH))

# ncu's note on its own inputs, not on the kernel (a CPIStall warning on the H200 with ncu 2025.3:
# "The optional metric smsp__pcsamp_sample_count could not be found. Collecting it ...").
_TOOL_NOTE = re.compile(r"\s*The optional metric \S+ could not be found")

# Per measured limiter, groups of kinds in the order they matter; within a group, by estimated
# speedup. Occupancy, stalls and the launch's shape are one group: which of them holds a kernel
# back is what ncu's estimates tell apart (a one-thread grid: launch; a big grid: occupancy).
_HELD = (LATENCY, LAUNCH)
RELEVANCE: dict[str, tuple[tuple[str, ...], ...]] = {
    "dram": ((MEMORY,), _HELD, (COMPUTE,), (OTHER,)),
    "l2": ((MEMORY,), _HELD, (COMPUTE,), (OTHER,)),
    "l1": ((MEMORY,), _HELD, (COMPUTE,), (OTHER,)),
    "compute": ((COMPUTE,), _HELD, (MEMORY,), (OTHER,)),
    "latency": (_HELD, (MEMORY,), (COMPUTE,), (OTHER,)),  # far from every roof
}
# The heading's words: (the kernel, the advice that leads).
_WORDS = {"dram": ("a DRAM-bound", "memory"), "l2": ("an L2-bound", "memory"), "l1": ("an L1-bound", "memory"),
          "compute": ("a compute-bound", "compute"), "latency": ("a latency-bound", "occupancy, stall and launch")}


class Advice(Protocol):
    """What ordering needs of a rule result (parsers.ncu_metrics.NcuAdvice has it)."""

    @property
    def rule(self) -> str: ...
    @property
    def section(self) -> str: ...
    @property
    def message(self) -> str: ...
    @property
    def estimated_speedup_pct(self) -> float | None: ...


A = TypeVar("A", bound=Advice)


def kind(advice: Advice) -> str:
    """memory, compute, latency (occupancy, stalls, issue), launch (grid shape, waves) or other."""
    if advice.rule == "SOLBottleneck":
        text = " ".join(advice.message.split())
        return next((k for section, k in _BOTTLENECK_POINTERS if section in text), OTHER)
    return _KIND_OF_RULE.get(advice.rule) or _KIND_OF_SECTION.get(advice.section, OTHER)


def order_advice(advice: Iterable[A], limiter: str | None) -> list[A]:
    """The advice, the kinds the limiter makes relevant first (RELEVANCE), then the largest estimated
    speedup (none last); estimates below NEGLIGIBLE_PCT after all the rest; ties keep ncu's order.

    `limiter` is one of catalog.LIMITERS ("dram", "l2", "l1", "compute", "latency"), as
    analysis.ladder.measured_limiter(...).limiter gives it; None or another word: by estimated
    speedup alone. ncu's notes on a metric it lacks are left out (they advise on the profiler, not
    the kernel); other filtering (ncu's OPT and WRN results only) is the caller's."""
    advice = [a for a in advice if not _TOOL_NOTE.match(a.message)]
    groups = RELEVANCE.get(limiter or "", ())
    rank = {k: i for i, group in enumerate(groups) for k in group}

    def key(a: A) -> tuple[bool, int, float]:
        speedup = a.estimated_speedup_pct
        negligible = speedup is not None and speedup < NEGLIGIBLE_PCT
        return negligible, rank.get(kind(a), 0), -(speedup if speedup is not None else -1.0)

    return sorted(advice, key=key)


def ordered_by(limiter: str | None) -> str:
    """What ordered the list, in words: "for a DRAM-bound kernel: memory advice first"."""
    words = _WORDS.get(limiter or "")
    if words is None:
        return "no measured limiter: largest estimated speedup first"
    return f"for {words[0]} kernel: {words[1]} advice first"


def first_sentence(text: str) -> str:
    """The rule's first sentence, whole (the full text: --wide)."""
    text = " ".join(text.split())
    cut = text.find(". ")
    return text[: cut + 1] if cut > 0 else text
