"""Sanitizer results for the terminal: a families x tools summary (course-wide) or one row per tool
(a command), then the findings as a list: where (file:line and the line itself), what, how many.

Counts mean one thing everywhere: "printed" is the records compute-sanitizer printed and gpuprof
parsed; "counted" is the tool's own summary count; when they differ the reason is said.
"""

from __future__ import annotations

import os
import re

from rich.console import Group
from rich.table import Table
from rich.text import Text

from gpuprof.commands.sanitize import SanitizeResult, SanitizeRun
from gpuprof.parsers.sanitizer_log import SanitizerFinding, SanitizerSite
from gpuprof.render.kernel_names import short_names
from gpuprof.render.sanitize_context import allocation_line, threads_line
from gpuprof.tools.sanitizer import TOOLS


def verdict(r: SanitizeResult) -> str:
    """One cell: clean, found (with why the counts may differ), or not judged."""
    if r.error:
        return "[red]not judged[/]"
    if r.clean:
        return "[green]clean[/]"
    if r.counted is None:
        return "[bold red]found[/], [red]no summary[/]"
    return "[bold red]found[/]" + (" [red](capped)[/]" if r.truncated else "")


def families_table(run: SanitizeRun, tools: list[str]) -> Table:
    """Rows: families; columns: tools; a cell counts that family's variants by outcome."""
    order = [t for t in TOOLS if t in tools]
    table = Table(title="compute-sanitizer", title_justify="left")
    table.add_column("family", no_wrap=True)
    for name in order:
        table.add_column(name)
    families: dict[str, dict[str, list]] = {}
    for r in run.results:
        families.setdefault(r.label.split("/", 1)[0], {}).setdefault(r.tool, []).append(r)
    for s in run.skipped:
        families.setdefault(s.label.split("/", 1)[0], {}).setdefault(s.tool, []).append(s)
    for family, by_tool in families.items():
        table.add_row(Text(family), *(_cell(by_tool.get(name, [])) for name in order))
    return table


def _cell(entries: list) -> str:
    if not entries:
        return "-"
    ran = [e for e in entries if isinstance(e, SanitizeResult)]
    parts = []
    clean = sum(r.clean for r in ran)
    dirty = sum(1 for r in ran if not r.clean and not r.error)
    unjudged = sum(1 for r in ran if r.error)
    if clean:
        parts.append(f"[green]{clean} clean[/]")
    if dirty:
        parts.append(f"[bold red]{dirty} found[/]")
    if unjudged:
        parts.append(f"[red]{unjudged} not judged[/]")
    skipped = len(entries) - len(ran)
    if skipped:
        parts.append(f"[dim]{skipped} skipped[/]")
    return ", ".join(parts)


def command_table(results: list[SanitizeResult]) -> Table:
    table = Table(title=Text(f"compute-sanitizer: {results[0].label}" if results else "compute-sanitizer"),
                  title_justify="left")
    for head in ("tool", "result", "printed", "counted"):
        table.add_column(head, justify="right" if head in ("printed", "counted") else "left", no_wrap=True)
    for r in results:
        table.add_row(Text(r.tool), verdict(r), str(len(r.findings)) if not r.error else "-",
                      "-" if r.counted is None else str(r.counted))
    return table


def short_kernel(name: str | None) -> str:
    """'oob_write(int *, int)' -> 'oob_write'; 'void k<32, float>(float*)' -> 'k<32, float>'
    (full names are in the log)."""
    if not name:
        return "-"
    head = name.split("(", 1)[0].strip()
    cut = head.find("<") if "<" in head else len(head)
    return head[:cut].rsplit(" ", 1)[-1] + head[cut:]


HOST_FRAMES_SHOWN = 3
_DRIVER_MODULES = ("libcuda.so", "libcudart.so")  # frames inside the CUDA driver and runtime say nothing


