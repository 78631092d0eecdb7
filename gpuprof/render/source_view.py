"""`gpuprof ncu --source`: per kernel, where its warps wait (stall reasons) and the source lines
they wait at, with the lines' memory behaviour; optionally one line's SASS instructions.

Tables fit the console like the others (render.fit): optional columns are dropped and named. The
source text and the reasons' explanations end the rows and are the only cells ever shortened, at
their end ("…"), so `file:line` and the start of the text always show; `--wide` shows them whole.
"""

from __future__ import annotations

import math
import textwrap
from pathlib import PurePath

from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

from gpuprof.analysis.stall_reasons import CAUSE_WIDTH, describe, hottest_lines, kernel_reasons, lines_at, top_reasons
from gpuprof.commands.ncu import NcuRun
from gpuprof.parsers.ncu_source import KernelSource, LineStats, SassInstruction
from gpuprof.render.fit import Column, fitted_table, natural_width, print_table
from gpuprof.render.kernel_names import short_names

MIN_TEXT = 24  # characters of a line's source text kept before optional columns go
MIN_SHARE_PCT = 1.0  # stall reasons under this share of the kernel's are summed into one row
MAX_REASONS = 8
SASS_ROWS = 24  # instructions of one line shown: the most sampled, in address order


def print_source_view(console: Console, run: NcuRun, lines: int = 10, sass: str | None = None,
                      wide: bool = False) -> None:
    """Every profiled kernel's stall reasons and hottest lines, then `sass` (FILE:LINE)'s instructions."""
    width = None if wide else console.width
    shown = _kernels_to_show(run)
    if not shown:
        console.print("source view: no profiled kernels")
        return
    names = short_names([s.kernel_name for _, s, _ in shown])
    sass_shown = False
    for label, source, repeats in shown:
        console.print()
        title = names.get(source.kernel_name, source.kernel_name)
        if label and label != title:
            title = f"{label}: {title}"
        if wide:
            title = f"{title} — {source.kernel_name}"
        for part in kernel_view(source, title, lines, width, repeats):
            _print(console, part, wide)
        if sass:
            for part in sass_view(source, sass, title, width):
                _print(console, part, wide)
                sass_shown = True
    if sass and not sass_shown:
        console.print(f"--sass {sass}: no profiled kernel has that line (name one as the hottest-lines table does, "
                      "FILE:LINE)", markup=False)


def _print(console: Console, part: RenderableType, wide: bool) -> None:
    if isinstance(part, Table):
        print_table(console, part, wide)
    else:
        console.print(part)


def _kernels_to_show(run: NcuRun) -> list[tuple[str, KernelSource, int]]:
    """(label, source, launches of it not shown): the first profiled launch of each kernel per result."""
    out: list[tuple[str, KernelSource, int]] = []
    for result in run.results:
        firsts: dict[str, KernelSource] = {}
        repeats: dict[str, int] = {}
        for source in result.source:
            if source.kernel_name in firsts:
                repeats[source.kernel_name] += 1
            else:
                firsts[source.kernel_name], repeats[source.kernel_name] = source, 0
        label = result.label if run.family else ""
        out += [(label, s, repeats[name]) for name, s in firsts.items()]
    return out


def kernel_view(source: KernelSource, title: str, n_lines: int, width: int | None,
                repeats: int = 0) -> list[RenderableType]:
    more = f"; {repeats} more launch{'es' if repeats > 1 else ''} of it in --json" if repeats else ""
    heading = Text(f"{title}:", style="bold")
    if source.samples:
        cpi = f", {source.cycles_per_issue:.1f} warp cycles per issued instruction" if source.cycles_per_issue else ""
        heading.append(f" {source.samples:,} warp samples{cpi}{more}", style="none")
    parts: list[RenderableType] = [heading]
    reasons = reasons_table(source, width)
    if reasons is not None:
        parts += [reasons, remedies(source)]
    if source.missing:
        parts.append(Text(f"no per-line data: {source.missing}"))
        return parts
    parts.append(hot_lines_table(source, n_lines, width))
    files = _file_notes(source, width is None)
    if files:
        parts.append(files)
    if any(line.text is None for line in hottest_lines(source, n_lines)):
        parts.append(Text("source text: not in the report (collected without --import-source yes) and its file "
                          "is not on this machine"))
    return parts


