"""The wheel carries the kernels (as gpuprof/_kernels/) and the timing harness, so an installed
gpuprof finds the same catalogue as a checkout."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from gpuprof.variants import catalog

REPO = Path(__file__).resolve().parents[2]
KERNELS = REPO / "kernels"


@pytest.fixture(scope="module")
def wheel_names(tmp_path_factory) -> set[str]:
    pytest.importorskip("hatchling", reason="building the wheel needs hatchling (pip install hatchling)")
    out = tmp_path_factory.mktemp("wheel")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
         "-w", str(out), str(REPO)],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = out.glob("gpuprof-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        return set(zf.namelist())


def test_wheel_contains_every_manifest_and_kernel_source(wheel_names):
    shipped = sorted(KERNELS.glob("*/family.toml")) + sorted(KERNELS.glob("*/*.cu")) + sorted(KERNELS.glob("*/*.py"))
    shipped += sorted(KERNELS.glob("*/*.cuh"))  # shared headers the variants #include
    assert any(p.name.endswith(".cuh") for p in shipped)
    assert any(p.name.endswith(".cu") for p in shipped)
    assert any(p.name.endswith(".py") for p in shipped)  # the Triton variants
    for path in shipped:
        assert f"gpuprof/_kernels/{path.relative_to(KERNELS).as_posix()}" in wheel_names
    assert "gpuprof/_kernels/matmul/family.toml" in wheel_names
    assert "gpuprof/_kernels/vecadd/triton_vecadd.py" in wheel_names


def test_wheel_contains_every_variant_file_named_in_the_manifests(wheel_names):
    kernels = (REPO / "kernels").resolve()
    for fam in catalog.load_all():
        for v in fam.variants:
            if not v.vendor:  # .cu files and Triton .py files alike; gemm_fp16's are gemm_bf16's files
                assert f"gpuprof/_kernels/{v.file.resolve().relative_to(kernels).as_posix()}" in wheel_names


def test_wheel_contains_the_harness_and_the_package(wheel_names):
    assert "gpuprof/measure/harness.cu" in wheel_names
    package = sorted((REPO / "gpuprof").rglob("*.py"))
    for path in package:
        assert path.relative_to(REPO).as_posix() in wheel_names
    assert not any("__pycache__" in name for name in wheel_names)


def test_wheel_contains_the_new_family_templates(wheel_names):
    templates = sorted((REPO / "gpuprof" / "templates" / "new_family").glob("*.tmpl"))
    assert len(templates) == 5
    for path in templates:
        assert path.relative_to(REPO).as_posix() in wheel_names


def test_wheel_contains_the_cupti_injection_source(wheel_names):
    """Built on the user's machine at first use (tools/cupti.py), so it ships as source."""
    assert "gpuprof/tools/cupti_inject/gpuprof_cupti.cpp" in wheel_names
