"""The report page: one self-contained HTML file (inline CSS, inline SVG charts; no script, no
font or file fetched), and the same charts as PNG files for a README or slides.

matplotlib draws the charts (already a dependency of `ncu --plot`; Altair/Vega-Lite would need its
JavaScript runtime fetched or inlined, ~1 MB, to show anything): SVG keeps text as text, so a
page of 17 tables stays small and searchable.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import Any

from gpuprof.analysis.compare import gate as gate_failures
from gpuprof.analysis.speedup_summary import Speedups
from gpuprof.analysis.tables import Table
from gpuprof.commands.report import StoryReport
from gpuprof.files import HTML_MARK
from gpuprof.render import charts, units
from gpuprof.render.library_warnings_view import TF32_MARK, tf32_off
from gpuprof.render.svg_ladder import ladder_svg
from gpuprof.render.tables import footer
from gpuprof.results import OK, Row, size_label
from gpuprof.row_parts import CLEAN, FINDINGS, NcuPart, SanitizerPart

_STATUS_CLASS = {"ok": "ok", "wrong": "bad", "fault": "bad", "timeout": "bad", "impossible": "bad",
                 "skipped": "dim"}
_VERDICT_CLASS = {"SAME": "dim", "FASTER": "ok", "SLOWER": "bad", "INCONCLUSIVE": "warn"}
# ncu summary keys shown first, where a row's "ncu" has them (the rest follow, scalars only).
NCU_FIRST = ("limiter", "bound", "verdict", "why", "top_stall", "stall", "duration_ns", "sol_compute_pct",
             "sol_memory_pct", "achieved_occupancy_pct", "registers", "spills", "dram_bytes", "flop")
NCU_SHOWN = 6

CSS = """

