"""gpuprof's CUPTI activity files -> kernels, copies, host API calls and NVTX ranges, in ns.

The injection library (tools/cupti_inject/gpuprof_cupti.cpp) writes one JSON object per line to
activity-<pid>.jsonl (one file per process that used CUDA; `.jsonl.partial` where the process did not
exit normally). Every line has a "type":

- header: format "gpuprof-cupti", version, cupti_api (the library's CUPTI), cupti_headers, pid, ts;
- kernel: name (demangled), mangled, start, end, device, context, stream, correlation, grid, block,
  registers, static_shared, dynamic_shared;
- memcpy: copy_kind (CUPTI_ACTIVITY_MEMCPY_KIND_*), bytes, start, end, device, stream, correlation;
- memset: bytes, start, end, device, stream, correlation;
- runtime / driver: name (CUPTI's callback name, e.g. cudaLaunchKernel_v7000), cbid, start, end, tid,
  correlation;
- marker: flags (1 instant, 2 range start, 4 range end), id, ts, tid, name, domain (NVTX);
- warning: what, cupti (an activity kind CUPTI would not record, and why);
- end: dropped (records CUPTI had no buffer for).

All times are CUPTI timestamps (ns, one clock for GPU and host records).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from gpuprof.errors import ParseError
from gpuprof.files import read_lines
from gpuprof.parsers.gpu_activity import GpuOp

FORMAT = "gpuprof-cupti"
VERSION = 1
FILE_GLOB = "activity-*.jsonl"
PARTIAL_GLOB = "activity-*.jsonl.partial"

# nsys's names for the copies (cuda_gpu_mem_time_sum's Operation column), by CUPTI's copy kind.
COPY_NAMES = {1: "Host-to-Device", 2: "Device-to-Host", 3: "Host-to-Array", 4: "Array-to-Host",
              5: "Array-to-Array", 6: "Array-to-Device", 7: "Device-to-Array", 8: "Device-to-Device",
              9: "Host-to-Host", 10: "Peer-to-Peer"}
MEMSET_NAME = "[CUDA memset]"
MARKER_INSTANT, MARKER_START, MARKER_END = 1, 2, 4
_API_VERSION_SUFFIX = re.compile(r"_v\d{4,}$")  # cudaLaunchKernel_v7000 -> cudaLaunchKernel (cuMemAlloc_v2 stays)


def copy_name(kind: int) -> str:
    return f"[CUDA memcpy {COPY_NAMES.get(kind, 'Unknown')}]"


def api_name(raw: str) -> str:
    """The function's name as nsys's cuda_api_sum shows it: CUPTI's runtime names carry the version
    the call appeared in (_v3020); the driver's _v2 is part of the real name and is kept."""
    return _API_VERSION_SUFFIX.sub("", raw)


@dataclass(frozen=True)
class Kernel:
    name: str
    start_ns: int
    end_ns: int
    device: int
    stream: int
    correlation: int
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    registers: int | None = None
    static_shared: int | None = None
    dynamic_shared: int | None = None
    pid: int | None = None

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns


@dataclass(frozen=True)
class Transfer:
    """A copy or a memset: `operation` is nsys's name for it ("[CUDA memcpy Host-to-Device]")."""

    kind: str  # "memcpy" or "memset"
    operation: str
    bytes: int
    start_ns: int
    end_ns: int
    stream: int
    correlation: int
    pid: int | None = None


@dataclass(frozen=True)
class ApiCall:
    domain: str  # "runtime" or "driver"
    name: str
    start_ns: int
    end_ns: int
    tid: int
    correlation: int
    pid: int | None = None


@dataclass(frozen=True)
class Range:
    """An NVTX range from its start and end markers; `path` names it inside the ranges enclosing it
    on its thread ("outer/inner")."""

    name: str
    domain: str | None
    start_ns: int
    end_ns: int
    tid: int | None
    pid: int | None = None
    path: str = ""


