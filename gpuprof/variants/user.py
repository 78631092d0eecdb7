"""A student's own variants, checked before launch: one file from the command line
(`--add mine.cu[:function]`) or a folder of them with its own manifest (`--kernels-dir DIR`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from gpuprof import families
from gpuprof.errors import InputError, UsageError
from gpuprof.families import _keys
from gpuprof.files import read_source, read_toml
from gpuprof.variants import arguments, constraints
from gpuprof.variants.catalog import Family, Variant, check_geometry, parse_variant, validate_variants
from gpuprof.variants.declarations import (  # noqa: F401  # re-exported: user.kernel_declarations is public
    KERNEL_DECLARATION,
    KernelDeclaration,
    base_name,
    instantiated_parameters,
    kernel_declarations,
    parameter_types,
)
from gpuprof.variants.expressions import split_top_level


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
    args: tuple[str | int | float, ...] | None = None  # --args: the kernel's parameters as family names and numbers
    reads_output: bool = False  # --reads-output: the kernel reads C (C = alpha*A*B + beta*C)
    name: str | None = None  # FILE:kernel=NAME or --name: the variant's name (default: added_name)
    require: tuple[str, ...] = ()  # --require: constraints on the sizes it runs at (variants/constraints.py)

    def cli_args(self) -> list[str]:
        """The same options again, for the child process a profiler or sanitizer starts."""
        args = ["--kernels-dir", str(self.kernels_dir.resolve())] if self.kernels_dir else []
        if self.path is None:
            return args
        return args + ["--add", self.target()] + self.shared_args()

    def target(self) -> str:
        """--add's value again: FILE[:function][=NAME], the file's path absolute."""
        assert self.path is not None  # a spec that names only a kernels-dir has no --add
        target = f"{self.path.resolve()}:{self.function}" if self.function else str(self.path.resolve())
        return f"{target}={self.name}" if self.name else target

    def shared_args(self) -> list[str]:
        """The options every --add of one command line shares (--block ... --require)."""
        args: list[str] = []
        if self.block:
            args += ["--block", ",".join(map(str, self.block))]
        if self.tile:
            args += ["--tile", ",".join(map(str, self.tile))]
        if self.grid:
            args += ["--grid", self.grid]
        if self.args is not None:
            args += ["--args", ",".join(map(str, self.args))]
        if self.reads_output:
            args += ["--reads-output"]
        if self.require:
            args += ["--require", ",".join(self.require)]
        return args


def parse_add(text: str, block: str | None = None, tile: str | None = None, grid: str | None = None,
              args: str | None = None, reads_output: bool = False, name: str | None = None,
              require: str | None = None) -> AddSpec:
    """--add FILE[:function][=NAME] and the options that go with it; --name NAME names it too."""
    text, given = split_name(text)
    if given and name and given != name:
        raise UsageError(f"--add {text}={given} and --name {name} name one variant twice; give one name")
    path_text, _, function = text.partition(":") if not Path(text).is_file() else (text, "", "")
    try:
        mapping = arguments.parse_option(args) if args is not None else None
    except arguments.ArgsError as exc:
        raise UsageError(str(exc)) from None
    return AddSpec(Path(path_text), function.strip() or None, _dims("--block", block), _dims("--tile", tile), grid,
                   args=mapping, reads_output=reads_output, name=check_name(given or name),
                   require=constraints.parse_option(require) if require else ())


MAX_NAME = 64


def split_name(text: str) -> tuple[str, str | None]:
    """'sgemm.cuh:k<128,64>=bt' -> ('sgemm.cuh:k<128,64>', 'bt'): the last '=' outside angle
    brackets and parentheses names the variant; a path that exists as typed is never split."""
    if Path(text).is_file():
        return text, None
    depth, cut = 0, -1
    for i, ch in enumerate(text):
        depth += ch in "<("
        depth -= ch in ">)"
        if ch == "=" and depth == 0:
            cut = i
    if cut < 0:
        return text, None
    return text[:cut], text[cut + 1:].strip()


def check_name(name: str | None) -> str | None:
    """A variant name a user gives: an identifier of at most MAX_NAME characters."""
    if name is None:
        return None
    if not name.isidentifier() or not name.isascii() or len(name) > MAX_NAME:
        raise UsageError(f"bad variant name {name[:80]!r}: use letters, digits and _ (not first), "
                         f"at most {MAX_NAME} characters, e.g. blocktile2d")
    return name


def grid_option(text: str) -> tuple[str, tuple[str, ...]]:
    """--grid: 'one', 'per_sm:K', 'tiles', or expressions per axis ('ceil(M/32),ceil(N/32)')."""
    if text in ("one", "tiles") or text.startswith("per_sm:"):
        return text, ()
    exprs = tuple(split_top_level(text))
    if not all(exprs):
        raise UsageError(f"bad --grid '{text}': write 'one', 'per_sm:K' or an expression per axis, "
                         "e.g. 'ceil(M/32),ceil(N/32)'")
    return "expressions", exprs


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
    folders = dict.fromkeys(str(s.kernels_dir.resolve()) for s in specs if s.kernels_dir is not None)
    args = [word for folder in folders for word in ("--kernels-dir", folder)]
    added = [s for s in specs if s.path is not None]
    for one in added:
        args += ["--add", one.target()]
    return args + (added[0].shared_args() if added else [])  # one command line's --add share them


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
    host = families.host(family)
    for variant in variants:
        try:  # plan and error_model name choices of the family module (gpuprof/families/<family>.py)
            _keys.check_declared(variant, host)
        except InputError as exc:
            raise InputError(f"{path}: {exc.message}") from None
    for variant in variants:
        if variant.is_cuda:  # a Triton variant (language = "triton") brings its own launch
            assert variant.file is not None  # validate_variants: every non-vendor variant has a file that exists
            _kernel_in(variant.file, read_source(variant.file), family, variant.kernel, variant.args is not None)
            check_call(path, family, variant, read_source(variant.file))
        elif variant.is_python and variant.file is not None:  # its entry point, checked without importing it
            from gpuprof.variants import python_variant

            python_variant.entry_point_line(variant.file, read_source(variant.file), variant.entry)
    return variants


def to_variant(family: Family, spec: AddSpec) -> Variant:
    """A Variant for the user's file; its signature must be the family's (checked before any launch)."""
    path = spec.path
    assert path is not None  # a spec without --add only names a kernels-dir; add_to_family skips it
    source = read_source(path, "--add")
    if path.suffix == ".py":  # any framework's Python launch: variants/python_variant.py
        from gpuprof.variants import python_variant

        added = python_variant.user_variant(path, source, spec.function,
                                            {"block": spec.block, "tile": spec.tile, "grid": spec.grid})
        return _named(family, spec, replace(added, name=own_name(family, spec.name) or added.name))
    name = _kernel_in(path, source, family, spec.function, spec.args is not None)
    base = family.variant(family.baseline)
    grid, grid_exprs = grid_option(spec.grid) if spec.grid else (base.grid if not spec.tile else "tiles", ())
    variant = Variant(
        name=own_name(family, spec.name) or added_name(family, path, name), technique=f"your variant ({path.name})",
        file=path.resolve(), kernel=name,
        block=spec.block or base.block, tile=spec.tile or (base.tile if not spec.grid else ()),
        grid=grid, grid_exprs=grid_exprs, args=spec.args, reads_output=spec.reads_output,
        defines=dict(base.defines) if not spec.block else {}, user=True,
    )
    variant = _named(family, spec, variant)
    try:
        check_geometry(f"--add {path}", family, variant)
        check_call(f"--add {path}", family, variant, source, "--args")
    except InputError as exc:
        raise UsageError(exc.message) from None
    return variant


def _named(family: Family, spec: AddSpec, variant: Variant) -> Variant:
    """The variant with --require's constraints, their names checked against the sizes and defines."""
    if not spec.require:
        return variant
    known = [*family.dims, *(d.upper() for d in family.dims), *variant.defines]
    unknown = constraints.unknown_names(spec.require, known)
    if unknown:
        raise UsageError(f"--require {','.join(spec.require)}: {unknown[0]} is none of the sizes and defines "
                         f"of {variant.name}: {', '.join(known)}")
    return replace(variant, require=spec.require)


