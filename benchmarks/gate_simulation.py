"""The CI gate on the CPU: how often `gpuprof compare` catches a regression, and how often it cries wolf.

Every number comes from gpuprof's own code: sample counts from the timing stop rule
(gpuprof.measure.timing._stop_reason, batched as timing.measure batches), verdicts and the gate
from gpuprof.analysis.compare. Only the GPU is simulated: a sample is t * (1 + noise * N(0, 1)),
i.i.d. (the numbers audit's model), or skewed (lognormal plus 2 % outliers at +10..50 %).

Run:  python benchmarks/gate_simulation.py            (fixed seeds; a few minutes on one core)
      python benchmarks/gate_simulation.py --quick    (fewer trials, for a smoke test)

Tables:
1. Per kernel duration and noise: the audit's table with the new method (suite stop rule aiming at
   the default preset, one unchanged vendor control row of the same duration and noise in both
   runs, rows judged relative to the control's shift). 'old 5 %' repeats the audit's method
   (default stop rule, no controls) for the 5 % column, to show the table is reproduced.
2. An 8-row suite with whole-run shifts, code unchanged: P(the gate fails).
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from gpuprof.analysis import stats
from gpuprof.analysis.compare import compare_results, gate
from gpuprof.analysis.compare_presets import PRESETS
from gpuprof.measure import timing
from gpuprof.measure.timing import BATCH_GPU_SECONDS, MAX_BATCH, TimingPolicy, _stop_reason
from gpuprof.results import CheckResult, Results, Row, Timing
from gpuprof.suite_file import GATE_RESOLUTION_FRACTION

DEFAULT = PRESETS["default"]
L2_FLUSH_S = 2 * 50 * 2**20 / 2e12  # timing.measure's cold-mode flush estimate on an H100 (2 x 50 MiB L2)
HOST_PER_BATCH_S = 1e-3  # queueing and synchronising one batch
# The audit's policy (gpuprof run's defaults) and a suite's under the default preset.
OLD_POLICY = TimingPolicy()
SUITE_POLICY = TimingPolicy(target_resolution=DEFAULT.min_effect * GATE_RESOLUTION_FRACTION,
                            resolution_alpha=DEFAULT.alpha)
DURATIONS = {"20 µs": 20e-6, "1 ms": 1e-3, "10 ms": 10e-3, "100 ms": 100e-3}

Draw = Callable[[np.random.Generator, float, float, int], np.ndarray]


def fast_robust_rel_spread(samples) -> float:
    """stats.robust_rel_spread in numpy (the same linear-interpolated medians), checked equal in main()."""
    values = np.asarray(samples, dtype=float)
    median = float(np.median(values))
    if median <= 0:
        return math.inf
    return stats.MAD_TO_SIGMA * float(np.median(np.abs(values - median))) / median


class _FastStats:
    """What timing._stop_reason reads from gpuprof.analysis.stats, with the spread computed by numpy."""

    robust_rel_spread = staticmethod(fast_robust_rel_spread)


def use_fast_spread() -> None:
    rng = np.random.default_rng(0)
    for n in (1, 2, 10, 11, 64, 1000):
        values = rng.lognormal(0, 0.05, n).tolist()
        assert math.isclose(fast_robust_rel_spread(values), stats.robust_rel_spread(values),
                            rel_tol=1e-9, abs_tol=1e-15)
    timing.stats = _FastStats  # the stop rule itself is gpuprof's, unchanged


def iid(rng: np.random.Generator, t: float, noise: float, n: int) -> np.ndarray:
    return t * (1 + noise * rng.standard_normal(n))


def skewed(rng: np.random.Generator, t: float, noise: float, n: int) -> np.ndarray:
    values = t * rng.lognormal(0.0, noise, n)
    outliers = rng.random(n) < 0.02
    values[outliers] *= 1 + rng.uniform(0.10, 0.50, outliers.sum())
    return values


def sample_run(rng: np.random.Generator, t: float, noise: float, policy: TimingPolicy, draw: Draw = iid) -> list[float]:
    """The samples timing.measure would keep: the same batch sizes and the same stop rule."""
    per_sample = t + L2_FLUSH_S
    samples: list[float] = []
    elapsed = 0.0
    while True:
        want = max(policy.min_samples - len(samples), 1)
        batch = int(min(MAX_BATCH, policy.max_samples - len(samples), max(want, BATCH_GPU_SECONDS // per_sample)))
        samples += draw(rng, t, noise, batch).tolist()
        elapsed += batch * per_sample + HOST_PER_BATCH_S
        if _stop_reason(samples, policy, elapsed):
            return samples


def row(variant: str, samples: list[float], vendor: bool = False) -> Row:
    return Row(family="sim", variant=variant, size={"n": 1}, vendor=vendor, check=CheckResult(status="ok"),
               timing=Timing(mode="cold", samples_s=samples, stop_reason="", summary=None))


def results_of(*rows: Row) -> Results:
    return Results(environment={"gpu_name": "simulated H100"}, rows=list(rows))


@dataclass
class Cell:
    n: list[int]
    counts: dict[str, int]
    trials: int = 0

    def rate(self, key: str) -> float:
        return self.counts.get(key, 0) / self.trials


def kernel_cell(seed: int, t: float, noise: float, change: float, trials: int, *, policy: TimingPolicy,
                control: bool, draw: Draw = iid) -> Cell:
    """One row (and, with control, one vendor row of the same duration and noise) in BASE and NEW."""
    rng = np.random.default_rng(seed)
    cell = Cell([], {}, trials)
    for _ in range(trials):
        base_rows = [row("k", sample_run(rng, t, noise, policy, draw))]
        new_rows = [row("k", sample_run(rng, t * (1 + change), noise, policy, draw))]
        if control:
            base_rows.append(row("vendor", sample_run(rng, t, noise, policy, draw), vendor=True))
            new_rows.append(row("vendor", sample_run(rng, t, noise, policy, draw), vendor=True))
        cell.n.append(len(base_rows[0].timing.samples_s))
        verdict = compare_results(results_of(*base_rows), results_of(*new_rows), DEFAULT).verdicts[0]
        cell.counts[verdict.status.value] = cell.counts.get(verdict.status.value, 0) + 1
    return cell


def kernel_table(trials: int) -> None:
    """Prints its rows as they are ready (the slow cells take a while)."""
    lines = [("| kernel | noise | n (median) | identical: SLOWER | 2 % slower: SLOWER / INCONCL "
              "| 5 % slower: SLOWER / INCONCL | 10 % slower: SLOWER | old 5 %: n, SLOWER |"),
             "|---|---|---|---|---|---|---|---|"]
    cells = [(name, t, noise, iid) for noise in (0.003, 0.03) for name, t in DURATIONS.items()]
    cells.append(("10 ms skewed", 10e-3, 0.003, skewed))
    for index, (name, t, noise, draw) in enumerate(cells):
        seed = 1000 * index
        same = kernel_cell(seed + 1, t, noise, 0.0, trials * 2, policy=SUITE_POLICY, control=True, draw=draw)
        two = kernel_cell(seed + 2, t, noise, 0.02, trials // 2, policy=SUITE_POLICY, control=True, draw=draw)
        five = kernel_cell(seed + 5, t, noise, 0.05, trials, policy=SUITE_POLICY, control=True, draw=draw)
        ten = kernel_cell(seed + 10, t, noise, 0.10, trials // 2, policy=SUITE_POLICY, control=True, draw=draw)
        old = kernel_cell(seed + 50, t, noise, 0.05, trials, policy=OLD_POLICY, control=False, draw=draw)
        lines.append(
            f"| {name} | {noise * 100:g} % | {int(np.median(same.n))} | {same.rate('SLOWER'):.3f} "
            f"| {two.rate('SLOWER'):.3f} / {two.rate('INCONCLUSIVE'):.3f} "
            f"| **{five.rate('SLOWER'):.3f}** / {five.rate('INCONCLUSIVE'):.3f} | {ten.rate('SLOWER'):.3f} "
            f"| {int(np.median(old.n))}, {old.rate('SLOWER'):.3f} |")
        print("\n".join(lines), flush=True)
        lines = []


# An 8-row suite: six kernels and two vendor controls, 0.3 % within-run noise (the run-to-run part is
# what this table is about; table 1 covers noisy rows).
SUITE_ROWS = [("a", 20e-6, False), ("b", 100e-6, False), ("c", 1e-3, False), ("d", 1e-3, False),
              ("e", 10e-3, False), ("f", 50e-3, False), ("cublas", 1e-3, True), ("torch", 10e-3, True)]
SUITE_NOISE = 0.003
IDIOSYNCRATIC = 0.0015  # per-row run-to-run sigma of the back-to-back H100 fixtures


def suite_run(rng: np.random.Generator, common: float, per_row: float, shift: float = 0.0) -> Results:
    level = math.exp(common * rng.standard_normal() + shift)
    rows = [row(name, sample_run(rng, t * level * math.exp(per_row * rng.standard_normal()), SUITE_NOISE,
                                 SUITE_POLICY), vendor=vendor)
            for name, t, vendor in SUITE_ROWS]
    return results_of(*rows)


def suite_failure_rate(seed: int, trials: int, *, common: float, per_row: float, shift: float = 0.0,
                       controls: bool = True, history: int = 0) -> float:
    rng = np.random.default_rng(seed)
    failures = 0
    for _ in range(trials):
        bases = [suite_run(rng, common, per_row) for _ in range(history + 1)]
        new = suite_run(rng, common, per_row, shift)
        if not controls:
            for results in (*bases, new):
                for r in results.rows:
                    r.vendor = False
        report = compare_results(bases[-1], new, DEFAULT, history=bases[:-1])
        failures += bool(gate(report))
    return failures / trials


def suite_table(trials: int) -> None:
    lines = ["| run-to-run model (8-row suite, code unchanged) | controls | BASE runs | P(gate fails) |",
             "|---|---|---|---|"]
    cases = [
        ("common σ 1 % per run + 0.15 % per row", {"common": 0.01, "per_row": IDIOSYNCRATIC}, True, 0),
        ("common σ 1 % per run + 0.15 % per row", {"common": 0.01, "per_row": IDIOSYNCRATIC}, False, 0),
        ("common σ 2 % per run + 0.15 % per row", {"common": 0.02, "per_row": IDIOSYNCRATIC}, True, 0),
        ("whole NEW run +2.5 % (+0.15 % per row)", {"common": 0.0, "per_row": IDIOSYNCRATIC, "shift": math.log(1.025)},
         True, 0),
        ("whole NEW run +2.5 % (+0.15 % per row)", {"common": 0.0, "per_row": IDIOSYNCRATIC, "shift": math.log(1.025)},
         False, 0),
        ("independent σ 1 % per row (the audit's model)", {"common": 0.0, "per_row": 0.01}, True, 0),
        ("independent σ 1 % per row (the audit's model)", {"common": 0.0, "per_row": 0.01}, True, 4),
    ]
    for index, (label, model, controls, history) in enumerate(cases):
        rate = suite_failure_rate(7000 + index, trials, controls=controls, history=history, **model)
        lines.append(f"| {label} | {'yes' if controls else 'no'} | {history + 1} | **{rate:.3f}** |")
        print("\n".join(lines), flush=True)
        lines = []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer trials (a smoke test, not the recorded table)")
    args = parser.parse_args()
    trials = 40 if args.quick else 200
    started = time.perf_counter()
    use_fast_spread()
    print(f"preset default: min effect {DEFAULT.min_effect:g}, alpha {DEFAULT.alpha:g}; suite stop rule: "
          f"median resolved to ±{SUITE_POLICY.target_resolution * 100:g} % "
          f"within {SUITE_POLICY.resolution_budget_s:g} s, "
          f"else {SUITE_POLICY.max_time_s:g} s / {SUITE_POLICY.max_samples} samples")
    print(f"\n1. one row + one control, {trials} trials per cell ({2 * trials} for identical, "
          f"{trials // 2} for 2 % and 10 %)\n")
    kernel_table(trials)
    suite_trials = 100 if args.quick else 400
    print(f"\n2. 8-row suite (6 kernels 20 µs..50 ms, 2 vendor controls, {SUITE_NOISE * 100:g} % noise within a run), "
          f"{suite_trials} trials\n")
    suite_table(suite_trials)
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
