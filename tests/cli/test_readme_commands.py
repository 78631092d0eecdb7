"""The README's command table lists every command `gpuprof --help` lists (and no other), and its
profiling walkthrough names only commands that exist, each with a place for its real output."""

from __future__ import annotations

import re
from pathlib import Path

import typer

from gpuprof.cli import app

README = Path(__file__).resolve().parents[2] / "README.md"


def listed_commands() -> set[str]:
    """The commands `gpuprof --help` shows (hidden ones are not listed there)."""
    group = typer.main.get_command(app)
    return {name for name, command in group.commands.items() if not command.hidden}  # type: ignore[attr-defined]


def table_commands() -> set[str]:
    """`gpuprof NAME` at the start of each row of the README's command table."""
    text = README.read_text(encoding="utf-8")
    table = text.split("Commands (`gpuprof COMMAND --help`", 1)[1].split("\n\n", 2)[1]
    return {m.group(1) for m in re.finditer(r"^\| `gpuprof ([\w-]+)", table, re.MULTILINE)}


def test_every_command_of_the_help_is_in_the_readme_table():
    listed, table = listed_commands(), table_commands()
    assert "profile" in listed
    assert listed - table == set(), f"add a row to the README's command table for: {sorted(listed - table)}"
    assert table - listed == set(), f"the README's command table names commands gpuprof lacks: {sorted(table - listed)}"


def test_the_walkthrough_runs_real_commands_and_leaves_a_place_for_each_output():
    text = README.read_text(encoding="utf-8")
    walkthrough = text.split("## Profiling walkthrough", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"^gpuprof .+$", walkthrough, re.MULTILINE)
    assert len(commands) >= 4 and any("examples/mlp.py" in c for c in commands)
    assert {c.split()[1] for c in commands} <= listed_commands()
    for command in commands:  # its output pasted from a GPU run (a text block starting `$ COMMAND`), or its placeholder
        assert f"<!-- output: {command} -->" in walkthrough or f"$ {command}\n" in walkthrough, command
