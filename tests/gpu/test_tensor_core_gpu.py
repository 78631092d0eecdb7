"""On a GPU: the tensor-core families (issue 36). Every rung of gemm_bf16 and attention_bf16 is OK at
its check sizes and a small benchmark size, both masks; on Hopper `wgmma` and `fa3` (sm_90a, TMA) among them;
with ncu, the ladder judges the tensor-core rungs against a tensor roof (the HMMA or HGMMA dense
path's peak), not the FP32 pipe's."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpuprof import results
from gpuprof.commands.run import RunRequest, run_family
from gpuprof.gpu import device_info
from gpuprof.variants import catalog

pytestmark = pytest.mark.gpu
REPO = Path(__file__).resolve().parents[2]


def _hopper() -> bool:
    return device_info().arch == "sm_90"


@pytest.mark.parametrize(("family", "size"), [
    ("gemm_bf16", {"m": 512, "n": 768, "k": 1024}),
    ("attention_bf16", {"b": 2, "h": 3, "s": 333, "d": 128, "causal": 0}),
    ("attention_bf16", {"b": 2, "h": 3, "s": 333, "d": 64, "causal": 1}),
])
def test_every_rung_is_ok(family, size):
    outcome = run_family(RunRequest(family=family, size=size, check_only=True))
    fam = catalog.load_family(family)
    assert [r.variant for r in outcome.rows] == fam.variant_names
    for row in outcome.rows:
        variant = fam.variant(row.variant)
        if variant.arch and not _hopper():
            continue  # sm_90a code runs on Hopper only (its row says so)
        if row.check.status == results.SKIPPED and variant.vendor:
            continue  # an SDPA backend this machine's PyTorch lacks
        assert row.check.status == results.OK, (row.variant, row.check.reasons)


@pytest.mark.parametrize("size", [
    {"b": 1, "h": 3, "s": 515, "d": 128, "causal": 1},   # ragged last tile, diagonal tiles, 5 key tiles
    {"b": 2, "h": 2, "s": 640, "d": 128, "causal": 0},   # whole tiles only: every stage of the ring reused
    {"b": 3, "h": 1, "s": 300, "d": 64, "causal": 0},    # the D = 64 instantiation, a ragged tail
    {"b": 1, "h": 2, "s": 256, "d": 64, "causal": 1},
])
def test_fa3_is_ok_on_whole_and_ragged_tiles(size):
    """The Hopper attention rung (TMA ring, wgmma with P from registers, V read transposed) at sizes the
    family's check sizes leave out: several K/V tiles, so the ring's stages wrap and the online softmax
    rescales, on both head dims and both masks."""
    if not _hopper():
        pytest.skip("the fa3 rung needs sm_90a")
    outcome = run_family(RunRequest(family="attention_bf16", variants=["fa3"], size=size, check_only=True))
    (row,) = outcome.rows
    assert row.check.status == results.OK, row.check.reasons


def test_tensor_rungs_are_judged_against_a_tensor_roof(tmp_path):
    if shutil.which("ncu") is None:
        pytest.skip("ncu is not on PATH")
    if not _hopper():
        pytest.skip("the wgmma rung needs sm_90a")
    done = subprocess.run([sys.executable, "-m", "gpuprof", "ncu", "gemm_bf16", "--ladder", "-v",
                           "naive,mma_sync,multistage,wgmma,cublas", "--size", "2048", "--out", str(tmp_path),
                           "--json", "-"], capture_output=True, text=True, timeout=900, check=False, cwd=REPO,
                          env={**os.environ, "COLUMNS": "100"})
    assert done.returncode == 0, done.stderr[-3000:]
    rungs = {r["label"]: r for r in json.loads(done.stdout)["ladder"]}
    for rung in rungs.values():
        print(f"{rung['label']}: {rung['verdict']} ({rung['verdict_reason']})")
    hand = ("naive", "mma_sync", "multistage", "wgmma")
    assert all(rungs[name]["verdict"] in ("confirmed", "refuted") for name in hand)
    # 70-80 % of the HGMMA peak and about half of the L2 roof: compute, judged against the tensor roof
    assert rungs["wgmma"]["measured_limiter"] == "compute", rungs["wgmma"]["verdict_reason"]
    assert "tensor" in rungs["wgmma"]["verdict_reason"], rungs["wgmma"]["verdict_reason"]


def test_a_tutorial_wmma_kernel_is_checked_beside_cublas(tmp_path):
    """A learner's WMMA kernel as tutorials write it (tests/kernels/course_shapes/wmma_bf16_tutorial.cu):
    one warp per 16x16 tile, fragments from global memory; OK beside cuBLAS at a size its constraint allows."""
    out = tmp_path / "wmma.json"
    done = subprocess.run([sys.executable, "-m", "gpuprof", "run", "gemm_bf16", "-v", "cublas",
                           "--add", "tests/kernels/course_shapes/wmma_bf16_tutorial.cu", "--block", "128,4",
                           "--tile", "64,64", "--require", "M%16==0,N%16==0,K%16==0", "--size", "1024",
                           "--max-time", "0.3", "--json", str(out)],
                          capture_output=True, text=True, timeout=600, check=False, cwd=REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {r.variant: r for r in results.load(out).rows}
    assert rows["wmma_bf16_tutorial"].check.status == results.OK, rows["wmma_bf16_tutorial"].check.reasons
