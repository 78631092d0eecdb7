"""Where inside a kernel the time goes, from a `.ncu-rep`: sampled warp stalls, instructions and
memory traffic per source line and per SASS instruction, and the kernel's warp-state breakdown.

The per-instruction ("instanced") metrics of the SourceCounters section carry one value per
instruction address (their correlation ids); `source_info(address)` names the file and line the
compiler recorded (-lineinfo), and `source_files()` holds the text ncu embedded (--import-source
yes). The metric names and what each field means: docs/ncu-source.md.
"""

from __future__ import annotations

import json
import re
import sys
from collections import defaultdict
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Any

from gpuprof.errors import ParseError
from gpuprof.parsers import ncu_rep
from gpuprof.parsers.ncu_rep import NcuReportUnavailable

SCHEMA = "gpuprof.ncu.source/1"

# Sampled warps at each instruction, one metric per stall reason (all samples, issued or not).
SAMPLED = "smsp__pcsamp_warps_issue_stalled_"
INSTRUCTIONS = "inst_executed"  # warp-level instructions executed at each address
GLOBAL_SECTORS = "memory_l2_theoretical_sectors_global"
GLOBAL_SECTORS_IDEAL = "memory_l2_theoretical_sectors_global_ideal"
SHARED_WAVEFRONTS = "memory_l1_wavefronts_shared"
SHARED_WAVEFRONTS_IDEAL = "memory_l1_wavefronts_shared_ideal"
# WarpStateStats: warp cycles spent in each state per issued instruction, and their sum.
WARP_STATE = re.compile(r"smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio")
CYCLES_PER_ISSUE = "smsp__average_warp_latency_per_inst_issued.ratio"
FUNCTION_START = "launch__function_pcs"
# The sampler says "no_instructions" where the warp-state ratio says "no_instruction": one key for both.
_REASON_ALIASES = {"no_instructions": "no_instruction"}

NO_SAMPLES = ("the report has no sampled warp stalls per instruction: it was collected without the SourceCounters "
              "section (gpuprof ncu --source adds it, with WarpStateStats and --import-source yes; or ncu --set full)")
NO_LINE_INFO = ("the kernel was built without -lineinfo, so its stalls are shown for the whole kernel (and per "
                "SASS instruction in --json); add -lineinfo to the nvcc line (or NVRTC's options) for the lines")


@dataclass(frozen=True)
class LineStats:
    """One source line of a kernel: what its instructions did, summed over them."""

    file: str  # as the user reads it (parsed: the name the compiler recorded)
    line: int
    text: str | None  # the line, stripped; None when the report embeds no source and none was found
    samples: int  # warp samples at the line's instructions, every reason
    stalls: dict[str, int]  # samples by reason (reasons with none left out)
    instructions: int  # warp-level instructions executed
    global_requests: int = 0  # warp-level executions of the line's global loads and stores
    global_sectors: int = 0  # 32-byte sectors those requests touched
    global_sectors_ideal: int = 0  # sectors if each request touched only the bytes it used
    shared_wavefronts: int = 0  # shared-memory wavefronts (passes through the banks)
    shared_wavefronts_ideal: int = 0  # wavefronts without bank conflicts

    @property
    def sectors_per_request(self) -> float | None:
        return self.global_sectors / self.global_requests if self.global_requests else None

    @property
    def excessive_sectors_pct(self) -> float | None:
        """Share of the sectors beyond the ideal: 0 for coalesced accesses."""
        if not self.global_sectors:
            return None
        return 100.0 * max(self.global_sectors - self.global_sectors_ideal, 0) / self.global_sectors

    @property
    def bank_conflict_wavefronts(self) -> int:
        """Excessive shared-memory wavefronts: the extra passes bank conflicts cost."""
        return max(self.shared_wavefronts - self.shared_wavefronts_ideal, 0)

    @property
    def wavefronts_per_ideal(self) -> float | None:
        """1.0: conflict-free; 4.0: every access took four passes (a 4-way conflict on average)."""
        return self.shared_wavefronts / self.shared_wavefronts_ideal if self.shared_wavefronts_ideal else None


