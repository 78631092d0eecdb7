"""The kernel catalogue: finds kernels/*/family.toml, validates it, returns Family and Variant."""

from __future__ import annotations

import ast
import difflib
import operator
import tomllib
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

from gpuprof.errors import InputError, UsageError
from gpuprof.files import read_text

_PACKAGED = Path(__file__).resolve().parents[1] / "_kernels"  # where a wheel puts kernels/ (pyproject force-include)
_SOURCE_TREE = Path(__file__).resolve().parents[2] / "kernels"  # a checkout or an editable install

Expr = int | str

LANGUAGES = ("cuda", "triton")
_CUDA_ONLY_KEYS = ("kernel", "extra_kernels", "block", "tile", "grid", "defines")


@dataclass(frozen=True)
class Variant:
    """One version of a family: a .cu file and its launch geometry, a Triton .py file (geometry in
    the file), or a vendor library call."""

    name: str
    technique: str
    vendor: bool = False
    language: str = "cuda"  # "cuda": file is a .cu run through NVRTC; "triton": file is a .py with make_launch
    file: Path | None = None
    kernel: str | None = None
    extra_kernels: tuple[str, ...] = ()  # more entry points of the same file, for multi-kernel plans
    block: tuple[Expr, ...] = ()
    tile: tuple[Expr, ...] = ()
    grid: str = "tiles"  # "tiles": ceil(extent / tile) per grid dim; "one": a single block; "per_sm:K"
    defines: dict[str, int] = field(default_factory=dict)
    max_size: dict[str, int] | None = None  # a slow variant runs at min(size, max_size)
    user: bool = False  # added from the command line, not shipped

    @property
    def is_cuda(self) -> bool:
        """A CUDA source gpuprof compiles itself (nvcc for `build`, NVRTC for `run`)."""
        return not self.vendor and self.language == "cuda"

    @property
    def is_triton(self) -> bool:
        return not self.vendor and self.language == "triton"

    def block_dims(self) -> tuple[int, int, int]:
        dims = [evaluate(e, self.defines) for e in self.block] + [1, 1, 1]
        return dims[0], dims[1], dims[2]

    def tile_dims(self) -> tuple[int, ...]:
        return tuple(evaluate(e, self.defines) for e in self.tile)

    def with_defines(self, overrides: dict[str, int]) -> Variant:
        return replace(self, defines={**self.defines, **overrides})


@dataclass(frozen=True)
class Family:
    name: str
    summary: str
    signature: str
    baseline: str
    vendor_reference: str | None
    dims: tuple[str, ...]
    grid_dims: tuple[str, ...]
    default_size: dict[str, int]
    check_sizes: tuple[dict[str, int], ...]
    variants: tuple[Variant, ...]
    directory: Path

    def variant(self, name: str) -> Variant:
        for v in self.variants:
            if v.name == name:
                return v
        raise UsageError(
            f"unknown variant '{name}' of {self.name}; choose from: {', '.join(self.variant_names)}"
        )

    @property
    def variant_names(self) -> list[str]:
        return [v.name for v in self.variants]

    def select(self, names: str | list[str] | None) -> list[Variant]:
        """Variants named in a comma list (or 'all' / None for every one), in the given order."""
        if names is None or names == "all" or names == ["all"]:
            return list(self.variants)
        if isinstance(names, str):
            names = [n.strip() for n in names.split(",") if n.strip()]
        if not names:
            raise UsageError(f"--variants is empty; choose from: {', '.join(self.variant_names)}")
        return [self.variant(n) for n in names]

    def apply_defines(self, variants: list[Variant], overrides: dict[str, int]) -> list[Variant]:
        """The variants with -D overrides applied, each launch geometry checked again."""
        if not overrides:
            return variants
        out = []
        for v in variants:
            if v.is_cuda:  # -D reaches CUDA sources only; vendor calls and Triton files keep their own
                v = v.with_defines(overrides)
                try:
                    check_geometry("-D", self, v)
                except InputError as exc:
                    given = " ".join(f"-D {k}={x}" for k, x in overrides.items())
                    raise UsageError(f"{given} gives an invalid launch: {exc.message.removeprefix('-D: ')}") from None
            out.append(v)
        return out

    def with_variants(self, extra: list[Variant]) -> Family:
        clash = set(self.variant_names) & {v.name for v in extra}
        if clash:
            raise UsageError(f"variant name {sorted(clash)[0]!r} already exists in {self.name}; rename yours")
        return replace(self, variants=self.variants + tuple(extra))


