"""`.ncu-rep` report files -> NcuKernelRow records, through NVIDIA's `ncu_report` module."""

from __future__ import annotations

import json
import re
import sys
from dataclasses import asdict, replace
from pathlib import Path
from types import ModuleType
from typing import Any

from gpuprof.errors import ParseError
from gpuprof.parsers.ncu_levels import RooflineLevels
from gpuprof.parsers.ncu_metrics import NcuAdvice, NcuKernelRow, NcuSection, row_from_metrics, to_base_unit


class NcuReportUnavailable(ImportError):
    """The optional `ncu_report` module cannot be imported."""


_INSTALL_HINT = (
    "reading .ncu-rep files needs NVIDIA's ncu_report module: `pip install ncu-report`; or export CSV with "
    "`ncu --import REPORT --csv --page raw --print-units base` and use parsers.ncu_csv"
)

# ncu_report enums as ncu prints them in the details CSV (MsgType, SpeedupType).
_MSG_KIND = {0: "NONE", 1: "INF", 2: "OPT", 3: "WRN", 4: "ERR"}
_SPEEDUP_TYPE = {1: "local", 2: "global"}


def import_ncu_report() -> ModuleType:
    """Import `ncu_report` lazily; raise NcuReportUnavailable (an ImportError) with the fix.

    Only an installed module (PyPI `ncu-report`) is used: importing the copy inside Nsight Compute
    (extras/python) into gpuprof's process ended it with a segmentation fault on the lent H100
    (Python 3.12, ncu 2025.3.1), so gpuprof falls back to `ncu --import` CSV instead."""
    try:
        import ncu_report
    except ImportError as exc:
        raise NcuReportUnavailable(_INSTALL_HINT) from exc
    return ncu_report


def open_report(path: str | Path) -> tuple[ModuleType, Any]:
    """The ncu_report module and the report loaded by it; a missing or unreadable file is one
    ParseError line."""
    ncu_report = import_ncu_report()
    p = Path(path)
    if not p.is_file():
        raise ParseError(path, "file", "no such report file")
    try:
        return ncu_report, ncu_report.load_report(str(p))
    except Exception as exc:  # noqa: BLE001 - the SWIG layer raises plain Exception for unreadable files
        raise ParseError(path, "file", f"ncu_report could not load it: {one_line(exc)}") from None


def one_line(exc: Exception) -> str:
    """An exception's text on one line, at most 300 characters (errors are one line)."""
    return " ".join(str(exc).split())[:300]


def load_report(path: str | Path) -> list[NcuKernelRow]:
    """One NcuKernelRow per profiled launch, in report order; `id` matches the CSV `ID` column."""
    ncu_report, ctx = open_report(path)
    rows: list[NcuKernelRow] = []
    try:
        for r in range(ctx.num_ranges()):
            rng = ctx.range_by_idx(r)
            for a in range(rng.num_actions()):
                rows.append(_action_row(ncu_report, rng.action_by_idx(a), len(rows), path))
    except (TypeError, ValueError, RuntimeError, SystemError, UnicodeError) as exc:
        # What the SWIG layer raises when a corrupted report hands back NULL names or odd values.
        raise ParseError(path, f"result {len(rows)}", f"corrupted report ({type(exc).__name__}: {exc})") from None
    if not rows:
        raise ParseError(path, "file", "no profiling results in the file (not an ncu report, or empty)")
    return rows


def _action_row(ncu_report: ModuleType, action: Any, index: int, path: str | Path) -> NcuKernelRow:
    where = f"result {index}"
    metrics: dict[str, float | str] = {}
    units: dict[str, str] = {}
    for name in action.metric_names():
        if not isinstance(name, str):
            raise ParseError(path, where, "corrupted report: a metric without a name")
        metric = action.metric_by_name(name)
        if metric is None or not metric.has_value():
            continue
        value = metric.value()
        if isinstance(value, str):
            metrics[name], units[name] = value, metric.unit()
        elif isinstance(value, (int, float)):
            metrics[name], units[name] = to_base_unit(float(value), metric.unit())
    demangled = action.name(ncu_report.IAction.NameBase_DEMANGLED)
    if not isinstance(demangled, str) or not demangled:
        raise ParseError(path, where, "corrupted report: the kernel has no name")
    ident = {
        "ID": str(index),
        "Kernel Name": demangled,
        "Context": _int_text(metrics.get("launch__context_id")),
        "Stream": _int_text(metrics.get("launch__stream_id")),
        "Device": _int_text(metrics.get("launch__device_id")),
    }
    cc = (
        metrics.get("device__attribute_compute_capability_major"),
        metrics.get("device__attribute_compute_capability_minor"),
    )
    if all(isinstance(v, float) for v in cc):
        ident["CC"] = f"{int(cc[0])}.{int(cc[1])}"  # type: ignore[arg-type]
    ranges = _nvtx_ranges(action)
    if ranges:
        # Same text the CSV column carries, so row_from_metrics treats both paths alike.
        ident["thread Domain:Push/Pop_Range"] = " ".join(f'"{d}:{n}:none:none:none:none:none:none"' for d, n in ranges)
    advice = tuple(_advice(index, r) for r in action.rule_results_as_dicts() if isinstance(r, dict))
    row = row_from_metrics(ident, metrics, units, advice, where, path)
    return replace(row, sections=_sections(action))


