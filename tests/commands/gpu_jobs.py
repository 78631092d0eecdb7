"""Fake per-GPU work for tests/commands/test_suite_gpus.py: module-level, so spawned GPU processes can import it."""

from __future__ import annotations

import os

from gpuprof import results
from gpuprof.errors import EnvironmentProblem
from gpuprof.families import registry
from gpuprof.families.described import family_info
from gpuprof.progress import Progress
from gpuprof.results import CheckResult, Results, Row, Timing


def fake_unit(suite, unit, worker, progress) -> Results:
    """One row per unit; the GPU model and UUID come from the CUDA_VISIBLE_DEVICES this process was given.
    It reports the core's steps, as run_family does."""
    for step in ("compile", "check", "time", "verify", "done"):
        progress(Progress(unit.variant, step, 0, 1))
    gpu = os.environ["CUDA_VISIBLE_DEVICES"]
    case = suite.cases[unit.case_index]
    size = unit.size or {"n": 1024}
    timing = Timing(mode="cold", samples_s=[1e-3] * 10, stop_reason="converged", summary=None,
                    sm_clock_mhz=[1900.0 + int(gpu)] * 10)
    row = Row(family=case.family, variant=unit.variant, size=size, vendor=False,
              check=CheckResult(status=results.OK), timing=timing)
    family = registry.resolve(case.family)  # described as run_tables describes it
    return Results(environment={"gpu_name": "Fake GPU", "gpu_uuid": f"GPU-fake-{gpu}",
                                "order": os.environ.get("CUDA_DEVICE_ORDER")}, rows=[row],
                   families={family.name: family_info(family, registry.host_for(family))})


def failing_unit(suite, unit, worker, progress) -> Results:
    if unit.variant == "vectorized":
        raise EnvironmentProblem("no CUDA driver on this fake GPU")
    return fake_unit(suite, unit, worker, progress)


def dying_unit(suite, unit, worker, progress) -> Results:
    """A GPU process killed mid-unit (out of host memory, say): it never reports the unit."""
    if unit.variant == "torch":
        os._exit(3)
    return fake_unit(suite, unit, worker, progress)