@dataclass(frozen=True)
class CuptiActivity:
    kernels: tuple[Kernel, ...] = ()
    transfers: tuple[Transfer, ...] = ()
    calls: tuple[ApiCall, ...] = ()  # the program's own calls: driver calls made inside a runtime call are left out
    ranges: tuple[Range, ...] = ()
    files: tuple[Path, ...] = ()
    dropped: int = 0
    unfinished: tuple[Path, ...] = ()  # files of processes that did not exit normally (no "end" line)
    warnings: tuple[str, ...] = ()
    cupti_version: int | None = None
    internal_driver_calls: int = 0
    unclosed_ranges: int = field(default=0)


def activity_files(folder: Path) -> list[Path]:
    """The activity files in a folder, finished ones and those of processes that did not exit normally."""
    return sorted(folder.glob(FILE_GLOB)) + sorted(folder.glob(PARTIAL_GLOB))


def read_activity(paths: Iterable[Path]) -> CuptiActivity:
    """Every record of the files (one per process), merged. ParseError for a file that is not one
    of gpuprof's activity files or a line that is not a record of the format."""
    kernels: list[Kernel] = []
    transfers: list[Transfer] = []
    calls: list[ApiCall] = []
    ranges: list[Range] = []
    files, unfinished, warnings = [], [], []
    dropped, version, unclosed = 0, None, 0
    for path in paths:
        path = Path(path)
        files.append(path)
        reader = _FileReader(path)
        reader.read()
        kernels += reader.kernels
        transfers += reader.transfers
        calls += reader.calls
        ranges += reader.ranges
        unclosed += reader.unclosed
        warnings += reader.warnings
        dropped += reader.dropped
        version = version or reader.cupti_version
        if not reader.ended:
            unfinished.append(path)
    own, internal = _own_calls(calls)
    return CuptiActivity(
        kernels=tuple(sorted(kernels, key=lambda k: k.start_ns)),
        transfers=tuple(sorted(transfers, key=lambda t: t.start_ns)),
        calls=tuple(own), ranges=tuple(_with_paths(ranges)), files=tuple(files), dropped=dropped,
        unfinished=tuple(unfinished), warnings=tuple(dict.fromkeys(warnings)), cupti_version=version,
        internal_driver_calls=internal, unclosed_ranges=unclosed)


