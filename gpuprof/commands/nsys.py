"""`gpuprof nsys`'s core: a timeline summary (kernels, memcpy, CUDA API, NVTX ranges) per variant,
per command or per imported report, from nsys, from an SQLite export, or from the PyTorch profiler."""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from gpuprof.analysis.stats import duration_stats
from gpuprof.errors import EnvironmentProblem, GpuprofError, InputError, ParseError, UsageError
from gpuprof.files import atomic_write_text
from gpuprof.parsers import nsys_stats as ns
from gpuprof.parsers import nsys_sqlite, torch_trace
from gpuprof.parsers.nsys_stats import (
    NsysApiSummary,
    NsysKernelSummary,
    NsysMemTimeSummary,
    NsysNvtxSummary,
    NsysToolError,
)
from gpuprof.progress import Progress
from gpuprof.tools import _proc, torch_child
from gpuprof.tools import nsys as tools
from gpuprof.tools.target import LaunchTarget
from gpuprof.variants import catalog
from gpuprof.variants.catalog import Family, Variant
from gpuprof.variants.sizes import parse_size

DEFAULT_OUT = Path("gpuprof-nsys")
COUNT = 3  # launches per variant: nsys adds little overhead, so the default size is fine
JSON_SCHEMA = 1

ProgressFn = Callable[[Progress], None]


@dataclass(frozen=True)
class NsysSummary:
    """The summaries of one profiled program: one variant, one command or one imported report.

    A summary is None where the source cannot give it (an SQLite export read without nsys has no
    memcpy or API summary); an empty tuple means the source had nothing of that kind.
    """

    label: str
    kernels: tuple[NsysKernelSummary, ...] = ()
    memcpy: tuple[NsysMemTimeSummary, ...] | None = ()
    api: tuple[NsysApiSummary, ...] | None = ()
    nvtx: tuple[NsysNvtxSummary, ...] | None = ()
    notes: tuple[str, ...] = ()
    artifacts: tuple[Path, ...] = ()  # .nsys-rep, .sqlite, stats text, profile log, Chrome trace
    error: str | None = None  # this one could not be profiled (crash, hang); the others still ran


@dataclass(frozen=True)
class NsysProfile:
    source: str  # "nsys", "sqlite" (an export read without nsys) or "torch" (the fallback)
    tool: str  # the nsys path, "sqlite" or "torch.profiler <version> (CUPTI)"
    out_dir: Path
    summaries: tuple[NsysSummary, ...]
    family: str | None = None
    size: dict[str, int] | None = None
    command: tuple[str, ...] = ()
    notice: str | None = None  # said once, before the tables: why the fallback was used

    @property
    def failed(self) -> list[NsysSummary]:
        return [s for s in self.summaries if s.error]

    def summary(self, label: str) -> NsysSummary:
        for s in self.summaries:
            if s.label == label:
                return s
        raise KeyError(label)


@dataclass(frozen=True)
class NsysRequest:
    """What `gpuprof nsys` was asked: exactly one of family, command and import_path."""

    family: str | None = None
    variants: str | None = None
    size: str | None = None
    command: tuple[str, ...] = ()
    import_path: Path | None = None
    out_dir: Path = DEFAULT_OUT
    nsys: str | None = None  # --nsys PATH
    lib_path: Path | None = None  # --lib-path DIR for the importer's libdw/libelf
    count: int = COUNT
    timeout_s: float = tools.PROFILE_TIMEOUT_S
    unexpected: tuple[str, ...] = field(default=())  # arguments that fit nowhere
    # -D, --add and --kernels-dir, as the CLI resolved them (cli/_options.VariantOptions.select):
    selection: tuple[Family, tuple[Variant, ...]] | None = None  # the family with the user's variants, the chosen ones
    defines: dict[str, int] = field(default_factory=dict)  # -D, passed on to each child
    added: dict[str, tuple[str, ...]] = field(default_factory=dict)  # a user variant's name -> its child's --add options


