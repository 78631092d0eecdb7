"""`gpuprof new-family NAME` writes a folder that loads (registry and OpModule), lists and builds;
it refuses a bad name and an existing folder with one line and exit 2, and never overwrites."""

from __future__ import annotations

import ast
import json
import re

import numpy as np
import pytest
from typer.testing import CliRunner

from gpuprof.cli import app
from gpuprof.commands.new_family import TEMPLATES, files_for
from gpuprof.families import op_host, registry
from gpuprof.variants import catalog
from gpuprof.variants.python_variant import entry_point_line

runner = CliRunner()


@pytest.fixture
def starter(tmp_path):
    result = runner.invoke(app, ["new-family", "square_plus", "--dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "gpuprof run" in result.stdout
    return tmp_path / "square_plus"


def test_the_folder_holds_every_file_named_after_the_family(starter):
    assert sorted(p.name for p in starter.iterdir()) == sorted(files_for("square_plus"))
    assert "square_plus_cuda(" in (starter / "square_plus.cu").read_text()
    assert "def square_plus_kernel(" in (starter / "square_plus_triton.py").read_text()
    assert not any("$" in p.read_text() for p in starter.iterdir() if p.suffix != ".md")  # every template filled


def test_the_folder_loads_through_the_registry_with_an_op_module(starter):
    family = registry.resolve(starter)
    assert family.name == "square_plus" and family.variant_names == ["cuda", "triton", "torch"]
    assert family.baseline == "cuda" and family.vendor_reference == "torch"
    assert family.default_size == {"n": 2**24}
    assert family.check_sizes == ({"n": 1}, {"n": 4097}, {"n": 1000003})
    module = registry.host_for(family).module
    assert isinstance(module, op_host.OpModule)
    assert module.flop({"n": 10}) == 30 and module.bytes_moved({"n": 10}) == 80 and module.RATE == "bytes"
    x, y = np.ones(4, np.float32), np.zeros(4, np.float32)
    assert module.kernel_args({"x": x}, y, {"n": 4})[2] == 4
    assert family.locator == str(starter.resolve())  # what a worker or a profiler's child is told


def test_the_starter_reference_and_python_variant_have_the_expected_shape(starter):
    namespace: dict = {}
    exec(compile((starter / "family.py").read_text(), "family.py", "exec"), namespace)  # noqa: S102 (our template)
    x = np.linspace(-3, 3, 11)
    np.testing.assert_array_equal(namespace["reference"](x), x * x + x + 1)
    triton_file = starter / "square_plus_triton.py"
    assert entry_point_line(triton_file, triton_file.read_text(), "make_launch") > 0
    ast.parse((starter / "family.py").read_text())


def test_list_shows_the_folder(starter):
    result = runner.invoke(app, ["list", str(starter), "--json", "-"])
    assert result.exit_code == 0, result.output
    (family,) = json.loads(result.stdout)["families"]
    assert family["family"] == "square_plus" and [v["name"] for v in family["variants"]] == ["cuda", "triton", "torch"]


@pytest.mark.nvcc
def test_build_compiles_the_cuda_variant_for_sm_90(starter):
    result = runner.invoke(app, ["build", str(starter), "--arch", "sm_90", "--json", "-"])
    assert result.exit_code == 0, result.output
    (kernel,) = json.loads(result.stdout)["kernels"]
    assert kernel["variant"] == "cuda" and kernel["error"] is None and kernel["resources"]["registers"] > 0


def test_an_existing_folder_is_never_overwritten(starter):
    (starter / "family.py").write_text("# mine\n")
    result = runner.invoke(app, ["new-family", "square_plus", "--dir", str(starter.parent)])
    assert result.exit_code == 2
    assert result.stderr == f"error: {starter} exists already; gpuprof new-family never overwrites\n"
    assert (starter / "family.py").read_text() == "# mine\n"


@pytest.mark.parametrize("name", ["my-op", "1abc", "a b", "", "a" * 65])
def test_a_bad_name_is_one_line_and_writes_nothing(tmp_path, name):
    result = runner.invoke(app, ["new-family", name, "--dir", str(tmp_path)])
    assert result.exit_code == 2 and "cannot name a family" in result.stderr
    assert result.stderr.count("\n") == 1 and list(tmp_path.iterdir()) == []


def test_a_missing_dir_is_one_line(tmp_path):
    result = runner.invoke(app, ["new-family", "mine", "--dir", str(tmp_path / "nope")])
    assert result.exit_code == 2 and result.stderr == f"error: --dir {tmp_path / 'nope'}: no such directory\n"


def test_the_default_dir_is_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["new-family", "here"])
    assert result.exit_code == 0 and "gpuprof run ./here" in result.stdout
    assert catalog.parse_manifest(tmp_path / "here" / "family.toml").name == "here"


def test_the_starter_readme_explains_every_key_it_uses(starter):
    readme = (starter / "README.md").read_text()
    manifest = (starter / "family.toml").read_text()
    used = set(re.findall(r"^(\w+) = ", manifest, re.MULTILINE)) - {"name", "file", "kernel", "technique", "block",
                                                                      "tile", "language", "vendor", "call"}
    for key in used | set(op_host.OP_KEYS):
        assert f"| `{key}` |" in readme, key
    assert "gpuprof run ./square_plus" in readme and "gpuprof list ./square_plus" in readme


def test_the_templates_live_in_the_package():
    assert TEMPLATES.parent.parent.name == "gpuprof"
    assert sorted(p.name for p in TEMPLATES.iterdir()) == sorted(files_for("x").values())


def test_listing_an_op_folder_imports_no_heavy_library(starter):
    """An [op] folder's hooks import NumPy, CuPy and torch only when they make inputs or run the
    reference, so `gpuprof list FOLDER` starts as fast as `gpuprof list`."""
    import subprocess
    import sys
    from pathlib import Path

    from tests.cli.test_fast_start import HEAVY, PROBE

    argv = ["list", str(starter), "--json", "-"]
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(argv), json.dumps(HEAVY)], capture_output=True,
                          text=True, check=False, timeout=120, cwd=Path(__file__).resolve().parents[2])
    assert json.loads(done.stderr.strip().splitlines()[-1]) == []
    assert json.loads(done.stdout)["families"][0]["family"] == "square_plus"
