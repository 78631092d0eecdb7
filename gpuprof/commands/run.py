"""`gpuprof run`'s core: for each variant, check at every size, then time at the benchmark size."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from gpuprof import families, fingerprint
from gpuprof.analysis import derive
from gpuprof.analysis.ceilings import Ceilings
from gpuprof.analysis.tables import Report, Table, table_rows
from gpuprof.commands import row_story
from gpuprof.errors import EnvironmentProblem, UsageError
from gpuprof.families import registry
from gpuprof.families.described import family_info
from gpuprof.families.interface import FamilyHost
from gpuprof.gpu import cupy, device_info
from gpuprof.measure import device_ceilings, integrity, isolation, library_warnings, timing
from gpuprof.measure.check import (
    WRITES_ONLY,
    LaunchFactory,
    OutputUse,
    Prepared,
    check_on_new_values,
    check_variant,
    recheck_after_timing,
    refresh_inputs,
    repoison,
)
from gpuprof.progress import DONE, Progress, ProgressFn, UnitOutcome
from gpuprof.results import FAULT, IMPOSSIBLE, OK, SKIPPED, TIMEOUT, WRONG, CheckResult, Results, Row, size_label
from gpuprof.variants import constraints
from gpuprof.variants.catalog import Family, Variant
from gpuprof.variants.launch_plan import host_synchronous, make_launch_factory
from gpuprof.variants.selection import VariantOptions
from gpuprof.variants.sizes import clip

DEFAULT_VARIANT_TIMEOUT_S = 300.0  # compile + check at every size + timing; a hang ends here
MEMORY_HEADROOM = 5.0  # inputs, their pristine copy, output, the float64 reference and its temporaries


@dataclass
class RunRequest:
    family: str
    variants: str | list[str] | None = None
    size: dict[str, int] | None = None
    policy: timing.TimingPolicy = field(default_factory=timing.TimingPolicy)
    check_only: bool = False
    extra_variants: list[Variant] = field(default_factory=list)
    defines: dict[str, int] = field(default_factory=dict)
    isolate: bool = True  # each variant in a worker process: a fault or hang costs only that variant
    timeout_s: float = DEFAULT_VARIANT_TIMEOUT_S  # per variant, with isolate
    baseline: str | None = None  # the variant speedups are relative to; None: the family's baseline
    # --with ncu,sanitize: after the run, each variant under those tools, into its row (commands/row_story.py)
    with_tools: tuple[str, ...] = ()
    variant_options: VariantOptions = field(default_factory=VariantOptions)  # what --with's children need
    with_out: Path = Path("gpuprof-with")  # their reports and logs
    check_sizes: list[dict[str, int]] = field(default_factory=list)  # --check-size: after the family's own
    # --audit: each OK row once more under ncu, its DRAM bytes judged (commands/byte_audit.py)
    audit: bool = False


def run_family(request: RunRequest, progress: ProgressFn | None = None,
               checkpoint: Callable[[Results], None] | None = None,
               worker: isolation.Worker | None = None) -> Results:
    """run_tables' results alone (what a suite keeps)."""
    return run_tables(request, progress, checkpoint, worker).results


def gpu_ceilings() -> Ceilings:
    """This GPU's ceilings, the ones its rows are judged against: its datasheet peaks, with the
    figures `devicequery --measure` cached for it alongside."""
    return device_ceilings.load(device_info())


