"""On a GPU: transfers (issue 15 item 4) through run_family — every variant checked exactly and
timed host-synchronously, the overlap note, and a streamed unit that loses its last chunk is WRONG."""

from __future__ import annotations

import pytest

from gpuprof import results
from gpuprof.commands.run import RunRequest, run_family
from gpuprof.families import transfers
from gpuprof.measure.timing import HOST_SYNCHRONOUS_NOTE, TimingPolicy
from gpuprof.variants import catalog

pytestmark = pytest.mark.gpu

QUICK = TimingPolicy(mode="cold", min_samples=5, max_time_s=0.5)


@pytest.mark.parametrize("size", [None, {"n": 1 << 22}])
def test_every_variant_is_exact_and_timed_without_the_hold(size):
    outcome = run_family(RunRequest(family="transfers", size=size, policy=QUICK))
    fam = catalog.load_family("transfers")
    assert [r.variant for r in outcome.rows] == fam.variant_names
    for row in outcome.rows:
        assert row.check.status == results.OK, (row.variant, row.check.reasons)
        assert row.check.max_rel_error == 0.0, row.variant
        assert row.timing is not None and row.timing.summary is not None, row.variant
        assert row.timing.note == HOST_SYNCHRONOUS_NOTE and row.timing.stop_reason != "host_too_slow_to_queue_batches"
    assert transfers.notes(outcome.rows, fam)  # the overlap line has both rows it needs


def test_a_streamed_unit_that_loses_its_last_chunk_is_wrong(monkeypatch):
    real = transfers.copy_back

    def lossy(out, d_c, lo, hi, stream):
        if hi < out.size:  # the last chunk never comes back
            real(out, d_c, lo, hi, stream)

    monkeypatch.setattr(transfers, "copy_back", lossy)
    outcome = run_family(RunRequest(family="transfers", variants=["streamed"], size={"n": 1 << 20},
                                    policy=QUICK, isolate=False))
    (row,) = outcome.rows
    assert row.check.status == results.WRONG
    assert any("not written (still NaN)" in reason for reason in row.check.reasons), row.check.reasons
