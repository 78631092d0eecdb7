"""nvcc: compile one variant to a cubin and keep ptxas's resource report.

nvcc runs its steps through a shell with the names it is given, so it is given only names gpuprof
chose (compile_dir.py): a private copy of the source, private links to its include folders, an
output inside that folder. Every compile has a time limit, and ends whole when it runs past it."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path

from gpuprof.errors import EnvironmentProblem, InputError, UsageError
from gpuprof.tools import _proc, compile_dir

COMPILE_TIMEOUT_S = 300.0  # `gpuprof build --compile-timeout`; CUTLASS-heavy files take tens of seconds

# nvcc's words for a machine that cannot compile anything (exit 3), not for a bad source (exit 2).
_TMP = re.compile(r"(?:could not open|cannot create|can't create|Permission denied).*tmpxft", re.IGNORECASE)
_HOST_COMPILER = re.compile(r"^(?:sh: (?:\d+: )?)?(?:gcc|g\+\+|c\+\+|cicc|ptxas|fatbinary|nvlink|cudafe\+\+)"
                            r"(?:: not found|: No such file or directory)\s*$"
                            r"|Failed to preprocess host compiler properties|cannot find host compiler"
                            r"|Could not set up the environment", re.IGNORECASE | re.MULTILINE)
_ENVIRONMENT = (
    (re.compile(r"No space left on device|Disk quota exceeded"), "no space left in the temporary folder (TMPDIR)"),
    (re.compile(r"Read-only file system"), "the temporary folder (TMPDIR) is read-only"),
    (_TMP, "the temporary folder (TMPDIR) is not writable"),
    (_HOST_COMPILER, "a compiler nvcc runs is missing (the host compiler gcc/g++ must be on PATH)"),
)


def nvcc_argv(nvcc: str, source: Path, arch: str, defines: dict[str, int], output: Path,
              include: Path | None = None) -> list[str]:
    # -I the source's folder (or the variant's, for a generated file that includes it): a family's
    # shared header (#include "x.cuh") is found as NVRTC finds it.
    # Given as it is (compile_report's private link), never resolved to the user's folder name.
    folder = include or source.resolve().parent
    argv = [nvcc, *arch_flags(arch), "-cubin", "-lineinfo", "-Xptxas", "-v", f"-I{folder}", "-o", str(output)]
    argv += [f"-D{k}={v}" for k, v in defines.items()]
    if source.suffix != ".cu":  # a .cuh (or any other name): nvcc picks the language from the suffix
        argv += ["-x", "cu"]
    return argv + [str(source)]


def arch_flags(arch: str) -> list[str]:
    """nvcc's target options: an architecture-specific target (sm_90a) as one -gencode, since the
    -arch=sm_90a shorthand also runs a plain sm_90 pass, which rejects wgmma and setmaxnreg."""
    if re.fullmatch(r"sm_\d+[af]", arch):
        return [f"-gencode=arch=compute_{arch[3:]},code={arch}"]
    return [f"-arch={arch}"]


def check_defines(defines: dict[str, int]) -> None:
    """A -D name is a C identifier: anything else reaches nvcc's shell."""
    for name, value in defines.items():
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) or not re.fullmatch(r"-?[0-9]+", str(value)):
            raise UsageError(f"-D {name}={value}: a define is NAME=INTEGER, NAME a C identifier")


def environment_cause(stderr: str) -> str | None:
    """What in the machine stopped nvcc, from its output; None for a source's own error."""
    for pattern, cause in _ENVIRONMENT:
        if pattern.search(stderr):
            return cause
    return None


def compile_report(source: Path, *, arch: str = "sm_90", defines: dict[str, int] | None = None,
                   nvcc: str | None = None, include: Path | None = None, output: Path | None = None,
                   timeout_s: float = COMPILE_TIMEOUT_S,
                   wrapper: Callable[[str], str] | None = None) -> _proc.Completed:
    """Compile to a cubin (copied to `output` when given); the ptxas report is in the result's
    stderr, its paths the user's. `include`: the folder to put on the include path (default: the
    source's). `wrapper(name)`: a generated file to compile instead, which #includes the source by
    `name`. InputError for special files among the includes or a compile past `timeout_s`;
    EnvironmentProblem for a machine that cannot compile (TMPDIR, the host compiler)."""
    tool = _proc.find_tool("nvcc", nvcc)
    check_defines(defines or {})
    with compile_dir.private_folder() as tmp:
        staged = compile_dir.stage(tmp, source, [include] if include else [], shown=str(source))
        compiled = staged.source
        if wrapper is not None:
            compiled = tmp / "entries.cu"
            compiled.write_text(wrapper("src/source.cu"), encoding="utf-8")
            staged.names[str(compiled)] = "(the name expression)"
        cubin = tmp / "out.cubin"
        argv = nvcc_argv(tool, compiled, arch, defines or {}, cubin, staged.includes[0])
        try:
            done = _proc.run(argv, timeout_s=timeout_s, cwd=tmp, env=compile_dir.compiler_env(tmp), isolated=True)
        except EnvironmentProblem as exc:
            if "did not finish" in exc.message:
                raise InputError(f"{source}: nvcc did not finish within {timeout_s:g} s (a source that expands "
                                 "without end, or raise --compile-timeout)") from None
            raise
        cause = environment_cause(done.stderr) if done.returncode != 0 else None
        if cause:
            raise EnvironmentProblem(f"nvcc cannot compile here: {cause}")
        if output is not None and done.returncode == 0:
            try:
                shutil.copyfile(cubin, output)
            except OSError as exc:
                raise compile_dir.environment_error(exc, str(output.parent)) from None
        return _proc.Completed(done.argv, done.returncode, staged.user_text(done.stdout), staged.user_text(done.stderr))


def known_archs(nvcc: str | None = None) -> list[str]:
    """The -arch values this nvcc accepts (sm_XX and compute_XX), from its own lists."""
    tool = _proc.find_tool("nvcc", nvcc)
    names: list[str] = []
    for flag in ("--list-gpu-code", "--list-gpu-arch"):
        done = _proc.run([tool, flag], timeout_s=60, isolated=True)
        names += done.stdout.split() if done.returncode == 0 else []
    return names
