"""Triton variants without a GPU: the loader's errors (one line each), the missing-Triton skip, and,
where Triton (and PyTorch) are installed, the shipped kernel files: they import, their @triton.jit
kernels exist, and under Triton's CPU interpreter they compute the family's reference."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import gpuprof
from gpuprof import families
from gpuprof.errors import EnvironmentProblem, InputError
from gpuprof.variants import catalog, launch_plan, python_variant
from gpuprof.variants import triton as triton_variant
from gpuprof.variants.catalog import Variant

TRITON_VARIANTS = [(f.name, v.name) for f in catalog.load_all() for v in f.variants if v.is_triton]


def variant_file(tmp_path: Path, body: str, name: str = "triton_toy.py") -> Variant:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return Variant(name="toy", technique="t", language="triton", file=path)


@pytest.fixture
def no_triton_needed(monkeypatch):
    """The loader's own checks, on files that do not import Triton: runs where Triton is missing too."""
    monkeypatch.setattr(triton_variant, "require_triton", lambda: None)
    monkeypatch.setattr(python_variant, "_modules", {})


@pytest.fixture
def triton_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "triton", None)  # `import triton` now raises ImportError
    monkeypatch.setattr(python_variant, "_modules", {})


def test_missing_triton_is_an_environment_problem_the_runner_skips(triton_missing):
    """make_launch_factory raises it before any check; run_family turns it into a SKIPPED row with
    the message, as for a vendor variant without PyTorch."""
    fam = catalog.load_family("vecadd")
    with pytest.raises(EnvironmentProblem) as info:
        launch_plan.make_launch_factory(fam, fam.variant("triton"), families.host(catalog.load_family("vecadd")))
    assert info.value.exit_code == 3
    assert "Triton is not installed" in info.value.message and "pip install triton" in info.value.message
    assert "\n" not in info.value.message


def test_a_file_without_make_launch_is_a_one_line_input_error(tmp_path, no_triton_needed):
    v = variant_file(tmp_path, "def launch(inputs, out, size):\n    pass\n")
    with pytest.raises(InputError) as info:
        triton_variant.launch_factory(v)
    message = info.value.message
    assert info.value.exit_code == 2 and "\n" not in message
    assert "triton_toy.py" in message and "no function make_launch(inputs, out, size)" in message


def test_a_syntax_error_names_the_file_and_line(tmp_path, no_triton_needed):
    v = variant_file(tmp_path, "x = 1\ndef make_launch(inputs, out, size)\n    pass\n")
    with pytest.raises(InputError) as info:
        triton_variant.launch_factory(v)
    assert "triton_toy.py:2 cannot be imported: SyntaxError" in info.value.message
    assert "\n" not in info.value.message


def test_a_failing_top_level_is_a_one_line_input_error(tmp_path, no_triton_needed):
    v = variant_file(tmp_path, "raise RuntimeError('boom\\nsecond line')\n")
    with pytest.raises(InputError) as info:
        triton_variant.launch_factory(v)
    assert info.value.message.endswith("cannot be imported: RuntimeError: boom")


def test_a_missing_python_module_is_an_environment_problem(tmp_path, no_triton_needed):
    v = variant_file(tmp_path, "import gpuprof_no_such_module\n")
    with pytest.raises(EnvironmentProblem, match="needs the Python module 'gpuprof_no_such_module'"):
        triton_variant.launch_factory(v)
    assert not [m for m in sys.modules if m.startswith("gpuprof_variant_triton_toy")]  # nothing half-imported left


def test_make_launch_must_return_a_launch_function(tmp_path, no_triton_needed):
    v = variant_file(tmp_path, "def make_launch(inputs, out, size):\n    return 42\n")
    launch_for = triton_variant.launch_factory(v)
    with pytest.raises(InputError, match="make_launch\\(\\) returned int, not a launch\\(stream\\) function"):
        launch_for({}, None, {"n": 1})


def test_the_file_is_imported_once_and_launches_through_make_launch(tmp_path, no_triton_needed):
    v = variant_file(tmp_path, """\
        LOADS = []
        LOADS.append(1)

        def make_launch(inputs, out, size):
            def launch(stream):
                out.append((inputs["a"], size["n"], stream))
            return launch
        """)
    first, second = triton_variant.launch_factory(v), triton_variant.launch_factory(v)
    module = triton_variant.load_module(v.file)
    assert module.LOADS == [1]  # cached per path: Triton's compiled kernels live on the module's functions
    out: list = []
    first({"a": "A"}, out, {"n": 3})("stream")
    second({"a": "B"}, out, {"n": 4})("s2")
    assert out == [("A", 3, "stream"), ("B", 4, "s2")]


def test_runner_wraps_a_triton_launch_in_nvtx_ranges(tmp_path, no_triton_needed, monkeypatch):
    v = variant_file(tmp_path, """\
        def make_launch(inputs, out, size):
            return lambda stream: out.append(stream)
        """)
    seen = []
    monkeypatch.setattr(launch_plan.ranges, "ranged", lambda launch, fam, name: seen.append((fam, name)) or launch)
    fam = catalog.load_family("vecadd").with_variants([v])
    out: list = []
    launch_plan.make_launch_factory(fam, v, families.host(catalog.load_family("vecadd")))({}, out, {"n": 1})("s")
    assert out == ["s"] and seen == [("vecadd", "toy")]


