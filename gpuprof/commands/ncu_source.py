"""`gpuprof ncu --source`'s core: each result's per-line data read from its report, with the files
named as the user knows them.

One reading path for a family, a command and an imported report: every .ncu-rep the run has is
read once through ncu_report in a child process (tools.ncu.read_sources_isolated), and each
profiled launch gets its KernelSource by its position in that report (NcuKernelRow.id).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from gpuprof.commands.ncu import NcuRequest, NcuRun
from gpuprof.errors import EnvironmentProblem, InputError
from gpuprof.parsers import ncu_rep
from gpuprof.parsers.ncu_source import KernelSource, LineStats
from gpuprof.tools import ncu as ncu_tool
from gpuprof.variants.catalog import kernels_root
from gpuprof.variants.nvrtc import display_path


def collection_note(request: NcuRequest) -> str | None:
    """What ncu will collect beyond gpuprof's defaults and what it costs, said before profiling;
    None for the defaults or a saved report."""
    if request.target.import_path is not None:
        return None
    preset = request.preset
    if preset is None:
        return cost_note(request) if request.shows_source else ladder_note(request)
    options = request.ncu_options()
    what = f"ncu's set '{options.set_name}'" if options.set_name else f"sections {', '.join(options.sections)}"
    source = " and the kernels' source (--import-source yes)" if preset.source else ""
    ladder = ladder_note(request)
    return (f"ncu --set {request.set_name} ({preset.gives}): {what}{source} beside gpuprof's metrics; "
            f"{preset.h100_passes} replay passes of every profiled launch on an H100 with ncu 2025.3.1"
            + (f"; {ladder}" if ladder else ""))


def cost_note(request: NcuRequest) -> str:
    """What --source makes ncu collect, said before profiling."""
    before = replace(request, source=False).ncu_options().sections
    added = [s for s in ncu_tool.SOURCE_SECTIONS if s not in before]
    what = f"sections {', '.join(added)} and " if added else ""
    # ncu tells a launch's passes only once it has replayed it; measured: docs/ncu-source.md, "What it costs".
    return (f"ncu --source: collecting {what}the kernels' source (--import-source yes): more replay passes of "
            "every profiled launch (27 instead of 19 on an H100 with ncu 2025.3.1; ncu's log gives the count)")


def ladder_note(request: NcuRequest) -> str | None:
    """What --ladder adds for each rung's top stall, said before profiling; None when nothing is added."""
    before = replace(request, ladder=False).ncu_options()
    # ncu's own set (full) names its sections itself: its cost is the set's
    if not request.ladder or before.set_name or ncu_tool.WARP_STATE_SECTION in before.sections:
        return None
    # measured with `run --with ncu`, which collects the same sections (docs/ladder.md, "Top stall")
    return (f"ncu --ladder: collecting section {ncu_tool.WARP_STATE_SECTION} for each rung's top stall: one more "
            "replay pass of every profiled launch (20 instead of 19 on an H100 with ncu 2025.3.1)")


def with_sources(run: NcuRun, cwd: Path | None = None) -> NcuRun:
    """The run with each result's `source` filled: one KernelSource per row, files named for the user."""
    here = (cwd or Path.cwd()).resolve()
    read: dict[Path, dict[int, KernelSource]] = {}
    results = []
    for result in run.results:
        if result.report is None or not result.rows:
            results.append(result)
            continue
        if result.report not in read:
            read[result.report] = {s.kernel_id: s for s in _read(result.report)}
        by_id = read[result.report]
        results.append(replace(result, source=[user_named(by_id[row.id], here) for row in result.rows
                                               if row.id in by_id]))
    return replace(run, results=results)


def _read(report: Path) -> list[KernelSource]:
    try:
        return ncu_tool.read_sources_isolated(report)
    except ncu_rep.NcuReportUnavailable:
        raise EnvironmentProblem("--source reads the report through NVIDIA's ncu_report module: pip install ncu-report "
                                 "(or reinstall gpuprof, which depends on it)") from None
    except InputError as exc:
        raise InputError(f"--source: {exc.message}") from None


def user_named(source: KernelSource, cwd: Path) -> KernelSource:
    """Files as the user opens them; line text read from that file where the report embeds none."""
    shown = {recorded: shown_file(recorded, cwd) for recorded in source.files}
    if not shown:
        return source
    local = {recorded: local_file(recorded, cwd) for recorded in source.files}
    lines = tuple(_renamed_line(line, shown[line.file], local[line.file]) for line in source.lines)
    sass = tuple(replace(s, file=shown.get(s.file, s.file)) for s in source.sass)
    return replace(source, files=shown, lines=lines, sass=sass)


def _renamed_line(line: LineStats, file: str, local: Path | None) -> LineStats:
    text = line.text
    if text is None and local is not None:
        try:
            content = local.read_text(errors="replace").splitlines()
            text = content[line.line - 1].strip() if 0 < line.line <= len(content) else None
        except OSError:
            pass
    return replace(line, file=file, text=text)


def ours(recorded: str) -> Path | None:
    """The file of gpuprof's own kernels a recorded name points at, in this installation: the part
    after its last `kernels` (NVRTC's `#line` name, variants.nvrtc) or `_kernels` (a wheel's folder,
    as nvcc records it) looked up under kernels_root(), wherever that is. None for other files."""
    parts = Path(recorded).parts
    marks = [i for i, part in enumerate(parts) if part in ("kernels", "_kernels")]
    if not marks or not parts[marks[-1] + 1:]:
        return None
    try:
        found = kernels_root().joinpath(*parts[marks[-1] + 1:])
    except InputError:
        return None
    return found if found.is_file() else None


def local_file(recorded: str, cwd: Path) -> Path | None:
    """Where the recorded file lies on this machine, to read its lines from: gpuprof's own kernels
    from the installed package (ours), any other file as recorded (relative to cwd)."""
    own = ours(recorded)
    if own is not None:
        return own
    path = Path(recorded)
    return path if path.is_absolute() else cwd / path


def shown_file(recorded: str, cwd: Path) -> str:
    """The name a compiler recorded, as the user should read it.

    gpuprof's own kernels are compiled by NVRTC with `#line 1 "kernels/<family>/<file>"`
    (variants.nvrtc.nvrtc_source), which ncu records joined to the folder it ran in. In a source
    checkout such a name is shown as kernels/<family>/<file> wherever the report was recorded; in an
    installed package (a wheel puts kernels/ at gpuprof/_kernels) as the path the package has the
    file at, relative to the working folder where it lies under it. Other files: relative to the
    working folder where they lie under it, else as recorded (an NVRTC '<hash>.cubin.cu' too)."""
    own = ours(recorded)
    if own is not None:
        root = kernels_root()
        if root.name == "kernels":  # a checkout or an editable install
            return display_path(own)
        return _under(own, cwd) or str(own)
    path = Path(recorded)
    if path.is_absolute():
        return _under(path, cwd) or recorded
    return recorded


def _under(path: Path, cwd: Path) -> str | None:
    try:
        return str(path.resolve().relative_to(cwd))
    except (ValueError, OSError):
        return None