def run_tables(request: RunRequest, progress: ProgressFn | None = None,
               checkpoint: Callable[[Results], None] | None = None,
               worker: isolation.Worker | None = None) -> Report:
    """Check and time each chosen variant; checkpoint(results) after every variant, so an
    interrupted run can keep what it finished. Every row is judged (analysis.derive) as it
    comes, and its speedups are stored once it is in: the report's one table is what `run` prints.

    With request.isolate each variant runs in a worker process (the one given, or one of this
    run's own): a variant that faults or hangs is reported as FAULT / TIMEOUT and the others still
    run. Without it everything runs here and the first sticky CUDA error ends the GPU work."""
    family = registry.resolve(request.family)
    if request.extra_variants:
        family = family.with_variants(request.extra_variants)
    if request.check_sizes:
        family = replace(family, check_sizes=(*family.check_sizes, *map(dict, request.check_sizes)))
    chosen = family.select(request.variants)
    chosen = family.apply_defines(chosen, request.defines)
    host = families.host(family)
    size = request.size or dict(family.default_size)
    device_info()
    _check_memory(host, size)
    if request.with_tools or request.audit:
        row_story.require_tools((*request.with_tools, *(("ncu",) if request.audit else ())))
    own = isolation.Worker(request.timeout_s) if request.isolate and worker is None else None
    with own or contextlib.nullcontext():
        report = _run_variants(family, chosen, host, size, request, progress, checkpoint, worker or own)
    if request.with_tools and not request.check_only:
        row_story.attach(report.results.rows, family, size, request.variant_options, request.with_tools,
                         request.with_out, progress)
        if checkpoint:
            checkpoint(report.results)
    if request.audit and "ncu" not in request.with_tools and not request.check_only:
        from gpuprof.commands import byte_audit

        byte_audit.audit(report.results.rows, family, size, request.variant_options, request.with_out / "audit",
                         progress)
        if checkpoint:
            checkpoint(report.results)
    return report


def _run_variants(family: Family, chosen: list[Variant], host: FamilyHost, size: dict[str, int],
                  request: RunRequest, progress: ProgressFn | None, checkpoint: Callable[[Results], None] | None,
                  worker: isolation.Worker | None) -> Report:
    baseline, vendor = request.baseline or family.baseline, family.vendor_reference
    # the file describes the family as this run used it: --baseline's variant is what its speedups are of
    described = replace(family_info(family, host), baseline=baseline)
    outcome = Results(environment=fingerprint.environment(), rows=[], timing_policy=request.policy.to_dict(),
                      created_utc=fingerprint.now_utc(), families={family.name: described})
    context_lost = ""
    limits = gpu_ceilings()  # datasheet ceilings: a median below their floor is IMPOSSIBLE
    tables: list[Table] = []
    for index, variant in enumerate(chosen):
        def report(step: str, variant: Variant = variant, index: int = index,
                   outcome: UnitOutcome | None = None) -> None:
            if progress:
                progress(Progress(variant.name, step, index, len(chosen), outcome=outcome))

        job = (family, variant, size, request.policy, request.check_only)
        if worker is not None:
            row = _run_isolated(worker, job, report)
        elif context_lost:
            row = _blank_row(family, variant, size, host)
            row.check.reasons.append(f"not run: {context_lost}")
        else:
            row = run_variant(*job, emit=report)
            if row.check.status == FAULT:
                context_lost = f"{variant.name} faulted and the CUDA context is lost"
        outcome.rows.append(derive.judge(row, limits, host.RATE))
        tables = _tables(outcome.rows, family, baseline, vendor, request.policy.mode, size, host.FORMULA)
        report(DONE, outcome=unit_outcome(row))
        if checkpoint:
            checkpoint(outcome)
    return Report(outcome, tables, limits)


def unit_outcome(row: Row, gpu: int | None = None) -> UnitOutcome:
    """What a finished row came to, for its DONE event (the suite's progress line)."""
    summary = row.timing.summary if row.timing else None
    return UnitOutcome(family=row.family, variant=row.variant, size=size_label(row.size), status=row.check.status,
                       median_s=summary.median_s if summary else None,
                       rate=row.derived.rate if row.derived else None,
                       rate_kind=row.derived.rate_kind if row.derived else "bytes",
                       reason="" if row.check.status == OK or not row.check.reasons else row.check.reasons[0],
                       gpu=gpu)


def _tables(rows: list[Row], family: Family, baseline: str, vendor: str | None, mode: str,
            size: dict[str, int], formula: str = "") -> list[Table]:
    """The run's rows as one table (all were asked to run at `size`), their speedups stored."""
    tables = []
    for (_, _, table_mode), group in table_rows(rows, mode, asked=size).items():
        derive.speedups(group, baseline, vendor)
        tables.append(Table(family, group, baseline, vendor, table_mode, formula))
    return tables


