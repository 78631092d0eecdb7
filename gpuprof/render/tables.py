"""Result rows -> Rich tables with a footer that says how every figure was computed."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from gpuprof import families
from gpuprof.analysis.ceilings import Ceilings
from gpuprof.analysis.tables import Report
from gpuprof.analysis.tables import Table as RunTable
from gpuprof.errors import GpuprofError
from gpuprof.families.described import GENERIC_FORMULA
from gpuprof.measure.timing import MODES
from gpuprof.render import units
from gpuprof.render.fit import Column, fitted_table, print_table
from gpuprof.render.library_warnings_view import TF32_MARK, other_warning_lines, tf32_footnote, tf32_off
from gpuprof.render.vendor_notes import vendor_line
from gpuprof.results import FAULT, IMPOSSIBLE, OK, SKIPPED, TIMEOUT, WRONG, Derived, Row, Timing, size_label

_STATUS_STYLE = {OK: "green", WRONG: "bold red", FAULT: "bold red", TIMEOUT: "bold red", SKIPPED: "dim",
                 IMPOSSIBLE: "bold magenta"}
MEASURED_OVER = ("faster than `devicequery --measure` measured: that figure is one library call at one size "
                 "(cuBLAS 8192³, a D2D copy), not a hardware limit")
# Higher: left out sooner when the table is wider than the console (render/fit.py). The size goes
# first when every row ran at one size (the title says it), % ceiling last.
_DROP_SAME_SIZE, _DROP_SPREAD, _DROP_VS_BASELINE, _DROP_SAMPLES, _DROP_SIZE, _DROP_MEASURED, _DROP_CEILING = (
    7, 6, 5, 4, 3, 2, 1)


def print_run_tables(console: Console, report: Report, wide: bool,
                     outside_warnings: Sequence[Mapping[str, str]] = ()) -> None:
    """Every table of the report, each as wide as the console (wide: every column). With several
    tables (a suite, a results file), the footer lines every table shares (how it was timed and
    checked, the ceilings) are printed once, after the last table, and the failed rows are listed
    last; each table keeps only the lines that are its own. Library warnings other than TF32's (a
    footnote of its rows) are listed once before the failed rows, with those raised outside any
    row's work (outside_warnings)."""
    width = None if wide else console.width
    shared = shared_footer(report) if len(report.tables) > 1 else []
    environment = report.results.environment
    for table in report.tables:
        print_table(console, run_table(table, report.ceilings, width, omit=frozenset(shared),
                                       environment=environment), wide)
    if shared:
        console.print(Text("\n".join(["every table above —", *shared]), style="dim"))
    raised = other_warning_lines([row for table in report.tables for row in table.rows], outside_warnings)
    if raised:
        console.print(Text("\n".join(raised), style="yellow"))
    if shared:
        failed = [row for table in report.tables for row in table.rows if row.failed]
        if failed:
            console.print(Text(f"{len(failed)} row(s) failed:", style="red"))
            for row in failed:
                reason = row.check.reasons[0] if row.check.reasons else ""
                console.print(Text(f"{row.id} {row.check.status.upper()}" + (f": {reason}" if reason else "")))


def shared_footer(report: Report) -> list[str]:
    """The footer lines that every table of the report has, in the first table's order."""
    footers = [footer(table, report.ceilings, report.results.environment) for table in report.tables]
    common = set(footers[0]).intersection(*map(set, footers[1:]))
    return [line for line in footers[0] if line in common]


