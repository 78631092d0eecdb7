"""families/_tma.py without a GPU: the argument arrays cuTensorMapEncodeTiled gets for a row-major
matrix, the enum values against the toolkit's cuda.h (when one is found here), and the error when the
driver library is missing."""

from __future__ import annotations

import ctypes
import os
import re
import shutil
from pathlib import Path

import numpy
import pytest

from gpuprof.families import _tma


def test_row_major_matrix_is_columns_then_rows() -> None:
    args = _tma.tiled_2d_args(0x7F00_0000_0000, 4096, 8192, 128, 64)
    assert args.rank == 2
    assert args.address == 0x7F00_0000_0000
    assert args.global_dim == (8192, 4096)          # innermost (columns) first
    assert args.global_strides == (8192 * 2,)       # bytes between rows; dimension 0 is contiguous
    assert args.box_dim == (64, 128)
    assert args.element_strides == (1, 1)
    assert args.data_type == _tma.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
    assert args.interleave == _tma.CU_TENSOR_MAP_INTERLEAVE_NONE
    assert args.swizzle == _tma.CU_TENSOR_MAP_SWIZZLE_128B
    assert args.l2_promotion == _tma.CU_TENSOR_MAP_L2_PROMOTION_L2_256B
    assert args.oob_fill == _tma.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE


def test_element_bytes_and_swizzle_choices() -> None:
    args = _tma.tiled_2d_args(0, 16, 32, 8, 32, element_bytes=4, swizzle_bytes=0)
    assert args.global_strides == (128,)
    assert args.data_type == _tma.CU_TENSOR_MAP_DATA_TYPE_FLOAT32
    assert args.swizzle == _tma.CU_TENSOR_MAP_SWIZZLE_NONE
    assert _tma.tiled_2d_args(0, 16, 32, 8, 16, swizzle_bytes=32).swizzle == _tma.CU_TENSOR_MAP_SWIZZLE_32B


@pytest.mark.parametrize("kwargs, words", [
    ({"rows": 8, "cols": 12, "box_rows": 8, "box_cols": 8}, "16-byte"),             # 24-byte rows
    ({"rows": 8, "cols": 256, "box_rows": 8, "box_cols": 128}, "128B swizzle"),      # 256-byte inner box
    ({"rows": 512, "cols": 64, "box_rows": 512, "box_cols": 64}, "256 elements"),
    ({"rows": 0, "cols": 64, "box_rows": 8, "box_cols": 64}, "positive"),
])
def test_bad_shapes_are_refused(kwargs: dict[str, int], words: str) -> None:
    with pytest.raises(ValueError, match=words):
        _tma.tiled_2d_args(0, **kwargs)


def test_bad_alignment_and_options_are_refused() -> None:
    with pytest.raises(ValueError, match="16-byte"):
        _tma.tiled_2d_args(8, 64, 64, 64, 64)
    with pytest.raises(ValueError, match="swizzle_bytes"):
        _tma.tiled_2d_args(0, 64, 64, 64, 64, swizzle_bytes=16)
    with pytest.raises(ValueError, match="element_bytes"):
        _tma.tiled_2d_args(0, 64, 64, 64, 64, element_bytes=3)


def test_tensor_map_dtype_is_128_bytes() -> None:
    assert _tma.TENSOR_MAP_DTYPE.itemsize == 128
    assert _tma.TENSOR_MAP_BYTES == 128


def _cuda_header() -> Path | None:
    candidates = []
    nvcc = shutil.which("nvcc")
    if nvcc:
        home = Path(os.path.realpath(nvcc)).parent.parent
        candidates += [home / "include" / "cuda.h", home / "targets" / "x86_64-linux" / "include" / "cuda.h"]
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            candidates.append(Path(os.environ[var]) / "include" / "cuda.h")
    candidates += sorted(Path("/usr/local").glob("cuda*/include/cuda.h"))
    return next((c for c in candidates if c.is_file()), None)


