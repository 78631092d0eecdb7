"""Nsight Compute: argument lists, one profiled child per variant, the report kept on disk."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from gpuprof.errors import CountersNotPermitted, EnvironmentProblem, InputError, NoKernelsProfiled, UsageError
from gpuprof.files import atomic_write_text
from gpuprof.parsers import ncu_rep, ncu_source
from gpuprof.parsers.ncu_csv import scan_messages
from gpuprof.parsers.ncu_metrics import NcuKernelRow
from gpuprof.tools import _proc

# Every section adds metrics, and under kernel replay every pass re-runs each profiled launch
# (14 passes for the set below plus MemoryWorkloadAnalysis on the H100). Only what the tables,
# the advice list and the roofline read: SOL %, occupancy and its limiter, launch statistics,
# ComputeWorkloadAnalysis's pipe rules, and the roofline chart's rule (its metrics are also named
# in METRICS). MemoryWorkloadAnalysis (L1/L2 hit rates, byte/s) feeds no column, and none of its
# rules fired on the recorded reports: `--section MemoryWorkloadAnalysis` or `--set full` adds it.
SECTIONS = ("SpeedOfLight", "Occupancy", "LaunchStats", "ComputeWorkloadAnalysis", "SpeedOfLight_RooflineChart")
_FLOP_OPS = [f"sm__sass_thread_inst_executed_op_{p}{op}_pred_on.sum" for p in "fdh" for op in ("add", "mul", "fma")]
# Tensor-pipe math ops by source precision: each equals 2·M·N·K for a torch 2048³ GEMM in TF32,
# BF16 and FP16 on the H100 (ncu 2025.3.1; tests/fixtures/tools/ncu-2025.3.1__torch-gemm-*); fp8,
# int8 and fp64 (DMMA) are the same family in `ncu --query-metrics` for gh100. A name a chip lacks
# is dropped by ncu without a word (docs/tools.md, "ncu: metrics other GPUs lack"), so older GPUs just report
# no tensor FLOPs.
TENSOR_OPS = tuple(f"sm__ops_path_tensor_src_{p}.sum" for p in
                   ("tf32_dst_fp32", "bf16_dst_fp32", "fp16", "fp8", "int8", "fp64"))
# The dense paths of the instructions a hand-written tensor-core kernel issues (HMMA: mma.sync and
# WMMA; HGMMA: Hopper's wgmma), each with its peak: the roof the ladder judges such a kernel against
# (parsers/ncu_levels.py). Names as ncu 2025.3.1 lists them for gh100 (the torch GEMM fixture above).
TENSOR_PATHS = tuple(f"op_{op}_src_{src}_sparsity_off" for op in ("hmma", "hgmma")
                     for src in ("bf16_dst_fp32", "tf32_dst_fp32")) + (
    "op_hmma_src_fp16_dst_fp32_sparsity_off", "op_hmma_src_fp16_dst_fp16_sparsity_off",
    "op_hgmma_src_fp16_sparsity_off")
TENSOR_PATH_METRICS = tuple(f"sm__ops_path_tensor_{path}.sum{suffix}" for path in TENSOR_PATHS
                            for suffix in ("", ".peak_sustained"))
# The hierarchical roofline's raw counters (docs/tools.md, "ncu: hierarchical roofline"): other
# roll-ups of counters the sections above already collect. Measured on the H100 (ncu 2025.3.1,
# tests/programs/matmul_lineinfo.cu): 19 passes per kernel with and without them; ncu's own
# hierarchical roofline sections would add one pass, SourceCounters (for the excessive sectors) two.
LEVEL_METRICS = (
    "l1tex__lsu_writeback_active_mem_lgds.sum.per_second", "l1tex__lsu_writeback_active_mem_lgds.sum.peak_sustained",
    "lts__lts2xbar_cycles_active.sum.per_second", "lts__lts2xbar_cycles_active.sum.peak_sustained",
    "l1tex__cycles_elapsed.avg.per_second", "l1tex__cycles_elapsed.sum.per_second",
    "lts__cycles_elapsed.avg.per_second", "dram__bytes.sum.per_second", "l1tex__data_pipe_lsu_wavefronts.sum",
    "l1tex__data_pipe_lsu_wavefronts.sum.peak_sustained", "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
)
# Asked for by name as well, so the tables never depend on what a section happens to include.
METRICS = (
    "gpu__time_duration.sum", "dram__bytes.sum", "dram__bytes_read.sum", "dram__bytes_write.sum",
    *_FLOP_OPS, *TENSOR_OPS, *TENSOR_PATH_METRICS, "sm__inst_executed_pipe_tensor.sum",
    "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained",
    "sm__sass_thread_inst_executed_op_dfma_pred_on.sum.peak_sustained",
    # the half pipe's peak (HFMA2), so a kernel of FP16 arithmetic gets its roofline by level
    "sm__sass_thread_inst_executed_op_hfma_pred_on.sum.peak_sustained",
    "sm__cycles_elapsed.avg.per_second", "dram__bytes.sum.peak_sustained", "dram__cycles_elapsed.avg.per_second",
    *(f"launch__occupancy_limit_{k}" for k in ("registers", "shared_mem", "warps", "blocks", "barriers")),
    "launch__registers_per_thread", "launch__shared_mem_per_block_static", "launch__shared_mem_per_block_dynamic",
    *LEVEL_METRICS,
    # Warp instructions executed, for the ladder's "what changed" (analysis.ladder): the counter
    # ComputeWorkloadAnalysis already collects for its IPC, so no extra replay pass.
    "smsp__inst_executed.sum",
)
# What `--source` adds: per-instruction counters and warp-state samples (SourceCounters), the
# kernel's warp-state breakdown (WarpStateStats), and the source text itself (--import-source yes),
# so a report shows its lines on any machine. Each section costs replay passes of every profiled launch.
# WarpStateStats alone (the kernel's warp cycles per issued instruction, by state) is what `--ladder`
# adds for each rung's top stall: 19 -> 20 replay passes per launch on the H100 (ncu 2025.3.1).
WARP_STATE_SECTION = "WarpStateStats"
SOURCE_SECTIONS = ("SourceCounters", WARP_STATE_SECTION)


@dataclass(frozen=True)
class Preset:
    """A `--set` of gpuprof's: what ncu collects beside METRICS, and what that cost on the H100."""

    sections: tuple[str, ...]
    ncu_set: str | None  # ncu's own --set, when the preset is one
    source: bool  # --import-source yes, and the per-line view
    h100_passes: int  # profiler__replayer_passes per launch, measured (docs/ncu-json.md, "Presets")
    gives: str


