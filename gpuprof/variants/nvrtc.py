"""Compile variants at run time with NVRTC (through CuPy) and keep them in a compile cache."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from gpuprof.errors import EnvironmentProblem, InputError
from gpuprof.files import read_source
from gpuprof.gpu import cupy, device_info
from gpuprof.paths import CACHE_DIR
from gpuprof.tools import _proc, compile_dir, nvcc
from gpuprof.tools._proc import cuda_home
from gpuprof.tools.include_check import MAX_SOURCE_BYTES, check_includes
from gpuprof.variants import cubin, nvrtc_child
from gpuprof.variants.catalog import Variant, kernels_root
from gpuprof.variants.declarations import base_name, instance_name, is_cpp_entry, kernel_declarations, template_defines
from gpuprof.variants.headers import headers_digest

PROGRAM_NAME = "gpuprof-source.cu"  # the name NVRTC gets, never the user's (see line_name)


@dataclass(frozen=True)
class CompiledKernel:
    variant: str
    kernel_name: str
    function: Any  # cupy.RawKernel-like: function(grid, block, args, stream=...)
    options: tuple[str, ...]
    functions: dict[str, Any]  # every entry point: the main kernel and the variant's extra_kernels


def display_path(source: Path) -> str:
    """The file name findings and ncu's source view show: kernels/<family>/<file> for built-ins."""
    try:
        return str(Path("kernels") / source.resolve().relative_to(kernels_root().resolve()))
    except ValueError:
        return str(source.resolve())


def compiler_defines(variant: Variant) -> dict[str, int]:
    """The defines passed to the compiler as -D: all but those a template's name expression takes
    as its arguments (`kernel = "k<BM, BN>"`), which would rewrite the template's parameter names."""
    used = template_defines(variant.kernel or "", variant.defines)
    return {k: v for k, v in variant.defines.items() if k not in used}


def entry_points(variant: Variant) -> dict[str, tuple[str, bool]]:
    """Each kernel the variant launches, by the name its manifest gives: (the name to compile it
    by, whether that is a C++ name). A template's name expression gets the defines it names."""
    assert variant.file is not None and variant.kernel is not None
    declared = kernel_declarations(read_source(variant.file))
    out = {}
    for name in (variant.kernel, *variant.extra_kernels):
        found = declared.get(base_name(name))
        cpp = found is not None and is_cpp_entry(found, name)
        out[name] = (instance_name(name, variant.defines) if cpp else name, cpp)
    return out


def nvrtc_options(variant: Variant, extra: tuple[str, ...] = ()) -> tuple[str, ...]:
    defines = tuple(f"-D{k}={v}" for k, v in sorted(compiler_defines(variant).items()))
    # The variant's own folder is on the include path: a family's shared header (e.g.
    # kernels/scan/scan_propagate.cuh) is #include "..."-d as nvcc finds it beside the file.
    include: tuple[str, ...] = (f"-I{variant.file.resolve().parent}",) if variant.file is not None else ()
    include += tuple(f"-I{folder}" for folder in toolkit_include_dirs())
    # A variant's own target (sm_90a): NVRTC keeps it over the plain -arch CuPy adds.
    target = (f"-arch={variant.arch}",) if variant.arch else ()
    return ("-lineinfo", "--std=c++17", *include, *defines, *target, *extra)


@cache
def toolkit_include_dirs() -> tuple[Path, ...]:
    """The CUDA toolkit's header folders on this machine (cuda_bf16.h, cuda_fp16.h, mma.h): NVRTC searches
    none by default, and a BF16 kernel includes <cuda_bf16.h>. From the toolkit's folder (tools/_proc.py:
    CUDA_HOME, CUDA_PATH or /usr/local/cuda), then the nvcc on PATH's; () when neither has the headers
    (NVRTC then fails on the include and nvcc builds the file)."""
    roots = [cuda_home()]
    nvcc_path = shutil.which("nvcc")
    if nvcc_path:
        roots.append(Path(nvcc_path).resolve().parent.parent)
    found: list[Path] = []
    for root in roots:
        for folder in (root / "include", root / "targets" / "x86_64-linux" / "include"):
            if (folder / "cuda_bf16.h").is_file() and folder not in found:
                found.append(folder)
                break
    return tuple(found[:1])


def runs_here(variant: Variant, device_arch: str) -> str | None:
    """Why a variant compiled for its own target (manifest `arch`) cannot run on this GPU; None when it can.
    sm_90a code runs on compute capability 9.0 only: the letter marks instructions other GPUs lack."""
    if variant.builds_for(device_arch):
        return None
    return (f"{variant.name} is built for {variant.arch} (its manifest's arch) and runs on that architecture only; "
            f"this GPU is {device_arch}")


