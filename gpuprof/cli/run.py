"""`gpuprof run`, `gpuprof suite` and the hidden `gpuprof launch`: check, then time each variant; one table,
optional JSON."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from gpuprof.cli._app import app
from gpuprof.cli._boundary import err_console, exit_on_error, status
from gpuprof.cli._options import (
    Force,
    JsonOut,
    Size,
    Variants,
    json_target,
    with_checked_variant_options,
    with_variant_options,
)
from gpuprof.cli._output import command_line, human_console
from gpuprof.errors import Finding, UsageError
from gpuprof.variants.selection import VariantOptions

if TYPE_CHECKING:
    from types import TracebackType

    from gpuprof.commands.suite_shard import ShardPlan
    from gpuprof.progress import Progress, ProgressFn
    from gpuprof.results import Results
    from gpuprof.suite_file import Suite

# = commands.run.DEFAULT_VARIANT_TIMEOUT_S (a test keeps them equal); not imported, for a fast --help
DEFAULT_VARIANT_TIMEOUT_S = 300.0
Timeout = Annotated[float, typer.Option(
    "--timeout", help="Seconds one variant may take (compile, check, timing) before it is stopped and reported "
                      "TIMEOUT; each variant runs in a worker process, so a fault or hang costs only that variant.")]


With = Annotated[str | None, typer.Option(
    "--with", help="After check and timing, each variant under these tools too, into its row: 'ncu' (time, SOL, "
                   "occupancy and limiter, registers, bytes per memory level, FLOPs, stalls, hot lines, advice), "
                   "'sanitize' (memcheck, racecheck, initcheck, synccheck), or 'ncu,sanitize'. Reports under "
                   "--with-out.")]
Audit = Annotated[bool, typer.Option(
    "--audit", help="After timing, each OK variant once more under ncu (cold L2, one section): IMPOSSIBLE if it "
                    "read clearly less from DRAM than its inputs hold (docs/row-story.md). Needs ncu.")]
WithOut = Annotated[Path, typer.Option("--with-out", help="Directory for --with's ncu reports and sanitizer logs.")]

# The run table shows the columns that fit the terminal (its caption names the rest); --wide: all.
Wide = Annotated[bool, typer.Option("--wide", help="Every column of the table, whatever the terminal width.")]


@app.command()
@with_checked_variant_options
def run(
    ctx: typer.Context,
    family: Annotated[str, typer.Argument(help="Kernel family, e.g. matmul or vecadd (see `gpuprof list`).")],
    variants: Variants = None,
    size: Size = None,
    timing: Annotated[str, typer.Option(
        "--timing", "-t", help="Timing mode: cold (caches flushed), hot, graph or cupti (see docs).")] = "cold",
    baseline: Annotated[str | None, typer.Option(
        "--baseline", help="Variant the speedups are relative to. Default: the family's baseline.")] = None,
    json_out: JsonOut = None,
    force: Force = False,
    wide: Wide = False,
    min_samples: Annotated[int, typer.Option("--min-samples", help="Fewest timed samples per variant.")] = 10,
    max_time: Annotated[float, typer.Option(
        "--max-time",
        help="Time budget per variant in seconds (sampling stops when the spread is small or this is spent).")] = 2.0,
    target_spread: Annotated[float, typer.Option(
        "--target-spread", help="Stop sampling once the robust relative spread is at most this.")] = 0.005,
    check_only: Annotated[bool, typer.Option("--check-only", help="Check correctness; do not time.")] = False,
    discard_throttled: Annotated[bool, typer.Option(
        "--discard-throttled",
        help="Drop samples taken while NVML saw power, thermal or slowdown throttling, and sample again.")] = False,
    timeout: Timeout = DEFAULT_VARIANT_TIMEOUT_S,
    with_tools: With = None,
    with_out: WithOut = Path("gpuprof-with"),
    audit: Audit = False,
    *,
    variant_options: VariantOptions,
) -> None:
    """Check every variant against a float64 reference, then time it; print a table and exit 1 if any is wrong.

    Examples:

      gpuprof run matmul --variants naive,smem_tiled,warptile,cublas

      gpuprof run vecadd --size 2^26 --timing hot --json vecadd.json

      gpuprof run matmul -v blocktile_2d -D BM=64 -D BN=64

      gpuprof run matmul --variants smem_tiled,cublas --add mine.cu --block 16,16 --tile 16,16

      gpuprof run matmul -v warptile,cublas --with ncu,sanitize   (the whole story in each row)

      gpuprof run matmul -v cublas --add 'tiles.cuh:k<128,128>=tiled128' --require 'M%128==0,N%128==0'
    """
    saved: list[Path] = []
    with exit_on_error(lambda: saved[-1] if saved else None):
        from gpuprof import families, results
        from gpuprof.commands.row_story import parse_with
        from gpuprof.commands.run import RunRequest, run_tables
        from gpuprof.families import registry
        from gpuprof.files import check_outputs
        from gpuprof.measure import library_warnings
        from gpuprof.measure.timing import TimingPolicy
        from gpuprof.render.tables import print_run_tables
        from gpuprof.variants.sizes import parse_size

        target = json_target(json_out)
        check_outputs(variant_options.add or [], {"--json": target}, force)
        _check_policy(min_samples, max_time, target_spread)
        [(fam, chosen, extra)] = variant_options.select([registry.resolve(family)], variants)
        base = baseline or fam.baseline
        if base not in fam.variant_names:
            raise UsageError(f"unknown --baseline '{base}'; choose from: {', '.join(fam.variant_names)}")
        defines = variant_options.defines()
        request = RunRequest(
            family=fam.locator, variants=[v.name for v in chosen], size=parse_size(fam, size),
            policy=TimingPolicy(mode=timing, min_samples=min_samples, max_time_s=max_time,
                                target_spread=target_spread, discard_throttled=discard_throttled),
            check_only=check_only, defines=defines, extra_variants=extra, timeout_s=_positive(timeout), baseline=base,
            check_sizes=variant_options.check_sizes(fam),
            with_tools=parse_with(with_tools), variant_options=variant_options, with_out=with_out, audit=audit,
        )
        if request.with_tools and check_only:
            raise UsageError("--with profiles timed variants: leave out --check-only")
        if audit and check_only:
            raise UsageError("--audit judges timed variants: leave out --check-only")
        command = command_line(ctx)
        finished: list[results.Results] = []

        def save(partial: results.Results) -> None:  # after every variant: Ctrl-C keeps what finished
            partial.command = command
            finished[:] = [partial]
            if isinstance(target, Path):
                results.save(partial, target)
                saved[:] = [target]

        with library_warnings.caught() as outside, _progress_bar(len(chosen)) as on_step:
            report = run_tables(request, on_step, checkpoint=save)  # each row keeps its own warnings
        host = families.host(fam)
        if target == "-" and finished:
            typer.echo("".join(results.json_parts(finished[-1])))
    console = human_console(target)
    print_run_tables(console, report, wide, outside)
    if request.with_tools:
        from gpuprof.render.row_story_view import print_row_story

        print_row_story(console, report.results.rows, wide)
    measured = report.ceilings.measured if report.ceilings else None
    for line in host.notes(report.results.rows, fam, measured):
        console.print(line)  # a family's own figure across rows (transfers: the streams' overlap)
    if not audit and "ncu" not in request.with_tools and not check_only:
        from gpuprof.commands.byte_audit import offer

        offered = offer(fam, request.size or dict(fam.default_size))
        if offered:
            console.print(offered)
    if isinstance(target, Path):
        console.print(f"results written to {target}")
    bad = report.failed
    if bad:
        raise Finding(f"{len(bad)} variant(s) failed: "
                      + ", ".join(f"{r.variant} {r.check.status.upper()}" for r in bad))


def _check_policy(min_samples: int, max_time: float, target_spread: float) -> None:
    """In the options' own names (the core's checks speak of its fields)."""
    if min_samples < 1:
        raise UsageError(f"--min-samples {min_samples}: give at least 1")
    if not max_time > 0:
        raise UsageError(f"--max-time {max_time:g}: give a positive number of seconds")
    if not 0 < target_spread < 1:
        raise UsageError(f"--target-spread {target_spread:g}: give a fraction between 0 and 1, e.g. 0.005")


def _run_on_gpus(spec_file: Suite, gpus: str, json_out: Path | None, timeout_s: float,
                 history_file: Path | None, quiet: bool) -> Results:
    from gpuprof import results
    from gpuprof.cli._suite_progress import suite_progress
    from gpuprof.commands.suite_gpus import parse_gpus, run_suite_on_gpus, visible_gpu_count

    history = results.load(history_file) if history_file is not None else _earlier_results(json_out)
    chosen = parse_gpus(gpus, visible_gpu_count())
    with suite_progress(quiet, _expected_unit_s(spec_file, history)) as on_step:
        return run_suite_on_gpus(spec_file, chosen, json_out, on_step, timeout_s=timeout_s, history=history)


def _expected_unit_s(spec_file: Suite, history: Results | None) -> dict[str, float] | None:
    """Row id -> each unit's expected seconds, for the progress line's ETA: only with an earlier
    results file of the suite (its recorded unit times; the model for rows it lacks). Without one,
    the ETA is the mean unit so far."""
    if history is None:
        return None
    from gpuprof.commands.suite_plan import estimate_units, unit_row, units_of

    units = units_of(spec_file)
    estimates = estimate_units(spec_file, units, history)
    return {unit_row(spec_file, unit)[1]: estimate.seconds for unit, estimate in zip(units, estimates)}


def _shard_plan(spec_file: Suite, shard: str, history: Results | None) -> ShardPlan:
    """This machine's part of the suite, announced on stderr; refused when it would be empty."""
    from gpuprof.commands.suite_shard import parse_shard, plan_shard

    wanted = parse_shard(shard)
    plan = plan_shard(spec_file, wanted, history)
    if not plan.units:
        raise UsageError(f"--shard {shard}: the suite has only {plan.record['units']} units, so shard "
                         f"{wanted.index} would run none; use at most {plan.record['units']} shards")
    shown = plan.expected_all_s[:12]  # --shard 1/10000 names 12 shards' times, not 10,000
    expected = ", ".join(f"{s:.0f}" for s in shown) + (
        f", ... ({len(plan.expected_all_s) - len(shown):,} more)" if len(plan.expected_all_s) > len(shown) else "")
    err_console.print(f"shard {wanted.index}/{wanted.count}: {len(plan.units)} of {plan.record['units']} units, "
                      f"expected {plan.expected_s:.0f} s (every shard: {expected} s; estimated from "
                      f"{plan.estimates_from})", highlight=False)
    return plan