# Pass counts measured on the H100 with ncu 2025.3.1 (tests/fixtures/tools/ncu-2025.3.1__*_lineinfo*):
# they grow with the sections, not with the kernel.
PRESETS = {
    "basic": Preset(SECTIONS, None, False, 19, "the summary, advice and the L1/L2/DRAM roofline"),
    "why": Preset(SECTIONS + SOURCE_SECTIONS, None, True, 27, "basic + stall reasons and the hottest source lines"),
    "full": Preset((), "full", True, 38, "ncu's full set (every section) + the source lines"),
}
CLOCK_CONTROLS = ("none", "base")
PROFILE_TIMEOUT_S = 600.0
IMPORT_TIMEOUT_S = 120.0
READER_TIMEOUT_S = 300.0  # a large report of a whole program takes tens of seconds through ncu_report
T = TypeVar("T")


@dataclass(frozen=True)
class NcuOptions:
    clock_control: str = "none"  # never change the card's clocks unless asked (docs/tools.md, "Clocks")
    sections: tuple[str, ...] = SECTIONS
    metrics: tuple[str, ...] = METRICS
    set_name: str | None = None
    nvtx_include: tuple[str, ...] = ()
    kernel_regex: str | None = None
    launch_skip: int = 0  # matching launches skipped first (warm-up), per kernel when per_kernel
    launch_count: int | None = None  # matching launches profiled at most (None: all)
    # skip/count apply to each launch configuration (docs/tools.md, "ncu: launch filters"), not globally
    per_kernel: bool = False
    import_source: bool = False  # embed the kernels' source files in the report (needs -lineinfo)
    extra: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if self.clock_control not in CLOCK_CONTROLS:
            raise UsageError(f"unknown --clock-control '{self.clock_control}'; "
                             f"choose from: {', '.join(CLOCK_CONTROLS)}")
        if self.launch_skip < 0 or (self.launch_count is not None and self.launch_count < 1):
            raise UsageError("--launch-skip must be 0 or more and --launch-count 1 or more")

    def describe_filter(self) -> str:
        """The launch filter in words, for the table title ("" when every launch is profiled)."""
        if not self.launch_skip and self.launch_count is None:
            return ""
        scope = " of each kernel launch configuration" if self.per_kernel else ""
        skip = f"first {self.launch_skip} skipped, " if self.launch_skip else ""
        count = f"{self.launch_count} profiled" if self.launch_count is not None else "the rest profiled"
        return f"launches{scope}: {skip}{count}"


