"""A student's own variants, checked before launch: one file from the command line
(`--add mine.cu[:function]`) or a folder of them with its own manifest (`--kernels-dir DIR`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gpuprof import families
from gpuprof.errors import InputError, UsageError
from gpuprof.families import _keys
from gpuprof.files import read_source, read_toml
from gpuprof.variants.catalog import Family, Variant, check_geometry, parse_variant, validate_variants

# An entry point as the built-ins declare it: `extern "C" __global__ void [__launch_bounds__(...)] name(params)`;
# `__launch_bounds__` may also stand before `void`, and its arguments may hold one level of parentheses.
_BOUNDS = r'__launch_bounds__\s*\((?P<{}>(?:[^()]|\([^()]*\))*)\)\s*'
KERNEL_DECLARATION = re.compile(
    r'extern\s+"C"\s+__global__\s+' + "(?:" + _BOUNDS.format("bounds_before") + ")?"
    + r"void\s+" + "(?:" + _BOUNDS.format("bounds") + ")?"
    + r"(?!__launch_bounds__\b)(?P<name>[A-Za-z_]\w*)\s*\((?P<params>[^)]*)\)",
    re.DOTALL,
)
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)


@dataclass(frozen=True)
class KernelDeclaration:
    """One extern "C" __global__ entry point found in a source file."""

    name: str
    params: str
    bounds: str | None  # the __launch_bounds__ arguments, as written
    line: int


def kernel_declarations(source: str) -> dict[str, KernelDeclaration]:
    """Every extern "C" __global__ kernel in a .cu source, by name (comments ignored; lines kept)."""
    code = _COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), source)
    found = {}
    for m in KERNEL_DECLARATION.finditer(code):
        bounds = m.group("bounds") if m.group("bounds") is not None else m.group("bounds_before")
        found[m.group("name")] = KernelDeclaration(m.group("name"), m.group("params"), bounds,
                                                   code.count("\n", 0, m.start("name")) + 1)
    return found


@dataclass(frozen=True)
class AddSpec:
    """What the user typed: the file, the entry point and, optionally, launch geometry; and/or a
    folder of variants with its own manifest."""

    path: Path | None
    function: str | None = None
    block: tuple[int, ...] | None = None
    tile: tuple[int, ...] | None = None
    grid: str | None = None
    kernels_dir: Path | None = None

    def cli_args(self) -> list[str]:
        """The same options again, for the child process a profiler or sanitizer starts."""
        args = ["--kernels-dir", str(self.kernels_dir.resolve())] if self.kernels_dir else []
        if self.path is None:
            return args
        target = f"{self.path.resolve()}:{self.function}" if self.function else str(self.path.resolve())
        args += ["--add", target]
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


def add_to_family(family: Family, spec: AddSpec | Sequence[AddSpec] | None) -> tuple[Family, list[Variant]]:
    """The family with the user's variants in it (if any), and those variants as a list. Several
    specs (several --add) accumulate."""
    specs = [] if spec is None else [spec] if isinstance(spec, AddSpec) else list(spec)
    extra: list[Variant] = []
    for directory in dict.fromkeys(s.kernels_dir for s in specs if s.kernels_dir is not None):
        extra += load_kernels_dir(directory, family)
    for one in specs:
        if one.path is None:
            continue
        added = to_variant(family, one)
        if added.name in {v.name for v in extra}:
            origin = "--add" if any(v.name == added.name and v.technique.startswith("your variant") for v in extra) \
                else "--kernels-dir"
            raise UsageError(f"variant name {added.name!r} already exists in {origin}; rename {one.path.name}")
        extra.append(added)
    return family.with_variants(extra), extra


def cli_args(specs: Sequence[AddSpec]) -> list[str]:
    """Several specs' options again, the kernels folder once, for a profiler's or sanitizer's child."""
    args: list[str] = []
    for one in specs:
        more = one.cli_args()
        if more[:1] == ["--kernels-dir"] and "--kernels-dir" in args:
            more = more[2:]
        args += more
    return args


def load_kernels_dir(directory: Path, family: Family) -> list[Variant]:
    """The variants DIR/<family>.toml lists ([[variant]] tables as in kernels/<family>/family.toml,
    files relative to DIR); none if DIR has no manifest for this family."""
    if not directory.is_dir():
        raise UsageError(f"--kernels-dir {directory}: not a directory")
    path = directory / f"{family.name}.toml"
    if not path.is_file():
        return []
    data = read_toml(path)
    unknown = sorted(set(data) - {"family", "variant"})
    if unknown:
        raise InputError(
            f"{path}: unknown key {unknown[0]!r}; a kernels-dir manifest has 'family' and [[variant]] tables")
    if data.get("family", family.name) != family.name:
        raise InputError(f"{path}: family = {data['family']!r} but the file is named for {family.name}")
    tables = data.get("variant")
    if not isinstance(tables, list) or not tables or not all(isinstance(t, dict) for t in tables):
        raise InputError(
            f"{path}: needs at least one [[variant]] table with name, technique, file, kernel, block, tile")
    variants = []
    for index, table in enumerate(tables, 1):
        if table.get("vendor"):
            raise InputError(
                f"{path}: variant {index}: vendor variants need host code; add .cu (or Triton .py) variants")
        variants.append(parse_variant(path, index, table, user=True))
    validate_variants(path, family, variants)
    host = families.host(family.name)
    for variant in variants:
        try:  # plan and error_model name choices of the family module (gpuprof/families/<family>.py)
            _keys.check_declared(variant, host)
        except InputError as exc:
            raise InputError(f"{path}: {exc.message}") from None
    for variant in variants:
        if variant.is_cuda:  # a Triton variant (language = "triton") brings its own launch
            assert variant.file is not None  # validate_variants: every non-vendor variant has a file that exists
            _kernel_in(variant.file, read_source(variant.file), family, variant.kernel)
    return variants


def to_variant(family: Family, spec: AddSpec) -> Variant:
    """A Variant for the user's file; its signature must be the family's (checked before any launch)."""
    path = spec.path
    assert path is not None  # a spec without --add only names a kernels-dir; add_to_family skips it
    source = read_source(path, "--add")
    name = _kernel_in(path, source, family, spec.function)
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


def _kernel_in(path: Path, source: str, family: Family, function: str | None) -> str:
    """The entry point's name; it must exist (extern "C") and take the family's parameters."""
    kernels = kernel_declarations(source)
    if not kernels:
        raise InputError(
            f'{path}: no extern "C" __global__ kernel found; declare it extern "C" so gpuprof can find it')
    name = function or (next(iter(kernels)) if len(kernels) == 1 else None)
    if name is None:
        raise UsageError(
            f"{path} has several kernels ({', '.join(kernels)}); name one: --add {path}:{next(iter(kernels))}")
    if name not in kernels:
        raise UsageError(f"{path} has no extern \"C\" __global__ kernel '{name}'; found: {', '.join(kernels)}")
    declaration = kernels[name]
    want = parameter_types(family.signature)
    got = parameter_types(declaration.params)
    if got != want:
        raise InputError(f"{path}:{declaration.line}: {family.name} kernels take ({', '.join(want)}); "
                         f"{name} takes ({', '.join(got)})")
    return name
