"""`gpuprof suite`'s core: run every case of a suite into one results file, saved after each case."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Collection
from dataclasses import replace
from pathlib import Path
from typing import Any

from gpuprof import results
from gpuprof.analysis import derive
from gpuprof.analysis.tables import Report, Table, table_rows
from gpuprof.commands.run import DEFAULT_VARIANT_TIMEOUT_S, RunRequest, gpu_ceilings, run_family
from gpuprof.errors import InputError
from gpuprof.families import registry
from gpuprof.families.described import Described, joined
from gpuprof.files import read_toml
from gpuprof.measure import isolation
from gpuprof.measure.timing import TimingPolicy
from gpuprof.progress import Progress, ProgressFn
from gpuprof.suite_file import Suite, SuiteCase, load_suite
from gpuprof.variants.catalog import Family, Variant
from gpuprof.variants.selection import VariantOptions
from gpuprof.variants.user import load_kernels_dir


def load(path: Path) -> Suite:
    """A suite validated against the catalogue (and its kernels_dir): unknown families, variants or
    size keys fail here. A case's `family` is a name or a family folder's path (relative to the
    suite's folder); each case keeps its family's locator, what every later step resolves."""
    families = registry.all_families()
    folders = _folder_families(path, families)
    families += list(folders.values())

    def extra_known(directory: Path) -> dict[str, list[str]]:
        return {f.name: [v.name for v in load_kernels_dir(directory, f)] for f in families}

    words = {**{f.name: f for f in families}, **folders}
    suite = load_suite(path, known={w: f.variant_names for w, f in words.items()},
                       size_keys={w: list(f.dims) for w, f in words.items()}, extra_known=extra_known,
                       switches={w: list(f.switches) for w, f in words.items()})
    suite = replace(suite, cases=[replace(c, family=words[c.family].locator) for c in suite.cases])
    if suite.kernels_dir is not None and not any(extra_known(suite.kernels_dir).values()):
        raise InputError(f"{path}: 'kernels_dir' {suite.kernels_dir} holds no <family>.toml with variants "
                         f"(one of {', '.join(f.name + '.toml' for f in families[:3])}, ...)")
    for case in suite.cases:
        if not case.defines:
            continue
        fam = registry.resolve(case.family)
        variants = {v.name: v for v in [*fam.variants, *case_variants(suite, case)]}
        for name in case.variants if case.variants != "all" else list(variants):
            unknown = sorted(set(case.defines) - set(variants[name].defines))
            if unknown:
                have = ", ".join(variants[name].defines) or "no tile parameters"
                raise InputError(f"{path}: a sweep of {fam.name}/{name} sets {unknown[0]}, which it does not "
                                 f"define (it has {have})")
    return suite


def _folder_families(path: Path, families: list[Family]) -> dict[str, Family]:
    """The suite's `family = "path/to/folder"` words, each resolved against the suite's folder."""
    try:
        data = read_toml(path)
    except InputError:
        return {}  # load_suite says what is wrong with the file
    tables = [t for key in ("case", "sweep") for t in data.get(key, []) if isinstance(t, dict)]
    words = {t["family"] for t in tables if isinstance(t.get("family"), str)}
    names = {f.name for f in families}
    return {w: registry.resolve(w, base=path.parent) for w in sorted(words)
            if w not in names and registry.looks_like_path(w)}


def family_name(case: SuiteCase) -> str:
    """The name a case's rows carry (its family word may be a folder's path)."""
    return registry.resolve(case.family).name


def case_variants(suite: Suite, case: SuiteCase) -> list[Variant]:
    """The variants the suite's kernels_dir adds to this case's family."""
    if suite.kernels_dir is None:
        return []
    return load_kernels_dir(suite.kernels_dir, registry.resolve(case.family))


def policy_of(timing: dict[str, Any]) -> TimingPolicy:
    return TimingPolicy(**timing)


def sweep_label(defines: dict[str, int]) -> str:
    """'[BM=64,BN=128]': makes rows of one variant with different tile parameters distinct ids."""
    return "[" + ",".join(f"{k}={v}" for k, v in defines.items()) + "]" if defines else ""


class StepClock:
    """Where a unit's wall time went, from the core's progress events: seconds from the unit's start
    to its first event ("start": the worker, the family's set-up), then in each step (compile, check,
    time, verify). A --gpus run set beside a one-GPU run shows which step slows down side by side."""

    def __init__(self) -> None:
        self.restart()

    def restart(self) -> None:
        self._step, self._since = "start", time.monotonic()
        self._spent: dict[str, float] = {}

    def __call__(self, event: Progress) -> None:
        now = time.monotonic()
        self._spent[self._step] = self._spent.get(self._step, 0.0) + now - self._since
        self._step, self._since = event.step, now

    def take(self) -> dict[str, float]:
        """The steps so far (the one in progress not included), and a fresh start."""
        spent = {step: round(seconds, 3) for step, seconds in self._spent.items() if step != "done"}
        self.restart()
        return spent


def gpu_record(gpu: int | None, environment: dict[str, Any], row: results.Row, unit_wall_s: float,
               steps_s: dict[str, float] | None = None) -> dict[str, Any]:
    """Which GPU timed the row (index in nvidia-smi numbering, None: the process's default device),
    its UUID, model and median SM clock, and the unit's wall time (compile, check and timing) with
    its steps: a later `suite --gpus --history` orders its units by it, compile time included."""
    clocks = [c for c in (row.timing.sm_clock_mhz if row.timing else []) if math.isfinite(c) and c > 0]
    return {"index": gpu, "uuid": environment.get("gpu_uuid"), "name": environment.get("gpu_name"),
            "sm_clock_mhz": statistics.median(clocks) if clocks else None, "unit_wall_s": round(unit_wall_s, 3),
            "steps_s": steps_s or {}}


def label_rows(rows: list[results.Row], case: SuiteCase) -> list[results.Row]:
    """Mark a case's fresh rows: its sweep defines in the variant name, and its control flag."""
    for row in rows:
        row.variant += sweep_label(case.defines)
        row.control = case.control
    return rows


def suite_tables(outcome: results.Results) -> list[Table]:
    """A suite's rows as run tables, each of one family at the size its rows ran at and one timing
    mode; speedups are relative to the family's baseline and vendor rows."""
    tables = []
    described = Described(outcome.families)  # the file's block, else this machine's registry
    for (name, _, mode), rows in table_rows(outcome.rows, str(outcome.timing_policy.get("mode", "cold"))).items():
        family, _, formula = described.family(name, rows)
        tables.append(Table(family, rows, family.baseline, family.vendor_reference, mode, formula))
    return tables


def store_speedups(outcome: results.Results, only: Collection[str] | None = None) -> None:
    """Store each suite table's speedups on its rows (their rates are stored as they are judged);
    only: the tables of these families (the ones new rows can change), not the whole suite's."""
    chosen = outcome if only is None else replace(outcome, rows=[r for r in outcome.rows if r.family in only])
    for table in suite_tables(chosen):
        derive.speedups(table.rows, table.baseline, table.vendor)


def suite_report(outcome: results.Results) -> Report:
    """The suite's tables (speedups already stored) and this GPU's ceilings, for its renderer."""
    return Report(outcome, suite_tables(outcome), gpu_ceilings())


def run_suite(suite: Suite, json_out: Path | None = None, progress: ProgressFn | None = None,
              timeout_s: float = DEFAULT_VARIANT_TIMEOUT_S, with_tools: tuple[str, ...] = (),
              with_out: Path = Path("gpuprof-with"), shard: dict[str, Any] | None = None) -> results.Results:
    """Run case by case, every variant in one worker process that is replaced only when a variant
    faults or hangs; with json_out, the file is rewritten atomically after each variant, so an
    interrupted suite keeps everything it finished. progress gets run's events, each `within` its
    case ("case 2/5 matmul[BM=64]"); a unit's DONE event (the one with an outcome) is counted over
    the whole suite's units (index and total), its outcome named as its row will be (the sweep's
    label in the variant). with_tools: `--with ncu,sanitize`, after each case (commands/row_story.py),
    reports under with_out/case<N>. shard: `--shard`'s record, in every file written, so a shard
    stopped before its end still says which part it is."""
    with isolation.Worker(timeout_s) as worker:
        return _run_cases(suite, json_out, progress, worker, with_tools, with_out, shard)


def _run_cases(suite: Suite, json_out: Path | None, progress: ProgressFn | None,
               worker: isolation.Worker, with_tools: tuple[str, ...] = (),
               with_out: Path = Path("gpuprof-with"), shard: dict[str, Any] | None = None) -> results.Results:
    from gpuprof.commands.suite_plan import units_of  # suite_plan imports this module

    outcome: results.Results | None = None
    steps = [(case, size) for case in suite.cases for size in _sizes(case)]
    all_units = len(units_of(suite))
    units_before = 0  # units of the earlier cases: this case's events count on from there
    for number, (case, size) in enumerate(steps, 1):
        label = sweep_label(case.defines)
        earlier = outcome.rows if outcome is not None else []
        labelled = 0
        last_saved = time.monotonic()
        clock = StepClock()

        def save(part: results.Results, case: SuiteCase = case, earlier: list[results.Row] = earlier,
                 clock: StepClock = clock) -> None:
            """After every variant: earlier cases' rows plus this case's so far."""
            nonlocal outcome, labelled, last_saved
            now = time.monotonic()
            spent = clock.take()
            for row in label_rows(part.rows[labelled:], case):
                row.gpu = gpu_record(None, part.environment, row, now - last_saved, spent)
            labelled, last_saved = len(part.rows), now
            first = outcome or replace(part, command=f"gpuprof suite {suite.path}",
                                       timing_policy={"suite": suite.name, **suite.gate_timing(), **suite.timing},
                                       compare={"preset": suite.compare_preset})
            outcome = replace(first, rows=earlier + part.rows)  # the first case's time and environment
            outcome.families = dict(first.families)
            joined(outcome.families, part.families)  # one suite's cases describe a family alike
            if shard is not None:
                outcome.shard = shard
            store_speedups(outcome, only={family_name(case)})  # a sweep's table spans its cases
            if json_out is not None:
                results.save(outcome, json_out)

        step_label = f"case {number}/{len(steps)} {family_name(case)}{label}"

        def on_step(step: Progress, step_label: str = step_label, clock: StepClock = clock,
                    before: int = units_before, label: str = label) -> None:
            clock(step)
            if progress is None:
                return
            if step.outcome is None:  # a step of the work (or of --with's tools)
                progress(replace(step, within=step_label))
            else:  # a unit done: counted over the whole suite
                named = replace(step.outcome, variant=step.outcome.variant + label)
                progress(replace(step, within=step_label, index=before + step.index,
                                 total=max(all_units, before + step.total), outcome=named))

        part = run_family(
            RunRequest(family=case.family, variants=case.variants, size=size,
                       policy=policy_of(suite.case_timing(case)), defines=case.defines,
                       extra_variants=case_variants(suite, case), timeout_s=worker.timeout_s,
                       with_tools=with_tools, variant_options=VariantOptions(kernels_dir=suite.kernels_dir),
                       with_out=with_out / f"case{number}"),
            on_step, checkpoint=save, worker=worker,
        )
        units_before += len(part.rows)
    if outcome is None:
        raise ValueError("a suite without cases")  # load_suite refuses those
    return outcome


def _sizes(case: SuiteCase) -> list[dict[str, int] | None]:
    return list(case.sizes) if case.sizes else [None]
