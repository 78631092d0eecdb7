"""`gpuprof suite`'s core: run every case of a suite into one results file, saved after each case."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpuprof import catalog, results
from gpuprof.runner import Progress, RunRequest, run_family
from gpuprof.suite import Suite, SuiteCase, load_suite
from gpuprof.timing import TimingPolicy


def load(path: Path) -> Suite:
    """A suite validated against the catalogue: unknown families, variants or size keys fail here."""
    families = catalog.load_all()
    return load_suite(path, known={f.name: f.variant_names for f in families},
                      size_keys={f.name: list(f.dims) for f in families})


def policy_of(timing: dict[str, Any]) -> TimingPolicy:
    return TimingPolicy(**timing)


def sweep_label(defines: dict[str, int]) -> str:
    """'[BM=64,BN=128]': makes rows of one variant with different tile parameters distinct ids."""
    return "[" + ",".join(f"{k}={v}" for k, v in defines.items()) + "]" if defines else ""


def run_suite(suite: Suite, json_out: Path | None = None,
              progress: Callable[[str, Progress], None] | None = None) -> results.Results:
    """Run case by case; with json_out, the file is rewritten atomically after each case, so an
    interrupted suite keeps everything it finished."""
    outcome: results.Results | None = None
    steps = [(case, size) for case in suite.cases for size in _sizes(case)]
    for number, (case, size) in enumerate(steps, 1):
        label = f"case {number}/{len(steps)} {case.family}{sweep_label(case.defines)}"
        part = run_family(
            RunRequest(family=case.family, variants=case.variants, size=size,
                       policy=policy_of(suite.case_timing(case)), defines=case.defines),
            (lambda step, label=label: progress(label, step)) if progress else None,
        )
        for row in part.rows:
            row.variant += sweep_label(case.defines)
        if outcome is None:
            outcome = part
            outcome.command = f"gpuprof suite {suite.path}"
            outcome.timing_policy = {"suite": suite.name, **suite.timing}
        else:
            outcome.rows += part.rows
        if json_out is not None:
            results.save(outcome, json_out)
    if outcome is None:
        raise ValueError("a suite without cases")  # load_suite refuses those
    return outcome


def _sizes(case: SuiteCase) -> list[dict[str, int] | None]:
    return list(case.sizes) if case.sizes else [None]