def _blank_row(family: Family, variant: Variant, size: dict[str, int], host: FamilyHost) -> Row:
    bench_size = clip(size, variant.max_size)
    return Row(family=family.name, variant=variant.name, size=bench_size, vendor=variant.vendor,
               check=CheckResult(status=SKIPPED), technique=variant.technique, defines=dict(variant.defines),
               flop=host.flop(bench_size), bytes=host.bytes_moved(bench_size), precision=variant.precision,
               flop_count=variant.flop_count)


def run_variant(family: Family, variant: Variant, size: dict[str, int], policy: timing.TimingPolicy,
                check_only: bool, emit: Callable[[str], None]) -> Row:
    """Check one variant at every check size and the benchmark size, then time it: one result row.
    Runs in a worker process when isolated (emit sends the progress steps to the parent). Warnings
    that libraries raise meanwhile are kept on the row (its `warnings`), never printed raw."""
    with library_warnings.caught() as raised:
        row = _check_and_time(family, variant, size, policy, check_only, emit)
    row.warnings = raised
    return row


def _check_and_time(family: Family, variant: Variant, size: dict[str, int], policy: timing.TimingPolicy,
                    check_only: bool, emit: Callable[[str], None]) -> Row:
    host = families.host(family)
    row = _blank_row(family, variant, size, host)
    steps: list[str] = []

    def step(name: str) -> None:  # the step a CUDA error happened in, for the row's reason
        steps.append(name)
        emit(name)

    plan = check_plan(family, variant, row.size)
    if plan.skip:
        row.check = constrained(CheckResult(status=SKIPPED, reasons=[plan.skip]), family, variant, plan)
        return row
    try:
        harness = timing.shared_harness()
        step("compile")
        launch_for = make_launch_factory(family, variant, host)
        step("check")
        row.check, prepared = check_variant(host, variant, launch_for, plan.sizes,
                                            harness.stream, family.inplace, family.check_launches,
                                            output_use(family, variant))
        row.check = constrained(row.check, family, variant, plan)
        if row.check.status == OK and not check_only:
            step("time")
            refresh_inputs(host, prepared)  # values no launch has seen, and an unwritten output
            launch = launch_for(prepared.inputs, prepared.out, prepared.size)
            row.timing = timing.measure(launch, harness, policy, host_synchronous=host_synchronous(variant))
            step("verify")
            audit_timed_launches(row.check, host, prepared, (launch, launch_for), harness, family.inplace,
                                 cupti=variant.vendor or not variant.is_cuda or variant.plan is not None,
                                 held=not host_synchronous(variant))  # a held stream would block its copies
        del prepared
    except _cuda_errors() as exc:
        # A sticky CUDA error (illegal address, launch failure) poisons the whole context.
        during = f" during {steps[-1]}" if steps else ""
        row.check = CheckResult(status=FAULT, reasons=[f"CUDA error{during}: {str(exc).splitlines()[0]}"])
        return row
    except EnvironmentProblem as exc:
        # This variant needs something the machine lacks (PyTorch for a vendor variant, say):
        # say so in its row and run the others.
        row.check = CheckResult(status=SKIPPED, reasons=[f"not run: {exc.message}"])
    cupy().get_default_memory_pool().free_all_blocks()
    return row


def check_plan(family: Family, variant: Variant, bench: dict[str, int]) -> constraints.CheckPlan:
    """The sizes to check the variant at under its constraints (the family's and its own), or why
    its benchmark size is not run (variants/constraints.py)."""
    return constraints.plan_check(family.requires(variant), family.dims, family.check_sizes, bench,
                                  variant.defines)


def constrained(check: CheckResult, family: Family, variant: Variant, plan: constraints.CheckPlan) -> CheckResult:
    """The check's result with what the constraints changed: the conditions, the sizes moved, the notes."""
    check.requires = list(family.requires(variant))
    check.replaced_sizes = plan.replaced
    check.notes = [*check.notes, *plan.notes]
    return check


