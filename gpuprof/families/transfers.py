"""transfers: the course's "typical CUDA program": host a, b -> device -> c = a + b -> host c.

Inputs and output are HOST arrays (NumPy over page-aligned anonymous memory, i.e. ordinary
pageable memory, each array on pages of its own). The manifest's `options.memory` says what the
variant does with them (kernels/transfers/family.toml explains each kind); this module owns every
allocation: page-locking in place (cudaHostRegister, undone when the array is freed), mapping,
managed buffers, device buffers and streams. The check is exact: c must equal NumPy's float32
a + b bit for bit (one correctly rounded IEEE add on either side), so any byte lost or stale on
the way (a chunk not copied back) fails.

The rate is bytes across the host link (RATE "link": 8·n to the device, 4·n back) over the median
time, judged against the link's bandwidth per direction (analysis/ceilings.py).

Overlap (printed under the run table by notes()): with t_serial the one-stream pinned unit's
median (H2D a and b, add, D2H c, one after the other) and t_streamed the streamed variant's,
`hidden = (t_serial - t_streamed) / t_serial` is the share of the serial unit's time the streams
hide. The kernel is ~2 % of the unit, so nearly all of t_serial is copies: hidden is the share of
copy time hidden. It cannot exceed `possible = 1 - max(t_h2d, t_d2h) / (t_h2d + t_d2h)`: the
host->device copies alone bound any pipeline, and they are two thirds of vecadd's bytes, so about
1/3 with a symmetric link (from the measured H2D/D2H rates when `devicequery --measure` has run).
`of_possible = hidden / possible` is how much of the attainable overlap the streams achieve.
"""

from __future__ import annotations

import itertools
import mmap
import weakref
from typing import Any

import numpy as np

from gpuprof.errors import EnvironmentProblem, InputError, UsageError
from gpuprof.families import _keys, _torch
from gpuprof.families.interface import UNTIMED_RESET
from gpuprof.gpu import cupy
from gpuprof.results import OK

RATE = "link"
FORMULA = "GB/s = 12·n bytes across the host link (a, b to the GPU, c back; 4 B each) / median time"
PLANS = ("one_stream", "chunked_streams")
MEMORY = ("pageable_host", "page_locked", "page_locked_mapped", "managed")
_PAGE = mmap.PAGESIZE
# cudaHostRegister flags (driver_types.h); CuPy's runtime module does not export their names.
_REGISTER_PORTABLE, _REGISTER_MAPPED = 1, 2


def flop(size: dict[str, int]) -> float:
    return float(size["n"])


def bytes_moved(size: dict[str, int]) -> float:
    return 12.0 * size["n"]  # a and b to the device, c back: 4 bytes each


def link_bytes(size: dict[str, int]) -> tuple[float, float]:
    """(host->device, device->host) bytes of one unit."""
    return 8.0 * size["n"], 4.0 * size["n"]


def tolerance(variant: Any, size: dict[str, int]) -> float:
    return 0.0  # the reference is NumPy's float32 a + b: the GPU's add rounds the same way