def own_name(family: Family, name: str | None) -> str | None:
    """The name the user gave (FILE:kernel=NAME or --name), if it is free in the family."""
    taken = set(family.variant_names) | {a for v in family.variants for a in v.aliases}
    if name in taken:
        raise UsageError(f"variant name {name!r} already exists in {family.name}; choose another name")
    return name


def added_name(family: Family, path: Path, kernel: str) -> str:
    """The file's stem; where the family already has a variant of that name (a tutorial's naive.cuh
    beside the built-in naive), the kernel's own name, else the stem with '_yours'."""
    taken = set(family.variant_names) | {a for v in family.variants for a in v.aliases}
    for candidate in (path.stem, base_name(kernel), f"{path.stem}_yours"):
        if candidate not in taken:
            return candidate
    return f"{path.stem}_yours_{len(taken)}"


def _kernel_in(path: Path, source: str, family: Family, function: str | None, mapped: bool = False) -> str:
    """The entry point's name (or name expression); it must exist and, unless its arguments are
    mapped (`args`), take the family's parameters (`const` aside: loose_type)."""
    kernels = kernel_declarations(source)
    if not kernels:
        raise InputError(f"{path}: no __global__ kernel found")
    name = function or (next(iter(kernels)) if len(kernels) == 1 else None)
    if name is None:
        raise UsageError(
            f"{path} has several kernels ({', '.join(kernels)}); name one: --add {path}:{next(iter(kernels))}")
    if base_name(name) not in kernels:
        raise UsageError(f"{path} has no __global__ kernel '{base_name(name)}'; found: {', '.join(kernels)}")
    declaration = kernels[base_name(name)]
    if declaration.template_params is not None and "<" not in name:
        raise UsageError(f"{path}:{declaration.line}: {name} is a template; name an instance, "
                         f"e.g. --add {path.name}:'{name}<...>' with its template arguments")
    if mapped:
        return name
    want = parameter_types(family.signature)
    got = [kind for kind, _ in instantiated_parameters(declaration, name)]
    if list(map(loose_type, got)) != list(map(loose_type, want)):
        raise InputError(f"{path}:{declaration.line}: {family.name} kernels take ({', '.join(want)}); "
                         f"{base_name(name)} takes ({', '.join(got)}); map them with --args "
                         "(or args = [...] in a manifest)")
    return name


