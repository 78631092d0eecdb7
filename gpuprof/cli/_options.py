"""Options shared by several commands, declared once, and the one rule that turns them into variants."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from gpuprof.errors import UsageError

if TYPE_CHECKING:
    from gpuprof.variants.catalog import Family, Variant
    from gpuprof.variants.user import AddSpec

Variants = Annotated[Optional[str], typer.Option(
    "--variants", "-v", help="Comma list of variants, e.g. naive,smem_tiled,cublas; 'all' (default) for every one.")]
Size = Annotated[Optional[str], typer.Option(
    "--size", "-s", help="Benchmark size: '4096' (every dim), '4096x2048x512', 'm=4096,n=2048,k=512' or '2^28'. Default: the family's.")]
JsonOut = Annotated[Optional[str], typer.Option(
    "--json", metavar="FILE|-", help="Write the results as JSON to FILE (atomic: never a half-written file), or '-' for stdout.")]
Force = Annotated[bool, typer.Option("--force", help="Replace an existing output file that gpuprof did not write.")]
Arch = Annotated[str, typer.Option("--arch", help="GPU architecture for nvcc, e.g. sm_90.")]
Defines = Annotated[Optional[list[str]], typer.Option(
    "--define", "-D", help="Override a tile parameter for every selected variant that has it: -D BM=64 (repeatable; names are case-sensitive).")]
Add = Annotated[Optional[list[str]], typer.Option(
    "--add", help="Your own variant: a .cu file (and :function if it has several kernels) with the family's signature; repeatable, joins --variants.")]
Block = Annotated[Optional[str], typer.Option("--block", help="With --add: threads per block, e.g. 256 or 16,16. Default: the baseline's.")]
Tile = Annotated[Optional[str], typer.Option("--tile", help="With --add: output elements per block along the family's grid dims, e.g. 16,16. Default: the baseline's.")]
Grid = Annotated[Optional[str], typer.Option("--grid", help="With --add: 'one' (a single block) or 'per_sm:K' instead of tiles.")]
KernelsDir = Annotated[Optional[Path], typer.Option(
    "--kernels-dir", help="A folder of your variants: DIR/<family>.toml lists them like kernels/<family>/family.toml does.",
    file_okay=False)]


def parse_defines(items: list[str] | None) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep or not name.isidentifier():
            raise UsageError(f"bad --define '{item}': write NAME=INTEGER, e.g. -D BM=64")
        try:
            out[name] = int(value, 0)
        except ValueError:
            raise UsageError(f"bad --define '{item}': {value[:40]!r} is not an integer") from None
    return out


def require_family(word: str, command: str) -> None:
    """A family-like word that is no family is 'unknown family' (with a did-you-mean); anything else
    (./app, python) is a program, which goes after '--'."""
    from gpuprof.variants import catalog

    if word.isidentifier():
        catalog.load_family(word)
    elif word not in catalog.family_names():
        raise UsageError(f"'{word}' is no family; a program goes after '--': gpuprof {command} -- {word} ...")


def json_target(value: str | None) -> Path | str | None:
    """--json FILE or '-' (stdout); a file's folder must exist."""
    if value is None or value == "-":
        return value
    path = Path(value)
    if not path.parent.is_dir():
        raise UsageError(f"--json {path}: directory {path.parent} does not exist")
    return path


@dataclass(frozen=True)
class VariantOptions:
    """-D, --add (repeatable), --block/--tile/--grid and --kernels-dir, as typed."""

    define: list[str] | None = None
    add: list[str] | None = None
    block: str | None = None
    tile: str | None = None
    grid: str | None = None
    kernels_dir: Path | None = None

    def defines(self) -> dict[str, int]:
        return parse_defines(self.define)

    def specs(self) -> list[AddSpec]:
        from dataclasses import replace

        from gpuprof.variants.user import AddSpec, parse_add

        if not self.add:
            if self.block or self.tile or self.grid:
                raise UsageError("--block, --tile and --grid go with --add FILE")
            return [AddSpec(None, kernels_dir=self.kernels_dir)] if self.kernels_dir is not None else []
        return [replace(parse_add(a, self.block, self.tile, self.grid), kernels_dir=self.kernels_dir) for a in self.add]

    def cli_args(self) -> tuple[str, ...]:
        from gpuprof.variants.user import cli_args

        return tuple(cli_args(self.specs()))

    def select(self, families: list[Family], variants: str | None) -> list[tuple[Family, list[Variant], list[Variant]]]:
        """(family with the user's variants, chosen variants with -D applied, the user's variants) per
        family. --add joins --variants; a -D name that no chosen variant has is an error; so is a
        --kernels-dir with a manifest for none of the families."""
        specs = self.specs()
        defines = self.defines()
        out = []
        from gpuprof.variants.user import add_to_family

        for fam in families:
            fam, extra = add_to_family(fam, specs)
            chosen = fam.select(variants)
            chosen += [v for v in extra if v not in chosen]
            out.append((fam, chosen, extra))
        if self.kernels_dir is not None and not self.add and not any(extra for _, _, extra in out):
            wanted = ", ".join(f"{fam.name}.toml" for fam, _, _ in out)
            raise UsageError(f"--kernels-dir {self.kernels_dir} has no {wanted}; it lists variants in DIR/<family>.toml")
        if defines:
            known = sorted({k for _, chosen, _ in out for v in chosen if v.is_cuda for k in v.defines})
            unknown = [k for k in defines if k not in known]
            if unknown:
                same_but_case = [k for k in known if k.lower() == unknown[0].lower()]
                hint = f"; did you mean {same_but_case[0]}? (-D names are case-sensitive)" if same_but_case else ""
                have = f"their parameters: {', '.join(known)}" if known else "they have no tile parameters"
                raise UsageError(f"-D {unknown[0]}: no selected variant defines it{hint}; {have}")
            out = [(fam, fam.apply_defines(chosen, defines), extra) for fam, chosen, extra in out]
        return out


_VARIANT_PARAMS = [
    inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=annotation)
    for name, annotation in (("define", Defines), ("add", Add), ("block", Block), ("tile", Tile), ("grid", Grid),
                             ("kernels_dir", KernelsDir))
]


def with_variant_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Give a command -D, --add, --block, --tile, --grid and --kernels-dir, declared here once; the
    command receives them as `variant_options: VariantOptions`."""
    signature = inspect.signature(func, eval_str=True)
    kept = [p for p in signature.parameters.values() if p.name != "variant_options"]

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        options = VariantOptions(**{p.name: kwargs.pop(p.name, None) for p in _VARIANT_PARAMS})
        return func(*args, variant_options=options, **kwargs)

    wrapper.__signature__ = signature.replace(parameters=kept + _VARIANT_PARAMS)  # type: ignore[attr-defined]
    return wrapper
