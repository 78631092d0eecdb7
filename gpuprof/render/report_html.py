"""The report page: one self-contained HTML file (inline CSS, inline SVG charts drawn by gpuprof, a
few lines of inline script for nothing but opening a row's details from a link; no font or file
fetched), and the charts as PNG files for a README or slides (--png: matplotlib, render/charts.py).

The page is where a ladder is understood: a table of contents and a headline (each family's best
rung against its vendor library, and their geometric mean), then per family its ladders
(render/page_ladder.py: rate per rung on a linear axis with the samples' spread, the vendor as a
reference line, each step explained), the rows with their profiler parts on demand
(render/page_rows.py), the roofline (render/page_roofline.py: measured bytes where ncu ran) and the
sweeps (render/page_sweeps.py); with --base the compare gate; at the end how it was all measured.
"""

from __future__ import annotations

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
from gpuprof.render.page_headline import Headline, headline
from gpuprof.render.page_ladder import ladder_svg, steps, throttled
from gpuprof.render.page_roofline import roofline_html
from gpuprof.render.page_rows import details, sanitizer_cell, why_cell
from gpuprof.render.page_svg import e
from gpuprof.render.page_sweeps import define_sweeps, size_lines
from gpuprof.render.tables import footer
from gpuprof.results import OK, Row, size_label

_STATUS_CLASS = {"ok": "ok", "wrong": "bad", "fault": "bad", "timeout": "bad", "impossible": "bad",
                 "skipped": "dim"}
_VERDICT_CLASS = {"SAME": "dim", "FASTER": "ok", "SLOWER": "bad", "INCONCLUSIVE": "warn"}

CSS = """
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0;color:#1d1d1f;background:#f6f7f9}
main{max-width:1280px;margin:0 auto;padding:18px 28px 60px}h1{font-size:22px;margin:6px 0 2px}
h2{font-size:19px;margin:30px 0 6px;border-bottom:2px solid #d0d7de;padding-bottom:4px}
h3{font-size:15px;margin:22px 0 4px}h4{font-size:13px;margin:12px 0 4px}.meta{color:#57606a;font-size:12.5px}
nav.toc{background:#fff;border:1px solid #d0d7de;border-radius:8px;padding:8px 16px;margin:12px 0;font-size:13px}
nav.toc ol{margin:4px 0;padding-left:20px;columns:3}nav.toc li{break-inside:avoid}
nav.toc a{color:#0969da;text-decoration:none}nav.toc a:hover{text-decoration:underline}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin:10px 0}
.card{background:#fff;border:1px solid #d0d7de;border-radius:8px;padding:8px 12px;min-width:150px;max-width:290px}
.card b{display:block;font-size:19px}.card b .ok{color:#1a7f37}.card b .bad{color:#c62828}
.card span{color:#57606a;font-size:12px}.card a{color:inherit}
section.family{background:#fff;border:1px solid #d0d7de;border-radius:10px;padding:4px 20px 16px;margin:22px 0}
.chart svg{max-width:100%;height:auto}.chart{margin:4px 0 8px}
.scroll{overflow-x:auto}
table{border-collapse:collapse;font-size:12.5px;margin:6px 0 10px}
table.rows{width:100%}
th,td{padding:3px 8px;border-bottom:1px solid #e4e7eb;text-align:right;vertical-align:top;white-space:nowrap}
th{background:#f0f2f5;font-weight:600}td.l,th.l{text-align:left}
td.wrap{white-space:normal;text-align:left;min-width:190px;max-width:330px}td.narrow{min-width:110px}.ok{color:#1a7f37;font-weight:600}
.bad{color:#c62828;font-weight:700}.warn{color:#9a6700;font-weight:600}.dim{color:#6e7781}
.gm{font-size:13px;margin:2px 0 8px}.empty{color:#57606a;font-style:italic;margin:6px 0}
.pill{display:inline-block;padding:0 7px;border-radius:9px;background:#eef1f4;margin-right:6px}
details{margin:6px 0}summary{cursor:pointer;color:#57606a}details.row{border-left:3px solid #d0d7de;padding-left:10px}
details.row[open]{background:#fbfbfc}.parts{padding:2px 0 8px}
ul.legend{list-style:none;padding:0;margin:4px 0;font-size:12px;columns:2}
ul.legend i{display:inline-block;width:10px;height:10px;margin-right:5px;vertical-align:middle}
td.code{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px;white-space:pre;max-width:520px;
overflow:hidden;text-overflow:ellipsis}
.heat{display:inline-block;height:9px;background:#d95f02;margin-right:5px;vertical-align:middle}
ol.advice{font-size:12.5px;padding-left:22px;margin:4px 0}ul.tools{font-size:12.5px;margin:4px 0}
ul.notes{font-size:12px;color:#57606a;margin:4px 0;padding-left:18px}
.failures{background:#fff5f5;border:1px solid #f3c4c4;border-radius:8px;padding:8px 14px}
"""
# Opens a row's <details> when a link to it is followed (the details are closed by default).
SCRIPT = ("<script>function openRow(){var d=document.getElementById(location.hash.slice(1));"
          "if(d&&d.tagName==='DETAILS'){d.open=true;}}window.addEventListener('hashchange',openRow);"
          "openRow();</script>")

