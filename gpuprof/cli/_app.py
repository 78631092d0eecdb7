"""The Typer application object that every command module registers on, with one-line errors."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Annotated, Any

import typer
from typer import Abort, echo
from typer.core import TyperCommand, TyperGroup

from gpuprof.cli._boundary import ClickException, NoArgsIsHelpError, report
from gpuprof.errors import GpuprofError


class OneLineErrors(TyperGroup):
    """Every error, Click's usage errors included, becomes one stderr line and its exit code
    (no Rich panels: the README promises one line)."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, windows_expand_args: bool = True, **extra: Any) -> Any:
        try:
            result = super().main(args, prog_name, complete_var, standalone_mode=False,
                                  windows_expand_args=windows_expand_args, **extra)
            code = result if isinstance(result, int) else 0
        except NoArgsIsHelpError as exc:
            echo(exc.ctx.get_help())
            code = 0
        except (GpuprofError, ClickException, Abort, KeyboardInterrupt) as exc:
            code = report(exc)
        if standalone_mode:
            sys.exit(code)
        return code


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
COMMAND_KEY = "gpuprof.command"


class CommandAfterDashes(TyperCommand):
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


app = typer.Typer(
    name="gpuprof",
    cls=OneLineErrors,
    help=(
        "Check, time, profile and sanitize CUDA kernel variants.\n\n"
        "Examples:\n\n"
        "  gpuprof list\n\n"
        "  gpuprof run matmul --variants naive,smem_tiled,cublas\n\n"
        "  gpuprof run vecadd --json results.json\n\n"
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
                                                 help="Print gpuprof's version and exit.")] = False) -> None:
    pass


def command_after_dashes(ctx: typer.Context) -> tuple[str, ...]:
    """The program given after `--` (empty when none)."""
    return ctx.meta.get(COMMAND_KEY, ())
