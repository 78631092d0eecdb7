"""The Typer application object that every command module registers on, with one-line errors."""

from __future__ import annotations

import errno
import inspect
import os
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from typer import Abort, echo
from typer.core import TyperCommand, TyperGroup, TyperOption

from gpuprof.cli._boundary import ClickException, NoArgsIsHelpError, report, stopped_message
from gpuprof.errors import EnvironmentProblem, GpuprofError, Interrupted, Terminated, UsageError

try:  # Typer >= 0.29 vendors Click as typer._click; older ones use click itself
    from typer._click.core import ParameterSource
except ImportError:  # pragma: no cover
    from click.core import ParameterSource  # type: ignore[no-redef]


class OneLineErrors(TyperGroup):
    """Every error, Click's usage errors included, becomes one stderr line and its exit code
    (no Rich panels: the README promises one line)."""

    finished = False  # the command has ended and said so: a signal after it changes nothing (__main__.py)

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, windows_expand_args: bool = True, **extra: Any) -> Any:
        from gpuprof.files import WRITTEN

        WRITTEN.clear()  # what an interrupted command wrote is this command's (CliRunner runs many in one process)
        try:
            result = super().main(args, prog_name, complete_var, standalone_mode=False,
                                  windows_expand_args=windows_expand_args, **extra)
            code = result if isinstance(result, int) else 0
        except NoArgsIsHelpError as exc:
            echo(exc.ctx.get_help())
            code = 0
        except (GpuprofError, ClickException, Abort, KeyboardInterrupt) as exc:
            code = report(exc)
        except OSError as exc:
            if exc.filename is not None:
                code = report(_os_error(exc))
            elif exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EPIPE):
                code = _stdout_failed(exc)
            else:  # an OSError naming no file: the machine's (an I/O error, too many open files)
                code = report(EnvironmentProblem(f"{exc.strerror or exc}"))
        if standalone_mode:
            code = _flush_stdout(code)
            OneLineErrors.finished = True
            sys.exit(code)
        return code

    def invoke(self, ctx: Any) -> Any:
        """A reader that closed the pipe (`gpuprof list | true`, `| head`) ends the command quietly
        with exit 0: Typer would turn it into exit 1 with no word."""
        try:
            return super().invoke(ctx)
        except OSError as exc:
            if exc.errno != errno.EPIPE:
                raise
            _stdout_failed(exc)
            raise typer.Exit() from None  # exit 0: the reader has what it wanted
        except KeyboardInterrupt as exc:
            raise _stopped(exc) from None

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().make_context(*args, **kwargs)
        except KeyboardInterrupt as exc:
            raise _stopped(exc) from None

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if "--version" in args and len(args) > 1:
            before = args[:args.index("--version")]
            if all(word.startswith("-") for word in before):
                others = [word for word in args if word != "--version"]
                raise UsageError(f"--version takes nothing else; leave out {' '.join(others)}")
        return super().parse_args(ctx, args)


def _stopped(exc: KeyboardInterrupt) -> Interrupted:
    """Ctrl-C or SIGTERM that no command caught (exit_on_error names what it saved): one line and
    exit 130 or 143, where Typer would exit 130 without a word, even for SIGTERM."""
    return Interrupted(stopped_message(exc), terminated=isinstance(exc, Terminated))


def _stdout_failed(exc: OSError) -> int:
    """stdout on a full disk, or closed by the reader (`| head`): one line, never a traceback."""
    try:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (the interpreter's own flush at exit must not fail again)
    except OSError:
        pass
    if exc.errno == errno.EPIPE:
        return 0  # the reader has what it wanted
    where = exc.filename or "to stdout"  # an OSError without a file name here is a print's
    return report(EnvironmentProblem(f"cannot write {where}: no space left on device"))


# An OSError on a path the user gave (a long name, a loop, a read-only folder) is the user's (exit 2);
# any other (a full disk, an I/O error, too many open files) is the machine's (exit 3).
_PATH_ERRORS = {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENAMETOOLONG, errno.ELOOP, errno.ENOTDIR,
                errno.EISDIR, errno.ENOENT, errno.EEXIST, errno.ENXIO, errno.ETXTBSY}


def _os_error(exc: OSError) -> GpuprofError:
    """An OSError that reached the boundary with a file name: one line naming the file, never a traceback."""
    from gpuprof.errors import InputError

    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return EnvironmentProblem(f"cannot write {exc.filename}: no space left on device")
    words = exc.strerror or str(exc)
    if exc.errno in _PATH_ERRORS:
        return InputError(f"{exc.filename}: {words[:1].lower()}{words[1:]}")
    return EnvironmentProblem(f"{exc.filename}: {words[:1].lower()}{words[1:]}")


def _flush_stdout(code: int) -> int:
    """What stdout still buffers goes out before exit, so a full disk is reported here as one line."""
    try:
        sys.stdout.flush()
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EPIPE):
            raise
        return _stdout_failed(exc) or code
    except ValueError:  # stdout already closed
        pass
    return code


