"""`gpuprof suite --shard K/N`: the part of a suite that shard K of N runs, the same on every machine.

The suite's units (one variant of one case at one size, suite_plan.units_of) are dealt out as
`suite --gpus` deals them to GPUs (suite_plan.simulate: longest first, a shard keeping to the
families it has started, so each machine pays a family's start-up once), with each unit's expected
wall time from `--history` (an earlier results file of the suite) where it has the row, else from
the model. The split depends only on the suite, N and the history file, never on the machine: N
runners given the same inputs run disjoint parts that together are the whole suite. Each shard's
results file records its part (`"shard"`), so `gpuprof merge` puts the rows back in suite order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from itertools import groupby
from typing import Any

from gpuprof import results
from gpuprof.commands.suite_plan import DEFAULT_GPU, Unit, estimate_units, simulate, unit_row, units_of
from gpuprof.errors import UsageError
from gpuprof.results import MAX_SHARDS
from gpuprof.suite_file import Suite, SuiteCase

_SHARD = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")


@dataclass(frozen=True)
class Shard:
    """Shard `index` (1-based) of `count`."""

    index: int
    count: int


@dataclass(frozen=True)
class ShardPlan:
    """What one shard runs: a suite of its units alone, and the record its results file keeps."""

    suite: Suite
    units: list[Unit]
    expected_s: float  # this shard's expected wall time
    expected_all_s: list[float]  # every shard's, in shard order
    estimates_from: str  # "history", "model" or "history+model"
    record: dict[str, Any]


def parse_shard(text: str) -> Shard:
    """'2/4' -> Shard(2, 4); K from 1 to N."""
    match = _SHARD.fullmatch(text)
    if not match:
        raise UsageError(f"--shard {text!r}: give K/N, e.g. 1/4 (the first of four parts)")
    if len(match[1]) > 9 or len(match[2]) > 9 or int(match[2]) > MAX_SHARDS:
        raise UsageError(f"--shard {text.strip()}: N must be from 1 to {MAX_SHARDS:,}")
    index, count = int(match[1]), int(match[2])
    if count < 1 or not 1 <= index <= count:
        raise UsageError(f"--shard {text}: K must be from 1 to N (N >= 1), e.g. 1/{max(count, 2)}")
    return Shard(index, count)


def plan_shard(suite: Suite, shard: Shard, history: results.Results | None = None) -> ShardPlan:
    """Deal the suite's units out to `shard.count` shards and keep `shard.index`'s. A shard may get
    no unit (more shards than units): its suite is then empty and the caller says so."""
    units = units_of(suite)
    # The model's GPU must not be this machine's: every runner has to compute the same split.
    gpu_name = (history.environment.get("gpu_name") if history else None) or DEFAULT_GPU
    estimates = estimate_units(suite, units, history, gpu_name=gpu_name)
    seconds = [e.seconds for e in estimates]
    families = [suite.cases[u.case_index].family for u in units]
    parts = simulate(seconds, shard.count, families)
    mine = sorted(parts[shard.index - 1])
    chosen = [units[n] for n in mine]
    order = {unit_row(suite, unit)[1]: unit.number for unit in chosen}
    estimates_from = "+".join(sorted({e.source for e in estimates}))
    record = {"index": shard.index, "count": shard.count, "units": len(units), "order": order,
              "estimates_from": estimates_from}
    return ShardPlan(suite=replace(suite, cases=_cases(suite, chosen)), units=chosen,
                     expected_s=sum(seconds[n] for n in mine),
                     expected_all_s=[sum(seconds[n] for n in part) for part in parts],
                     estimates_from=estimates_from, record=record)


def _cases(suite: Suite, units: list[Unit]) -> list[SuiteCase]:
    """One case per (case, size) run of the chosen units, in suite order, with just their variants."""
    cases = []
    for (case_index, _), group in groupby(units, key=lambda u: (u.case_index, _size_key(u.size))):
        members = list(group)
        case = suite.cases[case_index]
        size = members[0].size
        cases.append(replace(case, variants=[u.variant for u in members], sizes=[size] if size is not None else None))
    return cases


def _size_key(size: dict[str, int] | None) -> tuple[tuple[str, int], ...] | None:
    return tuple(size.items()) if size is not None else None
