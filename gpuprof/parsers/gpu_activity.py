"""One GPU operation on a timeline (a kernel, a copy, a memset), whichever tool recorded it: the
record the idle-time breakdown (analysis/idle_time.py) reads from nsys exports and PyTorch traces."""

from __future__ import annotations

from dataclasses import dataclass

KINDS = ("kernel", "memcpy", "memset")


@dataclass(frozen=True)
class GpuOp:
    kind: str  # one of KINDS
    start_ns: float
    end_ns: float
    # When the host began the API call that queued it (cudaLaunchKernel, cudaMemcpyAsync, ...), on the
    # same clock; None where the tool gave no link between the call and the operation.
    queued_ns: float | None = None
    stream: int | None = None
