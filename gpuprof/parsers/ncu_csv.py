"""ncu `--csv` output (raw and details pages) -> NcuKernelRow / NcuAdvice records."""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuprof.errors import CountersNotPermitted, NoKernelsProfiled, ParseError, ToolFailed
from gpuprof.parsers.ncu_metrics import (  # noqa: F401 - re-exported: the records and helpers callers know from here
    LABELS,
    NcuAdvice,
    NcuKernelRow,
    _int,
    _number,
    _value,
    kernel_base_name,
    row_from_metrics,
    to_base_unit,
)

# ---------------------------------------------------------------------------------------------
# Records


@dataclass(frozen=True)
class NcuCsvLayout:
    """What `detect_ncu_csv_layout` recognised in a header row."""

    page: str  # "raw" or "details"
    has_rules: bool = False  # details: the five Rule/Estimated Speedup columns (ncu >= 2023.2)
    has_nvtx: bool = False  # --nvtx: push/pop and start/end range columns


@dataclass(frozen=True)
class NcuMessages:
    """The `==ERROR==` / `==WARNING==` lines ncu printed around (or instead of) the CSV."""

    errors: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    no_kernels_profiled: bool = False
    available_kernels: tuple[str, ...] = ()
    counters_not_permitted: bool = False


KNOWN_LAYOUTS = (
    "raw page (--page raw: ID + identity columns, one column per metric, units row)",
    "details page with 15 columns (--metrics only, no rules)",
    "details page with 20 columns (Rule Name/Type/Description, Estimated Speedup Type/Value)",
    "either details layout plus the two NVTX columns of --nvtx",
)

# ---------------------------------------------------------------------------------------------
# Public functions


def parse_raw_csv(text: str, path: str | Path | None = None) -> list[NcuKernelRow]:
    """Parse `ncu --csv --page raw` output (console or --log-file) into one row per launch."""
    header, body, layout = _read_table(text, path)
    if layout.page != "raw":
        raise ParseError(path, "header", "this is a details-page CSV; use parse_details_csv")
    units: list[str] = [""] * len(header)
    rows: list[NcuKernelRow] = []
    for lineno, cells in body:
        _check_width(cells, len(header), lineno, path, allowed=(len(header),))
        if cells[0] == "" and not rows and all(c == "" for c in cells[:2]):
            units = cells  # the units row: "" under identity columns, "ns", "byte", "%" ... under metrics
            continue
        if cells == header:
            continue  # a second copy of the table (appended log file)
        ident: dict[str, str] = {}
        metrics: dict[str, float | str] = {}
        metric_units: dict[str, str] = {}
        for col, unit, cell in zip(header, units, cells):
            if _is_identity_column(col):
                ident[col] = cell
            elif cell != "":
                metrics[col], metric_units[col] = _value(cell, unit)
        rows.append(row_from_metrics(ident, metrics, metric_units, (), f"line {lineno}", path))
    return rows


def parse_details_csv(text: str, path: str | Path | None = None) -> list[NcuKernelRow]:
    """Parse `ncu --csv --page details` output (long form) into one row per launch, rules attached."""
    groups = _details_groups(text, path)
    return [
        row_from_metrics(ident, metrics, units, tuple(advice), f"line {lineno}", path)
        for lineno, ident, metrics, units, advice in groups
    ]


def parse_rule_advice(text: str, path: str | Path | None = None) -> list[NcuAdvice]:
    """All rule results (OPT/INF/WRN/ERR rows) of a details-page CSV, in file order."""
    return [a for *_, advice in _details_groups(text, path) for a in advice]


def parse_csv(text: str, path: str | Path | None = None) -> list[NcuKernelRow]:
    """Parse either page, dispatching on the header."""
    _, _, layout = _read_table(text, path)
    return parse_raw_csv(text, path) if layout.page == "raw" else parse_details_csv(text, path)