# ---------------------------------------------------------------- the shipped files, where Triton is installed


@pytest.mark.parametrize(("family", "name"), TRITON_VARIANTS)
def test_shipped_triton_files_import_and_define_jit_kernels(family, name):
    triton = pytest.importorskip("triton", reason="needs Triton (pip install triton)")
    from triton.runtime.jit import JITFunction

    v = catalog.load_family(family).variant(name)
    module = triton_variant.load_module(v.file)
    assert callable(module.make_launch)
    kernels = [k for k in vars(module).values() if isinstance(k, JITFunction)]
    assert kernels, f"{v.file.name}: no @triton.jit kernel"
    assert triton.__version__


# Run in a child process: TRITON_INTERPRET must be set before Triton is imported (its own library
# functions, tl.max among them, are decorated then), and this process may have imported it already.
INTERPRETER_SCRIPT = """
import importlib.util, json, sys
import torch
import triton.runtime.interpreter as interpreter

if hasattr(interpreter, "_patch_lang_tensor"):
    # Triton 3.6's interpreter turns a loop bound like tl.program_id(0) (a 1-element array) into an
    # int with int(array), which NumPy 2 refuses for arrays of ndim > 0.
    original = interpreter._patch_lang_tensor

    def patch(tensor, scope):
        original(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.reshape(-1)[0]))

    interpreter._patch_lang_tensor = patch

def load(path):
    spec = importlib.util.spec_from_file_location("interpreted_" + path.split("/")[-1][:-3], path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module

def max_rel_error(out, ref, per_element=False):
    # as gpuprof's check: against max(max |ref|, rms(ref)), or each element against itself (softmax's ERROR_SCALE)
    scale = ref.abs() if per_element else max(ref.abs().max().item(), ref.pow(2).mean().sqrt().item())
    return ((out.double() - ref).abs() / scale).max().item()

vecadd_file, softmax_file, vecadd_sizes, softmax_sizes = json.loads(sys.argv[1])
torch.manual_seed(0)
vecadd, softmax = load(vecadd_file), load(softmax_file)
errors = {"onchip_max_cols": softmax.ONCHIP_MAX_COLS}
for n in vecadd_sizes:
    a, b = torch.rand(n) * 2 - 1, torch.rand(n) * 2 - 1
    c = torch.full((n,), float("nan"))
    vecadd.add(a, b, c, n)
    errors[f"vecadd {n}"] = max_rel_error(c, a.double() + b.double())
for rows, cols in softmax_sizes:
    x = torch.empty(rows, cols).uniform_(70.0, 90.0)  # as the family's inputs: expf(x) alone would overflow
    y = torch.full_like(x, float("nan"))
    softmax.softmax(x, y, rows, cols, sm_count=1)  # the online kernel: 2 programs, so one walks rows 0 and 2
    e = (x.double() - x.double().max(dim=1, keepdim=True).values).exp()
    errors[f"softmax {rows}x{cols}"] = max_rel_error(y, e / e.sum(dim=1, keepdim=True), per_element=True)
print(json.dumps(errors))
"""
VECADD_SIZES = [1, 4097, 100003]
SOFTMAX_SIZES = [(1, 1), (127, 129), (5, 4097), (2, 8192), (3, 8193), (2, 50304)]  # both sides of 8192 columns


@pytest.fixture(scope="module")
def interpreted_errors() -> dict:
    """Max relative errors of the shipped kernels run by Triton's CPU interpreter on torch CPU tensors."""
    pytest.importorskip("triton", reason="needs Triton (pip install triton)")
    pytest.importorskip("torch", reason="Triton's interpreter runs on torch CPU tensors")
    files = [str(catalog.load_family(f).variant("triton").file) for f in ("vecadd", "softmax")]
    done = subprocess.run([sys.executable, "-c", INTERPRETER_SCRIPT, json.dumps([*files, VECADD_SIZES, SOFTMAX_SIZES])],
                          capture_output=True, text=True, timeout=300, check=False,
                          env={**os.environ, "TRITON_INTERPRET": "1", "PYTHONDONTWRITEBYTECODE": "1",
                               "PYTHONPATH": os.pathsep.join([str(Path(gpuprof.__file__).parent.parent),
                                                              os.environ.get("PYTHONPATH", "")])})
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("n", VECADD_SIZES)
def test_interpreted_triton_vecadd_adds(interpreted_errors, n):
    triton = catalog.load_family("vecadd").variant("triton")
    assert interpreted_errors[f"vecadd {n}"] <= families.host(catalog.load_family("vecadd")).tolerance(triton, {"n": n})


@pytest.mark.parametrize(("rows", "cols"), SOFTMAX_SIZES)
def test_interpreted_triton_softmax_matches_the_reference_on_both_paths(interpreted_errors, rows, cols):
    """Up to ONCHIP_MAX_COLS the one-tile kernel, beyond it the online kernel (with a ragged last tile)."""
    assert interpreted_errors["onchip_max_cols"] == 8192
    size = {"rows": rows, "cols": cols}
    softmax = catalog.load_family("softmax")
    tolerance = families.host(softmax).tolerance(softmax.variant("triton"), size)
    assert interpreted_errors[f"softmax {rows}x{cols}"] <= tolerance
