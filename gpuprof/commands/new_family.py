"""`gpuprof new-family`'s core: a starter family folder (manifest with an [op] table, family.py, a
CUDA and a Triton variant, README.md) from the templates in gpuprof/templates/new_family/."""

from __future__ import annotations

from pathlib import Path
from string import Template

from gpuprof.errors import InputError, UsageError

TEMPLATES = Path(__file__).resolve().parents[1] / "templates" / "new_family"
MAX_NAME = 64  # a family name is a table title, a folder and a kernel-name prefix, not an essay


def files_for(name: str) -> dict[str, str]:
    """The folder's file names -> their template; kernel and function names start with NAME."""
    return {"family.toml": "family.toml.tmpl", "family.py": "family.py.tmpl", f"{name}.cu": "kernel.cu.tmpl",
            f"{name}_triton.py": "triton.py.tmpl", "README.md": "README.md.tmpl"}


def render(template: str, name: str) -> str:
    return Template((TEMPLATES / template).read_text(encoding="utf-8")).substitute(name=name)


def check_name(name: str) -> None:
    if not name.isidentifier() or len(name) > MAX_NAME:
        raise UsageError(f"'{name[:40]}' cannot name a family: use up to {MAX_NAME} letters, digits and _, "
                         "not starting with a digit (e.g. square_plus)")


def write_family(name: str, directory: Path) -> Path:
    """DIRECTORY/NAME/ with the starter's files; never over an existing folder or file."""
    check_name(name)
    if not directory.is_dir():
        raise UsageError(f"--dir {directory}: no such directory")
    folder = directory / name
    texts = {file: render(template, name) for file, template in files_for(name).items()}  # all before any write
    try:
        folder.mkdir()  # not exist_ok: the one check that cannot race with another writer
    except FileExistsError:
        raise UsageError(f"{folder} exists already; gpuprof new-family never overwrites") from None
    except OSError as exc:
        raise InputError(f"cannot make {folder}: {exc.strerror or exc}") from None
    for file, text in texts.items():
        try:
            with (folder / file).open("x", encoding="utf-8") as handle:
                handle.write(text)
        except OSError as exc:
            raise InputError(f"cannot write {folder / file}: {exc.strerror or exc}") from None
    return folder