def reasons_table(source: KernelSource, width: int | None) -> Table | None:
    """Where the kernel's warps spend their cycles, largest first; None when the report has neither
    warp-state ratios nor samples."""
    ranked = kernel_reasons(source)
    if not ranked:
        return None
    shown = [r for r in ranked if r[2] >= MIN_SHARE_PCT][:MAX_REASONS] or ranked[:1]
    rest = 100.0 - sum(share for _, _, share in shown)
    columns = [Column("stall reason", 0, "left"), Column("cycles/instr", 1), Column("share", 0),
               Column("ncu name", 3, "left")]
    rows: list[list[str | Text]] = [[describe(r).label, _cycles(c), f"{share:.1f} %", r] for r, c, share in shown]
    texts = [describe(r).cause for r, _, _ in shown]
    if rest >= 0.05:
        rows.append([f"{len(ranked) - len(shown)} others", "", f"{rest:.1f} %", ""])
        texts.append("")
    where = ("warp cycles per issued instruction by state (WarpStateStats)" if source.warp_states
             else "share of the warp samples (SourceCounters)")
    return fitted_with_text(columns, rows, Column("what it means", 0, "left"), texts, width,
                            title=f"stall reasons: {where}", min_text=CAUSE_WIDTH, fold=True)


def remedies(source: KernelSource, n: int = 2) -> Text:
    """What to try for the kernel's largest stalls that call for something (issuing does not)."""
    out = Text()
    stalls = [r for r, _, share in kernel_reasons(source) if describe(r).actionable and share >= MIN_SHARE_PCT][:n]
    for reason in stalls:
        d = describe(reason)
        out.append(f"try ({d.label}): ", style="bold")
        out.append(d.remedy + "\n")
    out.rstrip()
    return out


def hot_lines_table(source: KernelSource, n: int, width: int | None) -> Table:
    hot = hottest_lines(source, n)
    names = _line_files(source, short=width is not None)
    global_access = any(line.global_requests for line in hot)
    shared_access = any(line.shared_wavefronts for line in hot)
    # (column, its cell, what the caption says of it); memory columns only where a shown line has such accesses
    cells = [
        (Column("line", 0, "left"), lambda ln: f"{names[ln.file]}:{ln.line}", ""),
        (Column("samples", 0), lambda ln: f"{source.share(ln.samples):.1f}%", "samples: of the kernel's"),
        (Column("top stall", 0, "left"), lambda ln: _reason(ln, 0), "stalls: share of the line's samples"),
        (Column("2nd stall", 3, "left"), lambda ln: _reason(ln, 1), ""),
        (Column("instr", 4), lambda ln: _count(ln.instructions), "instr: warp instructions executed"),
    ]
    if global_access:
        cells += [(Column("sect/req", 1), lambda ln: _num(ln.sectors_per_request),
                   "sect/req: 32-byte sectors per global load/store (4 for a coalesced float access)"),
                  (Column("excess", 2), lambda ln: _pct(ln.excessive_sectors_pct), "excess: sectors beyond the ideal")]
    if shared_access:
        cells.append((Column("bank", 1), lambda ln: _ways(ln.wavefronts_per_ideal),
                      "bank: shared-memory passes per conflict-free pass (bank conflicts)"))
    rows: list[list[str | Text]] = [[cell(line) for _, cell, _ in cells] for line in hot]
    sampled = sum(1 for line in source.lines if line.samples)
    caption = "; ".join(said for _, _, said in cells if said)
    return fitted_with_text([c for c, _, _ in cells], rows, Column("source", 0, "left"),
                            [line.text or "" for line in hot], width,
                            title=f"hottest lines ({len(hot)} of {sampled} with samples)", caption=caption)


def _reason(line: LineStats, rank: int) -> str:
    reasons = top_reasons(line.stalls, rank + 1)
    if len(reasons) <= rank:
        return ""
    reason, share = reasons[rank]
    return f"{describe(reason).label} {share:.0f}%"