class _FileReader:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.kernels: list[Kernel] = []
        self.transfers: list[Transfer] = []
        self.calls: list[ApiCall] = []
        self.ranges: list[Range] = []
        self.warnings: list[str] = []
        self.dropped = 0
        self.ended = False
        self.cupti_version: int | None = None
        self.pid: int | None = None
        self.unclosed = 0
        self._open: dict[tuple[int, str | None], tuple[str, int, int | None]] = {}

    def read(self) -> None:
        header_seen = False
        for number, line in enumerate(read_lines(self.path, "CUPTI activity file"), start=1):
            if not line.strip():
                continue
            where = f"line {number}"
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                if not self.ended and number > 1 and self.path.name.endswith(".partial"):
                    break  # the last line of a process that died while writing it
                raise ParseError(self.path, where, f"not JSON ({exc.msg})") from None
            if not isinstance(record, dict):
                raise ParseError(self.path, where, "expected a JSON object per line")
            if not header_seen:
                self._header(record, where)
                header_seen = True
                continue
            self._record(record, where)
        if not header_seen:
            raise ParseError(self.path, "line 1", f"empty: no {FORMAT} header")
        self.unclosed = len(self._open)

    def _header(self, record: dict, where: str) -> None:
        if record.get("type") != "header" or record.get("format") != FORMAT:
            raise ParseError(self.path, where, f"not a gpuprof CUPTI activity file (no {FORMAT} header)")
        if record.get("version") != VERSION:
            raise ParseError(self.path, where, f"format version {record.get('version')!r}; this gpuprof reads "
                             f"version {VERSION}: record the program again with this gpuprof")
        self.cupti_version = _int(record, "cupti_api", self.path, where, optional=True)
        self.pid = _int(record, "pid", self.path, where, optional=True)

    def _record(self, r: dict, where: str) -> None:
        kind = r.get("type")
        p, w = self.path, where
        if kind == "kernel":
            self.kernels.append(Kernel(
                name=_str(r, "name", p, w), start_ns=_int(r, "start", p, w), end_ns=_int(r, "end", p, w),
                device=_int(r, "device", p, w), stream=_int(r, "stream", p, w),
                correlation=_int(r, "correlation", p, w), grid=_triple(r, "grid", p, w),
                block=_triple(r, "block", p, w), registers=_int(r, "registers", p, w, optional=True),
                static_shared=_int(r, "static_shared", p, w, optional=True),
                dynamic_shared=_int(r, "dynamic_shared", p, w, optional=True), pid=self.pid))
        elif kind in ("memcpy", "memset"):
            operation = copy_name(_int(r, "copy_kind", p, w)) if kind == "memcpy" else MEMSET_NAME
            self.transfers.append(Transfer(
                kind=kind, operation=operation, bytes=_int(r, "bytes", p, w), start_ns=_int(r, "start", p, w),
                end_ns=_int(r, "end", p, w), stream=_int(r, "stream", p, w),
                correlation=_int(r, "correlation", p, w), pid=self.pid))
        elif kind in ("runtime", "driver"):
            name = r.get("name")
            self.calls.append(ApiCall(
                domain=kind, name=api_name(name) if isinstance(name, str) else f"{kind} call {r.get('cbid')}",
                start_ns=_int(r, "start", p, w), end_ns=_int(r, "end", p, w), tid=_int(r, "tid", p, w),
                correlation=_int(r, "correlation", p, w), pid=self.pid))
        elif kind == "marker":
            self._marker(r, where)
        elif kind == "warning":
            self.warnings.append(f"CUPTI would not record {r.get('what')}: {r.get('cupti')}")
        elif kind == "end":
            self.dropped += _int(r, "dropped", p, w)
            self.ended = True
        elif kind == "header":
            raise ParseError(p, w, "a second header: two files joined into one?")
        # other types: written by a newer library; nothing here reads them

    def _marker(self, r: dict, where: str) -> None:
        flags = _int(r, "flags", self.path, where)
        ident = _int(r, "id", self.path, where)
        ts = _int(r, "ts", self.path, where)
        domain = r.get("domain") if isinstance(r.get("domain"), str) and r.get("domain") else None
        key = (ident, domain)
        if flags & MARKER_START:
            name = r.get("name")
            self._open[key] = (name if isinstance(name, str) else f"range {ident}", ts,
                               _int(r, "tid", self.path, where, optional=True))
        elif flags & MARKER_END:
            opened = self._open.pop(key, None) or self._open.pop((ident, None), None)
            if opened is not None:
                name, start, tid = opened
                self.ranges.append(Range(name, domain, start, ts, tid, self.pid))


def _int(r: dict, key: str, path: Path, where: str, optional: bool = False) -> int:
    value = r.get(key)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if optional and value is None:
        return None  # type: ignore[return-value]
    raise ParseError(path, f"{where} ({r.get('type')})", f"expected an integer {key}, got {value!r}")


def _str(r: dict, key: str, path: Path, where: str) -> str:
    value = r.get(key)
    if isinstance(value, str):
        return value
    raise ParseError(path, f"{where} ({r.get('type')})", f"expected a string {key}, got {value!r}")


def _triple(r: dict, key: str, path: Path, where: str) -> tuple[int, int, int]:
    value = r.get(key)
    if isinstance(value, list) and len(value) == 3 and all(isinstance(v, int) for v in value):
        return (value[0], value[1], value[2])
    raise ParseError(path, f"{where} ({r.get('type')})", f"expected three integers for {key}, got {value!r}")


def _own_calls(calls: list[ApiCall]) -> tuple[list[ApiCall], int]:
    """The calls the program made: a driver call that runs inside a runtime call of the same thread
    is the runtime's own work (cudaMalloc calls cuMemAlloc), left out so no time is counted twice,
    as nsys's API summary does. Returns the calls by start and how many were left out."""
    runtime: dict[tuple[int | None, int], list[tuple[int, int]]] = {}
    for c in calls:
        if c.domain == "runtime":
            runtime.setdefault((c.pid, c.tid), []).append((c.start_ns, c.end_ns))
    own, internal = [], 0
    for c in sorted(calls, key=lambda c: c.start_ns):
        spans = runtime.get((c.pid, c.tid), [])
        if c.domain == "driver" and any(s <= c.start_ns and c.end_ns <= e for s, e in spans):
            internal += 1
            continue
        own.append(c)
    return own, internal


