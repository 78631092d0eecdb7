"""`gpuprof nsys`'s core: a timeline summary (kernels, memcpy, CUDA API, NVTX ranges) per variant,
per command or per imported report, from nsys; from an SQLite export read directly
(nsys_summaries). Where nsys is missing or cannot make a report: the timeline from CUPTI
through gpuprof's injection library (nsys_cupti), for programs and families alike, else from the
PyTorch profiler (nsys_torch_fallback)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from gpuprof.analysis.idle_time import IdleBreakdown, idle_breakdown
from gpuprof.commands import nsys_cupti
from gpuprof.commands import nsys_torch_fallback as fallback
from gpuprof.commands.nsys_results import NsysProfile, NsysSummary, each_variant_child, prepare_out_dir
from gpuprof.commands.nsys_summaries import possible_gpu_ops, sqlite_summary
from gpuprof.commands.target import COMMAND, FAMILY, IMPORT, Target, TargetRules, validate
from gpuprof.errors import EnvironmentProblem, InputError, ParseError, UsageError
from gpuprof.parsers import nsys_sqlite
from gpuprof.parsers import nsys_stats as ns
from gpuprof.parsers.nsys_stats import NsysToolError
from gpuprof.progress import ProgressFn
from gpuprof.tools import nsys as tools
from gpuprof.variants.catalog import Family, Variant
from gpuprof.variants.sizes import parse_size

DEFAULT_OUT = Path("gpuprof-nsys")
COUNT = 3  # launches per variant: nsys adds little overhead, so the default size is fine

_ONE_OF = "give one of FAMILY, -- COMMAND or --import REPORT, e.g. gpuprof nsys matmul"
RULES = TargetRules(
    command="nsys", forms=(FAMILY, COMMAND, IMPORT),
    unexpected="unexpected argument(s) {words}; to profile a program put it after --, "
               "e.g. gpuprof nsys -- python app.py",
    import_and_other=_ONE_OF, family_and_command=_ONE_OF, nothing=_ONE_OF,
    variants_without_family="--variants and --size go with a FAMILY, not with -- COMMAND or --import",
    options_without_family="-D, --add, --block/--tile/--grid and --kernels-dir go with a FAMILY, "
                           "not with -- COMMAND or --import",
)


class NsysCannotReport(EnvironmentProblem):
    """nsys ran but could not turn its recording into a report (its importer failed): the found nsys
    is no use here, and `nsys`/`profile` fall back (CUPTI, or the PyTorch profiler). `said` is nsys's reason."""

    def __init__(self, message: str, said: str) -> None:
        super().__init__(message)
        self.said = said


@dataclass(frozen=True)
class NsysRequest:
    """What `gpuprof nsys` was asked."""

    target: Target
    out_dir: Path | None = None  # None: DEFAULT_OUT; with --import, nothing is written (a scratch folder)
    nsys: str | None = None  # --nsys PATH
    lib_path: Path | None = None  # --lib-path DIR for the importer's libdw/libelf
    count: int = COUNT
    timeout_s: float = tools.PROFILE_TIMEOUT_S


def execute(request: NsysRequest, progress: ProgressFn | None = None) -> NsysProfile:
    """Check the request, find nsys (or fall back to the PyTorch profiler), profile or import."""
    target = request.target
    form = validate(target, RULES)
    if request.count < 1:
        raise UsageError(f"--count must be at least 1, got {request.count}")
    env = tools.nsys_env(request.lib_path)
    if form == IMPORT:
        assert target.import_path is not None
        return _import(target.import_path, request, env)
    if form == FAMILY:
        return _family(request, env, progress)
    return _command(request, env)


