"""The reports with the hierarchical roofline recorded on the H100, unpacked once per test session:
the `--set full` reports (tests/fixtures/tools/ncu-2025.3.1__full_source__*: matmul_naive and
matmul_tiled at n = 2048, matmul_warptile at n = 4096) read through the real ncu_report reader, their
raw CSV pages (..._full_source_raw__*) read as the CSV fallback reads them, and gpuprof's default
collection of the first program (..._default_levels__*, n = 1024). Shared by the parser, analysis,
render and CLI tests of the hierarchical roofline."""

from __future__ import annotations

import atexit
import gzip
import shutil
import tempfile
from functools import cache
from pathlib import Path

import pytest

TOOLS_DIR = Path(__file__).resolve().parent / "fixtures" / "tools"
FULL = "ncu-2025.3.1__full_source__"
FULL_CSV = "ncu-2025.3.1__full_source_raw__"
DEFAULT = "ncu-2025.3.1__default_levels__"
REPORTS = ("plain_matmul_lineinfo", "matmul_warptile")
SECTIONS = "ncu-2025.3.1__source_sections__"
# The conftest's `where_reports`, by key: (prefix, name). "sections": the plain program under the
# argv `gpuprof ncu --source --` builds.
WHERE_REPORTS = {"plain": (FULL, "plain_matmul_lineinfo"), "warptile": (FULL, "matmul_warptile"),
                 "sections": (SECTIONS, "plain_matmul_lineinfo")}


def _have_ncu_report() -> bool:
    try:
        import ncu_report  # noqa: F401
    except ImportError:
        return False
    return True


requires_ncu_report = pytest.mark.skipif(not _have_ncu_report(),
                                         reason="ncu_report not installed (a gpuprof dependency on x86-64 Linux)")


@cache
def _unpacked() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="gpuprof-full-reports-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def report_path(name: str, prefix: str = FULL) -> Path:
    """The unpacked .ncu-rep of one recording (written once per session)."""
    path = _unpacked() / f"{prefix}{name}.ncu-rep"
    if not path.exists():
        path.write_bytes(gzip.decompress((TOOLS_DIR / f"{prefix}{name}.ncu-rep.gz").read_bytes()))
    return path


@cache
def _rows(name: str, prefix: str = FULL):
    from gpuprof.parsers.ncu_rep import load_report

    return tuple(load_report(report_path(name, prefix)))


@cache
def _csv_rows(name: str):
    from gpuprof.parsers.ncu_csv import parse_csv

    path = TOOLS_DIR / f"{FULL_CSV}{name}.csv.gz"
    return tuple(parse_csv(gzip.decompress(path.read_bytes()).decode(), path))


def kernel_rows() -> dict:
    """kernel name -> its NcuKernelRow, for the three recorded kernels (`--set full`, ncu_report)."""
    return {r.kernel_name: r for name in REPORTS for r in _rows(name)}


def csv_kernel_rows() -> dict:
    """The same launches through the raw CSV page (the fallback without ncu_report)."""
    return {r.kernel_name: r for name in REPORTS for r in _csv_rows(name)}


def default_kernel_rows() -> dict:
    """matmul_naive and matmul_tiled (n = 1024) under gpuprof's default sections and metrics."""
    return {r.kernel_name: r for r in _rows("plain_matmul_lineinfo", DEFAULT)}
