"""`gpuprof report`'s core: a results file (and optionally a BASE to judge it against) -> what the
report page shows: the run tables with their figures, each table's and the run's geometric-mean
speedups, the sweeps, and the compare gate's verdicts. The page itself is render/report_html.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from gpuprof.analysis.compare import CompareReport, Verdict
from gpuprof.analysis.speedup_summary import Speedups, run_speedups, table_speedups
from gpuprof.analysis.tables import Report, Table
from gpuprof.commands import compare, show
from gpuprof.errors import UsageError
from gpuprof.progress import ProgressFn, tell


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
