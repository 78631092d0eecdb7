"""`gpuprof ncu`'s core: a family's variants under Nsight Compute (one child for all of them,
each alone on failure), the report parsed into rows per variant; or any program, or a saved report."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuprof.commands.target import COMMAND, FAMILY, IMPORT, Target, TargetRules, validate
from gpuprof.errors import CountersNotPermitted, EnvironmentProblem, GpuprofError, InputError, UsageError
from gpuprof.parsers import ncu_csv
from gpuprof.parsers.ncu_csv import NcuAdvice, NcuKernelRow
from gpuprof.parsers.ncu_source import KernelSource
from gpuprof.progress import ProgressFn, tell
from gpuprof.tools import ncu as ncu_tool
from gpuprof.tools.target import LaunchTarget
from gpuprof.variants.sizes import parse_size

if TYPE_CHECKING:
    from gpuprof.analysis.ladder import Rung

DEFAULT_OUT = Path("gpuprof-ncu")
# The --json document's version (docs/ncu-json.md): 2 added every launch's sections and replay passes.
JSON_VERSION = 2
WARMUP_LAUNCHES = 2  # outside the NVTX ranges: ncu profiles only the launch after them
BATCH_TIMEOUT_PER_VARIANT_S = 120.0
# A variant whose manifest says launches_kernel = false (a cudaMemcpyAsync ceiling row).
NO_KERNEL = "its work is a DMA copy, not a kernel: nothing for ncu to profile"
# A whole program: the first launch of each kernel launch configuration (docs/tools.md, "ncu: launch
# filters"). Every profiled launch is replayed once per metric pass, so this is what a program's
# profile costs; one launch is enough because ncu flushes the caches before each pass
# (--cache-control all), so a first launch is not measured colder than a later one. No warm-up is
# skipped by default: a kernel launched once would then not be profiled at all (--launch-skip 1 asks for it).
LAUNCHES_PER_KERNEL = 1

RULES = TargetRules(
    command="ncu", forms=(FAMILY, COMMAND, IMPORT),
    unexpected="unexpected {words!r}; give one family, or '--' before a command to profile",
    import_and_other="--import shows a saved report; leave out the family and the command",
    family_and_command="give a family or '-- COMMAND', not both",
    nothing="name a family (gpuprof ncu matmul), a command (gpuprof ncu -- python x.py) or --import REPORT",
)


@dataclass(frozen=True)
class NcuRequest:
    """What `gpuprof ncu` was asked. The launch filter applies to a program (`-- COMMAND`): a
    family's variants are each profiled at the one launch inside their NVTX range."""

    target: Target
    out_dir: Path = DEFAULT_OUT  # the .ncu-rep reports and ncu's logs
    clock_control: str = "none"
    sections: tuple[str, ...] = ()  # () : the default sections (none with set_name)
    set_name: str | None = None  # --set, e.g. full
    extra_metrics: tuple[str, ...] = ()  # beside the metrics gpuprof always collects
    nvtx_include: tuple[str, ...] = ()
    kernel_regex: str | None = None
    launch_skip: int = 0
    launch_count: int | None = None  # a global count; None: launches_per_kernel of each configuration
    launches_per_kernel: int = LAUNCHES_PER_KERNEL  # 0: every launch
    ncu: str | None = None  # --ncu PATH
    source: bool = False  # --source: per-line stalls and memory (commands.ncu_source)
    ladder: bool = False  # --ladder: the family's hand-written variants in manifest order, the vendor ones last

    @property
    def preset(self) -> ncu_tool.Preset | None:
        """gpuprof's --set (basic, why, full); None for no --set or one of ncu's own set names."""
        return ncu_tool.PRESETS.get(self.set_name or "")

    @property
    def shows_source(self) -> bool:
        """Per-line data is collected and shown: --source, or a preset that includes it."""
        return self.source or (self.preset is not None and self.preset.source)

    def ncu_options(self) -> ncu_tool.NcuOptions:
        """ncu's options (an unknown --clock-control is a UsageError here), without the launch filter."""
        preset = self.preset
        if preset is not None:
            sections, ncu_set = self.sections or preset.sections, preset.ncu_set
        else:
            sections, ncu_set = self.sections or (() if self.set_name else ncu_tool.SECTIONS), self.set_name
        if self.shows_source:  # a set may lack them (ncu's 'full' has them: then they are named twice, harmlessly)
            sections += tuple(s for s in ncu_tool.SOURCE_SECTIONS if s not in sections)
        if self.ladder and ncu_tool.WARP_STATE_SECTION not in sections:  # each rung's top stall
            sections += (ncu_tool.WARP_STATE_SECTION,)
        return ncu_tool.NcuOptions(
            clock_control=self.clock_control, sections=sections,
            metrics=ncu_tool.METRICS + self.extra_metrics, set_name=ncu_set,
            nvtx_include=self.nvtx_include, kernel_regex=self.kernel_regex, import_source=self.shows_source)

    def launch_filter(self) -> dict[str, Any]:
        """NcuOptions' launch filter: a global --launch-count wins; else the first N of each kernel."""
        if self.launch_skip < 0 or self.launches_per_kernel < 0:
            raise UsageError("--launch-skip and --launches-per-kernel must be 0 or more")
        if self.launch_count is not None:
            return {"launch_skip": self.launch_skip, "launch_count": self.launch_count, "per_kernel": False}
        return {"launch_skip": self.launch_skip, "launch_count": self.launches_per_kernel or None, "per_kernel": True}


