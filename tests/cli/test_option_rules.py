"""Every option applies or is refused (issue 27): the option table names real options, every number
option has a range, a repeated single-valued option is refused, and flags show no type in --help."""

from __future__ import annotations

import typer

from gpuprof.cli import app
from gpuprof.cli._applies import APPLIES, RANGES


def _commands():
    return typer.main.get_command(app).commands  # type: ignore[attr-defined]


def test_the_option_table_names_real_options_and_modes():
    commands = _commands()
    for name, modes in APPLIES.items():
        params = {p.name for p in commands[name].params}
        assert set(modes.only) <= params, (name, set(modes.only) - params)
        for allowed in modes.only.values():
            assert allowed and allowed <= set(modes.modes), name


def test_every_number_option_of_every_command_has_a_range():
    for name, command in _commands().items():
        for param in command.params:
            kind = getattr(getattr(param, "type_descriptor", None), "annotation", None)
            if param.param_type_name == "option" and kind in (int, float):
                assert param.name in RANGES, f"{name} {param.opts}: add its range to cli/_applies.RANGES"


def test_a_repeated_single_valued_option_is_refused_naming_it(runner):
    result = runner.invoke(app, ["run", "vecadd", "--kernels-dir", "a", "--kernels-dir", "b"])
    assert result.exit_code == 2 and result.stderr == "error: --kernels-dir given more than once; give it once\n"


def test_repeatable_options_still_accumulate(runner):
    result = runner.invoke(app, ["build", "matmul", "-v", "naive", "-D", "BM=64", "-D", "BM=64", "--json", "-",
                                 "--arch", "sm_999"])
    assert "given more than once" not in result.output and "given twice" not in result.output


def test_an_option_where_it_does_not_apply_is_named(runner):
    result = runner.invoke(app, ["nsys", "--import", "x.sqlite", "--timeout", "-1"])
    assert result.exit_code == 2
    assert result.stderr.startswith("error: --timeout does not apply with --import")


def test_not_finite_numbers_are_refused_with_the_option_name(runner):
    result = runner.invoke(app, ["run", "vecadd", "--max-time", "inf"])
    assert result.exit_code == 2 and result.stderr == "error: --max-time inf: give a finite number\n"


def test_help_shows_no_bool_placeholder(runner):
    for name in _commands():
        result = runner.invoke(app, [name, "--help"])
        assert result.exit_code == 0 and "<bool>" not in result.output, name


def test_no_blank_line_before_the_error_when_stderr_is_no_terminal(runner):
    for argv in (["run", "vecadd"], ["sanitize", "vecadd"]):
        result = runner.invoke(app, argv)
        assert result.exit_code == 3 and result.stderr.startswith("error: "), repr(result.stderr[:80])


def test_columns_zero_falls_back_to_a_default_width():
    from typer.testing import CliRunner

    result = CliRunner(env={"COLUMNS": "0"}).invoke(app, ["list", "vecadd"])
    assert result.exit_code == 0 and "one_thread" in result.stdout
    narrow = CliRunner(env={"COLUMNS": "20"}).invoke(app, ["list", "vecadd"])
    assert narrow.exit_code == 0 and "…" not in narrow.stdout


def test_help_prose_wraps_at_the_terminal_not_at_the_source_lines():
    """Docstring lines of ~100 columns used to break at 80 into a long line and a stub ("...your own
    kernels first (your" / "binary's, ..."); prose paragraphs are one line now, examples keep theirs."""
    from gpuprof.cli._app import reflowed

    doc = """Summary line.

    Runs the program twice: under nsys to find
    the kernels, then under Nsight Compute. Exit codes:
    0 all clean, 1 findings.

    Examples:

      gpuprof profile -- python mlp.py
      gpuprof profile --top 3 -- ./prog

    - a list item
    - another
    """
    assert reflowed(doc).split("\n\n") == [
        "Summary line.",
        ("\nRuns the program twice: under nsys to find the kernels, then under Nsight Compute. Exit codes:\n"
         "0 all clean, 1 findings."),  # the blank first line keeps Typer's dedent off the examples
        "Examples:",
        "  gpuprof profile -- python mlp.py\n  gpuprof profile --top 3 -- ./prog",
        "- a list item\n- another"]


def test_profile_help_has_no_stub_lines_at_80_columns(runner):
    result = runner.invoke(app, ["profile", "--help"], env={"COLUMNS": "80"})
    lines = [line.strip(" │") for line in result.output.splitlines()]
    assert "your own kernels first (your binary's" not in "\n".join(lines)  # one line would hold it all
    assert not any(line.endswith("kernels first (your") and len(line) < 40 for line in lines), lines
    assert "kernels first (your binary's" in " ".join(lines)


def test_examples_keep_their_indent_when_they_follow_the_summary(runner):
    """Typer dedents the help after its summary, leaving that text's first line out of the margin:
    where "Examples:" came first (run, merge, report) the examples lost their indent."""
    for command in ("run", "merge", "report", "profile"):
        lines = runner.invoke(app, [command, "--help"], env={"COLUMNS": "100"}).output.splitlines()
        examples = [line for line in lines if line.strip().startswith(f"gpuprof {command}")]
        assert examples and all(line.startswith("   gpuprof") for line in examples), (command, examples)
