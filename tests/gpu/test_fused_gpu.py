"""On a GPU: the fused family (issue 15 item 2) — every variant OK at the check sizes and at the
MNIST blocks' and the ResNet-like shapes, timed rows with rates, and planted bugs in a copy of the
fused kernel (one channel's statistics lost; the window's max taken whatever gamma's sign) WRONG."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from gpuprof import families, results
from gpuprof.analysis.derive import derive
from gpuprof.commands.run import RunRequest, run_family
from gpuprof.measure.timing import TimingPolicy
from gpuprof.variants import catalog

pytestmark = pytest.mark.gpu

QUICK = TimingPolicy(mode="cold", min_samples=5, max_time_s=0.3)
MNIST_1 = {"n": 64, "c": 1, "h": 28, "w": 28, "k": 32, "r": 3, "s": 3}
MNIST_2 = {"n": 64, "c": 32, "h": 14, "w": 14, "k": 64, "r": 3, "s": 3}


@pytest.mark.parametrize("size", [None, MNIST_1, MNIST_2], ids=["resnet", "mnist1", "mnist2"])
def test_every_variant_is_ok_and_timed(size):
    outcome = run_family(RunRequest(family="fused", size=size, policy=QUICK))
    fam = catalog.load_family("fused")
    assert [r.variant for r in outcome.rows] == fam.variant_names
    for row in outcome.rows:
        assert row.check.status == results.OK, (row.variant, row.check.reasons)
        assert row.timing is not None and row.timing.summary is not None, row.variant
    rows = derive(outcome.rows, families.host("fused").RATE, fam.baseline, fam.vendor_reference, None)
    assert all(d.rate and d.rate > 0 for d in rows)


PLANTED = {
    # the statistics of channel 0 never reach the sums: mean 0, var 0, v / sqrt(eps)
    "lost_channel": ("        if (row >= K) continue;\n", "        if (row >= K || row == 0) continue;\n"),
    # the window's max whatever the sign of gamma: wrong wherever gamma < 0
    "max_only": ("a >= 0.0f ? v.x : v.y", "v.x"),
}


@pytest.mark.parametrize("bug", sorted(PLANTED))
def test_planted_bugs_in_the_fused_kernel_are_wrong(tmp_path, bug):
    fam = catalog.load_family("fused")
    good = fam.variant("fused")
    old, new = PLANTED[bug]
    text = Path(good.file).read_text()
    assert text.count(old) == 1
    broken = tmp_path / "broken.cu"
    broken.write_text(text.replace(old, new))
    bad = replace(good, name="broken", file=broken, user=True, aliases=())
    outcome = run_family(RunRequest(family="fused", variants=["broken"], extra_variants=[bad], check_only=True))
    (row,) = outcome.rows
    assert row.check.status == results.WRONG, row.check.reasons
    assert any("tolerance" in r for r in row.check.reasons)