def _single_valued(param: Any) -> bool:
    return (isinstance(param, TyperOption) and not param.multiple and not param.count and not param.is_flag
            and param.nargs == 1)


class GpuprofCommand(TyperCommand):
    """Every command: a single-valued option given twice is refused (Click keeps the last silently),
    and before the body runs, every option given must apply in the command line's mode and every
    number be in its range (cli/_applies.py)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        try:
            _, _, order = self.make_parser(ctx).parse_args(args=list(args))
        except ClickException:
            order = []  # the real parse below says what is wrong
        repeated = [name for name, n in Counter(p.name for p in order if _single_valued(p)).items() if n > 1]
        if repeated:
            param = next(p for p in self.params if p.name == repeated[0])
            from gpuprof.cli._applies import option_name

            raise UsageError(f"{option_name(param)} given more than once; give it once")
        return super().parse_args(ctx, args)

    def invoke(self, ctx: Any) -> Any:
        from gpuprof.cli._applies import check_options, option_name

        sources = (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)
        given = {name for name in ctx.params if ctx.get_parameter_source(name) in sources}
        names = {p.name: option_name(p) for p in self.params if p.name}
        check_options(self.name or "", ctx.params, given, ctx.meta.get(COMMAND_KEY, ()), names)
        return super().invoke(ctx)


def _plain_strings_skip_pydantic() -> None:
    """Typer 0.29 coerces every option through a pydantic TypeAdapter, and importing pydantic is a
    third of `gpuprof list`'s start. A str or bool option (no parser, not a file) whose value arrives
    as a str or bool already is passed through; any other value or type takes Typer's own path.
    Older Typers (no `typer._coercion`, e.g. the one beside PyTorch on the GPU machine) coerce
    through click alone and are left as they are."""
    try:
        from typer import _coercion, core
    except ImportError:
        return

    parameter = getattr(core, "_TyperParameter", None)
    base = getattr(_coercion, "RuntimeParam", None)
    if parameter is None or base is None or not hasattr(parameter, "get_runtime_param"):
        return  # another Typer: its own coercion, unchanged

    class Plain(base):  # type: ignore[misc, valid-type]
        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            if type(value) is self.annotation:
                return value
            return _coercion.build_runtime_param(param.type_descriptor)._coerce_value(value, param=param, ctx=ctx)

    typer_runtime_param = parameter.get_runtime_param

    def get_runtime_param(self: Any) -> Any:
        d = getattr(self, "type_descriptor", None)
        if (self._runtime_param is None and d is not None and d.annotation in (str, bool)
                and d.file_annotation is None and getattr(d.parameter_info, "parser", None) is None):
            self._runtime_param = Plain(parameter_info=d.parameter_info, annotation=d.annotation)
        return typer_runtime_param(self)

    parameter.get_runtime_param = get_runtime_param


_plain_strings_skip_pydantic()


def _flags_show_no_type_in_help() -> None:
    """Typer 0.29 prints `<bool>` beside every plain flag (--force <bool>): a flag takes no value. Other
    Typer versions (the H100's image has an older one) lack the hook and print no such thing."""
    rich_type = getattr(TyperOption, "display_type_rich", None)
    if rich_type is None:
        return

    def display_type_rich(self: TyperOption, ctx: Any) -> str | None:
        return None if self.is_flag else rich_type(self, ctx)

    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


_flags_show_no_type_in_help()


def reflowed(doc: str) -> str:
    """A command's docstring as help: each prose paragraph one line, so the terminal wraps it at its
    own width (Rich keeps a docstring's line breaks, and source lines of ~100 columns broke at 80
    into ragged halves). Indented blocks (examples) and lists keep their lines."""
    paragraphs = inspect.cleandoc(doc).split("\n\n")

    def prose(lines: list[str]) -> bool:
        return not any(line.startswith((" ", "-", "*", "•")) or line[:2].rstrip(".").isdigit() for line in lines)

    def joined(lines: list[str]) -> str:  # a line ending in ':' ("Examples:") still ends its line
        return "".join(line + ("\n" if line.endswith(":") else " ") for line in lines).rstrip()

    out = [joined(p.split("\n")) if prose(p.split("\n")) else p for p in paragraphs]
    # Typer dedents all but the summary with inspect.cleandoc, which leaves the first line out of the
    # margin: with "Examples:" first, the examples lost their indent. A blank first line keeps it.
    return "\n\n".join(out[:1] + ["\n" + out[1]] + out[2:]) if len(out) > 1 else out[0]


class _Typer(typer.Typer):
    """Every command is a GpuprofCommand unless it names a subclass of its own; its docstring is
    reflowed for the terminal (reflowed)."""

    def command(self, name: str | None = None, *, cls: type[TyperCommand] | None = None,
                **kwargs: Any) -> Callable[[Any], Any]:
        register = super().command

        def decorator(f: Callable[..., Any]) -> Callable[..., Any]:
            help_text = kwargs.get("help") or (reflowed(f.__doc__) if f.__doc__ else None)
            return register(name, cls=cls or GpuprofCommand, **{**kwargs, "help": help_text})(f)

        return decorator


COMMAND_KEY = "gpuprof.command"


class CommandAfterDashes(GpuprofCommand):
    """Everything after the first `--` is a program to run under a tool, verbatim (its own options
    included): ctx.meta[COMMAND_KEY]. Before `--`, only gpuprof's own options and arguments."""

    def parse_args(self, ctx, args):
        if "--" in args:
            cut = args.index("--")
            ctx.meta[COMMAND_KEY] = tuple(args[cut + 1:])
            args = args[:cut]
        return super().parse_args(ctx, args)

    def collect_usage_pieces(self, ctx):
        return [*super().collect_usage_pieces(ctx), "[-- COMMAND [ARGS]...]"]


def _version(value: bool) -> None:
    if value:
        import gpuprof

        echo(f"gpuprof {gpuprof.__version__}")
        raise typer.Exit()


app = _Typer(
    name="gpuprof",
    cls=OneLineErrors,
    help=(
        "Check, time, profile and sanitize CUDA kernel variants.\n\n"
        "Examples:\n\n"
        "  gpuprof list\n\n"
        "  gpuprof run matmul --variants naive,smem_tiled,cublas\n\n"
        "  gpuprof run vecadd --json results.json\n\n"
        "  gpuprof run ./my_ops/gelu          (a family folder: gpuprof new-family gelu)\n\n"
        "  gpuprof --families-dir my_ops run gelu\n\n"
        "  gpuprof build matmul --arch sm_90\n\n"
        "  gpuprof compare base.json new.json --markdown summary.md"
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
    rich_markup_mode="rich",
    context_settings={"help_option_names": ["-h", "--help"]},
)


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", is_eager=True, callback=_version,
                                                 help="Print gpuprof's version and exit.")] = False,
          families_dir: Annotated[str | None, typer.Option(
              "--families-dir", metavar="DIR",
              help="A folder of family folders: each DIR/NAME/family.toml is family NAME for every command "
                   "(several: DIR1:DIR2; also GPUPROF_FAMILIES_DIR). A path to one family folder works "
                   "anywhere a family name does.")] = None) -> None:
    from gpuprof.families import registry

    for directory in (families_dir or "").split(os.pathsep):
        if directory:
            registry.add_families_dir(Path(directory))


def command_after_dashes(ctx: typer.Context) -> tuple[str, ...]:
    """The program given after `--` (empty when none)."""
    return ctx.meta.get(COMMAND_KEY, ())