def execute(request: NcuRequest, progress: ProgressFn | None = None) -> NcuRun:
    """Check the request, then profile the family's variants or the program, or read the report;
    with `source`, each result also carries its kernels' per-line data."""
    run = _profile_or_import(request, progress)
    if not request.shows_source:
        return run
    from gpuprof.commands.ncu_source import with_sources

    return with_sources(run)


def _profile_or_import(request: NcuRequest, progress: ProgressFn | None) -> NcuRun:
    target = request.target
    form = validate(target, RULES)
    options = request.ncu_options()
    if request.ladder and form != FAMILY:
        raise UsageError("--ladder climbs a family's variants: name a family, not --import or '-- COMMAND'")
    if form == IMPORT:
        assert target.import_path is not None
        return import_report(target.import_path, request.ncu)
    if form == COMMAND:
        return profile_command(list(target.command), request.out_dir, replace(options, **request.launch_filter()),
                               request.ncu)
    [(fam, chosen, extra)] = target.select()
    if request.ladder and target.variants is None:
        chosen = [v for v in chosen if not v.vendor] + [v for v in chosen if v.vendor]
    added = {v.name: target.options.cli_args() for v in extra}
    kernel_free = [v for v in chosen if not v.launches_kernel]
    if len(kernel_free) == len(chosen):
        raise UsageError(f"{', '.join(v.name for v in chosen)}: no kernel launched ({NO_KERNEL}); "
                         "choose variants that launch kernels")
    run = profile_family(fam.name, [v.name for v in chosen if v.launches_kernel], parse_size(fam, target.size),
                         request.out_dir, options, request.ncu, target.options.defines(), progress=progress,
                         added=added, locator=fam.locator)
    skipped = {v.name: NcuResult(v.name, None, note=f"not profiled: {NO_KERNEL}") for v in kernel_free}
    by_name = {r.label: r for r in run.results}
    return replace(run, results=[by_name.get(v.name) or skipped[v.name] for v in chosen])


@dataclass
class NcuResult:
    """What ncu said about one variant (or one profiled command): its kernels, or why not."""

    label: str
    report: Path | None
    rows: list[NcuKernelRow] = field(default_factory=list)
    error: str | None = None
    source: list[KernelSource] = field(default_factory=list)  # with --source: one per row (docs/ncu-source.md)
    note: str | None = None  # why a variant has no rows without having failed (it launches no kernel)

    @property
    def advice(self) -> list[NcuAdvice]:
        return [a for row in self.rows for a in row.advice]


@dataclass
class NcuRun:
    family: str | None
    clock_control: str
    results: list[NcuResult]
    reader: str  # "ncu_report module" or "ncu --import CSV"
    launch_filter: str = ""  # which launches were profiled, in words ("" = all that matched)


