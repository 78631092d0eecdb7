"""On a GPU: every built-in variant passes its check, wrong kernels are caught, timing is sane."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuprof import families, results
from gpuprof.analysis.derive import derive
from gpuprof.commands.run import RunRequest, run_family
from gpuprof.measure.timing import TimingPolicy
from gpuprof.variants import catalog
from gpuprof.variants.catalog import Variant

pytestmark = pytest.mark.gpu

KERNELS = Path(__file__).resolve().parent.parent / "kernels"
QUICK = TimingPolicy(mode="cold", min_samples=5, max_time_s=0.3)


@pytest.mark.parametrize("family", catalog.family_names())
def test_every_variant_passes_at_awkward_and_default_sizes(family):
    outcome = run_family(RunRequest(family=family, check_only=True))
    fam = catalog.load_family(family)
    assert [r.variant for r in outcome.rows] == fam.variant_names
    for row in outcome.rows:
        assert row.check.status == results.OK, (row.variant, row.check.reasons)
        checked = row.check.sizes_checked
        assert checked[:-1] == list(fam.check_sizes)  # every awkward size ...
        assert checked[-1] == row.size  # ... and the benchmark size (capped where the variant caps it)
        assert row.check.max_rel_error is not None and row.check.reasons == []


def test_wrong_vecadd_is_reported_wrong_and_gets_no_speedup():
    bad = Variant(name="wrong", technique="deliberately wrong (test)", file=KERNELS / "vecadd_wrong.cu",
                  kernel="vecadd_wrong", block=(256,), tile=(256,), user=True)
    outcome = run_family(RunRequest(family="vecadd", variants=["grid", "wrong"], size={"n": 1 << 22},
                                    policy=QUICK, extra_variants=[bad]))
    grid, wrong = outcome.rows
    assert grid.check.status == results.OK and grid.timing is not None
    assert wrong.check.status == results.WRONG
    assert any("not written" in r for r in wrong.check.reasons)
    assert wrong.timing is None
    rows = derive(outcome.rows, families.host(catalog.load_family("vecadd")).RATE, "wrong", "grid", None)
    assert rows[1].rate is None and rows[1].vs_baseline is None and rows[1].vs_vendor is None
    assert rows[0].vs_baseline is None  # a WRONG baseline gives nobody a speedup


def test_off_by_one_matmul_writes_everything_but_is_wrong():
    bad = Variant(name="off_by_one", technique="deliberately wrong (test)", file=KERNELS / "matmul_off_by_one.cu",
                  kernel="matmul_off_by_one", block=(16, 16), tile=(16, 16), user=True)
    outcome = run_family(RunRequest(family="matmul", variants=["off_by_one", "cublas"],
                                    size={"m": 512, "n": 512, "k": 512}, policy=QUICK, extra_variants=[bad]))
    wrong, cublas = outcome.rows
    assert wrong.check.status == results.WRONG
    assert any("tolerance" in r for r in wrong.check.reasons)
    assert cublas.check.status == results.OK


@pytest.mark.parametrize("mode", ["cold", "hot", "graph"])
def test_timing_modes_give_positive_samples_and_a_stop_reason(mode):
    policy = TimingPolicy(mode=mode, min_samples=10, max_time_s=0.5)
    outcome = run_family(RunRequest(family="vecadd", variants=["vectorized"], size={"n": 1 << 24}, policy=policy))
    timing = outcome.rows[0].timing
    assert timing is not None and timing.mode == mode
    assert len(timing.samples_s) >= 10 and all(s > 0 for s in timing.samples_s)
    assert timing.stop_reason in {"converged", "time_budget", "max_samples"}
    assert all(500 < mhz < 3000 for mhz in timing.sm_clock_mhz)  # the probe measured a real SM clock
    # 2^24 floats: 3 x 64 MiB must cross DRAM at most ~3.4 TB/s, so no sample can be faster than that.
    assert min(timing.samples_s) > 3 * 4 * (1 << 24) / 3.6e12 or mode != "cold"


def test_cli_run_writes_json_with_raw_samples(tmp_path):
    from gpuprof.cli import app

    out = tmp_path / "r.json"
    result = CliRunner().invoke(app, ["run", "vecadd", "-v", "grid,vectorized,torch", "-s", "2^22",
                                      "--max-time", "0.3", "--json", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["schema"] == results.SCHEMA_NAME
    assert data["environment"]["gpu_name"]
    ids = [r["id"] for r in data["rows"]]
    assert ids == ["vecadd/grid/4194304", "vecadd/vectorized/4194304", "vecadd/torch/4194304"]
    for row in data["rows"]:
        assert len(row["timing"]["samples_s"]) == row["timing"]["summary"]["n"] >= 10
    assert "vs grid" in result.output and "GB/s" in result.output


def test_launch_command_runs_one_variant():
    from gpuprof.cli import app

    result = CliRunner().invoke(app, ["launch", "matmul", "warptile", "-s", "256", "--count", "2"])
    assert result.exit_code == 0, result.output
