"""gemm_fp16 without a GPU: its rungs are gemm_bf16's files built with GEMM_ELEM_FP16 (the same
geometry, FP16 types), every rung of both families compiles with nvcc with a resource report, the
FP16 build issues the .f16 tensor-core instructions and the BF16 one the .bf16 ones, and the CUTLASS
Hopper row's library builds for sm_90a where CUTLASS's headers are installed."""

from __future__ import annotations

import ctypes
import importlib.util
import subprocess

import pytest

from gpuprof.commands.build import build_variant
from gpuprof.families import _tensor_gemm, gemm_bf16, gemm_fp16
from gpuprof.variants import catalog
from tests.conftest import nvcc_path

BF16 = catalog.load_family("gemm_bf16")
FP16 = catalog.load_family("gemm_fp16")
RUNGS = [(family.name, v.name) for family in (BF16, FP16) for v in family.variants if not v.vendor]
SWITCH = "GEMM_ELEM_FP16"


def test_every_fp16_rung_is_the_bf16_rung_with_the_fp16_switch():
    bf16_rungs = [v.name for v in BF16.variants if not v.vendor]
    assert [v.name for v in FP16.variants if not v.vendor] == bf16_rungs
    for name in bf16_rungs:
        bf16, fp16 = BF16.variant(name), FP16.variant(name)
        assert fp16.file is not None and bf16.file is not None
        assert fp16.file.resolve() == bf16.file.resolve()  # the BF16 file itself, not a copy
        assert fp16.defines == {**bf16.defines, SWITCH: 1} and SWITCH not in bf16.defines
        same = ("kernel", "block", "tile", "require", "dynamic_smem", "arch", "plan", "options", "expected_limiter")
        assert {key: getattr(fp16, key) for key in same} == {key: getattr(bf16, key) for key in same}, name
        assert fp16.precision == ("fp32" if bf16.precision == "fp32" else "fp16")


def test_the_fp16_rungs_stay_inside_the_kernels_folder():
    """What is installed is kernels/ as a whole (gpuprof/_kernels): a rung's file outside it would be missing."""
    root = catalog.kernels_root().resolve()
    for v in FP16.variants:
        if v.file is not None:
            assert v.file.resolve().is_relative_to(root), v.file


def test_both_families_call_the_same_vendor_rows():
    for family in (BF16, FP16):
        assert family.variant("cublas").call == _tensor_gemm.TORCH_CALL
        assert family.variant("cutlass").call == _tensor_gemm.CUTLASS_CALL
    assert gemm_bf16.GEMM.cutlass_fp16 is False and gemm_fp16.GEMM.cutlass_fp16 is True


@pytest.mark.nvcc
@pytest.mark.parametrize(("family", "variant"), RUNGS)
def test_every_rung_compiles_for_hopper_with_a_resource_report(family, variant):
    fam = catalog.load_family(family)
    result = build_variant(fam, fam.variant(variant), "sm_90")  # wgmma: its own sm_90a
    assert result.error is None, result.error
    assert result.usage is not None and result.usage.registers > 0 and not result.usage.spills


def _ptx(file: str, arch: str, fp16: bool, tmp_path) -> str:
    nvcc = nvcc_path()
    assert nvcc is not None
    source = catalog.kernels_root() / "gemm_bf16" / file
    out = tmp_path / f"{source.stem}-{int(fp16)}.ptx"
    argv = [nvcc, "-ptx", f"-arch={arch}", "-std=c++17", *([f"-D{SWITCH}=1"] if fp16 else []), "-o", str(out),
            str(source)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return out.read_text()


@pytest.mark.nvcc
@pytest.mark.parametrize(("file", "arch", "instruction"), [
    ("mma_sync.cu", "sm_90", "mma.sync.aligned.m16n8k16.row.col.f32.{t}.{t}.f32"),
    ("wgmma.cu", "sm_90a", "wgmma.mma_async.sync.aligned.m64n256k16.f32.{t}.{t}"),
])
def test_the_switch_picks_the_tensor_core_types(file, arch, instruction, tmp_path):
    fp16, bf16 = _ptx(file, arch, True, tmp_path), _ptx(file, arch, False, tmp_path)
    assert instruction.format(t="f16") in fp16 and instruction.format(t="bf16") not in fp16
    assert instruction.format(t="bf16") in bf16 and instruction.format(t="f16") not in bf16


HAVE_WHEEL = importlib.util.find_spec("cutlass_library") is not None


@pytest.mark.nvcc
@pytest.mark.skipif(not HAVE_WHEEL, reason="no nvidia-cutlass wheel (gpuprof[cutlass])")
def test_the_cutlass_hopper_library_builds_for_sm90a_with_its_configurations_named(tmp_path, monkeypatch):
    """~50 s of nvcc: CUTLASS 3's kernels are heavy templates (docs/tensor-cores.md)."""
    from gpuprof.families import _cutlass
    from gpuprof.tools import cutlass_headers, nvcc_library

    monkeypatch.delenv("CUTLASS_PATH", raising=False)
    monkeypatch.setattr(nvcc_library, "CACHE_DIR", tmp_path)
    source = catalog.kernels_root() / "gemm_bf16" / "vendor" / "cutlass_gemm_tn.cu"
    built = nvcc_library.shared_library(source, _cutlass.SM90_TARGET, include_dirs=(cutlass_headers.cutlass_include(),),
                                        headers_version=cutlass_headers.cutlass_version() or "",
                                        flags=_cutlass.SM90_FLAGS)
    library = ctypes.CDLL(str(built))
    library.gpuprof_cutlass_gemm_name.restype = ctypes.c_char_p
    count = library.gpuprof_cutlass_gemm_configs()
    names = [library.gpuprof_cutlass_gemm_name(i).decode() for i in range(count)]
    assert count >= 1 and len(set(names)) == count, names
    assert all(name.startswith("cutlass3x_sm90_tensorop_gemm_bf16_") for name in names), names
    assert library.gpuprof_cutlass_gemm_name(count) == b""  # out of range: no name, no crash
    assert hasattr(library, "gpuprof_cutlass_gemm") and hasattr(library, "gpuprof_cutlass_gemm_workspace")


def test_the_cutlass_row_is_skipped_with_the_headers_hint_where_there_are_none(tmp_path, monkeypatch):
    from gpuprof.errors import EnvironmentProblem
    from gpuprof.families import _cutlass
    from gpuprof.tools import cutlass_headers

    monkeypatch.setenv("CUTLASS_PATH", str(tmp_path))  # a folder with no include/cutlass
    monkeypatch.setattr(cutlass_headers.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(EnvironmentProblem, match=r"pip install 'gpuprof\[cutlass\]'"):
        _cutlass._sm90_library(fp16=True)
