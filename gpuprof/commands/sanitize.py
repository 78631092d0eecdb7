"""`gpuprof sanitize`'s core: variants (or a user's command) under compute-sanitizer's tools,
findings parsed, counts cross-checked, places mapped back to source lines.

Speed: a course-wide run starts one child per family and tool (one Python start-up, one set of
imports and one CUDA context for all of a family's variants) and runs a batch's variants one by one
alone only when the batch is not clean, so every finding is still pinned to its variant. Each
child's wall time is recorded in gpuprof's cache (sanitize_times); the next run starts the slowest
children first and splits the few that would otherwise finish last (sanitize_plan). racecheck
checks shared memory only, so variants whose kernels use none (per ptxas) skip it.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Callable, Collection
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from itertools import pairwise
from pathlib import Path

from gpuprof import gpu
from gpuprof.commands import sanitize_times
from gpuprof.commands.sanitize_plan import BATCH_SIZE, SanitizeJob, Skipped, plan_jobs, schedule
from gpuprof.commands.sanitize_skips import declared_skips, racecheck_skips
from gpuprof.commands.sanitize_sources import SourceFinder, SourceLine, python_scripts
from gpuprof.commands.target import COMMAND, FAMILY, IMPORT, Target, TargetRules, validate
from gpuprof.errors import EnvironmentProblem, GpuprofError, ParseError, UsageError
from gpuprof.parsers.sanitizer_log import (
    SanitizerFinding,
    SanitizerSite,
    SanitizerSummary,
    SanitizerToolError,
    parse_log,
)
from gpuprof.progress import DONE, START, ProgressFn, tell
from gpuprof.tools import sanitizer as tool
from gpuprof.tools.target import LaunchTarget
from gpuprof.variants import constraints
from gpuprof.variants.catalog import Family, Variant, kernels_root
from gpuprof.variants.sizes import parse_size

JOBS_PER_GPU = 16
DEFAULT_OUT = Path("gpuprof-sanitize")

RULES = TargetRules(
    command="sanitize", forms=(FAMILY, COMMAND, IMPORT), one_family=False,
    unexpected="unexpected argument(s) {words}; a program goes after --, e.g. gpuprof sanitize -- python app.py",
    import_and_other="--import reads a saved log; leave out the families and the command",
    family_and_command="give families or '-- COMMAND', not both",
    nothing=None,  # every family
)


@dataclass
class SanitizeResult:
    """One (variant or command, tool) run: what was printed, what the tool counted, and whether
    the two agree; or why the run could not be judged."""

    label: str
    tool: str
    findings: list[SanitizerFinding] = field(default_factory=list)
    error_count: int | None = None  # the tool's own count (racecheck: errors); None: no summary line
    exit_code: int | None = None
    error: str | None = None  # could not be judged
    log: Path | None = None
    warning_count: int | None = None  # racecheck
    truncated: bool = False  # the tool counted more than it printed
    mismatch: str | None = None  # why the printed records and the tool's count differ
    notes: tuple[str, ...] = ()  # e.g. racecheck's "Maximum number of hazards reached"
    sources: dict[tuple[str, int], SourceLine] = field(default_factory=dict)
    batched_with: int = 0  # other variants that shared this clean run's child process
    seconds: float | None = None  # wall time of the child that gave this result (a batch's, shared)

    @property
    def counted(self) -> int | None:
        """Everything the tool counted (racecheck: errors and warnings)."""
        if self.error_count is None:
            return None
        return self.error_count + (self.warning_count or 0)

    @property
    def clean(self) -> bool:
        """Judged, and nothing found: a run without a summary line is not clean."""
        return self.error is None and not self.findings and self.error_count == 0 and not self.truncated

    def source_of(self, finding: SanitizerFinding | SanitizerSite) -> SourceLine | None:
        """The source line of a finding's place, or of one of its sites."""
        if finding.file is None or finding.line is None:
            return None
        return self.sources.get((finding.file, finding.line))