@dataclass(frozen=True)
class SassInstruction:
    address: int  # as the report records it (the loaded module's address)
    offset: int  # from the kernel's first instruction, as cuobjdump counts
    sass: str
    file: str  # "" where the instruction has no line information
    line: int  # 0 where the instruction has no line information
    samples: int
    stalls: dict[str, int]
    instructions: int


@dataclass(frozen=True)
class KernelSource:
    """One profiled launch (`kernel_id` = NcuKernelRow.id): per line, per instruction, and per state."""

    kernel_id: int
    kernel_name: str
    missing: str | None = None  # why there are no stalls per line to show; None when there are
    samples: int = 0  # every warp sample of the kernel
    stalls: dict[str, int] = field(default_factory=dict)  # the kernel's samples by reason
    cycles_per_issue: float | None = None  # warp cycles per issued instruction, every state together
    warp_states: dict[str, float] = field(default_factory=dict)  # those cycles by state
    files: dict[str, str] = field(default_factory=dict)  # name the compiler recorded -> name shown
    lines: tuple[LineStats, ...] = ()  # by file, then line
    sass: tuple[SassInstruction, ...] = ()  # by address
    schema: str = SCHEMA

    def share(self, samples: float) -> float:
        """Samples as a percentage of the kernel's."""
        return 100.0 * samples / self.samples if self.samples else 0.0


def load_sources(path: str | Path) -> list[KernelSource]:
    """One KernelSource per profiled launch, in report order (ids as parsers.ncu_rep.load_report gives)."""
    ncu_report, ctx = ncu_rep.open_report(path)
    out: list[KernelSource] = []
    try:
        for r in range(ctx.num_ranges()):
            rng = ctx.range_by_idx(r)
            for a in range(rng.num_actions()):
                out.append(_kernel_source(ncu_report, rng.action_by_idx(a), len(out), path))
    except (TypeError, ValueError, RuntimeError, SystemError, UnicodeError, AttributeError) as exc:
        why = f"corrupted report ({type(exc).__name__}: {ncu_rep.one_line(exc)})"
        raise ParseError(path, f"result {len(out)}", why) from None
    if not out:
        raise ParseError(path, "file", "no profiling results in the file (not an ncu report, or empty)")
    return out


def _kernel_source(ncu_report: ModuleType, action: Any, index: int, path: str | Path) -> KernelSource:
    name = action.name(ncu_report.IAction.NameBase_DEMANGLED)
    if not isinstance(name, str) or not name:
        raise ParseError(path, f"result {index}", "corrupted report: the kernel has no name")
    states = _warp_states(action)
    base = KernelSource(index, name, samples=0, cycles_per_issue=_scalar(action, CYCLES_PER_ISSUE), warp_states=states)
    by_reason = {_REASON_ALIASES.get(n[len(SAMPLED):], n[len(SAMPLED):]): _per_address(action, n)
                 for n in action.metric_names() if n.startswith(SAMPLED) and not n.endswith("_not_issued")}
    executed = _per_address(action, INSTRUCTIONS)
    if not executed and not any(by_reason.values()):
        return replace(base, missing=NO_SAMPLES)
    addresses = sorted(set(executed).union(*by_reason.values()))
    start = _function_start(action) or addresses[0]
    memory = {n: _per_address(action, n) for n in (GLOBAL_SECTORS, GLOBAL_SECTORS_IDEAL, SHARED_WAVEFRONTS,
                                                    SHARED_WAVEFRONTS_IDEAL)}
    sass = []
    for address in addresses:
        stalls = _sum_stalls([{r: v[address] for r, v in by_reason.items() if v.get(address)}])
        info = action.source_info(address)
        file, line = (info.file_name(), info.line()) if info is not None else ("", 0)
        sass.append(SassInstruction(address, address - start, " ".join(action.sass_by_pc(address).split()), file,
                                    line, sum(stalls.values()), stalls, executed.get(address, 0)))
    kernel_stalls = _sum_stalls(s.stalls for s in sass)
    texts = {f: t.splitlines() for f, t in action.source_files().items() if isinstance(f, str) and t}
    lines = _lines(sass, memory, texts)
    files = {f: f for f in sorted({s.file for s in sass if s.file})}
    missing = NO_SAMPLES if not kernel_stalls else None if lines else NO_LINE_INFO
    return replace(base, missing=missing, samples=sum(kernel_stalls.values()),
                   stalls=kernel_stalls, files=files, lines=tuple(lines), sass=tuple(sass))