def _where(r: SanitizeResult, f: SanitizerFinding | SanitizerSite) -> tuple[str, str | None, str | None]:
    """(file:line as the user should open it, the source line, NVRTC's name if it was mapped)."""
    place = r.source_of(f)
    if place is not None:
        return f"{place.file}:{place.line}", place.text, place.compiled_as
    if f.file:
        return f"{f.file}:{f.line}", None, None
    if isinstance(f, SanitizerFinding) and f.kind in ("api_error", "leak"):
        return host_stack(f), None, None  # a host call: it has no device line, -lineinfo would not help
    return "no line info (compile with -lineinfo)", None, None


def host_stack(f: SanitizerFinding) -> str:
    """Where on the host an API error was called (or a leak allocated): the innermost frames outside
    the CUDA driver and runtime, innermost first."""
    frames = [fr for fr in f.host_frames if not any(m in fr for m in _DRIVER_MODULES)] or list(f.host_frames)
    if not frames:
        return "no host stack in the log (compute-sanitizer --show-backtrace host)"
    more = f" ← … {len(frames) - HOST_FRAMES_SHOWN} more" if len(frames) > HOST_FRAMES_SHOWN else ""
    return "host stack: " + " ← ".join(frames[:HOST_FRAMES_SHOWN]) + more


_API_CALL = re.compile(r"Program hit (?P<error>\w+) .*?on CUDA API call to (?P<call>\w+)")


def _what(f: SanitizerFinding) -> str:
    api = _API_CALL.match(f.message) if f.kind == "api_error" else None
    if api:
        return f"api error {api.group('error')} from {api.group('call')}"
    kind = f.kind.replace("_", " ") + (f" {f.detail}" if f.detail else "")
    if f.size is not None and f.kind in ("invalid_read", "invalid_write", "misaligned"):
        kind += f" of {f.size} bytes"
    return kind


def _kernel_label(kernel: str | None, width: int | None) -> str:
    """short_kernel's name; where it is one word wider than the terminal, the tables' short name
    (kernel_names: the function's own name), so the terminal never breaks it mid-word."""
    name = short_kernel(kernel)
    if width is None or not kernel or max(map(len, name.split()), default=0) <= width:
        return name
    return short_names([kernel])[kernel]


def _place_label(place: str, width: int | None) -> str:
    """A file:line wider than the terminal: its path normalised (`a/../b`), else the file's name and
    line alone (the log holds the path); never cut. Anything else (host stacks, notes) wraps at spaces."""
    file, colon, line = place.rpartition(":")
    if width is None or len(place) <= width or " " in place or not colon or not line.isdigit():
        return place
    normal = f"{os.path.normpath(file)}:{line}"
    return normal if len(normal) <= width else f"{os.path.basename(file)}:{line}"


def findings_view(results: list[SanitizeResult], limit: int = 30, width: int | None = None) -> Group:
    """Every run that found something or could not be judged: a headline with its counts, then one
    entry per distinct (kind, kernel, place), with the source line under it. `width` (the
    terminal's): no kernel name or file:line is a word wider than it (the terminal would break it)."""
    out: list[Text] = []
    shown = 0
    for r in results:
        if r.clean:
            continue
        head = Text.assemble((f"{r.label}", "bold"), f"  {r.tool}: ")
        if r.error:
            out.append(head + Text(f"not judged: {r.error}", style="red"))
            out.append(Text(f"    log: {r.log}" if r.log else "", style="dim"))
            continue
        head.append(_counts_sentence(r))
        out.append(head)
        for note in (*([r.mismatch] if r.mismatch else []), *r.notes):
            out.append(Text(f"    ! {note}", style="yellow"))
        groups: dict[tuple, list[SanitizerFinding]] = {}
        for f in r.findings:
            sides = tuple((s.access, s.file, s.line) for s in f.sites)  # a race is its pair of places, not one
            where = _where(r, f)
            where = (_place_label(where[0], width), *where[1:])
            groups.setdefault((_what(f), _kernel_label(f.kernel, width), where, sides), []).append(f)
        for (what, kernel, (place, text, compiled_as), _), items in groups.items():
            if shown >= limit:
                break
            shown += 1
            hazards = sum(f.count or 0 for f in items)
            times = f" ×{len(items)}" if len(items) > 1 else ""
            times += f" ({hazards} hazards)" if hazards else ""
            first = items[0]
            who = threads_line(items)
            inside = f" in {kernel}" if first.kernel else ""
            out.append(Text.assemble("  ", (what, "red"), times, inside, (who, "dim")))
            if first.sites:
                out += site_lines(r, first.sites, width)
                continue
            out.append(Text.assemble("    ", (place, "cyan"),
                                     (f"  (NVRTC {compiled_as})" if compiled_as else "", "dim")))
            if text:
                out.append(Text(f"      {text}"))
            missed = allocation_line(items)
            if missed:
                out.append(Text(f"    {missed}", style="yellow"))
        if r.log:
            out.append(Text(f"    log: {r.log}", style="dim"))
    if shown >= limit:
        out.append(Text(f"first {limit} findings shown; the logs hold every one", style="dim"))
    return Group(*out)


