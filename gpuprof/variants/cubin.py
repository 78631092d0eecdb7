"""nvcc to a cubin, for the kernels NVRTC cannot compile: files that include host headers as the
tutorials' do (<cstdio>, <cassert>, <cuda_runtime.h>, <cublas_v2.h>). A generated file includes the
variant's file and takes the address of each C++ entry point (a template instance by its name
expression), so nvcc instantiates and emits it; ptxas names the entries by their mangled names,
which are demangled (libstdc++'s __cxa_demangle) and matched to the name expressions. `gpuprof
build` uses it without a GPU; `gpuprof run` loads the cubin (cached by content) with CuPy."""

from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import os
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from gpuprof.errors import InputError
from gpuprof.files import read_source
from gpuprof.parsers.nvcc_resources import ResourceUsage, parse_ptxas
from gpuprof.paths import CACHE_DIR
from gpuprof.tools import _proc, nvcc
from gpuprof.variants.declarations import base_name, same_instance
from gpuprof.variants.headers import headers_digest


@dataclass(frozen=True)
class Compiled:
    """One nvcc compile of a file's entry points: the cubin (None if it failed), ptxas's report
    per entry by the name asked for, and the compiler's output."""

    cubin: Path | None
    symbols: dict[str, str]  # name asked for (extern "C" name or C++ name expression) -> symbol in the cubin
    usages: dict[str, ResourceUsage]
    returncode: int
    stderr: str


_UNSAFE_EXPRESSION = re.compile(r"[^\w<>,:()*&\[\] +\-.]")  # what a C++ name expression holds


def wrapper_text(included: str, cpp_entries: list[str]) -> str:
    """The generated translation unit: the variant's file (by the private name `included`), and
    each C++ entry point's address taken. A name expression holding anything but a C++ name's
    characters (a quote, a semicolon, a newline) is refused: it would be code in this file."""
    for name in cpp_entries:
        if _UNSAFE_EXPRESSION.search(name):
            raise InputError(f"kernel name {name!r}: a C++ name or template instance holds only letters, digits, "
                             "_ < > , : ( ) * & [ ] + - . and spaces")
    lines = [f'#include "{included}"']
    lines += [f"static void *gpuprof_entry_{i} __attribute__((used)) = (void *)&{name};"
              for i, name in enumerate(cpp_entries)]
    return "\n".join(lines) + "\n"


def compile_entries(file: Path, entries: dict[str, bool], arch: str, defines: dict[str, int],
                    output: Path | None = None, timeout_s: float = nvcc.COMPILE_TIMEOUT_S) -> Compiled:
    """nvcc -cubin of `file` with `entries` (name -> whether it is reached by its C++ name)."""
    cpp = [name for name, is_cpp in entries.items() if is_cpp]
    wrapper_text("", cpp)  # refuse an unsafe name expression before nvcc is looked for
    done = nvcc.compile_report(file, arch=arch, defines=defines, output=output, timeout_s=timeout_s,
                               wrapper=lambda included: wrapper_text(included, cpp))
    if done.returncode != 0:
        return Compiled(None, {}, {}, done.returncode, done.stderr)
    return _from_report(file, entries, output, done.stderr)


def _symbol(name: str, is_cpp: bool, symbols: list[str]) -> str:
    """The cubin symbol of an entry point: its own name (extern "C"), or the mangled symbol whose
    demangled form is the name expression's instance (one candidate of that name is enough: the
    generated file instantiated exactly the one asked for)."""
    if not is_cpp:
        return name
    demangled = {s: demangle(s) or s for s in symbols}
    exact = [s for s, d in demangled.items() if same_instance(d, name)]
    if exact:
        return exact[0]
    same_name = [s for s, d in demangled.items() if base_name(d.removeprefix("void ").split("(")[0]) == base_name(name)]
    return same_name[0] if len(same_name) == 1 else name


@cache
def _demangler() -> ctypes._CFuncPtr | None:  # type: ignore[name-defined]
    path = ctypes.util.find_library("stdc++") or "libstdc++.so.6"
    try:
        function = ctypes.CDLL(path).__cxa_demangle
    except (OSError, AttributeError):
        return None
    function.restype = ctypes.c_void_p
    function.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_size_t),
                         ctypes.POINTER(ctypes.c_int)]
    return function


def demangle(symbol: str) -> str | None:
    """'_Z11sgemm_naiveiiifPKfS0_fPf' -> 'sgemm_naive(int, int, int, float, float const*, ...)';
    None for a name that is not mangled (extern "C") or where libstdc++ is missing."""
    function = _demangler()
    if function is None or not symbol.startswith("_Z"):
        return None
    status = ctypes.c_int()
    pointer = function(symbol.encode(), None, None, ctypes.byref(status))
    if not pointer or status.value != 0:
        return None
    try:
        return ctypes.string_at(pointer).decode(errors="replace")
    finally:
        ctypes.CDLL(None).free(ctypes.c_void_p(pointer))


def cached_cubin(file: Path, entries: dict[str, bool], arch: str, defines: dict[str, int]) -> Compiled:
    """compile_entries into the cache, keyed on the file, the headers beside it, the entries, the
    arch and the defines: a second run (or the child a profiler starts) loads it without nvcc."""
    digest = hashlib.sha256()
    for part in (read_source(file), headers_digest(file),
                 repr(sorted(entries.items())), arch, repr(sorted(defines.items()))):
        digest.update(part.encode() + b"\0")
    folder = CACHE_DIR / "cubin"
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{file.stem}-{digest.hexdigest()[:20]}.cubin"
    report = target.with_suffix(".ptxas")
    if target.is_file() and report.is_file():
        return _from_report(file, entries, target, report.read_text())
    partial = target.with_suffix(f".{os.getpid()}.tmp")
    compiled = compile_entries(file, entries, arch, defines, output=partial)
    if compiled.cubin is None:
        return compiled
    report.write_text(compiled.stderr, encoding="utf-8")
    os.replace(partial, target)  # atomic: a concurrent child sees the whole cubin or none
    return _from_report(file, entries, target, compiled.stderr)


def _from_report(file: Path, entries: dict[str, bool], cubin: Path | None, stderr: str) -> Compiled:
    usages = parse_ptxas(stderr, str(file))
    symbols = {name: _symbol(name, is_cpp, [u.kernel for u in usages]) for name, is_cpp in entries.items()}
    by_symbol = {u.kernel: u for u in usages}
    return Compiled(cubin, {n: s for n, s in symbols.items() if s in by_symbol},
                    {n: by_symbol[s] for n, s in symbols.items() if s in by_symbol}, 0, stderr)


def nvcc_available() -> bool:
    try:
        _proc.find_tool("nvcc")
    except Exception:  # noqa: BLE001  # EnvironmentProblem: not installed, which only means "no fallback"
        return False
    return True


def missing_entry(file: Path, name: str) -> InputError:
    return InputError(f"{file}: nvcc compiled it, but no entry point matches '{name}' "
                      "(a template needs its arguments: name<...>)")
