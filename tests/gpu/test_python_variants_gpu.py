"""On a GPU: a Python variant from each framework (examples/variants/) goes through `--add` and
the same check (every check size), timing and integrity audits as a built-in, beside the family's
baseline; where its framework is missing the test skips. Also the stream guarantee: a Python
variant that launches on a stream of its own is IMPOSSIBLE, not timed doing nothing."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import pytest

from gpuprof import results
from gpuprof.commands.run import RunRequest, run_family
from gpuprof.measure.timing import TimingPolicy
from gpuprof.variants import catalog
from gpuprof.variants.user import add_to_family, parse_add

pytestmark = pytest.mark.gpu

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "variants"
QUICK = TimingPolicy(mode="cold", min_samples=5, max_time_s=0.3)

# (example, family, built-in beside it, benchmark size, the Python modules it needs)
CASES = [
    ("vecadd_cupy.py", "vecadd", "grid", {"n": 1 << 24}, ("cupy",)),
    ("matmul_cupy_module.py", "matmul", "smem_tiled", {"m": 1024, "n": 1024, "k": 1024}, ("cupy",)),
    ("matmul_torch_extension.py", "matmul", "naive", {"m": 1024, "n": 1024, "k": 1024}, ("torch",)),
    ("vecadd_numba.py", "vecadd", "grid", {"n": 1 << 24}, ("numba",)),
    ("softmax_triton.py", "softmax", "vectorized", {"rows": 4096, "cols": 4096}, ("torch", "triton")),
]


def torch_extension_problem() -> str | None:
    """Why load_inline cannot build here (no nvcc or ninja, or a toolkit of another CUDA major
    version than torch's), or None. Anything else that fails is the example's fault: not skipped."""
    import torch
    from torch.utils import cpp_extension

    if cpp_extension.CUDA_HOME is None:
        return "load_inline needs a CUDA toolkit (CUDA_HOME or nvcc on PATH)"
    if not cpp_extension.is_ninja_available():
        return "load_inline needs ninja (pip install ninja)"
    nvcc = Path(cpp_extension.CUDA_HOME) / "bin" / "nvcc"
    done = subprocess.run([str(nvcc), "--version"], capture_output=True, text=True, timeout=60, check=False)
    release = next((w for w in done.stdout.replace(",", " ").split() if w[:2].isdigit() and "." in w), "")
    if torch.version.cuda and release.split(".")[0] != torch.version.cuda.split(".")[0]:
        major = torch.version.cuda.split(".")[0]
        return f"load_inline needs a CUDA {major}.x toolkit for this torch; nvcc is {release}"
    return None


def numba_problem() -> str | None:
    """Why this machine's Numba cannot launch a kernel at all (on the lent H100 its numba predates the
    installed NumPy 2 and fails inside its own launch code), or None."""
    try:
        from numba import cuda

        @cuda.jit
        def one(x):
            x[0] = 1

        array = cuda.device_array(1)
        one[1, 1](array)
        cuda.synchronize()
    except Exception as exc:  # noqa: BLE001 - any failure of Numba itself: the framework is unusable here
        return f"Numba cannot launch a kernel on this machine ({type(exc).__name__}: {exc})"
    return None


def needs(modules: tuple[str, ...]) -> None:
    for module in modules:
        pytest.importorskip(module, reason=f"needs {module}")
    if "numba" in modules and (problem := numba_problem()) is not None:
        pytest.skip(problem)
    if "torch" in modules:
        import torch

        if not torch.cuda.is_available():
            pytest.skip("needs a CUDA build of PyTorch")


def run_added(family: str, builtin: str, path: Path, size: dict[str, int]) -> dict[str, results.Row]:
    _, extra = add_to_family(catalog.load_family(family), parse_add(str(path)))
    outcome = run_family(RunRequest(family=family, variants=[builtin, extra[0].name], size=size,
                                    extra_variants=extra, policy=QUICK))
    return {r.variant: r for r in outcome.rows}


@pytest.mark.parametrize(("example", "family", "builtin", "size", "modules"), CASES, ids=[c[0] for c in CASES])
def test_example_python_variant_is_checked_and_timed_like_a_builtin(example, family, builtin, size, modules):
    needs(modules)
    if example == "matmul_torch_extension.py":
        problem = torch_extension_problem()
        if problem:
            pytest.skip(problem)
    rows = run_added(family, builtin, EXAMPLES / example, size)
    mine = rows[Path(example).stem]
    assert mine.check.status == results.OK, mine.check.reasons
    assert mine.check.sizes_checked == [*catalog.load_family(family).check_sizes, size]
    assert mine.timing is not None and len(mine.timing.samples_s) >= 5 and all(s > 0 for s in mine.timing.samples_s)
    assert rows[builtin].check.status == results.OK, rows[builtin].check.reasons


OWN_STREAM_CUPY = """\
    import cupy as cp

    def make_launch(inputs, out, size):
        side = cp.cuda.Stream(non_blocking=True)  # the mistake: its own stream, not the one given

        def launch(stream):
            with side:
                cp.add(inputs["a"], inputs["b"], out=out)
        return launch
    """

OWN_STREAM_NUMBA = """\
    from numba import cuda

    @cuda.jit
    def add(a, b, c):
        i = cuda.grid(1)
        if i < c.size:
            c[i] = a[i] + b[i]

    def make_launch(inputs, out, size):
        a, b, c = (cuda.as_cuda_array(x) for x in (inputs["a"], inputs["b"], out))
        blocks = (size["n"] + 255) // 256

        def launch(stream):
            add[blocks, 256](a, b, c)  # the mistake: Numba's default stream, not cuda.external_stream(stream.ptr)
        return launch
    """


@pytest.mark.parametrize(("source", "module"), [(OWN_STREAM_CUPY, "cupy"), (OWN_STREAM_NUMBA, "numba")],
                         ids=["cupy", "numba"])
def test_a_python_variant_on_its_own_stream_is_impossible(tmp_path, source, module):
    needs((module,))
    path = tmp_path / f"own_stream_{module}.py"
    path.write_text(textwrap.dedent(source))
    rows = run_added("vecadd", "grid", path, {"n": 1 << 26})
    row = rows[path.stem]
    assert row.check.status == results.IMPOSSIBLE, (row.check.status, row.check.reasons)
    assert any("another stream" in r for r in row.check.reasons)

