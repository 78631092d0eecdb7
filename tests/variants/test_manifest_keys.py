"""The manifest is the one list: what differs per variant (precision, error model,
launch plan, helper kernels, zeroed output, library call) is read from family.toml, never from a
variant's name. Renaming every variant in a copy of kernels/ changes nothing but the names; no
family module compares against a variant name; the new keys are validated with errors that name
the file and the key; a student's variant gets the defaults whatever its name."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
import shutil
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from gpuprof import families
from gpuprof.analysis.ceilings import Ceilings
from gpuprof.commands import run as run_core
from gpuprof.errors import EnvironmentProblem, InputError, UsageError
from gpuprof.families import _keys, _random
from gpuprof.gpu import cupy
from gpuprof.variants import catalog, launch_plan
from gpuprof.variants.catalog import Variant

PACKAGE = Path(families.__file__).resolve().parent
CEILINGS = Ceilings(bandwidth_bytes_s=3.35e12, flops={"fp32": 67e12, "tf32": 495e12, "bf16": 990e12})
PREFIX = "renamed_"


def rename_every_variant(root: Path) -> None:
    """name = "x" -> "renamed_x" in every [[variant]], and the baseline / vendor_reference that point at them."""
    for manifest in root.glob("*/family.toml"):
        text = manifest.read_text()
        text = re.sub(r'^(name|baseline|vendor_reference) = "(\w+)"', rf'\1 = "{PREFIX}\2"', text, flags=re.MULTILINE)
        manifest.write_text(text)


@pytest.fixture(scope="module")
def renamed_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("kernels")
    shutil.copytree(catalog.kernels_root(), root, dirs_exist_ok=True)
    rename_every_variant(root)
    return root


def pairs(renamed_root: Path):
    for name in catalog.family_names():
        original = catalog.load_family(name)
        renamed = catalog.load_family(str(renamed_root / name))
        assert renamed.variant_names == [PREFIX + n for n in original.variant_names]
        yield original, renamed


def test_renaming_changes_only_the_names_in_the_catalogue(renamed_root):
    for original, renamed in pairs(renamed_root):
        assert renamed.baseline == PREFIX + original.baseline
        for a, b in zip(original.variants, renamed.variants):
            assert b.file is None or b.file.name == a.file.name
            assert dataclasses.replace(b, name=a.name, file=a.file) == a, f"{original.name}/{a.name}"


def test_renaming_keeps_every_tolerance(renamed_root):
    for original, renamed in pairs(renamed_root):
        host = families.host(original)
        for a, b in zip(original.variants, renamed.variants):
            for size in (*original.check_sizes, original.default_size):
                assert host.tolerance(b, size) == host.tolerance(a, size), f"{original.name}/{a.name} {size}"


def test_renaming_keeps_every_ceiling_and_the_row_precision(renamed_root):
    for original, renamed in pairs(renamed_root):
        host = families.host(original)
        for a, b in zip(original.variants, renamed.variants):
            row_a = run_core._blank_row(original, a, original.default_size, host)
            row_b = run_core._blank_row(renamed, b, original.default_size, host)
            assert row_b.precision == row_a.precision == a.precision
            assert CEILINGS.ceiling(host.RATE, row_b.precision) == CEILINGS.ceiling(host.RATE, row_a.precision)


def test_renaming_keeps_every_vendor_call(renamed_root):
    for original, renamed in pairs(renamed_root):
        for a, b in zip(original.variants, renamed.variants):
            if a.vendor:
                assert launch_plan.vendor_call(b) == launch_plan.vendor_call(a)
                assert launch_plan.vendor_call(a) != a.name, f"{original.name}/{a.name}: declare call = \"...\""


class _FakeRandom:
    """numpy's Generator with CuPy's dtype= keyword on uniform (the family modules' make_inputs)."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def uniform(self, low, high, shape, dtype=np.float64):
        return self.rng.uniform(low, high, shape).astype(dtype)

    def random(self, shape, dtype=np.float64):
        return self.rng.random(shape, dtype=dtype)

    def integers(self, low, high=None, size=None, dtype=np.int64):
        return self.rng.integers(low, high, size, dtype=dtype)

    def standard_normal(self, shape, dtype=np.float64):
        return self.rng.standard_normal(shape).astype(dtype)


class _NumpyAsCupy:
    """Enough of CuPy on numpy for make_inputs / make_output / plan() workspaces: no GPU to plan."""

    random = SimpleNamespace(default_rng=_FakeRandom)

    def __getattr__(self, name):
        return getattr(np, name)


class _Recorder:
    """Stands in for a compiled kernel: logs (kernel, grid, block, args) of every launch."""

    def __init__(self, name, log):
        self.name, self.log = name, log

    def __call__(self, grid, block, args, stream=None, shared_mem=0):
        self.log.append((self.name, grid, block, args, shared_mem))


def _trace(host, variant, size):
    """The launches plan() makes at one size: (kernel, grid, block, argument shapes or values)."""
    log: list = []
    functions = {k: _Recorder(k, log) for k in (variant.kernel, *variant.extra_kernels)}
    inputs, out = host.make_inputs(size, 1), host.make_output(size)
    ctx = SimpleNamespace(grid=(7, 5, 3), block=variant.block_dims(), sm_count=132,
                          shared_mem=variant.dynamic_smem_bytes())
    try:
        host.plan(variant, functions, inputs, out, size, ctx)(None)
    # im2col_cublas needs PyTorch on CUDA: the same outcome both ways
    except (EnvironmentProblem, TypeError, AttributeError) as exc:
        log.append(("raised", type(exc).__name__))
    return [tuple(a.shape if isinstance(a, np.ndarray) else (a if not isinstance(a, tuple) else
                  tuple(x.shape if isinstance(x, np.ndarray) else x for x in a)) for a in entry) for entry in log]


def _modules_of(module):
    """The family module, or a family package's modules, and the modules its hooks come from (gemm_bf16's
    are families/_tensor_gemm.py's), that call gpuprof.gpu.cupy."""
    inside = [m for name, m in sys.modules.items() if name == module.__name__ or name.startswith(module.__name__ + ".")]
    hooks = [inspect.getmodule(value) for value in vars(module).values() if inspect.ismethod(value)]
    return list({id(m): m for m in (*inside, *hooks) if getattr(m, "cupy", None) is cupy}.values())


def test_renaming_keeps_every_launch_plan(renamed_root, monkeypatch):
    planned = 0
    for original, renamed in pairs(renamed_root):
        host = families.host(original)
        if host.plan is None:
            continue
        for module in _modules_of(host.module):  # a family package (mnist) draws CuPy in each of its modules
            monkeypatch.setattr(module, "cupy", lambda: _NumpyAsCupy())
        monkeypatch.setattr(_random, "cupy", lambda: _NumpyAsCupy())  # the families' input generator
        for a, b in zip(original.variants, renamed.variants):
            if not a.is_cuda:
                continue
            size = original.check_sizes[-1]
            assert _trace(host, b, size) == _trace(host, a, size), f"{original.name}/{a.name}"
            planned += 1
    assert planned >= 20  # conv2d, reduce, scan, softmax: every hand-written variant


def test_every_declared_plan_and_error_model_is_known_to_its_family():
    for fam in catalog.load_all():
        host = families.host(fam)
        for v in fam.variants:
            if v.plan is not None:
                assert v.plan in host.PLANS, f"{fam.name}/{v.name}"
            if v.error_model is not None:
                assert v.error_model in host.ERROR_MODELS, f"{fam.name}/{v.name}"


WITH_HELPERS = [(f, v) for f in catalog.load_all() for v in f.variants if v.helpers]


@pytest.mark.nvcc
@pytest.mark.parametrize(("fam", "v"), WITH_HELPERS, ids=[f"{f.name}/{v.name}" for f, v in WITH_HELPERS])
def test_every_helper_kernel_is_an_extern_c_entry_point_of_its_file(fam, v):
    """Preprocessed as nvcc and NVRTC see it (-I the family folder): macros and shared headers expanded."""
    import subprocess

    from conftest import nvcc_path

    done = subprocess.run([nvcc_path(), "-E", "-x", "cu", f"-I{v.file.parent}", str(v.file)],
                          capture_output=True, text=True, timeout=120, check=True)
    for role, kernel in v.helpers.items():
        declared = rf'extern\s+"C"[^;{{}}]*?global[^;{{}}]*?\b{kernel}\s*\('
        assert re.search(declared, done.stdout), f"helper {role} = {kernel} is not declared in {v.file.name}"


# ---------------------------------------------------------------- no name checks in the family modules


def _variant_name_literals(module: str) -> set[str]:
    try:
        return set(catalog.load_family(module).variant_names)
    except UsageError:  # a helper module (_torch, _keys, _rounding): no family of that name
        return set()


def name_checks(path: Path, names: set[str]) -> list[str]:
    """Comparisons, membership tests and startswith/endswith that involve `.name` or a variant name."""

    def is_name_attr(node: ast.AST) -> bool:
        return isinstance(node, ast.Attribute) and node.attr == "name"

    def is_variant_literal(node: ast.AST) -> bool:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value in names
        if isinstance(node, (ast.Set, ast.List, ast.Tuple)):
            return any(is_variant_literal(e) for e in node.elts)
        return False

    found = []
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(is_name_attr(o) or is_variant_literal(o) for o in operands):
                found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in ("startswith", "endswith", "removesuffix", "removeprefix"):
            if is_name_attr(node.func.value) or any(is_variant_literal(a) for a in node.args):
                found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Assign) and is_variant_literal(node.value) and \
                isinstance(node.value, (ast.Set, ast.List, ast.Tuple)):
            found.append(f"{path.name}:{node.lineno}: a collection of variant names: {ast.unparse(node)[:80]}")
    return found


