"""`gpuprof report`'s core: a results file (and optionally a BASE to judge it against) -> what the
report page shows: the run tables with their figures, each table's and the run's geometric-mean
speedups, the sweeps, and the compare gate's verdicts. The page itself is render/report_html.py."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path

from gpuprof.analysis import derive
from gpuprof.analysis.compare import CompareReport, Verdict
from gpuprof.analysis.speedup_summary import Speedups, run_speedups, table_speedups
from gpuprof.analysis.tables import Report, Table
from gpuprof.commands import compare, show
from gpuprof.errors import UsageError
from gpuprof.progress import ProgressFn, tell
from gpuprof.results import Row


@dataclass(frozen=True)
class ReportRequest:
    results: Path
    base: Path | None = None


@dataclass
class StoryReport:
    """Everything the page shows."""

    path: Path
    report: Report  # the tables, figures derived with the file's GPU's ceilings
    speedups: dict[int, Speedups]  # by index into report.tables
    run: Speedups
    gate: CompareReport | None = None
    base: Path | None = None
    verdicts: dict[str, Verdict] = field(default_factory=dict)  # by row id

    def families(self) -> dict[str, list[Table]]:
        """The tables of each family, in the order the families first ran."""
        grouped: dict[str, list[Table]] = {}
        for table in self.report.tables:
            grouped.setdefault(table.family.name, []).append(table)
        return grouped


def execute(request: ReportRequest, progress: ProgressFn | None = None) -> StoryReport:
    if request.base is not None and request.base.resolve() == request.results.resolve():
        raise UsageError(f"--base {request.base} is the results file itself; give an earlier run")
    tell(progress, str(request.results), "load", 0, 2)
    report = show.show(request.results)
    report = Report(report.results, capped_into_their_tables(report.tables), report.ceilings)
    if not report.results.rows:
        raise UsageError(f"{request.results} holds no rows to report")
    speedups = {index: table_speedups(table) for index, table in enumerate(report.tables)}
    story = StoryReport(request.results, report, speedups, run_speedups(report.tables))
    if request.base is not None:
        tell(progress, str(request.base), "compare", 1, 2)
        gate = compare.execute(compare.CompareRequest(bases=(request.base,), new=request.results))
        story.gate, story.base = gate, request.base
        story.verdicts = {v.row_id: v for v in gate.verdicts}
    return story


def capped_into_their_tables(tables: list[Table]) -> list[Table]:
    """A slow variant runs at a capped size (catalog max_size: vecadd one_thread at 65536 when the
    rest run 2^28), so a results file makes it a table of its own, with no baseline to compare with.
    The page puts such a table back into the family's table it was capped from: the one of the same
    mode with the most rows, none of its variants, and every dimension at least as large. Speedups
    are rate ratios, fair across sizes, and are stored again for the joined table."""
    kept: list[Table] = []
    for table in sorted(tables, key=lambda t: -len(t.rows)):
        home = next((k for k in kept if _capped_from(table, k)), None)
        if home is None:
            kept.append(table)
            continue
        index = kept.index(home)
        rows = sorted(home.rows + table.rows, key=lambda r: _order(r, home, table))
        names = {r.variant for r in rows}
        family = home.family
        baseline = family.baseline if family.baseline in names else None
        vendor = family.vendor_reference if family.vendor_reference in names else None
        derive.speedups(rows, baseline, vendor)
        kept[index] = replace(home, rows=rows, baseline=baseline, vendor=vendor)
    return sorted(kept, key=lambda t: tables.index(next(o for o in tables if o.rows[0] in t.rows)))


def _capped_from(small: Table, big: Table) -> bool:
    if small.family.name != big.family.name or small.mode != big.mode:
        return False
    if {r.variant for r in small.rows} & {r.variant for r in big.rows}:
        return False
    big_size = max((r.size for r in big.rows), key=lambda size: math.prod(size.values()))
    return all(set(r.size) == set(big_size) and all(r.size[k] <= big_size[k] for k in big_size)
               for r in small.rows)


def _order(row: Row, home: Table, joined: Table) -> tuple[int, int]:
    """The family's catalogue order where it knows the variant, else the order the rows ran."""
    names = list(home.family.variant_names)
    return (names.index(row.variant) if row.variant in names else len(names),
            (home.rows + joined.rows).index(row))
