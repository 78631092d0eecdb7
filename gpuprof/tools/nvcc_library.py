"""nvcc: build a host-side CUDA source (one that calls a library such as CUB from the host) into a
shared library once, cached by the source's bytes, the target and nvcc's version."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from gpuprof.errors import EnvironmentProblem
from gpuprof.paths import CACHE_DIR
from gpuprof.tools import _proc, compile_dir
from gpuprof.tools.nvcc import arch_flags

BUILD_TIMEOUT_S = 600.0  # CUB and CUTLASS 2's GEMMs take tens of seconds to compile, CUTLASS 3's Hopper ones minutes


def shared_library(source: Path, arch: str, nvcc: str | None = None, include_dirs: tuple[Path, ...] = (),
                   headers_version: str = "", flags: tuple[str, ...] = ()) -> Path:
    """The .so built from `source` for `arch` (e.g. sm_90, or sm_90a: its own target): built on first
    use, then reused. include_dirs: header folders beyond the toolkit's (CUTLASS's), their version in
    headers_version; flags: more nvcc options (-D defines, CUTLASS 3's --expt-relaxed-constexpr); all
    part of the cache key, so new headers or options build a new library."""
    tool = _proc.find_tool("nvcc", nvcc, hint="the vendor rows are built with nvcc: install the CUDA toolkit")
    version = _proc.run([tool, "--version"], timeout_s=60, isolated=True).stdout
    headers = "\n".join([*map(str, include_dirs), headers_version, *flags])
    key = hashlib.sha256(source.read_bytes() + arch.encode() + version.encode() + headers.encode()).hexdigest()[:16]
    target = CACHE_DIR / "libs" / f"{source.stem}-{arch}-{key}.so"

    def build(partial: Path) -> None:
        with compile_dir.private_folder() as tmp:  # nvcc's shell reads the names it gets: only plain ones
            staged = compile_dir.stage(tmp, source, [source.parent, *include_dirs], shown=source.name)
            argv = [tool, "-O3", *arch_flags(arch), *flags, "-shared", "-Xcompiler", "-fPIC",
                    *(f"-I{link}" for link in staged.includes), "-o", str(tmp / "out.so"), str(staged.source)]
            done = _proc.run(argv, timeout_s=BUILD_TIMEOUT_S, cwd=tmp, env=compile_dir.compiler_env(tmp),
                             isolated=True)
            if done.returncode != 0 or not (tmp / "out.so").is_file():
                last = (staged.user_text(done.stderr).strip().splitlines() or ["no output"])[-1]
                raise EnvironmentProblem(f"nvcc could not build {source.name} for {arch}: {last}")
            shutil.copyfile(tmp / "out.so", partial)

    return compile_dir.cached_build(target, build)
