"""Result rows -> Rich tables with a footer that says how every figure was computed."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from gpuprof.analysis.ceilings import Ceilings
from gpuprof.analysis.derive import Derived
from gpuprof.measure.timing import MODES
from gpuprof.render import units
from gpuprof.results import FAULT, IMPOSSIBLE, OK, SKIPPED, TIMEOUT, WRONG, Timing, size_label
from gpuprof.variants.catalog import Family

_STATUS_STYLE = {OK: "green", WRONG: "bold red", FAULT: "bold red", TIMEOUT: "bold red", SKIPPED: "dim",
                 IMPOSSIBLE: "bold magenta"}


def run_table(family: Family, derived: list[Derived], baseline: str | None, vendor: str | None,
              ceilings: Ceilings | None, mode: str) -> Table:
    rate_head = "TFLOP/s" if derived and derived[0].rate_kind == "flop" else "GB/s"
    table = Table(title=f"{family.name}: {family.summary}", title_justify="left")
    for head, justify in (("variant", "left"), ("size", "right"), ("check", "left"), ("median", "right"),
                          ("spread", "right"), ("samples", "right"), (rate_head, "right"),
                          ("% ceiling", "right"), (f"vs {baseline or '-'}", "right"), (f"vs {vendor or '-'}", "right")):
        table.add_column(head, justify=justify, no_wrap=head in ("variant", "size"))
    for d in derived:
        r = d.row
        summary = r.timing.summary if r.timing else None
        check = Text(r.check.status.upper(), style=_STATUS_STYLE.get(r.check.status, ""))
        if r.check.max_rel_error is not None:
            check.append(f" {r.check.max_rel_error:.1e}")
        table.add_row(
            r.variant + (" (vendor)" if r.vendor else ""),
            size_label(r.size),
            check,
            units.seconds(summary.median_s if summary else None),
            units.percent(summary.rel_spread, 2) if summary else "-",
            _samples_cell(r.timing) if summary and r.timing else "-",
            _rate_number(d),
            units.percent(d.fraction_of_ceiling),
            units.ratio(d.vs_baseline),
            units.ratio(d.vs_vendor),
        )
    table.caption = "\n".join(footer(derived, baseline, vendor, ceilings, mode))
    table.caption_justify = "left"
    return table


def _samples_cell(timing: Timing) -> Text:
    """'64 converged', plus '12/64 throttled' in yellow when NVML saw power/thermal/slowdown caps."""
    cell = Text(f"{timing.summary.n if timing.summary else 0} {timing.stop_reason}")
    if timing.throttled_count:
        cell.append(f" {timing.throttled_count}/{len(timing.throttled)} throttled", style="yellow")
    if timing.discarded_throttled:
        cell.append(f" ({timing.discarded_throttled} discarded)", style="dim")
    return cell


def _rate_number(d: Derived) -> str:
    if d.rate is None:
        return "-"
    return f"{d.rate / 1e12:.2f}" if d.rate_kind == "flop" else f"{d.rate / 1e9:.0f}"


def footer(derived: list[Derived], baseline: str | None, vendor: str | None, ceilings: Ceilings | None,
           mode: str) -> list[str]:
    kind = derived[0].rate_kind if derived else "bytes"
    rate_line = ("TFLOP/s = 2·M·N·K / median time" if kind == "flop"
                 else "GB/s = bytes each element must move (inputs read once, outputs written once) / median time")
    lines = [
        f"timing: {mode} — {MODES.get(mode, mode)}; median of the samples; spread = 1.4826·MAD/median.",
        rate_line + "; size = the size that row ran at (slow variants have a cap).",
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
    if ceilings:
        lines.append(f"% ceiling: of {units.rate(ceilings.bandwidth_bytes_s, 'bytes')} bandwidth or "
                     f"{units.rate(ceilings.fp32_flops, 'flop')} FP32 — {ceilings.source}.")
    for d in derived:
        for reason in d.row.check.reasons:
            lines.append(f"{d.row.variant}: {reason}")
        if d.row.timing and d.row.timing.note:
            lines.append(f"{d.row.variant}: {d.row.timing.note}")
    return lines
