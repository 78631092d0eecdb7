"""`nsys stats` output (csv, column, json) and `nsys export` SQLite files -> typed nsys records."""

from __future__ import annotations

import csv
import itertools
import json
import math
import re
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from gpuprof.errors import ParseError, ToolFailed


class NsysToolError(ToolFailed):
    """nsys reported a failure rather than data.

    kind: "importer_failed" (QdstrmImporter could not run: no .nsys-rep), "no_report_generated",
    "stale_sqlite" (stats refused an old export; pass --force-export=true), "unknown_report",
    "tool_error" (another `ERROR:` line), "no_data" (the report printed SKIPPED: ... does not
    contain ...), "report_missing" (the report asked for is not in the output at all).
    """

    KINDS = (
        "importer_failed",
        "no_report_generated",
        "stale_sqlite",
        "unknown_report",
        "tool_error",
        "no_data",
        "report_missing",
    )


# ---------------------------------------------------------------------------------------------
# Records (times in ns, sizes in bytes)


@dataclass(frozen=True)
class NsysKernelSummary:
    """cuda_gpu_kern_sum / cuda_gpu_kern_gb_sum row."""

    name: str
    time_pct: float
    total_ns: float
    instances: int
    avg_ns: float
    med_ns: float | None  # absent in old (2021-22) nsys CSVs
    min_ns: float
    max_ns: float
    stddev_ns: float | None
    grid: tuple[int, int, int] | None = None  # only in cuda_gpu_kern_gb_sum
    block: tuple[int, int, int] | None = None


@dataclass(frozen=True)
class NsysApiSummary:
    """cuda_api_sum row (osrt_sum has the same shape)."""

    name: str
    time_pct: float
    total_ns: float
    num_calls: int
    avg_ns: float
    med_ns: float | None  # absent in old (2021-22) nsys CSVs
    min_ns: float
    max_ns: float
    stddev_ns: float | None


@dataclass(frozen=True)
class NsysNvtxSummary:
    """nvtx_sum row; `range` is nsys's "<domain>:<name>" (":outer" in the default domain)."""

    range: str
    domain: str | None
    name: str
    style: str | None  # "PushPop" / "StartEnd"
    time_pct: float
    total_ns: float
    instances: int
    avg_ns: float
    med_ns: float | None  # absent in old (2021-22) nsys CSVs
    min_ns: float
    max_ns: float
    stddev_ns: float | None


@dataclass(frozen=True)
class NsysNvtxKernelSummary:
    """nvtx_kern_sum row; kernels outside any range have range None."""

    range: str | None
    style: str | None
    pid: int | None
    tid: int | None
    nvtx_instances: int
    kernel_instances: int
    total_ns: float
    avg_ns: float
    med_ns: float | None  # absent in old (2021-22) nsys CSVs
    min_ns: float
    max_ns: float
    stddev_ns: float | None
    kernel_name: str


@dataclass(frozen=True)
class NsysMemTimeSummary:
    """cuda_gpu_mem_time_sum row."""

    operation: str
    time_pct: float
    total_ns: float
    count: int
    avg_ns: float
    med_ns: float | None  # absent in old (2021-22) nsys CSVs
    min_ns: float
    max_ns: float
    stddev_ns: float | None


@dataclass(frozen=True)
class NsysMemSizeSummary:
    """cuda_gpu_mem_size_sum row (nsys prints MB = 10^6 bytes, rounded to 3 decimals)."""

    operation: str
    total_bytes: float
    count: int
    avg_bytes: float
    med_bytes: float | None
    min_bytes: float
    max_bytes: float
    stddev_bytes: float | None


