"""CUPTI's activity API as a timeline source where nsys cannot make a report: find CUPTI (its headers
and libcupti, from the CUDA toolkit or a pip wheel), build gpuprof's injection library
(cupti_inject/gpuprof_cupti.cpp) once per source and CUPTI, and the environment that loads it into
any CUDA program (CUDA_INJECTION64_PATH; NVTX_INJECTION64_PATH for the NVTX ranges)."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from gpuprof.errors import EnvironmentProblem
from gpuprof.paths import CACHE_DIR
from gpuprof.tools import _proc, compile_dir

SOURCE = Path(__file__).resolve().parent / "cupti_inject" / "gpuprof_cupti.cpp"
OUT_ENV = "GPUPROF_CUPTI_DIR"  # the folder the library writes activity-<pid>.jsonl into
BUILD_TIMEOUT_S = 120.0
_VERSION = re.compile(r"#define\s+CUPTI_API_VERSION\s+(\d+)")


@dataclass(frozen=True)
class CuptiInstall:
    """One CUPTI: the folder holding cupti.h, the folders holding the headers it includes (cuda.h),
    and the libcupti.so.N file the injection library is linked against and NVTX is pointed at."""

    include: Path
    library: Path
    api_version: int  # CUPTI_API_VERSION of the headers, e.g. 130001
    extra_includes: tuple[Path, ...] = ()

    @property
    def major(self) -> int:
        return self.api_version // 10000


def _site_dirs() -> list[Path]:
    return [Path(p) for p in sys.path if p and Path(p).is_dir()]


def toolkit_roots(cuda_home: Path | None = None) -> list[Path]:
    """Toolkit folders as users have them: $CUDA_HOME (or /usr/local/cuda), and the one holding nvcc."""
    roots = [cuda_home or _proc.cuda_home()]
    nvcc = shutil.which("nvcc")
    if nvcc:
        roots.append(Path(os.path.realpath(nvcc)).parent.parent)
    return list(dict.fromkeys(roots))


def _header_dirs(root: Path) -> list[Path]:
    return [root / "extras" / "CUPTI" / "include", root / "include", *sorted(root.glob("targets/*/include"))]


def _library_dirs(root: Path) -> list[Path]:
    return [root / "extras" / "CUPTI" / "lib64", root / "lib64", root / "lib", *sorted(root.glob("targets/*/lib"))]


def _wheel_dirs(sites: Iterable[Path], kind: str) -> list[Path]:
    """nvidia-cuda-cupti's folders (nvidia/cuda_cupti/ for CUDA 12, nvidia/cu13/ for CUDA 13), the copy
    PyTorch's CUDA wheels install."""
    return [d for site in sites for d in sorted((site / "nvidia").glob(f"*/{kind}"))]


def header_version(include: Path) -> int | None:
    for name in ("cupti_version.h", "cupti.h"):
        try:
            found = _VERSION.search((include / name).read_text(errors="replace"))
        except OSError:
            continue
        if found:
            return int(found.group(1))
    return None


def _library_in(folder: Path, major: int) -> Path | None:
    """libcupti.so.<major> (the name the loader looks for), else libcupti.so if it is that version."""
    named = folder / f"libcupti.so.{major}"
    if named.is_file():
        return named
    plain = folder / "libcupti.so"
    if plain.is_file() and Path(os.path.realpath(plain)).name.startswith(f"libcupti.so.{major}"):
        return plain
    return None


