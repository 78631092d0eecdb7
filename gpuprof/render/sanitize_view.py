"""Sanitizer results -> Rich tables: a summary per (variant, tool) and one row per finding."""

from __future__ import annotations

from rich.table import Table

from gpuprof.commands.sanitize import SanitizeResult


def summary_table(results: list[SanitizeResult]) -> Table:
    table = Table(title="compute-sanitizer", title_justify="left")
    for head in ("variant", "tool", "result", "errors", "log"):
        table.add_column(head, justify="right" if head == "errors" else "left")
    for r in results:
        if r.error:
            verdict = f"[red]could not judge: {r.error}[/]"
        elif r.clean:
            verdict = "[green]clean[/]"
        else:
            verdict = f"[bold red]{len(r.findings)} finding(s)[/]"
        table.add_row(r.label, r.tool, verdict, "-" if r.error_count is None else str(r.error_count),
                      str(r.log) if r.log else "-")
    return table


def _dims(d: tuple[int, int, int] | None) -> str:
    return "-" if d is None else f"({d[0]},{d[1]},{d[2]})"


def findings_table(results: list[SanitizeResult], limit: int = 40) -> Table:
    """One row per distinct (variant, tool, kind, kernel, source line); the first thread/block as an example."""
    groups: dict[tuple, list] = {}
    for r in results:
        for f in r.findings:
            source = f"{f.file}:{f.line}" if f.file else "- (compile with -lineinfo)"
            key = (r.label, f.tool, f.kind + (f" {f.detail}" if f.detail else ""), (f.kernel or "-")[:40], source)
            groups.setdefault(key, []).append(f)
    table = Table(title="findings", title_justify="left")
    for head in ("variant", "tool", "kind", "kernel", "source", "count", "first thread", "block", "address", "size"):
        table.add_column(head, justify="right" if head == "count" else "left")
    for (label, tool, kind, kernel, source), items in list(groups.items())[:limit]:
        f = items[0]
        table.add_row(label, tool, kind, kernel, source, str(len(items)), _dims(f.thread), _dims(f.block),
                      hex(f.address) if f.address is not None else "-", "-" if f.size is None else str(f.size))
    if len(groups) > limit:
        table.caption = f"first {limit} of {len(groups)} groups shown; the logs hold every finding"
    return table