def _earlier_results(json_out: Path | None) -> Results | None:
    """The results file this run replaces, when it is one: its rows say how long each unit took."""
    from gpuprof import results
    from gpuprof.errors import InputError

    if json_out is None or not json_out.is_file():
        return None
    try:
        return results.load(json_out)
    except InputError:  # not a results file (replaced with --force): nothing to learn from it
        return None


def _positive(timeout: float) -> float:
    if not timeout > 0:
        raise UsageError(f"--timeout {timeout:g}: give a positive number of seconds")
    return timeout


class _progress_bar:
    """A Rich progress bar on stderr, driven by the core's Progress events."""

    def __init__(self, total: int) -> None:
        from rich.progress import BarColumn, TextColumn, TimeElapsedColumn  # not for `list`, `--help`
        from rich.progress import Progress as RichProgress

        self.total = total
        self.shown = err_console.is_terminal  # in a log or pipe: no bar (it would leave an empty line)
        self.bar = RichProgress(TextColumn("{task.description}"), BarColumn(),
                                TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn(),
                                console=err_console, transient=True)

    def __enter__(self) -> ProgressFn:
        if not self.shown:
            return lambda step: None
        self.bar.__enter__()
        self.task = self.bar.add_task("starting", total=self.total)

        def on_step(step: Progress) -> None:
            about = f"{step.within} {step.variant}" if step.within else step.variant
            self.bar.update(self.task, description=escape(f"{about}: {step.step}"), completed=step.finished)

        return on_step

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if self.shown:
            self.bar.__exit__(exc_type, exc, traceback)


