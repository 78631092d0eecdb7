"""`gpuprof suite --gpus`: one worker process per GPU, the suite's rows spread across them, one
merged results file (in the suite's order) rewritten atomically after every row.

Each GPU process sees only its GPU (CUDA_VISIBLE_DEVICES, set before anything touches CUDA; the
processes are spawned, never forked). The parent hands each GPU its next unit (one variant of one
case at one size) when it is free, so a fast GPU never waits for a slow one: longest first, a GPU
keeping to the families it has started, whose first-use costs it has paid (commands.suite_plan).
Before its first unit each GPU process starts its variant worker (imports, CUDA context, the timing
harness), so unit times are the units' own.
Kernels compile through CuPy's on-disk cache (one folder for every process), so a kernel one GPU
compiled is not compiled again by the other. Nothing passes between GPUs: no NCCL, no peer access.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gpuprof import results
from gpuprof.commands.run import DEFAULT_VARIANT_TIMEOUT_S, RunRequest, run_family, unit_outcome
from gpuprof.commands.suite import StepClock, case_variants, gpu_record, label_rows, policy_of, store_speedups
from gpuprof.commands.suite_plan import Dispatch, Unit, estimate_units, units_of
from gpuprof.errors import EnvironmentProblem, Finding, GpuprofError, Interrupted, UsageError
from gpuprof.families.described import joined
from gpuprof.measure import isolation
from gpuprof.progress import DONE, Progress, ProgressFn
from gpuprof.suite_file import Suite

__all__ = ["Unit", "UnitDone", "parse_gpus", "run_suite_on_gpus", "summary_line", "units_of", "visible_gpu_count"]

POLL_S = 1.0  # how often the parent checks that the GPU processes are still alive
_ERROR_BY_CODE = {1: Finding, 2: UsageError, 3: EnvironmentProblem, 130: Interrupted}


@dataclass(frozen=True)
class UnitDone:
    """What a GPU process sends back after one unit: its rows, or the error that stopped it, and
    when the unit ran (time.monotonic(): one clock for every process of the host)."""

    number: int
    gpu: int
    environment: dict[str, Any]
    rows: list[results.Row]
    error: tuple[int, str] | None = None  # (exit code, message)
    started: float = 0.0
    wall_s: float = 0.0
    families: dict[str, results.FamilyInfo] = field(default_factory=dict)  # its results' families block


RunUnit = Callable[[Suite, Unit, isolation.Worker, ProgressFn], results.Results]
Prepare = Callable[[isolation.Worker], None]


def gpu_indices(text: str) -> list[int] | None:
    """--gpus as written: None for 'all', else distinct indices; UsageError before any GPU is asked."""
    if text.strip().lower() == "all":
        return None
    try:
        chosen = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise UsageError(f"--gpus {text!r}: give 'all' or GPU indices like 0,1") from None
    if not chosen or len(set(chosen)) != len(chosen) or min(chosen) < 0:
        raise UsageError(f"--gpus {text!r}: give 'all' or distinct GPU indices like 0,1")
    return chosen


def parse_gpus(text: str, count: int) -> list[int]:
    """'all' -> every GPU; '0,1' -> those indices (as nvidia-smi numbers them), each once and present."""
    chosen = gpu_indices(text)
    if count < 1:
        raise EnvironmentProblem("--gpus: no CUDA GPU is visible")
    if chosen is None:
        return list(range(count))
    missing = [g for g in chosen if not 0 <= g < count]
    if missing:
        raise UsageError(f"--gpus {text!r}: GPU {missing[0]} does not exist (this machine has {count}: 0..{count - 1})")
    return chosen


def visible_gpu_count() -> int:
    """gpu.visible_gpu_count, its error said of --gpus."""
    from gpuprof import gpu

    try:
        return gpu.visible_gpu_count()
    except EnvironmentProblem as exc:
        raise EnvironmentProblem(f"--gpus: {exc.message}") from None


def run_unit(suite: Suite, unit: Unit, worker: isolation.Worker, progress: ProgressFn) -> results.Results:
    """The real work of one unit, inside a GPU process (its variants run in `worker`'s child)."""
    case = suite.cases[unit.case_index]
    return run_family(RunRequest(family=case.family, variants=[unit.variant], size=unit.size,
                                 policy=policy_of(suite.case_timing(case)), defines=case.defines,
                                 extra_variants=case_variants(suite, case), timeout_s=worker.timeout_s),
                      progress, worker=worker)


def warm_worker(worker: isolation.Worker) -> None:
    """Before the first unit: start the variant worker and its timing harness (imports, CUDA context,
    harness compile) in a thread while this process does its own one-time start-up: run_family reads
    the device, its free memory and the environment fingerprint here (CUDA context, PyTorch's version
    by importing it, nvcc --version), so the two start-ups overlap. A failure is left for the first
    unit to report, with that unit's name."""
    from gpuprof import fingerprint

    def start() -> None:
        with contextlib.suppress(GpuprofError):
            worker.run(_start_harness)

    starting = threading.Thread(target=start, name="gpuprof-warm-worker")
    starting.start()
    with contextlib.suppress(Exception):  # no GPU: the first unit says so
        fingerprint.environment()  # device_info, the torch import and nvcc's version stay cached for the units
    starting.join()


def _start_harness(emit: Callable[[Any], None] | None = None) -> None:
    from gpuprof.measure import timing

    with contextlib.suppress(Exception):  # no GPU, no driver: the first unit says so in its row or error
        timing.shared_harness()


def _gpu_process(gpu: int, suite: Suite, inbox: Any, done: Any, work: RunUnit, timeout_s: float,
                 prepare: Prepare | None) -> None:
    """A GPU's process: pin it to that GPU, start its worker, then run the units the parent sends
    until it sends None."""
    os.environ["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"  # the same numbering as nvidia-smi
    os.environ["CUDA_VISIBLE_DEVICES"] = str(gpu)
    with isolation.Worker(timeout_s) as worker:
        if prepare is not None:
            prepare(worker)
        while (unit := inbox.get()) is not None:
            started = time.monotonic()
            clock = StepClock()
            try:
                part = work(suite, unit, worker, clock)
                wall_s = time.monotonic() - started
                spent = clock.take()
                for row in part.rows:
                    row.gpu = gpu_record(gpu, part.environment, row, wall_s, spent)
                rows = label_rows(part.rows, suite.cases[unit.case_index])
                done.put(UnitDone(unit.number, gpu, part.environment, rows, started=started, wall_s=wall_s,
                                  families=part.families))
            except GpuprofError as exc:
                error = (exc.exit_code, str(exc))
                done.put(UnitDone(unit.number, gpu, {}, [], error, started, time.monotonic() - started))
            except Exception as exc:  # noqa: BLE001  (sent to the parent, which reports it in one line)
                done.put(UnitDone(unit.number, gpu, {}, [], (3, f"GPU {gpu}: {type(exc).__name__}: {exc}"),
                                  started, time.monotonic() - started))


def gpu_times(parts: list[UnitDone], began: float) -> dict[int, dict[str, Any]]:
    """Per GPU: units run, start-up (from the suite's start to its first unit), busy (the sum of its
    units) and wall (from the suite's start to the end of its last unit), in seconds."""
    times: dict[int, dict[str, Any]] = {}
    for gpu in sorted({p.gpu for p in parts}):
        own = [p for p in parts if p.gpu == gpu]
        first = min(p.started for p in own)
        times[gpu] = {"units": len(own), "startup_s": round(first - began, 3),
                      "busy_s": round(sum(p.wall_s for p in own), 3),
                      "wall_s": round(max(p.started + p.wall_s for p in own) - began, 3)}
    return times


def schedule_record(times: dict[int, dict[str, Any]], wall_s: float, estimates_from: str) -> dict[str, Any]:
    """The whole run: its wall time, and what one GPU would have taken (the mean start-up plus every
    unit's time: each unit's own time does not depend on the GPU count)."""
    startup = float(np.mean([t["startup_s"] for t in times.values()])) if times else 0.0
    return {"order": "longest first, by family", "estimates": estimates_from, "wall_s": round(wall_s, 3),
            "one_gpu_estimate_s": round(startup + sum(t["busy_s"] for t in times.values()), 3)}


def summary_line(environment: dict[str, Any]) -> str | None:
    """'2 GPUs: wall 41 s (busiest GPU 40 s, idlest 37 s); 1-GPU estimate 77 s' for a --gpus results file."""
    schedule, gpus = environment.get("schedule"), environment.get("gpus") or []
    walls = [g["wall_s"] for g in gpus if isinstance(g.get("wall_s"), (int, float))]
    if not isinstance(schedule, dict) or not walls:
        return None
    return (f"{len(gpus)} GPU{'s' if len(gpus) != 1 else ''}: wall {schedule['wall_s']:.0f} s "
            f"(busiest GPU {max(walls):.0f} s, idlest {min(walls):.0f} s); "
            f"1-GPU estimate {schedule['one_gpu_estimate_s']:.0f} s")


class _Merged:
    """Rows in the suite's order, whatever order the GPUs finish them in; saved after each unit."""

    def __init__(self, suite: Suite, json_out: Path | None, began: float, estimates_from: str) -> None:
        self.suite, self.json_out, self.began, self.estimates_from = suite, json_out, began, estimates_from
        self.parts: dict[int, UnitDone] = {}
        self.outcome: results.Results | None = None

    def add(self, part: UnitDone, now: float) -> None:
        self.parts[part.number] = part
        ordered = [self.parts[n] for n in sorted(self.parts)]
        times = gpu_times(ordered, self.began)
        gpus = {p.gpu: {"index": p.gpu, "uuid": p.environment.get("gpu_uuid"), "name": p.environment.get("gpu_name"),
                        **times[p.gpu]} for p in ordered}
        first = min(ordered, key=lambda p: p.gpu).environment
        self.outcome = results.Results(
            environment={**first, "gpus": [gpus[g] for g in sorted(gpus)],
                         "schedule": schedule_record(times, now - self.began, self.estimates_from)},
            rows=[row for p in ordered for row in p.rows],
            command=f"gpuprof suite {self.suite.path} --gpus {','.join(str(g) for g in sorted(gpus))}",
            timing_policy={"suite": self.suite.name, **self.suite.gate_timing(), **self.suite.timing},
            compare={"preset": self.suite.compare_preset},
        )
        for p in ordered:  # the suite's families, described by the units that ran them
            joined(self.outcome.families, p.families)
        store_speedups(self.outcome, only={row.family for row in part.rows})  # its table may span GPUs
        if self.json_out is not None:
            results.save(self.outcome, self.json_out)


def run_suite_on_gpus(suite: Suite, gpus: list[int], json_out: Path | None = None,
                      progress: ProgressFn | None = None, timeout_s: float = DEFAULT_VARIANT_TIMEOUT_S,
                      work: RunUnit = run_unit, history: results.Results | None = None,
                      prepare: Prepare | None = warm_worker) -> results.Results:
    """Run every unit of the suite on the listed GPUs at once; after each unit is saved, progress
    gets a DONE event for it ("family/variant" within "GPU 1:"), `index` counting the units done, its
    outcome the unit's row (as run's DONE events carry it).

    Each time a GPU is free it gets its next unit from suite_plan.Dispatch (longest first, keeping to
    the families it has started; estimated from `history`, an earlier results file, where it has the
    row). The first unit that fails with an error stops the hand-out: the GPUs finish what they hold,
    then the error is raised (as a single-GPU suite would). work is the per-unit job and prepare what
    each GPU process does before its first unit (tests pass fakes and None).
    """
    began = time.monotonic()
    units = units_of(suite)
    estimates = estimate_units(suite, units, history)
    dispatch = Dispatch(units, estimates, lambda unit: suite.cases[unit.case_index].family)
    context = multiprocessing.get_context("spawn")  # never fork a process that may hold CUDA
    inboxes, done = {gpu: context.Queue() for gpu in gpus}, context.Queue()
    processes = {gpu: context.Process(target=_gpu_process, name=f"gpuprof-gpu{gpu}", daemon=False,
                                      args=(gpu, suite, inboxes[gpu], done, work, timeout_s, prepare)) for gpu in gpus}
    merged = _Merged(suite, json_out, began, "+".join(sorted({e.source for e in estimates})))
    running: dict[int, Unit] = {}  # GPU -> the unit it holds
    failure: tuple[int, str] | None = None  # the first unit's error: (exit code, message)

    def hand_out(gpu: int) -> None:
        unit = dispatch.next_for(gpu)
        inboxes[gpu].put(unit)  # None: no more work, the process ends
        if unit is not None:
            running[gpu] = unit

    try:
        for gpu, process in processes.items():
            process.start()
            hand_out(gpu)
        received = 0
        while running:
            try:
                part = done.get(timeout=POLL_S)
            except queue.Empty:
                _check_alive(processes, running)
                continue
            received += 1
            del running[part.gpu]
            if part.error is not None and failure is None:
                failure = part.error
                received += dispatch.withdraw()
            hand_out(part.gpu)  # before saving: the GPU does not wait for the JSON
            if part.error is not None:
                continue
            merged.add(part, time.monotonic())
            if progress:
                unit = units[part.number]
                family = suite.cases[unit.case_index].family
                outcome = unit_outcome(part.rows[0], gpu=part.gpu) if part.rows else None
                progress(Progress(f"{family}/{unit.variant}", DONE, received - 1, len(units),
                                  within=f"GPU {part.gpu}:", outcome=outcome))
        for process in processes.values():
            process.join()
    finally:
        for gpu, process in processes.items():
            inboxes[gpu].cancel_join_thread()  # a stop marker a dead process never read must not hold up our exit
            if process.is_alive():  # only after an interrupt or an error above
                process.terminate()
                process.join(5)
    if failure is not None:
        code, message = failure
        raise _ERROR_BY_CODE.get(code, GpuprofError)(message)
    if merged.outcome is None:
        raise ValueError("a suite without cases")  # load_suite refuses those
    return merged.outcome


def _check_alive(processes: dict[int, Any], running: dict[int, Unit]) -> None:
    """A GPU process that died holding a unit (killed, out of host memory) will never report it."""
    for gpu, unit in running.items():
        if not processes[gpu].is_alive():
            raise EnvironmentProblem(f"the process of GPU {gpu} exited (exit code {processes[gpu].exitcode}) "
                                     f"while running unit {unit.number + 1} ({unit.variant})")