def load_csv(path: str | Path) -> list[NcuKernelRow]:
    """Read a saved ncu CSV file (raw or details page) and parse it."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise ParseError(path, "file", f"cannot read: {exc.strerror or exc}") from None
    return parse_csv(text, path)


def detect_ncu_csv_layout(header: list[str], path: str | Path | None = None) -> NcuCsvLayout:
    """Recognise the page from the header row; raise ParseError naming the known layouts otherwise."""
    cols = set(header)
    has_nvtx = any(_is_nvtx_column(c) for c in header)
    if header and header[0] == "ID" and "Kernel Name" in cols:
        if {"Section Name", "Metric Name", "Metric Unit", "Metric Value"} <= cols:
            has_rules = {"Rule Name", "Rule Type", "Rule Description"} <= cols
            return NcuCsvLayout("details", has_rules=has_rules, has_nvtx=has_nvtx)
        if "Metric Name" not in cols:
            return NcuCsvLayout("raw", has_nvtx=has_nvtx)
    if {"Invocations", "Minimum", "Maximum", "Average"} <= cols:
        why = "a --print-summary CSV (per-gpu is malformed in ncu 2025.3.1); aggregate raw-page rows instead"
    elif header[:1] == ["Kernel Name"] or "Address" in cols and "Source" in cols:
        why = "a --page source CSV (SASS/PTX listing), not per-kernel metrics"
    elif header[:1] in (["Launch Attribute"], ["Session Attribute"]) or "Value" in cols and len(header) == 2:
        why = "a --page session CSV"
    else:
        why = f"unrecognised header starting {header[:4]!r}"
    raise ParseError(path, "header", f"{why}; known layouts: " + "; ".join(KNOWN_LAYOUTS))


def scan_messages(text: str) -> NcuMessages:
    """Collect ncu's `==ERROR==` / `==WARNING==` lines and the "Available Kernels" list."""
    errors: list[str] = []
    warnings: list[str] = []
    kernels: list[str] = []
    in_kernel_list = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("==ERROR=="):
            errors.append(stripped[len("==ERROR==") :].strip())
        elif stripped.startswith("==WARNING=="):
            warnings.append(stripped[len("==WARNING==") :].strip())
        if stripped == "Available Kernels:":
            in_kernel_list = True
            continue
        if in_kernel_list:
            m = re.fullmatch(r"\d+\.\s+(.+)", stripped)
            if m:
                kernels.append(m.group(1))
                continue
            in_kernel_list = False
    return NcuMessages(
        errors=tuple(errors),
        warnings=tuple(warnings),
        no_kernels_profiled=any(w.startswith("No kernels were profiled") for w in warnings),
        available_kernels=tuple(kernels),
        counters_not_permitted="ERR_NVGPUCTRPERM" in text,
    )


def to_frame(rows: Iterable[NcuKernelRow]) -> Any:
    """Long-form pandas DataFrame: kernel_id, kernel_name, metric, value, unit (one line per raw metric)."""
    import pandas as pd  # local: keep `import gpuprof.parsers.ncu_csv` light

    records = [
        {"kernel_id": r.id, "kernel_name": r.kernel_name, "metric": k, "value": v, "unit": r.units.get(k, "")}
        for r in rows
        for k, v in r.metrics.items()
    ]
    return pd.DataFrame.from_records(records, columns=["kernel_id", "kernel_name", "metric", "value", "unit"])


# ---------------------------------------------------------------------------------------------
# Reading the table


_IDENTITY = {
    "ID",
    "Process ID",
    "Process Name",
    "Host Name",
    "Kernel Name",
    "Context",
    "Stream",
    "Block Size",
    "Grid Size",
    "Device",
    "CC",
}


def _is_nvtx_column(col: str) -> bool:
    return "Push/Pop_Range" in col or "Start/Stop_Range" in col


def _is_identity_column(col: str) -> bool:
    return col in _IDENTITY or _is_nvtx_column(col)


def _read_table(text: str, path: str | Path | None) -> tuple[list[str], list[tuple[int, list[str]]], NcuCsvLayout]:
    """Header, (line number, cells) of the body, and the layout; raises ToolFailed (or a subclass)/ParseError."""
    if not isinstance(text, str):
        raise ParseError(path, "input", f"expected text, got {type(text).__name__}")
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    # Every ncu CSV line starts with a double quote; ==PROF== lines and the app's stdout do not.
    numbered = [(i + 1, ln) for i, ln in enumerate(lines) if ln.startswith('"')]
    messages = scan_messages(text)
    if messages.counters_not_permitted:
        line = next((e for e in messages.errors if "ERR_NVGPUCTRPERM" in e), "ERR_NVGPUCTRPERM")
        raise CountersNotPermitted(line)
    table = _split_csv(numbered, path)
    if len(table) < 2:
        if messages.no_kernels_profiled:
            note = " ".join(w for w in messages.warnings if "No kernels" not in w and not w.startswith("Note:"))
            raise NoKernelsProfiled(("ncu profiled no kernels: the filter matched nothing. " + note).strip(),
                                    messages.available_kernels)
        if messages.errors:
            raise ToolFailed("tool_error", "ncu failed: " + " ".join(messages.errors))
        if not table:
            hint = (
                "ncu's human-readable output; re-run with --csv"
                if re.search(r"^\s+Section: ", text, re.MULTILINE)
                else ("no line starts with '\"'")
            )
            raise ParseError(path, "input", f"no ncu CSV found ({hint}); known layouts: " + "; ".join(KNOWN_LAYOUTS))
    header = table[0][1]
    layout = detect_ncu_csv_layout(header, path)
    if len(set(header)) != len(header):
        raise ParseError(path, f"line {table[0][0]}", "duplicate column names in header")
    return header, table[1:], layout


