"""histogram's host module: byte counts, the exact tolerance, spread, and the plan (memset then one
launch, on the same stream) with fakes. No GPU."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from gpuprof.families import histogram
from gpuprof.variants import catalog


def test_rate_is_one_byte_read_per_value():
    assert histogram.RATE == "bytes"
    assert histogram.bytes_moved({"n": 2**28, "spread": 256}) == 2**28
    assert histogram.flop({"n": 2**28, "spread": 1}) == 2**28


def test_check_is_exact():
    assert histogram.tolerance("cub", {"n": 2**28, "spread": 256}) == 0.0


@pytest.mark.parametrize(("spread", "hit"), [(1, 1), (7, 7), (256, 256), (2**28, 256)])
def test_spread_is_capped_at_the_bin_count(spread, hit):
    assert histogram.bins_hit({"n": 10, "spread": spread}) == hit


def test_poison_is_never_a_count():
    assert int(histogram.POISON) > 2**31  # n < 2^31: no bin can hold it


def test_manifest_sizes_cover_uniform_skewed_and_tails():
    fam = catalog.load_family("histogram")
    spreads = {s["spread"] for s in fam.check_sizes}
    assert {1, 256} <= spreads
    assert any(s["n"] % 16 for s in fam.check_sizes)  # a tail past the 16-byte loads
    assert fam.default_size == {"n": 2**28, "spread": 256}
    assert fam.variant("cub").vendor and fam.vendor_reference == "cub"


def test_plan_zeroes_the_bins_on_the_stream_before_the_kernel(monkeypatch):
    events: list = []
    runtime = SimpleNamespace(
        memsetAsync=lambda ptr, value, nbytes, stream: events.append(("memset", ptr, value, nbytes, stream)))
    monkeypatch.setattr(histogram, "cupy", lambda: SimpleNamespace(cuda=SimpleNamespace(runtime=runtime)))
    out = SimpleNamespace(data=SimpleNamespace(ptr=1234), nbytes=2048)
    fam = catalog.load_family("histogram")
    v = fam.variant("many_bins")

    def kernel(grid, block, args, stream=None):
        events.append(("kernel", grid, block, args[1] is out, int(args[2]), stream))

    launch = histogram.plan(v, {v.kernel: kernel}, {"in": "IN"}, out, {"n": 1000, "spread": 3},
                            SimpleNamespace(grid=(264,), block=(1024, 1, 1)))
    stream = SimpleNamespace(ptr=99)
    launch(stream)
    launch(stream)  # every timed launch zeroes again
    assert events == [("memset", 1234, 0, 2048, 99), ("kernel", (264,), (1024, 1, 1), True, 1000, stream)] * 2


def test_unknown_vendor_is_a_key_error():
    with pytest.raises(KeyError):
        histogram.vendor_launch("torch", {}, None, {"n": 1, "spread": 1})


def test_numpy_model_of_the_reference_counts_every_value():
    """What reference() computes (bincount, 256 bins), on the host: counts sum to n."""
    values = np.random.default_rng(0).integers(0, 7, 4097).astype(np.uint8)
    counts = np.bincount(values, minlength=histogram.BINS)
    assert counts.sum() == 4097 and counts.size == 256 and counts[7:].sum() == 0


def test_variant_options_table_is_parsed_and_checked(tmp_path):
    from gpuprof.errors import InputError

    ok = catalog.parse_variant(tmp_path / "family.toml", 1, {"name": "v", "vendor": True, "technique": "t",
                                                             "options": {"memory": "pinned", "streams": 4}})
    assert ok.options == {"memory": "pinned", "streams": 4}
    with pytest.raises(InputError, match="options"):
        catalog.parse_variant(tmp_path / "family.toml", 1, {"name": "v", "vendor": True, "technique": "t",
                                                            "options": {"memory": [1, 2]}})
