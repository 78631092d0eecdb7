"""families/registry.py: a family is a folder; a name and a path to the same folder are one family;
a folder without a reference is refused before any work; nothing else looks a family up by name."""

from __future__ import annotations

import ast
import shutil
import textwrap
from pathlib import Path

import pytest

from gpuprof import families
from gpuprof.errors import InputError, UsageError
from gpuprof.families import registry
from gpuprof.variants import catalog

ROOT = Path(__file__).resolve().parents[2]

MANIFEST = """\
family = "{name}"
summary = "y = x + 1, FP32"
signature = "const float* x, float* y, int n"
baseline = "cuda"
dims = ["n"]
grid_dims = ["n"]
default_size = {{ n = 1024 }}
check_sizes = [{{ n = 1 }}, {{ n = 77 }}]
{extra}
[[variant]]
name = "cuda"
file = "k.cu"
kernel = "k"
technique = "one thread per element"
block = [128]
tile = [128]
"""

KERNEL = 'extern "C" __global__ void k(const float* x, float* y, int n) { int i = blockIdx.x * 128 + threadIdx.x; '\
         'if (i < n) y[i] = x[i] + 1.0f; }\n'


def folder(tmp_path: Path, name: str = "plus_one", extra: str = "", python: str | None = None) -> Path:
    path = tmp_path / name
    path.mkdir()
    (path / "family.toml").write_text(MANIFEST.format(name=name, extra=extra))
    (path / "k.cu").write_text(KERNEL)
    if python is not None:
        (path / "family.py").write_text(textwrap.dedent(python))
    return path


def test_a_builtin_name_and_its_folder_path_are_the_same_family():
    by_name = registry.resolve("vecadd")
    by_path = registry.resolve(str(catalog.kernels_root() / "vecadd"))
    assert by_path == by_name
    assert by_name.locator == "vecadd"  # children get the bare name for a built-in folder
    assert families.host(by_path).module is families.host(by_name).module


def test_a_relative_path_resolves_against_the_base(tmp_path):
    folder(tmp_path, python=HOOKS)
    fam = registry.resolve("plus_one/", base=tmp_path)
    assert fam.name == "plus_one" and fam.locator == str((tmp_path / "plus_one").resolve())
    assert registry.resolve(fam.locator) == fam  # what a child process gets finds the same family


def test_a_folder_without_a_reference_is_refused_before_any_work(tmp_path):
    path = folder(tmp_path)
    with pytest.raises(InputError, match="no reference"):
        registry.resolve(str(path))


def test_a_family_py_missing_a_hook_is_refused_naming_it(tmp_path):
    path = folder(tmp_path, python="RATE = 'bytes'\n")
    with pytest.raises(InputError) as info:
        registry.resolve(str(path))
    assert "family.py: defines no FORMULA" in info.value.message


def test_a_family_py_that_does_not_import_is_one_line_with_its_line(tmp_path):
    path = folder(tmp_path, python="RATE = 'bytes'\nraise RuntimeError('boom')\n")
    with pytest.raises(InputError) as info:
        registry.resolve(str(path))
    assert "family.py:2: importing it raised RuntimeError: boom" in info.value.message
    broken = folder(tmp_path, name="broken", python="def f(:\n")
    with pytest.raises(InputError, match=r"family.py:1: "):
        registry.resolve(str(broken))


def test_an_unknown_manifest_key_and_a_bad_host_are_named(tmp_path):
    with pytest.raises(InputError, match="'colour' is not a family key"):
        registry.resolve(str(folder(tmp_path, extra='colour = "red"')))
    with pytest.raises(InputError, match="'host' names 'no_such_module_xyz'"):
        registry.resolve(str(folder(tmp_path, name="bad_host", extra='host = "no_such_module_xyz"')))


def test_a_folder_that_is_no_family_folder_says_so(tmp_path):
    with pytest.raises(UsageError, match="not a family folder"):
        registry.resolve(str(tmp_path))


