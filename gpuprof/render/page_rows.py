"""A row's profiler parts on the report page: the one-line "why" of its table cell, and on demand
(<details>) its warp stall reasons as a bar, its hottest source lines with their text and stalls,
ncu's advice (the advice about the row's limiter first: memory advice for a memory-bound row), and
its sanitizer findings with tool, kind, file:line and the source line. Text from files is data:
escaped (page_svg.e, which also makes control characters visible)."""

from __future__ import annotations

import re

from gpuprof.analysis.advice_order import order_advice, ordered_by
from gpuprof.analysis.stall_reasons import describe
from gpuprof.render import units
from gpuprof.render.page_svg import LINE_COLOURS, e
from gpuprof.results import Row
from gpuprof.row_parts import CLEAN, FINDINGS, Advice, NcuPart, SanitizerPart

MEMORY_LIMITERS = ("dram", "l2", "l1")
MEMORY_BUSY_PCT = 60.0  # without a judged limiter: memory throughput this busy, above the SMs', reads memory-bound
# ncu rules and words that are about memory (the Memory Workload Analysis section's rules, coalescing, banks).
STALLS_SHOWN = 7
HOT_LINES_SHOWN = 8
TEXT_CHARS = 110
NO_SOURCE = "<span class=\"dim\">(source not in the report)</span>"


def row_anchor(row: Row) -> str:
    return "row-" + re.sub(r"[^A-Za-z0-9_-]+", "-", row.id).strip("-")


def memory_bound(part: NcuPart) -> bool:
    if part.limiter:
        return part.limiter in MEMORY_LIMITERS
    memory = part.memory_pct if part.memory_pct is not None else part.dram_pct
    return memory is not None and memory >= MEMORY_BUSY_PCT and memory > (part.sm_pct or 0.0)


def advice_limiter(part: NcuPart) -> str | None:
    """The limiter the advice is ordered by: the row's measured one; for a file without one, "dram"
    where its memory was the busier side (memory_bound), else none (by estimated speedup alone)."""
    return part.limiter or ("dram" if memory_bound(part) else None)


def ordered_advice(part: NcuPart) -> list[Advice]:
    """ncu's advice in the order the terminal gives it (analysis/advice_order.py): the kinds the row's
    limiter makes relevant first, each kind by its estimated speedup, largest first."""
    return order_advice(part.advice, advice_limiter(part))


def why_cell(row: Row, part: NcuPart | None) -> str:
    """The table's ncu cell, HTML: the limiter and the top stall in words, the DRAM traffic, and a link
    to the row's details."""
    if part is None:
        return ""
    if part.error:
        return f"<span class=\"warn\">not profiled</span>: {e(part.error[:160])}"
    words = []
    if part.limiter:
        words.append(f"<b>{e(part.limiter)}-bound</b>" if part.limiter in (*MEMORY_LIMITERS, "compute", "tensor")
                     else f"<b>{e(part.limiter)}</b>")
    elif part.dram_pct is not None or part.sm_pct is not None:
        words.append(f"DRAM {part.dram_pct or 0:.0f} % · SM {part.sm_pct or 0:.0f} % busy")
    if part.top_stall:
        reason = describe(part.top_stall)
        share = f" {part.top_stall_pct:.0f} %" if part.top_stall_pct is not None else ""
        words.append(f"stalls on <span title=\"{e(reason.cause)}\">{e(reason.label)}</span>{share}")
    if part.dram_bytes:
        words.append(f"{e(units.nbytes(part.dram_bytes))} from DRAM")
    if part.achieved_occupancy_pct is not None:
        words.append(f"occupancy {part.achieved_occupancy_pct:.0f} %")
    return " · ".join(words) + f" <a href=\"#{row_anchor(row)}\">details</a>"