def loose_type(kind: str) -> str:
    """A parameter type as the signature check compares it: `const` dropped (`__restrict__` is
    already gone), so `float*` passes for `const float* __restrict__`, as learners write it. A
    kernel that then writes an input is caught by the check, which compares the inputs after."""
    return " ".join(w for w in kind.replace("*", " * ").split() if w != "const").replace(" *", "*")


def check_call(where: Path | str, family: Family, variant: Variant, source: str, what: str = "args") -> None:
    """The variant's `args` against its kernel's parameter list, and its output contract against
    the family's scalars: both before any launch."""
    if variant.args is not None:
        try:
            call_slots(family, variant, source, what)
        except arguments.ArgsError as exc:
            raise InputError(f"{where}: {exc}") from None
    scalars = scalar_values(family, variant, source)
    host = families.host(family)
    if not variant.reads_output and host.reads_start(scalars):
        given = ", ".join(f"{k} = {v:g}" for k, v in scalars.items() if v != host.SCALARS.get(k))
        raise InputError(f"{where}: {given} makes the kernel read its output; "
                         "add --reads-output (reads_output = true in a manifest)")


def call_slots(family: Family, variant: Variant, source: str | None = None,
               what: str = "args") -> tuple[arguments.Slot, ...] | None:
    """The variant's argument mapping resolved against its kernel's parameters (None: the family's
    own signature); ArgsError names the first position that does not fit."""
    if variant.args is None or variant.file is None or variant.kernel is None:
        return None
    declaration = kernel_declarations(source if source is not None else read_source(variant.file))[
        base_name(variant.kernel)]
    params = instantiated_parameters(declaration, variant.kernel)
    return arguments.resolve(variant.args, base_name(variant.kernel), params, family.signature, family.dims,
                             families.host(family).SCALARS, what)


def scalar_values(family: Family, variant: Variant, source: str | None = None) -> dict[str, float]:
    """The family's scalars as this variant's kernel gets them (its defaults without `args`)."""
    slots = call_slots(family, variant, source)
    defaults = families.host(family).SCALARS
    return arguments.scalar_values(slots, defaults) if slots is not None else defaults