@dataclass(frozen=True)
class ChildTime:
    """One sanitizer child's wall time: 'mnist/compiled initcheck' or 'mnist (3 variants) initcheck'."""

    child: str
    seconds: float


@dataclass
class SanitizeRun:
    results: list[SanitizeResult]
    skipped: list[Skipped] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    wall_seconds: float | None = None  # from choosing the variants (triage included) to the last child's end
    longest_child: ChildTime | None = None

    def timing_line(self) -> str | None:
        """'wall 28.4 s; longest child: mnist initcheck 19.1 s', so a measurement explains itself."""
        if self.wall_seconds is None:
            return None
        line = f"wall {self.wall_seconds:.1f} s"
        if self.longest_child is not None:
            line += f"; longest child: {self.longest_child.child} {self.longest_child.seconds:.1f} s"
        return line


@dataclass(frozen=True)
class SanitizeRequest:
    """What `gpuprof sanitize` was asked; no families (and no command or --import) means every family."""

    target: Target
    tools: tuple[str, ...] = tool.TOOLS
    out_dir: Path = DEFAULT_OUT  # the sanitizer logs
    sanitizer: str | None = None  # --sanitizer PATH
    leak_check: bool = False
    jobs: int | None = None  # sanitizer processes at a time; None: default_jobs()
    no_skip: bool = False  # every tool on every variant (no triage, no vendor or graph skips)


def execute(request: SanitizeRequest, progress: ProgressFn | None = None) -> SanitizeRun:
    """Check the request, then sanitize the variants or the program, or read the log. Reports START
    when the sanitizer runs begin, then DONE for each finished (variant batch, tool) or (program, tool) run."""
    if request.jobs is not None and request.jobs < 1:
        raise UsageError(f"--jobs {request.jobs}: give at least 1")
    unknown = [t for t in request.tools if t not in tool.TOOLS]
    if unknown or not request.tools:
        raise UsageError(f"unknown --tool '{','.join(unknown)}'; choose from: {', '.join(tool.TOOLS)}")
    target = request.target
    form = validate(target, RULES)
    tools = list(request.tools)
    if form == IMPORT:
        assert target.import_path is not None
        if request.tools != tool.TOOLS:
            raise UsageError("--tool does nothing with --import: the log says which tool wrote it")
        return SanitizeRun([import_log(target.import_path)])
    if form == COMMAND:
        return sanitize_command(list(target.command), tools, request.out_dir, request.sanitizer, request.leak_check,
                                progress=progress)
    began = time.monotonic()  # the closing line's wall time includes the racecheck triage below
    chosen = chosen_variants(target)
    jobs = request.jobs or default_jobs()
    no_shared_memory: set[str] = set()
    notes: list[str] = []
    if not request.no_skip and "racecheck" in tools:
        no_shared_memory, notes = racecheck_skips(chosen, jobs)
    skip = {} if request.no_skip else declared_skips(chosen, tools, no_shared_memory=no_shared_memory)
    run = sanitize_targets(launch_targets(chosen, target), tools, request.out_dir, request.sanitizer,
                           leak_check=request.leak_check, jobs=jobs, progress=progress, skip=skip,
                           times_file=sanitize_times.default_path(), alone=library_variants(chosen))
    run.notes += notes
    run.wall_seconds = round(time.monotonic() - began, 2)
    return run


def chosen_variants(target: Target) -> list[tuple[Family, list[Variant]]]:
    """(family, variants) per family; with --add or --kernels-dir and no --variants, only the user's."""
    selection = target.select()
    if target.options.brings_variants and target.variants is None:
        return [(fam, [v for v in chosen if v.user]) for fam, chosen, _ in selection]
    return [(fam, chosen) for fam, chosen, _ in selection]


