"""On a GPU: gemm_fp16 (gemm_bf16's rungs built for FP16) is OK in one `gpuprof run` at 1024³, cuBLAS
and, where CUTLASS's headers are installed, CUTLASS's Hopper FP16 GEMM beside it; and gemm_bf16's
CUTLASS row is OK at 1024³. The two CUTLASS libraries (about a minute of nvcc each) are built side by
side first, so the runs find them in gpuprof's cache: about 50 s on a cold cache, then two short runs."""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from gpuprof import results
from gpuprof.gpu import device_info
from gpuprof.tools.cutlass_headers import cutlass_version
from gpuprof.variants import catalog

pytestmark = pytest.mark.gpu
REPO = Path(__file__).resolve().parents[2]
HEADERS = cutlass_version() is not None  # CUTLASS's headers where gpuprof looks (CUTLASS_PATH, the wheel)


def _hopper() -> bool:
    return device_info().arch == "sm_90"


@pytest.fixture(scope="module", autouse=True)
def cutlass_libraries_built():
    """Both CUTLASS rows' libraries, built in parallel (nvcc is one process per library)."""
    if not (HEADERS and _hopper()):
        return
    from gpuprof.families import _cutlass

    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(lambda fp16: _cutlass._sm90_library(fp16=fp16), (False, True)))


def _run(tmp_path: Path, family: str, *options: str) -> dict[str, results.Row]:
    out = tmp_path / f"{family}.json"
    done = subprocess.run([sys.executable, "-m", "gpuprof", "run", family, "--size", "1024", "--max-time", "0.3",
                           *options, "--json", str(out)], capture_output=True, text=True, timeout=600, check=False,
                          cwd=REPO)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = {r.variant: r for r in results.load(out).rows}
    for row in rows.values():
        rate = row.derived.rate if row.derived else None
        print(f"{family} {row.variant}: {row.check.status} "
              f"{'' if rate is None else f'{rate / 1e12:.1f} TFLOP/s'} {row.check.reasons or ''}")
    return rows


def _expected(family: str, variant: str) -> str:
    v = catalog.load_family(family).variant(variant)
    if (v.arch or variant == "cutlass") and not _hopper():
        return results.SKIPPED  # sm_90a code: Hopper only (its row says so)
    if variant == "cutlass" and not HEADERS:
        return results.SKIPPED  # no CUTLASS headers: the row's one-line hint
    return results.OK


def test_every_fp16_row_is_ok_at_1024(tmp_path):
    rows = _run(tmp_path, "gemm_fp16")
    assert list(rows) == catalog.load_family("gemm_fp16").variant_names
    for name, row in rows.items():
        assert row.check.status == _expected("gemm_fp16", name), (name, row.check.reasons)
    assert rows["wmma"].precision == "fp16" and rows["naive"].precision == "fp32"


def test_the_bf16_cutlass_row_is_ok_at_1024(tmp_path):
    if not HEADERS:
        pytest.skip("no CUTLASS headers (nvidia-cutlass wheel or CUTLASS_PATH)")
    if not _hopper():
        pytest.skip("the CUTLASS row is CUTLASS's Hopper GEMM (sm_90a)")
    rows = _run(tmp_path, "gemm_bf16", "-v", "cublas,cutlass")
    assert rows["cutlass"].check.status == results.OK, rows["cutlass"].check.reasons
    assert rows["cutlass"].derived is not None and rows["cutlass"].derived.rate
