"""Which kernels of a timeline `gpuprof profile` hands to Nsight Compute: the user's own kernels
first, then the libraries' largest (docs/kernel-origin.md, "Choosing the kernels").

1. The user's kernels (analysis.kernel_origin), largest first, until they hold `cover_pct` % of the
   user's kernel time: a Triton kernel at 4 % of the GPU time beside set-up kernels at 96 % is
   still chosen.
2. The library kernels, largest first, until everything chosen holds `cover_pct` % of all the GPU
   kernel time.
3. At most `limit` in all. Slots go to the user's kernels first, but the largest library kernel keeps
   one slot while the limit allows two or more, so the kernel that dominates the time is never
   dropped either.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from gpuprof.analysis.kernel_origin import is_user
from gpuprof.parsers.nsys_stats import NsysKernelSummary


@dataclass(frozen=True)
class Choice:
    kernels: tuple[NsysKernelSummary, ...]  # largest total first
    user: frozenset[str]  # the names among them that are the user's own

    @property
    def covered_pct(self) -> float:
        return math.fsum(k.time_pct for k in self.kernels)


def _until(kernels: Sequence[NsysKernelSummary], share: float, already: float = 0.0) -> list[NsysKernelSummary]:
    """The first kernels whose time_pct, added to `already`, reach `share`."""
    out: list[NsysKernelSummary] = []
    for k in kernels:
        if already + math.fsum(c.time_pct for c in out) >= share:
            break
        out.append(k)
    return out


def choose(kernels: Sequence[NsysKernelSummary] | None, cover_pct: float, limit: int) -> Choice:
    ordered = sorted(kernels or (), key=lambda k: -k.total_ns)
    user = [k for k in ordered if is_user(k.name)]
    library = [k for k in ordered if not is_user(k.name)]
    user_total = math.fsum(k.time_pct for k in user)
    # the user's share measured against their own time: rescale cover_pct to it
    user_needed = _until(user, cover_pct * user_total / 100.0) if user_total > 0 else user[:1]
    library_needed = _until(library, cover_pct, math.fsum(k.time_pct for k in user_needed))
    keep_library = 1 if library_needed and limit >= 2 else 0
    user_taken = user_needed[:max(0, limit - keep_library)]
    library_taken = library_needed[:max(0, limit - len(user_taken))]
    chosen = sorted([*user_taken, *library_taken], key=lambda k: -k.total_ns)
    return Choice(tuple(chosen), frozenset(k.name for k in user_taken))
