"""A student's own variant from the command line (`--add mine.cu[:function]`), checked before launch."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from gpuprof.catalog import Family, Variant, check_geometry
from gpuprof.errors import InputError, UsageError

_KERNEL = re.compile(r'extern\s+"C"\s+__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?void\s+(\w+)\s*\(([^)]*)\)', re.S)


@dataclass(frozen=True)
class AddSpec:
    """What the user typed: the file, the entry point and, optionally, launch geometry."""

    path: Path
    function: str | None = None
    block: tuple[int, ...] | None = None
    tile: tuple[int, ...] | None = None
    grid: str | None = None

    def cli_args(self) -> list[str]:
        """The same --add options again, for the child process a profiler or sanitizer starts."""
        target = f"{self.path.resolve()}:{self.function}" if self.function else str(self.path.resolve())
        args = ["--add", target]
        if self.block:
            args += ["--block", ",".join(map(str, self.block))]
        if self.tile:
            args += ["--tile", ",".join(map(str, self.tile))]
        if self.grid:
            args += ["--grid", self.grid]
        return args


def parse_add(text: str, block: str | None = None, tile: str | None = None, grid: str | None = None) -> AddSpec:
    path_text, _, function = text.partition(":") if not Path(text).is_file() else (text, "", "")
    return AddSpec(Path(path_text), function or None, _dims("--block", block), _dims("--tile", tile), grid)


def _dims(option: str, text: str | None) -> tuple[int, ...] | None:
    if text is None:
        return None
    try:
        dims = tuple(int(x) for x in text.replace("x", ",").split(","))
    except ValueError:
        raise UsageError(f"bad {option} '{text}': write integers like 256 or 16,16") from None
    if not dims or min(dims) < 1:
        raise UsageError(f"bad {option} '{text}': dimensions must be positive")
    return dims


def parameter_types(params: str) -> list[str]:
    """'const float* __restrict__ A, int n' -> ['const float*', 'int']: the types, names dropped."""
    out = []
    for param in filter(None, (p.strip() for p in params.split(","))):
        words = param.replace("*", " * ").replace("__restrict__", " ").split()
        if len(words) > 1 and words[-1] != "*":
            words = words[:-1]  # the parameter's name
        out.append(" ".join(words).replace(" *", "*"))
    return out


def add_to_family(family: Family, spec: AddSpec | None) -> tuple[Family, list[Variant]]:
    """The family with the user's variant in it (if any), and that variant as a list."""
    extra = [to_variant(family, spec)] if spec is not None else []
    return family.with_variants(extra), extra


def to_variant(family: Family, spec: AddSpec) -> Variant:
    """A Variant for the user's file; its signature must be the family's (checked before any launch)."""
    path = spec.path
    try:
        source = path.read_text()
    except OSError as exc:
        raise UsageError(f"--add {path}: cannot read it ({exc.strerror or exc})") from None
    kernels = {m.group(1): (m.group(2), source.count("\n", 0, m.start()) + 1) for m in _KERNEL.finditer(source)}
    if not kernels:
        raise InputError(f'{path}: no extern "C" __global__ kernel found; declare it extern "C" so gpuprof can find it')
    name = spec.function or (next(iter(kernels)) if len(kernels) == 1 else None)
    if name is None:
        raise UsageError(f"{path} has several kernels ({', '.join(kernels)}); name one: --add {path}:{next(iter(kernels))}")
    if name not in kernels:
        raise UsageError(f"{path} has no extern \"C\" __global__ kernel '{name}'; found: {', '.join(kernels)}")
    params, line = kernels[name]
    want = parameter_types(family.signature)
    got = parameter_types(params)
    if got != want:
        raise InputError(f"{path}:{line}: {family.name} kernels take ({', '.join(want)}); {name} takes ({', '.join(got)})")
    base = family.variant(family.baseline)
    variant = Variant(
        name=path.stem, technique=f"your variant ({path.name})", file=path.resolve(), kernel=name,
        block=spec.block or base.block, tile=spec.tile or (base.tile if not spec.grid else ()),
        grid=spec.grid or (base.grid if not spec.tile else "tiles"),
        defines=dict(base.defines) if not spec.block else {}, user=True,
    )
    try:
        check_geometry(f"--add {path}", family, variant)
    except InputError as exc:
        raise UsageError(exc.message) from None
    return variant
