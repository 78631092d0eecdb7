"""The gate on what needs no statistics: the deterministic counters `--with ncu` keeps in a row
(registers, shared memory, DRAM bytes, instructions executed) and the sanitizer's verdict. A counter
that grows past its limit between BASE and NEW is a change the timing noise may hide; a sanitizer
finding that NEW has and BASE had not is a new bug. Both need a row with the fields on both sides."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from gpuprof.results import Row
from gpuprof.row_parts import FINDINGS, NcuPart

# counter -> (words, the relative growth allowed): registers and shared memory are exact (any
# growth is a change of the build); DRAM bytes move a little with what the L2 still holds at the end
# of a launch; instructions executed move with atomics and data-dependent branches only.
COUNTERS: dict[str, tuple[str, float]] = {
    "registers": ("registers per thread", 0.0),
    "shared_mem_bytes": ("shared memory per block", 0.0),
    "dram_bytes": ("DRAM bytes", 0.05),
    "instructions": ("warp instructions executed", 0.01),
}


@dataclass(frozen=True)
class CounterChange:
    row_id: str
    counter: str
    base: float
    new: float
    limit: float  # the relative growth allowed

    @property
    def growth(self) -> float:
        return self.new / self.base - 1 if self.base else float("inf")

    def line(self) -> str:
        words = COUNTERS[self.counter][0]
        change = f"{self.base:,.0f} -> {self.new:,.0f}"
        pct = "" if self.base == 0 else f" (+{100 * self.growth:.1f} %"
        allowed = f", {100 * self.limit:g} % allowed)" if pct and self.limit else (")" if pct else "")
        return f"{self.row_id}: {words} {change}{pct}{allowed}"


@dataclass(frozen=True)
class NewFinding:
    row_id: str
    base_verdict: str
    first: str | None

    def line(self) -> str:
        what = f": {self.first}" if self.first else ""
        return f"{self.row_id}: the sanitizer finds something new (BASE: {self.base_verdict}){what}"


def counter_changes(pairs: Iterable[tuple[str, Row, Row]]) -> list[CounterChange]:
    """Each counter of each (id, BASE row, NEW row) that grew past its limit; rows without ncu
    fields on both sides (or whose profile failed) are not judged."""
    out = []
    for rid, base, new in pairs:
        b, n = _profiled(base.ncu), _profiled(new.ncu)
        if b is None or n is None:
            continue
        for counter, (_, limit) in COUNTERS.items():
            before, after = _number(getattr(b, counter)), _number(getattr(n, counter))
            if before is not None and after is not None and after > before * (1 + limit):
                out.append(CounterChange(rid, counter, before, after, limit))
    return out


def new_findings(pairs: Iterable[tuple[str, Row, Row]]) -> list[NewFinding]:
    """Rows whose sanitizer verdict in NEW is 'findings' where BASE's was not (clean, not judged,
    or not run): BASE without the field counts as clean only when it ran the tools."""
    out = []
    for rid, base, new in pairs:
        if new.sanitizer is None or new.sanitizer.verdict != FINDINGS:
            continue
        before = base.sanitizer.verdict if base.sanitizer else None
        if before == FINDINGS:
            continue
        out.append(NewFinding(rid, before or "not run", new.sanitizer.first))
    return out


def _profiled(ncu: NcuPart | None) -> NcuPart | None:
    return ncu if ncu is not None and not ncu.error else None


def _number(value: float | None) -> float | None:
    return float(value) if value is not None else None
