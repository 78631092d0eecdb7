"""A results row's profiler parts as typed records: what `run --with ncu,sanitize` measured (`NcuPart`)
and found (`SanitizerPart`), written once by commands/row_story.py and read by `show`, `report` and
`compare` alike (docs/results-json.md, "ncu" and "sanitizer").

Files of earlier gpuprofs hold the same keys without the newer ones (levels, stalls, hot lines,
advice, findings): those read as empty. A value of the wrong type is a ValueError naming the key, as
the rest of a row's fields are; keys this gpuprof does not know are kept out (a newer writer's
additions are not guessed at)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any

NCU_SCHEMA = "gpuprof.row.ncu/1"
SANITIZER_SCHEMA = "gpuprof.row.sanitizer/1"
# Sanitizer verdicts over all tools: clean only when every tool that ran was clean.
CLEAN, FINDINGS, NOT_JUDGED = "clean", "findings", "not judged"
VERDICTS = (CLEAN, FINDINGS, NOT_JUDGED)
# Memory levels as a row keeps their bytes (parsers/ncu_levels.LEVELS, in the order a load meets them).
LEVEL_KEYS = ("l1", "l2", "dram")


@dataclass(frozen=True, slots=True)
class HotLine:
    """One source line of the kernel with its share of the sampled warp stalls (ncu's SourceCounters)."""

    file: str
    line: int
    share_pct: float  # of the kernel's sampled stalls, summed over its launches
    text: str = ""  # the line as the file had it when ncu ran; "" where the report holds no source
    stalls: dict[str, float] = field(default_factory=dict)  # reason -> % of this line's samples

    @property
    def place(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True, slots=True)
class Advice:
    """One of ncu's rule results (OPT or WRN), first sentence, with the rule's estimated speedup."""

    rule: str
    message: str
    speedup_pct: float | None = None
    kind: str = "OPT"  # ncu's rule result kind

    # What analysis/advice_order.order_advice reads of a rule result (parsers' NcuAdvice names):
    # the row keeps the rule's name in `rule` (the section's where ncu gave no rule name).
    @property
    def section(self) -> str:
        return ""

    @property
    def estimated_speedup_pct(self) -> float | None:
        return self.speedup_pct


@dataclass(frozen=True, slots=True)
class NcuPart:
    """What Nsight Compute measured for one row's variant, summed over the launches of its NVTX range.

    error: ncu ran but gave nothing usable for this variant (the other fields are then empty).
    level_bytes: bytes moved per memory level (LEVEL_KEYS) where the report had them.
    level_peaks: each level's peak bandwidth (bytes/s) at the profiled clocks, the roofs of a
    per-level roofline.
    stalls: warp-state cycles by stall reason, % of all stalled cycles (WarpStateStats).
    limiter: the roof the counters show binding, as analysis/ladder.py judges it (catalog.LIMITERS:
    "dram", "l2", "l1", "compute", or "latency" below 40 % of every roof); None where not judged."""

    schema: str = NCU_SCHEMA
    error: str | None = None
    kernels: int = 0
    duration_ns: float | None = None
    sm_pct: float | None = None
    memory_pct: float | None = None
    dram_pct: float | None = None
    achieved_occupancy_pct: float | None = None
    occupancy_limiter: str | None = None
    registers: int | None = None
    shared_mem_bytes: float | None = None
    dram_bytes: float | None = None
    dram_read_bytes: float | None = None
    dram_write_bytes: float | None = None
    level_bytes: dict[str, float] = field(default_factory=dict)
    level_peaks: dict[str, float] = field(default_factory=dict)  # bytes/s each level can move (ncu's peak)
    flop: float | None = None
    instructions: float | None = None
    limiter: str | None = None
    top_stall: str | None = None
    top_stall_pct: float | None = None
    stalls: dict[str, float] = field(default_factory=dict)
    hot_lines: tuple[HotLine, ...] = ()
    advice: tuple[Advice, ...] = ()
    report: str | None = None  # the .ncu-rep the numbers came from, as the run wrote it

    @property
    def intensity(self) -> float | None:
        """Measured FLOP per DRAM byte, or None where either is missing or zero."""
        return self.flop / self.dram_bytes if self.flop and self.dram_bytes else None


@dataclass(frozen=True, slots=True)
class Finding:
    """One sanitizer finding as a row keeps it: the tool, what kind, in which kernel, where."""

    tool: str
    kind: str
    kernel: str = ""
    file: str = ""
    line: int | None = None
    text: str = ""  # the source line, where the file was readable when the row was made
    message: str = ""  # the tool's own words, first line

    @property
    def place(self) -> str:
        return f"{self.file}:{self.line}" if self.file and self.line else self.kernel


@dataclass(frozen=True, slots=True)
class SanitizerPart:
    """compute-sanitizer's verdict for one row's variant, per tool and over all.

    tools: per tool, "clean", "N findings", "not judged: why" or "skipped: why".
    findings: how many the tools counted; found: the first few of them, typed (at most MAX_FOUND)."""

    schema: str = SANITIZER_SCHEMA
    verdict: str = NOT_JUDGED
    findings: int = 0
    first: str | None = None  # the first finding in one line ("racecheck: hazard file.cu:32")
    tools: dict[str, str] = field(default_factory=dict)
    size: dict[str, int] = field(default_factory=dict)  # where the tools ran (the family's middle check size)
    found: tuple[Finding, ...] = ()


MAX_FOUND = 20  # findings kept per row: enough to show both sides of a race, bounded for a noisy kernel


def ncu_to_dict(part: NcuPart) -> dict[str, Any]:
    """The row's "ncu" object: empty collections and unset optional fields left out, so a row of a run
    without the newer data reads as the file always had it. A non-finite number (a counter ncu could
    not give) is written as absent: a file holds measurements only, and loads again."""
    out: dict[str, Any] = {}
    for f in fields(NcuPart):
        value = _finite_or_none(getattr(part, f.name))
        if isinstance(value, dict):
            value = {k: v for k, v in value.items() if _finite_or_none(v) is not None}
        if f.name == "hot_lines":
            value = [_plain(h) for h in value]
        elif f.name == "advice":
            value = [_plain(a) for a in value]
        if value is None and f.name not in _NCU_ALWAYS or value in ({}, []):
            continue
        out[f.name] = value
    return out


def sanitizer_to_dict(part: SanitizerPart) -> dict[str, Any]:
    out = {f.name: getattr(part, f.name) for f in fields(SanitizerPart)}
    out["found"] = [_plain(f) for f in part.found]
    if not out["found"]:
        del out["found"]
    return out


# Fields written even when None: readers of earlier gpuprofs looked for them.
_NCU_ALWAYS = frozenset({"duration_ns", "top_stall"})


def ncu_from_dict(raw: Any, where: str) -> NcuPart:
    """A row's "ncu" object -> NcuPart; TypeError/ValueError in the file's words when it is malformed."""
    d = _object(raw, f"{where}: ncu")
    numbers = {f.name for f in fields(NcuPart)} - {"schema", "error", "occupancy_limiter", "limiter", "top_stall",
                                                   "report", "level_bytes", "level_peaks", "stalls", "hot_lines",
                                                   "advice", "kernels", "registers"}
    kw: dict[str, Any] = {}
    for key in numbers:
        kw[key] = _finite(d.get(key), f"{where}: ncu.{key}")
    for key in ("schema", "error", "occupancy_limiter", "limiter", "top_stall", "report"):
        kw[key] = _text(d.get(key), f"{where}: ncu.{key}")
    kw["schema"] = kw["schema"] or NCU_SCHEMA
    kw["kernels"] = _integer(d.get("kernels", 0), f"{where}: ncu.kernels")
    kw["registers"] = _integer(d.get("registers"), f"{where}: ncu.registers", optional=True)
    kw["level_bytes"] = _number_map(d.get("level_bytes"), f"{where}: ncu.level_bytes")
    kw["level_peaks"] = _number_map(d.get("level_peaks"), f"{where}: ncu.level_peaks")
    kw["stalls"] = _number_map(d.get("stalls"), f"{where}: ncu.stalls")
    kw["hot_lines"] = tuple(_hot_line(h, f"{where}: ncu.hot_lines[{i}]")
                            for i, h in enumerate(_list(d.get("hot_lines"), f"{where}: ncu.hot_lines")))
    kw["advice"] = tuple(_advice(a, f"{where}: ncu.advice[{i}]")
                         for i, a in enumerate(_list(d.get("advice"), f"{where}: ncu.advice")))
    return NcuPart(**kw)


def sanitizer_from_dict(raw: Any, where: str) -> SanitizerPart:
    d = _object(raw, f"{where}: sanitizer")
    verdict = _text(d.get("verdict"), f"{where}: sanitizer.verdict") or NOT_JUDGED
    if verdict not in VERDICTS:
        raise ValueError(f"{where}: sanitizer.verdict {verdict!r} is none of {', '.join(VERDICTS)}")
    tools = d.get("tools") or {}
    if not isinstance(tools, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in tools.items()):
        raise TypeError(f"{where}: sanitizer.tools must be a table like {{\"memcheck\": \"clean\"}}")
    size = d.get("size") or {}
    if not isinstance(size, dict) or not all(type(v) is int for v in size.values()):
        raise TypeError(f"{where}: sanitizer.size must be a table of integers like {{\"n\": 4097}}")
    found = tuple(_finding(f, f"{where}: sanitizer.found[{i}]")
                  for i, f in enumerate(_list(d.get("found"), f"{where}: sanitizer.found")))
    return SanitizerPart(schema=_text(d.get("schema"), f"{where}: sanitizer.schema") or SANITIZER_SCHEMA,
                         verdict=verdict, findings=_integer(d.get("findings", 0), f"{where}: sanitizer.findings"),
                         first=_text(d.get("first"), f"{where}: sanitizer.first"), tools=dict(tools),
                         size={str(k): v for k, v in size.items()}, found=found[:MAX_FOUND])


def _hot_line(raw: Any, where: str) -> HotLine:
    d = _object(raw, where)
    line = _integer(d.get("line"), f"{where}.line")
    share = _finite(d.get("share_pct"), f"{where}.share_pct")
    return HotLine(file=_text(d.get("file"), f"{where}.file") or "", line=line,
                   share_pct=share if share is not None else 0.0, text=_text(d.get("text"), f"{where}.text") or "",
                   stalls=_number_map(d.get("stalls"), f"{where}.stalls"))


def _advice(raw: Any, where: str) -> Advice:
    d = _object(raw, where)
    return Advice(rule=_text(d.get("rule"), f"{where}.rule") or "", message=_text(d.get("message"), f"{where}.message")
                  or "", speedup_pct=_finite(d.get("speedup_pct"), f"{where}.speedup_pct"),
                  kind=_text(d.get("kind"), f"{where}.kind") or "OPT")


def _finding(raw: Any, where: str) -> Finding:
    d = _object(raw, where)
    return Finding(tool=_text(d.get("tool"), f"{where}.tool") or "", kind=_text(d.get("kind"), f"{where}.kind") or "",
                   kernel=_text(d.get("kernel"), f"{where}.kernel") or "", file=_text(d.get("file"), f"{where}.file")
                   or "", line=_integer(d.get("line"), f"{where}.line", optional=True),
                   text=_text(d.get("text"), f"{where}.text") or "",
                   message=_text(d.get("message"), f"{where}.message") or "")


def _finite_or_none(value: Any) -> Any:
    return None if isinstance(value, float) and not math.isfinite(value) else value


def _plain(record: Any) -> dict[str, Any]:
    return {f.name: getattr(record, f.name) for f in fields(record)}


def _object(raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise TypeError(f"{where} must be an object, not {type(raw).__name__}")
    return raw


def _list(raw: Any, where: str) -> list[Any]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise TypeError(f"{where} must be a list, not {type(raw).__name__}")
    return raw


def _text(raw: Any, where: str) -> str | None:
    if raw is None or isinstance(raw, str):
        return raw
    raise TypeError(f"{where} must be text, not {type(raw).__name__}")


def _finite(raw: Any, where: str) -> float | None:
    """A measured number: finite, or absent. NaN and infinities are no measurement (issue 37)."""
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        raise TypeError(f"{where} must be a number, not {type(raw).__name__}")
    if not math.isfinite(raw):
        raise ValueError(f"{where} is {raw!r}: a measurement is a finite number")
    return float(raw)


def _integer(raw: Any, where: str, optional: bool = False) -> Any:
    if raw is None and optional:
        return None
    if type(raw) is not int or raw < 0:
        raise TypeError(f"{where} must be a whole number, 0 or more, not {raw!r:.40}")
    return raw


def _number_map(raw: Any, where: str) -> dict[str, float]:
    if raw is None:
        return {}
    d = _object(raw, where)
    return {str(k): v for k, v in ((k, _finite(v, f"{where}.{k}")) for k, v in d.items()) if v is not None}