@pytest.mark.parametrize("path", sorted(PACKAGE.glob("*.py")), ids=lambda p: p.name)
def test_no_family_module_checks_a_variant_name(path):
    assert name_checks(path, _variant_name_literals(path.stem)) == []


@pytest.mark.parametrize("snippet", [
    'if "atomic" in variant.name: pass',
    'if variant.name == "sized": pass',
    'x = variant.name.endswith("tf32")',
    'PARALLEL = {"block_row", "vectorized"}',
    'if name in ("cublas", "cublas_tf32"): pass',
])
def test_the_name_check_scan_catches_the_old_patterns(tmp_path, snippet):
    path = tmp_path / "fake.py"
    path.write_text(snippet + "\n")
    assert name_checks(path, {"sized", "block_row", "vectorized", "cublas", "cublas_tf32"})


# ---------------------------------------------------------------- students' variants


def test_a_student_variant_named_tf32_is_checked_and_judged_as_fp32():
    mine = Variant(name="mine_tf32", technique="t", file=Path("mine_tf32.cu"), kernel="k", block=(256,), user=True)
    fp32 = Variant(name="mine", technique="t", file=Path("mine.cu"), kernel="k", block=(256,), user=True)
    matmul = families.host(catalog.load_family("matmul"))
    size = {"m": 4096, "n": 4096, "k": 4096}
    assert mine.precision == "fp32"
    assert matmul.tolerance(mine, size) == matmul.tolerance(fp32, size) < 1e-4
    assert CEILINGS.ceiling("flop", mine.precision).value == CEILINGS.flops["fp32"]
    tf32 = catalog.load_family("matmul").variant("cublas_tf32")
    assert CEILINGS.ceiling("flop", tf32.precision).value == CEILINGS.flops["tf32"]
    assert matmul.tolerance(tf32, size) > 10 * matmul.tolerance(mine, size)