def profile(request: NsysRequest, progress: ProgressFn | None = None) -> NsysProfile:
    """Validate the request, find nsys (or fall back to the PyTorch profiler), profile or import."""
    _validate(request)
    env = tools.nsys_env(request.lib_path)
    if request.import_path is not None:
        nsys = _find(request.nsys, optional=request.import_path.suffix == ".sqlite")
        return import_report(request.import_path, request.out_dir, nsys, env=env)
    fam = variants = size = None
    if request.family:
        if request.selection is not None:
            fam, chosen = request.selection
            variants = list(chosen)
        else:
            fam = catalog.load_family(request.family)
            variants = fam.apply_defines(fam.select(request.variants), request.defines)
        size = parse_size(fam, request.size)
    else:
        _check_command(request.command)
    try:
        nsys = tools.find_nsys(request.nsys)
    except EnvironmentProblem as exc:
        if request.nsys:
            raise
        if fam is None:
            out = torch_profile_command(list(request.command), request.out_dir, missing=exc.message,
                                        timeout_s=request.timeout_s)
        else:
            out = torch_profile_family(fam, variants, size, request.out_dir, count=request.count,
                                       progress=progress, missing=exc.message, defines=request.defines)
        return replace(out, notice="nsys was not found (PATH, --nsys, $CUDA_HOME, next to ncu); these summaries "
                                   "come from the PyTorch profiler (CUPTI) instead; install Nsight Systems or "
                                   "pass --nsys PATH for the nsys reports")
    if fam is not None:
        return profile_family(fam, variants, size, request.out_dir, nsys, env=env, count=request.count,
                              timeout_s=request.timeout_s, progress=progress, defines=request.defines,
                              added=request.added)
    return profile_command(list(request.command), request.out_dir, nsys, env=env, timeout_s=request.timeout_s)


def _validate(r: NsysRequest) -> None:
    if r.unexpected:
        raise UsageError(f"unexpected argument(s) {' '.join(r.unexpected)}; to profile a program put it after --, "
                         "e.g. gpuprof nsys -- python app.py")
    given = [x for x in (r.family, r.command, r.import_path) if x]
    if len(given) != 1:
        raise UsageError("give one of FAMILY, -- COMMAND or --import REPORT, e.g. gpuprof nsys matmul")
    if (r.variants or r.size) and not r.family:
        raise UsageError("--variants and --size go with a FAMILY, not with -- COMMAND or --import")
    if (r.defines or r.added) and not r.family:
        raise UsageError("-D, --add and --kernels-dir go with a FAMILY, not with -- COMMAND or --import")
    if r.count < 1:
        raise UsageError(f"--count must be at least 1, got {r.count}")


def _find(explicit: str | None, optional: bool) -> str | None:
    try:
        return tools.find_nsys(explicit)
    except EnvironmentProblem:
        if optional and not explicit:
            return None  # an SQLite export can be read without nsys
        raise


def _check_command(argv: tuple[str, ...]) -> None:
    program = argv[0]
    if not (shutil.which(program) or Path(program).is_file()):
        raise UsageError(f"cannot run {program!r}: it is neither on PATH nor a file")


def prepare_out_dir(out_dir: Path) -> Path:
    """Create the run directory; every report of the run is written inside it and nowhere else."""
    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"--out {out_dir} is a file; give a folder for the reports")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create --out {out_dir}: {exc.strerror or exc}") from None
    return out_dir


# ---------------------------------------------------------------------------------------------
# nsys


def profile_family(family: Family, variants: list[Variant], size: dict[str, int], out_dir: Path, nsys: str, *,
                   env: dict[str, str] | None = None, count: int = COUNT,
                   timeout_s: float = tools.PROFILE_TIMEOUT_S, progress: ProgressFn | None = None,
                   defines: dict[str, int] | None = None,
                   added: dict[str, tuple[str, ...]] | None = None) -> NsysProfile:
    """One `nsys profile` per variant (one child launching only that variant), so each report is one variant.

    defines (-D) go to every child; added maps a user variant's name to the --add options its child needs."""
    prepare_out_dir(out_dir)
    summaries = []
    for i, v in enumerate(variants):
        _tell(progress, v.name, "nsys profile", i, len(variants))
        target = LaunchTarget(family.name, v.name, size, count=count, defines=dict(defines or {}),
                              add=(added or {}).get(v.name, ()))
        summaries.append(_profile_one(nsys, v.name, out_dir / f"{family.name}-{v.name}", target.argv(),
                                      out_dir, env, timeout_s))
        _tell(progress, v.name, "done", i, len(variants))
    return NsysProfile("nsys", nsys, out_dir, tuple(summaries), family=family.name, size=dict(size))


def profile_command(argv: list[str], out_dir: Path, nsys: str, *, env: dict[str, str] | None = None,
                    timeout_s: float = tools.PROFILE_TIMEOUT_S) -> NsysProfile:
    """`nsys profile` any command; its report is <out_dir>/command-<program>.nsys-rep."""
    prepare_out_dir(out_dir)
    name = "".join(c if c.isalnum() or c in "-_" else "_" for c in Path(argv[0]).name) or "program"
    summary = _profile_one(nsys, " ".join(argv), out_dir / f"command-{name}", argv, out_dir, env, timeout_s)
    return NsysProfile("nsys", nsys, out_dir, (summary,), command=tuple(argv))


