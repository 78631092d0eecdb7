"""Result rows -> Rich tables with a footer that says how every figure was computed."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from gpuprof import families
from gpuprof.analysis.ceilings import Ceilings
from gpuprof.analysis.derive import Derived
from gpuprof.errors import GpuprofError
from gpuprof.measure.timing import MODES
from gpuprof.render import units
from gpuprof.render.fit import Column, fitted_table
from gpuprof.results import FAULT, IMPOSSIBLE, OK, SKIPPED, TIMEOUT, WRONG, Timing, size_label
from gpuprof.variants.catalog import Family

_STATUS_STYLE = {OK: "green", WRONG: "bold red", FAULT: "bold red", TIMEOUT: "bold red", SKIPPED: "dim",
                 IMPOSSIBLE: "bold magenta"}
MEASURED_OVER = ("faster than `devicequery --measure` measured: that figure is one library call at one size "
                 "(cuBLAS 8192³, a D2D copy), not a hardware limit")
_GENERIC_FORMULA = {"flop": "TFLOP/s = the family's FLOP count / median time",
                    "bytes": "GB/s = bytes each element must move (inputs read once, outputs written once) / median time"}


# Higher: left out sooner when the table is wider than the console (render/fit.py). The size goes
# first when every row ran at one size (the title says it), % ceiling last.
_DROP_SAME_SIZE, _DROP_SPREAD, _DROP_VS_BASELINE, _DROP_SAMPLES, _DROP_SIZE, _DROP_MEASURED, _DROP_CEILING = (
    7, 6, 5, 4, 3, 2, 1)


def run_table(family: Family, derived: list[Derived], baseline: str | None, vendor: str | None,
              ceilings: Ceilings | None, mode: str, width: int | None = None) -> Table:
    """The run table; `width` (the console's): optional columns are left out until it fits, the caption
    names them. None: every column (--wide)."""
    rate_head = "TFLOP/s" if derived and derived[0].rate_kind == "flop" else "GB/s"
    flags = _flags(derived)
    with_measured = any(d.fraction_of_measured is not None for d in derived)
    sizes = {size_label(d.row.size) for d in derived}
    title = f"{family.name}: {family.summary}" + (f" — size {next(iter(sizes))}" if len(sizes) == 1 else "")
    columns = [
        Column("variant", justify="left"),
        Column("size", _DROP_SAME_SIZE if len(sizes) == 1 else _DROP_SIZE),
        Column("check", justify="left"),
        Column("median"),
        Column("spread", _DROP_SPREAD),
        Column("samples", _DROP_SAMPLES, dropped_note=_throttle_note(derived)),
        Column(rate_head),
        Column("% ceiling", _DROP_CEILING),
    ]
    if with_measured:
        columns.append(Column("% measured", _DROP_MEASURED))
    columns += [Column(f"vs {baseline or '-'}", _DROP_VS_BASELINE), Column(f"vs {vendor or '-'}")]
    rows: list[list[str | Text]] = []
    for d in derived:
        r = d.row
        summary = r.timing.summary if r.timing else None
        check = Text(r.check.status.upper(), style=_STATUS_STYLE.get(r.check.status, ""))
        if r.check.max_rel_error is not None:
            check.append(f" {r.check.max_rel_error:.1e}")
        cells: list[str | Text] = [
            r.variant + (" (vendor)" if r.vendor else ""),
            size_label(r.size),
            check,
            units.seconds(summary.median_s if summary else None),
            units.percent(summary.rel_spread, 2) if summary else "-",
            _samples_cell(r.timing),
            _rate_number(d),
            _percent_cell(d.fraction_of_ceiling, flags.get(d.over_ceiling)),
        ]
        if with_measured:
            over = d.fraction_of_measured is not None and d.fraction_of_measured > 1.0
            cells.append(_percent_cell(d.fraction_of_measured, flags.get(MEASURED_OVER) if over else None))
        cells += [units.ratio(d.vs_baseline), units.ratio(d.vs_vendor)]
        rows.append(cells)
    caption = "\n".join(footer(derived, baseline, vendor, ceilings, mode, family.name))
    return fitted_table(columns, rows, width, title=title, caption=caption)


def _throttle_note(derived: list[Derived]) -> str:
    """What the samples column would have warned of: the rows NVML saw throttled (power/thermal caps)."""
    throttled = [f"{d.row.variant} {d.row.timing.throttled_count}/{len(d.row.timing.throttled)}"
                 for d in derived if d.row.timing and d.row.timing.throttled_count]
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


def _flags(derived: list[Derived]) -> dict[str | None, str]:
    """One marker (*1, *2, ...) per distinct reason a percentage is above 100 %."""
    reasons = [d.over_ceiling for d in derived if d.over_ceiling]
    reasons += [MEASURED_OVER for d in derived if d.fraction_of_measured and d.fraction_of_measured > 1.0]
    return {reason: f"*{i}" for i, reason in enumerate(dict.fromkeys(reasons), 1)}


def _percent_cell(fraction: float | None, flag: str | None) -> str:
    text = units.percent(fraction)
    return f"{text} {flag}" if flag else text


def _rate_number(d: Derived) -> str:
    if d.rate is None:
        return "-"
    return f"{d.rate / 1e12:.2f}" if d.rate_kind == "flop" else f"{d.rate / 1e9:.0f}"


def formula(family_name: str, rate_kind: str) -> str:
    """The family's own rate formula (families/<name>.py FORMULA), or a generic one for foreign rows."""
    try:
        return str(families.host(family_name).FORMULA)
    except (GpuprofError, AttributeError):
        return _GENERIC_FORMULA[rate_kind]


def footer(derived: list[Derived], baseline: str | None, vendor: str | None, ceilings: Ceilings | None,
           mode: str, family_name: str | None = None) -> list[str]:
    kind = derived[0].rate_kind if derived else "bytes"
    name = family_name or (derived[0].row.family if derived else "")
    lines = [
        f"timing: {mode} — {MODES.get(mode, mode)}; median of the samples; spread = 1.4826·MAD/median.",
        formula(name, kind) + "; size = the size that row ran at (slow variants have a cap).",
        f"speedups = ratio of rates (= time ratio at equal sizes) vs {baseline or 'no baseline'} and vs "
        f"{vendor or 'no vendor'} measured in this same run; rows that are not OK get none.",
        "check: max |out-ref| / max(|ref|, rms(ref)) against a float64 reference, fresh random inputs, "
        "outputs poisoned with NaN, at every check size and the benchmark size.",
    ]
    short = [d.row.variant for d in derived
             if d.row.timing and d.row.timing.summary and d.row.timing.summary.median_s < 20e-6]
    if short and mode in ("cold", "hot"):
        lines.append(f"{', '.join(short)}: under 20 µs, CUDA events add about 1-2 µs of launch latency; "
                     "--timing cupti times the kernels themselves.")
    lines += _ceiling_lines(derived, ceilings)
    for d in derived:
        for reason in d.row.check.reasons:
            lines.append(f"{d.row.variant}: {reason}")
        if d.row.timing and d.row.timing.note:
            lines.append(f"{d.row.variant}: {d.row.timing.note}")
    return lines


def _ceiling_lines(derived: list[Derived], ceilings: Ceilings | None) -> list[str]:
    """Which ceiling each row's % is of (its own precision's), the measured figure apart, and a
    footnote for every flag on a percentage above 100 %."""
    if ceilings is None:
        return ["% ceiling: no ceilings are known for this GPU."]
    lines = []
    groups: dict[tuple[str, float], list[str]] = {}
    for d in derived:
        if d.ceiling is not None:
            groups.setdefault((d.ceiling.name, d.ceiling.value), []).append(d.row.variant)
    for (name, value), variants in groups.items():
        who = "every row" if len(groups) == 1 else ", ".join(variants)
        lines.append(f"% ceiling: of the {name} {units.rate(value, derived[0].rate_kind)} ({who}).")
    if groups:
        lines.append(f"ceilings: {ceilings.source}; each row against the peak of its own precision.")
    measured = {(d.measured.name, d.measured.value, d.measured.source) for d in derived if d.measured}
    for name, value, source in sorted(measured):
        lines.append(f"% measured: of the {name} {units.rate(value, derived[0].rate_kind)} ({source}) — "
                     "what that library reaches here, not the hardware.")
    for reason, flag in _flags(derived).items():
        lines.append(f"{flag} above 100 %: {reason}.")
    return lines
