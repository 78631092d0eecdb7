"""On a GPU: the mnist training step — every variant checked against PyTorch's
float64 step at batch 64 and timed; a hand step whose SGD update skips one layer's bias is WRONG."""

from __future__ import annotations

import dataclasses

import pytest

from gpuprof import results
from gpuprof.commands.run import RunRequest, run_family
from gpuprof.families.mnist.layout import PARAMETERS, layout
from gpuprof.measure.timing import TimingPolicy
from gpuprof.variants import catalog

pytestmark = pytest.mark.gpu

QUICK = TimingPolicy(mode="cold", min_samples=5, max_time_s=0.3)
SGD_LINE = "if (i < P) w[i] = w0[i] - lr * g[i];"


def test_every_variant_is_checked_and_timed_at_batch_64():
    outcome = run_family(RunRequest(family="mnist", size={"batch": 64}, policy=QUICK))
    rows = {r.variant: r for r in outcome.rows}
    assert list(rows) == catalog.load_family("mnist").variant_names
    for name, row in rows.items():
        if row.check.status == results.SKIPPED:  # only torch.compile may be missing its compiler
            assert catalog.load_family("mnist").variant(name).call == "torch.compile"
            assert "torch.compile" in row.check.reasons[0]
            continue
        assert row.check.status == results.OK, (name, row.check.reasons)
        assert row.check.max_rel_error <= row.check.tolerance
        assert row.timing is not None and row.timing.summary is not None, name


@pytest.mark.parametrize("layer", ["fc2.bias", "bn2.bias", "fc1.bias"])
def test_hand_update_skipping_one_bias_is_wrong(tmp_path, layer):
    hand = catalog.load_family("mnist").variant("hand")
    source = hand.file.read_text()
    assert SGD_LINE in source
    index = [name for name, _shape in PARAMETERS].index(layer)
    seg = layout().segment(index)
    planted = tmp_path / "hand.cu"
    planted.write_text(source.replace(
        SGD_LINE, f"if (i < P) w[i] = (i >= {seg.start} && i < {seg.stop}) ? w0[i] : w0[i] - lr * g[i];"))
    variant = dataclasses.replace(hand, name="planted", file=planted, user=True)
    outcome = run_family(RunRequest(family="mnist", variants="planted", size={"batch": 64}, check_only=True,
                                    extra_variants=[variant], isolate=False))
    (row,) = outcome.rows
    assert row.check.status == results.WRONG, row.check.reasons


def test_hand_matches_at_batch_1024():
    outcome = run_family(RunRequest(family="mnist", variants="hand,eager", size={"batch": 1024}, check_only=True))
    for row in outcome.rows:
        assert row.check.status == results.OK, (row.variant, row.check.reasons)
