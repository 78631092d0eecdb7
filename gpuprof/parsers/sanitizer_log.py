"""compute-sanitizer text reports and `--xml --save` files -> SanitizerFinding / SanitizerSummary."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from gpuprof.errors import ParseError, ToolFailed

KINDS = (
    "invalid_read",
    "invalid_write",
    "misaligned",
    "leak",
    "api_error",
    "race_hazard",
    "uninitialized_read",
    "barrier_divergence",
    "other",
)
TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")


class SanitizerToolError(ToolFailed):
    """compute-sanitizer refused to run (bad option: exit 255, usage text, message on stderr); kind "invalid_option"."""


@dataclass(frozen=True)
class SanitizerSite:
    """One side of a finding that names two (or more) places: a race's write and its read, or the
    two threads of a hazard. access: "Write" or "Read" as printed."""

    access: str
    kernel: str | None = None
    file: str | None = None
    line: int | None = None
    hazards: int | None = None  # racecheck analysis: hazards between the first site and this one
    thread: tuple[int, int, int] | None = None  # racecheck hazard report: the thread at this site


@dataclass(frozen=True)
class NearestAllocation:
    """memcheck's context for an out-of-bounds access: "and is 1 bytes after the nearest allocation
    at 0x7f92d2800000 of size 4,000 bytes" -> ("after", 1, 0x7f92d2800000, 4000). side: "after",
    "before" or "inside" (a misaligned access within it, distance None)."""

    side: str
    distance: int | None  # bytes between the access and the allocation's end ("after") or start ("before")
    address: int  # the allocation's start
    size: int  # the allocation's size in bytes


@dataclass(frozen=True)
class SanitizerFinding:
    """One reported error record."""

    tool: str
    kind: str  # one of KINDS
    message: str  # the record's first line (and its "is out of bounds" / "is misaligned" clause)
    kernel: str | None = None  # device function as printed, e.g. "oob_write(int *, int)"
    thread: tuple[int, int, int] | None = None
    block: tuple[int, int, int] | None = None
    address: int | None = None
    size: int | None = None  # access size, or bytes leaked
    file: str | None = None  # only with -lineinfo / -G
    line: int | None = None
    severity: str = "error"  # "error", "warning", "info"
    detail: str | None = None  # racecheck: "WAW", "RAW", "WAR" (hazard report) or "WAW,RAW|WAR" (analysis)
    count: int | None = None  # racecheck analysis: hazards aggregated into this record
    # Every place the record names, in its order (a race: the first access, then each "and ... access
    # at"); the finding's own kernel/file/line are the first site's. Empty for one-place kinds.
    sites: tuple[SanitizerSite, ...] = ()
    # "function (module)" per "Host Frame:" line, innermost first: where an API error was called
    # from (a device line does not exist for it), or where a leaked allocation was made.
    host_frames: tuple[str, ...] = ()
    # memcheck: the allocation an out-of-bounds or misaligned access missed, or was in (None if not printed)
    allocation: NearestAllocation | None = None


@dataclass(frozen=True)
class SanitizerSummary:
    """A whole report: the findings plus what the tool said it counted, and whether they agree."""

    tool: str
    error_count: int | None  # "ERROR SUMMARY: N errors" (racecheck: errors of RACECHECK SUMMARY); None if absent
    findings: tuple[SanitizerFinding, ...]
    printed_count: int | None = None  # records the tool says it printed (error_count minus "not printed")
    not_printed: int = 0  # "N errors were not printed" (--print-limit)
    warning_count: int | None = None  # racecheck only
    leaked_bytes: int | None = None  # LEAK SUMMARY
    leak_allocations: int | None = None
    notes: tuple[str, ...] = ()  # e.g. racecheck's "Maximum number of hazards reached"
    truncated: bool = False  # the tool counted more than it printed (print limit, hazard cap)
    mismatch: str | None = None  # why len(findings) differs from the tool's own count, if it does

    @property
    def clean(self) -> bool:
        """True only when the tool reported zero errors and nothing was parsed."""
        return self.error_count == 0 and not self.findings


# ---------------------------------------------------------------------------------------------
# Text report

_PREFIX = "========="
_DIMS = r"\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)"
_SEVERITY = r"(?P<sev>Error|Warning|Info|ERROR|WARNING|INFO|WARN|ERR)\s*:?\s*(?:\([^)]*\)\s*)?"
_START = {
    "invalid": re.compile(r"Invalid (?P<space>__\w+__|\w+) (?P<dir>read|write|atomic)\b.*?of size (?P<size>\d[\d,]*)"),
    "api": re.compile(r"Program hit (?P<err>\w+) \(error \d+\)"),
    "leak": re.compile(r"Leaked (?P<size>\d[\d,]*) bytes at (?P<addr>0x[0-9a-fA-F]+)"),
    "uninit": re.compile(r"Uninitialized (?P<space>__\w+__|\w+) memory (?P<dir>read|write)"),
    "barrier": re.compile(r"Barrier error detected\."),
    "race": re.compile(_SEVERITY + r"Race reported between (?P<acc>Read|Write) access at (?P<loc>.+)"),
    "hazard": re.compile(
        _SEVERITY + r"Potential (?P<hz>RAW|WAR|WAW) hazard detected at (?P<space>\S+) "
        r"(?P<addr>0x[0-9a-fA-F]+)"
    ),
    "malloc": re.compile(r"Malloc/Free error encountered"),
    "range": re.compile(r"Out-of-range Shared or Local Address"),
}
_NOTE = re.compile(_SEVERITY + r"(Maximum number of hazards reached.*)")
# What compute-sanitizer says about the run, not a record its summary counts (on a line of its own).
_TOOL_MESSAGE = re.compile(r"Target application returned an error|Error: process didn't terminate successfully|"
                           r"No CUDA-MEMCHECK results found|The application may have hit an error")
_HOST_FRAME = re.compile(r"Host Frame:\s*(?P<func>.*?)\s*(?:\[(?P<pc>0x[0-9a-fA-F]+)\])?\s+in\s+(?P<module>\S.*)$")
_CONTINUATION = re.compile(
    r"(at |by thread|Access to 0x|Address 0x|and is |and (Read|Write) access at|Saved host backtrace|Host Frame|"
    r"in /|(Read|Write) Thread|Current Value|Device Frame)"
)
_AT = [  # location lines, newest format first
    re.compile(r"at (?P<pc>0x[0-9a-fA-F]+) in (?P<file>[^:]+):(?P<line>\d+):(?P<func>.+)"),  # cuda-memcheck
    re.compile(r"at (?P<pc>0x[0-9a-fA-F]+) in (?P<func>.+)"),  # no line info, older sanitizer
    re.compile(r"at (?P<func>.+?)(?:\+|:)(?P<pc>0x[0-9a-fA-F]+)(?: in (?P<file>.+):(?P<line>\d+))?"),
]
_NEAREST = re.compile(r"and is (?:(?P<dist>\d[\d,]*) bytes? (?P<side>after|before)|(?P<inside>inside)) the nearest "
                      r"allocation at (?P<addr>0x[0-9a-fA-F]+) of size (?P<size>\d[\d,]*) bytes?")
_SUMMARY = re.compile(r"ERROR SUMMARY: (?P<n>\d[\d,]*) errors?(?P<np> were not printed)?")
_LEAKS = re.compile(r"LEAK SUMMARY: (?P<b>\d[\d,]*) bytes leaked in (?P<n>\d[\d,]*) allocations?")
_RACE = re.compile(
    r"RACECHECK SUMMARY: (?P<d>\d[\d,]*) hazards? displayed \((?P<e>\d[\d,]*) errors?, (?P<w>\d[\d,]*) warnings?\)"
)
_BAD_OPTION = re.compile(r"the argument for option '([^']+)' is invalid|unrecogni[sz]ed option '?([^'\s]+)")


def parse_log(
    text: str, path: str | Path | None = None, tool: str | None = None, prefix: str = _PREFIX, quiet: bool = False
) -> SanitizerSummary:
    """Parse compute-sanitizer's text report (stdout or --log-file; app output may be interleaved).

    `tool` is inferred from the records when None. With `quiet=True` (the run used -q, which prints
    nothing at all for a clean run) a text without any sanitizer line is a clean, count-less result;
    otherwise it is a ParseError, since it is not a sanitizer report.
    """
    if not isinstance(text, str):
        raise ParseError(path, "input", f"expected text, got {type(text).__name__}")
    bodies = [(n + 1, ln[len(prefix) :]) for n, ln in enumerate(text.splitlines()) if ln.startswith(prefix)]
    if not bodies:
        # A rejected option prints the usage text and this line, and no report at all (exit 255).
        m = _BAD_OPTION.search(text)
        if m:
            raise SanitizerToolError("invalid_option", m.group(0))
        if quiet:
            return SanitizerSummary(tool or "memcheck", None, ())
        raise ParseError(path, "input", f"no compute-sanitizer lines (none starts with {prefix!r})")
    records: list[tuple[int, list[str]]] = []
    counts: dict[str, int] = {}
    notes: list[str] = []
    current: list[str] | None = None
    for lineno, body in bodies:
        s = body.strip()
        if not s or s in ("COMPUTE-SANITIZER", "CUDA-MEMCHECK"):
            current = None
            continue
        if _summary_line(s, counts, path, lineno):
            current = None
            continue
        note = _NOTE.match(s)
        if note:
            notes.append(s)
            current = None
            continue
        indented = body.startswith("  ")
        if current is not None and (indented or _CONTINUATION.match(s)) and not _starts_record(s):
            current.append(s)
        else:
            current = [s]
            records.append((lineno, current))
    # A headline gpuprof does not know, alone on its line with nothing under it, is the tool talking
    # about the run ("Target application returned an error"), not a record its summary counts.
    messages = [lines for _, lines in records
                if _TOOL_MESSAGE.match(lines[0]) or (len(lines) == 1 and not _starts_record(lines[0]))]
    records = [(lineno, lines) for lineno, lines in records if not any(lines is m for m in messages)]
    findings = tuple(_finding(lines, tool, lineno, path) for lineno, lines in records)
    tool = tool or _infer_tool(findings, counts)
    findings = tuple(_with_tool(f, tool) for f in findings)
    return _summarise(tool, findings, counts, tuple(notes), tuple(lines[0] for lines in messages))


def _starts_record(s: str) -> bool:
    return any(p.match(s) for p in _START.values())


def _summary_line(s: str, counts: dict[str, int], path: str | Path | None, lineno: int) -> bool:
    def num(x: str) -> int:
        return int(x.replace(",", ""))

    m = _SUMMARY.fullmatch(s.split(". Use --print-limit")[0].rstrip("."))
    if m:
        counts["not_printed" if m.group("np") else "errors"] = num(m.group("n"))
        return True
    m = _LEAKS.fullmatch(s)
    if m:
        counts["leaked_bytes"], counts["leak_allocations"] = num(m.group("b")), num(m.group("n"))
        return True
    m = _RACE.fullmatch(s)
    if m:
        counts["displayed"], counts["race_errors"], counts["race_warnings"] = (
            num(m.group("d")),
            num(m.group("e")),
            num(m.group("w")),
        )
        return True
    if re.match(r"(ERROR|LEAK|RACECHECK) SUMMARY:", s):
        raise ParseError(path, f"line {lineno}", f"unrecognised summary line {s!r}")
    return False


def _finding(lines: list[str], tool: str | None, lineno: int, path: str | Path | None) -> SanitizerFinding:
    head = lines[0]
    f: dict = {"tool": tool or "", "message": head, "severity": "error", "kind": "other"}
    which, m = next(((k, p.match(head)) for k, p in _START.items() if p.match(head)), (None, None))
    groups = m.groupdict() if m else {}
    if groups.get("sev"):
        sev = groups["sev"].lower()
        f["severity"] = "warning" if sev.startswith("warn") else "info" if sev == "info" else "error"
    if which == "invalid":
        misaligned = any("misaligned" in ln for ln in lines)
        direction = {"read": "invalid_read", "write": "invalid_write"}.get(groups["dir"], "other")
        f.update(kind="misaligned" if misaligned else direction, size=_int(groups["size"]))
        clause = next((c for c in (re.search(r"is (out of bounds|misaligned)", ln) for ln in lines) if c), None)
        if clause:
            f["message"] = f"{head} {clause.group(0)}"
    elif which == "api":
        f["kind"] = "api_error"
    elif which == "leak":
        f.update(kind="leak", size=_int(groups["size"]), address=int(groups["addr"], 16))
    elif which == "uninit":
        f["kind"] = "uninitialized_read" if groups["dir"] == "read" else "other"
    elif which == "barrier":
        f["kind"] = "barrier_divergence" if "Divergent" in head else "other"
    elif which == "race":
        _analysis_race(f, groups, lines)
    elif which == "hazard":
        f.update(kind="race_hazard", detail=groups["hz"], address=int(groups["addr"], 16))
        if " in block " in head:
            f["block"] = _dims_of(head.split(" in block ", 1)[1])
        thread_lines = [ln for ln in lines[1:] if re.match(r"(Read|Write) Thread", ln)]
        if thread_lines:
            f["thread"] = _dims_of(thread_lines[0])
            _location(f, thread_lines[0].split(" at ", 1)[1] if " at " in thread_lines[0] else "")
            f["sites"] = tuple(_site(ln.split(" ", 1)[0], ln.split(" at ", 1)[1] if " at " in ln else "",
                                     thread=_dims_of(ln)) for ln in thread_lines)
    frames = [m for m in (_HOST_FRAME.match(ln) for ln in lines[1:]) if m]
    if frames:
        f["host_frames"] = tuple(f"{m.group('func') or m.group('pc') or '?'} ({m.group('module').strip()})"
                                 for m in frames)
    for ln in lines[1:]:
        if ln.startswith("at ") and "file" not in f and "kernel" not in f:
            _location(f, ln[3:])
        elif ln.startswith("by thread"):
            parts = re.findall(_DIMS, ln)
            if len(parts) == 2:
                f["thread"] = tuple(int(x) for x in parts[0])
                f["block"] = tuple(int(x) for x in parts[1])
        elif (near := _NEAREST.match(ln)) is not None:
            f["allocation"] = NearestAllocation(near.group("side") or "inside", _int(near.group("dist")),
                                                int(near.group("addr"), 16), _int(near.group("size")) or 0)
        elif "address" not in f:
            a = re.match(r"(?:Access to|Address) (0x[0-9a-fA-F]+)", ln)
            if a:
                f["address"] = int(a.group(1), 16)
    return SanitizerFinding(**f)


def _analysis_race(f: dict, groups: dict, lines: list[str]) -> None:
    """`Race reported between Write access at A` + `and Read access at B [264 hazards]` lines."""
    first = groups.get("acc", "")
    _location(f, groups.get("loc", ""))
    pairs, total = [], 0
    sites = [_site(first, groups.get("loc", ""))]
    for ln in lines[1:]:
        m = re.match(r"and (Read|Write) access at (.+?)(?: \[(\d[\d,]*) hazards?\])?$", ln)
        if not m:
            continue
        other = m.group(1)
        pairs.append("WAW" if first == other == "Write" else "RAW|WAR" if "Write" in (first, other) else "RAR")
        total += _int(m.group(3)) or 0
        sites.append(_site(other, m.group(2), hazards=_int(m.group(3))))
    # Analysis mode does not say which access came first, so a write/read pair is "RAW|WAR".
    f.update(kind="race_hazard", detail=",".join(dict.fromkeys(pairs)) or None, count=total or None,
             sites=tuple(sites))


def _site(access: str, loc: str, hazards: int | None = None,
          thread: tuple[int, int, int] | None = None) -> SanitizerSite:
    where: dict = {}
    _location(where, loc)
    return SanitizerSite(access, where.get("kernel"), where.get("file"), where.get("line"), hazards, thread)


def _location(f: dict, loc: str) -> None:
    loc = re.sub(r"\s*\[\d[\d,]* hazards?\]$", "", loc.strip())
    for pattern in _AT:
        m = pattern.fullmatch("at " + loc)
        if m:
            f["kernel"] = m.group("func").strip()
            if m.groupdict().get("file"):
                f["file"], f["line"] = m.group("file").strip(), int(m.group("line"))
            return


def _dims_of(s: str) -> tuple[int, int, int] | None:
    m = re.search(_DIMS, s)
    return None if not m else (int(m.group(1)), int(m.group(2)), int(m.group(3)))


def _int(s: str | None) -> int | None:
    return None if s is None else int(s.replace(",", ""))


def _infer_tool(findings: tuple[SanitizerFinding, ...], counts: dict[str, int]) -> str:
    kinds = {f.kind for f in findings}
    if "displayed" in counts or "race_hazard" in kinds:
        return "racecheck"
    if "uninitialized_read" in kinds:
        return "initcheck"
    if "barrier_divergence" in kinds:
        return "synccheck"
    return "memcheck"


def _with_tool(f: SanitizerFinding, tool: str) -> SanitizerFinding:
    return f if f.tool == tool else SanitizerFinding(**{**f.__dict__, "tool": tool})


def _summarise(
    tool: str, findings: tuple[SanitizerFinding, ...], counts: dict[str, int], notes: tuple[str, ...],
    messages: tuple[str, ...] = (),
) -> SanitizerSummary:
    """notes: the tool stopped counting (they make the result truncated); messages: what the tool
    said about the run, kept beside them."""
    n = len(findings)
    not_printed = counts.get("not_printed", 0)
    errors: int | None  # None: the log has no summary line
    warnings: int | None  # only racecheck counts warnings apart
    printed: int | None
    if "displayed" in counts:  # racecheck
        errors, warnings, printed = counts["race_errors"], counts["race_warnings"], counts["displayed"]
        truncated = printed < errors + warnings or bool(notes)
    else:
        errors, warnings = counts.get("errors"), None
        printed = None if errors is None else errors - not_printed
        truncated = not_printed > 0 or bool(notes)
    mismatch = None
    if printed is None:
        mismatch = f"no summary line; {n} findings parsed (log cut short, or -q?)" if n else None
    elif n != printed:
        mismatch = f"tool says {printed} printed, {n} parsed"
    elif truncated:
        assert errors is not None  # a printed count is only ever derived from an error count
        total = errors if warnings is None else errors + warnings
        mismatch = f"only {printed} of {total} printed (raise --print-limit or the hazard cap to see all)"
    return SanitizerSummary(
        tool=tool,
        error_count=errors,
        findings=findings,
        printed_count=printed,
        not_printed=not_printed,
        warning_count=warnings,
        leaked_bytes=counts.get("leaked_bytes"),
        leak_allocations=counts.get("leak_allocations"),
        notes=notes + messages,
        truncated=truncated,
        mismatch=mismatch,
    )


# ---------------------------------------------------------------------------------------------
# XML (--xml --save FILE)


def parse_xml(text: str | bytes, path: str | Path | None = None, tool: str | None = None) -> SanitizerSummary:
    """Parse a `--xml --save` file. It has no summary element: error_count/printed_count are None."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise ParseError(path, f"line {exc.position[0]}", f"malformed XML ({exc})") from None
    if root.tag != "ComputeSanitizerOutput":
        raise ParseError(path, "root element", f"expected <ComputeSanitizerOutput>, got <{root.tag}>")
    findings = []
    for i, rec in enumerate(root.iter("record")):
        findings.append(_xml_finding(rec, tool, f"record {i + 1}", path))
    tool = tool or _infer_tool(tuple(findings), {})
    return SanitizerSummary(tool, None, tuple(_with_tool(f, tool) for f in findings))