def _sections(action: Any) -> tuple[NcuSection, ...]:
    """The sections as ncu groups them, each with the metrics it shows (values stay in the row's
    metrics: a metric shown by two sections is stored once)."""
    out = []
    for section in action.sections():
        shown = [m.name() for m in (*section.header_metrics(), *section.body_metrics()) if m is not None]
        out.append(NcuSection(str(section.identifier()), str(section.name()),
                              tuple(dict.fromkeys(n for n in shown if isinstance(n, str)))))
    return tuple(out)


def _int_text(value: float | str | None) -> str:
    return str(int(value)) if isinstance(value, float) else ""


def _nvtx_ranges(action: Any) -> list[tuple[str, str]]:
    state = action.nvtx_state()
    if state is None:
        return []
    out: list[tuple[str, str]] = []
    for domain_id in state.domains():
        domain = state.domain_by_id(domain_id)
        out.extend((domain.name(), name) for name in domain.push_pop_ranges())
    return out


def _advice(kernel_id: int, result: dict[str, Any]) -> NcuAdvice:
    # ncu_report's rule dicts are untyped; a missing "type" maps to "None" / no speedup type.
    msg: Any = result.get("rule_message") or {}
    speedup: Any = result.get("speedup_estimation") or {}
    kind, speedup_type = msg.get("type"), speedup.get("type")
    return NcuAdvice(
        kernel_id=kernel_id,
        section=result.get("section_identifier", ""),
        rule=result.get("rule_identifier", ""),
        kind=_MSG_KIND.get(kind, str(kind)) if isinstance(kind, int) else str(kind),
        message=render_markup(msg.get("message", "")),
        estimated_speedup_pct=speedup.get("speedup"),
        speedup_type=_SPEEDUP_TYPE.get(speedup_type) if isinstance(speedup_type, int) else None,
    )


def render_markup(message: str) -> str:
    """Rule text as the CSV prints it: `@url:Text:https://x@` -> `Text (https://x)`, `@section:Id:Label@` -> `Label`."""

    def one(m: re.Match[str]) -> str:
        kind, body = m.group(1), m.group(2)
        if kind == "url":
            text, _, url = body.partition(":")
            return f"{text} ({url})" if url else text
        return body.rsplit(":", 1)[-1]

    return re.sub(r"@(\w+):([^@]*)@", one, message)


# ---------------------------------------------------------------------------------------------
# The child process: ncu_report can abort the interpreter (a protobuf check failure on a corrupt
# report ends the process with SIGABRT), so gpuprof reads reports in `python -m gpuprof.parsers.ncu_rep`
# and gets the rows back as JSON. tools.ncu.read_report_isolated starts it and maps its exit.

CHILD_OK, CHILD_PARSE_ERROR, CHILD_UNAVAILABLE = 0, 2, 3


def rows_to_json(rows: list[NcuKernelRow]) -> str:
    return json.dumps([asdict(r) for r in rows])


def rows_from_json(text: str) -> list[NcuKernelRow]:
    out = []
    for d in json.loads(text):
        d["advice"] = tuple(NcuAdvice(**a) for a in d["advice"])
        for key in ("block", "grid"):
            d[key] = None if d[key] is None else tuple(d[key])
        d["nvtx_ranges"] = tuple(d["nvtx_ranges"])
        d["impossible"] = tuple(d.get("impossible", ()))
        d["sections"] = tuple(NcuSection(s["identifier"], s["name"], tuple(s["metrics"]))
                              for s in d.get("sections", ()))
        if d.get("roofline_levels") is not None:
            d["roofline_levels"] = RooflineLevels(**d["roofline_levels"])
        out.append(NcuKernelRow(**d))
    return out


def main(argv: list[str]) -> int:
    try:
        rows = load_report(argv[0])
    except NcuReportUnavailable as exc:
        print(exc, file=sys.stderr)
        return CHILD_UNAVAILABLE
    except ParseError as exc:
        print(exc.message, file=sys.stderr)
        return CHILD_PARSE_ERROR
    sys.stdout.write(rows_to_json(rows))
    return CHILD_OK


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