def library_variants(chosen: list[tuple[Family, list[Variant]]]) -> set[str]:
    """Labels of the variants that load a library when they start (vendor rows, Python variants:
    PyTorch, torch.compile, Triton, CuPy's CUB): the slow ones, each in a child of its own when
    their family's child is split."""
    return {f"{fam.name}/{v.name}" for fam, picked in chosen for v in picked if v.vendor or v.is_python}


def launch_targets(chosen: list[tuple[Family, list[Variant]]], target: Target) -> list[LaunchTarget]:
    """Each variant's child: at --size, else its family's middle check size; plain allocations (memory
    pools would hide out-of-bounds accesses); -D for CUDA variants, --add for the user's."""
    add_args = target.options.cli_args()
    defines = target.options.defines()
    out = []
    for fam, picked in chosen:
        size = parse_size(fam, target.size) if target.size else sanitize_size(list(fam.check_sizes))
        out += [LaunchTarget(fam.name, v.name, size if target.size else allowed_size(fam, v, size, defines),
                             plain_allocations=True, locator=fam.locator, defines=defines if v.is_cuda else {},
                             add=add_args if v.user else ()) for v in picked]
    return out


def allowed_size(fam: Family, variant: Variant, size: dict[str, int], defines: dict[str, int]) -> dict[str, int]:
    """The check size moved to the nearest size the variant's constraints allow (as `run` checks it:
    a tiled kernel that needs M % 128 == 0 is sanitized at 384 rather than refused at 257); the size
    as it is when none is near (the child then says which constraint it breaks)."""
    requires = fam.requires(variant)
    if not requires:
        return size
    effective = variant.with_defines(defines) if variant.is_cuda else variant  # -D applies to CUDA variants
    return constraints.nearest_allowed(size, requires, fam.dims, effective.defines) or size