@dataclass(frozen=True)
class NsysGpuTraceRow:
    """cuda_gpu_trace row: a kernel (grid/block set) or a memcpy/memset (bytes set)."""

    start_ns: float
    duration_ns: float
    correlation_id: int | None
    grid: tuple[int, int, int] | None
    block: tuple[int, int, int] | None
    registers_per_thread: int | None
    static_smem_bytes: float | None
    dynamic_smem_bytes: float | None
    bytes: float | None
    throughput_bytes_per_s: float | None
    src_mem_kind: str | None
    dst_mem_kind: str | None
    device: str | None
    context: int | None
    green_context: int | None
    stream: int | None
    name: str

    @property
    def is_kernel(self) -> bool:
        return self.grid is not None


@dataclass(frozen=True)
class NsysReport:
    """One table of the output. `records` are typed for the known reports, empty otherwise."""

    name: str  # "cuda_gpu_kern_sum", ... ; from the surrounding text, the file name, or the header
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...] = field(repr=False)
    records: tuple[Any, ...] = field(default=(), repr=False)
    args: str | None = None  # "base", "mangled", "nvtx-name" ... when the report was given arguments
    format: str = "csv"  # "csv", "column", "json"


@dataclass(frozen=True)
class NsysSkipped:
    """`SKIPPED: rep.sqlite does not contain OpenMP event data.` -- the report had nothing to show."""

    report: str | None
    message: str


@dataclass(frozen=True)
class NsysStats:
    """Everything `nsys stats` printed: tables in order (a report may repeat) and skipped reports."""

    reports: tuple[NsysReport, ...]
    skipped: tuple[NsysSkipped, ...] = ()

    def report(self, name: str) -> NsysReport:
        """The first table of `name`; NsysToolError no_data / report_missing when there is none."""
        for r in self.reports:
            if r.name == name:
                return r
        for s in self.skipped:
            if s.report == name:
                raise NsysToolError("no_data", s.message)
        have = ", ".join(r.name for r in self.reports) or "none"
        raise NsysToolError("report_missing", f"report {name!r} is not in the output (have: {have})")


# ---------------------------------------------------------------------------------------------
# Messages


_ERRORS = (
    (
        "importer_failed",
        re.compile(
            r"Importer error status|Unable to retrieve the importer version|"
            r"skipping importation of the QDSTRM file"
        ),
    ),
    ("no_report_generated", re.compile(r"No reports were generated")),
    ("stale_sqlite", re.compile(r"Existing SQLite export found")),
    ("unknown_report", re.compile(r"ERROR: Report '[^']*' could not be found")),
    ("tool_error", re.compile(r"^\s*(?:FATAL )?ERROR: ", re.MULTILINE)),
)


def check_messages(text: str, kinds: tuple[str, ...] = NsysToolError.KINDS) -> None:
    """Raise NsysToolError for the failure messages nsys prints (stdout and stderr alike)."""
    for kind, pattern in _ERRORS:
        m = pattern.search(text) if kind in kinds else None
        if m:
            start = text.rfind("\n", 0, m.start()) + 1
            end = text.find("\n", m.end())
            line = text[start : end if end >= 0 else len(text)].strip()
            if kind == "stale_sqlite":
                line += " (re-run nsys stats with --force-export=true)"
            raise NsysToolError(kind, line)


def parse_profile_output(text: str) -> tuple[str, ...]:
    """Files listed under `Generated:` by `nsys profile`; NsysToolError when nothing was produced."""
    # Only nsys's own failure lines: the profiled program's stdout is interleaved and may say "ERROR:".
    check_messages(text, kinds=("importer_failed", "no_report_generated"))
    lines = _lines(text)
    out: list[str] = []
    for i, line in enumerate(lines):
        if line.strip() == "Generated:":
            out = []
            for ln in lines[i + 1 :]:
                if not ln.startswith(("\t", "    ")) or not ln.strip():
                    break
                out.append(ln.strip())
    if not out:
        raise NsysToolError("no_report_generated", "nsys profile printed no 'Generated:' report list")
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# Stats output


