"""On a GPU: ops gpuprof does not ship, as family folders (issue 34) — the starter `new-family`
writes runs as written, the edited example folders check OK against PyTorch with every variant kind
(CUDA, Triton, load_inline, PyTorch and torch.compile rows), and a const-free kernel of the course's
shape is taken without --args while one that writes its input is still WRONG."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuprof import families, results
from gpuprof.analysis.derive import derive
from gpuprof.commands.new_family import write_family
from gpuprof.commands.run import RunRequest, run_family
from gpuprof.families import registry
from gpuprof.measure.timing import TimingPolicy
from gpuprof.variants.user import parse_add, to_variant

pytestmark = pytest.mark.gpu

QUICK = TimingPolicy(mode="cold", min_samples=5, max_time_s=0.2)
ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "families"
COURSE = ROOT / "tests" / "kernels" / "course_shapes"


def _ok_and_timed(outcome: results.Results) -> None:
    for row in outcome.rows:
        assert row.check.status == results.OK, (row.variant, row.check.reasons)
        assert row.timing is not None and row.timing.summary is not None, row.variant


def test_the_starter_runs_as_written(tmp_path):
    folder = write_family("starter_op", tmp_path)
    fam = registry.resolve(str(folder))
    outcome = run_family(RunRequest(family=fam.locator, size={"n": 1 << 22}, policy=QUICK))
    assert [r.variant for r in outcome.rows] == fam.variant_names
    _ok_and_timed(outcome)
    rows = derive(outcome.rows, families.host(fam).RATE, fam.baseline, fam.vendor_reference, None)
    assert all(d.rate and d.rate > 0 for d in rows)


@pytest.mark.parametrize("name", ["gelu", "poly"])
def test_the_example_folders_are_ok_against_pytorch(name):
    fam = registry.resolve(str(EXAMPLES / name))
    outcome = run_family(RunRequest(family=fam.locator, size={"n": 1 << 22}, policy=QUICK))
    assert {r.variant for r in outcome.rows} == set(fam.variant_names)
    _ok_and_timed(outcome)


def test_course_shaped_kernels_need_no_args_and_a_scribbler_is_still_wrong():
    vecadd = registry.resolve("vecadd")
    mine = to_variant(vecadd, parse_add(str(COURSE / "vector_add_no_const.cu")))
    outcome = run_family(RunRequest(family="vecadd", variants=[mine.name], extra_variants=[mine], size={"n": 1 << 20},
                                    check_only=True))
    assert outcome.rows[0].check.status == results.OK, outcome.rows[0].check.reasons
    bad = to_variant(vecadd, parse_add(str(COURSE / "writes_its_input.cu")))
    outcome = run_family(RunRequest(family="vecadd", variants=[bad.name], extra_variants=[bad], size={"n": 1 << 20},
                                    check_only=True))
    assert outcome.rows[0].check.status == results.WRONG
    assert "modified its inputs" in " ".join(outcome.rows[0].check.reasons)
