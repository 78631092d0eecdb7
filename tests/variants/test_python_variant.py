"""Python variants from any framework (`--add FILE.py[:FUNCTION]`, `language = "python"` in a
manifest) without a GPU: the entry point checked before any import, errors as one line with the
user's file:line, the stream made current for CuPy and PyTorch around every launch, and the
shipped examples' entry points. tests/gpu/test_python_variants_gpu.py runs them on a GPU."""

from __future__ import annotations

import sys
import textwrap
import types
from pathlib import Path
from typing import ClassVar, Self

import pytest
from typer.testing import CliRunner

from gpuprof import families
from gpuprof.cli import app
from gpuprof.errors import InputError, UsageError
from gpuprof.variants import catalog, launch_plan, python_variant
from gpuprof.variants.user import AddSpec, add_to_family, load_kernels_dir, parse_add

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "variants"
EXAMPLE_FILES = sorted(EXAMPLES.glob("*.py"))


@pytest.fixture(autouse=True)
def fresh_modules(monkeypatch):
    monkeypatch.setattr(python_variant, "_modules", {})


def write(tmp_path: Path, body: str, name: str = "mine.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


TOY = """\
    CALLS = []

    def make_launch(inputs, out, size):
        def launch(stream):
            CALLS.append((inputs["a"], size["n"], stream))
        return launch

    def other_entry(inputs, out, size, extra=None):
        return lambda stream: None
    """


def added(tmp_path: Path, text: str, family: str = "vecadd", **geometry) -> catalog.Variant:
    spec = parse_add(text, **geometry)
    _, extra = add_to_family(catalog.load_family(family), spec)
    (variant,) = extra
    return variant


def test_add_a_py_file_makes_a_python_variant_with_its_entry_point(tmp_path):
    write(tmp_path, TOY)
    v = added(tmp_path, str(tmp_path / "mine.py"))
    assert (v.name, v.language, v.entry, v.user, v.is_python, v.is_cuda) == ("mine", "python", "make_launch",
                                                                              True, True, False)
    other = added(tmp_path, f"{tmp_path / 'mine.py'}:other_entry")
    assert other.entry == "other_entry"
    assert AddSpec(tmp_path / "mine.py", "other_entry").cli_args() == ["--add", f"{tmp_path / 'mine.py'}:other_entry"]


def test_a_missing_entry_point_names_the_functions_found(tmp_path):
    write(tmp_path, TOY)
    with pytest.raises(UsageError) as info:
        added(tmp_path, f"{tmp_path / 'mine.py'}:launch_it")
    message = info.value.message
    assert "has no top-level function launch_it(inputs, out, size)" in message
    assert "found: make_launch, other_entry" in message and "\n" not in message


def test_an_entry_point_with_the_wrong_arguments_names_its_line(tmp_path):
    write(tmp_path, "import os\n\ndef make_launch(inputs, out):\n    pass\n")
    with pytest.raises(InputError) as info:
        added(tmp_path, str(tmp_path / "mine.py"))
    assert info.value.message.endswith("mine.py:3: make_launch takes (inputs, out); gpuprof calls it as "
                                       "make_launch(inputs, out, size)")


def test_a_syntax_error_is_found_before_any_import(tmp_path):
    write(tmp_path, "import no_such_framework\ndef make_launch(inputs, out, size)\n    pass\n")
    with pytest.raises(InputError, match=r"mine.py:2: not valid Python"):
        added(tmp_path, str(tmp_path / "mine.py"))


@pytest.mark.parametrize("option", ["block", "tile", "grid"])
def test_geometry_options_do_not_apply_to_a_python_variant(tmp_path, option):
    write(tmp_path, TOY)
    with pytest.raises(UsageError, match=f"--{option} does not apply to .*mine.py: a Python variant launches"):
        added(tmp_path, str(tmp_path / "mine.py"), **{option: "one" if option == "grid" else "16"})


def test_a_kernels_dir_manifest_takes_language_python_and_entry(tmp_path):
    write(tmp_path, TOY)
    (tmp_path / "vecadd.toml").write_text('[[variant]]\nname = "py"\nlanguage = "python"\nfile = "mine.py"\n'
                                          'entry = "other_entry"\ntechnique = "CuPy"\n')
    (variant,) = load_kernels_dir(tmp_path, catalog.load_family("vecadd"))
    assert (variant.language, variant.entry, variant.user) == ("python", "other_entry", True)
    (tmp_path / "vecadd.toml").write_text('[[variant]]\nname = "py"\nlanguage = "python"\nfile = "mine.py"\n'
                                          'entry = "gone"\ntechnique = "CuPy"\n')
    with pytest.raises(UsageError, match="has no top-level function gone"):
        load_kernels_dir(tmp_path, catalog.load_family("vecadd"))


@pytest.mark.parametrize(("table", "why"), [
    ('language = "python"\nfile = "mine.py"\nblock = [256]', "'block' does not apply to a Python variant"),
    ('language = "python"\nfile = "mine.cu"', "a Python variant is a .py file"),
    ('file = "mine.cu"\nkernel = "k"\nblock = [256]\nentry = "make_launch"', "'entry' applies to Python variants"),
])
def test_manifest_keys_that_do_not_fit_a_python_variant_are_refused(tmp_path, table, why):
    (tmp_path / "vecadd.toml").write_text(f'[[variant]]\nname = "py"\ntechnique = "t"\n{table}\n')
    with pytest.raises(InputError, match=why):
        load_kernels_dir(tmp_path, catalog.load_family("vecadd"))


def test_the_launch_runs_through_nvtx_ranges_and_the_file_is_imported_once(tmp_path, monkeypatch):
    write(tmp_path, TOY)
    v = added(tmp_path, str(tmp_path / "mine.py"))
    seen = []
    monkeypatch.setattr(launch_plan.ranges, "ranged", lambda launch, fam, name: seen.append((fam, name)) or launch)
    fam = catalog.load_family("vecadd").with_variants([v])
    for n in (1, 2):
        launch_plan.make_launch_factory(fam, v, families.host(fam))({"a": "A"}, None, {"n": n})("s")
    module = python_variant.load_module(v.file)
    assert module.CALLS == [("A", 1, "s"), ("A", 2, "s")] and seen == [("vecadd", "mine")] * 2


class FakeStream:
    """A CuPy-like stream: a context manager that makes itself current, with a handle."""

    current: ClassVar[list[FakeStream]] = []

    def __init__(self, ptr: int) -> None:
        self.ptr = ptr

    def __enter__(self) -> Self:
        FakeStream.current.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        FakeStream.current.pop()


def fake_torch(made: list[int], current: list[int]) -> types.ModuleType:
    """Just what current_stream uses of torch.cuda: is_available, ExternalStream, stream()."""
    from contextlib import contextmanager

    torch = types.ModuleType("torch")

    @contextmanager
    def stream(external):
        current.append(external)
        yield
        current.pop()

    def external_stream(ptr):
        made.append(ptr)
        return ptr

    torch.cuda = types.SimpleNamespace(is_available=lambda: True, ExternalStream=external_stream,  # type: ignore[attr-defined]
                                       stream=stream)
    return torch


def test_the_stream_is_current_for_cupy_and_torch_during_each_launch(tmp_path, monkeypatch):
    """A CuPy RawKernel call, a torch op, a load_inline extension and Triton use the current stream."""
    made: list[int] = []
    torch_current: list[int] = []
    monkeypatch.setitem(sys.modules, "torch", fake_torch(made, torch_current))
    write(tmp_path, """\
        SEEN = []

        def make_launch(inputs, out, size):
            def launch(stream):
                SEEN.append((out["cupy"][-1].ptr, out["torch"][-1]))
            return launch
        """)
    v = added(tmp_path, str(tmp_path / "mine.py"))
    state = {"cupy": FakeStream.current, "torch": torch_current}
    launch = python_variant.launch_factory(v)({}, state, {"n": 1})
    for ptr in (7, 7, 9):
        launch(FakeStream(ptr))
    assert python_variant.load_module(v.file).SEEN == [(7, 7), (7, 7), (9, 9)]
    assert made == [7, 9]  # one ExternalStream per handle, not one per launch
    assert FakeStream.current == [] and torch_current == []  # both restored after the launch


@pytest.mark.parametrize(("where", "line"), [("make_launch", 3), ("launch", 5)])
def test_an_exception_in_the_users_code_is_one_line_with_their_file_and_line(tmp_path, where, line):
    write(tmp_path, f"""\
        def make_launch(inputs, out, size):
            if {where == "make_launch"}:
                raise ValueError("bad size\\nmore")
            def launch(stream):
                raise KeyError("A")
            return launch
        """)
    v = added(tmp_path, str(tmp_path / "mine.py"))
    with pytest.raises(InputError) as info:
        python_variant.launch_factory(v)({}, None, {"n": 1})(FakeStream(1))
    kind = "ValueError: bad size" if where == "make_launch" else "KeyError: 'A'"
    assert info.value.message.endswith(f"mine.py:{line}: {where}() raised {kind}")


def test_a_missing_framework_is_an_environment_problem_the_runner_skips(tmp_path):
    write(tmp_path, "from numba_not_here import cuda\n\ndef make_launch(inputs, out, size):\n    pass\n")
    v = added(tmp_path, str(tmp_path / "mine.py"))
    fam = catalog.load_family("vecadd").with_variants([v])
    with pytest.raises(Exception) as info:
        launch_plan.make_launch_factory(fam, v, families.host(fam))
    assert getattr(info.value, "exit_code", None) == 3
    assert "needs the Python module 'numba_not_here', which is not installed" in str(info.value)


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.name)
def test_every_example_has_an_entry_point_gpuprof_accepts(path):
    family = path.stem.split("_")[0]
    _, extra = add_to_family(catalog.load_family(family), parse_add(str(path)))
    assert extra[0].language == "python" and extra[0].entry == "make_launch"
    assert f"gpuprof run {family} " in path.read_text()  # its docstring shows how to run it


def test_the_examples_cover_every_framework():
    text = "\n".join(p.read_text() for p in EXAMPLE_FILES)
    for marker in ("cp.RawKernel(", "cp.RawModule(", "load_inline(", "@cuda.jit", "@triton.jit"):
        assert marker in text


def test_build_names_a_python_file_as_not_built_here(tmp_path):
    path = write(tmp_path, TOY)
    result = CliRunner().invoke(app, ["build", "vecadd", "--add", str(path)])
    assert result.exit_code == 0, result.output
    assert "not built here (Triton and other Python variants compile at their first launch): vecadd/mine" \
        in " ".join(result.output.split())
    alone = CliRunner().invoke(app, ["build", "--add", str(path)])
    assert alone.exit_code == 0 and "mine.py" in alone.output
