"""`gpuprof doctor`'s table: each check, its result and what needs it, at the terminal's width.

Results and uses are free text (wrapped at spaces); a file's path is one word, so where the paths
make the table wider than the terminal they move under it, each on its own line, never cut."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group
from rich.table import Table
from rich.text import Text

from gpuprof.commands.doctor import Check
from gpuprof.render.fit import Column, fitted_table, natural_width

_AT = " at /"  # "13.0 at /usr/local/bin/nvcc": a version, then where it was found


def _mark(c: Check) -> Text:
    if c.ok:
        return Text("ok", style="green")
    return Text("no", style="red") if c.required else Text("--", style="yellow")


def _name(c: Check) -> Text:
    return Text(c.name) if c.required else Text.assemble(c.name, ("\n(optional)", "dim"))


def doctor_view(checks: Sequence[Check], width: int | None) -> Group:
    columns = [Column("", justify="left"), Column("check", justify="left"),
               Column("result", justify="left", wrap=True), Column("needed for", justify="left", wrap=True)]

    def table(paths_inside: bool) -> Table:
        rows: list[list[str | Text]] = []
        for c in checks:
            detail = c.detail
            if not paths_inside and _AT in detail:
                detail = detail.split(_AT, 1)[0] + " (path below)"
            rows.append([_mark(c), _name(c), detail, c.needed_for])
        return fitted_table(columns, rows, width, title="gpuprof doctor")

    inside = table(True)
    if width is None or natural_width(inside) <= width or not any(_AT in c.detail for c in checks):
        return Group(inside)
    below = [Text.assemble(f"{c.name}: ", (("/" + c.detail.split(_AT, 1)[1]), "cyan"))
             for c in checks if _AT in c.detail]
    return Group(table(False), Text("where:", style="dim"), *below)
