"""The context of a repeated sanitizer finding, in words: which threads made it (compute-sanitizer
prints one record per thread; gpuprof shows their range) and the allocation the accesses missed
(memcheck's "N bytes after the nearest allocation at A of size M bytes"). docs/sanitize.md,
"Context of a finding"."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from gpuprof.parsers.sanitizer_log import SanitizerFinding

Dims = tuple[int, int, int]


def span(points: Sequence[Dims]) -> str:
    """(232,0,0), (255,0,0) -> '(232..255,0,0)': each coordinate's lowest..highest."""
    parts = []
    for axis in range(3):
        low, high = min(p[axis] for p in points), max(p[axis] for p in points)
        parts.append(str(low) if low == high else f"{low}..{high}")
    return f"({','.join(parts)})"


def threads_line(items: Sequence[SanitizerFinding]) -> str:
    """' thread (3,0,0) in block (1,0,0)' for one record; for several, the range of threads and of
    blocks they came from, and how many distinct threads where the range holds more."""
    who = [(f.thread, f.block) for f in items if f.thread is not None and f.block is not None]
    if not who:  # one of the two only (a racecheck hazard's block): as printed, for the first record
        first = items[0]
        parts = [f"block {span([first.block])}" if first.block else "", f"thread {span([first.thread])}"
                 if first.thread else ""]
        return "".join(f" {p}" for p in parts if p)
    distinct = sorted(set(who))
    threads = [t for t, _ in distinct]
    blocks = [b for _, b in distinct]
    if len(distinct) == 1:
        return f" thread {span(threads)} in block {span(blocks)}"
    plural = "blocks" if len(set(blocks)) > 1 else "block"
    cells = 1
    for axis in range(3):
        cells *= (max(t[axis] for t in threads) - min(t[axis] for t in threads) + 1)
    cells *= len(set(blocks))
    count = f" ({len(distinct)} threads)" if len(distinct) < cells else ""
    return f" threads {span(threads)} of {plural} {span(blocks)}{count}"


def allocation_line(items: Sequence[SanitizerFinding]) -> str | None:
    """Where the accesses fell against the allocation they missed: '1..93 bytes after the end of the
    4,000-byte allocation at 0x7f92d2800000', with a hint when the first is right past its end."""
    near = [f.allocation for f in items if f.allocation is not None]
    if not near:
        return None
    (key, _), *others = Counter((a.side, a.address, a.size) for a in near).most_common()
    side, address, size = key
    same = [a for a in near if (a.side, a.address, a.size) == key]
    allocation = f"the {size:,}-byte allocation at {address:#x}"
    more = f" (and {len(others)} other allocation{'s' if len(others) > 1 else ''})" if others else ""
    if side == "inside":
        return f"inside {allocation}{more}"
    distances = [a.distance for a in same if a.distance is not None]
    how_far = _range(distances)
    edge = "end" if side == "after" else "start"
    text = f"{how_far} bytes {side} the {edge} of {allocation}{more}"
    access = items[0].size
    if side == "after" and distances and access is not None and min(distances) <= access:
        text += ": the first is right past the end (a bound check that lets index == n through?)"
    return text


def _range(values: Sequence[int]) -> str:
    if not values:
        return "some"
    low, high = min(values), max(values)
    return f"{low:,}" if low == high else f"{low:,}..{high:,}"
