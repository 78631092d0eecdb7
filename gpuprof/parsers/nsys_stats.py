"""`nsys stats --format csv` output -> typed records of the four reports gpuprof asks for (SQLite: nsys_sqlite)."""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

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
class NsysReport:
    """One table of the output. `records` are typed for the known reports, empty otherwise."""

    name: str  # "cuda_gpu_kern_sum", ... ; from the surrounding text, the file name, or the header
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...] = field(repr=False)
    records: tuple[Any, ...] = field(default=(), repr=False)
    args: str | None = None  # "base", "mangled", "nvtx-name" ... when the report was given arguments
    format: str = "csv"
    # Rows left out of records for a value no run can have (a negative or NaN time, count or size),
    # each as "name: column = cell"; the caller says so where it shows the table.
    impossible: tuple[str, ...] = ()


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


def parse_stats(text: str, path: str | Path | None = None) -> NsysStats:
    """Parse `nsys stats --format csv` stdout or a `--output <base>` file: any number of tables."""
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
        if "," in s and (fresh and context[0] or _shape(_canon(next(csv.reader([s])))) is not None):
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
            "no nsys stats table found (gpuprof reads `nsys stats --format csv`) of " + ", ".join(sorted(_BUILDERS)),
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
    """Rows of the first cuda_gpu_kern_sum table."""
    return list(parse_stats(text, path).report("cuda_gpu_kern_sum").records)


def parse_report(text: str, report: str, path: str | Path | None = None) -> list[Any]:
    """Typed rows of the first table of `report` (e.g. "nvtx_sum")."""
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


def _report(header: list[str], body: list[list[str]], context: tuple, fmt: str, lineno: int, path: Any) -> NsysReport:
    """Build one table; `lineno` is the (1-based) line of its first data row."""
    canon = _canon(header)
    shape = _shape(canon)
    name = context[0] or shape or "unknown"
    if shape is None and name in _BUILDERS:
        raise ParseError(path, f"line {lineno - 1}", f"header of {name} not recognised: {header[:4]!r}")
    records: list = []
    impossible: list[str] = []
    if shape is not None and name in _BUILDERS:  # a report gpuprof did not ask for stays untyped
        build = _BUILDERS[shape]
        for k, cells in enumerate(body):
            row = _Row(canon, cells, f"line {lineno + k}", path)
            try:
                records.append(build(row))
            except _Impossible as exc:
                names = (t for key in ("name", "range", "operation") if (t := row.text(key)))
                label = next(names, f"line {lineno + k}")
                impossible.append(f"{label}: {exc.key} = {exc.cell}")
    return NsysReport(name, tuple(header), tuple(tuple(r) for r in body), tuple(records), context[1], fmt,
                      tuple(impossible))


class _Impossible(Exception):
    """A value no run can have in a column of a summary row: the row is left out (NsysReport.impossible)."""

    def __init__(self, key: str, cell: str) -> None:
        super().__init__(f"{key} = {cell}")
        self.key, self.cell = key, cell


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
    ("cuda_gpu_kern_sum", {"total time", "instances", "avg", "name"}),
    ("nvtx_sum", {"total time", "instances", "range"}),
    ("cuda_api_sum", {"total time", "num calls", "avg", "name"}),
    ("cuda_gpu_mem_time_sum", {"total time", "count", "operation"}),
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


class _Stats(TypedDict):
    """The per-row statistics every summary record shares, in ns."""

    avg_ns: float
    med_ns: float | None
    min_ns: float
    max_ns: float
    stddev_ns: float | None


