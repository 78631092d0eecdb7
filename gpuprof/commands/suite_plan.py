"""The order `gpuprof suite --gpus` hands its units out in: longest first, a GPU keeping to the
families it has started.

Each unit (one variant of one case at one size) gets an expected wall time, from an earlier results
file when it holds that row, else from a model: the launch time at the unit's size (bytes over DRAM
bandwidth or FLOP over the precision's peak, whichever binds, divided by the variant's
`expected_efficiency` from its manifest), times the launches the stop rule and the checks take,
plus a fixed cost per unit.

A GPU's process pays a family's first use once: its reference, input and check kernels compiled or
loaded, its libraries' handles, torch.compile's start-up. On two H200s a family started on both GPUs
paid it twice (9 to 13 s for fused, histogram and the first check), and two torch.compile units
compiling side by side took 28 s each against 19 and 14 s one after the other. So each time a GPU is
free (`Dispatch`) it takes the longest unit left of a family it has run; else the longest unit of
the untouched family with the most work left; else the longest unit left anywhere (the end of the
run, evening out). It never leaves a GPU idle while units are left, so the list-scheduling bound
holds: the makespan is at most (sum of durations) / GPUs + the longest unit. Pure apart from reading
the catalogue; no GPU.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpuprof import families, results
from gpuprof.analysis import ceilings
from gpuprof.commands.suite import case_variants, policy_of, sweep_label
from gpuprof.families import registry
from gpuprof.suite_file import Suite
from gpuprof.variants.catalog import Variant
from gpuprof.variants.sizes import clip

# Per unit, beyond its timed samples: an NVRTC compile (from the shared disk cache after the first
# run), the check at the family's small check sizes, pipe traffic and the row's bookkeeping.
UNIT_FIXED_S = 1.0
# Launches of the kernel outside the samples: 3 warm-up, 1 cold probe, the check at the benchmark
# size, the re-check after timing and the two integrity audits (skipped work, another stream).
EXTRA_LAUNCHES = 8
# An L2 flush (twice a 50 MB L2 read at ~2 TB/s) before every cold sample.
FLUSH_S = 50e-6
# A variant whose manifest gives no expected_efficiency: a fair hand-written or library kernel.
DEFAULT_EFFICIENCY = 0.5
# When no GPU name is known: the GPU the course is recorded on (docs/PERFORMANCE.md).
DEFAULT_GPU = "NVIDIA H100 80GB HBM3"


@dataclass(frozen=True)
class Unit:
    """One variant of one case at one size; number is its place in the suite's order."""

    number: int
    case_index: int
    variant: str
    size: dict[str, int] | None


@dataclass(frozen=True)
class Estimate:
    seconds: float
    source: str  # "history" (an earlier results file) or "model"


def units_of(suite: Suite) -> list[Unit]:
    """Every (case, size, variant) in the suite's order; 'all' expands to the family's variants."""
    units: list[Unit] = []
    for index, case in enumerate(suite.cases):
        if case.variants == "all":
            family = registry.resolve(case.family)
            names = [*family.variant_names, *(v.name for v in case_variants(suite, case))]
        else:
            names = list(case.variants)
        sizes: Sequence[dict[str, int] | None] = case.sizes or [None]  # None: the family's default size
        for size in sizes:
            units.extend(Unit(len(units), index, name, size) for name in names)
    return units


def unit_row(suite: Suite, unit: Unit) -> tuple[Variant, str, dict[str, int]]:
    """The unit's variant (with the case's defines), the id its row will have, and its timed size."""
    case = suite.cases[unit.case_index]
    family = registry.resolve(case.family)
    extra = case_variants(suite, case)
    if extra:
        family = family.with_variants(extra)
    [variant] = family.apply_defines(family.select([unit.variant]), case.defines)
    size = clip(dict(unit.size or family.default_size), variant.max_size)
    return variant, results.row_id(family.name, variant.name + sweep_label(case.defines), size), size


def model_launch_s(bytes_moved: float, flop: float, precision: str, efficiency: float,
                   peaks: ceilings.Ceilings) -> float:
    """One launch at the roofline's binding limit, slowed by the variant's expected efficiency."""
    bandwidth = peaks.bandwidth_bytes_s or 3.35e12
    peak = peaks.flops.get(precision) or peaks.flops.get("fp32") or 67e12
    return max(bytes_moved / bandwidth, flop / peak) / efficiency


def model_unit_s(launch_s: float, timing: dict[str, Any]) -> float:
    """A unit's wall time for one launch time: at least min_samples samples, and for short kernels
    samples until max_time_s (the stop rule may stop earlier once converged; a row that needs it
    may sample on to resolution_budget_s, which only a results file can tell)."""
    policy = policy_of(timing)
    per_sample = launch_s + (FLUSH_S if policy.mode == "cold" else 0.0)
    sampling = max(policy.min_samples * per_sample, min(policy.max_time_s, policy.max_samples * per_sample))
    return UNIT_FIXED_S + EXTRA_LAUNCHES * launch_s + sampling


def history_unit_s(row: results.Row) -> float | None:
    """What a row of an earlier results file says its unit took: the wall time a --gpus run
    recorded, else its samples (count x median) plus the launches and fixed cost around them."""
    if row.gpu and isinstance(row.gpu.get("unit_wall_s"), (int, float)) and row.gpu["unit_wall_s"] > 0:
        return float(row.gpu["unit_wall_s"])
    if row.timing is None or not row.timing.samples_s:
        return None
    median = float(np.median(row.timing.samples_s))
    launch = median  # samples are per launch, also for graph replays (replay time / launches)
    samples = len(row.timing.samples_s) * max(row.timing.launches_per_sample, 1)
    return UNIT_FIXED_S + EXTRA_LAUNCHES * launch + samples * (median + FLUSH_S)