_PROCESSING = re.compile(r"Processing \[[^\]]*\] with \[([^\]]*)\](?:\(([^)]*)\))?")
_EXECUTING = re.compile(r"Executing '([^']+)' stats report")
_TITLE = re.compile(r"\*\* .*\((\w+)\):\s*$")
_SKIPPED = re.compile(r"SKIPPED: .*")
_DASHES = re.compile(r"\s*-+(?:\s+-+)*\s*")


def parse_stats(text: str, path: str | Path | None = None) -> NsysStats:
    """Parse `nsys stats` stdout or a `--output <base>` file: any number of csv/column/json tables."""
    if not isinstance(text, str):
        raise ParseError(path, "input", f"expected text, got {type(text).__name__}")
    check_messages(text)
    lines = _lines(text)
    reports: list[NsysReport] = []
    skipped: list[NsysSkipped] = []
    context: tuple[str | None, str | None] = (_name_from_path(path), None)
    fresh = True  # nothing but blank lines since the last "Processing ..." line (or the start)
    i = 0
    while i < len(lines):
        s = lines[i].strip()
        m = _PROCESSING.search(s) or _EXECUTING.search(s) or _TITLE.search(s)
        if m:
            context, fresh = (Path(m.group(1)).stem, m.group(2) if m.re is _PROCESSING else None), True
            i += 1
            continue
        if _SKIPPED.match(s):
            skipped.append(NsysSkipped(context[0], s))
            i += 1
            continue
        if s == "[" or s.startswith("[{"):
            i = _json_block(lines, i, context, reports, path)
        elif s and i + 1 < len(lines) and _DASHES.fullmatch(lines[i + 1]) and lines[i + 1].count(" -") >= 2:
            i = _column_block(lines, i, context, reports, path)
        elif "," in s and (fresh and context[0] or _shape(_canon(next(csv.reader([s])))) is not None):
            i = _csv_block(lines, i, context, reports, path)
        else:
            i += 1
            fresh = fresh and not s
            continue
        # A "Processing"/"Executing" line names only the table right after it.
        context, fresh = (None, None), False
    if not reports and not skipped:
        raise ParseError(
            path,
            "input",
            "no nsys stats table found; known formats: csv, column, json of " + ", ".join(sorted(_BUILDERS)),
        )
    return NsysStats(tuple(reports), tuple(skipped))