# Footnotes of marked rows (a % above 100, the TF32 warning): under their own table, not in the shared notes.
_ROW_MARKS = ("*", TF32_MARK)


def page(story: StoryReport) -> str:
    """The whole page as one string."""
    results = story.report.results
    env = results.environment
    families = story.families()
    anchors = family_anchors(list(families))
    top = headline(story)
    parts = [f"<!DOCTYPE html>\n<!-- gpuprof report -->\n<html lang=\"en\"><head><meta charset=\"utf-8\">{HTML_MARK}",
             f"<title>gpuprof report: {_e(story.path.name)}</title><style>{CSS}</style></head><body><main>",
             f"<h1>gpuprof report — {_e(story.path.name)}</h1>",
             (f"<div class=\"meta\">{_e(results.command or '')}<br>"
             f"{_e(env.get('gpu_name', 'unknown GPU'))} · driver "
             f"{_e(env.get('driver_version', '?'))} · CUDA runtime {_e(env.get('cuda_runtime', '?'))} · gpuprof "
             f"{_e(env.get('gpuprof_version', '?'))} · {_e(results.created_utc or 'undated')} · "
             f"{len(results.rows)} rows</div>")]
    parts.append(_contents(story, families, anchors))
    parts.append(_headline_section(story, top, anchors))
    parts.append(_failures(story))
    if story.gate is not None:
        parts.append(_gate_section(story))
    shared = _shared_notes(story)
    for family, tables in families.items():
        parts.append(_family_section(story, family, tables, anchors[family], shared))
    parts.append(_how_measured(shared))
    parts.append(f"</main>{SCRIPT}</body></html>\n")
    return "".join(parts)


def family_anchors(names: list[str]) -> dict[str, str]:
    """Each family's section id, unique on the page even where two names slug alike."""
    return {name: f"family-{slug}" for name, slug in unique_slugs(names).items()}


def table_anchor(family_anchor: str, index: int) -> str:
    return f"{family_anchor}-t{index + 1}"


def _contents(story: StoryReport, families: dict[str, list[Table]], anchors: dict[str, str]) -> str:
    items = ["<li><a href=\"#headline\">Headline</a></li>"]
    if story.report.failed:
        items.append("<li><a href=\"#failures\">Failures</a></li>")
    if story.gate is not None:
        items.append("<li><a href=\"#gate\">Compare gate</a></li>")
    for family, tables in families.items():
        sizes = ", ".join(_sizes(t) for t in tables)
        items.append(f"<li><a href=\"#{anchors[family]}\">{_e(family)}</a> <span class=\"dim\">{_e(sizes)}</span></li>")
    items.append("<li><a href=\"#how-measured\">How the figures are computed</a></li>")
    return f"<nav class=\"toc\" id=\"contents\"><b>Contents</b><ol>{''.join(items)}</ol></nav>"


def _sizes(table: Table) -> str:
    return ", ".join(charts.largest_first({size_label(r.size) for r in table.rows if not _capped(r, table)}) or
                     charts.largest_first({size_label(r.size) for r in table.rows}))


def _capped(row: Row, table: Table) -> bool:
    """A row put back into its table from a capped size (commands/report.capped_into_their_tables)."""
    sizes = [math.prod(r.size.values()) for r in table.rows]
    return bool(sizes) and math.prod(row.size.values()) < max(sizes)


def _headline_section(story: StoryReport, top: Headline, anchors: dict[str, str]) -> str:
    cards = []
    for best in top.best:
        versus = (f"{best.vs_vendor:.3g}× {_e(best.vendor)}" if best.vs_vendor is not None
                  else "no vendor row")
        caveat = f" — {best.throttled}: the ratio is not a clean comparison" if best.throttled else ""
        cards.append((f"<a href=\"#{anchors[best.family]}\">{versus}</a>",
                      f"{best.family}: best rung {best.variant} ({best.rate}) at {best.size}{caveat}"))
    if top.geomean is not None:
        families = f"{top.geomean_n} famil{'ies' if top.geomean_n != 1 else 'y'}"
        cards.append((_e(f"{top.geomean:.3g}×"), f"geomean of the best rungs vs their vendor library ({families})"))
    failed = story.report.failed
    cards.append((_e(str(len(failed))), "rows failed" if failed else "rows failed: every row checked OK or skipped"))
    if story.gate is not None:
        failing = gate_failures(story.gate)
        cards.append((f"<span class=\"{'bad' if failing else 'ok'}\">{'FAIL' if failing else 'PASS'}</span>",
                      f"compare gate vs {story.base.name if story.base else 'BASE'}"))
    body = "".join(f"<div class=\"card\"><b>{value}</b><span>{_e(words)}</span></div>" for value, words in cards)
    return (f"<h2 id=\"headline\">Headline</h2><div class=\"cards\">{body}</div>"
            f"<p class=\"meta\">{_e(top.note)}</p>")


