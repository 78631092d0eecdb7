"""nvcc: compile one variant to a cubin and keep ptxas's resource report."""

from __future__ import annotations

import tempfile
from pathlib import Path

from gpuprof.tools import _proc

COMPILE_TIMEOUT_S = 180.0


def nvcc_argv(nvcc: str, source: Path, arch: str, defines: dict[str, int], output: Path) -> list[str]:
    # -I the source's folder: a family's shared header (#include "x.cuh") is found as NVRTC finds it.
    argv = [nvcc, f"-arch={arch}", "-cubin", "-lineinfo", "-Xptxas", "-v", f"-I{source.resolve().parent}", "-o", str(output)]
    argv += [f"-D{k}={v}" for k, v in defines.items()]
    return argv + [str(source)]


def compile_report(source: Path, *, arch: str = "sm_90", defines: dict[str, int] | None = None,
                   nvcc: str | None = None) -> _proc.Completed:
    """Compile to a throw-away cubin; the ptxas report is in the result's stderr."""
    tool = _proc.find_tool("nvcc", nvcc)
    with tempfile.TemporaryDirectory(prefix="gpuprof-nvcc-") as tmp:
        argv = nvcc_argv(tool, source, arch, defines or {}, Path(tmp) / "out.cubin")
        return _proc.run(argv, timeout_s=COMPILE_TIMEOUT_S)