def _lines(sass: list[SassInstruction], memory: dict[str, dict[int, int]],
           texts: dict[str, list[str]]) -> list[LineStats]:
    grouped: dict[tuple[str, int], list[SassInstruction]] = defaultdict(list)
    for s in sass:
        if s.file and s.line > 0:
            grouped[(s.file, s.line)].append(s)
    out = []
    for (file, line), members in sorted(grouped.items()):
        addresses = [s.address for s in members]

        def total(metric: str, addresses: list[int] = addresses) -> int:
            return sum(memory[metric].get(a, 0) for a in addresses)

        # A request is one warp-level execution of a global load or store (ncu's "L1 Tag Requests
        # Global" counts cache-line lookups instead: 32 for a fully scattered warp).
        requests = sum(s.instructions for s in members if memory[GLOBAL_SECTORS].get(s.address))
        stalls = _sum_stalls(s.stalls for s in members)
        source = texts.get(file)
        text = source[line - 1].strip() if source is not None and 0 < line <= len(source) else None
        out.append(LineStats(file, line, text, sum(stalls.values()), stalls, sum(s.instructions for s in members),
                             requests, total(GLOBAL_SECTORS), total(GLOBAL_SECTORS_IDEAL),
                             total(SHARED_WAVEFRONTS), total(SHARED_WAVEFRONTS_IDEAL)))
    return out


def _sum_stalls(parts: Any) -> dict[str, int]:
    total: dict[str, int] = defaultdict(int)
    for stalls in parts:
        for reason, n in stalls.items():
            total[reason] += n
    return dict(sorted(total.items(), key=lambda kv: (-kv[1], kv[0])))


def _per_address(action: Any, name: str) -> dict[int, int]:
    """An instanced metric as {instruction address: value}; {} when the report lacks it."""
    metric = action.metric_by_name(name)
    if metric is None or metric.num_instances() == 0 or not metric.has_correlation_ids():
        return {}
    ids = metric.correlation_ids()
    out: dict[int, int] = {}
    for i in range(metric.num_instances()):
        value = metric.as_uint64(i)
        if value:
            address = ids.as_uint64(i)
            out[address] = out.get(address, 0) + value
    return out


def _function_start(action: Any) -> int | None:
    metric = action.metric_by_name(FUNCTION_START)
    if metric is None:
        return None
    if metric.num_instances() > 0:
        return min(metric.as_uint64(i) for i in range(metric.num_instances()))
    return metric.as_uint64() or None


def _scalar(action: Any, name: str) -> float | None:
    metric = action.metric_by_name(name)
    if metric is None or not metric.has_value():
        return None
    return float(metric.as_double())


def _warp_states(action: Any) -> dict[str, float]:
    states = {}
    for name in action.metric_names():
        m = WARP_STATE.fullmatch(name) if isinstance(name, str) else None
        if m:
            value = _scalar(action, name)
            if value is not None:
                states[m.group(1)] = value
    return dict(sorted(states.items(), key=lambda kv: (-kv[1], kv[0])))


# ---------------------------------------------------------------------------------------------
# JSON both ways: the report is read in a child process (`python -m gpuprof.parsers.ncu_source`),
# as parsers.ncu_rep's rows are, because ncu_report can abort the interpreter on a corrupt file.

def to_json(sources: list[KernelSource]) -> str:
    return json.dumps([asdict(s) for s in sources])


def from_dict(d: dict[str, Any]) -> KernelSource:
    return KernelSource(**{**d, "lines": tuple(LineStats(**x) for x in d["lines"]),
                           "sass": tuple(SassInstruction(**x) for x in d["sass"])})


def from_json(text: str) -> list[KernelSource]:
    return [from_dict(d) for d in json.loads(text)]


def main(argv: list[str]) -> int:
    try:
        sources = load_sources(argv[0])
    except NcuReportUnavailable as exc:
        print(exc, file=sys.stderr)
        return ncu_rep.CHILD_UNAVAILABLE
    except ParseError as exc:
        print(exc.message, file=sys.stderr)
        return ncu_rep.CHILD_PARSE_ERROR
    sys.stdout.write(to_json(sources))
    return ncu_rep.CHILD_OK


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