def load_stats(path: str | Path) -> NsysStats:
    """Read a saved `nsys stats` output file (e.g. `<base>_cuda_gpu_kern_sum.csv`) and parse it."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise ParseError(path, "file", f"cannot read: {exc.strerror or exc}") from None
    return parse_stats(text, path)


def parse_kern_sum(text: str, path: str | Path | None = None) -> list[NsysKernelSummary]:
    """Rows of the first cuda_gpu_kern_sum (or cuda_gpu_kern_gb_sum) table."""
    stats = parse_stats(text, path)
    for r in stats.reports:
        if r.name in ("cuda_gpu_kern_sum", "cuda_gpu_kern_gb_sum"):
            return list(r.records)
    return list(stats.report("cuda_gpu_kern_sum").records)


def parse_report(text: str, report: str, path: str | Path | None = None) -> list[Any]:
    """Typed rows of the first table of `report` (e.g. "nvtx_sum", "cuda_gpu_trace")."""
    return list(parse_stats(text, path).report(report).records)


def _lines(text: str) -> list[str]:
    # Progress bars rewrite one line with bare carriage returns; treat each as its own line.
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _name_from_path(path: str | Path | None) -> str | None:
    if path is None:
        return None
    stem = Path(path).stem
    for name in _KNOWN_REPORTS:
        if stem == name or stem.endswith("_" + name):
            return name
    return None


def _csv_block(lines: list[str], i: int, context: tuple, reports: list, path: Any) -> int:
    start = i
    block = []
    while i < len(lines) and lines[i].strip() and not _PROCESSING.search(lines[i]) and not _SKIPPED.match(lines[i]):
        block.append(lines[i])
        i += 1
    try:
        rows = list(csv.reader(block, strict=True))
    except csv.Error as exc:
        raise ParseError(path, f"line {start + 1}", f"malformed CSV ({exc}); truncated output?") from None
    header, body = rows[0], rows[1:]
    for k, row in enumerate(body):
        if len(row) != len(header):
            raise ParseError(
                path, f"line {start + 2 + k}", f"expected {len(header)} fields, got {len(row)} (truncated row?)"
            )
    reports.append(_report(header, body, context, "csv", start + 2, path))
    return i


def _column_block(lines: list[str], i: int, context: tuple, reports: list, path: Any) -> int:
    dash = lines[i + 1]
    spans = [(m.start(), m.end()) for m in re.finditer(r"-+", dash)]
    # Cells may spill one character past a dash run when centred; cut half-way between runs.
    cuts = [0] + [(a_end + b_start) // 2 for (_, a_end), (b_start, _) in itertools.pairwise(spans)] + [None]
    bounds = list(itertools.pairwise(cuts))

    def cells(line: str) -> list[str]:
        return [line[a:b].strip() for a, b in bounds]

    header = cells(lines[i])
    start = i
    i += 2
    body = []
    while i < len(lines) and lines[i].strip():
        body.append(cells(lines[i]))
        i += 1
    reports.append(_report(header, body, context, "column", start + 3, path))
    return i


def _json_block(lines: list[str], i: int, context: tuple, reports: list, path: Any) -> int:
    rest = "\n".join(lines[i:])
    try:
        data, end = json.JSONDecoder().raw_decode(rest)
    except json.JSONDecodeError as exc:
        raise ParseError(path, f"line {i + 1 + exc.lineno - 1}", f"malformed JSON ({exc.msg}); truncated?") from None
    if not isinstance(data, list) or not all(isinstance(d, dict) for d in data):
        raise ParseError(path, f"line {i + 1}", "expected a JSON array of objects")
    header = list(data[0]) if data else []
    body = [["" if d.get(k) is None else str(d.get(k)) for k in header] for d in data]
    reports.append(_report(header, body, context, "json", i + 2, path))
    return i + rest[:end].count("\n") + 1


def _report(header: list[str], body: list[list[str]], context: tuple, fmt: str, lineno: int, path: Any) -> NsysReport:
    """Build one table; `lineno` is the (1-based) line of its first data row."""
    canon = _canon(header)
    shape = _shape(canon)
    name = context[0] or shape or "unknown"
    if shape is None and name in _BUILDERS:
        raise ParseError(path, f"line {lineno - 1}", f"header of {name} not recognised: {header[:4]!r}")
    records: tuple = ()
    if shape is not None:
        build = _BUILDERS[shape]
        records = tuple(build(_Row(canon, cells, f"line {lineno + k}", path)) for k, cells in enumerate(body))
    return NsysReport(name, tuple(header), tuple(tuple(r) for r in body), records, context[1], fmt)


# Column names: "Total Time (ns)" -> key "total time", unit "ns". Old nsys spelled some differently.
_ALIASES = {
    "average": "avg",
    "minimum": "min",
    "maximum": "max",
    "median": "med",
    "calls": "num calls",
    "std dev": "stddev",
    "time(%)": "time",
}
_UNIT = re.compile(r"(.*?)\s*\(([^()]*)\)")


def _canon(header: list[str]) -> dict[str, tuple[int, str]]:
    out: dict[str, tuple[int, str]] = {}
    for idx, col in enumerate(header):
        m = _UNIT.fullmatch(col.strip())
        key, unit = (m.group(1), m.group(2)) if m else (col.strip(), "")
        key = _ALIASES.get(key.lower(), key.lower())
        out.setdefault(key, (idx, unit))
    return out


def _shape(canon: dict[str, tuple[int, str]]) -> str | None:
    keys = set(canon)
    for name, required in _SHAPES:
        if required <= keys:
            return name
    return None


_SHAPES = (
    ("cuda_gpu_trace", {"start", "duration", "name"}),
    ("nvtx_kern_sum", {"nvtx range", "kernel name", "total time"}),
    ("nvtx_gpu_proj_sum", {"range", "total proj time"}),
    ("cuda_gpu_kern_gb_sum", {"total time", "instances", "gridxyz", "blockxyz", "name"}),
    ("cuda_gpu_kern_sum", {"total time", "instances", "avg", "name"}),
    ("nvtx_sum", {"total time", "instances", "range"}),
    ("cuda_api_sum", {"total time", "num calls", "avg", "name"}),
    ("cuda_gpu_mem_time_sum", {"total time", "count", "operation"}),
    ("cuda_gpu_mem_size_sum", {"total", "count", "operation"}),
)
_KNOWN_REPORTS = sorted({name for name, _ in _SHAPES} | {"osrt_sum"}, key=len, reverse=True)

_TIME_NS = {
    "ns": 1.0,
    "nsec": 1.0,
    "us": 1e3,
    "usec": 1e3,
    "ms": 1e6,
    "msec": 1e6,
    "s": 1e9,
    "sec": 1e9,
    "seconds": 1e9,
}
_BYTES = {"b": 1.0, "kb": 1e3, "mb": 1e6, "gb": 1e9, "kib": 1024.0, "mib": 1024.0**2, "gib": 1024.0**3}
_NUMBER = re.compile(r"[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][+-]?\d+)?")


_STATS = ("avg", "med", "min", "max", "stddev")


class _Row:
    """Typed access to one table row by canonical column key, converting units to ns / bytes."""

    def __init__(self, canon: dict[str, tuple[int, str]], cells: list[str], where: str, path: Any) -> None:
        self.canon, self.cells, self.where, self.path = canon, cells, where, path

    def text(self, key: str) -> str | None:
        if key not in self.canon:
            return None
        cell = self.cells[self.canon[key][0]].strip()
        return cell or None

    def num(self, key: str, required: bool = True) -> float | None:
        cell = self.text(key)
        if cell is None:
            if required:
                raise ParseError(self.path, f"{self.where}, column {key!r}", "missing value")
            return None
        if not _NUMBER.fullmatch(cell):
            raise ParseError(self.path, f"{self.where}, column {key!r}", f"expected a number, got {cell!r}")
        value = float(cell.replace(",", ""))
        if not math.isfinite(value):
            raise ParseError(self.path, f"{self.where}, column {key!r}", f"number out of range: {cell!r}")
        unit = self.canon[key][1].lower()
        factor = _TIME_NS.get(unit) or _BYTES.get(unit.removesuffix("/s"), 1.0)
        # Printed values are rounded (0.001 us, 0.001 MB); rounding the product drops float noise.
        return value if factor == 1.0 else round(value * factor, 3)

    def int(self, key: str, required: bool = True) -> int | None:
        value = self.num(key, required)
        return None if value is None else int(value)

    def dims(self, key: str) -> tuple[int, int, int] | None:
        cell = self.text(key)
        if cell is None:
            return None
        parts = cell.split()
        if len(parts) != 3 or not all(p.isdigit() for p in parts):
            raise ParseError(self.path, f"{self.where}, column {key!r}", f"expected 'x y z', got {cell!r}")
        return int(parts[0]), int(parts[1]), int(parts[2])

    def xyz(self, prefix: str) -> tuple[int, int, int] | None:
        vals = [self.int(f"{prefix}{a}", required=False) for a in "xyz"]
        return None if any(v is None for v in vals) else (vals[0], vals[1], vals[2])  # type: ignore[return-value]

    def name(self, key: str) -> str:
        cell = self.text(key)
        if cell is None:
            raise ParseError(self.path, f"{self.where}, column {key!r}", "missing name")
        return cell

    def stats(self, suffix: str = "_ns") -> dict[str, float | None]:
        """avg/med/min/max/stddev; Med and StdDev are optional (old nsys printed neither)."""
        return {f"{k}{suffix}": self.num(k, required=k not in ("med", "stddev")) for k in _STATS}


def _kern(r: _Row) -> NsysKernelSummary:
    return NsysKernelSummary(
        name=r.name("name"),
        time_pct=r.num("time"),
        total_ns=r.num("total time"),
        instances=r.int("instances"),
        **r.stats(),
        grid=r.dims("gridxyz"),
        block=r.dims("blockxyz"),
    )  # type: ignore[arg-type]


def _api(r: _Row) -> NsysApiSummary:
    return NsysApiSummary(
        name=r.name("name"),
        time_pct=r.num("time"),
        total_ns=r.num("total time"),
        num_calls=r.int("num calls"),
        **r.stats(),
    )  # type: ignore[arg-type]


def _split_range(rng: str) -> tuple[str | None, str]:
    domain, sep, name = rng.partition(":")
    return ((domain or None), name) if sep else (None, rng)


def _nvtx(r: _Row) -> NsysNvtxSummary:
    rng = r.name("range")
    domain, name = _split_range(rng)
    return NsysNvtxSummary(
        range=rng,
        domain=domain,
        name=name,
        style=r.text("style"),
        time_pct=r.num("time"),
        total_ns=r.num("total time"),
        instances=r.int("instances"),
        **r.stats(),
    )  # type: ignore[arg-type]


def _nvtx_kern(r: _Row) -> NsysNvtxKernelSummary:
    return NsysNvtxKernelSummary(
        range=r.text("nvtx range"),
        style=r.text("style"),
        pid=r.int("pid", False),
        tid=r.int("tid", False),
        nvtx_instances=r.int("nvtx inst"),
        kernel_instances=r.int("kern inst"),
        total_ns=r.num("total time"),
        **r.stats(),
        kernel_name=r.name("kernel name"),
    )  # type: ignore[arg-type]


def _mem_time(r: _Row) -> NsysMemTimeSummary:
    return NsysMemTimeSummary(
        operation=r.name("operation"),
        time_pct=r.num("time"),
        total_ns=r.num("total time"),
        count=r.int("count"),
        **r.stats(),
    )  # type: ignore[arg-type]


def _mem_size(r: _Row) -> NsysMemSizeSummary:
    return NsysMemSizeSummary(
        operation=r.name("operation"),
        total_bytes=r.num("total"),
        count=r.int("count"),
        **r.stats("_bytes"),
    )  # type: ignore[arg-type]


def _trace(r: _Row) -> NsysGpuTraceRow:
    return NsysGpuTraceRow(
        start_ns=r.num("start"),
        duration_ns=r.num("duration"),
        correlation_id=r.int("corrid", False),
        grid=r.xyz("grd"),
        block=r.xyz("blk"),
        registers_per_thread=r.int("reg/trd", False),
        static_smem_bytes=r.num("stcsmem", False),
        dynamic_smem_bytes=r.num("dymsmem", False),
        bytes=r.num("bytes", False),
        throughput_bytes_per_s=r.num("throughput", False),
        src_mem_kind=r.text("srcmemkd"),
        dst_mem_kind=r.text("dstmemkd"),
        device=r.text("device"),
        context=r.int("ctx", False),
        green_context=r.int("greenctx", False),
        stream=r.int("strm", False),
        name=r.name("name"),
    )  # type: ignore[arg-type]


def _generic(r: _Row) -> tuple[str, ...]:
    return tuple(r.cells)


_BUILDERS = {
    "cuda_gpu_kern_sum": _kern,
    "cuda_gpu_kern_gb_sum": _kern,
    "cuda_api_sum": _api,
    "nvtx_sum": _nvtx,
    "nvtx_kern_sum": _nvtx_kern,
    "nvtx_gpu_proj_sum": _generic,
    "cuda_gpu_mem_time_sum": _mem_time,
    "cuda_gpu_mem_size_sum": _mem_size,
    "cuda_gpu_trace": _trace,
}


# ---------------------------------------------------------------------------------------------
# SQLite export


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
