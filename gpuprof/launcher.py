"""Launch one variant a few times with nothing else around it: the child process ncu, nsys and
compute-sanitizer watch. Launches sit inside NVTX ranges family -> variant."""

from __future__ import annotations

import secrets

from gpuprof import catalog, families
from gpuprof.gpu import cupy, device_info
from gpuprof.runner import clip, make_launch_factory


def launch_variant(family_name: str, variant_name: str, size: dict[str, int], *, count: int = 1,
                   warmup: int = 0, plain_allocations: bool = False, defines: dict[str, int] | None = None) -> None:
    cp = cupy()
    if plain_allocations:
        # Pools hide out-of-bounds accesses from memcheck (the access lands in pooled memory).
        cp.cuda.set_allocator(None)
        cp.cuda.set_pinned_memory_allocator(None)
    family = catalog.load_family(family_name)
    (variant,) = family.apply_defines([family.variant(variant_name)], defines or {})
    spec = families.spec(family.name)
    device_info()
    size = clip(size, variant.max_size)
    inputs = spec.make_inputs(size, secrets.randbits(63))
    out = spec.make_output(size)
    stream = cp.cuda.Stream(non_blocking=True)
    launch = make_launch_factory(family, variant, spec)(inputs, out, size)
    for _ in range(warmup + count):
        launch(stream)
    stream.synchronize()