def run_table(table: RunTable, ceilings: Ceilings | None, width: int | None = None,
              omit: frozenset[str] = frozenset(), environment: Mapping[str, Any] | None = None) -> Table:
    """The run table, from the figures stored on its rows; `width` (the console's): optional columns
    are left out until it fits, the caption names them. None: every column (--wide)."""
    family, baseline, vendor = table.family, table.baseline, table.vendor
    derived = _figures(table)
    rate_head = "TFLOP/s" if table.rate_kind == "flop" else "GB/s"
    flags = _flags(derived)
    with_measured = any(d.pct_of_measured is not None for _, d in derived)
    sizes = {size_label(r.size) for r in table.rows}
    title = f"{family.name}: {family.summary}" + (f" — size {next(iter(sizes))}" if len(sizes) == 1 else "")
    columns = [
        Column("variant", justify="left"),
        Column("size", _DROP_SAME_SIZE if len(sizes) == 1 else _DROP_SIZE),
        Column("check", justify="left"),
        Column("median"),
        Column("spread", _DROP_SPREAD),
        Column("samples", _DROP_SAMPLES, dropped_note=_throttle_note(table.rows)),
        Column(rate_head),
        Column("% ceiling", _DROP_CEILING),
    ]
    if with_measured:
        columns.append(Column("% measured", _DROP_MEASURED))
    columns += [Column(f"vs {baseline or '-'}", _DROP_VS_BASELINE), Column(f"vs {vendor or '-'}")]
    rows: list[list[str | Text]] = []
    for r, d in derived:
        summary = r.timing.summary if r.timing else None
        check = Text(r.check.status.upper(), style=_STATUS_STYLE.get(r.check.status, ""))
        if r.check.max_rel_error is not None:
            check.append(f" {r.check.max_rel_error:.1e}")
        cells: list[str | Text] = [
            r.variant + (" (vendor)" if r.vendor else "") + (f" {TF32_MARK}" if tf32_off(r) else ""),
            size_label(r.size),
            check,
            units.seconds(summary.median_s if summary else None),
            units.percent(summary.rel_spread, 2) if summary else "-",
            _samples_cell(r.timing),
            _rate_number(d),
            _percent_cell(d.pct_of_ceiling, flags.get(d.over_ceiling)),
        ]
        if with_measured:
            over = d.pct_of_measured is not None and d.pct_of_measured > 100.0
            cells.append(_percent_cell(d.pct_of_measured, flags.get(MEASURED_OVER) if over else None))
        cells += [units.ratio(d.vs_baseline), units.ratio(d.vs_vendor)]
        rows.append(cells)
    caption = "\n".join(line for line in footer(table, ceilings, environment) if line not in omit)
    return fitted_table(columns, rows, width, title=title, caption=caption)


def _figures(table: RunTable) -> list[tuple[Row, Derived]]:
    """Each row with its stored figures (a row never judged: none, every figure '-')."""
    blank = Derived(rate_kind=table.rate_kind)
    return [(r, r.derived or blank) for r in table.rows]


def _throttle_note(rows: list[Row]) -> str:
    """What the samples column would have warned of: the rows NVML saw throttled (power/thermal caps)."""
    throttled = [f"{r.variant} {r.timing.throttled_count}/{len(r.timing.throttled)}"
                 for r in rows if r.timing and r.timing.throttled_count]
    return f"throttled samples (NVML clock caps): {', '.join(throttled)}." if throttled else ""


def _samples_cell(timing: Timing | None) -> Text | str:
    """'64 converged', plus '12/64 throttled' in yellow when NVML saw power/thermal/slowdown caps."""
    if timing is None:
        return "-"
    cell = Text(f"{timing.summary.n if timing.summary else 0} {timing.stop_reason}")
    if timing.throttled_count:
        cell.append(f" {timing.throttled_count}/{len(timing.throttled)} throttled", style="yellow")
    if timing.discarded_throttled:
        cell.append(f" ({timing.discarded_throttled} discarded)", style="dim")
    return cell


def _flags(derived: list[tuple[Row, Derived]]) -> dict[str | None, str]:
    """One marker (*1, *2, ...) per distinct reason a percentage is above 100 %."""
    reasons = [d.over_ceiling for _, d in derived if d.over_ceiling]
    reasons += [MEASURED_OVER for _, d in derived if d.pct_of_measured and d.pct_of_measured > 100.0]
    return {reason: f"*{i}" for i, reason in enumerate(dict.fromkeys(reasons), 1)}


def _percent_cell(pct: float | None, flag: str | None) -> str:
    text = "-" if pct is None or not math.isfinite(pct) else f"{pct:.1f} %"  # units.percent, of a stored pct
    return f"{text} {flag}" if flag else text


def _rate_number(d: Derived) -> str:
    if d.rate is None:
        return "-"
    return f"{d.rate / 1e12:.2f}" if d.rate_kind == "flop" else f"{d.rate / 1e9:.0f}"


