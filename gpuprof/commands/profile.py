"""`gpuprof profile -- COMMAND`: the timeline first (nsys, or the PyTorch profiler), then Nsight
Compute on only the kernels that matter: the user's own kernels first, then the library kernels
that take most of the GPU time (analysis.kernel_choice); where the time goes, then why. `--kernel`
and `--nvtx` narrow the ncu stage as on `gpuprof ncu -- COMMAND`."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from gpuprof.analysis.kernel_choice import Choice, choose
from gpuprof.analysis.kernel_origin import is_user
from gpuprof.analysis.kernel_summary import summarize_kernels
from gpuprof.commands import ncu as ncu_core
from gpuprof.commands import nsys as nsys_core
from gpuprof.commands import nsys_results
from gpuprof.commands.target import COMMAND, Target, TargetRules, validate
from gpuprof.errors import CountersNotPermitted, GpuprofError, NoKernelsProfiled, UsageError
from gpuprof.parsers.ncu_metrics import kernel_base_name
from gpuprof.parsers.nsys_stats import NsysKernelSummary, NsysNvtxSummary
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
    kernel_filter: str | None = None  # --kernel REGEX: only the timeline's kernels whose name it matches
    nvtx: str | None = None  # --nvtx RANGE: ncu profiles the kernels launched inside this NVTX range


@dataclass(frozen=True)
class ProfileReport:
    command: tuple[str, ...]
    timeline: nsys_results.NsysProfile
    top: tuple[NsysKernelSummary, ...]  # the kernels chosen for ncu, largest total first
    covered_pct: float  # their share of the timeline's GPU kernel time
    kernel_regex: str  # what ncu's --kernel-name got ("" for none)
    ncu: ncu_core.NcuRun | None = None
    ncu_problem: GpuprofError | None = None  # why there is no ncu part (the timeline is still shown)
    user_kernels: frozenset[str] = frozenset()  # the names in `top` that are the user's own (kernel_origin)
    kernel_filter: str | None = None
    nvtx: tuple[str, ...] = ()  # the NVTX include expressions ncu got (any one matches)
    notes: tuple[str, ...] = ()


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
    if not summary.kernels:
        raise NoKernelsProfiled(f"the timeline of {label} holds no CUDA kernels"
                                + (f" ({summary.error})" if summary.error else ""))
    candidates = matching(summary.kernels, request.kernel_filter)
    notes: list[str] = []
    nvtx: tuple[str, ...] = ()
    if request.nvtx is not None:  # the timeline cannot tell which kernels run inside the range: ncu does
        nvtx, note = nvtx_expressions(request.nvtx, summary.nvtx, checked=timeline.source != "torch")
        notes += [note] if note else []
        choice = Choice(tuple(candidates), frozenset(k.name for k in candidates if is_user(k.name)))
        regex = request.kernel_filter or ""
    else:
        choice = choose(candidates, request.cover_pct, request.max_kernels)
        regex = kernel_regex([k.name for k in choice.kernels])
    options = NcuOptions(kernel_regex=regex or None, nvtx_include=nvtx,
                         launch_skip=request.launch_skip, launch_count=request.launches_per_kernel or None,
                         per_kernel=True)
    report = ProfileReport(command, timeline, choice.kernels, choice.covered_pct, regex, user_kernels=choice.user,
                           kernel_filter=request.kernel_filter, nvtx=nvtx, notes=tuple(notes))
    tell(progress, label, "ncu", 1, 2)
    try:
        run = ncu_core.profile_command(list(command), request.out_dir / "ncu", options, request.ncu)
    except CountersNotPermitted:
        raise
    except GpuprofError as exc:  # no ncu here, or it failed: the timeline alone is still an answer
        return replace(report, ncu_problem=exc)
    return replace(report, ncu=run)


def _check_numbers(r: ProfileRequest) -> None:
    if not 0 < r.cover_pct <= 100:
        raise UsageError(f"--cover must be a percentage in (0, 100], got {r.cover_pct:g}")
    if r.max_kernels < 1 or r.launch_skip < 0 or r.launches_per_kernel < 0:
        raise UsageError("--top must be 1 or more; --launch-skip and --launches-per-kernel 0 or more")
    if r.kernel_filter is not None:
        _compiled(r.kernel_filter)  # a bad regex is refused before the program runs
    if r.nvtx is not None and not r.nvtx.strip():
        raise UsageError("--nvtx takes an NVTX range name, e.g. --nvtx matmul")


def _compiled(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise UsageError(f"--kernel {pattern!r} is not a regular expression: {exc}") from None


def choose_top(kernels: tuple[NsysKernelSummary, ...] | None, cover_pct: float,
               limit: int) -> tuple[NsysKernelSummary, ...]:
    """The kernels ncu gets: the user's own first, then the largest library kernels (kernel_choice)."""
    return choose(kernels, cover_pct, limit).kernels