def sanitize_size(sizes: list[dict[str, int]]) -> dict[str, int]:
    """The middle check size by element count: awkward, but small enough for racecheck and
    initcheck, which slow a kernel down a hundredfold or more."""
    def elements(size: dict[str, int]) -> int:
        total = 1
        for value in size.values():
            total *= max(value, 1)  # a switch (0 or 1) is no extent
        return total

    ordered = sorted(sizes, key=elements)
    return ordered[(len(ordered) - 1) // 2] if len(ordered) > 2 else ordered[-1]


def default_jobs(cpu_count: int | None = None, gpu_count: int | None = None) -> int:
    """One sanitizer process per CPU, up to 16 per GPU.

    Each child is host-bound: Python start-up and imports, then the sanitizer instrumenting and
    checking each access on the CPU side, while the course's kernels at check sizes keep the GPU
    busy for milliseconds; so the CPUs, not the GPU, run out first (on the 16-core H100 host 16
    jobs were no slower than 8). The per-GPU cap bounds the CUDA contexts sharing one GPU's memory
    (some hundreds of MiB each)."""
    cpus = cpu_count if cpu_count is not None else (os.cpu_count() or 1)
    if gpu_count is None:
        try:
            gpu_count = gpu.visible_gpu_count()
        except EnvironmentProblem:  # no driver to ask: assume one GPU; the children will say if there is none
            gpu_count = 1
    return max(1, min(cpus, JOBS_PER_GPU * max(1, gpu_count)))


# ---------------------------------------------------------------------------------------------
# course-wide runs


def sanitize_targets(targets: list[LaunchTarget], tools: list[str], out_dir: Path, sanitizer: str | None = None,
                     progress: ProgressFn | None = None, leak_check: bool = False, jobs: int = 1,
                     skip: dict[tuple[str, str], str] | None = None, batch_size: int = BATCH_SIZE,
                     times_file: Path | None = None, alone: Collection[str] = frozenset()) -> SanitizeRun:
    """Every target under every tool, `jobs` sanitizer processes at a time (they share the GPU;
    each is slow on the host side). Results come back in target, tool order. With `times_file`,
    the children are ordered (and slow ones split, `alone` variants by themselves) by the times
    recorded there, and this run's times are added to it."""
    planned, skipped = plan_jobs(targets, tools, skip, batch_size)
    recorded = sanitize_times.load(times_file) if times_file is not None else sanitize_times.ChildTimes()
    planned = schedule(planned, recorded, jobs, alone)
    tell(progress, "", START, 0, len(planned))
    exe = tool.find_sanitizer(sanitizer)
    out_dir.mkdir(parents=True, exist_ok=True)
    total = [len(planned)]
    done = [0]
    finished: list[tuple[SanitizeJob, float]] = []
    lock = threading.Lock()

    def one(job: SanitizeJob) -> list[SanitizeResult]:
        first = job.targets[0]
        argv = replace(first, variant=",".join(t.variant for t in job.targets)).argv()
        more = f"+{len(job.targets) - 1}" if len(job.targets) > 1 else ""
        log = out_dir / f"{first.family}_{first.variant}{more}_{job.tool}.log"
        started = time.monotonic()
        result = run_one(exe, job.tool, argv, job.label, log, leak_check)
        result.seconds = round(time.monotonic() - started, 2)  # where a run's wall time goes, in its JSON
        with lock:
            finished.append((job, result.seconds))
            done[0] += 1
            tell(progress, f"{job.label} {job.tool}", DONE, done[0] - 1, total[0])
        return [result]

    def split(job: SanitizeJob, result: SanitizeResult) -> list[SanitizeJob]:
        return [] if result.clean or len(job.targets) == 1 else [SanitizeJob((t,), job.tool) for t in job.targets]

    began = time.monotonic()
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        try:
            first_pass = list(pool.map(one, planned))
            again = [(job, single) for job, (result,) in zip(planned, first_pass) for single in split(job, result)]
            total[0] += len(again)
            second_pass = list(pool.map(one, [single for _, single in again]))
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)  # Ctrl-C: start nothing more
            raise
    wall = round(time.monotonic() - began, 2)
    notes = []
    if times_file is not None and finished:
        problem = sanitize_times.save(times_file, recorded.merged((job.key, seconds) for job, seconds in finished))
        notes += [problem] if problem else []
    by_pair: dict[tuple[str, str], SanitizeResult] = {}
    for job, (result,) in zip(planned, first_pass):
        if result.clean or len(job.targets) == 1:
            for target in job.targets:
                label = f"{target.family}/{target.variant}"
                by_pair[(label, job.tool)] = replace(result, label=label, batched_with=len(job.targets) - 1)
    for (_, single), (result,) in zip(again, second_pass):
        by_pair[(single.label, single.tool)] = result
    ordered = [by_pair[(f"{t.family}/{t.variant}", name)] for t in targets for name in tools
               if (f"{t.family}/{t.variant}", name) in by_pair]
    _locate(ordered, lambda r: _target_dirs(next(t for t in targets if f"{t.family}/{t.variant}" == r.label)))
    longest = max(finished, key=lambda pair: pair[1], default=None)
    return SanitizeRun(ordered, skipped, notes, wall_seconds=wall,
                       longest_child=ChildTime(longest[0].short, longest[1]) if longest else None)


def _target_dirs(target: LaunchTarget) -> list[Path]:
    root = kernels_root()
    dirs = [root / target.family]
    for option, value in pairwise(target.add):
        if option == "--add":
            path = Path(value.rsplit(":", 1)[0] if not Path(value).is_file() else value)
            dirs.append(path.parent)
        elif option == "--kernels-dir":
            dirs.append(Path(value))
    return [*dirs, root.parent, Path.cwd()]


# ---------------------------------------------------------------------------------------------
# a user's command


