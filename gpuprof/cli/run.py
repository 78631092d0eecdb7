"""`gpuprof run`: check, then time each variant of a family; one table, optional JSON."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from gpuprof import families, results
from gpuprof.analysis import ceilings
from gpuprof.analysis.derive import derive
from gpuprof.cli._app import app
from gpuprof.cli._boundary import exit_on_error, fail
from gpuprof.cli._options import AddOptions, Defines, JsonOut, Size, Variants, parse_defines
from gpuprof.commands.run import DEFAULT_VARIANT_TIMEOUT_S, RunRequest, run_family
from gpuprof.errors import UsageError
from gpuprof.gpu import device_info
from gpuprof.measure.timing import MODES, TimingPolicy
from gpuprof.progress import Progress as Step
from gpuprof.render.console import make_console
from gpuprof.render.tables import run_table
from gpuprof.variants import catalog
from gpuprof.variants.sizes import parse_size
from gpuprof.variants.user import add_to_family

console = make_console()
Timeout = Annotated[float, typer.Option(
    "--timeout", help="Seconds one variant may take (compile, check, timing) before it is stopped and reported TIMEOUT; "
                      "each variant runs in a worker process, so a fault or hang costs only that variant.")]
progress_console = Console(stderr=True)


@app.command()
def run(
    family: Annotated[str, typer.Argument(help="Kernel family, e.g. matmul or vecadd (see `gpuprof list`).")],
    variants: Variants = None,
    size: Size = None,
    timing: Annotated[str, typer.Option("--timing", "-t", help=f"Timing mode: {'; '.join(f'{k}: {v}' for k, v in MODES.items())}.")] = "cold",
    baseline: Annotated[Optional[str], typer.Option("--baseline", help="Variant the speedups are relative to. Default: the family's baseline.")] = None,
    json_out: JsonOut = None,
    min_samples: Annotated[int, typer.Option("--min-samples", help="Fewest timed samples per variant.")] = 10,
    max_time: Annotated[float, typer.Option("--max-time", help="Time budget per variant in seconds (sampling stops when the spread is small or this is spent).")] = 2.0,
    target_spread: Annotated[float, typer.Option("--target-spread", help="Stop sampling once the robust relative spread is at most this.")] = 0.005,
    check_only: Annotated[bool, typer.Option("--check-only", help="Check correctness; do not time.")] = False,
    discard_throttled: Annotated[bool, typer.Option(
        "--discard-throttled", help="Drop samples taken while NVML saw power, thermal or slowdown throttling, and sample again.")] = False,
    timeout: Timeout = DEFAULT_VARIANT_TIMEOUT_S,
    define: Defines = None,
    add: AddOptions.Add = None,
    block: AddOptions.Block = None,
    tile: AddOptions.Tile = None,
    grid: AddOptions.Grid = None,
    kernels_dir: AddOptions.KernelsDir = None,
) -> None:
    """Check every variant against a float64 reference, then time it; print a table and exit 1 if any is wrong.

    Examples:

      gpuprof run matmul --variants naive,smem_tiled,warptile,cublas

      gpuprof run vecadd --size 2^26 --timing hot --json vecadd.json

      gpuprof run matmul -v blocktile_2d -D BM=64 -D BN=64

      gpuprof run matmul --variants smem_tiled,cublas --add mine.cu --block 16,16 --tile 16,16
    """
    with exit_on_error():
        fam = catalog.load_family(family)
        fam, extra = add_to_family(fam, AddOptions.spec(add, block, tile, grid, kernels_dir))
        chosen = fam.select(variants)  # unknown variants fail here, before any GPU work
        chosen += [v for v in extra if v not in chosen]  # --add joins whatever --variants picked
        defines = parse_defines(define)
        fam.apply_defines(chosen, defines)  # and -D values that break a launch
        base = baseline or fam.baseline
        if base not in fam.variant_names:
            raise UsageError(f"unknown --baseline '{base}'; choose from: {', '.join(fam.variant_names)}")
        request = RunRequest(
            family=family, variants=[v.name for v in chosen], size=parse_size(fam, size),
            policy=TimingPolicy(mode=timing, min_samples=min_samples, max_time_s=max_time,
                                target_spread=target_spread, discard_throttled=discard_throttled),
            check_only=check_only, defines=defines, extra_variants=extra, timeout_s=_positive(timeout),
        )
        if json_out is not None and not json_out.parent.is_dir():
            raise UsageError(f"--json {json_out}: directory {json_out.parent} does not exist")
        command = "gpuprof run " + " ".join(_argv_tail())

        def save(partial: results.Results) -> None:  # after every variant: Ctrl-C keeps what finished
            partial.command = command
            if json_out is not None:
                results.save(partial, json_out)

        with _progress_bar(len(chosen)) as on_step:
            outcome = run_family(request, on_step, checkpoint=save)
        spec = families.spec(fam.name)
        limits = ceilings.load(device_info())
    derived = derive(outcome.rows, spec.RATE, base, fam.vendor_reference, limits)
    console.print(run_table(fam, derived, base, fam.vendor_reference, limits, timing))
    if json_out is not None:
        console.print(f"results written to {json_out}")
    bad = [r for r in outcome.rows if r.check.status not in (results.OK, results.SKIPPED)]
    if bad:
        raise fail(f"{len(bad)} variant(s) failed: " + ", ".join(f"{r.variant} {r.check.status.upper()}" for r in bad), 1)


def _run_on_gpus(spec_file, gpus: str, json_out: Path | None, timeout_s: float) -> results.Results:
    from gpuprof.commands.suite_gpus import parse_gpus, run_suite_on_gpus, units_of, visible_gpu_count

    chosen = parse_gpus(gpus, visible_gpu_count())
    with _progress_bar(len(units_of(spec_file))) as on_step:
        return run_suite_on_gpus(spec_file, chosen, json_out, lambda done, total, unit, gpu: on_step(
            Step(f"GPU {gpu}: {spec_file.cases[unit.case_index].family}/{unit.variant}", "done", done - 1, total)),
            timeout_s=timeout_s)


def _positive(timeout: float) -> float:
    if not timeout > 0:
        raise UsageError(f"--timeout {timeout:g}: give a positive number of seconds")
    return timeout


def _argv_tail() -> list[str]:
    import sys

    return sys.argv[2:] if len(sys.argv) > 2 else []


class _progress_bar:
    """A Rich progress bar on stderr, driven by the core's Progress events."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                            TimeElapsedColumn(), console=progress_console, transient=True)

    def __enter__(self):
        self.bar.__enter__()
        self.task = self.bar.add_task("starting", total=self.total)

        def on_step(step: Step) -> None:
            self.bar.update(self.task, description=f"{step.variant}: {step.step}",
                            completed=step.index + (1 if step.step == "done" else 0))

        return on_step

    def __exit__(self, *exc) -> None:
        self.bar.__exit__(*exc)


