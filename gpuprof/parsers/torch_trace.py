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
    for i, e in enumerate(events):
        if not isinstance(e, dict) or e.get("ph") != "X" or e.get("cat") not in CATEGORIES:
            continue
        dur = e.get("dur")
        if isinstance(dur, bool) or not isinstance(dur, (int, float)) or not math.isfinite(dur) or dur < 0:
            raise ParseError(path, f"traceEvents[{i}] ({e.get('name')!r})", f"expected a duration, got {dur!r}")
        groups: dict[str, list[float]] = getattr(trace, CATEGORIES[e["cat"]])
        groups.setdefault(str(e.get("name")), []).append(round(dur * 1000.0, 3))
    return trace