def sanitize_command(command: list[str], tools: list[str], out_dir: Path, sanitizer: str | None = None,
                     leak_check: bool = False, progress: ProgressFn | None = None) -> SanitizeRun:
    """The user's program under each tool, with pools off and CuPy's compiled sources kept, so
    findings in its NVRTC kernels map back to their source lines."""
    label = " ".join(command)
    tell(progress, label, START, 0, len(tools))
    exe = tool.find_sanitizer(sanitizer)
    out_dir.mkdir(parents=True, exist_ok=True)
    results = []
    began = time.monotonic()
    for index, name in enumerate(tools, 1):
        cache = fresh_dir(out_dir / f"cupy-cache-{name}")
        env = tool.child_env(cupy_cache_dir=cache)
        started = time.monotonic()
        result = run_one(exe, name, command, label, out_dir / f"command_{name}.log", leak_check, env=env)
        result.seconds = round(time.monotonic() - started, 2)
        finder = SourceFinder([cache, Path.cwd()], python_scripts(command))
        _locate([result], lambda r: [], finder)
        results.append(result)
        tell(progress, name, DONE, index - 1, len(tools))
    slowest = max(results, key=lambda r: r.seconds or 0.0, default=None)
    return SanitizeRun(results, wall_seconds=round(time.monotonic() - began, 2),
                       longest_child=ChildTime(slowest.tool, slowest.seconds or 0.0) if slowest else None)


def fresh_dir(path: Path) -> Path:
    """An empty folder (CuPy saves a kernel's source only when it compiles it, not on a cache hit)."""
    from gpuprof.files import own_folder

    shutil.rmtree(own_folder(path))  # a link is refused before anything is deleted
    path.mkdir()
    return path


# ---------------------------------------------------------------------------------------------
# one run, and reading logs


def import_log(path: Path, tool_name: str | None = None) -> SanitizeResult:
    from gpuprof.files import read_text
    from gpuprof.parsers.sanitizer_log import load_xml

    text = read_text(path, "sanitizer log")
    summary = load_xml(path, tool_name) if text.lstrip().startswith("<?xml") else parse_log(text, path, tool_name)
    result = _from_summary(path.name, summary, None, path)
    _locate([result], lambda r: [], SourceFinder([path.parent, Path.cwd()]))
    return result


def run_one(exe: str, name: str, target: list[str], label: str, log: Path, leak_check: bool = False,
            env: dict[str, str] | None = None) -> SanitizeResult:
    try:
        code, text = tool.run_tool(tool.sanitizer_argv(exe, name, target, leak_check), log, env=env)
    except GpuprofError as exc:  # a timeout: this variant hangs under the tool
        return SanitizeResult(label, name, error=exc.message, log=log)
    try:
        summary = parse_log(text, log, name)
    except (ParseError, SanitizerToolError) as exc:
        return SanitizeResult(label, name, exit_code=code, error=f"unreadable sanitizer output: {exc}", log=log)
    result = _from_summary(label, summary, code, log)
    if code not in (0, tool.FINDINGS_EXIT_CODE) and not result.findings:
        tail = " ".join(text.strip().splitlines()[-2:])[-200:]
        result.error = f"the program failed under {name} (exit {code}): {tail}"
    elif result.error_count is None and not result.findings:
        result.error = f"{name} printed no summary line, so the run did not finish and is not judged"
    return result


def _from_summary(label: str, summary: SanitizerSummary, code: int | None, log: Path | None) -> SanitizeResult:
    return SanitizeResult(label, summary.tool, list(summary.findings), summary.error_count, code, log=log,
                          warning_count=summary.warning_count, truncated=summary.truncated,
                          mismatch=summary.mismatch, notes=summary.notes)


def _locate(results: list[SanitizeResult], dirs_of: Callable[[SanitizeResult], list[Path]],
            finder: SourceFinder | None = None) -> None:
    for result in results:
        places: set[tuple[str, int]] = set()
        for f in result.findings:
            spots: list[SanitizerFinding | SanitizerSite] = [f, *f.sites]
            for where in spots:  # a race's every side: the write and the read
                if where.file and where.line is not None:
                    places.add((where.file, where.line))
        if not places:
            continue
        look = finder or SourceFinder(dirs_of(result))
        for file, line in places:
            found = look.locate(file, line)
            if found is not None:
                result.sources[(file, line)] = found