def ladder(run: NcuRun, request: NcuRequest) -> list[Rung]:
    """The run's variants as rungs, in the run's order, each judged against its manifest's expected_limiter."""
    from gpuprof.analysis.ladder import Step, build

    [(fam, chosen, extra)] = request.target.select()
    by_name = {v.name: v for v in (*fam.variants, *chosen, *extra)}
    steps = []
    for result in run.results:
        if result.note:
            continue  # launches no kernel: not a rung
        variant = by_name.get(result.label)
        stalls: dict[str, float] = {}
        for source in result.source:
            for reason, samples in source.stalls.items():
                stalls[reason] = stalls.get(reason, 0.0) + samples
        steps.append(Step(result.label, result.rows, variant.expected_limiter if variant else None,
                          stalls or None, reference=bool(variant and variant.vendor)))
    return build(steps)


def profile_family(family: str, variants: list[str], size: dict[str, int], out_dir: Path,
                   options: ncu_tool.NcuOptions, ncu: str | None = None, defines: dict[str, int] | None = None,
                   progress: ProgressFn | None = None, added: dict[str, tuple[str, ...]] | None = None,
                   batch: bool = True, locator: str = "") -> NcuRun:
    """added maps a user variant's name to the --add options its child process needs.

    Speed: the family's built-in variants run in ONE child under ONE ncu (one Python + CuPy +
    PyTorch start-up and one CUDA context instead of one per variant), each selected by its own
    NVTX include (several include OR together), and the report's rows are split back per variant
    by the NVTX range they ran in. If that run fails, or leaves a variant without rows, those
    variants run again one per child, so each failure is still reported against its variant."""
    tool = ncu_tool.find_ncu(ncu)
    out_dir.mkdir(parents=True, exist_ok=True)
    added = added or {}
    target_of = {name: LaunchTarget(family, name, size, count=1, warmup=WARMUP_LAUNCHES, defines=defines or {},
                                    add=added.get(name, ()), locator=locator) for name in variants}
    done: dict[str, NcuResult] = {}
    reader = ""
    together = [name for name in variants if not added.get(name)]  # a user's variant always alone
    if batch and len(together) > 1:
        tell(progress, ", ".join(together), "ncu profile", 0, len(variants))
        found, reader = _profile_batch(tool, options, out_dir, family, [target_of[n] for n in together])
        done.update(found)
    for index, name in enumerate(variants):
        if name in done:
            continue
        tell(progress, name, "ncu profile", index, len(variants))
        result, used = _profile_one(tool, options, out_dir, target_of[name])
        done[name] = result
        reader = reader or used
    return NcuRun(family, options.clock_control, [done[name] for name in variants], reader)


def _profile_one(tool: str, options: ncu_tool.NcuOptions, out_dir: Path,
                 target: LaunchTarget) -> tuple[NcuResult, str]:
    """One variant alone in its own child; a failure becomes the variant's error."""
    opts = replace(options, nvtx_include=(target.nvtx_include,))
    base = out_dir / f"{target.family}_{target.variant}"
    try:
        report = ncu_tool.run_profile(ncu_tool.profile_argv(tool, opts, base, target.argv()), base,
                                      base.with_suffix(".log"))
        rows, reader = read_report(report, tool)
    except CountersNotPermitted:
        raise  # no variant can be profiled: stop with exit 3
    except GpuprofError as exc:
        return NcuResult(target.variant, None, error=exc.message), ""
    return NcuResult(target.variant, report, rows), reader


def _profile_batch(tool: str, options: ncu_tool.NcuOptions, out_dir: Path, family: str,
                   targets: list[LaunchTarget]) -> tuple[dict[str, NcuResult], str]:
    """Several variants of one family in one child under one ncu: the results of those that
    came back with rows ({} when the run failed: the caller profiles each alone)."""
    first = targets[0]
    names = [t.variant for t in targets]
    batched = replace(first, variant=",".join(names))  # the launch child takes a comma list
    opts = replace(options, nvtx_include=tuple(t.nvtx_include for t in targets))
    base = out_dir / f"{family}_{len(targets)}_variants"
    try:
        # A batch may take as long as its variants one by one (the same launches and passes).
        timeout_s = ncu_tool.PROFILE_TIMEOUT_S + BATCH_TIMEOUT_PER_VARIANT_S * (len(targets) - 1)
        report = ncu_tool.run_profile(ncu_tool.profile_argv(tool, opts, base, batched.argv()), base,
                                      base.with_suffix(".log"), timeout_s=timeout_s)
        rows, reader = read_report(report, tool)
    except CountersNotPermitted:
        raise
    except GpuprofError:
        return {}, ""  # which variant broke it is found by running each alone
    by_variant = rows_by_variant(rows, family, names)
    return {name: NcuResult(name, report, by_variant[name]) for name in names if by_variant[name]}, reader