def _enum_values(text: str, enum: str) -> dict[str, int]:
    body = re.search(r"typedef enum " + enum + r"_enum \{(.*?)\}", text, re.DOTALL)
    assert body, enum
    values, nxt = {}, 0
    for item in re.sub(r"//[^\n]*|/\*.*?\*/", "", body.group(1), flags=re.DOTALL).split(","):
        item = item.strip()
        if not item:
            continue
        name, _, value = item.partition("=")
        nxt = int(value.strip(), 0) if value.strip() else nxt
        values[name.strip()] = nxt
        nxt += 1
    return values


def test_enum_values_match_cuda_h() -> None:
    header = _cuda_header()
    if header is None:
        pytest.skip("no cuda.h found on this machine")
    text = header.read_text(errors="replace")
    checked = set()
    for enum in ("CUtensorMapDataType", "CUtensorMapInterleave", "CUtensorMapSwizzle", "CUtensorMapL2promotion",
                 "CUtensorMapFloatOOBfill"):
        for name, value in _enum_values(text, enum).items():
            if hasattr(_tma, name):
                assert getattr(_tma, name) == value, (header, name)
                checked.add(name)
    assert {"CU_TENSOR_MAP_DATA_TYPE_BFLOAT16", "CU_TENSOR_MAP_SWIZZLE_128B", "CU_TENSOR_MAP_L2_PROMOTION_L2_256B",
            "CU_TENSOR_MAP_INTERLEAVE_NONE", "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE"} <= checked
    assert re.search(r"#define CU_TENSOR_MAP_NUM_QWORDS 16\b", text)


def test_missing_driver_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_library(name: str, *args: object, **kwargs: object) -> ctypes.CDLL:
        raise OSError(f"{name}: cannot open shared object file: No such file or directory")

    monkeypatch.setattr(_tma, "_driver", None)
    monkeypatch.setattr(_tma.ctypes, "CDLL", no_library)
    with pytest.raises(RuntimeError, match="driver.*not found"):
        _tma.encode_2d(0x1000, 128, 64, 128, 64)


class _FakeEncode:
    """Stands in for cuTensorMapEncodeTiled: records the arguments, writes a pattern, returns `status`."""

    def __init__(self, status: int) -> None:
        self.status = status
        self.calls: list[tuple[object, ...]] = []

    def __call__(self, tensor_map: ctypes.c_void_p, *args: object) -> int:
        assert tensor_map.value is not None and tensor_map.value % 64 == 0
        self.calls.append(args)
        ctypes.memmove(tensor_map.value, bytes(range(128)), 128)
        return self.status


class _FakeDriver:
    def __init__(self, status: int) -> None:
        self.cuTensorMapEncodeTiled = _FakeEncode(status)


def test_encode_passes_the_arrays_and_returns_the_map(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _FakeDriver(0)
    monkeypatch.setattr(_tma, "_driver", fake)
    out = _tma.encode_2d(0x10000, 256, 512, 256, 64)
    assert isinstance(out, numpy.void) and out.dtype == _tma.TENSOR_MAP_DTYPE
    assert bytes(out["opaque"].tobytes()) == bytes(range(128))
    (call,) = fake.cuTensorMapEncodeTiled.calls
    dtype, rank, address, dims, strides, box, estrides, interleave, swizzle, l2, oob = call
    assert (dtype, rank) == (_tma.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2)
    assert isinstance(address, ctypes.c_void_p) and address.value == 0x10000
    assert isinstance(dims, ctypes.Array) and dims._type_ is ctypes.c_uint64 and list(dims) == [512, 256]
    assert isinstance(strides, ctypes.Array) and strides._type_ is ctypes.c_uint64 and list(strides) == [1024]
    assert isinstance(box, ctypes.Array) and box._type_ is ctypes.c_uint32 and list(box) == [64, 256]
    assert isinstance(estrides, ctypes.Array) and estrides._type_ is ctypes.c_uint32 and list(estrides) == [1, 1]
    assert (interleave, swizzle, l2, oob) == (0, 3, 3, 0)


def test_encode_failure_names_the_call_and_code(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_tma, "_driver", _FakeDriver(1))
    with pytest.raises(RuntimeError, match=r"cuTensorMapEncodeTiled .*CUresult 1\b"):
        _tma.encode_2d(0x10000, 256, 512, 256, 64)
