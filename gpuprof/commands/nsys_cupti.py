"""Where nsys cannot make a report: the same summaries from CUPTI's activity API, recorded by gpuprof's
injection library inside the program (tools/cupti.py), so any program gets a timeline, a C++ one as
well as a Python one, and a family's variants the same child process nsys would profile. Where that
library cannot be built, Python programs and families still get the PyTorch profiler
(nsys_torch_fallback)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from gpuprof.analysis.idle_time import idle_breakdown
from gpuprof.commands.nsys_results import NsysProfile, NsysSummary, RangeKernels, each_variant_child, prepare_out_dir
from gpuprof.commands.nsys_summaries import api_summaries, kernel_summaries, memcpy_summaries, nvtx_summaries
from gpuprof.errors import EnvironmentProblem
from gpuprof.files import atomic_write_text, own_folder
from gpuprof.parsers import cupti_activity as ca
from gpuprof.progress import ProgressFn
from gpuprof.tools import _proc
from gpuprof.tools import cupti as tool
from gpuprof.tools import nsys as nsys_tool
from gpuprof.variants.catalog import Family, Variant


def prepare() -> tuple[tool.CuptiInstall, Path]:
    """The CUPTI found here and the injection library built for it (cached); EnvironmentProblem
    saying why not (no CUPTI, no compiler, a failed build)."""
    install = tool.find_cupti()
    return install, tool.injection_library(install)


def tool_name(install: tool.CuptiInstall) -> str:
    return f"CUPTI {install.major} activity API (API version {install.api_version}, gpuprof's injection library)"


def profile_command_or_torch(argv: list[str], out_dir: Path, *, missing: str, timeout_s: float,
                             torch: Callable[[str], NsysProfile]) -> NsysProfile:
    """The CUPTI timeline of any program; where the injection library cannot be had, `torch(why)` (the
    PyTorch profiler, for Python programs; its error names both reasons for the others)."""
    prepared = _prepared_or(torch, missing)
    if isinstance(prepared, NsysProfile):
        return prepared
    return profile_command(argv, out_dir, *prepared, timeout_s=timeout_s)


def _prepared_or(torch: Callable[[str], NsysProfile], missing: str) -> tuple[tool.CuptiInstall, Path] | NsysProfile:
    """prepare()'s CUPTI and library, or, where they cannot be had, `torch(why)`'s profile."""
    try:
        return prepare()
    except EnvironmentProblem as exc:
        return torch(f"{missing}; gpuprof's CUPTI injection library cannot be used either ({exc.message})")


def profile_family_or_torch(family: Family, variants: list[Variant], size: dict[str, int], out_dir: Path, *,
                            missing: str, count: int, timeout_s: float, progress: ProgressFn | None,
                            defines: dict[str, int], added: dict[str, tuple[str, ...]],
                            torch: Callable[[str], NsysProfile]) -> NsysProfile:
    """A family's variants, each launched by its own `gpuprof launch` child with the injection library
    loaded (as `nsys profile` runs them), so the timeline is the same child's wherever nsys is absent;
    where the library cannot be had, `torch(why)` (the launches under the PyTorch profiler)."""
    prepared = _prepared_or(torch, missing)
    if isinstance(prepared, NsysProfile):
        return prepared
    install, library = prepared
    summaries = each_variant_child(
        family, variants, size, "CUPTI",
        lambda argv, name, label: profile_command(argv, out_dir, install, library, timeout_s=timeout_s, name=name,
                                                  label=label, gpuprof_child=True).summaries[0],
        count=count, progress=progress, defines=defines, added=added)
    return NsysProfile("cupti", tool_name(install), out_dir, summaries, family=family.name, size=dict(size))


def profile_command(argv: list[str], out_dir: Path, install: tool.CuptiInstall, library: Path, *,
                    timeout_s: float = nsys_tool.PROFILE_TIMEOUT_S, name: str | None = None,
                    label: str | None = None, gpuprof_child: bool = False) -> NsysProfile:
    """Run the program with the injection library loaded; its records go to
    <out_dir>/command-<program>.cupti/, its console output to <out_dir>/command-<program>.log
    (name: "<family>-<variant>" in place of "command-<program>" for a family's child; label: the row's name).
    gpuprof_child: argv is a `gpuprof launch` child, whose exit code 3 means the machine cannot run any
    variant (no GPU, no driver): its one-line error is raised, not a row per variant."""
    prepare_out_dir(out_dir)
    if name is None:
        name = "".join(c if c.isalnum() or c in "-_" else "_" for c in Path(argv[0]).name) or "program"
        if name.startswith("python") and len(argv) > 1:  # python app.py: name it after the script
            script = argv[2] if argv[1] == "-m" and len(argv) > 2 else argv[1]
            name = "".join(c if c.isalnum() or c in "-_" else "_" for c in Path(script).stem) or name
        name = f"command-{name}"
    label = label or " ".join(argv)
    folder = out_dir / f"{name}.cupti"
    own_folder(folder)  # never through a link: a previous run's records are deleted from it
    try:
        for old in ca.activity_files(folder):  # a previous run's records are not this run's
            old.unlink()
    except OSError as exc:
        raise EnvironmentProblem(f"cannot prepare {folder} for the CUPTI records: {exc.strerror or exc}") from None
    tool_words = tool_name(install)
    try:
        done = _proc.run(argv, timeout_s=timeout_s, env=tool.injection_env(library, folder))
    except EnvironmentProblem as exc:  # a hang: what CUPTI handed over before the kill, and why it stops there
        files = ca.activity_files(folder)
        summary = activity_summary(ca.read_activity(files), label, (folder,)) if files else NsysSummary(label)
        return NsysProfile("cupti", tool_words, out_dir, (replace(summary, error=exc.message),),
                           command=tuple(argv))
    log = atomic_write_text(out_dir / f"{name}.log", done.stdout + (
        f"\n--- stderr ---\n{done.stderr}" if done.stderr.strip() else ""))
    files = ca.activity_files(folder)
    if not files and gpuprof_child and done.returncode == EnvironmentProblem.exit_code:
        said = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
        if said:
            raise EnvironmentProblem(said[-1].removeprefix("error: "))
    if not files:
        why = (f"the program exited with code {done.returncode} without starting CUDA (no CUPTI activity "
               f"file in {folder}; log: {log})")
        return NsysProfile("cupti", tool_words, out_dir, (NsysSummary(label, error=why, artifacts=(log,)),),
                           command=tuple(argv))
    summary = activity_summary(ca.read_activity(files), label, (folder, log))
    if done.returncode != 0:
        summary = replace(summary, error=f"the profiled program exited with code {done.returncode}; log: {log}")
    return NsysProfile("cupti", tool_words, out_dir, (summary,), command=tuple(argv))


def activity_summary(activity: ca.CuptiActivity, label: str, artifacts: tuple[Path, ...] = ()) -> NsysSummary:
    """nsys-shaped summaries of CUPTI's records: kernels, copies and memsets, the program's own API
    calls, NVTX ranges, the kernels of each range, and the idle breakdown. A record that ends before it
    starts is left out, and a note says how many."""
    impossible = 0
    kernels: dict[str, list[float]] = {}
    for k in activity.kernels:
        if k.duration_ns < 0:
            impossible += 1
            continue
        kernels.setdefault(k.name, []).append(float(k.duration_ns))
    copies: dict[str, list[float]] = {}
    for t in activity.transfers:
        if t.end_ns < t.start_ns:
            impossible += 1
            continue
        copies.setdefault(t.operation, []).append(float(t.end_ns - t.start_ns))
    calls: dict[str, list[float]] = {}
    for c in activity.calls:
        calls.setdefault(c.name, []).append(float(max(0, c.end_ns - c.start_ns)))
    ranges: dict[tuple[str, str | None], list[float]] = {}
    for r in activity.ranges:
        ranges.setdefault((f"{r.domain or ''}:{r.name}", None), []).append(float(max(0, r.end_ns - r.start_ns)))
    by_range = ca.kernels_by_range(activity)
    per_range = tuple(RangeKernels(path, kernel_summaries(_durations(ks)))
                      for path, ks in sorted(by_range.items(), key=lambda kv: -sum(k.duration_ns for k in kv[1])))
    ops = [op for op in ca.gpu_ops(activity) if op.end_ns >= op.start_ns]
    return NsysSummary(label, kernels=kernel_summaries(kernels), memcpy=memcpy_summaries(copies),
                       api=api_summaries(calls), nvtx=nvtx_summaries(ranges), notes=tuple(_notes(activity, impossible)),
                       artifacts=artifacts, idle=idle_breakdown(ops), kernels_by_range=per_range or None)


def _durations(kernels: list[ca.Kernel]) -> dict[str, list[float]]:
    groups: dict[str, list[float]] = {}
    for k in kernels:
        if k.duration_ns >= 0:
            groups.setdefault(k.name, []).append(float(k.duration_ns))
    return groups


def _notes(activity: ca.CuptiActivity, impossible: int) -> list[str]:
    notes = []
    if not activity.kernels:
        notes.append("CUPTI recorded no CUDA kernels")
    if activity.dropped:
        notes.append(f"CUPTI dropped {activity.dropped:,} record(s) for want of buffer space: the tables miss them")
    if activity.unfinished:
        notes.append(f"{len(activity.unfinished)} process(es) did not exit normally (a crash, a signal, os._exit): "
                     "records CUPTI still held then are missing")
    notes += list(activity.warnings)
    if impossible:
        notes.append(f"{impossible:,} record(s) end before they start (impossible): left out of these tables")
    if activity.unclosed_ranges:
        notes.append(f"{activity.unclosed_ranges:,} NVTX range(s) were never closed: left out")
    if len(activity.files) > 1:
        notes.append(f"{len(activity.files)} processes used CUDA; their records are summed here")
    if activity.internal_driver_calls:
        notes.append(f"{activity.internal_driver_calls:,} driver call(s) made inside runtime calls are left out of "
                     "the API summary (their time is the runtime call's)")
    return notes