def _split_csv(numbered: list[tuple[int, str]], path: str | Path | None) -> list[tuple[int, list[str]]]:
    if not numbered:
        return []
    reader = csv.reader((ln for _, ln in numbered), strict=True)
    out: list[tuple[int, list[str]]] = []
    try:
        consumed = 0
        for cells in reader:
            out.append((numbered[consumed][0], cells))
            consumed = reader.line_num
    except csv.Error as exc:
        lineno = numbered[min(reader.line_num, len(numbered)) - 1][0]
        raise ParseError(path, f"line {lineno}", f"malformed CSV ({exc}); truncated output?") from None
    return out


def _check_width(cells: list[str], width: int, lineno: int, path: str | Path | None, allowed: tuple[int, ...]) -> None:
    if len(cells) not in allowed:
        raise ParseError(path, f"line {lineno}", f"expected {width} fields, got {len(cells)} (truncated row?)")


def _details_groups(text: str, path: str | Path | None) -> list[tuple[int, dict, dict, dict, list[NcuAdvice]]]:
    header, body, layout = _read_table(text, path)
    if layout.page != "details":
        raise ParseError(path, "header", "this is a raw-page CSV; use parse_raw_csv")
    width = len(header)
    col = {name: i for i, name in enumerate(header)}
    value_end = col["Metric Value"] + 1
    groups: list[tuple[int, dict, dict, dict, list[NcuAdvice]]] = []
    key = None
    for lineno, cells in body:
        if cells == header:
            continue
        # Metric rows stop after "Metric Value" and add a trailing comma: 15(+1) fields of 20 (1.7).
        _check_width(cells, width, lineno, path, allowed=(width, value_end, value_end + 1))
        if len(cells) == value_end + 1 and cells[-1] != "" and width != value_end + 1:
            raise ParseError(path, f"line {lineno}", f"unexpected extra field {cells[-1]!r}")
        get = dict(zip(header, cells))
        row_key = (get["ID"], get.get("Process ID"), get["Kernel Name"])
        if row_key != key:
            key = row_key
            ident = {c: get[c] for c in header if _is_identity_column(c) and c in get}
            groups.append((lineno, ident, {}, {}, []))
        _, ident, metrics, units, advice = groups[-1]
        if layout.has_rules and get.get("Rule Name", ""):
            advice.append(_advice(get, lineno, path))
            continue
        label = get["Metric Name"]
        if label == "":
            continue
        name = _metric_key(get.get("Section Name", ""), label, get.get("Metric Unit", ""), metrics)
        value = get["Metric Value"]
        if value != "":
            metrics[name], units[name] = _value(value, get.get("Metric Unit", ""))
    return groups


def _advice(get: dict[str, str], lineno: int, path: str | Path | None) -> NcuAdvice:
    speedup = get.get("Estimated Speedup", "")
    number = _number(speedup) if speedup else None
    if speedup and number is None:
        raise ParseError(path, f"line {lineno}, column 'Estimated Speedup'", f"expected a number, got {speedup!r}")
    return NcuAdvice(
        kernel_id=_int(get["ID"], f"line {lineno}, column 'ID'", path),
        section=get.get("Section Name", ""),
        rule=get.get("Rule Name", ""),
        kind=get.get("Rule Type", ""),
        message=get.get("Rule Description", ""),
        estimated_speedup_pct=number,
        speedup_type=get.get("Estimated Speedup Type") or None,
    )


# ---------------------------------------------------------------------------------------------
# Metric names and values

_METRIC_NAME = re.compile(r"[A-Za-z0-9_]+(__|\.)[A-Za-z0-9_.]+")
_LABEL_NAME = re.compile(r"(.*) \(([A-Za-z0-9_]+__[A-Za-z0-9_.]+)\)")


def _metric_key(section: str, label: str, unit: str, seen: Mapping[str, Any]) -> str:
    """The metric name for a details row printed as a name, "label (name)" or a label."""
    if _METRIC_NAME.fullmatch(label):
        return label  # --print-metric-name name
    m = _LABEL_NAME.fullmatch(label)
    if m:
        return m.group(2)  # --print-metric-name label-name
    if label == "Memory Throughput" and "/s" in unit:
        return "dram__bytes.sum.per_second"
    if label in LABELS:
        return LABELS[label]
    return label if label not in seen else f"{section}: {label}"
