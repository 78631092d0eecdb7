"""Where a command's JSON goes (--json FILE or '-'), and the console its human view goes to."""

from __future__ import annotations

import dataclasses
import json
from array import array
from pathlib import Path
from typing import Any

import typer
from rich.console import Console


def to_json(data: Any) -> str:
    def default(value: Any) -> Any:
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return _string_keys(dataclasses.asdict(value))
        if isinstance(value, Path):
            return str(value)
        if isinstance(value, (set, frozenset, tuple)):
            return list(value)
        if isinstance(value, array):  # results.Samples of a loaded file
            return value.tolist()
        return str(value)

    return json.dumps(data, indent=1, default=default, allow_nan=True)


def _string_keys(value: Any) -> Any:
    """JSON object keys must be strings: a tuple key such as a (file, line) place becomes
    "file:line"; nested dicts and lists are walked."""
    if isinstance(value, dict):
        return {(":".join(map(str, k)) if isinstance(k, tuple) else k): _string_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_string_keys(v) for v in value]
    return value


def write_json(data: Any, target: Path | str | None) -> None:
    """'-': stdout; a path: written atomically; None: nothing."""
    if target is None:
        return
    if str(target) == "-":
        typer.echo(to_json(data))
        return
    from gpuprof.files import atomic_write_text

    atomic_write_text(Path(target), to_json(data) + "\n")


def human_console(json_target: Path | str | None) -> Console:
    """The table goes to stdout, unless stdout carries the JSON ('--json -'): then to stderr."""
    from gpuprof.render.console import make_console

    return make_console(stderr=str(json_target) == "-")


def command_line(ctx: typer.Context) -> str:
    """The command as the user could type it again, rebuilt from the parsed options (sys.argv is
    someone else's under a test runner or a notebook)."""
    import shlex

    words = ["gpuprof", ctx.info_name or ""]
    for param in ctx.command.params:
        value = ctx.params.get(param.name)
        if value is None or value == param.default or value is False or param.name == "variant_options":
            continue
        if not getattr(param, "opts", None) or param.param_type_name == "argument":
            words += [str(v) for v in (value if isinstance(value, (list, tuple)) else [value])]
            continue
        flag = max(param.opts, key=len)
        for one in value if isinstance(value, (list, tuple)) else [value]:
            words += [flag] if one is True else [flag, str(one)]
    return shlex.join(w for w in words if w)