def site_lines(r: SanitizeResult, sites: tuple[SanitizerSite, ...], width: int | None = None) -> list[Text]:
    """Every side of a race, each with its file:line and source line: the first access, then each
    "and" access with its hazard count (analysis report) or thread (hazard report). A place's
    source line is printed once, under its first mention."""
    out: list[Text] = []
    seen: set[str] = set()
    for i, site in enumerate(sites):
        place, text, compiled_as = _where(r, site)
        place = _place_label(place, width)
        lead = "    " if i == 0 else "    and "
        extra = f" ({site.hazards:,} hazard{'s' if site.hazards != 1 else ''})" if site.hazards else ""
        extra += f" thread {_dims(site.thread)}" if site.thread else ""
        out.append(Text.assemble(lead, (f"{site.access.lower():<5} ", "bold"), (place, "cyan"), extra,
                                 (f"  (NVRTC {compiled_as})" if compiled_as else "", "dim")))
        if text and place not in seen:
            out.append(Text(f"{' ' * len(lead)}      {text}"))
        seen.add(place)
    return out


def _counts_sentence(r: SanitizeResult) -> str:
    printed = len(r.findings)
    counted = r.counted
    unit = "hazard record" if r.tool == "racecheck" else "error"
    text = f"{printed} {unit}{'s' if printed != 1 else ''} printed"
    if counted is None:
        return text + "; no summary line (the run was cut short), so the total is unknown"
    if counted == printed:
        return text
    what = "errors and warnings" if r.tool == "racecheck" else "errors"
    text += f", the tool counted {counted} {what}"
    return text + (" and stopped counting there" if r.truncated and r.notes else "")


def skipped_line(run: SanitizeRun) -> Text | None:
    if not run.skipped and not run.notes:
        return None
    labels_by: dict[tuple[str, str], list[str]] = {}
    for s in run.skipped:
        labels_by.setdefault((s.reason, s.tool), []).append(s.label)
    # One clause per reason and set of variants, naming every tool it spares (a graph capture is
    # skipped by all four tools: one clause, not four copies of its reason).
    tools_by: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for (reason, tool), labels in labels_by.items():
        tools_by.setdefault((reason, tuple(labels)), []).append(tool)
    order = {tool: i for i, tool in enumerate(TOOLS)}

    def named(tools: list[str]) -> str:
        return ", ".join(sorted(tools, key=lambda t: order.get(t, len(order))))

    parts = [f"{named(tools)} skipped for {len(labels)} variant(s) with {reason}"
             for (reason, labels), tools in tools_by.items()]
    return Text("; ".join(parts + run.notes), style="dim")


RACECHECK_SCOPE = ("racecheck sees shared-memory hazards only: a race through global memory (threads' "
                   "non-atomic read-modify-write of one counter, say) is outside its scope, so compare such "
                   "results with a reference (gpuprof run checks every variant against one)")


def scope_line(results: list[SanitizeResult]) -> Text | None:
    """For a program's run: what a clean racecheck does not vouch for (compute-sanitizer's racecheck
    tracks shared memory; a lost update in global memory passes every tool)."""
    if any(r.tool == "racecheck" and r.clean for r in results):
        return Text(RACECHECK_SCOPE, style="dim")
    return None


def _dims(d: tuple[int, int, int] | None) -> str:
    return "-" if d is None else f"({d[0]},{d[1]},{d[2]})"