def import_report(path: Path, out_dir: Path, nsys: str | None, *, env: dict[str, str] | None = None) -> NsysProfile:
    """Summaries of an existing .nsys-rep (through `nsys stats`) or .sqlite (nsys stats, or read directly)."""
    path = Path(path)
    if path.name.endswith(".qdstrm"):
        raise InputError(f"--import {path}: a .qdstrm is nsys's raw recording, left when its importer failed; "
                         "profile again once the importer works (libdw.so.1 and libelf.so.1 on LD_LIBRARY_PATH)")
    if path.suffix not in (".nsys-rep", ".sqlite"):
        raise InputError(f"--import {path}: expected a .nsys-rep report or a .sqlite export (nsys export --type sqlite)")
    if not path.is_file():
        raise InputError(f"--import {path}: no such file")
    if path.suffix == ".sqlite":  # the input before the tool: nsys stats on an unrelated database says little
        nsys_sqlite.check_nsys_export(path)
    prepare_out_dir(out_dir)
    if nsys is not None:
        summary = _stats_summary(nsys, path.name, path, out_dir, env, (path,))
        return NsysProfile("nsys", nsys, out_dir, (summary,))
    return NsysProfile("sqlite", "sqlite", out_dir, (sqlite_summary(path),))


def _profile_one(nsys: str, label: str, base: Path, target_argv: list[str], out_dir: Path,
                 env: dict[str, str] | None, timeout_s: float) -> NsysSummary:
    try:
        done, log = tools.run_profile(nsys, base, target_argv, env=env, timeout_s=timeout_s)
    except EnvironmentProblem as exc:  # a hanging program: reported, and the next variant still runs
        return NsysSummary(label, error=exc.message)
    try:
        ns.parse_profile_output(done.stdout + "\n" + done.stderr)
    except NsysToolError as exc:
        if exc.kind == "importer_failed":
            raise EnvironmentProblem(importer_message(exc.message)) from None
        return NsysSummary(label, error=f"{exc.message} (exit code {done.returncode}; log: {log})", artifacts=(log,))
    report = base.with_name(base.name + ".nsys-rep")
    if not report.is_file():
        return NsysSummary(label, error=f"nsys wrote no {report} (exit code {done.returncode}; log: {log})",
                           artifacts=(log,))
    summary = _stats_summary(nsys, label, report, out_dir, env, (report, log))
    if done.returncode != 0:  # the report holds what ran before the program failed
        summary = replace(summary, error=f"the profiled program exited with code {done.returncode}; log: {log}")
    return summary


def _stats_summary(nsys: str, label: str, report: Path, out_dir: Path, env: dict[str, str] | None,
                   artifacts: tuple[Path, ...]) -> NsysSummary:
    done, saved = tools.run_stats(nsys, report, out_dir, env=env)
    try:
        stats = ns.parse_stats(done.stdout + "\n" + done.stderr, saved)
    except NsysToolError as exc:
        if exc.kind == "importer_failed":
            raise EnvironmentProblem(importer_message(exc.message)) from None
        raise EnvironmentProblem(f"nsys stats failed on {report}: {exc.message} (output kept in {saved})") from None
    except ParseError:
        if done.returncode != 0:
            first = next((ln.strip() for ln in done.stderr.splitlines() if ln.strip()), "no message")
            raise EnvironmentProblem(f"nsys stats exited with code {done.returncode} on {report}: {first} "
                                     f"(output kept in {saved})") from None
        raise
    tables, notes = {}, []
    for name in tools.REPORTS:
        try:
            tables[name] = tuple(stats.report(name).records)
        except NsysToolError as exc:  # SKIPPED (no such activity) or absent: an empty table with the reason
            tables[name] = ()
            notes.append(exc.message)
    sqlite = tools.export_path(report, out_dir)
    kept = (*artifacts, *([sqlite] if sqlite is not None and sqlite.is_file() else []), saved)
    return NsysSummary(label, kernels=tables["cuda_gpu_kern_sum"], memcpy=tables["cuda_gpu_mem_time_sum"],
                       api=tables["cuda_api_sum"], nvtx=tables["nvtx_sum"], notes=tuple(notes), artifacts=kept)


def importer_message(said: str) -> str:
    return ("nsys recorded the run but could not import it into a report: its importer (QdstrmImporter) needs "
            "libdw.so.1 and libelf.so.1, which the Nsight Compute bundle does not ship; install libdw1 and libelf1 "
            f"or put a folder holding them on LD_LIBRARY_PATH (or {tools.LIBS_ENV}, or --lib-path DIR) "
            f"(nsys said: {said})")


# ---------------------------------------------------------------------------------------------
# An SQLite export without nsys


