"""`nsys export --type sqlite` files -> kernel launches and NVTX events, read without nsys."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from gpuprof.errors import ParseError
from gpuprof.parsers.gpu_activity import GpuOp


@dataclass(frozen=True)
class NsysKernelLaunch:
    """One row of CUPTI_ACTIVITY_KIND_KERNEL with its names resolved."""

    start_ns: int
    end_ns: int
    device_id: int
    context_id: int | None
    stream_id: int
    correlation_id: int
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    registers_per_thread: int | None
    static_shared_mem_bytes: int | None
    dynamic_shared_mem_bytes: int | None
    demangled_name: str
    short_name: str
    mangled_name: str | None

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns


@dataclass(frozen=True)
class NsysNvtxEvent:
    """One NVTX range or mark of NVTX_EVENTS; end_ns is None for marks and unclosed ranges."""

    start_ns: int
    end_ns: int | None
    event_type: int
    kind: str  # "push_pop", "start_end", "mark", "domain_create", "other"
    name: str | None
    domain: str | None  # None = default domain
    domain_id: int
    global_tid: int | None

    @property
    def duration_ns(self) -> int | None:
        return None if self.end_ns is None else self.end_ns - self.start_ns

    @property
    def pid(self) -> int | None:
        return None if self.global_tid is None else (self.global_tid >> 24) & 0xFFFFFF

    @property
    def tid(self) -> int | None:
        return None if self.global_tid is None else self.global_tid & 0xFFFFFF


_NVTX_KIND = {
    59: "push_pop",
    70: "push_pop",
    60: "start_end",
    71: "start_end",
    34: "mark",
    65: "mark",
    75: "domain_create",
}

_KERNEL_SQL = """
SELECT k.start, k.end, k.deviceId, k.contextId, k.streamId, k.correlationId,
       k.gridX, k.gridY, k.gridZ, k.blockX, k.blockY, k.blockZ, k.registersPerThread,
       k.staticSharedMemory, k.dynamicSharedMemory, d.value, s.value, m.value
