"""What `gpuprof nsys` produces, whichever source gave it (nsys, an SQLite export, CUPTI through
gpuprof's injection library, the PyTorch profiler): one NsysSummary per profiled program inside an
NsysProfile, its JSON, and its folder."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from gpuprof.analysis.idle_time import IdleBreakdown
from gpuprof.errors import UsageError
from gpuprof.files import atomic_write_text
from gpuprof.parsers.nsys_stats import NsysApiSummary, NsysKernelSummary, NsysMemTimeSummary, NsysNvtxSummary
from gpuprof.progress import DONE, ProgressFn, tell
from gpuprof.tools.target import LaunchTarget
from gpuprof.variants.catalog import Family, Variant

JSON_SCHEMA = 1


@dataclass(frozen=True)
class RangeKernels:
    """The kernels launched inside one NVTX range (its path, "step/naive"; or outside every range)."""

    range: str
    kernels: tuple[NsysKernelSummary, ...]


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
    idle: IdleBreakdown | None = None  # where the GPU sat idle (None: the source gave no timestamps)
    # Per NVTX range, the kernels launched inside it (None: the source cannot tell, or no ranges).
    kernels_by_range: tuple[RangeKernels, ...] | None = None


@dataclass(frozen=True)
class NsysProfile:
    # "nsys", "sqlite" (an export read without nsys), "cupti" (gpuprof's CUPTI injection library, where nsys
    # cannot make a report) or "torch" (the PyTorch profiler, where that library cannot be built)
    source: str
    tool: str  # the nsys path, "sqlite", "CUPTI <version> activity API (...)" or "torch.profiler <version> (CUPTI)"
    out_dir: Path
    summaries: tuple[NsysSummary, ...]
    family: str | None = None
    size: dict[str, int] | None = None
    command: tuple[str, ...] = ()
    notice: str | None = None  # said once, before the tables: why the fallback was used, how to get nsys
    fallback_why: str | None = None  # the fallback's reason in a few words ("nsys is missing")

    @property
    def source_line(self) -> str:
        """Which timeline source gave these summaries, in words (profile's report and nsys's footer)."""
        if self.source in ("torch", "cupti"):
            return f"{self.tool} in place of nsys" + (f" ({self.fallback_why})" if self.fallback_why else "")
        return f"nsys at {self.tool}" if self.source == "nsys" else "an nsys SQLite export, read without nsys"

    @property
    def failed(self) -> list[NsysSummary]:
        return [s for s in self.summaries if s.error]

    def summary(self, label: str) -> NsysSummary:
        for s in self.summaries:
            if s.label == label:
                return s
        raise KeyError(label)


def each_variant_child(family: Family, variants: list[Variant], size: dict[str, int], step: str,
                       profile_child: Callable[[list[str], str, str], NsysSummary], *, count: int,
                       progress: ProgressFn | None = None, defines: dict[str, int] | None = None,
                       added: dict[str, tuple[str, ...]] | None = None) -> tuple[NsysSummary, ...]:
    """One `gpuprof launch` child per variant (launching only that variant), each profiled by
    profile_child(argv, "<family>-<variant>", variant) under nsys or CUPTI, so each summary is one
    variant's. defines (-D) go to every child; added maps a user variant's name to its --add options."""
    summaries = []
    for i, v in enumerate(variants):
        tell(progress, v.name, step, i, len(variants))
        target = LaunchTarget(family.name, v.name, size, count=count, locator=family.locator,
                              defines=dict(defines or {}), add=(added or {}).get(v.name, ()))
        summaries.append(profile_child(target.argv(), f"{family.name}-{v.name}", v.name))
        tell(progress, v.name, DONE, i, len(variants))
    return tuple(summaries)


def prepare_out_dir(out_dir: Path) -> Path:
    """Create the run directory; every report of the run is written inside it and nowhere else."""
    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"--out {out_dir} is a file; give a folder for the reports")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create --out {out_dir}: {exc.strerror or exc}") from None
    return out_dir


def to_dict(profile: NsysProfile) -> dict[str, Any]:
    def plain(x: Any) -> Any:
        if isinstance(x, Path):
            return str(x)
        if isinstance(x, dict):
            return {k: plain(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [plain(v) for v in x]
        return x

    # "schema" names the document as every gpuprof JSON does; gpuprof_nsys_schema is its version (older readers)
    return {"schema": "gpuprof.nsys", "schema_version": JSON_SCHEMA, "gpuprof_nsys_schema": JSON_SCHEMA,
            **plain(asdict(profile))}


def save_profile(profile: NsysProfile, path: Path) -> Path:
    """The summaries as JSON (times in ns), written atomically."""
    return atomic_write_text(Path(path), json.dumps(to_dict(profile), indent=1))