def load_xml(path: str | Path, tool: str | None = None) -> SanitizerSummary:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ParseError(path, "file", f"cannot read: {exc.strerror or exc}") from None
    return parse_xml(data, path, tool)


def _xml_finding(rec: ET.Element, tool: str | None, where: str, path: str | Path | None) -> SanitizerFinding:
    def text(xpath: str) -> str | None:
        el = rec.find(xpath)
        return None if el is None or el.text is None else el.text.strip()

    def number(xpath: str, base: int = 10) -> int | None:
        t = text(xpath)
        if t is None:
            return None
        try:
            return int(t.replace(",", ""), base)
        except ValueError:
            raise ParseError(path, f"{where}, <{xpath}>", f"expected a number, got {t!r}") from None

    def dims(xpath: str) -> tuple[int, int, int] | None:
        xyz = [number(f"{xpath}/{a}") for a in "xyz"]
        return None if any(v is None for v in xyz) else (xyz[0], xyz[1], xyz[2])  # type: ignore[return-value]

    message = text("what/text") or text("kind") or ""
    head = _finding([message], tool, 0, path)  # classify the text like a text-report headline
    direction, error = text("what/direction"), text("what/error") or ""
    kind = head.kind
    if "misaligned" in error:
        kind = "misaligned"
    elif kind == "other" and direction in ("read", "write") and "bounds" in error:
        kind = f"invalid_{direction}"
    level = (text("level") or "error").lower()
    return SanitizerFinding(
        tool=tool or "",
        kind=kind,
        message=message,
        kernel=text("where/func"),
        thread=dims("who/threadIdx"),
        block=dims("who/blockIdx"),
        address=number("what/address", 16) if text("what/address") else head.address,
        size=number("what/size") if text("what/size") else head.size,
        file=text("where/path"),
        line=number("where/line"),
        severity="warning" if level.startswith("warn") else level,
    )