FROM CUPTI_ACTIVITY_KIND_KERNEL k
LEFT JOIN StringIds d ON d.id = k.demangledName
LEFT JOIN StringIds s ON s.id = k.shortName
LEFT JOIN StringIds m ON m.id = k.mangledName
ORDER BY k.start
"""
_NVTX_SQL = """
SELECT n.start, n.end, n.eventType, COALESCE({name}, n.text), n.domainId, n.globalTid
FROM NVTX_EVENTS n {join}
ORDER BY n.start
"""


# Tables every `nsys export --type sqlite` holds one of (the kernel and NVTX ones only if traced).
EXPORT_TABLES = ("StringIds", "META_DATA_EXPORT", "TARGET_INFO_SESSION_START_TIME", "CUPTI_ACTIVITY_KIND_KERNEL",
                 "NVTX_EVENTS")


def check_nsys_export(path: str | Path) -> None:
    """Raise ParseError unless the file is an SQLite database with at least one of nsys's export tables
    (an unrelated database would otherwise read as an export with nothing traced)."""
    with _connect(path) as db:
        if not any(_has_table(db, path, name) for name in EXPORT_TABLES):
            raise ParseError(path, "tables", "not an Nsight Systems export: it has none of the tables "
                             f"{', '.join(EXPORT_TABLES)} (make one with nsys export --type sqlite REPORT.nsys-rep)")


def read_sqlite_kernels(path: str | Path) -> list[NsysKernelLaunch]:
    """Kernel launches of an `nsys export --type sqlite` file, by start time ([] if none were traced)."""
    with _connect(path) as db:
        if not _has_table(db, path, "CUPTI_ACTIVITY_KIND_KERNEL"):
            return []
        if not _has_table(db, path, "StringIds"):
            raise ParseError(path, "table StringIds", "missing; kernel names cannot be resolved")
        rows = _query(db, path, _KERNEL_SQL)
    out = []
    for r in rows:
        if not all(isinstance(v, int) for v in r[:3] + r[4:12]) or not isinstance(r[15], str):
            raise ParseError(path, f"kernel correlationId {r[5]}", "missing or non-integer fields, or no name")
        out.append(
            NsysKernelLaunch(
                start_ns=r[0],
                end_ns=r[1],
                device_id=r[2],
                context_id=r[3],
                stream_id=r[4],
                correlation_id=r[5],
                grid=(r[6], r[7], r[8]),
                block=(r[9], r[10], r[11]),
                registers_per_thread=r[12],
                static_shared_mem_bytes=r[13],
                dynamic_shared_mem_bytes=r[14],
                demangled_name=r[15],
                short_name=r[16] if r[16] is not None else r[15],
                mangled_name=r[17],
            )
        )
    return out


def read_sqlite_nvtx(path: str | Path) -> list[NsysNvtxEvent]:
    """NVTX events (ranges, marks, domain creations) by start time; names from text or StringIds."""
    with _connect(path) as db:
        if not _has_table(db, path, "NVTX_EVENTS"):
            return []
        strings = _has_table(db, path, "StringIds")
        sql = _NVTX_SQL.format(
            name="sid.value" if strings else "NULL",
            join="LEFT JOIN StringIds sid ON sid.id = n.textId" if strings else "",
        )
        rows = _query(db, path, sql)
    for r in rows:
        if not isinstance(r[0], int) or not isinstance(r[1], (int, type(None))) or not isinstance(r[2], int):
            raise ParseError(path, f"NVTX event at {r[0]!r}", "missing or non-integer start/end/eventType")
    domains = {r[4]: r[3] for r in rows if r[2] == 75}
    return [
        NsysNvtxEvent(
            start_ns=r[0],
            end_ns=r[1],
            event_type=r[2],
            kind=_NVTX_KIND.get(r[2], "other"),
            name=None if r[3] is None else str(r[3]),
            domain=None if r[4] in (0, None) else str(domains.get(r[4], r[4])),
            domain_id=r[4] or 0,
            global_tid=r[5],
        )
        for r in rows
    ]


def read_sqlite_export_info(path: str | Path) -> dict[str, str]:
    """META_DATA_EXPORT as a dict (EXPORT_PRODUCT_VERSION, EXPORT_SCHEMA_VERSION, ...); {} if absent."""
    with _connect(path) as db:
        if not _has_table(db, path, "META_DATA_EXPORT"):
            return {}
        return {str(k): str(v) for k, v in _query(db, path, "SELECT name, value FROM META_DATA_EXPORT")}


def read_sqlite_capture(path: str | Path) -> tuple[int, int] | None:
    """When the capture started and stopped (ANALYSIS_DETAILS' startTime, stopTime: the clock of every
    timestamp in the export); None when the table is absent or holds no whole integers."""
    with _connect(path) as db:
        if not _has_table(db, path, "ANALYSIS_DETAILS"):
            return None
        rows = _query(db, path, "SELECT startTime, stopTime FROM ANALYSIS_DETAILS")
    spans = [(lo, hi) for lo, hi in rows if isinstance(lo, int) and isinstance(hi, int) and 0 <= lo <= hi]
    return (min(lo for lo, _ in spans), max(hi for _, hi in spans)) if spans else None


class _connect:
    """Read-only connection that turns sqlite errors into ParseError and always closes."""

    def __init__(self, path: str | Path) -> None:
        self.path = path

    def __enter__(self) -> sqlite3.Connection:
        p = Path(self.path)
        if not p.is_file():
            raise ParseError(self.path, "file", "no such SQLite file")
        try:
            self.db = sqlite3.connect(f"file:{quote(str(p.resolve()))}?mode=ro", uri=True)
        except sqlite3.Error as exc:
            raise ParseError(self.path, "file", f"cannot open as SQLite: {exc}") from None
        return self.db

    def __exit__(self, *exc: object) -> None:
        self.db.close()


def _query(db: sqlite3.Connection, path: str | Path, sql: str) -> list[tuple]:
    try:
        return db.execute(sql).fetchall()
    except (sqlite3.Error, UnicodeDecodeError) as exc:  # a damaged file can hold undecodable text
        raise ParseError(path, "query", f"not an nsys export this parser knows ({exc})") from None


def _has_table(db: sqlite3.Connection, path: str | Path, name: str) -> bool:
    rows = _query(db, path, f"SELECT 1 FROM sqlite_master WHERE type='table' AND name='{name}'")
    return bool(rows)


_OPS = (("kernel", "CUPTI_ACTIVITY_KIND_KERNEL"), ("memcpy", "CUPTI_ACTIVITY_KIND_MEMCPY"),
        ("memset", "CUPTI_ACTIVITY_KIND_MEMSET"))
_CALLS = ("CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_DRIVER")  # the host calls, by correlationId


def read_sqlite_gpu_ops(path: str | Path) -> list[GpuOp]:
    """Every kernel, copy and memset of an export with start, end, stream and when the runtime or
    driver call that queued it began (None where no call table was traced), by start time."""
    with _connect(path) as db:
        calls: dict[int, int] = {}
        for table in _CALLS:
            if _has_table(db, path, table):
                for correlation, start in _query(db, path, f"SELECT correlationId, start FROM {table}"):
                    if isinstance(correlation, int) and isinstance(start, int):
                        calls.setdefault(correlation, start)
        ops = []
        for kind, table in _OPS:
            if not _has_table(db, path, table):
                continue
            for start, end, stream, correlation in _query(db, path,
                                                          f"SELECT start, end, streamId, correlationId FROM {table}"):
                if not isinstance(start, int) or not isinstance(end, int):
                    raise ParseError(path, f"{table} correlationId {correlation}", "missing start or end")
                ops.append(GpuOp(kind, float(start), float(end),
                                 float(calls[correlation]) if correlation in calls else None,
                                 stream if isinstance(stream, int) else None))
    return sorted(ops, key=lambda op: op.start_ns)