@app.command(hidden=True)
@with_variant_options
def launch(
    family: Annotated[str, typer.Argument(help="Kernel family.")],
    variant: Annotated[str, typer.Argument(
        help="One variant, or a comma list launched one after another in this process.")],
    size: Size = None,
    count: Annotated[int, typer.Option("--count", help="Launches to make.")] = 1,
    warmup: Annotated[int, typer.Option("--warmup", help="Extra launches first.")] = 0,
    plain_alloc: Annotated[bool, typer.Option(
        "--plain-alloc", help="No memory pools (for compute-sanitizer).")] = False,
    *,
    variant_options: VariantOptions,
) -> None:
    """Launch one variant COUNT times and exit: the program profilers and sanitizers watch.

    Example: ncu --nvtx --nvtx-include 'matmul/naive/' gpuprof launch matmul naive --count 3
    """
    from gpuprof.commands.launch import launch_variant
    from gpuprof.families import registry
    from gpuprof.variants.sizes import parse_size

    with exit_on_error():
        [(fam, _, extra)] = variant_options.select([registry.resolve(family)], variant)
        for name in variant.split(","):  # several: one start-up for a sanitizer's batch
            launch_variant(family, name, parse_size(fam, size), count=count, warmup=warmup,
                           plain_allocations=plain_alloc, defines=variant_options.defines(), extra=extra)


