"""Library warnings in gpuprof's words: the TF32 one as a footnote (†) of the rows it affects, once
per table; any other once, at the end of the run, with the rows that raised it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from gpuprof.measure.library_warnings import is_tf32_off
from gpuprof.results import Row

TF32_MARK = "†"


def tf32_off(row: Row) -> bool:
    """PyTorch warned, while the row's work ran, that TF32 tensor cores were available but off."""
    return any(is_tf32_off(w) for w in row.warnings)


def tf32_footnote(rows: Sequence[Row]) -> str | None:
    """'† PyTorch warned that TF32 tensor cores were available but off: this row ran in full FP32, ...'
    for a table whose marked rows are `rows`; None when none is."""
    marked = [r for r in rows if tf32_off(r)]
    if not marked:
        return None
    which = "this row" if len(marked) == 1 else "these rows"
    asked = all(r.precision == "fp32" for r in marked)
    tail = (", the precision it is judged at (fp32)" if len(marked) == 1 else
            ", the precision they are judged at (fp32)") if asked else ""
    return f"{TF32_MARK} PyTorch warned that TF32 tensor cores were available but off: {which} ran in full FP32{tail}."


def other_warning_lines(rows: Iterable[Row], outside: Sequence[Mapping[str, str]] = ()) -> list[str]:
    """Every library warning but TF32's, each once: the rows that raised it (outside: ones raised
    outside any row's work, by the run itself)."""
    raised: dict[tuple[str, str, str], list[str]] = {}
    for row in rows:
        for kept in row.warnings:
            if not is_tf32_off(kept):
                raised.setdefault(_key(kept), []).append(row.id)
    for warning in outside:
        if not is_tf32_off(warning):
            raised.setdefault(_key(warning), [])
    if not raised:
        return []
    lines = ["library warnings (each once):"]
    for (library, category, message), ids in raised.items():
        where = ""
        if ids:
            more = len(ids) - 1
            where = f" ({ids[0]}" + (f" and {more} more row{'s' if more > 1 else ''}" if more else "") + ")"
        lines.append(f"  {library} {category}: {message}{where}")
    return lines


def _key(warning: Mapping[str, str]) -> tuple[str, str, str]:
    return warning.get("library", "?"), warning.get("category", "Warning"), warning.get("message", "")
