"""On a GPU: histogram and fft (issue 15) through run_family — every variant OK at the awkward
sizes and the benchmark size, timed rows with rates; the skewed histogram and the cuFFT ratio."""

from __future__ import annotations

import pytest

from gpuprof import families, results
from gpuprof.analysis.derive import derive
from gpuprof.commands.run import RunRequest, run_family
from gpuprof.measure.timing import TimingPolicy
from gpuprof.variants import catalog

pytestmark = pytest.mark.gpu

QUICK = TimingPolicy(mode="cold", min_samples=5, max_time_s=0.3)


@pytest.mark.parametrize(("family", "size"), [
    ("histogram", None),
    ("histogram", {"n": 1 << 26, "spread": 1}),  # every value in one bin
    ("fft", None),
    ("fft", {"n": 1 << 12, "batch": 4096}),
])
def test_every_variant_is_ok_and_timed(family, size):
    outcome = run_family(RunRequest(family=family, size=size, policy=QUICK))
    fam = catalog.load_family(family)
    assert [r.variant for r in outcome.rows] == fam.variant_names
    for row in outcome.rows:
        assert row.check.status == results.OK, (row.variant, row.check.reasons)
        assert row.timing is not None and row.timing.summary is not None, row.variant
    rows = derive(outcome.rows, families.host(fam).RATE, fam.baseline, fam.vendor_reference, None)
    assert all(d.rate and d.rate > 0 for d in rows)


def test_histogram_counts_are_exact():
    outcome = run_family(RunRequest(family="histogram", size={"n": 1 << 20, "spread": 7}, check_only=True))
    assert all(r.check.status == results.OK and r.check.max_rel_error == 0.0 for r in outcome.rows)