def nvrtc_source(variant: Variant) -> str:
    """The text NVRTC compiles for a variant: its file, named by #line so findings and source views
    show the real file (not NVRTC's '<hash>.cubin.cu'), after a digest of the headers beside it."""
    assert variant.file is not None
    text = read_source(variant.file, max_bytes=MAX_SOURCE_BYTES)
    check_includes(variant.file, text, [variant.file.resolve().parent], display_path(variant.file))
    return f'// headers {headers_digest(variant.file)}\n#line 1 "{line_name(display_path(variant.file))}"\n{text}'


def line_name(name: str) -> str:
    """The file name as a #line directive's string: a quote, a backslash or a control character
    in it would end the string or the line (and the rest be code), so such a name is the plain
    PROGRAM_NAME there, written back as the user's in messages (user_text)."""
    return name if name.isprintable() and not any(c in name for c in '"\\') else PROGRAM_NAME


def user_text(log: str, variant: Variant) -> str:
    """A compiler log with the plain names gpuprof gave NVRTC written as the variant's file."""
    return log.replace(PROGRAM_NAME, display_path(variant.file)) if variant.file is not None else log


def nvrtc_library() -> Any | None:
    """CuPy's binding of libnvrtc when the library loads here (it needs no GPU or driver), else None
    (pip install nvidia-cuda-nvrtc)."""
    try:
        from cupy_backends.cuda.libs import nvrtc

        nvrtc.getVersion()
    except Exception:  # noqa: BLE001  # loading libnvrtc fails in several ways (import, OS, CUDA): all mean none
        return None
    return nvrtc


def nvrtc_rejects(variant: Variant, arch: str, timeout_s: float = nvcc.COMPILE_TIMEOUT_S) -> str | None:
    """NVRTC's first error for the variant (file:line), compiled as `gpuprof run` compiles it, with
    no GPU; None when it compiles, or when this machine has no NVRTC or arch is not one sm_XX.
    nvcc includes cuda_runtime.h (and math.h) in every file, NVRTC does not: a kernel using
    INFINITY builds with `gpuprof build` and then fails at `gpuprof run` without this check.
    NVRTC runs in a child process (nvrtc_child) ended after timeout_s, as nvcc is: InputError then."""
    nvrtc = nvrtc_library()
    if nvrtc is None or variant.file is None or not re.fullmatch(r"(sm|compute)_\d+[af]?", arch):
        return None
    # A plain program name: NVRTC takes a name such as '-dash.cu' for an option.
    request = {"source": nvrtc_source(variant), "program": PROGRAM_NAME,
               "options": [*nvrtc_options(variant), f"-arch={arch}"],
               "name_expressions": [compiled for compiled, cpp in entry_points(variant).values() if cpp]}
    key = hashlib.sha256(json.dumps([request, nvrtc.getVersion()], sort_keys=True).encode()).hexdigest()
    known = _known_verdict(key)
    if known is not None:
        return known or None
    verdict, keep = _verdict_in_child(request, variant, timeout_s)
    if keep:
        _keep_verdict(key, verdict or "")
    return verdict


_VERDICTS = CACHE_DIR / "nvrtc-verdicts"  # a build of an unchanged variant starts no child


def _known_verdict(key: str) -> str | None:
    """A kept verdict: "" (compiled) or NVRTC's first error; None when none is kept."""
    try:
        return (_VERDICTS / key).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _keep_verdict(key: str, verdict: str) -> None:
    try:
        _VERDICTS.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=_VERDICTS, prefix=".tmp-")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(verdict)
        os.replace(tmp, _VERDICTS / key)
    except OSError:
        pass  # a read-only or full cache: the next build asks NVRTC again


def _verdict_in_child(request: dict, variant: Variant, timeout_s: float) -> tuple[str | None, bool]:
    """NVRTC's first error (None: it compiled) from a child process ended after timeout_s (InputError),
    and whether it is NVRTC's own verdict, to keep (not a child that found no libnvrtc or died)."""
    assert variant.file is not None
    shown = display_path(variant.file)
    with compile_dir.private_folder("gpuprof-nvrtc-") as folder:
        asked = folder / "request.json"
        try:
            asked.write_text(json.dumps(request), encoding="utf-8")
        except OSError as exc:
            raise compile_dir.environment_error(exc, str(folder.parent)) from None
        try:
            done = _proc.run([sys.executable, "-m", "gpuprof.variants.nvrtc_child", str(asked)], timeout_s=timeout_s,
                             cwd=folder, env=_proc.python_child_env(), isolated=True)
        except EnvironmentProblem as exc:
            if "did not finish" in exc.message:
                raise InputError(f"{shown}: NVRTC did not finish within {timeout_s:g} s (a source that expands "
                                 "without end, or raise --compile-timeout)") from None
            raise
    if done.returncode == nvrtc_child.COMPILED:
        return None, True
    if done.returncode == nvrtc_child.REJECTED:
        return _first_error(user_text(done.stdout, variant)), True
    if done.returncode == nvrtc_child.UNAVAILABLE:
        return None, False
    return f"NVRTC ended without a verdict on {shown} (exit {done.returncode}: {done.stderr.strip()[-200:]})", False


