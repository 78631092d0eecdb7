"""Where nsys is missing: the same summaries from the PyTorch profiler (CUPTI), with a Chrome trace per
profiled program for Perfetto. A family's variants run in this process; a Python program in a child
(tools/torch_child.py); other programs need nsys."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

from gpuprof.analysis.idle_time import idle_breakdown
from gpuprof.commands.nsys_results import NsysProfile, NsysSummary, prepare_out_dir
from gpuprof.commands.nsys_summaries import api_summaries, kernel_summaries, memcpy_summaries, nvtx_summaries
from gpuprof.errors import EnvironmentProblem, GpuprofError
from gpuprof.parsers import torch_trace
from gpuprof.progress import DONE, ProgressFn, tell
from gpuprof.tools import _proc, torch_child
from gpuprof.tools import nsys as tools
from gpuprof.variants.catalog import Family, Variant

# What the summaries came from instead of nsys, by NsysProfile.source.
INSTEAD = {"torch": "the PyTorch profiler (CUPTI)",
           "cupti": "CUPTI's activity API, recorded inside the program by gpuprof's injection library"}


def missing_notice(source: str = "torch") -> str:
    """The one note when no nsys was found."""
    return (f"nsys was not found (PATH, --nsys, $CUDA_HOME, next to ncu); these summaries come from "
            f"{INSTEAD.get(source, source)} instead; install Nsight Systems or pass --nsys PATH for the nsys reports")


def import_failed_notice(nsys: str, why: str, source: str = "torch") -> str:
    """The one note when nsys was found but could not turn its recording into a report."""
    return (f"{nsys} recorded the run but could not make a report of it ({why}); these summaries come from "
            f"{INSTEAD.get(source, source)} instead. To get nsys working, install libdw1 and libelf1 (e.g. apt-get "
            "install libdw1 libelf1) or point --lib-path DIR or $GPUPROF_NSYS_LIBS at a folder holding libdw.so.1 "
            "and libelf.so.1; `gpuprof doctor` checks them")


def torch_profile_family(family: Family, variants: list[Variant], size: dict[str, int], out_dir: Path, *,
                         count: int, progress: ProgressFn | None = None,
                         missing: str = "nsys was not found", defines: dict[str, int] | None = None) -> NsysProfile:
    """The same launches in this process under torch.profiler; one Chrome trace per variant (the user's
    --add variants are in family; defines are the -D overrides)."""
    version = _torch_version(missing)
    from gpuprof.commands.launch import launch_variant

    prepare_out_dir(out_dir)
    summaries = []
    for i, v in enumerate(variants):
        tell(progress, v.name, "torch.profiler", i, len(variants))
        trace = out_dir / f"{family.name}-{v.name}.trace.json"

        def launch(v: Variant = v) -> None:
            launch_variant(family.name, v.name, size, count=count, defines=defines,
                           extra=[u for u in family.variants if u.user])

        try:
            record_torch_trace(launch, trace, (family.name, v.name))
            summaries.append(trace_summary(trace, v.name))
        except EnvironmentProblem:
            raise  # no GPU, no CuPy: no variant can run
        # A variant that fails to build or crashes (CuPy's CUDA errors are RuntimeErrors): its row says so.
        except (GpuprofError, RuntimeError) as exc:
            summaries.append(NsysSummary(v.name, error=" ".join(str(getattr(exc, "message", exc)).split())))
        tell(progress, v.name, DONE, i, len(variants))
    return NsysProfile("torch", f"torch.profiler {version} (CUPTI)", out_dir, tuple(summaries),
                       family=family.name, size=dict(size))


def torch_profile_command(argv: list[str], out_dir: Path, *, missing: str = "nsys was not found",
                          timeout_s: float = tools.PROFILE_TIMEOUT_S) -> NsysProfile:
    """A Python program run under the PyTorch profiler in a child (tools/torch_child.py); others need nsys."""
    if not torch_child.is_python_command(argv):
        raise EnvironmentProblem(f"{missing}; it is needed for -- {' '.join(argv)}: the PyTorch-profiler fallback "
                                 "runs only Python programs (-- python script.py, -- python -m module) and families")
    prepare_out_dir(out_dir)
    trace = out_dir / f"command-{Path(argv[1] if argv[1] != '-m' else argv[2]).stem}.trace.json"
    done = _proc.run(torch_child.child_argv(argv, trace), timeout_s=timeout_s, env=torch_child.child_env())
    if done.returncode == torch_child.NO_TORCH_EXIT:
        raise EnvironmentProblem(f"{missing}; and PyTorch, the fallback profiler, is not installed in {argv[0]} "
                                 "(pip install torch)")
    label = " ".join(argv)
    if not trace.is_file():
        tail = " ".join(done.stderr.strip().splitlines()[-2:])[-300:]
        return NsysProfile("torch", "torch.profiler (CUPTI)", out_dir, (NsysSummary(
            label, error=f"the program exited with code {done.returncode} before a trace was written: {tail}"),),
            command=tuple(argv))
    summary = trace_summary(trace, label)
    if done.returncode != 0:
        summary = replace(summary, error=f"the profiled program exited with code {done.returncode}")
    return NsysProfile("torch", "torch.profiler (CUPTI)", out_dir, (summary,), command=tuple(argv))


def _torch_version(missing: str) -> str:
    try:
        import torch
    except ImportError:
        raise EnvironmentProblem(f"{missing}; and PyTorch, the fallback profiler, is not installed either "
                                 "(pip install torch)") from None
    if not torch.cuda.is_available():
        raise EnvironmentProblem(f"{missing}; and the installed PyTorch cannot see a CUDA GPU, so its profiler "
                                 "cannot stand in (install a CUDA build of torch)")
    return torch.__version__


def record_torch_trace(run: Callable[[], None], trace: Path, ranges: tuple[str, ...]) -> Path:
    """Run under torch.profiler (CPU + CUDA activity) inside record_function ranges; export a Chrome trace."""
    import torch
    from torch.profiler import ProfilerActivity, record_function
    from torch.profiler import profile as torch_profile

    with torch_profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        with ExitStack() as stack:
            for name in ranges:  # the same family -> variant nesting as the NVTX ranges under nsys
                stack.enter_context(record_function(name))
            run()
        torch.cuda.synchronize()
    prof.export_chrome_trace(str(trace))
    return trace


def trace_summary(trace: Path, label: str) -> NsysSummary:
    """nsys-shaped summaries from a torch.profiler Chrome trace (parsers.torch_trace reads it)."""
    read = torch_trace.read_trace(trace)
    ranges = {(f":{name}", "PushPop"): d for name, d in read.ranges.items()}
    notes = ["ranges are torch.profiler record_function ranges (gpuprof's: family -> variant)"]
    if not read.kernels:
        notes.insert(0, "the PyTorch profiler recorded no CUDA kernels (is CUPTI usable here?)")
    return NsysSummary(label, kernels=kernel_summaries(read.kernels), memcpy=memcpy_summaries(read.memcpy),
                       api=api_summaries(read.api), nvtx=nvtx_summaries(ranges), notes=tuple(notes),
                       artifacts=(trace,), idle=idle_breakdown(read.ops))