def test_kernels_dir_variants_take_the_same_keys(tmp_path):
    from gpuprof.variants import user

    (tmp_path / "mine.cu").write_text(
        'extern "C" __global__ void reduce_mine(const float* __restrict__ in, float* __restrict__ out, int n) {}\n')
    (tmp_path / "reduce.toml").write_text(textwrap.dedent("""\
        [[variant]]
        name = "mine"
        file = "mine.cu"
        kernel = "reduce_mine"
        technique = "atomics into out[0]"
        block = [256]
        grid = "per_sm:2"
        plan = "single"
        zero_output = true
        precision = "fp32"
        """))
    (v,) = user.load_kernels_dir(tmp_path, catalog.load_family("reduce"))
    assert (v.plan, v.zero_output, v.precision, v.user) == ("single", True, "fp32", True)
    assert _keys.plan(v, families.host(catalog.load_family("reduce")).PLANS) == "single"


def test_an_unknown_plan_or_error_model_names_the_choices():
    v = Variant(name="mine", technique="t", plan="warp_magic", error_model="exact", user=True)
    with pytest.raises(InputError, match=r"'plan' is 'warp_magic'; choose from: passes, single"):
        _keys.plan(v, families.host(catalog.load_family("reduce")).PLANS)
    with pytest.raises(InputError, match=r"'error_model' is 'exact'; choose from: tiled, serial"):
        _keys.error_model(v, families.host(catalog.load_family("scan")).ERROR_MODELS)


