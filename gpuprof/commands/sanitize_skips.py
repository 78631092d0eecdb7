"""Which (variant, tool) pairs a course-wide `gpuprof sanitize` leaves out, and why: racecheck where
nvcc/ptxas says the kernels use no shared memory (the racecheck triage, its verdicts cached by
sanitize_triage_cache), racecheck and synccheck of vendor rows, and every tool on a row that
captures a CUDA graph."""

from __future__ import annotations

from collections.abc import Collection
from concurrent.futures import ThreadPoolExecutor

from gpuprof.commands import sanitize_triage_cache as triage_cache
from gpuprof.errors import EnvironmentProblem, InputError, ParseError
from gpuprof.files import read_source
from gpuprof.parsers.nvcc_resources import parse_ptxas
from gpuprof.tools import _proc, nvcc
from gpuprof.variants.catalog import Family, Variant

TRIAGE_ARCH = "sm_90"  # static shared memory is declared in the source; any recent arch reports it


def uses_shared_memory(variant: Variant, arch: str = TRIAGE_ARCH) -> bool | None:
    """Whether any of the variant's kernels uses shared memory: ptxas's static 'smem', or an
    `extern __shared__` (dynamic) array in the source. None where it cannot be told (not CUDA, or
    it does not compile here)."""
    if not variant.is_cuda or variant.file is None:
        return None
    try:
        source = read_source(variant.file)
    except InputError:
        return None
    if "extern __shared__" in " ".join(source.split()):
        return True
    kernels = (variant.kernel, *variant.extra_kernels)
    cache_key = triage_cache.key(variant.file, variant.defines, kernels, arch, _proc.find_tool("nvcc", None))
    cached = triage_cache.load(cache_key) if cache_key is not None else None
    if cached is not None:
        return cached
    try:
        done = nvcc.compile_report(variant.file, arch=arch, defines=variant.defines)
    except InputError:  # a special file among its includes, a compile past the limit: cannot be told
        return None
    if done.returncode != 0:
        return None
    try:
        usages = {u.kernel: u for u in parse_ptxas(done.stderr, str(variant.file))}
    except ParseError:
        return None
    found = [usages.get(k) if k is not None else None for k in kernels]
    mine = [u for u in found if u is not None]
    if len(mine) != len(found):
        return None
    uses = any(u.shared_bytes > 0 for u in mine)
    if cache_key is not None:
        triage_cache.save(cache_key, uses)
    return uses


SHARED_MEMORY_SKIP_REASON = "no shared memory (ptxas)"
VENDOR_SKIP_TOOLS = ("racecheck", "synccheck")
GRAPH_SKIP_REASON = ("a CUDA graph capture (options.captures_cuda_graph): capturing allocates through PyTorch's "
                     "caching allocator, which sanitizer runs turn off")
VENDOR_SKIP_REASON = "vendor library kernels (not the course's code; memcheck and initcheck check the calls into them)"


def declared_skips(families: list[tuple[Family, list[Variant]]], tools: list[str],
                   no_shared_memory: Collection[str] = frozenset()) -> dict[tuple[str, str], str]:
    """(label, tool) pairs not run, with the reason: racecheck of the labels in no_shared_memory
    (racecheck_skips: ptxas says their kernels use none, so no race can be found); racecheck and
    synccheck of a vendor row (cuBLAS, cuDNN, CUB, PyTorch) look only at the library's own
    shared-memory protocol, which the course cannot change (memcheck and initcheck still catch a
    wrong size or pointer gpuprof passes); and a row declaring options.captures_cuda_graph cannot run
    with PyTorch's caching allocator off."""
    skips = {(label, "racecheck"): SHARED_MEMORY_SKIP_REASON for label in no_shared_memory if "racecheck" in tools}
    skips |= {(f"{fam.name}/{v.name}", tool): VENDOR_SKIP_REASON
             for fam, chosen in families for v in chosen if v.vendor for tool in tools if tool in VENDOR_SKIP_TOOLS}
    # With PYTORCH_NO_CUDA_MEMORY_CACHING=1 a capture's cudaMalloc fails (cudaErrorStreamCaptureUnsupported,
    # seen on the H100 for mnist/cuda_graph): such a row cannot run under any tool.
    skips.update({(f"{fam.name}/{v.name}", tool): GRAPH_SKIP_REASON for fam, chosen in families for v in chosen
                  if v.options.get("captures_cuda_graph") for tool in tools})
    return skips


def racecheck_skips(families: list[tuple[Family, list[Variant]]], jobs: int) -> tuple[set[str], list[str]]:
    """Labels ('family/variant') racecheck can skip, and notes on what could not be triaged."""
    cuda = [(fam, v) for fam, chosen in families for v in chosen if v.is_cuda]
    if not cuda:
        return set(), []
    try:
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            verdicts = list(pool.map(lambda pair: uses_shared_memory(pair[1]), cuda))
    except EnvironmentProblem as exc:  # no nvcc here
        return set(), [f"racecheck runs on every variant: cannot tell which use shared memory ({exc.message})"]
    return {f"{fam.name}/{v.name}" for (fam, v), uses in zip(cuda, verdicts) if uses is False}, []
