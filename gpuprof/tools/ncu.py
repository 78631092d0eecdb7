"""Nsight Compute: argument lists, one profiled child per variant, the report kept on disk."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from gpuprof.errors import CountersNotPermitted, EnvironmentProblem, InputError, NoKernelsProfiled, UsageError
from gpuprof.parsers.ncu_csv import scan_messages
from gpuprof.tools import _proc

SECTIONS = ("SpeedOfLight", "Occupancy", "LaunchStats", "MemoryWorkloadAnalysis", "ComputeWorkloadAnalysis",
            "SpeedOfLight_RooflineChart")
_FLOP_OPS = [f"sm__sass_thread_inst_executed_op_{p}{op}_pred_on.sum" for p in "fdh" for op in ("add", "mul", "fma")]
# Asked for by name as well, so the tables never depend on what a section happens to include.
METRICS = (
    "gpu__time_duration.sum", "dram__bytes.sum", "dram__bytes_read.sum", "dram__bytes_write.sum",
    *_FLOP_OPS,
    "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained",
    "sm__sass_thread_inst_executed_op_dfma_pred_on.sum.peak_sustained",
    "sm__cycles_elapsed.avg.per_second", "dram__bytes.sum.peak_sustained", "dram__cycles_elapsed.avg.per_second",
    *(f"launch__occupancy_limit_{k}" for k in ("registers", "shared_mem", "warps", "blocks", "barriers")),
    "launch__registers_per_thread", "launch__shared_mem_per_block_static", "launch__shared_mem_per_block_dynamic",
)
CLOCK_CONTROLS = ("none", "base")
PROFILE_TIMEOUT_S = 600.0
IMPORT_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class NcuOptions:
    clock_control: str = "none"  # never change the card's clocks unless asked (DESIGN.md)
    sections: tuple[str, ...] = SECTIONS
    metrics: tuple[str, ...] = METRICS
    set_name: str | None = None
    nvtx_include: tuple[str, ...] = ()
    kernel_regex: str | None = None
    extra: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if self.clock_control not in CLOCK_CONTROLS:
            raise UsageError(f"unknown --clock-control '{self.clock_control}'; choose from: {', '.join(CLOCK_CONTROLS)}")


def find_ncu(explicit: str | Path | None = None) -> str:
    return _proc.find_tool("ncu", explicit, hint="install Nsight Compute (it comes with the CUDA toolkit) or pass --ncu PATH")


def profile_argv(ncu: str, options: NcuOptions, report_base: Path, target: list[str]) -> list[str]:
    argv = [ncu, "--clock-control", options.clock_control]
    if options.set_name:
        argv += ["--set", options.set_name]
    for section in options.sections:
        argv += ["--section", section]
    if options.metrics:
        argv += ["--metrics", ",".join(options.metrics)]
    if options.nvtx_include:
        argv.append("--nvtx")
        for expression in options.nvtx_include:
            argv += ["--nvtx-include", expression]
    if options.kernel_regex:
        argv += ["--kernel-name", f"regex:{options.kernel_regex}"]
    argv += [*options.extra, "--force-overwrite", "--export", str(report_base), *target]
    return argv


def import_argv(ncu: str, report: Path, page: str) -> list[str]:
    # --print-units base must be repeated on --import, or units come back scaled (TOOLS.md 1.8).
    return [ncu, "--import", str(report), "--csv", "--page", page, "--print-units", "base"]


def c_locale_env() -> dict[str, str]:
    """LC_ALL=C: ncu groups thousands ('1,234') under other locales (TOOLS.md 1.8)."""
    return {**os.environ, "LC_ALL": "C"}


def run_profile(argv: list[str], report_base: Path, log: Path, timeout_s: float = PROFILE_TIMEOUT_S) -> Path:
    """Run ncu; keep its console output in `log`; return the .ncu-rep path."""
    done = _proc.run(argv, timeout_s=timeout_s, env=c_locale_env())
    log.write_text(done.stdout + done.stderr)
    _raise_tool_errors(done.stdout + done.stderr)
    report = report_base.with_suffix(".ncu-rep")
    if not report.is_file():
        tail = " ".join((done.stdout + done.stderr).strip().splitlines()[-3:])[-300:]
        raise EnvironmentProblem(f"ncu wrote no report (exit {done.returncode}): {tail}")
    return report


def run_import(ncu: str, report: Path, page: str) -> str:
    done = _proc.run(import_argv(ncu, report, page), timeout_s=IMPORT_TIMEOUT_S, env=c_locale_env())
    if done.returncode != 0:
        said = " ".join((done.stdout + done.stderr).split())[-300:]
        raise InputError(f"{report}: not a readable .ncu-rep (ncu --import exit {done.returncode}: {said})")
    return done.stdout


def _raise_tool_errors(text: str) -> None:
    """ncu's own failure lines, decided once here: the typed errors carry what the callers decide on."""
    messages = scan_messages(text)
    if messages.counters_not_permitted:
        raise CountersNotPermitted(next((e for e in messages.errors if "ERR_NVGPUCTRPERM" in e), "ERR_NVGPUCTRPERM"))
    if messages.no_kernels_profiled:
        raise NoKernelsProfiled("ncu profiled no kernels: the filter matched nothing", messages.available_kernels)