def _failures(story: StoryReport) -> str:
    failed = story.report.failed
    if not failed:
        return ""
    items = "".join(f"<li><b>{_e(r.id)}</b> <span class=\"bad\">{_e(r.check.status.upper())}</span> "
                    f"{_e('; '.join(r.check.reasons))}</li>" for r in failed)
    return f"<div class=\"failures\" id=\"failures\"><b>Failures</b><ul>{items}</ul></div>"


def _gate_section(story: StoryReport) -> str:
    gate = story.gate
    assert gate is not None
    counts = ", ".join(f"{n} {status.value}" for status, n in gate.counts().items() if n)
    failing = gate_failures(gate)
    base = story.base.name if story.base else "BASE"
    lines = [f"<h2 id=\"gate\">Compare gate: {_e(story.path.name)} against {_e(base)}</h2>",
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


def _family_section(story: StoryReport, family: str, tables: list[Table], anchor: str,
                    shared: set[str]) -> str:
    index_of = {id(t): i for i, t in enumerate(story.report.tables)}
    summary = tables[0].family.summary
    parts = [(f"<section class=\"family\" id=\"{anchor}\"><h2>{_e(family)}"
             f"<span class=\"meta\"> — {_e(summary)}</span></h2>")]
    all_rows: list[Row] = []
    ceilings = story.report.ceilings
    for number, table in enumerate(tables):
        speedups = story.speedups[index_of[id(table)]]
        parts.append(f"<h3 id=\"{table_anchor(anchor, number)}\">{_e(family)} at {_e(_sizes(table))} "
                     f"({_e(table.mode)} timing)</h3>")
        parts.append(_geomean_line(speedups, table))
        explained = steps([r for r in table.rows if not r.vendor], lambda r: r.ncu, ceilings)
        ladder = ladder_svg(table, explained, ceilings)
        parts.append(f"<div class=\"chart ladder\">{ladder}</div>" if ladder else _no_ladder(table))
        parts.append(_rows_table(story, table))
        parts += [d for r in table.rows if (d := details(r))]
        notes = [line for line in footer(table, ceilings, story.report.results.environment)
                 if line not in shared and not _row_note(line, table)]
        if notes:
            parts.append("<details class=\"notes\"><summary>how this table's figures are computed</summary>"
                         "<ul class=\"notes\">" + "".join(f"<li>{_e(n)}</li>" for n in notes) + "</ul></details>")
        all_rows += table.rows
    parts.append(f"<h3>{_e(family)} roofline</h3>")
    roofline = roofline_html(family, all_rows, ceilings, lambda r: r.ncu)
    parts.append(f"<div class=\"chart roofline\">{roofline}</div>" if roofline.startswith("<svg") else roofline)
    sizes = size_lines(family, all_rows)
    sweeps = define_sweeps(family, all_rows)
    if sizes or sweeps:
        parts.append(f"<h3>{_e(family)} across sizes and configurations</h3>")
    parts += [f"<div class=\"chart sweep\">{svg}</div>" if svg.startswith("<svg") else svg
              for svg in ([sizes] if sizes else []) + sweeps]
    parts.append("</section>")
    return "".join(parts)


def _no_ladder(table: Table) -> str:
    statuses: dict[str, int] = {}
    rungs = [r for r in table.rows if not r.vendor]
    if not rungs:
        return "<p class=\"empty\">No ladder: this table holds only vendor rows.</p>"
    for r in rungs:
        status = r.check.status.upper() if r.check.status != OK else "not timed"
        statuses[status] = statuses.get(status, 0) + 1
    said = ", ".join(f"{n} {status}" for status, n in statuses.items())
    return f"<p class=\"empty\">No ladder: no rung of this table has a rate ({_e(said)}).</p>"


def _row_note(line: str, table: Table) -> bool:
    return any(line.startswith(f"{r.variant}:") for r in table.rows) or line.startswith(_ROW_MARKS)


def _geomean_line(speedups: Speedups, table: Table) -> str:
    best = speedups.best
    pills = []
    if best is not None and best.derived is not None:
        pills.append(f"best rung <b>{_e(best.variant)}</b>: {_times(best.derived.vs_vendor)} vs "
                     f"{_e(table.vendor or '-')}, {_times(best.derived.vs_baseline)} vs {_e(table.baseline or '-')}")
    rungs = f"{speedups.vs_baseline_n} rung{'s' if speedups.vs_baseline_n != 1 else ''}"
    pills.append(f"geomean of {rungs}: {_times(speedups.vs_baseline)} vs {_e(table.baseline)}"
                 if table.baseline else "no baseline rung in this table")
    if table.vendor:
        pills.append(f"{_times(speedups.vs_vendor)} vs {_e(table.vendor)}")
    return "<p class=\"gm\">" + "".join(f"<span class=\"pill\">{p}</span>" for p in pills) + "</p>"


def _rows_table(story: StoryReport, table: Table) -> str:
    unit, scale = charts.rate_unit(table.rate_kind)
    with_gate = story.gate is not None
    with_ncu = any(r.ncu is not None for r in table.rows)
    with_sanitizer = any(r.sanitizer is not None for r in table.rows)
    head = ["variant", "check", "median", "p25–p75", "samples", unit, "% ceiling",
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
        samples = f"{summary.n} {_e(r.timing.stop_reason)}" if summary and r.timing else "-"
        if throttle := throttled(r):
            samples += f" <span class=\"warn\">{_e(throttle)}</span>"
        size = f" <span class=\"dim\">at {_e(size_label(r.size))}</span>" if _capped(r, table) else ""
        cells: list[tuple[str, str] | tuple[str, str, bool]] = [
            (_e(r.variant + (" (vendor)" if r.vendor else "") + (f" {TF32_MARK}" if tf32_off(r) else "")) + size,
             "l", True),
            (check, "l", True),
            (units.seconds(summary.median_s) if summary else "-", ""),
            (f"{units.seconds(summary.p25_s)} – {units.seconds(summary.p75_s)}" if summary else "-", ""),
            (samples, "", True),
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
            cells.append((why_cell(r, r.ncu), "wrap", True))
        if with_sanitizer:
            cells.append((sanitizer_cell(r, r.sanitizer), "wrap narrow", True))
        body.append(cells)
    notes = [line for line in footer(table, story.report.ceilings, story.report.results.environment)
             if _row_note(line, table)]
    note_html = "<ul class=\"notes\">" + "".join(f"<li>{_e(n)}</li>" for n in notes) + "</ul>" if notes else ""
    return f"<div class=\"scroll\">{_table(head, body, 'rows')}</div>" + note_html


def _shared_notes(story: StoryReport) -> set[str]:
    """Footer lines that two or more tables share (or the only table has): printed once, at the end."""
    seen: dict[str, int] = {}
    for table in story.report.tables:
        for line in dict.fromkeys(footer(table, story.report.ceilings, story.report.results.environment)):
            if not _row_note(line, table):
                seen[line] = seen.get(line, 0) + 1
    single = len(story.report.tables) == 1
    return {line for line, n in seen.items() if n > 1 or single}


def _how_measured(shared: set[str]) -> str:
    items = "".join(f"<li>{_e(line)}</li>" for line in sorted(shared, key=_note_order))
    geomean = ("headline: each family's best rung (its fastest row that passed and is not the vendor's, in the "
               "family's largest table with a vendor row) against the vendor library; their geometric mean. "
               "Per table, the geomean is over the table's rungs (the baseline itself left out of the speedup "
               "over the baseline).")
    bars = ("ladders: bars on a linear axis from 0; the error bar is the rate at the samples' 25th and 75th "
            "percentile times; vendor rows and the ceiling are the dashed reference lines. The line under a bar: "
            "what changed from the rung before and which limiter moved, from the row's ncu counters "
            "(gpuprof ncu --ladder's words), else the variant's technique.")
    roofline = ("rooflines: a row with ncu counters stands at its measured FLOP per DRAM byte (and per L2 and L1 "
                "byte where kept), else at the family's model; the roof that binds a row is drawn bold.")
    return (f"<h2 id=\"how-measured\">How the figures are computed</h2><ul class=\"notes\">{items}"
            f"<li>{_e(geomean)}</li><li>{_e(bars)}</li><li>{_e(roofline)}</li></ul>")


def _note_order(line: str) -> tuple[int, str]:
    for i, start in enumerate(("timing", "check", "speedups", "%")):
        if line.startswith(start):
            return i, line
    return 9, line


def _table(head: list[str], rows: Iterable[list[Any]], css: str = "") -> str:
    rows = list(rows)
    # A header sits over its column: left where the column's text is (names, words), right over numbers.
    left = [i < 2 or any(len(r) > i and r[i][1] in ("l", "wrap", "wrap narrow") for r in rows)
            for i in range(len(head))]
    out = [f"<table class=\"{css}\"><thead><tr>"]
    out += [f"<th class=\"{'l' if left[i] else ''}\">{_e(h)}</th>" for i, h in enumerate(head)]
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
    return e(text)


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