def sanitizer_cell(row: Row, sanitizer: SanitizerPart | None) -> str:
    """Clean, the findings (how many, the first's tool and place), or not judged and why; HTML."""
    if sanitizer is None:
        return ""
    skipped = [tool for tool, said in sanitizer.tools.items() if said.startswith("skipped")]
    ran = [tool for tool in sanitizer.tools if tool not in skipped]
    where = (f" <span class=\"dim\" title=\"{e(', '.join(ran))}\">({len(ran)} tool{'s' if len(ran) != 1 else ''})"
             "</span>" if ran else "")
    if sanitizer.verdict == CLEAN:
        return f"<span class=\"ok\">clean</span>{where}"
    if sanitizer.verdict == FINDINGS:
        count = sanitizer.findings
        first = sanitizer.found[0] if sanitizer.found else None
        said = (f": {e(first.tool)} {e(first.kind)} at {e(first.place)}" if first else
                f": {e(sanitizer.first[:160])}" if sanitizer.first else "")
        return (f"<span class=\"bad\">{count} finding{'s' if count != 1 else ''}</span>{said} "
                f"<a href=\"#{row_anchor(row)}\">details</a>")
    why = "; ".join(f"{tool}: {said.removeprefix('not judged: ')}" for tool, said in sanitizer.tools.items()
                    if said.startswith("not judged"))
    return "<span class=\"warn\">not judged</span>" + (f": {e(why)}" if why else "")


def has_details(row: Row) -> bool:
    part, sanitizer = row.ncu, row.sanitizer
    return bool(part and not part.error and (part.stalls or part.hot_lines or part.advice or part.top_stall)) or \
        bool(sanitizer and (sanitizer.found or sanitizer.tools))


def details(row: Row) -> str:
    """The row's parts on demand, closed until clicked; "" where it has none worth opening."""
    if not has_details(row):
        return ""
    part, sanitizer = row.ncu, row.sanitizer
    summary = [e(row.variant)]
    if part and part.limiter:
        summary.append(f"{e(part.limiter)}-bound")
    if part and part.top_stall:
        summary.append(f"top stall {e(describe(part.top_stall).label)}")
    if part and part.hot_lines:
        summary.append(f"hottest line {e(part.hot_lines[0].place)}")
    if sanitizer is not None:
        summary.append(f"sanitizer: {e(sanitizer.verdict)}")
    body = []
    if part and not part.error:
        body += [_stalls(part), _hot_lines(part), _advice(part)]
    if sanitizer is not None:
        body.append(_findings(sanitizer))
    return (f"<details class=\"row\" id=\"{row_anchor(row)}\"><summary>{' · '.join(summary)}</summary>"
            f"<div class=\"parts\">{''.join(b for b in body if b)}</div></details>")


def _stalls(part: NcuPart) -> str:
    """Stall reasons as one stacked bar (share of stalled cycles), its legend in words beneath."""
    stalls = dict(part.stalls) or ({part.top_stall: part.top_stall_pct} if part.top_stall and
                                   part.top_stall_pct is not None else {})
    if not stalls:
        return ""
    total = sum(stalls.values()) if part.stalls else 100.0
    ranked = sorted(stalls.items(), key=lambda kv: -kv[1])
    shown = ranked[:STALLS_SHOWN]
    rest = total - sum(v for _, v in shown)
    if rest > 0.5:
        shown.append(("other", rest))
    width, x = 760.0, 0.0
    bars, legend = [], []
    for i, (reason, value) in enumerate(shown):
        share = 100.0 * value / total if total else 0.0
        colour = "#c9cdd2" if reason == "other" else LINE_COLOURS[i % len(LINE_COLOURS)]
        meaning = describe(reason) if reason != "other" else None
        label = meaning.label if meaning else "other reasons"
        tip = f"{label} ({reason}): {share:.1f} % of stalled cycles" + (f" — {meaning.cause}" if meaning else "")
        w = width * share / 100
        bars.append(f'<rect x="{x:.1f}" y="0" width="{max(w, 0.5):.1f}" height="18" fill="{colour}" '
                    f'class="stall" data-reason="{e(reason)}" data-pct="{share:.2f}"><title>{e(tip)}</title></rect>')
        x += w
        legend.append(f"<li><i style=\"background:{colour}\"></i>{e(label)} <b>{share:.0f} %</b>"
                      + (f" <span class=\"dim\">— {e(meaning.cause)}</span>" if meaning else "") + "</li>")
    note = "" if part.stalls else " (only the top reason was kept for this row)"
    return (f"<h4>Warp stall reasons{note}</h4><svg class=\"stallbar\" width=\"{width:.0f}\" height=\"18\" "
            f"viewBox=\"0 0 {width:.0f} 18\" role=\"img\"><title>stall reasons, share of stalled cycles</title>"
            f"{''.join(bars)}</svg><ul class=\"legend\">{''.join(legend)}</ul>")


