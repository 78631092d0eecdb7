"""Nsight Compute: argument lists, one profiled child per variant, the report kept on disk."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from gpuprof.errors import EnvironmentProblem, UsageError
from gpuprof.parsers.ncu_csv import NcuToolError, scan_messages
from gpuprof.tools import _proc

SECTIONS = ("SpeedOfLight", "Occupancy", "LaunchStats", "MemoryWorkloadAnalysis", "ComputeWorkloadAnalysis",
            "SpeedOfLight_RooflineChart")
_FLOP_OPS = [f"sm__sass_thread_inst_executed_op_{p}{op}_pred_on.sum" for p in "fdh" for op in ("add", "mul", "fma")]
# Tensor-pipe math ops by source precision: each equals 2·M·N·K for a torch 2048³ GEMM in TF32,
# BF16 and FP16 on the H100 (ncu 2025.3.1; tests/fixtures/tools/ncu-2025.3.1__torch-gemm-*); fp8,
# int8 and fp64 (DMMA) are the same family in `ncu --query-metrics` for gh100. A name a chip lacks
# is dropped by ncu without a word (TOOLS.md), so older GPUs just report no tensor FLOPs.
TENSOR_OPS = tuple(f"sm__ops_path_tensor_src_{p}.sum" for p in
                   ("tf32_dst_fp32", "bf16_dst_fp32", "fp16", "fp8", "int8", "fp64"))
# Asked for by name as well, so the tables never depend on what a section happens to include.
METRICS = (
    "gpu__time_duration.sum", "dram__bytes.sum", "dram__bytes_read.sum", "dram__bytes_write.sum",
    *_FLOP_OPS, *TENSOR_OPS, "sm__inst_executed_pipe_tensor.sum",
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
    messages = done.stdout + done.stderr
    try:
        scan_messages(messages)
        _raise_tool_errors(messages)
    except NcuToolError as exc:
        raise _as_gpuprof_error(exc) from None
    report = report_base.with_suffix(".ncu-rep")
    if not report.is_file():
        tail = " ".join(messages.strip().splitlines()[-3:])[-300:]
        raise EnvironmentProblem(f"ncu wrote no report (exit {done.returncode}): {tail}")
    return report


def run_import(ncu: str, report: Path, page: str) -> str:
    done = _proc.run(import_argv(ncu, report, page), timeout_s=IMPORT_TIMEOUT_S, env=c_locale_env())
    if done.returncode != 0:
        raise EnvironmentProblem(f"ncu --import {report} failed (exit {done.returncode}): {done.stdout[-300:]}")
    return done.stdout


def _raise_tool_errors(text: str) -> None:
    if "ERR_NVGPUCTRPERM" in text:
        raise NcuToolError("counters_not_permitted", "ERR_NVGPUCTRPERM")
    if "No kernels were profiled" in text:
        raise NcuToolError("no_kernels_profiled", "No kernels were profiled")


def _as_gpuprof_error(exc: NcuToolError) -> Exception:
    if exc.kind == "counters_not_permitted":
        return EnvironmentProblem(
            "ncu may not read the GPU's performance counters (ERR_NVGPUCTRPERM); run as root, or set the "
            "driver option NVreg_RestrictProfilingToAdminUsers=0 (see developer.nvidia.com/ERR_NVGPUCTRPERM)"
        )
    if exc.kind == "no_kernels_profiled":
        listed = f" (kernels seen: {', '.join(exc.available_kernels[:8])})" if getattr(exc, "available_kernels", None) else ""
        return EnvironmentProblem(f"ncu profiled no kernels: the filter matched nothing{listed}")
    return EnvironmentProblem(f"ncu failed: {exc.message}")
