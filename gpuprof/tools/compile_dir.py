"""A private folder for one compile. nvcc runs its steps (cicc, ptxas, the host compiler) through a
shell with the file and folder names it was given, so no name a user chose ever reaches it: the
source is copied under a plain name, each include folder is a link with a plain name, the output
is written inside, and the compiler's messages are mapped back to the user's names."""

from __future__ import annotations

import errno
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from gpuprof.errors import EnvironmentProblem
from gpuprof.files import read_source
from gpuprof.tools.include_check import MAX_SOURCE_BYTES, check_includes

PLAIN = re.compile(r"[A-Za-z0-9_.+/-]+")  # no character a shell reads as anything but a name


def environment_error(exc: OSError, where: str) -> EnvironmentProblem:
    """An OSError in the private folder: the machine's (a read-only or full TMPDIR), exit 3."""
    why = {errno.ENOSPC: "no space left", errno.EDQUOT: "disk quota exceeded",
           errno.EROFS: "a read-only file system", errno.EACCES: "permission denied"}.get(exc.errno or 0,
                                                                                         exc.strerror or str(exc))
    return EnvironmentProblem(f"cannot write the compiler's files in {where} ({why}); set TMPDIR to a writable "
                              "folder with free space")


def cached_build(target: Path, build: Callable[[Path], None]) -> Path:
    """`target` where a build already made it; else build(partial) writes a temporary file beside it,
    which is renamed into place (atomic: another process never loads a half-written library) and
    removed when the build fails. A cache folder that cannot be made is the environment's fault."""
    if target.is_file():
        return target
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise environment_error(exc, str(target.parent)) from None
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    try:
        build(partial)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return target


@contextmanager
def private_folder(prefix: str = "gpuprof-nvcc-") -> Iterator[Path]:
    """A new folder only this process uses, removed afterwards; EnvironmentProblem where TMPDIR
    cannot hold one or its path holds characters a shell would read."""
    where = tempfile.gettempdir()
    try:
        folder = Path(tempfile.mkdtemp(prefix=prefix))
    except OSError as exc:
        raise environment_error(exc, where) from None
    try:
        if not PLAIN.fullmatch(str(folder)):
            raise EnvironmentProblem(f"the temporary folder {where!r} holds characters nvcc's shell would read; "
                                     "set TMPDIR to a plain path such as /tmp")
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def compiler_env(folder: Path) -> dict[str, str]:
    """The environment a compiler runs in: its own temporary files in the private folder too (a
    plain, writable path, removed afterwards), whatever TMPDIR names."""
    return {**os.environ, "TMPDIR": str(folder)}


@dataclass
class Staged:
    """The plain-named copy of a source and links to its include folders, inside a private folder."""

    folder: Path
    source: Path
    includes: list[Path] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)  # private path -> the user's, for messages

    def link(self, folder: Path) -> Path:
        """A private link to the user's include folder `folder`."""
        link = self.folder / f"inc{len(self.includes)}"
        try:
            link.symlink_to(folder.resolve(), target_is_directory=True)
        except OSError as exc:
            raise environment_error(exc, str(self.folder.parent)) from None
        self.includes.append(link)
        self.names[str(link)] = str(folder.resolve())
        return link

    def user_text(self, text: str) -> str:
        """Compiler output with the private paths written as the user's (longest first)."""
        for private in sorted(self.names, key=len, reverse=True):
            text = text.replace(private, self.names[private])
        return text


def stage(folder: Path, source: Path, include_dirs: Sequence[Path] = (), shown: str | None = None) -> Staged:
    """Copy `source` (as read_source reads it: BOM dropped, CR line ends made LF, at most
    MAX_SOURCE_BYTES) into `folder`/src/source.cu, after refusing special files among its includes;
    `include_dirs` (default: the source's folder) become private links."""
    text = read_source(source, max_bytes=MAX_SOURCE_BYTES)
    dirs = list(include_dirs) or [source.parent]
    check_includes(source, text, dirs, shown)
    copy = folder / "src" / "source.cu"
    try:
        copy.parent.mkdir()
        copy.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise environment_error(exc, str(folder.parent)) from None
    staged = Staged(folder, copy, names={str(copy): shown or str(source)})
    for include in dirs:
        staged.link(include)
    return staged