def find_cupti(cuda_home: Path | None = None, sites: Iterable[Path] | None = None) -> CuptiInstall:
    """The first CUPTI whose headers and library agree on the major version: the toolkit's own (in
    extras/CUPTI, include/ or targets/*/), then a pip wheel's. EnvironmentProblem naming where it looked."""
    roots = toolkit_roots(cuda_home)
    site_dirs = list(sites) if sites is not None else _site_dirs()
    headers = [d for r in roots for d in _header_dirs(r)] + _wheel_dirs(site_dirs, "include")
    libraries = [d for r in roots for d in _library_dirs(r)] + _wheel_dirs(site_dirs, "lib")
    with_cuda_h = [d for d in headers if (d / "cuda.h").is_file()]
    for include in (d for d in headers if (d / "cupti.h").is_file()):
        version = header_version(include)
        if version is None:
            continue
        for folder in libraries:
            library = _library_in(folder, version // 10000)
            if library is not None:
                extra = tuple(d for d in with_cuda_h if d != include)
                return CuptiInstall(include, library, version, extra)
    looked = ", ".join(str(r) for r in roots) + " and the nvidia-cuda-cupti wheel"
    raise EnvironmentProblem(f"CUPTI was not found (cupti.h with a libcupti.so of the same version, in {looked}); "
                             "install the CUDA toolkit's CUPTI or pip install nvidia-cuda-cupti, or set CUDA_HOME")


def host_compiler() -> str:
    for name in ("g++", "c++", "clang++"):
        found = shutil.which(name)
        if found:
            return found
    raise EnvironmentProblem("no C++ compiler (g++) on PATH to build gpuprof's CUPTI injection library; "
                             "install g++ (nvcc needs it too)")


def build_argv(compiler: str, install: CuptiInstall, source: Path, output: Path) -> list[str]:
    """g++ on the host-only source, linked against the found libcupti and finding it there at run time
    (rpath), so the program loads the CUPTI the library was built for, whatever LD_LIBRARY_PATH says."""
    includes = [f"-I{d}" for d in (install.include, *install.extra_includes)]
    return [compiler, "-O2", "-std=c++17", "-shared", "-fPIC", *includes, str(source), str(install.library),
            f"-Wl,-rpath,{install.library.parent}", "-ldl", "-o", str(output)]


def injection_library(install: CuptiInstall | None = None, cache_dir: Path | None = None) -> Path:
    """The injection library for this CUPTI: built on first use into the per-user cache (keyed by the
    source, the CUPTI headers' version and folder, the library and the compiler), then reused; written
    under a temporary name and renamed, so a program never loads a half-written file."""
    install = install or find_cupti()
    if "," in str(install.library.parent):  # the linker reads -rpath's value as a list
        raise EnvironmentProblem(f"CUPTI's folder {install.library.parent} holds a comma, which the linker's "
                                 "-rpath cannot take; set CUDA_HOME to a copy without one")
    compiler = host_compiler()
    version = _proc.run([compiler, "--version"], timeout_s=60, isolated=True).stdout
    source = SOURCE.read_bytes()
    parts = [source, str(install.api_version).encode(), str(install.include).encode(),
             os.path.realpath(install.library).encode(), version.encode()]
    key = hashlib.sha256(b"\0".join(parts)).hexdigest()[:16]
    target = (cache_dir or CACHE_DIR / "cupti") / f"gpuprof_cupti-{install.major}-{key}.so"

    def build(partial: Path) -> None:
        done = _proc.run(build_argv(compiler, install, SOURCE, partial), timeout_s=BUILD_TIMEOUT_S, isolated=True)
        if done.returncode != 0 or not partial.is_file():
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise EnvironmentProblem(f"{Path(compiler).name} could not build gpuprof's CUPTI injection library "
                                     f"against {install.include}: {last}")

    return compile_dir.cached_build(target, build)

def injection_env(library: Path, out_dir: Path,
                  base: dict[str, str] | None = None) -> dict[str, str]:
    """The program's environment: the CUDA driver loads the library at cuInit (CUDA_INJECTION64_PATH),
    NVTX at the first range, which may come first (NVTX_INJECTION64_PATH; the library hands NVTX on to
    its libcupti), and the records go to out_dir."""
    return {**(base if base is not None else os.environ), "CUDA_INJECTION64_PATH": str(library),
            "NVTX_INJECTION64_PATH": str(library), OUT_ENV: str(out_dir.resolve())}