def rows_by_variant(rows: list[NcuKernelRow], family: str, variants: list[str]) -> dict[str, list[NcuKernelRow]]:
    """Each row under the variant whose range encloses it: the range pushed right inside the
    family's range (launch_variant's family -> variant nesting), so ranges a library pushes
    further in do not matter. Rows outside every variant's range are dropped."""
    grouped: dict[str, list[NcuKernelRow]] = {name: [] for name in variants}
    for row in rows:
        # gpuprof pushes in the default domain, whose names carry no "domain@" prefix.
        for outer, inner in pairwise(row.nvtx_ranges):
            if outer == family and inner in grouped:
                grouped[inner].append(row)
                break
    return grouped


def profile_command(command: list[str], out_dir: Path, options: ncu_tool.NcuOptions,
                    ncu: str | None = None) -> NcuRun:
    tool = ncu_tool.find_ncu(ncu)
    out_dir.mkdir(parents=True, exist_ok=True)
    base = out_dir / "command"
    report = ncu_tool.run_profile(ncu_tool.profile_argv(tool, options, base, command), base,
                                  out_dir / "command.log")
    rows, reader = read_report(report, tool)
    return NcuRun(None, options.clock_control, group_rows(rows, report), reader, options.describe_filter())


def import_report(report: Path, ncu: str | None = None) -> NcuRun:
    if not report.is_file():
        raise InputError(f"cannot read {report}: no such file")
    tool = None
    try:
        tool = ncu_tool.find_ncu(ncu)
    except GpuprofError:
        pass  # the ncu_report module reads reports without ncu
    rows, reader = read_report(report, tool)
    return NcuRun(None, "as recorded", group_rows(rows, report), reader)


def group_rows(rows: list[NcuKernelRow], report: Path) -> list[NcuResult]:
    """One result per innermost NVTX range (a gpuprof variant), else per kernel name."""
    groups: dict[str, list[NcuKernelRow]] = {}
    for row in rows:
        label = row.nvtx_ranges[-1].rsplit("@", 1)[-1] if row.nvtx_ranges else row.kernel_name
        groups.setdefault(label, []).append(row)
    return [NcuResult(label, report, members) for label, members in groups.items()]


def read_report(report: Path, ncu: str | None) -> tuple[list[NcuKernelRow], str]:
    """Rows from a .ncu-rep: NVIDIA's ncu_report module where installed, else ncu's own CSV export."""
    from gpuprof.parsers import ncu_rep

    try:
        return ncu_tool.read_report_isolated(report), "ncu_report module"
    except ncu_rep.NcuReportUnavailable:
        if ncu is None:
            raise EnvironmentProblem(
                f"reading {report.name} needs NVIDIA's ncu_report module (pip install ncu-report) or ncu on PATH"
            ) from None
    raw = ncu_csv.parse_raw_csv(ncu_tool.run_import(ncu, report, "raw"), report)
    advice = ncu_csv.parse_rule_advice(ncu_tool.run_import(ncu, report, "details"), report)
    by_id: dict[int, list[NcuAdvice]] = {}
    for item in advice:
        by_id.setdefault(item.kernel_id, []).append(item)
    rows = [replace(row, advice=tuple(by_id.get(row.id, ()))) for row in raw]
    return rows, "ncu --import CSV"


def to_dict(run: NcuRun) -> dict:
    """The run as JSON-ready data, full kernel names: one entry per distinct kernel and per launch."""
    from dataclasses import asdict

    from gpuprof.analysis.kernel_summary import summarize_kernels

    rows = [r for result in run.results for r in result.rows]
    launches = [{"label": result.label, **{k: v for k, v in asdict(r).items() if k not in ("metrics", "units")}}
                for result in run.results for r in result.rows]
    kernels = [{k: v for k, v in asdict(s).items() if k != "rows"} for s in summarize_kernels(rows)]
    return {"family": run.family, "clock_control": run.clock_control, "reader": run.reader,
            "launch_filter": run.launch_filter, "kernels": kernels, "launches": launches,
            "errors": {r.label: r.error for r in run.results if r.error},
            "reports": sorted({str(r.report) for r in run.results if r.report})}
