"""Tables that fit the terminal without cutting a cell: optional columns are left out instead.
Free-text columns (Column.wrap) wrap at spaces; every other cell is one whole line.

Every column says how much it matters (0: always shown). Where the table at its natural width
(every cell whole, no wrapping) is wider than the console, the least important optional columns
are dropped, one at a time, and the caption names them (plus what a dropped column would have
warned about, `dropped_note`); `--wide` shows them all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich import box
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from gpuprof.render.safe_text import is_safe, visible


@dataclass(frozen=True)
class Column:
    header: str
    priority: int = 0  # 0: always shown; higher numbers are dropped first
    justify: str = "right"
    dropped_note: str = ""  # said in the caption when the column is left out (what it would have warned of)
    wrap: bool = False  # free text (a technique, advice): wrapped at spaces, never cut; needs its longest word


def fitted_table(columns: list[Column], rows: Sequence[Sequence[str | Text]], width: int | None, *, title: str = "",
                 caption: str = "") -> Table:
    """A table of the columns that fit `width` (None: all of them), cells never wrapped or cut."""
    shown = list(range(len(columns)))
    dropped: list[int] = []
    while True:
        table = _table([columns[i] for i in shown], [[r[i] for i in shown] for r in rows], title)
        if width is None or _least_width(table) <= width:
            break
        optional = [i for i in shown if columns[i].priority > 0]
        if not optional:
            break  # the essential columns alone are wider: the terminal is too narrow for them
        worst = max(optional, key=lambda i: (columns[i].priority, i))
        shown.remove(worst)
        dropped.append(worst)
    if width is not None:
        _share_wrapped(table, width)
    notes = [caption] if caption else []
    if dropped:
        notes.append(f"not shown at this width: {', '.join(columns[i].header for i in sorted(dropped))} "
                     "(--wide shows every column)")
        notes += [columns[i].dropped_note for i in dropped if columns[i].dropped_note]
    if notes:
        table.caption = Text(visible("\n".join(notes)))  # text, not markup: captions name files, GPUs and kernels
        table.caption_justify = "left"
    return table


def _share_wrapped(table: Table, width: int) -> None:
    """Give the free-text columns fixed widths that fit `width`, each at least its longest word (Rich's
    own shrinking takes the widest columns down evenly and cuts a word that no longer fits). A table
    that fits, or whose essential columns alone do not, is left as it is."""
    console = Console(width=100_000, record=False)
    measures = [table._measure_column(console, console.options, column) for column in table.columns]
    wrapped = [i for i, column in enumerate(table.columns) if not column.no_wrap]
    room = width - (natural_width(table) - sum(m.maximum for i, m in enumerate(measures) if i in wrapped))
    least, most = ({i: getattr(measures[i], end) for i in wrapped} for end in ("minimum", "maximum"))
    if not wrapped or room >= sum(most.values()) or room < sum(least.values()):
        return
    spare, wants = room - sum(least.values()), sum(most[i] - least[i] for i in wrapped)
    for i in wrapped:
        share = least[i] + (most[i] - least[i]) * spare // wants
        table.columns[i].width = share - table._get_padding_width(i)


def _table(columns: list[Column], rows: Sequence[Sequence[str | Text]], title: str) -> Table:
    table = Table(title=Text(visible(title)) if title else None, title_justify="left", box=box.SIMPLE_HEAD,
                  pad_edge=False, collapse_padding=True, show_edge=False)
    for col in columns:
        table.add_column(col.header, justify=col.justify, no_wrap=not col.wrap)  # type: ignore[arg-type]
    for row in rows:
        # Text, not markup: kernel names hold "[", "<unnamed>" and template arguments.
        # Escaped first: Rich drops some control characters from a Text silently, keeps ESC.
        table.add_row(*(Text(visible(c)) if isinstance(c, str) else c for c in row))
    return table


def _safe(cell: object) -> object:
    """A cell with control and bidi characters written as escapes (safe_text.visible): a str keeps
    its markup, a Text its style; anything else (a renderable gpuprof built) is left as it is."""
    if isinstance(cell, str):
        return cell if is_safe(cell) else visible(cell)
    if isinstance(cell, Text) and not is_safe(cell.plain):
        return Text(visible(cell.plain), style=cell.style, justify=cell.justify, no_wrap=cell.no_wrap)
    return cell


def make_safe(table: Table) -> None:
    """Every cell, header, title and caption of `table` made safe to print, in place: text from
    files (variant, kernel and GPU names) never reaches the terminal as control sequences."""
    table.title = _safe(table.title)  # type: ignore[assignment]
    table.caption = _safe(table.caption)  # type: ignore[assignment]
    for column in table.columns:
        column.header = _safe(column.header)  # type: ignore[assignment]
        column._cells = [_safe(cell) for cell in column._cells]  # type: ignore[misc]


def natural_width(table: Table) -> int:
    """Columns the table takes with every cell whole; `--wide` prints at least this wide (the terminal
    folds the lines rather than Rich cutting the cells)."""
    console = Console(width=100_000, record=False)
    return Measurement.get(console, console.options, table).maximum


def _least_width(table: Table) -> int:
    """The narrowest the table can be without cutting a cell: its no-wrap columns whole, the others wrapped."""
    if all(column.no_wrap for column in table.columns):
        return natural_width(table)  # Rich measures a no-wrap cell by its longest word, then cuts it
    console = Console(width=100_000, record=False)
    least = Measurement.get(console, console.options, table).minimum
    for column in table.columns:  # a no-wrap column needs its widest cell whole, not its longest word
        if column.no_wrap:
            widths = table._measure_column(console, console.options, column)
            least += widths.maximum - widths.minimum
    return least


def print_table(console: Console, table: Table, wide: bool) -> None:
    """At the console's width, or at the table's own width when that is more (wide, or a console
    narrower than the essential columns): every cell whole, the terminal folds the lines rather
    than Rich cutting the cells (fitted_table has left out the optional columns that did not fit)."""
    make_safe(table)
    own = console.width  # Console.print(width=) cannot exceed the console's own width
    console.width = max(own, natural_width(table) if wide else _least_width(table))
    try:
        console.print(table)
    finally:
        console.width = own