def _with_paths(ranges: list[Range]) -> list[Range]:
    """Each range named by the ranges around it on the same thread of the same process and in the same
    domain ("step/naive"): one sweep per thread, keeping the ranges still open."""
    out = []
    by_thread: dict[tuple[int | None, int | None, str | None], list[Range]] = {}
    for r in ranges:
        by_thread.setdefault((r.pid, r.tid, r.domain), []).append(r)
    for thread in by_thread.values():
        open_: list[Range] = []
        for r in sorted(thread, key=lambda r: (r.start_ns, -r.end_ns)):
            open_ = [o for o in open_ if o.end_ns >= r.end_ns]
            path = f"{open_[-1].path}/{r.name}" if open_ else r.name
            named = Range(r.name, r.domain, r.start_ns, r.end_ns, r.tid, r.pid, path)
            open_.append(named)
            out.append(named)
    return sorted(out, key=lambda r: r.start_ns)


def gpu_ops(activity: CuptiActivity) -> list[GpuOp]:
    """Every kernel, copy and memset with when the host call that queued it began (by correlation id:
    the runtime call where there is one, else the driver's), for the idle-time breakdown."""
    queued: dict[tuple[int | None, int], int] = {}
    for c in sorted(activity.calls, key=lambda c: c.domain != "runtime"):
        queued.setdefault((c.pid, c.correlation), c.start_ns)
    ops = [GpuOp("kernel", float(k.start_ns), float(k.end_ns), _queued(queued, k.pid, k.correlation), k.stream)
           for k in activity.kernels]
    ops += [GpuOp(t.kind, float(t.start_ns), float(t.end_ns), _queued(queued, t.pid, t.correlation), t.stream)
            for t in activity.transfers]
    return sorted(ops, key=lambda op: op.start_ns)


def _queued(queued: dict[tuple[int | None, int], int], pid: int | None, correlation: int) -> float | None:
    start = queued.get((pid, correlation))
    return float(start) if start is not None else None


OUTSIDE = "(outside NVTX ranges)"


def kernels_by_range(activity: CuptiActivity) -> dict[str, list[Kernel]]:
    """Each kernel under the innermost NVTX range (by path) open on the launching thread when the host
    call that queued it began; OUTSIDE where none was. {} where the program has no ranges. One sweep
    per thread over its calls and ranges, both by start time."""
    if not activity.ranges:
        return {}
    launch = {(c.pid, c.correlation): c for c in activity.calls}
    ranges: dict[tuple[int | None, int | None], list[Range]] = {}
    for r in activity.ranges:
        ranges.setdefault((r.pid, r.tid), []).append(r)
    calls_of: dict[tuple[int | None, int | None], list[tuple[int, Kernel]]] = {}
    groups: dict[str, list[Kernel]] = {}
    for k in activity.kernels:
        call = launch.get((k.pid, k.correlation))
        if call is None:
            groups.setdefault(OUTSIDE, []).append(k)
        else:
            calls_of.setdefault((call.pid, call.tid), []).append((call.start_ns, k))
    for thread, launches in calls_of.items():
        # a marker without a thread (CUPTI gave another object) is matched by time alone
        todo = sorted(ranges.get(thread, []) + ranges.get((thread[0], None), []), key=lambda r: r.start_ns)
        open_: list[Range] = []
        i = 0
        for t, k in sorted(launches, key=lambda pair: pair[0]):
            while i < len(todo) and todo[i].start_ns <= t:
                open_.append(todo[i])
                i += 1
            open_ = [r for r in open_ if r.end_ns >= t]
            groups.setdefault(open_[-1].path if open_ else OUTSIDE, []).append(k)
    return groups
