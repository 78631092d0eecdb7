"""`gpuprof new` writes a starter that compiles and that `--add` accepts, and never overwrites."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from typer.testing import CliRunner

from gpuprof.cli import app
from gpuprof.variants import catalog
from gpuprof.variants.user import AddSpec, to_variant


@pytest.mark.parametrize("family", catalog.family_names())
def test_starter_has_the_family_signature_and_compiles(tmp_path, family):
    result = CliRunner().invoke(app, ["new", family, "mine", "--dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    path = tmp_path / "mine.cu"
    fam = catalog.load_family(family)
    variant = to_variant(fam, AddSpec(path))  # the signature check --add does before any launch
    assert variant.kernel == f"{family}_mine" and variant.name == "mine"
    assert path.read_text().startswith(f"// {family} / mine\n")
    if shutil.which("nvcc"):
        done = subprocess.run(["nvcc", "-arch=sm_90", "-cubin", "-o", str(tmp_path / "mine.cubin"), str(path)],
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("args, words", [
    (["new", "vecadd", "grid"], "already has a variant 'grid'"),
    (["new", "vecadd", "my-kernel"], "cannot name a variant"),
    (["new", "nosuch", "mine"], "unknown family 'nosuch'"),
    (["new", "vecadd", "mine", "--dir", "/nonexistent/dir"], "no such directory"),
])
def test_new_refuses_bad_names_with_one_line(args, words):
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert words in result.output and "Traceback" not in result.output


def test_new_never_overwrites(tmp_path):
    (tmp_path / "mine.cu").write_text("// my work\n")
    result = CliRunner().invoke(app, ["new", "vecadd", "mine", "--dir", str(tmp_path)])
    assert result.exit_code == 2 and "never overwrites" in result.output
    assert (tmp_path / "mine.cu").read_text() == "// my work\n"
