"""Options shared by several commands, declared once; -D/--add/--block/--tile/--grid/--args/--reads-output/
--name/--require/--kernels-dir (and run's --check-size) reach a command as one VariantOptions
(gpuprof.variants.selection), which turns them into variants."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from gpuprof.errors import UsageError
from gpuprof.variants.selection import VariantOptions

Variants = Annotated[str | None, typer.Option(
    "--variants", "-v", help="Comma list of variants, e.g. naive,smem_tiled,cublas; 'all' (default) for every one.")]
Size = Annotated[str | None, typer.Option(
    "--size", "-s",
    help="Benchmark size: '4096' (every dim), '4096x2048x512', 'm=4096,n=2048,k=512' or '2^28'. Default: the "
         "family's.")]
JsonOut = Annotated[str | None, typer.Option(
    "--json", metavar="FILE|-",
    help="Write the results as JSON to FILE (atomic: never a half-written file), or '-' for stdout.")]
Force = Annotated[bool, typer.Option("--force", help="Replace an existing output file that gpuprof did not write.")]
Arch = Annotated[str, typer.Option("--arch", help="GPU architecture for nvcc, e.g. sm_90.")]
Defines = Annotated[list[str] | None, typer.Option(
    "--define", "-D",
    help="Override a tile parameter for every selected variant that has it: -D BM=64 (repeatable; names are "
         "case-sensitive).")]
Add = Annotated[list[str] | None, typer.Option(
    "--add",
    help="Your own variant: a .cu/.cuh file (and :function if it has several kernels; a C++ name, or a template "
         "instance such as 'sgemmWarptiling<128,128,16,64,64,4,8,4,128>'), or a .py file whose "
         "make_launch(inputs, out, size) returns launch(stream) (CuPy, PyTorch extension, Numba, Triton: "
         "docs/python-variants.md); repeatable, joins --variants.")]
Block = Annotated[str | None, typer.Option(
    "--block", help="With --add: threads per block, e.g. 256 or 16,16. Default: the baseline's.")]
Tile = Annotated[str | None, typer.Option(
    "--tile",
    help="With --add: output elements per block along the family's grid dims, e.g. 16,16. Default: the baseline's.")]
Grid = Annotated[str | None, typer.Option(
    "--grid", help="With --add: 'one' (a single block), 'per_sm:K', or an expression per grid axis (x first) over "
                   "the sizes and defines, e.g. 'ceil(M/32),ceil(N/32)'; instead of tiles.")]
Args = Annotated[str | None, typer.Option(
    "--args", help="With --add: the kernel's parameters as the family's names and numbers, in its order, e.g. "
                   "M,N,K,1.0,A,B,0.0,C (numbers fill the family's scalars: matmul alpha, beta). Default: the "
                   "family's signature.")]
ReadsOutput = Annotated[bool | None, typer.Option(
    "--reads-output", help="With --add: the kernel reads its output (C = alpha*A*B + beta*C): it starts from known "
                           "random values instead of NaN, and the reference includes them.")]
KernelsDir = Annotated[Path | None, typer.Option(
    "--kernels-dir", file_okay=False,
    help="A folder of your variants: DIR/<family>.toml lists them like kernels/<family>/family.toml does.")]


def file_only(option: str, value: Path | None) -> Path | None:
    """An option that writes a file beside the table (--markdown, --html, --export-gab, --png):
    '-' is refused, never a file named '-' (stdout carries the table)."""
    if value is not None and str(value) == "-":
        raise UsageError(f"{option} -: this option writes a file, not stdout; give a file name")
    return value


Name = Annotated[str | None, typer.Option(
    "--name", metavar="NAME",
    help="With one --add: the variant's name (letters, digits, _; at most 64 characters). With several --add, name "
         "each as FILE:kernel=NAME, e.g. --add 'sgemm.cuh:sgemmWarptiling<...>=warptile_t'. Default: the file's stem.")]
Require = Annotated[str | None, typer.Option(
    "--require", metavar="CONDITIONS",
    help="With --add: the sizes the added variants can run at, conditions over the sizes and defines separated by "
         "commas, e.g. 'M%128==0,N%128==0,K%16==0' or 'cols<=1024'. Check sizes that break them are moved to the "
         "nearest size that keeps them; a --size that breaks them is not run (docs/constraints.md).")]
CheckSize = Annotated[list[str] | None, typer.Option(
    "--check-size", metavar="SIZE",
    help="One more size to check every variant at, written as --size is, e.g. M=256,N=384,K=64 or 127x129x65 "
         "(repeatable; joins the family's check sizes).")]


def json_target(value: str | None) -> Path | str | None:
    """--json FILE or '-' (stdout; so is any name of this process's stdout, e.g. /dev/stdout); a file's
    folder must exist."""
    from gpuprof.files import check_folder, is_own_stdout

    if value is None or value == "-":
        return value
    if is_own_stdout(value):
        return "-"
    path = Path(value)
    check_folder(path)  # missing, not a folder, a loop, read-only, or a name too long: one line
    return path


_VARIANT_PARAMS = [
    inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=annotation)
    for name, annotation in (("define", Defines), ("add", Add), ("block", Block), ("tile", Tile), ("grid", Grid),
                             ("args", Args), ("reads_output", ReadsOutput), ("name", Name), ("require", Require),
                             ("kernels_dir", KernelsDir))
]
_CHECK_PARAMS = [inspect.Parameter("check_size", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=CheckSize)]


def with_variant_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Give a command -D, --add, --block, --tile, --grid, --args, --reads-output, --name, --require and
    --kernels-dir, declared here once; the command receives them as `variant_options: VariantOptions`."""
    return _with_params(func, _VARIANT_PARAMS)


def with_checked_variant_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """with_variant_options and --check-size, for a command that checks its variants (`run`)."""
    return _with_params(func, _VARIANT_PARAMS + _CHECK_PARAMS)


def _with_params(func: Callable[..., Any], params: list[inspect.Parameter]) -> Callable[..., Any]:
    signature = inspect.signature(func, eval_str=True)
    kept = [p for p in signature.parameters.values() if p.name != "variant_options"]

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        options = VariantOptions(**{p.name: kwargs.pop(p.name, None) for p in params})
        return func(*args, variant_options=options, **kwargs)

    wrapper.__signature__ = signature.replace(parameters=kept + params)  # type: ignore[attr-defined]
    return wrapper