def kernels_root() -> Path:
    for root in (_PACKAGED, _SOURCE_TREE):
        if root.is_dir():
            return root
    raise InputError("gpuprof's kernels/ folder is missing from this installation; reinstall gpuprof")


def family_names(root: Path | None = None) -> list[str]:
    root = root or kernels_root()
    return sorted(p.parent.name for p in root.glob("*/family.toml"))


@cache
def load_family(name: str, root: Path | None = None) -> Family:
    root = root or kernels_root()
    path = root / name / "family.toml"
    if not path.is_file() or not name.isidentifier():
        names = family_names(root)
        close = difflib.get_close_matches(name, names, n=1)
        hint = f"did you mean {close[0]}? " if close else ""
        raise UsageError(f"unknown family '{name}'; {hint}choose from: {', '.join(names)}")
    return parse_manifest(path)


def load_all(root: Path | None = None) -> list[Family]:
    return [load_family(n, root) for n in family_names(root)]


def parse_manifest(path: Path) -> Family:
    try:
        data = tomllib.loads(read_text(path))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: not valid TOML ({exc})") from None
    m = _Manifest(path, data)
    family = Family(
        name=m.str("family"),
        summary=m.str("summary"),
        signature=m.str("signature"),
        baseline=m.str("baseline"),
        vendor_reference=m.opt_str("vendor_reference"),
        dims=tuple(m.str_list("dims")),
        grid_dims=tuple(m.str_list("grid_dims")),
        default_size=m.size("default_size"),
        check_sizes=tuple(m.size_list("check_sizes")),
        variants=tuple(parse_variant(path, i, v) for i, v in enumerate(m.table_list("variant"), 1)),
        directory=path.parent,
    )
    _validate(path, family)
    return family


def parse_variant(path: Path, index: int, data: dict[str, Any], *, user: bool = False) -> Variant:
    m = _Manifest(path, data, where=f"variant {index}")
    vendor = bool(data.get("vendor", False))
    name = m.str("name")
    if vendor:
        return Variant(name=name, technique=m.str("technique"), vendor=True)
    language = data.get("language", "cuda")
    if language not in LANGUAGES:
        raise m.fail("language", f"is {language!r}; choose from: {', '.join(LANGUAGES)}")
    if language == "triton":
        unused = sorted(k for k in _CUDA_ONLY_KEYS if k in data)
        if unused:
            raise m.fail(unused[0], "does not apply to a Triton variant (its launch geometry lives in the .py file)")
        file = m.str("file")
        if not file.endswith(".py"):
            raise m.fail("file", f"is {file!r}; a Triton variant is a .py file")
        return Variant(name=name, technique=m.str("technique"), language="triton", file=path.parent / file,
                       max_size=m.size("max_size") if "max_size" in data else None, user=user)
    defines = data.get("defines", {})
    if not isinstance(defines, dict) or not all(isinstance(v, int) for v in defines.values()):
        raise InputError(f"{path}: variant {index}: 'defines' must be a table of integers")
    return Variant(
        name=name,
        technique=m.str("technique"),
        file=path.parent / m.str("file"),
        kernel=m.str("kernel"),
        extra_kernels=tuple(m.str_list("extra_kernels")) if "extra_kernels" in data else (),
        block=tuple(m.expr_list("block")),
        tile=tuple(m.expr_list("tile")) if "tile" in data else (),
        grid=str(data.get("grid", "tiles")),
        defines=dict(defines),
        max_size=m.size("max_size") if "max_size" in data else None,
        user=user,
    )


def _validate(path: Path, family: Family) -> None:
    names = family.variant_names
    validate_variants(path, family, family.variants)
    if path.parent.name != family.name:
        raise InputError(f"{path}: family = {family.name!r} but the folder is {path.parent.name!r}")
    for ref in (family.baseline, family.vendor_reference):
        if ref is not None and ref not in names:
            raise InputError(f"{path}: {ref!r} is named as baseline/vendor but is not a variant")
    for key, size in (("default_size", family.default_size), *(("check_sizes", s) for s in family.check_sizes)):
        if list(size) != list(family.dims):
            raise InputError(f"{path}: '{key}' {size} must give exactly {list(family.dims)} in that order")