def sqlite_summary(path: Path) -> NsysSummary:
    """Kernel and NVTX range summaries computed from an `nsys export --type sqlite` file."""
    kernels: dict[str, list[float]] = {}
    for k in nsys_sqlite.read_sqlite_kernels(path):
        kernels.setdefault(k.demangled_name, []).append(float(k.duration_ns))
    ranges: dict[tuple[str, str], list[float]] = {}
    for e in nsys_sqlite.read_sqlite_nvtx(path):
        if e.kind in ("push_pop", "start_end") and e.end_ns is not None and e.name is not None:
            style = "PushPop" if e.kind == "push_pop" else "StartEnd"
            ranges.setdefault((f"{e.domain or ''}:{e.name}", style), []).append(float(e.duration_ns))
    info = nsys_sqlite.read_sqlite_export_info(path)
    version = info.get("EXPORT_PRODUCT_VERSION")
    note = "memcpy and CUDA API summaries need nsys (nsys stats); this export was read directly"
    return NsysSummary(
        path.name,
        kernels=kernel_summaries(kernels),
        memcpy=None,
        api=None,
        nvtx=nvtx_summaries(ranges),
        notes=(note + (f" (exported by nsys {version})" if version else ""),),
        artifacts=(path,),
    )


def _by_total(groups: dict[Any, list[float]]) -> tuple[list[tuple[Any, list[float]]], float]:
    items = sorted(groups.items(), key=lambda kv: -math.fsum(kv[1]))
    return items, math.fsum(math.fsum(d) for _, d in items)


def kernel_summaries(groups: dict[str, list[float]]) -> tuple[NsysKernelSummary, ...]:
    items, total = _by_total(groups)
    return tuple(NsysKernelSummary(name=k, instances=len(d), **duration_stats(d, total)) for k, d in items)


def memcpy_summaries(groups: dict[str, list[float]]) -> tuple[NsysMemTimeSummary, ...]:
    items, total = _by_total(groups)
    return tuple(NsysMemTimeSummary(operation=k, count=len(d), **duration_stats(d, total)) for k, d in items)


def api_summaries(groups: dict[str, list[float]]) -> tuple[NsysApiSummary, ...]:
    items, total = _by_total(groups)
    return tuple(NsysApiSummary(name=k, num_calls=len(d), **duration_stats(d, total)) for k, d in items)


def nvtx_summaries(groups: dict[tuple[str, str], list[float]]) -> tuple[NsysNvtxSummary, ...]:
    items, total = _by_total(groups)
    out = []
    for (rng, style), d in items:
        domain, _, name = rng.partition(":")
        out.append(NsysNvtxSummary(range=rng, domain=domain or None, name=name, style=style,
                                   instances=len(d), **duration_stats(d, total)))
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# The PyTorch profiler (CUPTI), where nsys is missing


def torch_profile_family(family: Family, variants: list[Variant], size: dict[str, int], out_dir: Path, *,
                         count: int = COUNT, progress: ProgressFn | None = None,
                         missing: str = "nsys was not found", defines: dict[str, int] | None = None) -> NsysProfile:
    """The same launches in this process under torch.profiler; one Chrome trace per variant (the user's
    --add variants are in family; defines are the -D overrides)."""
    version = _torch_version(missing)
    from gpuprof.commands.launch import launch_variant

    prepare_out_dir(out_dir)
    summaries = []
    for i, v in enumerate(variants):
        _tell(progress, v.name, "torch.profiler", i, len(variants))
        trace = out_dir / f"{family.name}-{v.name}.trace.json"
        try:
            record_torch_trace(lambda v=v: launch_variant(family.name, v.name, size, count=count, defines=defines,
                                                            extra=[u for u in family.variants if u.user]), trace,
                               (family.name, v.name))
            summaries.append(trace_summary(trace, v.name))
        except EnvironmentProblem:
            raise  # no GPU, no CuPy: no variant can run
        except (GpuprofError, RuntimeError) as exc:  # a variant that fails to build or crashes; CuPy's CUDA errors are RuntimeErrors
            summaries.append(NsysSummary(v.name, error=" ".join(str(getattr(exc, "message", exc)).split())))
        _tell(progress, v.name, "done", i, len(variants))
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
                       artifacts=(trace,))


# ---------------------------------------------------------------------------------------------
# JSON


def to_dict(profile: NsysProfile) -> dict[str, Any]:
    def plain(x: Any) -> Any:
        if isinstance(x, Path):
            return str(x)
        if isinstance(x, dict):
            return {k: plain(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [plain(v) for v in x]
        return x

    return {"gpuprof_nsys_schema": JSON_SCHEMA, **plain(asdict(profile))}


def save_profile(profile: NsysProfile, path: Path) -> Path:
    """The summaries as JSON (times in ns), written atomically."""
    return atomic_write_text(Path(path), json.dumps(to_dict(profile), indent=1))


def _tell(progress: ProgressFn | None, variant: str, step: str, index: int, total: int) -> None:
    if progress is not None:
        progress(Progress(variant, step, index, total))