def compile_variant(variant: Variant) -> CompiledKernel:
    """NVRTC-compile one variant; a compile error becomes an InputError with the compiler's text."""
    if not variant.is_cuda or variant.file is None or variant.kernel is None:
        kind = "vendor" if variant.vendor else variant.language
        raise ValueError(f"{variant.name} is a {kind} variant; it has no CUDA source")
    _point_cupy_cache()
    cp = cupy()
    wrong_target = runs_here(variant, device_info().arch)  # also: 'no GPU' before NVRTC complains
    if wrong_target:
        raise EnvironmentProblem(wrong_target)
    source = nvrtc_source(variant)
    options = nvrtc_options(variant)
    entries = entry_points(variant)
    cpp_names = [compiled for compiled, cpp in entries.values() if cpp]
    try:
        with one_compiler_at_a_time(source, options + tuple(cpp_names)):
            module = cp.RawModule(code=source, options=options, backend="nvrtc", name_expressions=cpp_names or None)
            functions = {name: module.get_function(compiled) for name, (compiled, _) in entries.items()}
    except cp.cuda.compiler.CompileException as exc:
        error = _first_error(user_text(str(exc), variant))
        if not needs_host_headers(error):
            raise InputError(f"{display_path(variant.file)} does not compile: {error}") from None
        functions = _from_cubin(variant, entries, error)
        options = ("nvcc", *options)
    except cp.cuda.driver.CUDADriverError as exc:
        kernels = [variant.kernel, *variant.extra_kernels]
        raise InputError(
            f"{display_path(variant.file)}: a kernel of {kernels} not found or not loadable ({exc}); "
            "is it declared extern \"C\" __global__?"
        ) from None
    return CompiledKernel(variant.name, variant.kernel, functions[variant.kernel], options, functions)


def needs_host_headers(nvrtc_error: str) -> bool:
    """NVRTC stopped at a header it does not have (<cstdio>, <cassert>, <cuda_runtime.h>, ...): the
    file is for nvcc, which compiles it (cubin.py)."""
    return "cannot open source file" in nvrtc_error


def _from_cubin(variant: Variant, entries: dict[str, tuple[str, bool]], nvrtc_error: str) -> dict[str, Any]:
    """The variant's kernels from an nvcc cubin, for a file NVRTC cannot compile."""
    assert variant.file is not None
    if not cubin.nvcc_available():
        raise EnvironmentProblem(f"{display_path(variant.file)} does not compile with NVRTC ({nvrtc_error}), and "
                                 "nvcc, which compiles files with host headers, is not on PATH")
    wanted = dict(entries.values())
    compiled = cubin.cached_cubin(variant.file, wanted, variant.arch or device_info().arch, compiler_defines(variant))
    if compiled.cubin is None:
        raise InputError(f"{display_path(variant.file)} does not compile with nvcc: {_first_error(compiled.stderr)}")
    module = cupy().RawModule(path=str(compiled.cubin))
    functions = {}
    for name, (compiled_name, _) in entries.items():
        if compiled_name not in compiled.symbols:
            raise cubin.missing_entry(variant.file, compiled_name)
        functions[name] = module.get_function(compiled.symbols[compiled_name])
    return functions


@contextmanager
def one_compiler_at_a_time(source: str, options: tuple[str, ...]) -> Iterator[None]:
    """Processes compiling the same source with the same options take turns: the first compiles,
    the others then find its result in CuPy's on-disk cache. `gpuprof sanitize` starts the same
    family under four tools at once, which on a fresh cache compiled every kernel four times over
    on CPUs the sanitizers needed. Without fcntl (Windows) or a writable cache, no lock."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    key = hashlib.sha256("\0".join((source, *options)).encode()).hexdigest()[:24]
    try:
        folder = CACHE_DIR / "compile-locks"
        folder.mkdir(parents=True, exist_ok=True)
        handle = open(folder / f"{key}.lock", "a+b")  # noqa: SIM115 - held across the yield
    except OSError:
        yield
        return
    with handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


_COMPILER_PLACE = re.compile(r"^(.+?)\((\d+)\): ")  # NVRTC and nvcc write "file(line): error: ..."


def as_file_line(line: str) -> str:
    """A compiler message with its place written file:line (what editors and terminals link)."""
    return _COMPILER_PLACE.sub(r"\1:\2: ", line.strip())


def _first_error(log: str) -> str:
    for line in log.splitlines():
        if "error" in line:
            return as_file_line(line)
    return log.strip().splitlines()[0] if log.strip() else "unknown compiler error"


def _point_cupy_cache() -> None:
    os.environ.setdefault("CUPY_CACHE_DIR", str(CACHE_DIR / "cupy"))
