"""The run tables: result rows grouped into one table per family, size and timing mode, and what
`run`, `suite` and `show` hand their renderer (render.tables). Each row's figures are stored on it
(results.Derived, analysis.derive) before it gets here; nothing here computes them."""

from __future__ import annotations

from dataclasses import dataclass

from gpuprof.analysis.ceilings import Ceilings
from gpuprof.results import Results, Row, size_label
from gpuprof.variants.catalog import Family


@dataclass(frozen=True)
class Table:
    """The rows of one run table, in the order they ran."""

    family: Family
    rows: list[Row]
    baseline: str | None  # the variant its speedups are relative to (the column says which)
    vendor: str | None
    mode: str  # the timing mode its rows ran in
    # How its rate is computed (the family's FORMULA, or the one its results file's families block
    # keeps), printed under the table; "": render.tables asks the registry, else a generic one.
    formula: str = ""

    @property
    def rate_kind(self) -> str:
        return next((r.derived.rate_kind for r in self.rows if r.derived), "bytes")


@dataclass(frozen=True)
class Report:
    """Results as tables, with the ceilings their rows were judged against (None: none are known
    for the results' GPU)."""

    results: Results
    tables: list[Table]
    ceilings: Ceilings | None

    @property
    def failed(self) -> list[Row]:
        return [r for r in self.results.rows if r.failed]


def table_rows(rows: list[Row], default_mode: str = "cold",
               asked: dict[str, int] | None = None) -> dict[tuple[str, str, str], list[Row]]:
    """Rows by (family, size label, timing mode), each group in table order, the groups in the
    order their first rows came. An untimed row is of default_mode (the results' timing policy).
    asked: the size every row was asked to run at in default_mode, where the caller knows it (one
    `run`): its rows are then one table per family, a slow variant's row capped to a smaller size
    (catalog max_size) included; otherwise each row is grouped by the size and mode it ran at."""
    groups: dict[tuple[str, str, str], list[Row]] = {}
    for row in rows:
        if asked is not None:
            key = (row.family, size_label(asked), default_mode)
        else:
            key = (row.family, size_label(row.size), row.timing.mode if row.timing else default_mode)
        groups.setdefault(key, []).append(row)
    return groups