def validate_variants(path: Path, family: Family, variants: tuple[Variant, ...] | list[Variant]) -> None:
    """What a manifest's [[variant]] tables must satisfy: distinct names, files that exist, a
    launchable geometry for CUDA variants. For the built-in manifests and a user's --kernels-dir."""
    names = [v.name for v in variants]
    if len(set(names)) != len(names):
        raise InputError(f"{path}: duplicate variant names in {names}")
    for v in variants:
        if v.vendor:
            continue
        if v.file is None or not v.file.is_file():
            raise InputError(f"{path}: variant {v.name!r}: file {v.file} does not exist")
        if v.is_cuda:
            check_geometry(path, family, v)


def check_geometry(path: Path | str, family: Family, v: Variant) -> None:
    for key, dims in (("block", v.block_dims), ("tile", v.tile_dims)):
        try:
            dims()
        except (ValueError, ZeroDivisionError) as exc:
            raise InputError(f"{path}: variant {v.name!r}: '{key}' {exc}") from None
    block, tile = v.block_dims(), v.tile_dims()
    if not 1 <= block[0] * block[1] * block[2] <= 1024 or min(block) < 1:
        raise InputError(f"{path}: variant {v.name!r}: block {block} must have 1..1024 threads")
    if v.grid == "tiles" and (len(tile) != len(family.grid_dims) or min(tile, default=0) < 1):
        raise InputError(
            f"{path}: variant {v.name!r}: tile must give {len(family.grid_dims)} positive extents "
            f"(along {list(family.grid_dims)})"
        )
    if v.grid not in ("tiles", "one") and not v.grid.startswith("per_sm:"):
        raise InputError(f"{path}: variant {v.name!r}: grid must be 'tiles', 'one' or 'per_sm:K'")


_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.FloorDiv: operator.floordiv, ast.Div: operator.floordiv}


def evaluate(expr: Expr, defines: dict[str, int]) -> int:
    """Integer arithmetic over define names, e.g. "(BM*BN)/(TM*TN)"; nothing else is allowed."""
    if isinstance(expr, int):
        return expr

    def walk(node: ast.AST) -> int:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in defines:
                raise ValueError(f"{expr!r} uses {node.id}, which is not among the defines {sorted(defines)}")
            return defines[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](walk(node.left), walk(node.right))
        raise ValueError(f"{expr!r}: only + - * / ( ), integers and define names are allowed")

    try:
        tree = ast.parse(str(expr), mode="eval")
    except SyntaxError:
        raise ValueError(f"{expr!r} is not an arithmetic expression") from None
    return walk(tree)


class _Manifest:
    """Typed access to one TOML table with errors that name the file and the place."""

    def __init__(self, path: Path, data: dict[str, Any], where: str = "") -> None:
        self.path, self.data, self.where = path, data, where

    def fail(self, key: str, why: str) -> InputError:
        place = f"{self.where}: " if self.where else ""
        return InputError(f"{self.path}: {place}'{key}' {why}")

    def _get(self, key: str) -> Any:
        if key not in self.data:
            raise self.fail(key, "is missing")
        return self.data[key]

    def str(self, key: str) -> str:
        value = self._get(key)
        if not isinstance(value, str) or not value:
            raise self.fail(key, "must be a non-empty string")
        return value

    def opt_str(self, key: str) -> str | None:
        return self.str(key) if key in self.data else None

    def str_list(self, key: str) -> list[str]:
        value = self._get(key)
        if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
            raise self.fail(key, "must be a list of strings")
        return value

    def expr_list(self, key: str) -> list[Expr]:
        value = self._get(key)
        if not isinstance(value, list) or not value or not all(isinstance(x, (int, str)) for x in value):
            raise self.fail(key, "must be a list of integers or arithmetic strings")
        return value

    def size(self, key: str) -> dict[str, int]:
        return _size(self._get(key), lambda why: self.fail(key, why))

    def size_list(self, key: str) -> list[dict[str, int]]:
        value = self._get(key)
        if not isinstance(value, list) or not value:
            raise self.fail(key, "must be a non-empty list of size tables")
        return [_size(v, lambda why: self.fail(key, why)) for v in value]

    def table_list(self, key: str) -> list[dict[str, Any]]:
        value = self._get(key)
        if not isinstance(value, list) or not all(isinstance(x, dict) for x in value):
            raise self.fail(key, "must be an array of tables ([[variant]])")
        return value


def _size(value: Any, fail: Any) -> dict[str, int]:
    if not isinstance(value, dict) or not value:
        raise fail("must be a table like {n = 1024}")
    for k, v in value.items():
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise fail(f"has {k} = {v!r}; sizes are positive integers")
    return dict(value)