def _hot_lines(part: NcuPart) -> str:
    if not part.hot_lines:
        return ""
    rows = []
    top = max(h.share_pct for h in part.hot_lines) or 1.0
    for h in part.hot_lines[:HOT_LINES_SHOWN]:
        stalls = ", ".join(f"{describe(r).label} {v:.0f} %" for r, v in sorted(h.stalls.items(), key=lambda kv: -kv[1])
                           [:3])
        source = h.text.strip()
        source = source if len(source) <= TEXT_CHARS else source[:TEXT_CHARS - 1] + "…"
        heat = f"<span class=\"heat\" style=\"width:{60 * h.share_pct / top:.0f}px\"></span>"
        rows.append(f"<tr><td class=\"l\">{e(h.place)}</td><td>{heat}{h.share_pct:.1f} %</td>"
                    f"<td class=\"l code\">{e(source) if source else NO_SOURCE}"
                    f"</td><td class=\"l\">{e(stalls)}</td></tr>")
    return ("<h4>Hottest source lines (share of the kernel's sampled stalls)</h4><table class=\"hot\"><thead><tr>"
            "<th class=\"l\">file:line</th><th>stalls</th><th class=\"l\">source</th><th class=\"l\">why it waits</th>"
            f"</tr></thead><tbody>{''.join(rows)}</tbody></table>")


def _advice(part: NcuPart) -> str:
    if not part.advice:
        return ""
    items = "".join(f"<li><b>{e(a.rule)}</b>" + (f" <span class=\"pill\">est. {a.speedup_pct:.0f} %</span>"
                                                  if a.speedup_pct is not None else "")
                    + f" {e(a.message)}</li>" for a in ordered_advice(part))
    return f"<h4>ncu's advice ({e(ordered_by(advice_limiter(part)))})</h4><ol class=\"advice\">{items}</ol>"


def _findings(sanitizer: SanitizerPart) -> str:
    tools = "".join(f"<li><b>{e(tool)}</b>: {e(said)}</li>" for tool, said in sanitizer.tools.items())
    size = ", ".join(f"{k}={v}" for k, v in sanitizer.size.items())
    out = [f"<h4>compute-sanitizer: {e(sanitizer.verdict)}" + (f" <span class=\"dim\">(at {e(size)})</span>"
                                                                if size else "") + "</h4>"]
    if tools:
        out.append(f"<ul class=\"tools\">{tools}</ul>")
    if sanitizer.found:
        rows = "".join(f"<tr><td class=\"l\">{e(f.tool)}</td><td class=\"l\">{e(f.kind)}</td>"
                       f"<td class=\"l\">{e(f.place)}</td><td class=\"l code\">{e(f.text.strip()[:TEXT_CHARS])}</td>"
                       f"<td class=\"l wrap\">{e(f.message[:200])}</td></tr>" for f in sanitizer.found)
        out.append("<table class=\"findings\"><thead><tr><th class=\"l\">tool</th><th class=\"l\">kind</th>"
                   "<th class=\"l\">file:line</th><th class=\"l\">source</th><th class=\"l\">the tool said</th>"
                   f"</tr></thead><tbody>{rows}</tbody></table>")
        if sanitizer.findings > len(sanitizer.found):
            out.append(f"<p class=\"meta\">{sanitizer.findings - len(sanitizer.found)} more not kept in the file.</p>")
    elif sanitizer.verdict == FINDINGS and sanitizer.first:
        out.append(f"<p>{e(sanitizer.first)}</p>")
    return "".join(out)