body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0;color:#1d1d1f;background:#f6f7f9}
main{max-width:1280px;margin:0 auto;padding:18px 28px 60px}h1{font-size:22px;margin:6px 0 2px}
h2{font-size:19px;margin:34px 0 6px;border-bottom:2px solid #d0d7de;padding-bottom:4px}
h3{font-size:15px;margin:18px 0 6px}.meta{color:#57606a;font-size:12.5px}
.cards{display:flex;flex-wrap:wrap;gap:12px;margin:14px 0}
.card{background:#fff;border:1px solid #d0d7de;border-radius:8px;padding:10px 14px;min-width:160px}
.card b{display:block;font-size:20px}.card span{color:#57606a;font-size:12px}
section.family{background:#fff;border:1px solid #d0d7de;border-radius:10px;padding:4px 20px 16px;margin:22px 0}
.chart svg{max-width:100%;height:auto}.ladder svg{width:100%;max-width:1150px}
.roofline svg,.sweep svg{width:72%;min-width:640px}
.charts{display:flex;flex-wrap:wrap;gap:8px;align-items:flex-start}
table{border-collapse:collapse;font-size:12.5px;margin:6px 0 10px;width:100%}
th,td{padding:3px 8px;border-bottom:1px solid #e4e7eb;text-align:right;vertical-align:top;white-space:nowrap}
th{background:#f0f2f5;font-weight:600}td.l,th.l{text-align:left}
td.wrap{white-space:normal;text-align:left;max-width:340px}.ok{color:#1a7f37;font-weight:600}
.bad{color:#c62828;font-weight:700}.warn{color:#9a6700;font-weight:600}.dim{color:#6e7781}
.gm{font-size:13px;margin:2px 0 8px}
.pill{display:inline-block;padding:0 7px;border-radius:9px;background:#eef1f4;margin-right:6px}
details{margin:8px 0}summary{cursor:pointer;color:#57606a}
ul.notes{font-size:12px;color:#57606a;margin:4px 0;padding-left:18px}
.failures{background:#fff5f5;border:1px solid #f3c4c4;border-radius:8px;padding:8px 14px}
"""

# Footnotes of marked rows (a % above 100, the TF32 warning): under their own table, not in the shared notes.
_ROW_MARKS = ("*", TF32_MARK)


def page(story: StoryReport) -> str:
    """The whole page as one string."""
    results = story.report.results
    env = results.environment
    parts = [f"<!DOCTYPE html>\n<!-- gpuprof report -->\n<html lang=\"en\"><head><meta charset=\"utf-8\">{HTML_MARK}",
             f"<title>gpuprof report: {_e(story.path.name)}</title><style>{CSS}</style></head><body><main>",
             f"<h1>gpuprof report — {_e(story.path.name)}</h1>",
             (f"<div class=\"meta\">{_e(results.command or '')}<br>"
             f"{_e(env.get('gpu_name', 'unknown GPU'))} · driver "
             f"{_e(env.get('driver_version', '?'))} · CUDA runtime {_e(env.get('cuda_runtime', '?'))} · gpuprof "
             f"{_e(env.get('gpuprof_version', '?'))} · {_e(results.created_utc or 'undated')} · "
             f"{len(results.rows)} rows</div>")]
    parts.append(_summary_cards(story))
    if not charts.available():
        parts.append(f"<p class=\"meta nocharts\">{_e(charts.NO_MATPLOTLIB)}.</p>")
    parts.append(_failures(story))
    if story.gate is not None:
        parts.append(_gate_section(story))
    for family, tables in story.families().items():
        parts.append(_family_section(story, family, tables))
    parts.append(_how_measured(story))
    parts.append("</main></body></html>\n")
    return "".join(parts)


def _summary_cards(story: StoryReport) -> str:
    run = story.run
    failed = story.report.failed
    cards = [
        (_times(run.vs_baseline), f"geomean speedup over each table's baseline ({run.vs_baseline_n} rungs)"),
        (_times(run.vs_vendor), f"geomean vs the vendor library ({run.vs_vendor_n} rungs)"),
        (str(len(story.report.tables)), "tables (family × size × mode)"),
        (str(len(failed)), "rows failed" if failed else "rows failed: every row checked OK or skipped"),
    ]
    if story.gate is not None:
        failing = gate_failures(story.gate)
        cards.append(("FAIL" if failing else "PASS", f"compare gate vs {story.base.name if story.base else 'BASE'}"))
    body = "".join(f"<div class=\"card\"><b class=\"{_card_class(value)}\">{_e(value)}</b><span>{_e(words)}"
                   "</span></div>" for value, words in cards)
    return f"<div class=\"cards\">{body}</div>"


def _card_class(value: str) -> str:
    return {"FAIL": "bad", "PASS": "ok"}.get(value, "")


def _failures(story: StoryReport) -> str:
    failed = story.report.failed
    if not failed:
        return ""
    items = "".join(f"<li><b>{_e(r.id)}</b> <span class=\"bad\">{_e(r.check.status.upper())}</span> "
                    f"{_e('; '.join(r.check.reasons))}</li>" for r in failed)
    return f"<div class=\"failures\"><b>Failures</b><ul>{items}</ul></div>"


def _gate_section(story: StoryReport) -> str:
    gate = story.gate
    assert gate is not None
    counts = ", ".join(f"{n} {status.value}" for status, n in gate.counts().items() if n)
    failing = gate_failures(gate)
    lines = [f"<h2>Compare gate: {_e(story.path.name)} against {_e(story.base.name if story.base else 'BASE')}</h2>",
             (f"<p class=\"gm\">preset <b>{_e(getattr(gate.policy, 'name', ''))}</b> · {_e(counts)}"
             f" · {'<span class=bad>FAIL</span>' if failing else '<span class=ok>PASS</span>'}</p>")]
    if failing:
        lines.append("<ul class=\"notes\">" + "".join(f"<li>{_e(line)}</li>" for line in failing) + "</ul>")
    if gate.warnings:
        lines.append("<ul class=\"notes\">" + "".join(f"<li>{_e(w)}</li>" for w in gate.warnings) + "</ul>")
    rows = []
    for v in gate.verdicts:
        trend = _trend_bar(v.ratio, v.ci_low, v.ci_high, v.status.value)
        rows.append([(v.row_id, "l"), (_e_status(v.status.value, _VERDICT_CLASS), "l", True),
                     (units.seconds(v.base_median_s), ""), (units.seconds(v.new_median_s), ""),
                     (_change(v.ratio), ""), (_interval(v.ci_low, v.ci_high), ""), (trend, "l", True),
                     (v.detail, "wrap")])
    lines.append(_table(["row", "verdict", "BASE median", "NEW median", "change", "95 % interval", "trend", "why"],
                        rows))
    extra = [f"added: {', '.join(gate.added_only)}" if gate.added_only else "",
             f"removed: {', '.join(gate.removed_only)}" if gate.removed_only else ""]
    lines += [f"<p class=\"meta\">{_e(line)}</p>" for line in extra if line]
    return "".join(lines)


def _trend_bar(ratio: float | None, low: float | None, high: float | None, status: str) -> str:
    """NEW/BASE time as a small inline bar: left of the mark is faster, right slower (±20 % span)."""
    if ratio is None or not math.isfinite(ratio):
        return ""
    span = 0.2

    def x(value: float) -> float:
        return 60 + max(-1.0, min(1.0, (value - 1.0) / span)) * 55

    colour = {"FASTER": "#1a7f37", "SLOWER": "#c62828", "INCONCLUSIVE": "#9a6700"}.get(status, "#6e7781")
    interval = ""
    if low is not None and high is not None and math.isfinite(low) and math.isfinite(high):
        interval = (f"<line x1=\"{x(low):.1f}\" x2=\"{x(high):.1f}\" y1=\"7\" y2=\"7\" stroke=\"#888\" "
                    "stroke-width=\"3\"/>")
    return (f"<svg width=\"120\" height=\"14\" role=\"img\"><line x1=\"60\" x2=\"60\" y1=\"0\" y2=\"14\" "
            f"stroke=\"#bbb\"/>{interval}<circle cx=\"{x(ratio):.1f}\" cy=\"7\" r=\"3.5\" fill=\"{colour}\"/></svg>")


def _family_section(story: StoryReport, family: str, tables: list[Table]) -> str:
    index_of = {id(t): i for i, t in enumerate(story.report.tables)}
    summary = tables[0].family.summary
    parts = [(f"<section class=\"family\" id=\"family-{_e(charts.slug(family))}\"><h2>{_e(family)}"
             f"<span class=\"meta\"> — {_e(summary)}</span></h2>")]
    drawn = charts.available()
    all_rows: list[Row] = []
    for table in tables:
        speedups = story.speedups[index_of[id(table)]]
        sizes = ", ".join(charts.largest_first({size_label(r.size) for r in table.rows}))
        parts.append(f"<h3>{_e(family)} at {_e(sizes)} ({_e(table.mode)} timing)</h3>")
        parts.append(_geomean_line(speedups, table))
        ladder = charts.svg_text(charts.ladder_figure(table)) if drawn else ladder_svg(table)
        parts.append(f"<div class=\"chart ladder\">{ladder}</div>")
        parts.append(_rows_table(story, table))
        all_rows += table.rows
    if drawn:
        parts += _family_charts(story, family, all_rows)
    parts.append("</section>")
    return "".join(parts)


def _family_charts(story: StoryReport, family: str, all_rows: list[Row]) -> list[str]:
    """The family's roofline and its sweeps, as inline SVG (matplotlib draws them)."""
    title = f"{family} roofline: every timed row at its intensity, under the roofs of the file's GPU"
    figure = charts.roofline_figure(all_rows, story.report.ceilings, title)
    parts = [f"<div class=\"chart roofline\">{charts.svg_text(figure)}</div>"]
    for (fam, variant, size), members in charts.sweep_groups(all_rows).items():
        references = [r for r in all_rows if r.size == members[0].size and r not in members and r.vendor]
        figure = charts.sweep_figure(members, references, f"{fam} sweep of {variant} at {size}: rate per configuration")
        parts.append(f"<div class=\"chart sweep\">{charts.svg_text(figure)}</div>")
    return parts


def _geomean_line(speedups: Speedups, table: Table) -> str:
    best = speedups.best
    pills = [f"geomean {_times(speedups.vs_baseline)} vs {_e(table.baseline)} ({speedups.vs_baseline_n} rungs)"
             if table.baseline else "no baseline rung in this table",
             f"geomean {_times(speedups.vs_vendor)} vs {_e(table.vendor)} ({speedups.vs_vendor_n} rungs)"
             if table.vendor else "no vendor row in this table"]
    if best is not None and best.derived is not None:
        pills.append(f"best rung {_e(best.variant)}: {_times(best.derived.vs_baseline)} vs "
                     f"{_e(table.baseline or '-')}, {_times(best.derived.vs_vendor)} vs {_e(table.vendor or '-')}")
    return "<p class=\"gm\">" + "".join(f"<span class=\"pill\">{p}</span>" for p in pills) + "</p>"


def _rows_table(story: StoryReport, table: Table) -> str:
    unit, scale = charts.rate_unit(table.rate_kind)
    with_gate = story.gate is not None
    with_ncu = any(r.ncu for r in table.rows)
    with_sanitizer = any(r.sanitizer is not None for r in table.rows)
    head = ["variant", "check", "median", "spread", "p25–p75", "samples", unit, "% ceiling",
            f"vs {table.baseline or '-'}", f"vs {table.vendor or '-'}"]
    head += ["vs BASE"] if with_gate else []
    head += ["ncu: why"] if with_ncu else []
    head += ["sanitizer"] if with_sanitizer else []
    body = []
    for r in table.rows:
        summary = r.timing.summary if r.timing else None
        d = r.derived
        check = _e_status(r.check.status.upper(), {k.upper(): v for k, v in _STATUS_CLASS.items()})
        if r.check.max_rel_error is not None:
            check += f" <span class=\"dim\">{r.check.max_rel_error:.1e}</span>"
        cells: list[tuple[str, str] | tuple[str, str, bool]] = [
            (r.variant + (" (vendor)" if r.vendor else "") + (f" {TF32_MARK}" if tf32_off(r) else ""), "l"),
            (check, "l", True),
            (units.seconds(summary.median_s) if summary else "-", ""),
            (units.percent(summary.rel_spread, 2) if summary else "-", ""),
            (f"{units.seconds(summary.p25_s)} – {units.seconds(summary.p75_s)}" if summary else "-", ""),
            (f"{summary.n} {r.timing.stop_reason}" if summary and r.timing else "-", ""),
            (f"{d.rate / scale:.3g}" if d and d.rate else "-", ""),
            (f"{d.pct_of_ceiling:.1f} %" if d and d.pct_of_ceiling is not None else "-", ""),
            (units.ratio(d.vs_baseline) if d else "-", ""),
            (units.ratio(d.vs_vendor) if d else "-", ""),
        ]
        if with_gate:
            verdict = story.verdicts.get(r.id)
            text = (_e_status(verdict.status.value, _VERDICT_CLASS) + f" {_e(_change(verdict.ratio))}"
                    if verdict else "<span class=\"dim\">new row</span>")
            cells.append((text, "l", True))
        if with_ncu:
            cells.append((_e(ncu_why(r.ncu)), "wrap"))
        if with_sanitizer:
            cells.append((sanitizer_verdict(r.sanitizer), "wrap", True))
        body.append(cells)
    notes = [line for line in footer(table, story.report.ceilings, story.report.results.environment)
             if any(line.startswith(f"{r.variant}:") for r in table.rows) or line.startswith(_ROW_MARKS)]
    note_html = "<ul class=\"notes\">" + "".join(f"<li>{_e(n)}</li>" for n in notes) + "</ul>" if notes else ""
    return _table(head, body) + note_html


def ncu_why(ncu: NcuPart | None) -> str:
    """A row's ncu summary in one line: the binding roof and top stall first, then a few figures."""
    if ncu is None:
        return ""
    if ncu.error:
        return f"not profiled: {ncu.error}"
    stall = f"{ncu.top_stall} {ncu.top_stall_pct:.0f} %" if ncu.top_stall and ncu.top_stall_pct is not None \
        else ncu.top_stall
    figures = [("limiter", ncu.limiter), ("top stall", stall),
               ("time", units.seconds(ncu.duration_ns * 1e-9) if ncu.duration_ns is not None else None),
               ("occupancy", f"{ncu.achieved_occupancy_pct:.0f} %" if ncu.achieved_occupancy_pct is not None
                else None),
               ("registers", ncu.registers), ("DRAM", units.nbytes(ncu.dram_bytes) if ncu.dram_bytes else None),
               ("flop", _value(ncu.flop) if ncu.flop is not None else None)]
    return "; ".join([f"{name}: {value}" for name, value in figures if value is not None][:NCU_SHOWN])


def sanitizer_verdict(sanitizer: SanitizerPart | None) -> str:
    """Clean, or the findings (their count and the first one), or why not judged; HTML."""
    if sanitizer is None:
        return ""
    skipped = [tool for tool, said in sanitizer.tools.items() if said.startswith("skipped")]
    where = f" <span class=\"dim\">({_e(', '.join(skipped))} skipped)</span>" if skipped else ""
    if sanitizer.verdict == CLEAN:
        return f"<span class=\"ok\">clean</span>{where}"
    if sanitizer.verdict == FINDINGS:
        count = sanitizer.findings
        first = f": {_e(sanitizer.first[:160])}" if sanitizer.first else ""
        return f"<span class=\"bad\">{count} finding{'s' if count != 1 else ''}</span>{where}{first}"
    why = "; ".join(f"{tool}: {said.removeprefix('not judged: ')}" for tool, said in sanitizer.tools.items()
                    if said.startswith("not judged"))
    return "<span class=\"warn\">not judged</span>" + (f": {_e(why)}" if why else "")


def _how_measured(story: StoryReport) -> str:
    lines: dict[str, None] = {}
    for table in story.report.tables:
        for line in footer(table, story.report.ceilings, story.report.results.environment):
            if not any(line.startswith(f"{r.variant}:") for r in table.rows) and not line.startswith(_ROW_MARKS):
                lines.setdefault(line, None)
    items = "".join(f"<li>{_e(line)}</li>" for line in lines)
    geomean = ("geomean: the geometric mean of the speedups of every rung (rows that passed, not the vendor's; "
               "the baseline itself left out), per table and over the whole run.")
    return f"<h2>How the figures are computed</h2><ul class=\"notes\">{items}<li>{_e(geomean)}</li></ul>"


def _table(head: list[str], rows: Iterable[list[Any]]) -> str:
    out = ["<table><thead><tr>"]
    out += [f"<th class=\"{'l' if i < 2 else ''}\">{_e(h)}</th>" for i, h in enumerate(head)]
    out.append("</tr></thead><tbody>")
    for cells in rows:
        out.append("<tr>")
        for cell in cells:
            text, css = cell[0], cell[1]
            raw = len(cell) > 2 and cell[2]
            out.append(f"<td class=\"{css}\">{text if raw else _e(str(text))}</td>")
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _e_status(text: str, classes: dict[str, str]) -> str:
    return f"<span class=\"{classes.get(text, '')}\">{_e(text)}</span>"


def _times(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}×"


def _change(ratio: float | None) -> str:
    if ratio is None or not math.isfinite(ratio):
        return "-"
    return f"{100 * (ratio - 1):+.1f} %"


def _interval(low: float | None, high: float | None) -> str:
    if low is None or high is None:
        return "-"
    return f"{100 * (low - 1):+.1f} … {100 * (high - 1):+.1f} %"


def _value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def png_plan(story: StoryReport) -> list[tuple[str, Callable[[], Any]]]:
    """The PNGs `report --png` writes, as (file name, the figure's maker), before any is drawn: one per
    table's ladder, one roofline per family, one per sweep: `<family>_<size>_ladder.png`,
    `<family>_roofline.png`, `<family>_<variant>_sweep.png`. A family whose name collides with another's
    once made file-safe ("a b" and "a_b"; or by case alone) gets a short hash of its own name, so no two
    families share a chart."""
    families = story.families()
    slugs = unique_slugs(list(families))
    plan: list[tuple[str, Callable[[], Any]]] = []
    for family, tables in families.items():
        stem = slugs[family]
        all_rows: list[Row] = []
        for table in tables:
            sizes = "_".join(sorted({size_label(r.size) for r in table.rows}))
            name = f"{stem}_{charts.slug(sizes)}" + (f"_{table.mode}" if len(tables) > 1 and any(
                t.mode != table.mode for t in tables) else "")
            plan.append((f"{name}_ladder.png", partial(charts.ladder_figure, table)))
            all_rows += table.rows
        title = f"{family} roofline: every timed row at its intensity, under the roofs of the file's GPU"
        plan.append((f"{stem}_roofline.png", partial(charts.roofline_figure, all_rows, story.report.ceilings, title)))
        for (fam, variant, size), members in charts.sweep_groups(all_rows).items():
            references = [r for r in all_rows if r.size == members[0].size and r not in members and r.vendor]
            name = f"{stem}_{charts.slug(variant)}_{charts.slug(size)}_sweep.png"
            plan.append((name, partial(charts.sweep_figure, members, references,
                                       f"{fam} sweep of {variant} at {size}: rate per configuration")))
    return _distinct(plan)


def unique_slugs(names: list[str]) -> dict[str, str]:
    """Each name's file-safe form; names whose forms collide (case aside) each get a hash of the name."""
    import hashlib

    base = {name: charts.slug(name) for name in names}
    counts: dict[str, int] = {}
    for value in base.values():
        counts[value.lower()] = counts.get(value.lower(), 0) + 1
    return {name: value if counts[value.lower()] == 1 else
            f"{value}-{hashlib.sha256(name.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"
            for name, value in base.items()}


MAX_CHART_NAME = 200  # bytes: file systems allow 255, and -N may be added


def _distinct(plan: list[tuple[str, Callable[[], Any]]]) -> list[tuple[str, Callable[[], Any]]]:
    """A file name met twice (a variant and a size slugged alike) gets -2, -3, ...: one chart per file."""
    import hashlib

    seen: set[str] = set()
    out = []
    for name, make in plan:
        if len(name.encode()) > MAX_CHART_NAME:  # a long family or variant name: cut, kept apart by a hash
            head, kind = name[:name.rfind("_")], name[name.rfind("_"):]  # kind: "_roofline.png", ...
            cut = head.encode()[:MAX_CHART_NAME - 40].decode("utf-8", "ignore")
            name = f"{cut}-{hashlib.sha256(name.encode()).hexdigest()[:12]}{kind}"
        stem, chosen, n = name.removesuffix(".png"), name, 1
        while chosen.lower() in seen:
            n += 1
            chosen = f"{stem}-{n}.png"
        seen.add(chosen.lower())
        out.append((chosen, make))
    return out


def save_pngs(story: StoryReport, folder: Path, force: bool = False) -> list[Path]:
    """Every chart of png_plan into `folder`: each file checked first (files.check_output: no link, no
    user's PNG without --force), then drawn and written atomically."""
    from gpuprof.files import check_output

    plan = png_plan(story)
    for name, _ in plan:
        check_output(folder / name, "--png", force)
    return [charts.save_png(make(), folder / name) for name, make in plan]


__all__ = ["OK", "page", "save_pngs"]
