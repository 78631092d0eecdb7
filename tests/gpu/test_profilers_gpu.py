"""On a GPU with ncu and compute-sanitizer: profile and sanitize for real, and find planted bugs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gpuprof.commands.ncu import profile_family
from gpuprof.commands.sanitize import sanitize_size, sanitize_targets
from gpuprof.tools.ncu import NcuOptions
from gpuprof.tools.target import LaunchTarget
from gpuprof.variants import catalog
from gpuprof.variants.user import parse_add, to_variant

pytestmark = pytest.mark.gpu
KERNELS = Path(__file__).resolve().parent.parent / "kernels"


def needs(tool: str) -> None:
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not on PATH")


def bad_target(file: str) -> LaunchTarget:
    spec = parse_add(str(KERNELS / file))
    fam = catalog.load_family("vecadd")
    variant = to_variant(fam, spec)
    # 4097 = 16 blocks of 256 and one thread more: the last block has 255 threads past the end.
    return LaunchTarget("vecadd", variant.name, {"n": 4097}, plain_allocations=True, add=tuple(spec.cli_args()))


def bug_line(file: str) -> int:
    lines = (KERNELS / file).read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if "// BUG" in line)


@pytest.mark.parametrize("file, tool, kind", [
    ("oob_write.cu", "memcheck", "invalid_write"),
    ("racy_smem.cu", "racecheck", "race_hazard"),
    ("uninit_read.cu", "initcheck", "uninitialized_read"),
    ("divergent_barrier.cu", "synccheck", "barrier_divergence"),
])
def test_known_bad_kernel_is_found_with_tool_kind_and_line(tmp_path, file, tool, kind):
    needs("compute-sanitizer")
    (result,) = sanitize_targets([bad_target(file)], [tool], tmp_path).results
    assert result.error is None, result.error
    assert result.findings, f"{tool} found nothing in {file}"
    kinds = {f.kind for f in result.findings}
    assert kind in kinds, kinds
    lines = {(Path(f.file).name if f.file else None, f.line) for f in result.findings if f.kind == kind}
    expected = bug_line(file)
    allowed = {expected, expected - 1} if kind == "race_hazard" else {expected}  # a race names both accesses
    assert any(name == file and line in allowed for name, line in lines), lines


def test_builtin_variants_are_clean_under_memcheck(tmp_path):
    needs("compute-sanitizer")
    targets = [LaunchTarget(f.name, v.name, sanitize_size(list(f.check_sizes)), plain_allocations=True)
               for f in catalog.load_all() for v in f.variants if not v.vendor]
    results = sanitize_targets(targets, ["memcheck"], tmp_path, jobs=6).results
    dirty = [(r.label, r.error, [x.message for x in r.findings[:2]]) for r in results if not r.clean]
    assert not dirty


def test_ncu_batch_splits_one_report_back_per_variant(tmp_path):
    """All of a family's variants in one child under one ncu: each gets exactly its own launches."""
    needs("ncu")
    names = ["naive", "smem_tiled", "cublas"]
    run = profile_family("matmul", names, {"m": 512, "n": 512, "k": 512}, tmp_path, NcuOptions())
    assert [r.label for r in run.results] == names
    assert all(r.error is None and r.rows for r in run.results), [(r.label, r.error) for r in run.results]
    assert {r.report.name for r in run.results} == {"matmul_3_variants.ncu-rep"}  # one ncu run
    by_name = {r.label: r.rows for r in run.results}
    assert [row.kernel_name for row in by_name["naive"]] == ["matmul_naive"]
    assert [row.kernel_name for row in by_name["smem_tiled"]] == ["matmul_smem_tiled"]
    assert all(row.nvtx_ranges[:2] == ("matmul", "cublas") for row in by_name["cublas"])
    # Every field the tables and the roofline show still comes with the trimmed default sections.
    for row in (row for rows in by_name.values() for row in rows):
        for value in (row.duration_ns, row.sm_throughput_pct, row.memory_throughput_pct, row.dram_throughput_pct,
                      row.achieved_occupancy_pct, row.theoretical_occupancy_pct, row.occupancy_limiter,
                      row.registers_per_thread, row.dram_bytes, row.flop, row.peak_dram_bytes_per_s,
                      row.roofline_levels):
            assert value is not None, row


def test_ncu_profiles_exactly_one_variant(tmp_path):
    needs("ncu")
    run = profile_family("matmul", ["smem_tiled"], {"m": 1024, "n": 1024, "k": 1024}, tmp_path, NcuOptions())
    (result,) = run.results
    assert result.error is None, result.error
    (row,) = result.rows  # the NVTX filter leaves the one launch after the unranged warm-ups
    assert row.kernel_name == "matmul_smem_tiled"
    assert row.duration_ns and row.duration_ns > 0
    assert 0 < row.achieved_occupancy_pct <= 100
    assert row.registers_per_thread and row.registers_per_thread > 0
    # ncu flushes the caches first, so A and B cross DRAM at least once: 2 · 4 · 1024² bytes.
    assert row.dram_bytes >= 0.9 * 2 * 4 * 1024 * 1024  # A and B read at least once (C may stay in L2)
    assert row.flop >= 2 * 1024**3  # every FMA counted twice
