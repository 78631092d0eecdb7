"""The launch factory: a variant (CUDA, Python/Triton or vendor) -> launch(stream), inside its NVTX ranges."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpuprof.families.interface import UNTIMED_RESET, FamilyHost
from gpuprof.gpu import cupy, device_info
from gpuprof.variants import arguments, nvrtc, ranges
from gpuprof.variants.catalog import Family, Variant
from gpuprof.variants.declarations import parameters
from gpuprof.variants.expressions import size_symbols
from gpuprof.variants.sizes import grid_for


@dataclass(frozen=True)
class LaunchContext:
    """What a family's plan() gets besides the buffers: the manifest's geometry and the device."""

    grid: tuple[int, ...]
    block: tuple[int, int, int]
    shared_mem: int = 0  # the variant's dynamic_smem bytes; the main kernel's limit is already raised

    @property
    def sm_count(self) -> int:
        return device_info().sm_count


def make_launch_factory(family: Family, variant: Variant, host: FamilyHost, *, nvtx: bool = True):
    """launch_for(inputs, out, size) -> launch(stream), inside NVTX family -> variant ranges
    (unless nvtx=False: warm-up launches a profiler must not select). A variant whose manifest
    says zero_output = true gets its output zeroed on the stream first, inside the timed launch."""
    ranged = (lambda launch: ranges.ranged(launch, family.name, variant.name)) if nvtx else (lambda launch: launch)

    def wrap(launch: Any, out: Any) -> Any:
        wrapped = ranged(_zeroing(launch, out) if variant.zero_output else launch)
        reset = getattr(launch, UNTIMED_RESET, None)
        if reset is not None:
            setattr(wrapped, UNTIMED_RESET, reset)
        return wrapped

    if variant.vendor:
        call = vendor_call(variant)
        return lambda inputs, out, size: wrap(host.vendor_launch(call, inputs, out, size), out)
    if variant.is_python:  # a .py file with make_launch(inputs, out, size): Triton, CuPy, a torch extension, Numba
        from gpuprof.variants import python_variant, triton

        python_launch_for = (triton.launch_factory(variant) if variant.is_triton
                             else python_variant.launch_factory(variant))
        return lambda inputs, out, size: wrap(python_launch_for(inputs, out, size), out)
    kernel = nvrtc.compile_variant(variant)
    block = variant.block_dims()
    shared_mem = variant.dynamic_smem_bytes()
    if shared_mem:  # over 48 KB only after the kernel's limit is raised (once per compiled kernel)
        kernel.function.max_dynamic_shared_size_bytes = shared_mem
    slots = _call_slots(family, variant)

    def kernel_for(inputs, out, size):
        grid = grid_for(family, variant, size)
        plan = host.plan
        if plan is not None:  # the family launches this variant its own way (several kernels, workspace)
            return wrap(plan(variant, kernel.functions, inputs, out, size, LaunchContext(grid, block, shared_mem)), out)
        args = host.kernel_args(inputs, out, size)
        if slots is not None:  # the manifest's or --args' mapping onto the kernel's own parameters
            args = mapped_args(family, slots, args, size)

        def launch(stream: Any) -> None:
            kernel.function(grid, block, args, stream=stream, shared_mem=shared_mem)

        return wrap(launch, out)

    return kernel_for


def _call_slots(family: Family, variant: Variant) -> tuple[arguments.Slot, ...] | None:
    if variant.args is None:
        return None
    from gpuprof.variants.user import call_slots

    return call_slots(family, variant)


def mapped_args(family: Family, slots: tuple[arguments.Slot, ...], family_args: tuple, size: dict[str, int]) -> tuple:
    """The kernel's arguments from the family's own (named by its signature) and the size symbols."""
    names = [name for _, name in parameters(family.signature)]
    return arguments.bind(slots, {**size_symbols(family.dims, size), **dict(zip(names, family_args))})


def vendor_call(variant: Variant) -> str:
    """Which library call of the family module's vendor_launch runs: the manifest's `call`."""
    return variant.call or variant.name


def _zeroing(launch: Any, out: Any) -> Any:
    """launch(stream) preceded by a memset of out to zero on the same stream (timed, on purpose:
    a kernel that accumulates into its output needs it every time)."""
    memset = cupy().cuda.runtime.memsetAsync

    def zeroed(stream: Any) -> None:
        memset(out.data.ptr, 0, out.nbytes, stream.ptr)
        launch(stream)

    return zeroed


def host_synchronous(variant: Variant) -> bool:
    """The manifest's `options = { host_synchronous = true }`: the variant's unit blocks the host
    (pageable copies), so the timer takes it without the stream hold (measure/timing.py)."""
    return variant.options.get("host_synchronous", False) is True
