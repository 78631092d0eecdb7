"""`gpuprof profile -- COMMAND`: the timeline first (nsys, or the PyTorch profiler), then Nsight
Compute on only the kernels that take most of the GPU time: where the time goes, then why."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from gpuprof.analysis.kernel_summary import summarize_kernels
from gpuprof.commands import ncu as ncu_core
from gpuprof.commands import nsys as nsys_core
from gpuprof.commands import nsys_results
from gpuprof.commands.target import COMMAND, Target, TargetRules, validate
from gpuprof.errors import CountersNotPermitted, GpuprofError, NoKernelsProfiled, UsageError
from gpuprof.parsers.ncu_metrics import kernel_base_name
from gpuprof.parsers.nsys_stats import NsysKernelSummary
from gpuprof.progress import ProgressFn, tell
from gpuprof.tools import nsys as nsys_tool
from gpuprof.tools.ncu import NcuOptions

DEFAULT_OUT = Path("gpuprof-profile")
COVER_PCT = 80.0  # profile the largest kernels until they hold this share of the GPU time...
MAX_KERNELS = 5  # ...but never more than this many distinct kernels
JSON_SCHEMA = 1

RULES = TargetRules(
    command="profile", forms=(COMMAND,),
    unexpected="unexpected argument(s) {words}; put the program after --, e.g. gpuprof profile -- python app.py",
    import_and_other="gpuprof profile takes only a program after --",
    family_and_command="gpuprof profile takes only a program after --",
    nothing="give the program to profile after --, e.g. gpuprof profile -- python train.py",
)


@dataclass(frozen=True)
class ProfileRequest:
    target: Target  # a program after --
    out_dir: Path = DEFAULT_OUT
    cover_pct: float = COVER_PCT
    max_kernels: int = MAX_KERNELS
    launch_skip: int = 0
    launches_per_kernel: int = ncu_core.LAUNCHES_PER_KERNEL  # under ncu, per kernel launch configuration
    nsys: str | None = None
    ncu: str | None = None
    timeout_s: float = nsys_tool.PROFILE_TIMEOUT_S


@dataclass(frozen=True)
class ProfileReport:
    command: tuple[str, ...]
    timeline: nsys_results.NsysProfile
    top: tuple[NsysKernelSummary, ...]  # the kernels chosen for ncu, largest total first
    covered_pct: float  # their share of the timeline's GPU kernel time
    kernel_regex: str
    ncu: ncu_core.NcuRun | None = None
    ncu_problem: GpuprofError | None = None  # why there is no ncu part (the timeline is still shown)


def execute(request: ProfileRequest, progress: ProgressFn | None = None) -> ProfileReport:
    """The timeline of the program, then ncu on the kernels that hold most of its GPU time. Reports
    two steps, "timeline" and "ncu", about the program."""
    validate(request.target, RULES)
    _check_numbers(request)
    command = request.target.command
    label = " ".join(command)
    tell(progress, label, "timeline", 0, 2)
    timeline = nsys_core.execute(nsys_core.NsysRequest(Target(command=command), out_dir=request.out_dir / "timeline",
                                                       nsys=request.nsys, timeout_s=request.timeout_s))
    (summary,) = timeline.summaries
    top = choose_top(summary.kernels, request.cover_pct, request.max_kernels)
    if not top:
        raise NoKernelsProfiled(f"the timeline of {label} holds no CUDA kernels"
                                + (f" ({summary.error})" if summary.error else ""))
    covered = sum(k.time_pct for k in top)
    regex = kernel_regex([k.name for k in top])
    options = NcuOptions(kernel_regex=regex, launch_skip=request.launch_skip,
                         launch_count=request.launches_per_kernel or None, per_kernel=True)
    tell(progress, label, "ncu", 1, 2)
    try:
        run = ncu_core.profile_command(list(command), request.out_dir / "ncu", options, request.ncu)
    except CountersNotPermitted:
        raise
    except GpuprofError as exc:  # no ncu here, or it failed: the timeline alone is still an answer
        return ProfileReport(command, timeline, top, covered, regex, ncu_problem=exc)
    return ProfileReport(command, timeline, top, covered, regex, ncu=run)


def _check_numbers(r: ProfileRequest) -> None:
    if not 0 < r.cover_pct <= 100:
        raise UsageError(f"--cover must be a percentage in (0, 100], got {r.cover_pct:g}")
    if r.max_kernels < 1 or r.launch_skip < 0 or r.launches_per_kernel < 0:
        raise UsageError("--top must be 1 or more; --launch-skip and --launches-per-kernel 0 or more")


def choose_top(kernels: tuple[NsysKernelSummary, ...] | None, cover_pct: float,
               limit: int) -> tuple[NsysKernelSummary, ...]:
    """The largest kernels, by total time, until they cover `cover_pct` % of it (at most `limit`)."""
    chosen: list[NsysKernelSummary] = []
    for k in sorted(kernels or (), key=lambda k: -k.total_ns):
        if len(chosen) >= limit or sum(c.time_pct for c in chosen) >= cover_pct:
            break
        chosen.append(k)
    return tuple(chosen)


def kernel_regex(names: list[str]) -> str:
    """ncu's `-k regex:` matches the bare function name (--kernel-name-base function; docs/tools.md,
    "ncu: launch filters")."""
    bases = sorted(dict.fromkeys(kernel_base_name(n) for n in names))
    return "^(" + "|".join(re.escape(b) for b in bases) + ")$"


def to_dict(report: ProfileReport) -> dict[str, Any]:
    """The report as JSON-ready data: full kernel names, times in ns."""
    rows = [r for result in (report.ncu.results if report.ncu else []) for r in result.rows]
    kernels = []
    for s in summarize_kernels(rows):
        data = {k: v for k, v in asdict(s).items() if k not in ("rows", "advice")}
        data["advice"] = [asdict(a) for a in s.advice]
        kernels.append(data)
    return {
        "gpuprof_profile_schema": JSON_SCHEMA,
        "command": list(report.command),
        "timeline": nsys_results.to_dict(report.timeline),
        "timeline_source": report.timeline.source,  # "nsys", or "torch" (the PyTorch-profiler fallback)
        "top_kernels": [k.name for k in report.top],
        "covered_pct": report.covered_pct,
        "ncu_kernel_regex": report.kernel_regex,
        "ncu_kernels": kernels,
        "ncu_problem": report.ncu_problem.message if report.ncu_problem else None,
    }
