"""On a GPU: `gpuprof run --with ncu,sanitize` fills each row's `ncu` (rows checked OK) and
`sanitizer` (every row that ran), and `show` prints them (issue "one row, the whole story")."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gpuprof import results

pytestmark = pytest.mark.gpu

REPO = Path(__file__).resolve().parents[2]


def gpuprof(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpuprof", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout, check=False)


def test_run_with_ncu_and_sanitize_fills_every_row(tmp_path):
    out = tmp_path / "with.json"
    kernels = REPO / "tests" / "kernels"
    done = gpuprof("run", "vecadd", "-v", "grid,torch", "--add", str(kernels / "vecadd_wrong.cu"),
                   "--add", str(kernels / "oob_write.cu"), "--size", "2^22", "--max-time", "0.3",
                   "--with", "ncu,sanitize", "--with-out",
                   str(tmp_path / "with"), "--json", str(out))
    assert done.returncode == 1, done.stdout + done.stderr  # the wrong variant
    rows = {r.variant: r for r in results.load(out).rows}
    for name in ("grid", "torch"):
        ncu = rows[name].ncu
        assert ncu is not None and not ncu.error, (name, ncu)
        # DRAM bytes: at least the reads (8 bytes an element); written lines may still sit in the 50 MB L2 at the end
        assert ncu.duration_ns and ncu.dram_bytes and ncu.dram_bytes > 8 * 2**22 and ncu.top_stall
        assert ncu.level_bytes.get("dram") and ncu.stalls and ncu.limiter, ncu  # the newer fields (issue 35)
        assert rows[name].sanitizer is not None and rows[name].sanitizer.verdict == "clean", rows[name].sanitizer
    wrong = rows["vecadd_wrong"]
    assert wrong.check.status == results.WRONG
    assert wrong.ncu is None and wrong.sanitizer is not None  # not profiled, but sanitized: it ran
    oob = rows["oob_write"].sanitizer
    assert oob is not None and oob.verdict == "findings" and "memcheck" in (oob.first or ""), oob
    assert oob.found and oob.found[0].tool == "memcheck" and oob.found[0].line, oob.found
    assert "why and how safe (--with)" in done.stdout
    shown = gpuprof("show", str(out))
    assert "why and how safe (--with)" in shown.stdout and "clean" in shown.stdout
