"""The one place a family is found: a built-in name (`vecadd`), a path to a family folder
(`kernels/vecadd`, `./gelu`, `~/ops/rmsnorm/`), or a name in a folder of families (`--families-dir`,
or GPUPROF_FAMILIES_DIR). Nothing else looks a family up by name (tests/families/test_registry.py
walks the sources to keep it so).

A family folder holds family.toml (the manifest: dims, sizes, signature, variants), its Python and
its kernels. The Python is the module the manifest's `host` names (the built-in families:
`gpuprof.families.<name>`), or the folder's family.py; with an [op] table the folder only describes
its op (inputs, output, reference, counts) and families/op_host.py supplies the hooks.
"""

from __future__ import annotations

import difflib
import hashlib
import importlib
import importlib.util
import os
import sys
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, cast

from gpuprof.errors import InputError, UsageError
from gpuprof.families.interface import FamilyHost, FamilyModule

if TYPE_CHECKING:
    from gpuprof.variants.catalog import Family

MANIFEST = "family.toml"
PYTHON_FILE = "family.py"
FAMILIES_DIR_ENV = "GPUPROF_FAMILIES_DIR"  # folders of family folders, os.pathsep-separated

# The hooks a family.py must define when the manifest has no [op] table (interface.FamilyModule).
REQUIRED_HOOKS = ("RATE", "FORMULA", "make_inputs", "make_output", "kernel_args", "reference", "vendor_launch",
                  "flop", "bytes_moved", "tolerance")

_extra_dirs: list[Path] = []


def add_families_dir(directory: Path) -> None:
    """--families-dir DIR: its subfolders with a family.toml are families by name, before the built-in ones."""
    if not directory.is_dir():
        raise UsageError(f"--families-dir {directory}: not a directory")
    if directory not in _extra_dirs:
        _extra_dirs.append(directory)


def _search_dirs() -> list[Path]:
    env = [Path(p) for p in os.environ.get(FAMILIES_DIR_ENV, "").split(os.pathsep) if p]
    return [*_extra_dirs, *(p for p in env if p.is_dir())]


def looks_like_path(word: str) -> bool:
    """A word that names a folder rather than a family: it has a separator, starts with '.' or '~',
    or is an existing folder holding a family.toml."""
    return (os.sep in word or "/" in word or word.startswith((".", "~"))
            or (Path(word) / MANIFEST).is_file())


def resolve(word: str | Path, base: Path | None = None) -> Family:
    """The family a word names: a folder path (relative to `base` when given, else the working
    directory), or a name found in --families-dir / GPUPROF_FAMILIES_DIR, then among the built-in
    families. The manifest is parsed and its Python checked before anything runs."""
    text = str(word)
    if isinstance(word, Path) or looks_like_path(text):
        folder = Path(text).expanduser()
        if base is not None and not folder.is_absolute():
            folder = base / folder
        return _load_folder(folder)
    if not text.isidentifier():
        raise UsageError(f"'{text}' is no family name; a family is a name (see gpuprof list) or a folder "
                         f"holding {MANIFEST}")
    for directory in _search_dirs():
        if (directory / text / MANIFEST).is_file():
            return _load_folder(directory / text)
    from gpuprof.variants import catalog

    root = catalog.kernels_root()
    if not (root / text / MANIFEST).is_file():
        known = names()
        close = difflib.get_close_matches(text, known, n=1)
        hint = f"did you mean {close[0]}? " if close else ""
        raise UsageError(f"unknown family '{text}'; {hint}choose from: {', '.join(known)} "
                         f"(or give the path of a family folder)")
    return _load_folder(root / text)


def names() -> list[str]:
    """Every family found by name: --families-dir / GPUPROF_FAMILIES_DIR folders, then the built-in ones."""
    from gpuprof.variants import catalog

    found = {p.parent.name for d in _search_dirs() for p in d.glob(f"*/{MANIFEST}") if p.parent.name.isidentifier()}
    return sorted(found | set(catalog.family_names()))


def all_families() -> list[Family]:
    return [resolve(name) for name in names()]