def estimate_units(suite: Suite, units: Sequence[Unit], history: results.Results | None = None,
                   gpu_name: str | None = None) -> list[Estimate]:
    """An expected wall time per unit: from the history file where it has the row, else the model."""
    known: dict[str, float] = {}
    if history is not None:
        for row in history.rows:
            seconds = history_unit_s(row)
            if seconds is not None:
                known[row.id] = seconds
    peaks = ceilings.from_model(gpu_name or (history.environment.get("gpu_name") if history else None)
                                or DEFAULT_GPU)
    estimates = []
    for unit in units:
        variant, row_id, size = unit_row(suite, unit)
        if row_id in known:
            estimates.append(Estimate(known[row_id], "history"))
            continue
        case = suite.cases[unit.case_index]
        host = families.host(registry.resolve(case.family))
        launch = model_launch_s(host.bytes_moved(size), host.flop(size), variant.precision,
                                variant.expected_efficiency or DEFAULT_EFFICIENCY, peaks)
        estimates.append(Estimate(model_unit_s(launch, suite.case_timing(case)), "model"))
    return estimates


def longest_first(units: Sequence[Unit], estimates: Sequence[Estimate]) -> list[Unit]:
    """Longest expected first; equal estimates keep the suite's order."""
    return [u for u, _ in sorted(zip(units, estimates), key=lambda pair: (-pair[1].seconds, pair[0].number))]


class Dispatch:
    """Which unit a free GPU runs next (the rules are in the module's docstring)."""

    def __init__(self, units: Sequence[Unit], estimates: Sequence[Estimate], family_of: Callable[[Unit], str]) -> None:
        self._left = longest_first(units, estimates)
        self._seconds = {u.number: e.seconds for u, e in zip(units, estimates)}
        self._family = {u.number: family_of(u) for u in units}
        self._ran: dict[int, set[str]] = {}  # GPU -> the families it has run

    def next_for(self, gpu: int) -> Unit | None:
        """The unit `gpu` runs next, taken off the list; None when none is left."""
        if not self._left:
            return None
        ran = self._ran.setdefault(gpu, set())
        pick = next((i for i, u in enumerate(self._left) if self._family[u.number] in ran), None)
        if pick is None:
            fresh = self._untouched_work()
            if fresh:
                family = max(fresh, key=lambda f: (fresh[f][0], -fresh[f][1]))  # most work; then suite order
                pick = next(i for i, u in enumerate(self._left) if self._family[u.number] == family)
            else:
                pick = 0
        unit = self._left.pop(pick)
        ran.add(self._family[unit.number])
        return unit

    def withdraw(self) -> int:
        """Hand out nothing more (after an error); returns how many units were left."""
        left, self._left = len(self._left), []
        return left

    def _untouched_work(self) -> dict[str, tuple[float, int]]:
        """Families no GPU has started: (their units' expected seconds, their first unit's number)."""
        started = set().union(*self._ran.values())
        work: dict[str, tuple[float, int]] = {}
        for unit in self._left:
            family = self._family[unit.number]
            if family not in started:
                seconds, first = work.get(family, (0.0, unit.number))
                work[family] = (seconds + self._seconds[unit.number], min(first, unit.number))
        return work


def simulate(durations: Sequence[float], workers: int, families: Sequence[str] | None = None,
             first_use_s: dict[str, float] | None = None) -> list[list[int]]:
    """Dispatch with `workers` GPUs and known durations: which units each GPU runs, in order. A free
    GPU asks first (GPUs free at the same moment ask by index). families: each unit's family (default:
    a family of its own); first_use_s: what a GPU pays on top of a unit when it runs that unit's family
    for the first time (a GPU new to a family pays it again)."""
    return _schedule(durations, workers, families, first_use_s)[0]


def makespan(durations: Sequence[float], workers: int, families: Sequence[str] | None = None,
             first_use_s: dict[str, float] | None = None) -> float:
    """The wall time of simulate()'s schedule: the busiest GPU's total, first uses included."""
    return max(_schedule(durations, workers, families, first_use_s)[1])


def _schedule(durations: Sequence[float], workers: int, families: Sequence[str] | None,
              first_use_s: dict[str, float] | None) -> tuple[list[list[int]], list[float]]:
    """simulate()'s schedule: the units each GPU runs, and when each GPU is done."""
    units = [Unit(i, 0, str(i), None) for i in range(len(durations))]
    names = list(families) if families is not None else [str(i) for i in range(len(durations))]
    dispatch = Dispatch(units, [Estimate(float(d), "model") for d in durations], lambda u: names[u.number])
    free_at = [0.0] * workers
    taken: list[list[int]] = [[] for _ in range(workers)]
    seen: list[set[str]] = [set() for _ in range(workers)]
    while (unit := dispatch.next_for(gpu := min(range(workers), key=lambda g: (free_at[g], g)))) is not None:
        family = names[unit.number]
        first_use = (first_use_s or {}).get(family, 0.0) if family not in seen[gpu] else 0.0
        free_at[gpu] += durations[unit.number] + first_use
        seen[gpu].add(family)
        taken[gpu].append(unit.number)
    return taken, free_at
