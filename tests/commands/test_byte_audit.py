"""run --audit (issue 39): ncu's DRAM bytes of one cold launch against what the op's inputs hold; and
the input classes for a callable (api.benchmark, the pytest plugin), on NumPy arrays."""

from __future__ import annotations

import numpy as np
import pytest

from gpuprof.analysis import byte_witness
from gpuprof.commands import byte_audit
from gpuprof.measure import class_check
from gpuprof.results import IMPOSSIBLE, OK, CheckResult, Row

L2 = 50 * 2**20
MUST_READ = 1.07e9  # reduce at 2^28


def row() -> Row:
    return Row(family="reduce", variant="v", size={"n": 1 << 28}, vendor=False, check=CheckResult(status=OK))


def test_reads_short_of_the_inputs_make_the_row_impossible_with_the_counts():
    r = row()
    byte_audit.judge(r, (1.01e9, 0.0), MUST_READ, 0.0, L2)  # the H100's count for skip_fraction's 94 %
    assert r.check.status == IMPOSSIBLE
    assert any("94 % of the 1.07 GB its inputs hold" in reason for reason in r.check.reasons)


def test_an_honest_count_is_a_note_for_the_footnote():
    r = row()
    byte_audit.judge(r, (1.08e9, 0.0), MUST_READ, 0.0, L2)
    assert r.check.status == OK and not r.check.reasons
    assert any(note.startswith("byte audit: ncu counted 1.08 GB read") for note in r.check.notes)
    assert f"below {100 * byte_witness.RATIO:.0f} %" in r.check.notes[-1]


def test_no_count_is_said_not_judged():
    r = row()
    byte_audit.judge(r, "ncu returned nothing for this variant", MUST_READ, 0.0, L2)
    assert r.check.status == OK and r.check.notes == ["byte audit: not judged: ncu returned nothing for this variant"]


def _sum_into(x: np.ndarray, out: np.ndarray, fraction: float = 1.0) -> None:
    kept = x[: int(len(x) * fraction)]
    out[0] = kept.sum(dtype=np.float32) / fraction


def test_a_callable_that_estimates_fails_the_default_classes():
    x = np.random.default_rng(0).uniform(0, 1, 1 << 16).astype(np.float32)
    out = np.zeros(1, np.float32)
    inputs = {"x": x}
    before = x.copy()
    classes = class_check.default_classes(inputs, out)
    assert classes == ("needles", "heavy_tail")

    def reference(a):
        return a["x"].sum(keepdims=True)

    honest = class_check.check_classes(lambda: _sum_into(x, out), inputs, out, reference, 1e-5, classes,
                                       exact_sums=True)
    assert honest == []
    estimate = class_check.check_classes(lambda: _sum_into(x, out, 15 / 16), inputs, out, reference, 1e-5, classes,
                                         exact_sums=True)
    assert any(reason.startswith("on needle inputs") for reason in estimate)
    assert np.array_equal(x, before)  # the caller's values back


def test_an_unknown_class_is_refused_before_anything_runs():
    with pytest.raises(ValueError, match="unknown input class"):
        class_check.check_classes(lambda: None, {"x": np.zeros(4)}, np.zeros(1), lambda a: a["x"][:1], 1e-5,
                                  ("sparkles",))


def test_elementwise_callables_get_no_default_classes():
    x = np.zeros(16, np.float32)
    assert class_check.default_classes({"x": x}, np.zeros(16, np.float32)) == ()


def test_the_audit_sums_a_variants_dram_bytes_as_with_ncu_does(monkeypatch, tmp_path):
    """_profile reads its launches' DRAM reads and writes through row_story.ncu_summary: two launches
    of a SpeedOfLight-only collection sum; a NaN counter is no count."""
    from types import SimpleNamespace

    from gpuprof.commands import ncu as ncu_core
    from gpuprof.parsers.ncu_metrics import NcuKernelRow
    from gpuprof.variants import catalog
    from gpuprof.variants.selection import VariantOptions

    def launch(read: float, written: float) -> NcuKernelRow:
        return NcuKernelRow(id=0, kernel_name="k", demangled_name="k", duration_ns=1e6,
                            metrics={"dram__bytes_read.sum": read, "dram__bytes_write.sum": written})

    results = [SimpleNamespace(label="grid", error=None, note=None,
                               rows=[launch(6e8, 1e8), launch(5e8, float("nan"))]),
               SimpleNamespace(label="vectorized", error="ncu failed", note=None, rows=[])]
    monkeypatch.setattr(ncu_core, "execute", lambda request, progress=None: SimpleNamespace(results=results))
    family = catalog.load_family("vecadd")
    rows = [SimpleNamespace(variant="grid"), SimpleNamespace(variant="vectorized")]
    counted = byte_audit._profile(rows, family, {"n": 1 << 28}, VariantOptions(), tmp_path, None)
    assert counted == [(pytest.approx(1.1e9), pytest.approx(1e8)), "ncu failed"]