class _Row:
    """Typed access to one table row by canonical column key, converting units to ns / bytes."""

    def __init__(self, canon: dict[str, tuple[int, str]], cells: list[str], where: str, path: Any) -> None:
        self.canon, self.cells, self.where, self.path = canon, cells, where, path

    def text(self, key: str) -> str | None:
        if key not in self.canon:
            return None
        cell = self.cells[self.canon[key][0]].strip()
        return cell or None

    def number(self, key: str) -> float:
        cell = self.text(key)
        if cell is None:
            raise ParseError(self.path, f"{self.where}, column {key!r}", "missing value")
        return self._to_number(key, cell)

    def optional_number(self, key: str) -> float | None:
        cell = self.text(key)
        return None if cell is None else self._to_number(key, cell)

    def integer(self, key: str) -> int:
        return int(self.number(key))

    def _to_number(self, key: str, cell: str) -> float:
        if cell.lower().lstrip("+-") in ("nan", "inf", "infinity") or (_NUMBER.fullmatch(cell) and cell[0] == "-"):
            raise _Impossible(key, cell)  # every column gpuprof reads is a time, a count, a size or a %
        if not _NUMBER.fullmatch(cell):
            raise ParseError(self.path, f"{self.where}, column {key!r}", f"expected a number, got {cell!r}")
        value = float(cell.replace(",", ""))
        if not math.isfinite(value):
            raise ParseError(self.path, f"{self.where}, column {key!r}", f"number out of range: {cell!r}")
        unit = self.canon[key][1].lower()
        factor = _TIME_NS.get(unit) or _BYTES.get(unit.removesuffix("/s"), 1.0)
        # Printed values are rounded (0.001 us, 0.001 MB); rounding the product drops float noise.
        return value if factor == 1.0 else round(value * factor, 3)

    def dims(self, key: str) -> tuple[int, int, int] | None:
        cell = self.text(key)
        if cell is None:
            return None
        parts = cell.split()
        if len(parts) != 3 or not all(p.isdigit() for p in parts):
            raise ParseError(self.path, f"{self.where}, column {key!r}", f"expected 'x y z', got {cell!r}")
        return int(parts[0]), int(parts[1]), int(parts[2])

    def name(self, key: str) -> str:
        cell = self.text(key)
        if cell is None:
            raise ParseError(self.path, f"{self.where}, column {key!r}", "missing name")
        return cell

    def stats(self) -> _Stats:
        """avg/med/min/max/stddev; Med and StdDev are optional (old nsys printed neither)."""
        return _Stats(avg_ns=self.number("avg"), med_ns=self.optional_number("med"), min_ns=self.number("min"),
                      max_ns=self.number("max"), stddev_ns=self.optional_number("stddev"))


def _kern(r: _Row) -> NsysKernelSummary:
    return NsysKernelSummary(
        name=r.name("name"),
        time_pct=r.number("time"),
        total_ns=r.number("total time"),
        instances=r.integer("instances"),
        **r.stats(),
        grid=r.dims("gridxyz"),
        block=r.dims("blockxyz"),
    )


def _api(r: _Row) -> NsysApiSummary:
    return NsysApiSummary(
        name=r.name("name"),
        time_pct=r.number("time"),
        total_ns=r.number("total time"),
        num_calls=r.integer("num calls"),
        **r.stats(),
    )


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
        time_pct=r.number("time"),
        total_ns=r.number("total time"),
        instances=r.integer("instances"),
        **r.stats(),
    )


def _mem_time(r: _Row) -> NsysMemTimeSummary:
    return NsysMemTimeSummary(
        operation=r.name("operation"),
        time_pct=r.number("time"),
        total_ns=r.number("total time"),
        count=r.integer("count"),
        **r.stats(),
    )


# The reports gpuprof asks `nsys stats` for (tools/nsys.py REPORTS); other tables are kept untyped.
REPORT_NAMES = ("cuda_gpu_kern_sum", "cuda_gpu_mem_time_sum", "cuda_api_sum", "nvtx_sum")
_BUILDERS = {
    "cuda_gpu_kern_sum": _kern,
    "cuda_api_sum": _api,
    "nvtx_sum": _nvtx,
    "cuda_gpu_mem_time_sum": _mem_time,
}
