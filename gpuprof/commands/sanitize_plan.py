"""Which variants share a `gpuprof sanitize` child, and which child starts first.

One child per family and tool: one Python start-up, one set of imports and one CUDA context for all
of a family's variants (start-ups, not kernels, were most of the time). A run's wall time is then
set by how the children pack onto the `--jobs` slots, and a few children dominate: on the H100 the
PyTorch rows (eager, torch.compile) made mnist's and fused's memcheck and initcheck children 26-40 s
against 2.5 s for a trivial one, and they have few variants, so a static cost (tool x batch size)
started them late.

So each child gets an expected time: its own recorded wall time (sanitize_times) when it ran before;
else, when every variant ran in some child of the same tool, family, size and options, the fixed
cost plus each variant's share; else a static prior (tool cost x variants, only to order children
never seen). A child whose recorded time is above its share of the run (the sum of the expected
times / jobs) is split: each library variant (a vendor row or a Python variant: PyTorch, Triton,
torch.compile, CuPy's libraries) in a child of its own, the CUDA variants together, in as many
children as their own time needs; a split costs one more start-up per part, so only the children
that would otherwise finish last are split. Children start longest first; a part with no time of
its own is expected to take as long as the child it came from (an upper bound), so the parts of the
slowest children start at once. Every variant still runs under every tool it ran under before.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from itertools import pairwise

from gpuprof.commands.sanitize_times import ChildKey, ChildTimes, key_of
from gpuprof.tools.target import LaunchTarget

# A child that checks next to nothing (synccheck of a small family) took 2.3-2.8 s on the H100:
# Python and CUDA start-up under the tool. Subtracted before a batch's time is shared by its variants.
FIXED_CHILD_S = 2.5
# Which tool's children take longest (racecheck tracks every shared-memory access, initcheck every
# byte's state): the static prior, used only to order children no run has timed yet.
TOOL_COST = {"racecheck": 4, "initcheck": 3, "memcheck": 2, "synccheck": 1}
PRIOR_VARIANT_S = 0.5  # seconds per variant and unit of TOOL_COST in that prior
BATCH_SIZE = 16  # variants per child at most: in practice a whole family (the largest has 12)


@dataclass(frozen=True)
class Skipped:
    """A (variant, tool) pair not run, and why."""

    label: str
    tool: str
    reason: str


@dataclass(frozen=True)
class SanitizeJob:
    """One child: some of one family's variants under one tool."""

    targets: tuple[LaunchTarget, ...]
    tool: str
    expected_s: float = 0.0  # what the start order goes by

    @property
    def label(self) -> str:
        first = self.targets[0]
        return f"{first.family}/{','.join(t.variant for t in self.targets)}"

    @property
    def key(self) -> ChildKey:
        return key_of(self.targets, self.tool)

    @property
    def short(self) -> str:
        """'mnist/compiled initcheck', or 'mnist (3 variants) initcheck' for a batch."""
        first = self.targets[0]
        what = f"{first.family}/{first.variant}" if len(self.targets) == 1 else \
            f"{first.family} ({len(self.targets)} variants)"
        return f"{what} {self.tool}"


def plan_jobs(targets: Sequence[LaunchTarget], tools: Sequence[str], skip: dict[tuple[str, str], str] | None = None,
              batch_size: int = BATCH_SIZE) -> tuple[list[SanitizeJob], list[Skipped]]:
    """Batches of one family's variants per tool (a user's variant always alone: it is the one most
    likely to crash), and the pairs in skip, with their reasons."""
    skip = skip or {}
    jobs: list[SanitizeJob] = []
    skipped: list[Skipped] = []
    for name in tools:
        batch: list[LaunchTarget] = []
        for target in targets:
            label = f"{target.family}/{target.variant}"
            if (label, name) in skip:
                skipped.append(Skipped(label, name, skip[(label, name)]))
                continue
            if target.add:
                jobs.append(SanitizeJob((target,), name))
                continue
            if batch and (batch[0].family != target.family or batch[0].size != target.size
                          or len(batch) >= batch_size):
                jobs.append(SanitizeJob(tuple(batch), name))
                batch = []
            batch.append(target)
        if batch:
            jobs.append(SanitizeJob(tuple(batch), name))
    return jobs, skipped


def prior_s(job: SanitizeJob) -> float:
    return FIXED_CHILD_S + TOOL_COST.get(job.tool, 2) * PRIOR_VARIANT_S * len(job.targets)


def estimate(job: SanitizeJob, times: ChildTimes) -> tuple[float, bool]:
    """(expected seconds, whether recorded times gave it)."""
    key = job.key
    recorded = times.exact(key)
    if recorded is not None:
        return recorded, True
    shares = [times.variant_share(key, variant, FIXED_CHILD_S) for variant in key.variants]
    if shares and all(s is not None for s in shares):
        return FIXED_CHILD_S + sum(s for s in shares if s is not None), True
    return prior_s(job), False


def split(job: SanitizeJob, seconds: float, share: float, alone: Collection[str],
          times: ChildTimes) -> list[SanitizeJob]:
    """The parts of a child expected to take `seconds`, over `share`: each variant in `alone` by
    itself, the others together, cut into ceil(their time / share) runs of neighbours (all of
    them when their time is unknown, as when library variants took it)."""
    library = [t for t in job.targets if f"{t.family}/{t.variant}" in alone]
    rest = [t for t in job.targets if f"{t.family}/{t.variant}" not in alone]
    parts: list[tuple[LaunchTarget, ...]] = [(t,) for t in library]
    if rest:
        if library:
            rest_s, known = estimate(SanitizeJob(tuple(rest), job.tool), times)
            pieces = math.ceil(rest_s / share) if known else 1
        else:
            pieces = math.ceil(seconds / share)
        pieces = max(1, min(len(rest), pieces))
        bounds = [round(i * len(rest) / pieces) for i in range(pieces + 1)]
        parts += [tuple(rest[a:b]) for a, b in pairwise(bounds)]
    parts.sort(key=lambda part: job.targets.index(part[0]))  # the family's order, for the logs
    return [SanitizeJob(part, job.tool) for part in parts]


def schedule(jobs: Sequence[SanitizeJob], times: ChildTimes, workers: int,
             alone: Collection[str] = frozenset()) -> list[SanitizeJob]:
    """The children to start, longest expected first (plan order among equals), with children
    recorded as slower than their share of the run split (see the module's docstring)."""
    estimates = [estimate(job, times) for job in jobs]
    share = sum(seconds for seconds, _ in estimates) / max(1, workers)
    out: list[SanitizeJob] = []
    for job, (seconds, measured) in zip(jobs, estimates):
        if measured and len(job.targets) > 1 and workers > 1 and seconds > share:
            parts = split(job, seconds, share, alone, times)
            if len(parts) > 1:
                out += [replace(part, expected_s=_own_or(times, part, seconds)) for part in parts]
                continue
        out.append(replace(job, expected_s=seconds))
    return sorted(out, key=lambda job: -job.expected_s)


def _own_or(times: ChildTimes, part: SanitizeJob, bound: float) -> float:
    recorded = times.exact(part.key)
    return bound if recorded is None else recorded
