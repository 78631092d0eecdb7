"""Tensor Memory Accelerator (TMA) descriptors for Hopper kernels: a CUtensorMap built by the driver's
cuTensorMapEncodeTiled (libcuda.so.1 through ctypes, no new dependency) and returned as a 128-byte
NumPy structured scalar that CuPy passes by value as a kernel's `const __grid_constant__ TensorMap`
argument. tiled_2d_args is the pure part (the argument arrays of one row-major matrix), kept apart
so it can be checked without a GPU; tensor_maps builds the maps a variant's manifest asks for
(options.tma_box_NAME), shared by the families whose plan "tma" passes buffers as tensor maps."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any, cast

import numpy

from gpuprof.errors import InputError
from gpuprof.variants.expressions import evaluate

# Enum values of the toolkit's cuda.h (CUDA 12.x/13.0, unchanged since CUDA 12.0).
CU_TENSOR_MAP_DATA_TYPE_UINT8 = 0        # CUtensorMapDataType
CU_TENSOR_MAP_DATA_TYPE_UINT16 = 1
CU_TENSOR_MAP_DATA_TYPE_FLOAT16 = 6
CU_TENSOR_MAP_DATA_TYPE_FLOAT32 = 7
CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 = 9
CU_TENSOR_MAP_INTERLEAVE_NONE = 0        # CUtensorMapInterleave
CU_TENSOR_MAP_SWIZZLE_NONE = 0           # CUtensorMapSwizzle
CU_TENSOR_MAP_SWIZZLE_32B = 1
CU_TENSOR_MAP_SWIZZLE_64B = 2
CU_TENSOR_MAP_SWIZZLE_128B = 3
CU_TENSOR_MAP_L2_PROMOTION_NONE = 0      # CUtensorMapL2promotion
CU_TENSOR_MAP_L2_PROMOTION_L2_64B = 1
CU_TENSOR_MAP_L2_PROMOTION_L2_128B = 2
CU_TENSOR_MAP_L2_PROMOTION_L2_256B = 3
CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0    # CUtensorMapFloatOOBfill
CU_TENSOR_MAP_NUM_QWORDS = 16            # CUtensorMap: 16 x cuuint64_t, 64-byte aligned

SWIZZLES = {0: CU_TENSOR_MAP_SWIZZLE_NONE, 32: CU_TENSOR_MAP_SWIZZLE_32B, 64: CU_TENSOR_MAP_SWIZZLE_64B,
            128: CU_TENSOR_MAP_SWIZZLE_128B}
DATA_TYPES = {1: CU_TENSOR_MAP_DATA_TYPE_UINT8, 2: CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
              4: CU_TENSOR_MAP_DATA_TYPE_FLOAT32}  # element_bytes -> type (2 bytes: BF16)
DATA_TYPE_BYTES = {CU_TENSOR_MAP_DATA_TYPE_UINT8: 1, CU_TENSOR_MAP_DATA_TYPE_UINT16: 2,
                   CU_TENSOR_MAP_DATA_TYPE_FLOAT16: 2, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16: 2,
                   CU_TENSOR_MAP_DATA_TYPE_FLOAT32: 4}

TENSOR_MAP_DTYPE = numpy.dtype([("opaque", numpy.uint64, CU_TENSOR_MAP_NUM_QWORDS)])

cuuint32_t = ctypes.c_uint32
cuuint64_t = ctypes.c_uint64


TENSOR_MAP_BYTES = 8 * CU_TENSOR_MAP_NUM_QWORDS
TENSOR_MAP_ALIGN = 64                    # cuTensorMapEncodeTiled: "tensorMap address must be aligned to 64 bytes"


@dataclass(frozen=True)
class TiledArgs:
    """cuTensorMapEncodeTiled's arguments after the map itself, innermost dimension first."""
    data_type: int
    rank: int
    address: int
    global_dim: tuple[int, ...]
    global_strides: tuple[int, ...]  # bytes, rank - 1 of them (dimension 0 is contiguous)
    box_dim: tuple[int, ...]
    element_strides: tuple[int, ...]
    interleave: int
    swizzle: int
    l2_promotion: int
    oob_fill: int


def tiled_2d_args(address: int, rows: int, cols: int, box_rows: int, box_cols: int, *,
                  element_bytes: int = 2, swizzle_bytes: int = 128, data_type: int | None = None) -> TiledArgs:
    """The arguments describing a row-major rows×cols matrix at `address`, read in box_rows×box_cols
    boxes: dimension 0 is the columns (contiguous), dimension 1 the rows, one row apart. data_type:
    a CU_TENSOR_MAP_DATA_TYPE_* of element_bytes bytes (FLOAT16); None: DATA_TYPES' for the width."""
    if element_bytes not in DATA_TYPES:
        raise ValueError(f"element_bytes must be one of {sorted(DATA_TYPES)}, not {element_bytes}")
    if data_type is not None and DATA_TYPE_BYTES.get(data_type) != element_bytes:
        raise ValueError(f"tensor map data type {data_type} is not {element_bytes} bytes wide")
    if swizzle_bytes not in SWIZZLES:
        raise ValueError(f"swizzle_bytes must be one of {sorted(SWIZZLES)}, not {swizzle_bytes}")
    if min(rows, cols, box_rows, box_cols) < 1:
        raise ValueError(f"dimensions must be positive: {rows}x{cols}, box {box_rows}x{box_cols}")
    if not (box_rows <= 256 and box_cols <= 256):
        raise ValueError(f"a TMA box is at most 256 elements per dimension, not {box_rows}x{box_cols}")
    row_bytes = cols * element_bytes
    if row_bytes % 16 or address % 16:
        raise ValueError(f"TMA needs 16-byte aligned rows and address (row {row_bytes} B, address {address:#x})")
    if swizzle_bytes and box_cols * element_bytes > swizzle_bytes:
        raise ValueError(f"the box's inner extent ({box_cols * element_bytes} B) exceeds the {swizzle_bytes}B swizzle")
    return TiledArgs(data_type=DATA_TYPES[element_bytes] if data_type is None else data_type, rank=2, address=address,
                     global_dim=(cols, rows), global_strides=(row_bytes,), box_dim=(box_cols, box_rows),
                     element_strides=(1, 1), interleave=CU_TENSOR_MAP_INTERLEAVE_NONE,
                     swizzle=SWIZZLES[swizzle_bytes], l2_promotion=CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                     oob_fill=CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)