@app.command(hidden=True)
def launch(
    family: Annotated[str, typer.Argument(help="Kernel family.")],
    variant: Annotated[str, typer.Argument(help="One variant, or a comma list launched one after another in this process.")],
    size: Size = None,
    count: Annotated[int, typer.Option("--count", help="Launches to make.")] = 1,
    warmup: Annotated[int, typer.Option("--warmup", help="Extra launches first.")] = 0,
    plain_alloc: Annotated[bool, typer.Option("--plain-alloc", help="No memory pools (for compute-sanitizer).")] = False,
    define: Defines = None,
    add: AddOptions.Add = None,
    block: AddOptions.Block = None,
    tile: AddOptions.Tile = None,
    grid: AddOptions.Grid = None,
    kernels_dir: AddOptions.KernelsDir = None,
) -> None:
    """Launch one variant COUNT times and exit: the program profilers and sanitizers watch.

    Example: ncu --nvtx --nvtx-include 'matmul/naive/' gpuprof launch matmul naive --count 3
    """
    from gpuprof.commands.launch import launch_variant

    with exit_on_error():
        fam = catalog.load_family(family)
        extra = add_to_family(fam, AddOptions.spec(add, block, tile, grid, kernels_dir))[1]
        for name in variant.split(","):  # several: one start-up for a sanitizer's batch
            launch_variant(family, name, parse_size(fam, size), count=count, warmup=warmup,
                           plain_allocations=plain_alloc, defines=parse_defines(define), extra=extra)


@app.command()
def suite(
    suite_file: Annotated[Path, typer.Argument(metavar="SUITE.toml", help="A suite file, e.g. suites/smoke.toml.")],
    json_out: JsonOut = None,
    timeout: Timeout = DEFAULT_VARIANT_TIMEOUT_S,
    gpus: Annotated[Optional[str], typer.Option(
        "--gpus", metavar="all|0,1",
        help="Spread the rows over these GPUs (one worker process each, nvidia-smi numbering); "
             "each row records its GPU. Default: one GPU.")] = None,
) -> None:
    """Run a whole suite (families x variants x sizes) into one results JSON; exit 1 if any variant is wrong.

    The JSON is rewritten after every case, so an interrupted suite keeps what it finished.

    Examples:

      gpuprof suite suites/smoke.toml --json smoke.json

      gpuprof compare base.json smoke.json
    """
    from gpuprof.commands.suite import load, run_suite

    with exit_on_error():
        spec_file = load(suite_file)
        if json_out is not None and not json_out.parent.is_dir():
            raise UsageError(f"--json {json_out}: directory {json_out.parent} does not exist")
        if gpus is not None:
            outcome = _run_on_gpus(spec_file, gpus, json_out, _positive(timeout))
        else:
            with _progress_bar(len(spec_file.cases)) as on_step:
                outcome = run_suite(spec_file, json_out, lambda label, step: on_step(
                    Step(f"{label} {step.variant}", step.step, step.index, step.total)), timeout_s=_positive(timeout))
        limits = ceilings.load(device_info())
    groups: dict[tuple[str, str], list] = {}
    for row in outcome.rows:
        groups.setdefault((row.family, results.size_label(row.size)), []).append(row)
    for (family_name, _), rows in groups.items():
        fam = catalog.load_family(family_name)
        derived = derive(rows, families.spec(family_name).RATE, fam.baseline, fam.vendor_reference, limits)
        console.print(run_table(fam, derived, fam.baseline, fam.vendor_reference, limits,
                                rows[0].timing.mode if rows[0].timing else "cold"))
    if json_out is not None:
        console.print(f"results written to {json_out}")
    bad = [r for r in outcome.rows if r.check.status not in (results.OK, results.SKIPPED)]
    if bad:
        raise fail(f"{len(bad)} row(s) failed: " + ", ".join(f"{r.id} {r.check.status.upper()}" for r in bad), 1)
