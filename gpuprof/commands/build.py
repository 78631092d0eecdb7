"""`gpuprof build`'s core: compile each variant with nvcc and read ptxas's resource report."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from gpuprof.errors import GpuprofError, UsageError
from gpuprof.files import read_source
from gpuprof.parsers.nvcc_resources import ResourceUsage, parse_ptxas
from gpuprof.tools import nvcc
from gpuprof.tools.include_check import MAX_SOURCE_BYTES
from gpuprof.variants import cubin
from gpuprof.variants.catalog import Family, Variant
from gpuprof.variants.declarations import base_name, is_cpp_entry, kernel_declarations
from gpuprof.variants.nvrtc import (
    as_file_line,
    compiler_defines,
    display_path,
    entry_points,
    needs_host_headers,
    nvrtc_rejects,
)


@dataclass(frozen=True)
class BuildResult:
    family: str
    variant: str
    defines: dict[str, int]
    usage: ResourceUsage | None
    error: str | None  # the compiler's first error line, with file:line
    threads_per_block: int | None = None  # the manifest's block; None: a file built alone (--add, no family)
    dynamic_smem_bytes: int = 0  # the manifest's dynamic_smem, on top of ptxas's static shared memory


def build_variant(family: Family, variant: Variant, arch: str,
                  timeout_s: float = nvcc.COMPILE_TIMEOUT_S) -> BuildResult:
    if not variant.is_cuda or variant.file is None or variant.kernel is None:
        kind = (("a Triton" if variant.is_triton else "a Python") + " variant (it compiles at its first launch)"
                if variant.is_python else "a vendor variant")
        raise ValueError(f"{variant.name} is {kind}; nothing for nvcc to compile")
    launch = _launch(variant)
    if not variant.builds_for(arch):
        return BuildResult(family.name, variant.name, variant.defines, None,
                           f"built for {variant.arch} only (its manifest's arch), not for --arch {arch}", *launch)
    arch = variant.arch or arch  # its own target (sm_90a) when --arch names that GPU
    entry = entry_points(variant)[variant.kernel]
    if entry[1]:  # a C++ kernel or template instance: nvcc emits it through a generated file
        compiled = cubin.compile_entries(variant.file, {entry[0]: True}, arch, compiler_defines(variant),
                                         timeout_s=timeout_s)
        if compiled.returncode != 0:
            return BuildResult(family.name, variant.name, variant.defines, None, _first_error(compiled.stderr, variant),
                               *launch)
        usage = compiled.usages.get(entry[0])
    else:
        done = nvcc.compile_report(variant.file, arch=arch, defines=compiler_defines(variant), timeout_s=timeout_s)
        if done.returncode != 0:
            return BuildResult(family.name, variant.name, variant.defines, None, _first_error(done.stderr, variant),
                               *launch)
        usage = {u.kernel: u for u in parse_ptxas(done.stderr, display_path(variant.file))}.get(variant.kernel)
    error = None if usage else (
        f"entry point '{entry[0]}' not found in {display_path(variant.file)} (extern \"C\"?)")
    rejected = None if error else nvrtc_rejects(variant, arch, timeout_s)
    if rejected and needs_host_headers(rejected):
        rejected = None  # `gpuprof run` compiles such a file with nvcc, as here
    if rejected:
        error = f"nvcc builds it, but NVRTC (what `gpuprof run` compiles with) does not: {rejected}"
    return BuildResult(family.name, variant.name, variant.defines, usage, error, *launch)


def _launch(variant: Variant) -> tuple[int | None, int]:
    """Threads per block and dynamic shared memory bytes from the manifest (None, 0 where its
    expressions do not evaluate: the build still reports ptxas's figures)."""
    try:
        x, y, z = variant.block_dims()
        return x * y * z, variant.dynamic_smem_bytes()
    except (GpuprofError, ValueError, KeyError, ZeroDivisionError):
        return None, 0


def check_arch(arch: str) -> None:
    """A bad --arch is one line naming the valid choices, before nvcc fails once per kernel."""
    known = nvcc.known_archs()
    base = arch[:-1] if arch[-1:] in ("a", "f") else arch
    if known and arch not in known and base not in known and arch not in ("native", "all", "all-major"):
        sms = [k for k in known if k.startswith("sm_")]
        raise UsageError(f"unknown --arch '{arch}'; this nvcc knows: {', '.join(sms or known)}")


def build_family(family: Family, variants: list[Variant], arch: str, jobs: int = 4,
                 on_done: Callable[[int], None] | None = None,
                 timeout_s: float = nvcc.COMPILE_TIMEOUT_S) -> list[BuildResult]:
    """nvcc runs in parallel threads (each one a subprocess), results in catalogue order. Only CUDA
    variants: vendor calls have no source, Triton variants are compiled by Triton at launch.
    on_done(n) is told how many of these have finished."""
    compiled = [v for v in variants if v.is_cuda]
    finished = 0

    def one(v: Variant) -> BuildResult:
        nonlocal finished
        result = build_variant(family, v, arch, timeout_s)
        finished += 1
        if on_done is not None:
            on_done(finished)
        return result

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(one, compiled))