def find_ncu(explicit: str | Path | None = None) -> str:
    return _proc.find_tool("ncu", explicit,
                           hint="install Nsight Compute (it comes with the CUDA toolkit) or pass --ncu PATH")


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
    if options.launch_skip:
        argv += ["--launch-skip", str(options.launch_skip)]
    if options.launch_count is not None:
        argv += ["--launch-count", str(options.launch_count)]
    if options.per_kernel and (options.launch_skip or options.launch_count is not None):
        # Skip and count per (kernel, grid, block, shared memory): the first N launches of each kernel.
        argv += ["--filter-mode", "per-launch-config"]
    if options.import_source:
        argv += ["--import-source", "yes"]
    argv += [*options.extra, "--force-overwrite", "--export", str(report_base), *target]
    return argv


def import_argv(ncu: str, report: Path, page: str) -> list[str]:
    # --print-units base must be repeated on --import, or units come back scaled
    # (docs/tools.md, "ncu: CSV pages, units and locale").
    return [ncu, "--import", str(report), "--csv", "--page", page, "--print-units", "base"]


def c_locale_env() -> dict[str, str]:
    """LC_ALL=C: ncu groups thousands ('1,234') under other locales (docs/tools.md, "ncu: CSV pages, units and
    locale")."""
    return {**os.environ, "LC_ALL": "C"}


def run_profile(argv: list[str], report_base: Path, log: Path, timeout_s: float = PROFILE_TIMEOUT_S) -> Path:
    """Run ncu; keep its console output in `log`; return the .ncu-rep path."""
    done = _proc.run(argv, timeout_s=timeout_s, env=c_locale_env())
    atomic_write_text(log, done.stdout + done.stderr)  # never through a link left in the folder
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


def read_report_isolated(report: Path, timeout_s: float = READER_TIMEOUT_S) -> list[NcuKernelRow]:
    """Rows of a .ncu-rep read by ncu_report in a child process, so a native abort cannot end gpuprof.

    Raises NcuReportUnavailable when the module is not installed (the caller falls back to
    `ncu --import` CSV), and InputError (exit 2) for a file the reader rejects or dies on."""
    return _read_in_child("gpuprof.parsers.ncu_rep", ncu_rep.rows_from_json, report, timeout_s)


def read_sources_isolated(report: Path, timeout_s: float = READER_TIMEOUT_S) -> list[ncu_source.KernelSource]:
    """Per-line and per-instruction data of a .ncu-rep (parsers.ncu_source), read as read_report_isolated reads rows."""
    return _read_in_child("gpuprof.parsers.ncu_source", ncu_source.from_json, report, timeout_s)


def _read_in_child(module: str, decode: Callable[[str], list[T]], report: Path, timeout_s: float) -> list[T]:
    done = _proc.run([sys.executable, "-m", module, str(report)], timeout_s=timeout_s, env=_proc.python_child_env())
    said = " ".join(done.stderr.split())[-300:]
    if done.returncode == ncu_rep.CHILD_OK:
        try:
            return decode(done.stdout)
        except (ValueError, TypeError, KeyError) as exc:
            raise InputError(f"{report}: not a readable .ncu-rep (the reader's answer was cut: {exc})") from None
    if done.returncode == ncu_rep.CHILD_UNAVAILABLE:
        raise ncu_rep.NcuReportUnavailable(said)
    if done.returncode == ncu_rep.CHILD_PARSE_ERROR:
        raise InputError(said or f"{report}: not a readable .ncu-rep")
    raise InputError(f"{report}: not a readable .ncu-rep (the ncu_report reader {_death(done.returncode)})")


def _death(code: int) -> str:
    # subprocess gives -N for a child killed by signal N; a shell-style 128+N is read the same way.
    number = -code if code < 0 else code - 128 if code > 128 else None
    if number is not None:
        try:
            return f"was killed by {signal.Signals(number).name}"
        except ValueError:
            pass
    return f"exited with code {code}"