def matching(kernels: tuple[NsysKernelSummary, ...], pattern: str | None) -> tuple[NsysKernelSummary, ...]:
    """The kernels whose full or bare name the regex finds (all without one); UsageError if none."""
    if pattern is None:
        return kernels
    compiled = _compiled(pattern)
    found = tuple(k for k in kernels if compiled.search(k.name) or compiled.search(kernel_base_name(k.name)))
    if not found:
        names = list(dict.fromkeys(kernel_base_name(k.name) for k in kernels))
        raise UsageError(f"--kernel {pattern!r} matches none of the timeline's {len(kernels)} kernels: "
                         + ", ".join(names[:8]) + (" …" if len(names) > 8 else ""))
    return found


NVTX_SYNTAX = set("/@[]+*,")


def nvtx_expressions(given: str, ranges: tuple[NsysNvtxSummary, ...] | None,
                     checked: bool) -> tuple[tuple[str, ...], str | None]:
    """ncu's --nvtx-include expressions for --nvtx, and a note when they differ from it. ncu matches a
    push/pop range only with a trailing `/` (`matmul/`) and a bare `matmul` only as a start/end range
    (docs/kernel-origin.md, "--nvtx"), so a bare name becomes the one the timeline saw, or both (ncu
    ORs two includes) where the timeline cannot tell. `checked`: the timeline is nsys's, which
    records every NVTX range (the PyTorch profiler's ranges are record_function ones, not NVTX); a
    bare name it does not hold is then a UsageError naming the ranges it does."""
    if not given.strip():
        raise UsageError("--nvtx takes an NVTX range name, e.g. --nvtx matmul")
    if given.startswith("regex:") or NVTX_SYNTAX & set(given):
        return (given,), None
    styles = {r.style for r in ranges or () if r.name == given and not r.domain} if checked else set()
    if ranges and not styles and checked:
        names = list(dict.fromkeys(r.name if not r.domain else f"{r.domain}@{r.name}" for r in ranges))
        raise UsageError(f"--nvtx {given!r}: the timeline has no NVTX range of that name; it has "
                         + ", ".join(names[:8]) + (" …" if len(names) > 8 else ""))
    if styles == {"PushPop"}:
        return (f"{given}/",), f"--nvtx {given}: a push/pop range, given to ncu as '{given}/'"
    if styles == {"StartEnd"}:
        return (given,), None
    return (f"{given}/", given), f"--nvtx {given}: given to ncu as a push/pop ('{given}/') or start/end range"


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
        "top_kernels_origin": {k.name: "user" if k.name in report.user_kernels else "library" for k in report.top},
        "kernel_filter": report.kernel_filter,
        "ncu_nvtx_include": list(report.nvtx),
        "covered_pct": report.covered_pct,
        "ncu_kernel_regex": report.kernel_regex,
        "ncu_kernels": kernels,
        "ncu_problem": report.ncu_problem.message if report.ncu_problem else None,
    }
