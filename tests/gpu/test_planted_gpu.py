"""On a GPU: the planted test kernels of tests/kernels/planted are caught, and their unplanted twins
are not. The GEMM's wrong swizzle is WRONG where the correct build is OK; the barrier dropped
before a shared stage is refilled (GEMM: the cp.async refill; attention: the K/V tile staged by the
whole block) is a racecheck hazard where the correct build is clean. Every variant of the folder
runs with the ones named (--kernels-dir adds them all): only the named pairs are asserted.
The CPU side (manifests, defines, builds) is tests/variants/test_planted_kernels.py."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpuprof import results

pytestmark = pytest.mark.gpu

REPO = Path(__file__).resolve().parents[2]
PLANTED = "tests/kernels/planted"  # as typed on the command line, from the repository root


def gpuprof(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "gpuprof", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout, check=False)
    assert "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
    return done


def needs(tool: str) -> None:
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not on PATH")


def test_the_wrong_swizzle_is_wrong_and_the_correct_gemm_ok(tmp_path):
    needs("nvcc")
    out = tmp_path / "gemm.json"
    done = gpuprof("run", "gemm_bf16", "--kernels-dir", PLANTED, "--variants", "planted_ok,planted_wrong_swizzle",
                   "--size", "512", "--check-only", "--json", str(out))
    assert done.returncode == 1, done.stdout + done.stderr  # a WRONG row fails the run
    rows = {r.variant: r for r in results.load(out).rows}
    assert rows["planted_ok"].check.status == results.OK, rows["planted_ok"].check.reasons
    assert rows["planted_wrong_swizzle"].check.status == results.WRONG, rows["planted_wrong_swizzle"].check.reasons


def test_the_correct_attention_is_ok(tmp_path):
    needs("nvcc")
    out = tmp_path / "attention.json"
    gpuprof("run", "attention_bf16", "--kernels-dir", PLANTED, "--variants", "planted_ok",
            "--size", "b=2,h=2,s=256,d=64,causal=1", "--check-only", "--json", str(out))
    rows = {r.variant: r for r in results.load(out).rows}  # planted_no_barrier runs too: a race may or may not show
    assert rows["planted_ok"].check.status == results.OK, rows["planted_ok"].check.reasons


@pytest.mark.parametrize("family", ["gemm_bf16", "attention_bf16"])
def test_racecheck_finds_the_dropped_barrier_and_nothing_in_the_correct_build(tmp_path, family):
    needs("compute-sanitizer")
    needs("nvcc")
    out = tmp_path / "sanitize.json"
    done = gpuprof("sanitize", family, "--kernels-dir", PLANTED, "--variants", "planted_ok,planted_no_barrier",
                   "--tool", "racecheck", "--out", str(tmp_path / "logs"), "--json", str(out))
    assert done.returncode == 1, done.stdout + done.stderr  # the hazard fails the run
    runs = {r["label"]: r for r in json.loads(out.read_text())["runs"] if r["tool"] == "racecheck"}
    ok, racy = runs[f"{family}/planted_ok"], runs[f"{family}/planted_no_barrier"]
    assert ok["error"] is None and ok["findings"] == [] and ok["error_count"] == 0, ok
    assert racy["error"] is None, racy
    assert any(f["kind"] == "race_hazard" for f in racy["findings"]), racy["findings"]