def host_array(n: int, fill: float = np.nan) -> np.ndarray:
    """n float32 in fresh pageable memory, page-aligned and alone on its pages (so page-locking it
    never touches another array's pages)."""
    pages = max(1, -(-4 * n // _PAGE))
    buffer = mmap.mmap(-1, pages * _PAGE)
    array = np.frombuffer(buffer, dtype=np.float32, count=n)
    array[...] = fill
    return array


def make_inputs(size: dict[str, int], seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    n = size["n"]
    inputs = {}
    for name in ("a", "b"):
        array = host_array(n, 0.0)
        array[...] = rng.uniform(-1.0, 1.0, n).astype(np.float32)
        inputs[name] = array
    return inputs


def make_output(size: dict[str, int]) -> Any:
    return host_array(size["n"])  # NaN: an element never copied back cannot pass


def kernel_args(inputs: dict[str, Any], out: Any, size: dict[str, int]) -> tuple:
    raise TypeError("transfers launches every variant through plan(): its inputs are host arrays")


def reference(inputs: dict[str, Any], size: dict[str, int]) -> Any:
    return (inputs["a"] + inputs["b"]).astype(np.float64)  # float32 add, exact in float64


def memory(variant: Any) -> str:
    kind = variant.options.get("memory", "pageable_host")
    if kind not in MEMORY:
        raise InputError(f"variant {variant.name!r}: options.memory is {kind!r}; choose from: {', '.join(MEMORY)}")
    return kind


def chunk_bounds(n: int, chunks: int) -> list[tuple[int, int]]:
    """[lo, hi) ranges that tile 0..n in min(chunks, n) nearly equal, non-empty pieces."""
    parts = max(1, min(chunks, n))
    edges = [n * i // parts for i in range(parts + 1)]
    return [(lo, hi) for lo, hi in itertools.pairwise(edges) if hi > lo]


# ---- page-locking the given host arrays in place -------------------------------------------------

_locked: dict[int, tuple[weakref.finalize, int]] = {}


def page_lock(array: np.ndarray, mapped: bool = False) -> int:
    """Page-lock the array's pages (cudaHostRegister) until the array is freed; its device pointer
    (the mapped address when mapped). Registering the same array again reuses the registration."""
    rt = cupy().cuda.runtime
    ptr = array.ctypes.data
    flags = _REGISTER_PORTABLE | (_REGISTER_MAPPED if mapped else 0)
    held = _locked.get(ptr)
    if held is not None and held[0].alive and held[1] != flags:
        held[0]()  # unregister, to register again with the other flags
        held = None
    if held is None or not held[0].alive:
        size = max(1, -(-array.nbytes // _PAGE)) * _PAGE  # the whole pages host_array gave it
        rt.hostRegister(ptr, size, flags)
        _locked[ptr] = (weakref.finalize(array, _unlock, ptr), flags)
    return rt.pointerGetAttributes(ptr).devicePointer if mapped else ptr


def _unlock(ptr: int) -> None:
    _locked.pop(ptr, None)
    cp = cupy()
    try:
        cp.cuda.runtime.hostUnregister(ptr)
    except cp.cuda.runtime.CUDARuntimeError:
        pass  # the context is gone (interpreter exit): the pages go with the process


# ---- the variants -------------------------------------------------------------------------------------

def plan(variant: Any, functions: dict[str, Any], inputs: dict[str, Any], out: Any, size: dict[str, int],
         ctx: Any):
    kind = memory(variant)
    fn = functions[variant.kernel]
    if _keys.plan(variant, PLANS) == "chunked_streams":
        return _streamed(variant, fn, inputs, out, size, ctx)
    if kind == "page_locked_mapped":
        return _mapped(fn, inputs, out, size, ctx)
    if kind == "managed":
        return _managed(fn, inputs, out, size, ctx)
    return _serial(fn, inputs, out, size, ctx, pinned=kind == "page_locked")


def _serial(fn: Any, inputs: dict[str, Any], out: Any, size: dict[str, int], ctx: Any, pinned: bool):
    """cudaMemcpyAsync a and b in, add, c out, on one stream. From pageable memory the driver
    stages the copies and the host waits for them; from page-locked memory they are plain DMA."""
    cp = cupy()
    rt = cp.cuda.runtime
    n = size["n"]
    a, b = inputs["a"], inputs["b"]
    if pinned:
        for array in (a, b, out):
            page_lock(array)
    d_a, d_b, d_c = (cp.empty(n, dtype=cp.float32) for _ in range(3))
    args = (d_a, d_b, d_c, np.int32(n))

    def launch(stream: Any) -> None:
        rt.memcpyAsync(d_a.data.ptr, a.ctypes.data, a.nbytes, rt.memcpyHostToDevice, stream.ptr)
        rt.memcpyAsync(d_b.data.ptr, b.ctypes.data, b.nbytes, rt.memcpyHostToDevice, stream.ptr)
        fn(ctx.grid, ctx.block, args, stream=stream)
        rt.memcpyAsync(out.ctypes.data, d_c.data.ptr, out.nbytes, rt.memcpyDeviceToHost, stream.ptr)

    return launch


def _mapped(fn: Any, inputs: dict[str, Any], out: Any, size: dict[str, int], ctx: Any):
    """Zero-copy: the kernel's loads and stores go across the link to mapped host memory."""
    pointers = [page_lock(array, mapped=True) for array in (inputs["a"], inputs["b"], out)]
    args = (*(np.uint64(p) for p in pointers), np.int32(size["n"]))

    def launch(stream: Any) -> None:
        fn(ctx.grid, ctx.block, args, stream=stream)

    return launch


CU_MEM_LOCATION_TYPE_DEVICE, CU_MEM_LOCATION_TYPE_HOST = 1, 2  # cuda.h: CUmemLocationType


def _prefetcher(location_type: int, location_id: int = 0) -> Any:
    """prefetch(ptr, nbytes, stream_ptr): cuMemPrefetchAsync_v2 of managed memory to a location."""
    import ctypes

    class Location(ctypes.Structure):
        _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]

    try:
        driver = ctypes.CDLL("libcuda.so.1")
        prefetch = driver.cuMemPrefetchAsync_v2
    except (OSError, AttributeError) as exc:
        raise EnvironmentProblem(
            f"managed_prefetch needs the driver's cuMemPrefetchAsync_v2 (CUDA 12.2+): {exc}") from None
    prefetch.argtypes = [ctypes.c_uint64, ctypes.c_size_t, Location, ctypes.c_uint, ctypes.c_void_p]
    prefetch.restype = ctypes.c_int

    def to_host(ptr: int, nbytes: int, stream_ptr: int) -> None:
        status = prefetch(ptr, nbytes, Location(location_type, location_id), 0, stream_ptr)
        if status != 0:
            raise EnvironmentProblem(
                f"cuMemPrefetchAsync_v2 (location type {location_type}) failed with CUresult {status}")

    return to_host


def _managed(fn: Any, inputs: dict[str, Any], out: Any, size: dict[str, int], ctx: Any):
    """a and b in managed memory, filled on the host here (the program's initialisation, not
    timed); each unit prefetches them to the GPU, adds, and copies c into the page-locked output.
    The untimed reset prefetches a and b back to the host, so every sample moves them again. That
    prefetch goes through the driver's cuMemPrefetchAsync_v2 with a host location: CuPy's
    runtime wrapper turned cudaCpuDeviceId into "invalid device ordinal" under CUDA 13 on the
    H100, and host writes to one float per page did not move the data back (the samples then fell
    below the link's physical floor: IMPOSSIBLE)."""
    import ctypes

    cp = cupy()
    rt = cp.cuda.runtime
    n = size["n"]
    managed = []
    for name in ("a", "b"):
        memory_ptr = cp.cuda.malloc_managed(4 * n)
        host_view = np.ctypeslib.as_array((ctypes.c_float * n).from_address(memory_ptr.ptr))
        host_view[...] = inputs[name]
        managed.append(cp.ndarray(n, dtype=cp.float32, memptr=memory_ptr))
    m_a, m_b = managed
    page_lock(out)
    d_c = cp.empty(n, dtype=cp.float32)
    device = cp.cuda.Device().id
    args = (m_a, m_b, d_c, np.int32(n))

    def launch(stream: Any) -> None:
        for m in managed:
            to_device(m.data.ptr, m.nbytes, stream.ptr)
        fn(ctx.grid, ctx.block, args, stream=stream)
        rt.memcpyAsync(out.ctypes.data, d_c.data.ptr, out.nbytes, rt.memcpyDeviceToHost, stream.ptr)

    to_host = _prefetcher(CU_MEM_LOCATION_TYPE_HOST)
    to_device = _prefetcher(CU_MEM_LOCATION_TYPE_DEVICE, device)

    def back_to_host(stream: Any) -> None:
        for m in managed:
            to_host(m.data.ptr, m.nbytes, stream.ptr)

    setattr(launch, UNTIMED_RESET, back_to_host)
    return launch


def _streamed(variant: Any, fn: Any, inputs: dict[str, Any], out: Any, size: dict[str, int], ctx: Any):
    """The unit in chunks, issued round-robin on options.streams streams forked from and joined
    back to the given stream (so its events bracket all of it): chunk i's copies overlap chunk
    i-1's add and chunk i-2's copy back (H2D and D2H run on separate copy engines)."""
    cp = cupy()
    rt = cp.cuda.runtime
    n = size["n"]
    a, b = inputs["a"], inputs["b"]
    for array in (a, b, out):
        page_lock(array)
    d_a, d_b, d_c = (cp.empty(n, dtype=cp.float32) for _ in range(3))
    streams = [cp.cuda.Stream(non_blocking=True) for _ in range(int(variant.options.get("streams", 4)))]
    fork = cp.cuda.Event(disable_timing=True)
    joins = [cp.cuda.Event(disable_timing=True) for _ in streams]
    block = ctx.block[0]
    pieces = []
    for lo, hi in chunk_bounds(n, int(variant.options.get("chunks", 16))):
        count = hi - lo
        pieces.append((lo, hi, ((count + block - 1) // block,), (d_a[lo:hi], d_b[lo:hi], d_c[lo:hi], np.int32(count))))

    def launch(stream: Any) -> None:
        fork.record(stream)
        for s in streams:
            s.wait_event(fork)
        for i, (lo, hi, grid, args) in enumerate(pieces):
            s = streams[i % len(streams)]
            nbytes = 4 * (hi - lo)
            rt.memcpyAsync(d_a.data.ptr + 4 * lo, a.ctypes.data + 4 * lo, nbytes, rt.memcpyHostToDevice, s.ptr)
            rt.memcpyAsync(d_b.data.ptr + 4 * lo, b.ctypes.data + 4 * lo, nbytes, rt.memcpyHostToDevice, s.ptr)
            fn(grid, ctx.block, args, stream=s)
            copy_back(out, d_c, lo, hi, s)
        for s, joined in zip(streams, joins):
            joined.record(s)
            stream.wait_event(joined)

    return launch


def copy_back(out: np.ndarray, d_c: Any, lo: int, hi: int, stream: Any) -> None:
    """One chunk of c to the host (its own function so a GPU test can plant a lost chunk)."""
    rt = cupy().cuda.runtime
    rt.memcpyAsync(out.ctypes.data + 4 * lo, d_c.data.ptr + 4 * lo, 4 * (hi - lo), rt.memcpyDeviceToHost, stream.ptr)


def vendor_launch(call: str, inputs: dict[str, Any], out: Any, size: dict[str, int]):
    """PyTorch's way: page-locked host tensors, .to('cuda', non_blocking=True), torch.add, and
    copy_(non_blocking=True) back into the page-locked output, on the given stream."""
    if call != "torch.Tensor.to":
        raise KeyError(call)
    t = _torch.torch()
    for array in (inputs["a"], inputs["b"], out):
        page_lock(array)
    h_a, h_b, h_c = (t.from_numpy(x) for x in (inputs["a"], inputs["b"], out))

    def launch(stream: Any) -> None:
        with _torch.on_stream(stream):
            d_a = h_a.to("cuda", non_blocking=True)
            d_b = h_b.to("cuda", non_blocking=True)
            h_c.copy_(t.add(d_a, d_b), non_blocking=True)

    return launch


# ---- the overlap figure under the run table ---------------------------------------------------------

def overlap(t_serial: float, t_streamed: float, h2d_s: float, d2h_s: float) -> dict[str, float]:
    """hidden, possible and of_possible (module docstring); h2d_s / d2h_s: the two directions'
    copy times of one unit (only their ratio matters)."""
    hidden = (t_serial - t_streamed) / t_serial
    possible = 1.0 - max(h2d_s, d2h_s) / (h2d_s + d2h_s)
    return {"hidden": hidden, "possible": possible, "of_possible": hidden / possible if possible > 0 else float("nan")}


def notes(rows: list[Any], family: Any, measured: Any = None) -> list[str]:
    """One line: how much of the one-stream pinned unit's time the streamed variant hides."""
    def median(row: Any) -> float | None:
        ok = row.check.status == OK and row.timing is not None and row.timing.summary is not None
        return row.timing.summary.median_s if ok else None

    serial = streamed = None
    for row in rows:
        try:
            variant = family.variant(row.variant)
        except UsageError:  # a row of a variant not in the manifest (a results file from elsewhere)
            continue
        chosen = _keys.plan(variant, PLANS) if not variant.vendor else None
        if chosen == "one_stream" and variant.options.get("memory") == "page_locked" and serial is None:
            serial = row
        elif chosen == "chunked_streams" and streamed is None:
            streamed = row
    if serial is None or streamed is None or serial.size != streamed.size:
        return []
    t_serial, t_streamed = median(serial), median(streamed)
    if not t_serial or not t_streamed:
        return []
    h2d_bytes, d2h_bytes = link_bytes(serial.size)
    rates = (getattr(measured, "link_h2d_bytes_s", None), getattr(measured, "link_d2h_bytes_s", None))
    if rates[0] and rates[1]:
        figure = overlap(t_serial, t_streamed, h2d_bytes / rates[0], d2h_bytes / rates[1])
        basis = "measured H2D/D2H rates"
    else:
        figure = overlap(t_serial, t_streamed, h2d_bytes, d2h_bytes)
        basis = "a symmetric link"
    return [(f"overlap: {streamed.variant} hides {figure['hidden']:.0%} of {serial.variant}'s one-stream time "
            f"({t_serial * 1e3:.2f} → {t_streamed * 1e3:.2f} ms); at most {figure['possible']:.0%} can be hidden "
            f"(host→device copies bound the pipeline; {basis}): {figure['of_possible']:.0%} of the possible")]