def _load_folder(folder: Path) -> Family:
    if not folder.is_dir():
        raise UsageError(f"{folder}: no such family folder")
    manifest = folder / MANIFEST
    if not manifest.is_file():
        raise UsageError(f"{folder}: not a family folder (it has no {MANIFEST}; `gpuprof new-family NAME` "
                         "writes a starter)")
    return _parsed(manifest.resolve())


@cache
def _parsed(manifest: Path) -> Family:
    from gpuprof.variants import catalog

    family = catalog.parse_manifest(manifest)
    _check_python(family)
    return family


def _check_python(family: Family) -> None:
    """Refuse a folder without a reference before any work: the manifest's [op] table, a family.py
    with every hook, or a `host` module; each checked now, not at the first launch. A `host` module
    is found without importing it (the built-in ones import NumPy, which `list` and `--help` skip)."""
    if family.host_module is None:
        host_for(family)
        return
    manifest = family.directory / MANIFEST
    name = family.host_module
    _check_host_key(manifest, name, family.op is not None)
    try:
        found = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        found = None
    if found is None:
        raise InputError(f"{manifest}: 'host' names {name!r}, which cannot be imported")


def _check_host_key(manifest: Path, name: str, has_op: bool) -> None:
    """The manifest's `host`: a dotted module name, and not beside an [op] table."""
    if has_op:
        raise InputError(f"{manifest}: 'host' and [op] both say where the reference is; keep one")
    if not all(part.isidentifier() for part in name.split(".")):
        raise InputError(f"{manifest}: 'host' is {name!r}; name a Python module, e.g. \"gpuprof.families.vecadd\"")


def host_for(family: Family) -> FamilyHost:
    """The host side of `family`: its hooks, with the optional ones' defaults (FamilyHost)."""
    return FamilyHost(_module(family.directory.resolve(), family.host_module, family.op is not None))


@cache
def _module(folder: Path, host_module: str | None, has_op: bool) -> FamilyModule:
    manifest = folder / MANIFEST
    if host_module is not None:
        _check_host_key(manifest, host_module, has_op)
        return _import_named(manifest, host_module)
    python = folder / PYTHON_FILE
    own = _import_file(python) if python.is_file() else None
    if has_op:
        from gpuprof.families import op_host
        from gpuprof.variants import catalog

        return cast(FamilyModule, op_host.OpModule(catalog.parse_manifest(manifest), own))
    if own is None:
        raise InputError(f"{manifest}: the family has no reference: describe the op in an [op] table "
                         f"(inputs, output, reference) or write {PYTHON_FILE} beside it")
    missing = [hook for hook in REQUIRED_HOOKS if not hasattr(own, hook)]
    if missing:
        raise InputError(f"{python}: defines no {missing[0]} (a family.py without an [op] table provides "
                         f"{', '.join(REQUIRED_HOOKS)})")
    return cast(FamilyModule, own)


def _import_named(manifest: Path, name: str) -> FamilyModule:
    try:
        return cast(FamilyModule, importlib.import_module(name))
    except ModuleNotFoundError as exc:
        raise InputError(f"{manifest}: 'host' names {name!r}, which cannot be imported ({exc})") from None


def _import_file(python: Path) -> ModuleType:
    """A folder's family.py as a module of its own name (one per folder, so two folders never share one)."""
    digest = hashlib.sha256(str(python).encode("utf-8", "surrogateescape")).hexdigest()[:12]
    name = f"gpuprof_family_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, python)
    if spec is None or spec.loader is None:
        raise InputError(f"{python}: cannot be loaded as Python")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        del sys.modules[name]
        raise InputError(f"{python}:{exc.lineno}: {exc.msg}") from None
    except Exception as exc:  # noqa: BLE001 (the user's module: any error it raises is theirs, said in one line)
        del sys.modules[name]
        line = _user_line(exc, python)
        raise InputError(f"{python}{line}: importing it raised {type(exc).__name__}: {exc}") from None
    return module


def _user_line(exc: BaseException, python: Path) -> str:
    tb = exc.__traceback__
    line = ""
    while tb is not None:
        if Path(tb.tb_frame.f_code.co_filename) == python:
            line = f":{tb.tb_lineno}"
        tb = tb.tb_next
    return line
