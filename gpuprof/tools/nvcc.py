"""nvcc: compile one variant to a cubin and keep ptxas's resource report."""

from __future__ import annotations

import tempfile
from pathlib import Path

from gpuprof.tools import _proc

COMPILE_TIMEOUT_S = 180.0


def nvcc_argv(nvcc: str, source: Path, arch: str, defines: dict[str, int], output: Path,
              include: Path | None = None) -> list[str]:
    # -I the source's folder (or the variant's, for a generated file that includes it): a family's
    # shared header (#include "x.cuh") is found as NVRTC finds it.
    folder = include.resolve() if include else source.resolve().parent
    argv = [nvcc, f"-arch={arch}", "-cubin", "-lineinfo", "-Xptxas", "-v", f"-I{folder}", "-o", str(output)]
    argv += [f"-D{k}={v}" for k, v in defines.items()]
    if source.suffix != ".cu":  # a .cuh (or any other name): nvcc picks the language from the suffix
        argv += ["-x", "cu"]
    return argv + [str(source)]


def compile_report(source: Path, *, arch: str = "sm_90", defines: dict[str, int] | None = None,
                   nvcc: str | None = None, include: Path | None = None,
                   output: Path | None = None) -> _proc.Completed:
    """Compile to a cubin (a throw-away one unless `output` is given); the ptxas report is in the
    result's stderr. `include`: the folder to put on the include path (default: the source's)."""
    tool = _proc.find_tool("nvcc", nvcc)
    if output is not None:
        return _proc.run(nvcc_argv(tool, source, arch, defines or {}, output, include), timeout_s=COMPILE_TIMEOUT_S)
    with tempfile.TemporaryDirectory(prefix="gpuprof-nvcc-") as tmp:
        argv = nvcc_argv(tool, source, arch, defines or {}, Path(tmp) / "out.cubin", include)
        return _proc.run(argv, timeout_s=COMPILE_TIMEOUT_S)


def known_archs(nvcc: str | None = None) -> list[str]:
    """The -arch values this nvcc accepts (sm_XX and compute_XX), from its own lists."""
    tool = _proc.find_tool("nvcc", nvcc)
    names: list[str] = []
    for flag in ("--list-gpu-code", "--list-gpu-arch"):
        done = _proc.run([tool, flag], timeout_s=60)
        names += done.stdout.split() if done.returncode == 0 else []
    return names