@app.command()
def suite(
    suite_file: Annotated[Path, typer.Argument(metavar="SUITE.toml", help="A suite file, e.g. suites/smoke.toml.")],
    json_out: JsonOut = None,
    force: Force = False,
    wide: Wide = False,
    timeout: Timeout = DEFAULT_VARIANT_TIMEOUT_S,
    gpus: Annotated[str | None, typer.Option(
        "--gpus", metavar="all|0,1",
        help="Spread the rows over these GPUs (one worker process each, nvidia-smi numbering; a free "
             "GPU takes the longest unit left, keeping to the families it has started); each row "
             "records its GPU. Default: one GPU.")] = None,
    history: Annotated[Path | None, typer.Option(
        "--history", metavar="RESULTS.json",
        help="With --gpus or --shard: an earlier results file of this suite; its unit times order and "
             "split the work (longest first). Default: the --json file being replaced (--gpus), else "
             "estimates.")] = None,
    shard: Annotated[str | None, typer.Option(
        "--shard", metavar="K/N",
        help="Run part K of N of the suite (a deterministic split, the same on every machine, balanced "
             "by --history's unit times); join the parts with `gpuprof merge`.")] = None,
    with_tools: With = None,
    with_out: WithOut = Path("gpuprof-with"),
    quiet: Annotated[bool, typer.Option(
        "--quiet", "-q", help="No progress on stderr (by default one line per finished unit: its status, "
                              "median and rate, the suite's elapsed time and ETA).")] = False,
) -> None:
    """Run a whole suite (families x variants x sizes) into one results JSON; exit 1 if any variant is wrong.

    The JSON is rewritten after every case, so an interrupted suite keeps what it finished. While it
    runs, stderr gets one line per finished unit, e.g.
    [12/48  0:41 ETA  1:52] matmul warptile 4096x4096x4096  OK  2.931 ms  46.92 TFLOP/s

    Examples:

      gpuprof suite suites/smoke.toml --json smoke.json

      gpuprof compare base.json smoke.json

      gpuprof suite suites/ci.toml --gpus all --history one.json --json two.json

      gpuprof suite suites/course.toml --shard 1/2 --history course.json --json part1.json

      gpuprof suite suites/ci.toml --with ncu,sanitize --json ci.json   (each row also profiled and sanitized)
    """
    written: list[tuple[Path, float | None]] = []  # the --json file and its mtime before the suite

    def saved() -> Path | None:
        return next((path for path, before in written if path.exists() and path.stat().st_mtime != before), None)

    with exit_on_error(saved):
        from gpuprof import results
        from gpuprof.commands.row_story import parse_with
        from gpuprof.commands.suite import load, run_suite, suite_report
        from gpuprof.files import check_outputs
        from gpuprof.measure import library_warnings
        from gpuprof.render.tables import print_run_tables

        target = json_target(json_out)
        if target == "-":
            raise UsageError("suite writes its results file after every case: give --json FILE, not '-'")
        if history is not None and gpus is None and shard is None:
            raise UsageError("--history orders the work of a --gpus or --shard run; add --gpus all (or --shard K/N)")
        tools = parse_with(with_tools)
        if tools and gpus is not None:
            raise UsageError("--with profiles on one GPU, after each case: leave out --gpus")
        check_outputs([suite_file, history], {"--json": target}, force)
        out = target if isinstance(target, Path) else None  # "-" is refused above
        if out is not None:
            written.append((out, out.stat().st_mtime if out.exists() else None))
        if gpus is not None:
            from gpuprof.commands.suite_gpus import gpu_indices

            gpu_indices(gpus)  # a typo is exit 2 before the GPUs are counted
        with status(f"reading {suite_file}"):
            spec_file = load(suite_file)
        shard_history = results.load(history) if shard is not None and history is not None else None
        plan = _shard_plan(spec_file, shard, shard_history) if shard is not None else None
        if plan is not None:
            spec_file = plan.suite
        with library_warnings.caught() as outside:  # each row keeps its own; these are the suite's
            if gpus is not None:
                outcome = _run_on_gpus(spec_file, gpus, out, _positive(timeout), history, quiet)
            else:
                from gpuprof.cli._suite_progress import suite_progress

                expected = _expected_unit_s(spec_file, shard_history)
                with suite_progress(quiet, expected) as on_step:
                    outcome = run_suite(spec_file, out, on_step, timeout_s=_positive(timeout), with_tools=tools,
                                        with_out=with_out, shard=plan.record if plan is not None else None)
        if plan is not None:
            outcome.shard = plan.record  # which part this is, for `gpuprof merge`
            if out is not None:
                results.save(outcome, out)
        report = suite_report(outcome)
    console = human_console(target)
    print_run_tables(console, report, wide, outside)
    if tools:
        from gpuprof.render.row_story_view import print_row_story

        print_row_story(console, outcome.rows, wide)
    if target is not None:
        console.print(f"results written to {target}")
    if gpus is not None:
        from gpuprof.commands.suite_gpus import summary_line

        line = summary_line(outcome.environment)
        if line:
            console.print(line)
    bad = report.failed
    if bad:
        raise Finding(f"{len(bad)} row(s) failed: " + ", ".join(f"{r.id} {r.check.status.upper()}" for r in bad))