def sass_view(source: KernelSource, place: str, title: str, width: int | None) -> list[RenderableType]:
    """The SASS instructions of the line `place` (FILE:LINE) names, in address order."""
    matched = lines_at(source, place)
    if not matched:
        return []
    keys = {(line.file, line.line) for line in matched}
    every = [s for s in source.sass if (s.file, s.line) in keys]
    hottest = {s.address for s in sorted(every, key=lambda s: (-s.samples, s.address))[:SASS_ROWS]}
    instructions = [s for s in every if s.address in hottest]
    line_samples = sum(line.samples for line in matched)
    columns = [Column("offset", 0), Column("samples", 0), Column("top stall", 1, "left"), Column("instr", 2)]
    rows: list[list[str | Text]] = [_sass_row(s, line_samples) for s in instructions]
    which = (f"the {len(instructions)} most sampled of {len(every)} instructions" if len(every) > len(instructions)
             else f"{len(every)} instructions")
    heading = Text(f"{title}: SASS of {place}", style="bold")
    heading.append(f" ({which}, in address order; all in --json)", style="none")
    return [heading, fitted_with_text(columns, rows, Column("SASS", 0, "left"), [s.sass for s in instructions], width,
                                      caption="samples: of the line's; a stall is sampled at the instruction that "
                                              "waits")]


def _sass_row(s: SassInstruction, line_samples: int) -> list[str | Text]:
    top = top_reasons(s.stalls, 1)
    share = 100.0 * s.samples / line_samples if line_samples else 0.0
    return [f"{s.offset:04x}", f"{share:.1f}%", f"{describe(top[0][0]).label} {top[0][1]:.0f}%" if top else "",
            _count(s.instructions)]


def fitted_with_text(columns: list[Column], rows: list[list[str | Text]], text_column: Column, texts: list[str],
                     width: int | None, *, title: str = "", caption: str = "", min_text: int = MIN_TEXT,
                     fold: bool = False) -> Table:
    """fitted_table with a last text column that fills the width left, no narrower than min_text
    characters before an optional column is dropped; whole when width is None. Source code is
    shortened at its end (its start names the line; --wide and the JSON hold it whole); prose
    (fold) is folded onto more lines instead, never cut."""
    every = [*columns, text_column]
    fit = _fold if fold else _clip

    def build(limit: int | None) -> Table:
        cells = [[*row, fit(text, limit)] for row, text in zip(rows, texts, strict=True)]
        return fitted_table(every, cells, width, title=title, caption=caption)

    if width is None:
        return build(None)
    table = build(min_text)
    slack = width - natural_width(table)
    # The columns dropped at min_text stay dropped with the longer text: it only fills what is left.
    # Prose too wide even then is folded narrower rather than cut by the terminal.
    if slack < 0 and fold:
        shown = min(min_text, max((len(t) for t in texts), default=0))  # the text's width in `table`
        return build(max(shown + slack, 1))
    return build(min_text + slack) if slack > 0 else table


def _fold(text: str, limit: int | None) -> str:
    return text if limit is None or len(text) <= limit else "\n".join(textwrap.wrap(text, max(limit, 1)))


def _clip(text: str, limit: int | None) -> str:
    if limit is None or len(text) <= limit:
        return text
    return text[:max(limit - 1, 1)] + "…"


def _line_files(source: KernelSource, short: bool) -> dict[str, str]:
    """The file part of `file:line`: its base name where that names one file of the kernel (short)."""
    files = sorted({line.file for line in source.lines})
    bases = [PurePath(f).name for f in files]
    return {f: b if short and bases.count(b) == 1 else f for f, b in zip(files, bases, strict=True)}


def _file_notes(source: KernelSource, wide: bool) -> Text | None:
    names = _line_files(source, short=not wide)
    longer = [f"{short} = {full}" for full, short in names.items() if short != full]
    return Text("files: " + "; ".join(longer)) if longer else None


def _cycles(value: float) -> str:
    return "" if math.isnan(value) else f"{value:.2f}" if value < 10 else f"{value:.1f}"


def _count(value: int) -> str:
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if value >= scale:
            return f"{value / scale:.3g}{unit}"
    return str(value)


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}%"


def _ways(value: float | None) -> str:
    if value is None:
        return "-"
    return "none" if value < 1.05 else f"{value:.1f}-way"