def build_file(path: Path, arch: str, defines: dict[str, int] | None = None,
               function: str | None = None, timeout_s: float = nvcc.COMPILE_TIMEOUT_S) -> list[BuildResult]:
    """A student's .cu file with no family to check it against (`gpuprof build --add mine.cu`):
    one result per extern "C" kernel in it (a template's instances are reached through them), or
    per entry ptxas compiled when the file declares none extern "C". With a function
    (`--add sgemm.cuh:'sgemmWarptiling<128,...>'`), that kernel or template instance alone."""
    source = read_source(path, "--add", max_bytes=MAX_SOURCE_BYTES)
    defines = defines or {}
    if function is not None:
        return [_build_one(path, source, function, arch, defines, timeout_s)]
    done = nvcc.compile_report(path, arch=arch, defines=defines, timeout_s=timeout_s)
    if done.returncode != 0:
        return [BuildResult("-", path.stem, defines, None, _first_error(done.stderr, path))]
    usages = parse_ptxas(done.stderr, str(path))
    declared = kernel_declarations(source)
    shown = [u for u in usages if u.kernel in declared] or usages
    if not shown:
        return [BuildResult("-", path.stem, defines, None, f"{path}: nvcc compiled no __global__ kernel")]
    return [BuildResult("-", f"{path.stem}:{u.kernel}", defines, u, None) for u in shown]


def _build_one(path: Path, source: str, function: str, arch: str, defines: dict[str, int],
               timeout_s: float) -> BuildResult:
    """One named kernel of a file (a C++ name, a template instance or an extern "C" name)."""
    declared = kernel_declarations(source).get(base_name(function))
    if declared is None:
        raise UsageError(f"{path} has no __global__ kernel '{base_name(function)}'; "
                         f"found: {', '.join(kernel_declarations(source)) or 'none'}")
    if declared.template_params is not None and "<" not in function:
        raise UsageError(f"{path}:{declared.line}: {function} is a template; name an instance, e.g. "
                         f"--add {path.name}:'{function}<...>'")
    compiled = cubin.compile_entries(path, {function: is_cpp_entry(declared, function)}, arch, defines,
                                     timeout_s=timeout_s)
    label = f"{path.stem}:{function}"
    if compiled.returncode != 0:
        return BuildResult("-", label, defines, None, _first_error(compiled.stderr, path))
    usage = compiled.usages.get(function)
    return BuildResult("-", label, defines, usage, None if usage else str(cubin.missing_entry(path, function)))


def _first_error(stderr: str, variant: Variant | Path) -> str:
    file = variant if isinstance(variant, Path) else variant.file
    shown = display_path(file) if file else variant.name
    for line in stderr.splitlines():
        if "error" in line:
            return as_file_line(line.replace(str(file), shown))
    return (stderr.strip().splitlines() or ["nvcc failed without a message"])[-1]