def test_a_copied_builtin_folder_is_its_own_family(tmp_path):
    copy = tmp_path / "vecadd"
    shutil.copytree(catalog.kernels_root() / "vecadd", copy)
    fam = registry.resolve(str(copy))
    assert fam.locator == str(copy.resolve()) and fam.variant_names == registry.resolve("vecadd").variant_names


HOOKS = """\
import numpy as np
RATE = "bytes"
FORMULA = "GB/s = 8 n / time"
def make_inputs(size, seed): return {"x": np.zeros(size["n"], np.float32)}
def make_output(size): return np.full(size["n"], np.nan, np.float32)
def kernel_args(inputs, out, size): return (inputs["x"], out, np.int32(size["n"]))
def reference(inputs, size): return inputs["x"].astype(np.float64) + 1
def vendor_launch(call, inputs, out, size): raise KeyError(call)
def flop(size): return float(size["n"])
def bytes_moved(size): return 8.0 * size["n"]
def tolerance(variant, size): return 1e-6
"""


def test_a_family_py_with_every_hook_is_the_host(tmp_path):
    fam = registry.resolve(str(folder(tmp_path, python=HOOKS)))
    host = families.host(fam)
    assert host.RATE == "bytes" and host.bytes_moved({"n": 4}) == 32.0


# Where a family may be looked up by name or path: the resolver itself (and catalog's thin
# delegates for tests and scripts, which product code never calls).
_LOOKUPS = {"load_family", "load_all", "family_names", "host_for", "import_module"}
_ALLOWED = {Path("gpuprof/families/registry.py"), Path("gpuprof/variants/catalog.py"),
            Path("gpuprof/families/__init__.py")}  # host(family): the public delegate to registry.host_for


def test_no_code_outside_the_resolver_looks_a_family_up():
    offenders = []
    for path in sorted((ROOT / "gpuprof").rglob("*.py")):
        relative = path.relative_to(ROOT)
        if relative in _ALLOWED:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
                if name in _LOOKUPS and not (name == "import_module" and _imports_no_family(node)):
                    offenders.append(f"{relative}:{node.lineno} {name}")
    assert offenders == []


def _imports_no_family(node: ast.Call) -> bool:
    """importlib.import_module of something that is not a family module (a library probe)."""
    text = ast.unparse(node)
    return "families" not in text


def test_list_and_build_take_a_folder_path_as_they_take_a_name(tmp_path):
    from typer.testing import CliRunner

    from gpuprof.cli import app

    runner = CliRunner()
    by_name = runner.invoke(app, ["list", "vecadd", "--json", "-"])
    by_path = runner.invoke(app, ["list", str(catalog.kernels_root() / "vecadd"), "--json", "-"])
    assert by_name.exit_code == 0 and by_path.exit_code == 0
    assert by_name.stdout == by_path.stdout


def test_build_takes_a_folder_path_as_it_takes_a_name():
    import shutil as _shutil

    if _shutil.which("nvcc") is None:
        pytest.skip("needs nvcc")
    from typer.testing import CliRunner

    from gpuprof.cli import app

    runner = CliRunner()
    by_name = runner.invoke(app, ["build", "vecadd", "-v", "grid,vectorized", "--json", "-"])
    by_path = runner.invoke(app, ["build", str(catalog.kernels_root() / "vecadd"), "-v", "grid,vectorized",
                                  "--json", "-"])
    assert by_name.exit_code == 0 and by_path.exit_code == 0, by_name.output + by_path.output
    assert by_name.stdout == by_path.stdout


@pytest.mark.parametrize(("extra", "python", "words"), [
    ('colour = "red"', HOOKS, ["family.toml", "'colour' is not a family key"]),
    ("", None, ["family.toml", "no reference"]),
    ('[op]\ninputs = 3', None, ["family.toml", "'op.inputs'"]),
])
def test_a_bad_folder_is_exit_2_with_one_line_naming_the_file_and_key(tmp_path, extra, python, words):
    import subprocess
    import sys

    path = folder(tmp_path, extra=extra, python=python)
    done = subprocess.run([sys.executable, "-m", "gpuprof", "list", str(path)], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and all(w in lines[0] for w in words), lines
    assert "Traceback" not in done.stderr
