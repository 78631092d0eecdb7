"""PyTorch-profiler (Kineto) Chrome traces -> durations grouped by kind and name, in ns.

Kineto writes complete events (`"ph": "X"`, times in µs) with a category per activity; the ones
gpuprof reads, as PyTorch 2.11 names them (tests/fixtures/tools/torch-2.11.0__*.trace.json):
`kernel`, `gpu_memcpy`, `gpu_memset` (GPU), `cuda_runtime`, `cuda_driver` (CPU API calls) and
`user_annotation` (record_function ranges). A rename there shows up as a trace with no kernels.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from gpuprof.errors import ParseError
from gpuprof.parsers.gpu_activity import GpuOp

CATEGORIES = {
    "kernel": "kernels",
    "gpu_memcpy": "memcpy",
    "gpu_memset": "memcpy",
    "cuda_runtime": "api",
    "cuda_driver": "api",
    "user_annotation": "ranges",
}


@dataclass(frozen=True)
class TorchTrace:
    """Durations (ns) by name for each kind: kernels, memcpy (copies and sets), api, ranges."""

    kernels: dict[str, list[float]] = field(default_factory=dict)
    memcpy: dict[str, list[float]] = field(default_factory=dict)
    api: dict[str, list[float]] = field(default_factory=dict)
    ranges: dict[str, list[float]] = field(default_factory=dict)
    # Every kernel, copy and memset with its start and end, and when the host call that queued it
    # began (the runtime/driver event with the same `correlation` argument); ns on Kineto's clock.
    ops: tuple[GpuOp, ...] = ()


_GPU_KINDS = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}


def read_trace(path: str | Path) -> TorchTrace:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ParseError(path, "file", f"cannot read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ParseError(path, f"line {exc.lineno}", f"not JSON ({exc.msg}); truncated trace?") from None
    events = data.get("traceEvents") if isinstance(data, dict) else data
    if not isinstance(events, list):
        raise ParseError(path, "traceEvents", "expected a list of trace events")
    trace = TorchTrace()
    calls: dict[int, float] = {}  # correlation id -> when the host call began (ns)
    gpu: list[tuple[str, float, float, int | None, int | None]] = []
    for i, e in enumerate(events):
        if not isinstance(e, dict) or e.get("ph") != "X" or e.get("cat") not in CATEGORIES:
            continue
        dur = e.get("dur")
        if isinstance(dur, bool) or not isinstance(dur, (int, float)) or not math.isfinite(dur) or dur < 0:
            raise ParseError(path, f"traceEvents[{i}] ({e.get('name')!r})", f"expected a duration, got {dur!r}")
        groups: dict[str, list[float]] = getattr(trace, CATEGORIES[e["cat"]])
        groups.setdefault(str(e.get("name")), []).append(round(dur * 1000.0, 3))
        ts = e.get("ts")
        args: dict = e["args"] if isinstance(e.get("args"), dict) else {}
        if not isinstance(ts, (int, float)) or isinstance(ts, bool):
            continue
        correlation = args.get("correlation") if isinstance(args.get("correlation"), int) else None
        if e["cat"] in _GPU_KINDS:
            stream = args.get("stream") if isinstance(args.get("stream"), int) else None
            gpu.append((_GPU_KINDS[e["cat"]], ts * 1000.0, (ts + dur) * 1000.0, correlation, stream))
        elif CATEGORIES[e["cat"]] == "api" and correlation is not None:
            calls[correlation] = ts * 1000.0
    ops = tuple(GpuOp(kind, start, end, calls.get(c) if c is not None else None, stream)
                for kind, start, end, c, stream in sorted(gpu, key=lambda g: g[1]))
    return TorchTrace(trace.kernels, trace.memcpy, trace.api, trace.ranges, ops)