def test_kernels_dir_plans_are_checked_at_load_time(tmp_path):
    from gpuprof.variants import user

    (tmp_path / "mine.cu").write_text(
        'extern "C" __global__ void scan_mine(const float* __restrict__ x, float* __restrict__ y, int n) {}\n')
    (tmp_path / "scan.toml").write_text(
        '[[variant]]\nname = "mine"\nfile = "mine.cu"\nkernel = "scan_mine"\ntechnique = "t"\nblock = [256]\n'
        'tile = [256]\nplan = "passes"\n')
    wrong_plan = r"scan.toml: variant 'mine': 'plan' is 'passes'; choose from: single, propagate, lookback"
    with pytest.raises(InputError, match=wrong_plan):
        user.load_kernels_dir(tmp_path, catalog.load_family("scan"))


def test_a_missing_helper_names_the_role():
    v = Variant(name="mine", technique="t", plan="propagate", user=True)
    with pytest.raises(InputError, match="helper kernel for role 'totals'"):
        _keys.helper(v, {}, "totals")


# ---------------------------------------------------------------- manifest validation of the new keys


TOY = """\
family = "toy"
summary = "s"
signature = "int n"
baseline = "a"
dims = ["n"]
grid_dims = ["n"]
default_size = { n = 1024 }
check_sizes = [{ n = 1 }]

[[variant]]
name = "a"
file = "a.cu"
kernel = "toy_a"
technique = "t"
block = [128]
tile = [128]
"""


def write_toy(root: Path, extra: str, vendor: bool = False) -> Path:
    """A one-variant toy family with `extra` lines in variant a, or in a second, vendor variant."""
    folder = root / "toy"
    folder.mkdir(parents=True)
    (folder / "a.cu").write_text('// toy / a\nextern "C" __global__ void toy_a(int n) {}\n')
    text = TOY + (f'\n[[variant]]\nname = "lib"\nvendor = true\ntechnique = "t"\n{extra}\n' if vendor else f"{extra}\n")
    path = folder / "family.toml"
    path.write_text(text)
    return path


MALFORMED = {
    "unknown precision": ('precision = "fp8"', False,
                          "'precision' is 'fp8'; choose from: fp32, tf32, bf16, fp16, fp64"),
    "misspelt key": ('precison = "tf32"', False, "'precison' is not a variant key"),
    "zero_output not a bool": ('zero_output = "yes"', False, "'zero_output' must be true or false"),
    "helpers not a table": ('helpers = ["k"]', False, "'helpers' must be a table"),
    "plan not a string": ("plan = 3", False, "'plan' must be a non-empty string"),
    "call on a kernel": ('call = "torch.add"', False, "'call' applies to vendor variants only"),
    "plan on a vendor": ('plan = "single"', True, "'plan' does not apply to a vendor variant"),
    "error_model empty": ('error_model = ""', False, "'error_model' must be a non-empty string"),
}


@pytest.mark.parametrize(("line", "vendor", "message"), MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_new_keys_name_the_file_and_the_key(tmp_path, line, vendor, message):
    path = write_toy(tmp_path, line, vendor)
    with pytest.raises(InputError) as info:
        catalog.parse_manifest(path)
    assert str(path) in info.value.message and message in info.value.message
    assert "\n" not in info.value.message


def test_helpers_are_compiled_as_extra_entry_points_and_defaults_apply(tmp_path):
    path = write_toy(tmp_path, 'plan = "propagate"\nhelpers = { totals = "toy_totals", add = "toy_add" }\n'
                               'extra_kernels = ["toy_add"]')
    v = catalog.parse_manifest(path).variant("a")
    assert v.extra_kernels == ("toy_add", "toy_totals")
    assert v.helper("totals") == "toy_totals"
    assert (v.precision, v.error_model, v.zero_output, v.call) == ("fp32", None, False, None)
    vendor = catalog.parse_manifest(write_toy(tmp_path / "v", 'precision = "tf32"', vendor=True)).variant("lib")
    assert (vendor.call, vendor.precision) == ("lib", "tf32")  # call defaults to the name
