"""Launch one variant a few times with nothing else around it: the child process ncu, nsys and
compute-sanitizer watch. Launches sit inside NVTX ranges family -> variant."""

from __future__ import annotations

import secrets

from gpuprof import families
from gpuprof.errors import UsageError
from gpuprof.families import _random, registry
from gpuprof.gpu import cupy, device_info
from gpuprof.measure.check import starting_values
from gpuprof.results import size_label
from gpuprof.variants import constraints
from gpuprof.variants.launch_plan import make_launch_factory
from gpuprof.variants.sizes import clip


def launch_variant(family_name: str, variant_name: str, size: dict[str, int], *, count: int = 1,
                   warmup: int = 0, plain_allocations: bool = False, defines: dict[str, int] | None = None,
                   extra: list | None = None) -> None:
    cp = cupy()
    if plain_allocations:
        # Pools hide out-of-bounds accesses from memcheck (the access lands in pooled memory).
        cp.cuda.set_allocator(None)
        cp.cuda.set_pinned_memory_allocator(None)
        # ... and cuRAND's state set-up kernels, instrumented, were the slowest part of a child.
        _random.draw_on_host()
    family = registry.resolve(family_name).with_variants(extra or [])
    (variant,) = family.apply_defines([family.variant(variant_name)], defines or {})
    host = families.host(family)
    device_info()
    size = clip(size, variant.max_size)
    broken = constraints.violations(family.requires(variant), family.dims, size, variant.defines)
    if broken:  # what run reports as not run is not launched under a profiler or sanitizer either
        raise UsageError(f"{variant.name} at size {size_label(size)} breaks its constraint "
                         f"{', '.join(broken)}; choose a --size that keeps it")
    inputs = host.make_inputs(size, secrets.randbits(63))
    out = host.make_output(size)
    if variant.reads_output:  # it reads its output: known values, not NaN (nor, for initcheck, unwritten memory)
        out[...] = starting_values(out, secrets.randbits(63))
    elif plain_allocations and isinstance(out, cp.ndarray):
        # Under a sanitizer the output stays unwritten, so initcheck sees a kernel that reads it first.
        # (A host output, as the transfers family's, is the family's own page-aligned memory: kept.)
        out = cp.empty(out.shape, dtype=out.dtype)
    stream = cp.cuda.Stream(non_blocking=True)
    warm = make_launch_factory(family, variant, host, nvtx=False)(inputs, out, size)
    for _ in range(warmup):  # outside the NVTX ranges, so profilers that filter on them skip these
        warm(stream)
    launch = make_launch_factory(family, variant, host)(inputs, out, size)
    for _ in range(count):
        launch(stream)
    stream.synchronize()