def formula(family_name: str, rate_kind: str, own: str = "") -> str:
    """The table's own rate formula (`own`: its results file's families block, or the run's family),
    else the registry's family's FORMULA (families/<name>.py), else a generic one for foreign rows."""
    if own:
        return own
    try:
        from gpuprof.families import registry

        return str(families.host(registry.resolve(family_name)).FORMULA)
    except (GpuprofError, AttributeError):
        return GENERIC_FORMULA.get(rate_kind, GENERIC_FORMULA["bytes"])


def footer(table: RunTable, ceilings: Ceilings | None, environment: Mapping[str, Any] | None = None) -> list[str]:
    kind, name, mode, baseline, vendor = table.rate_kind, table.family.name, table.mode, table.baseline, table.vendor
    lines = [
        f"timing: {mode} — {MODES.get(mode, mode)}; median of the samples; spread = 1.4826·MAD/median.",
        formula(name, kind, table.formula) + "; size = the size that row ran at (slow variants have a cap).",
        (f"speedups = ratio of rates (= time ratio at equal sizes) vs {baseline or 'no baseline'} and vs "
         f"{vendor or 'no vendor'} measured in this same run; rows that are not OK get none."),
        ("check: max |out-ref| / max(|ref|, rms(ref)) against a float64 reference, fresh random inputs, "
         "outputs poisoned with NaN, at every check size and the benchmark size; timed on new input values "
         "in the same buffers, then checked again: the last timed output, and one launch on values "
         "refreshed once more."),
    ]
    classes = list(dict.fromkeys(c for r in table.rows for c in r.check.input_classes))
    if classes:
        lines.append(f"input classes: also checked at every size on {', '.join(classes)} inputs, each class "
                     "with its own tolerance model, so a kernel that estimates or skips input fails there "
                     "(docs/own-families.md).")
    short = [r.variant for r in table.rows if r.timing and r.timing.summary and r.timing.summary.median_s < 20e-6]
    if short and mode in ("cold", "hot"):
        lines.append(f"{', '.join(short)}: under 20 µs, CUDA events add about 1-2 µs of launch latency; "
                     "--timing cupti times the kernels themselves.")
    lines += _ceiling_lines(_figures(table), kind, ceilings)
    calls = {v.name: v.call for v in table.family.variants if v.vendor and v.call}
    vendor = vendor_line([(r.variant, calls[r.variant]) for r in table.rows if r.variant in calls], environment or {})
    if vendor:
        lines.append(vendor)
    tf32 = tf32_footnote(table.rows)
    if tf32:
        lines.append(tf32)
    for r in table.rows:
        for note in r.check.notes:
            lines.append(f"{r.variant}: {note}")
        for reason in r.check.reasons:
            lines.append(f"{r.variant}: {reason}")
        if r.timing and r.timing.note:
            lines.append(f"{r.variant}: {r.timing.note}")
    return lines


def _ceiling_lines(derived: list[tuple[Row, Derived]], kind: str, ceilings: Ceilings | None) -> list[str]:
    """Which ceiling each row's % is of (its own precision's), the measured figure apart, and a
    footnote for every flag on a percentage above 100 %."""
    if ceilings is None:
        return ["% ceiling: no ceilings are known for this GPU."]
    lines = []
    groups: dict[tuple[str, float | None], list[str]] = {}
    for r, d in derived:
        if d.ceiling_name is not None:
            groups.setdefault((d.ceiling_name, d.ceiling_value), []).append(r.variant)
    for (name, value), variants in groups.items():
        who = "every row" if len(groups) == 1 else ", ".join(variants)
        lines.append(f"% ceiling: of the {name} {units.rate(value, kind)} ({who}).")
    if groups:
        lines.append(f"ceilings: {ceilings.source}; each row against the peak of its own precision.")
    measured = {(d.measured_name, d.measured_value, d.measured_source or "")
                for _, d in derived if d.measured_name and d.measured_value}
    for name, value, source in sorted(measured):
        lines.append(f"% measured: of the {name} {units.rate(value, kind)} ({source}) — "
                     "what that library reaches here, not the hardware.")
    for reason, flag in _flags(derived).items():
        lines.append(f"{flag} above 100 %: {reason}.")
    return lines