def output_use(family: Family, variant: Variant) -> OutputUse:
    """How the variant treats its output: the manifest's reads_output, and the family's scalars as
    its `args` give them (their defaults without args: the family's own signature)."""
    if not variant.is_cuda or (variant.args is None and not variant.reads_output):
        return WRITES_ONLY
    from gpuprof.variants.user import scalar_values

    return OutputUse(variant.reads_output, scalar_values(family, variant) if variant.args is not None else {})


def audit_timed_launches(check: CheckResult, host: FamilyHost, prepared: Prepared,
                         launches: tuple[timing.Launch, LaunchFactory], harness: timing.Harness, inplace: bool,
                         cupti: bool = True, held: bool = True) -> None:
    """After timing: the last timed output and the inputs checked again, then one launch on new
    input values (WRONG); then the timed launch (launches: it and the factory it came from) audited
    for skipped work (WRONG) and for work on another stream (IMPOSSIBLE). cupti:
    also read the launch's CUPTI records (a callable or a host-side plan may pick its own stream;
    one kernel launched by gpuprof on the timed stream cannot, and the timing audit covers it).
    held=False: a host-synchronous unit, whose copies cannot be queued behind a held stream."""
    launch, launch_for = launches
    wrong = recheck_after_timing(host, prepared, harness.stream, inplace)
    if not wrong:
        wrong = check_on_new_values(host, prepared, launch_for, harness.stream)
    if not wrong:
        skipped = integrity.skips_when_written(launch, lambda: repoison(host, prepared), harness, held=held)
        wrong = [skipped] if skipped else []
    if wrong:
        check.status, check.reasons = WRONG, check.reasons + wrong
        return
    elsewhere = integrity.off_stream(launch, harness, cupti=cupti and held)
    if elsewhere:
        check.status, check.reasons = IMPOSSIBLE, check.reasons + [elsewhere]


def _run_isolated(worker: isolation.Worker, job: tuple, report: Callable[[str], None]) -> Row:
    family, variant, size, _policy, _check_only = job
    answer = worker.run(run_variant, job, on_event=report)
    if answer.status == isolation.DONE:
        row: Row = answer.value
        if row.check.status == FAULT:
            worker.retire()  # its CUDA context is poisoned; the next variant gets a fresh process
        return row
    row = _blank_row(family, variant, size, families.host(family))
    during = f" during {answer.last_event}" if answer.last_event else " while starting"
    if answer.status == isolation.TIMED_OUT:
        # The compile runs in the worker too, so NVRTC is held to the same limit as the kernel.
        why = ("a source whose macros or templates expand without end?" if answer.last_event == "compile"
               else "a kernel that never ends?")
        row.check = CheckResult(status=TIMEOUT, reasons=[(
            f"{answer.detail}{during}; its worker process was stopped ({why} --timeout sets the limit)")])
    else:
        row.check = CheckResult(status=FAULT, reasons=[f"{answer.detail}{during}"])
    return row


def _cuda_errors() -> tuple[type[BaseException], ...]:
    """CuPy's CUDA errors, and PyTorch's (torch.AcceleratorError, torch >= 2.8) once a vendor or
    Python variant has imported torch: a CUDA error raised through torch is the row's fault too."""
    cp = cupy()
    errors: tuple[type[BaseException], ...] = (cp.cuda.runtime.CUDARuntimeError, cp.cuda.driver.CUDADriverError)
    torch = sys.modules.get("torch")
    accelerator_error = getattr(torch, "AcceleratorError", None) if torch is not None else None
    if isinstance(accelerator_error, type) and issubclass(accelerator_error, BaseException):
        errors += (accelerator_error,)
    return errors


def _check_memory(host: FamilyHost, size: dict[str, int]) -> None:
    free, _total = cupy().cuda.runtime.memGetInfo()
    need = host.bytes_moved(size) * MEMORY_HEADROOM
    if need > free:
        raise UsageError(
            f"size {'x'.join(map(str, size.values()))} needs about {need / 2**30:.1f} GiB of GPU memory "
            f"but {free / 2**30:.1f} GiB is free; choose a smaller --size"
        )