def _family(request: NsysRequest, env: dict[str, str] | None, progress: ProgressFn | None) -> NsysProfile:
    target = request.target
    [(fam, variants, extra)] = target.select()
    size = parse_size(fam, target.size)
    defines = target.options.defines()
    out_dir = request.out_dir or DEFAULT_OUT

    added = {v.name: target.options.cli_args() for v in extra}

    def torch_profile(missing: str) -> NsysProfile:
        return fallback.torch_profile_family(fam, variants, size, out_dir, count=request.count, progress=progress,
                                             missing=missing, defines=defines)

    def timeline(missing: str) -> NsysProfile:  # the same children through CUPTI; else the PyTorch profiler
        return nsys_cupti.profile_family_or_torch(fam, variants, size, out_dir, missing=missing, count=request.count,
                                                  timeout_s=request.timeout_s, progress=progress, defines=defines,
                                                  added=added, torch=torch_profile)

    nsys = _nsys_or_fallback(request, timeline)
    if isinstance(nsys, NsysProfile):
        return nsys
    try:
        return profile_family(fam, variants, size, out_dir, nsys, env=env, count=request.count,
                              timeout_s=request.timeout_s, progress=progress, defines=defines, added=added)
    except NsysCannotReport as exc:
        return _fall_back_after(exc, nsys, request, timeline)


def _command(request: NsysRequest, env: dict[str, str] | None) -> NsysProfile:
    argv = list(request.target.command)
    _check_command(argv)
    out_dir = request.out_dir or DEFAULT_OUT

    def torch_profile(missing: str) -> NsysProfile:
        return fallback.torch_profile_command(argv, out_dir, missing=missing, timeout_s=request.timeout_s)

    def timeline(missing: str) -> NsysProfile:  # any program through CUPTI; else Python ones through PyTorch
        return nsys_cupti.profile_command_or_torch(argv, out_dir, missing=missing, timeout_s=request.timeout_s,
                                                   torch=torch_profile)

    nsys = _nsys_or_fallback(request, timeline)
    if isinstance(nsys, NsysProfile):
        return nsys
    try:
        return profile_command(argv, out_dir, nsys, env=env, timeout_s=request.timeout_s)
    except NsysCannotReport as exc:
        return _fall_back_after(exc, nsys, request, timeline)


def _fall_back_after(exc: NsysCannotReport, nsys: str, request: NsysRequest,
                     fall_back: Callable[[str], NsysProfile]) -> NsysProfile:
    """nsys was found but cannot make a report: the fallback's result instead (CUPTI or the PyTorch
    profiler), with one note saying why and how to get nsys working. Not where the user named the nsys
    (--nsys): then its failure is the answer. A program the fallback cannot run gets nsys's own message."""
    if request.nsys:
        raise exc
    result = fall_back(exc.message)
    return replace(result, notice=fallback.import_failed_notice(nsys, exc.said, result.source),
                   fallback_why="the nsys found cannot make a report here")


def _nsys_or_fallback(request: NsysRequest, fall_back: Callable[[str], NsysProfile]) -> str | NsysProfile:
    """The nsys to run, or, where none is found and the user named none, the fallback's result
    (`fall_back` is given why nsys is missing), marked as the fallback."""
    try:
        return tools.find_nsys(request.nsys)
    except EnvironmentProblem as exc:
        if request.nsys:
            raise
        result = fall_back(exc.message)
        return replace(result, notice=fallback.missing_notice(result.source), fallback_why="nsys is missing")


def _import(path: Path, request: NsysRequest, env: dict[str, str] | None) -> NsysProfile:
    """The input before the tool (a wrong file is not "nsys missing"); an SQLite export is read
    without nsys where there is none. Without --out nothing is written: the run's files go to a
    scratch folder, and the result names the report itself."""
    check_importable(path)
    nsys = _find(request.nsys, optional=path.suffix == ".sqlite")
    if request.out_dir is not None:
        return _summarise(path, request.out_dir, nsys, env)
    with tempfile.TemporaryDirectory(prefix="gpuprof-nsys-") as scratch:
        result = _summarise(path, Path(scratch), nsys, env)
    return replace(result, out_dir=path)


def _find(explicit: str | None, optional: bool) -> str | None:
    try:
        return tools.find_nsys(explicit)
    except EnvironmentProblem:
        if optional and not explicit:
            return None  # an SQLite export can be read without nsys
        raise


def _check_command(argv: list[str]) -> None:
    program = argv[0]
    if not (shutil.which(program) or Path(program).is_file()):
        raise UsageError(f"cannot run {program!r}: it is neither on PATH nor a file")


# ---------------------------------------------------------------------------------------------
# nsys