_driver: Any = None


def _load_driver() -> Any:
    """libcuda.so.1 (the driver's own library, not the runtime), loaded once."""
    global _driver
    if _driver is None:
        try:
            lib = ctypes.CDLL("libcuda.so.1")
        except OSError as exc:
            raise RuntimeError(f"the CUDA driver (libcuda.so.1) was not found: {exc}") from exc
        encode = lib.cuTensorMapEncodeTiled
        encode.restype = ctypes.c_int
        encode.argtypes = [ctypes.c_void_p, ctypes.c_int, cuuint32_t, ctypes.c_void_p,
                           ctypes.POINTER(cuuint64_t), ctypes.POINTER(cuuint64_t), ctypes.POINTER(cuuint32_t),
                           ctypes.POINTER(cuuint32_t), ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int]
        _driver = lib
    return _driver


def encode_tiled(args: TiledArgs) -> numpy.void:
    """The CUtensorMap of `args` as a 128-byte structured scalar (dtype TENSOR_MAP_DTYPE)."""
    encode = _load_driver().cuTensorMapEncodeTiled
    buffer = (ctypes.c_uint8 * (TENSOR_MAP_BYTES + TENSOR_MAP_ALIGN))()  # ctypes aligns to 8 only
    tensor_map = (ctypes.addressof(buffer) + TENSOR_MAP_ALIGN - 1) & ~(TENSOR_MAP_ALIGN - 1)
    status = encode(ctypes.c_void_p(tensor_map), args.data_type, args.rank, ctypes.c_void_p(args.address),
                    (cuuint64_t * args.rank)(*args.global_dim),
                    (cuuint64_t * (args.rank - 1))(*args.global_strides),
                    (cuuint32_t * args.rank)(*args.box_dim),
                    (cuuint32_t * args.rank)(*args.element_strides),
                    args.interleave, args.swizzle, args.l2_promotion, args.oob_fill)
    if status != 0:
        raise RuntimeError(f"cuTensorMapEncodeTiled failed with CUresult {status} ({args})")
    out = numpy.zeros((), dtype=TENSOR_MAP_DTYPE)
    out["opaque"] = numpy.frombuffer(ctypes.string_at(tensor_map, TENSOR_MAP_BYTES), dtype=numpy.uint64)
    return cast(numpy.void, out[()])


def encode_2d(address: int, rows: int, cols: int, box_rows: int, box_cols: int, *,
              element_bytes: int = 2, swizzle_bytes: int = 128, data_type: int | None = None) -> numpy.void:
    """Tensor map of the row-major rows×cols matrix at device `address` (BF16 unless element_bytes or
    data_type say otherwise), boxes of box_rows×box_cols, swizzle_bytes swizzle, 256-byte L2 promotion."""
    return encode_tiled(tiled_2d_args(address, rows, cols, box_rows, box_cols, element_bytes=element_bytes,
                                      swizzle_bytes=swizzle_bytes, data_type=data_type))


TMA_OPTION = "tma_box_"  # options.tma_box_A = "BM,BK": buffer A passed as a tensor map of BM×BK boxes


def tensor_maps(variant: Any, inputs: dict[str, Any], names: tuple[str, ...],
                data_type: int | None = None) -> dict[str, numpy.void]:
    """The tensor map of each buffer the variant's options name (options.tma_box_NAME = "rows,cols", each
    an expression over the defines), by buffer name; `names` are the buffers the family allows. A buffer
    of any rank is mapped as the row-major matrix of its last dimension's rows: (B, H, S, D) as
    (B·H·S) × D. data_type: the elements' CUtensorMapDataType (BF16 by default)."""
    boxes = {key.removeprefix(TMA_OPTION): value for key, value in variant.options.items()
             if key.startswith(TMA_OPTION)}
    if not boxes or any(name not in names or not isinstance(box, str) or box.count(",") != 1
                        for name, box in boxes.items()):
        keys = " and/or ".join(f"{TMA_OPTION}{name}" for name in names)
        raise InputError(f"variant {variant.name!r}: plan \"tma\" needs options {keys}, each \"rows,cols\" of "
                         f"the tensor map's box as expressions over the defines, e.g. "
                         f"{{ {TMA_OPTION}{names[0]} = \"128,64\" }}")
    maps = {}
    for name, box in boxes.items():
        rows, cols = (evaluate(e.strip(), variant.defines) for e in box.split(","))
        array = inputs[name]
        width = array.shape[-1]
        maps[name] = encode_2d(array.data.ptr, array.size // width, width, rows, cols, data_type=data_type)
    return maps