def profile_family(family: Family, variants: list[Variant], size: dict[str, int], out_dir: Path, nsys: str, *,
                   env: dict[str, str] | None = None, count: int = COUNT,
                   timeout_s: float = tools.PROFILE_TIMEOUT_S, progress: ProgressFn | None = None,
                   defines: dict[str, int] | None = None,
                   added: dict[str, tuple[str, ...]] | None = None) -> NsysProfile:
    """One `nsys profile` per variant (nsys_results.each_variant_child), so each report is one variant."""
    prepare_out_dir(out_dir)
    summaries = each_variant_child(
        family, variants, size, "nsys profile",
        lambda argv, name, label: _profile_one(nsys, label, out_dir / name, argv, out_dir, env, timeout_s),
        count=count, progress=progress, defines=defines, added=added)
    return NsysProfile("nsys", nsys, out_dir, summaries, family=family.name, size=dict(size))


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
    check_importable(path)
    return _summarise(path, out_dir, nsys, env)


def check_importable(path: Path) -> None:
    """A report nsys stats can read, or an nsys SQLite export; InputError (exit 2) otherwise."""
    if path.name.endswith(".qdstrm"):
        raise InputError(f"--import {path}: a .qdstrm is nsys's raw recording, left when its importer failed; "
                         "profile again once the importer works (libdw.so.1 and libelf.so.1 on LD_LIBRARY_PATH)")
    if path.suffix not in (".nsys-rep", ".sqlite"):
        raise InputError(f"--import {path}: expected a .nsys-rep report or a .sqlite export "
                         "(nsys export --type sqlite)")
    if not path.is_file():
        raise InputError(f"--import {path}: no such file")
    if path.suffix == ".sqlite":  # nsys stats on an unrelated database says little
        nsys_sqlite.check_nsys_export(path)


def _summarise(path: Path, out_dir: Path, nsys: str | None, env: dict[str, str] | None) -> NsysProfile:
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
            raise NsysCannotReport(importer_message(exc.message), exc.message) from None
        return NsysSummary(label, error=f"{exc.message} (exit code {done.returncode}; log: {log})", artifacts=(log,))
    report = base.with_name(base.name + ".nsys-rep")
    if not report.is_file() and ".qdstrm" in done.stdout + done.stderr:  # recorded, never imported
        said = f"it left a raw .qdstrm recording and no {report.name} (exit code {done.returncode}; log: {log})"
        raise NsysCannotReport(importer_message(said), said)
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
            raise NsysCannotReport(importer_message(exc.message), exc.message) from None
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
            table = stats.report(name)
        except NsysToolError as exc:  # SKIPPED (no such activity) or absent: an empty table with the reason
            tables[name] = ()
            notes.append(exc.message)
            continue
        tables[name] = tuple(table.records)
        notes += [f"impossible in the report, left out (not a measurement): {name}: {row}" for row in table.impossible]
    sqlite = tools.export_path(report, out_dir)
    kept = (*artifacts, *([sqlite] if sqlite is not None and sqlite.is_file() else []), saved)
    return NsysSummary(label, kernels=tables["cuda_gpu_kern_sum"], memcpy=tables["cuda_gpu_mem_time_sum"],
                       api=tables["cuda_api_sum"], nvtx=tables["nvtx_sum"], notes=tuple(notes), artifacts=kept,
                       idle=_idle_from(sqlite if sqlite is not None else report))


def _idle_from(export: Path) -> IdleBreakdown | None:
    """The idle-time breakdown from the SQLite export `nsys stats` wrote (None where it wrote none,
    or the export is not one this parser reads: the summaries stand without it)."""
    if export.suffix != ".sqlite" or not export.is_file():
        return None
    try:
        return idle_breakdown(possible_gpu_ops(export, nsys_sqlite.read_sqlite_capture(export)))
    except ParseError:
        return None


def importer_message(said: str) -> str:
    return ("nsys recorded the run but could not import it into a report: its importer (QdstrmImporter) needs "
            "libdw.so.1 and libelf.so.1, which the Nsight Compute bundle does not ship; install libdw1 and libelf1 "
            f"or put a folder holding them on LD_LIBRARY_PATH (or {tools.LIBS_ENV}, or --lib-path DIR) "
            f"(nsys said: {said})")
