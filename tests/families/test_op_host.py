"""families/op_host.OpModule: an [op] table checked when the family loads (each bad key one line
naming the file and the key), kernel arguments by parameter name, counts from expressions, inputs
from several distributions chosen by the seed, and the reference and vendor calls (run here with
CPU torch and NumPy standing in for the device)."""

from __future__ import annotations

import contextlib
import math
import textwrap
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from gpuprof.errors import InputError
from gpuprof.families import _random, op_host, registry
from gpuprof.variants.catalog import Variant

OP = {
    "inputs": '{ x = ["n"] }',
    "output": '{ y = ["n"] }',
    "reference": '"family.py:reference"',
    "rate": '"bytes"',
    "flop": '"3*n"',
}
FAMILY_PY = "def reference(x):\n    return x * x + x + 1\n\n\ndef vendor_torch(x, y):\n    y.copy_(x * x + x + 1)\n"
KERNEL = 'extern "C" __global__ void k_cuda(const float* x, float* y, int n) {}\n'


def write_folder(root: Path, op: dict[str, str] | None = None, *, name: str = "myop",
                 signature: str = "const float* x, float* y, int n", dims: str = '["n"]',
                 sizes: tuple[str, str] = ("{ n = 1024 }", "[{ n = 1 }, { n = 4097 }]"),
                 family_py: str | None = FAMILY_PY, vendor: str = "", extra: str = "") -> Path:
    """A family folder with an [op] table (OP with `op`'s keys over it; a value of None drops the key)."""
    folder = root / name
    folder.mkdir()
    table = {**OP, **(op or {})}
    lines = "\n".join(f"{k} = {v}" for k, v in table.items() if v is not None)
    grid = dims.split(",")[0].strip("[ ]")
    (folder / "family.toml").write_text(textwrap.dedent(f"""\
        family = "{name}"
        summary = "a test op"
        signature = "{signature}"
        baseline = "cuda"
        dims = {dims}
        grid_dims = [{grid}]
        default_size = {sizes[0]}
        check_sizes = {sizes[1]}
        {extra}

        [op]
        """) + lines + textwrap.dedent(f"""

        [[variant]]
        name = "cuda"
        file = "k.cu"
        kernel = "k_cuda"
        technique = "one thread per element"
        block = [256]
        tile = [256]
        {vendor}
        """))
    (folder / "k.cu").write_text(KERNEL)
    if family_py is not None:
        (folder / "family.py").write_text(family_py)
    return folder


def load(folder: Path) -> op_host.OpModule:
    host = registry.host_for(registry.resolve(folder))
    assert isinstance(host.module, op_host.OpModule)
    return host.module


TORCH_VENDOR = '[[variant]]\nname = "torch"\nvendor = true\ncall = "torch"\ntechnique = "t"'


@pytest.mark.parametrize(("op", "key"), [
    ({"inptus": '{ x = ["n"] }'}, "inptus"),
    ({"inputs": '"x"'}, "inputs"),
    ({"inputs": "{}"}, "inputs"),
    ({"inputs": '{ x = ["m"] }'}, "inputs"),
    ({"inputs": "{ x = [0] }"}, "inputs"),
    ({"inputs": "{ x = [] }"}, "inputs"),
    ({"output": None}, "output"),
    ({"output": '{ y = ["n"], z = ["n"] }'}, "output"),
    ({"output": '{ x = ["n"] }'}, "output"),
    ({"reference": None}, "reference"),
    ({"reference": '"gelu"'}, "reference"),
    ({"reference": '"torch.nn.functional.gelu()"'}, "reference"),
    ({"reference": '"family.py:not a name"'}, "reference"),
    ({"vendor": '"torch"'}, "vendor"),
    ({"vendor": '{ torch = "nodots" }'}, "vendor.torch"),
    ({"rate": None}, "rate"),
    ({"rate": '"time"'}, "rate"),
    ({"flop": None}, "flop"),
    ({"flop": '"3*m"'}, "flop"),
    ({"flop": "1.5"}, "flop"),
    ({"bytes": '"4 - 8*n"'}, "bytes"),
    ({"formula": '""'}, "formula"),
    ({"tolerance": "0"}, "tolerance"),
    ({"tolerance": '"1e-5"'}, "tolerance"),
    ({"tolerance": "inf"}, "tolerance"),
    ({"error_scale": '"max"'}, "error_scale"),
    ({"distributions": '["zipf"]'}, "distributions"),
    ({"distributions": "[]"}, "distributions"),
])
def test_each_bad_key_is_one_line_naming_the_file_and_the_key(tmp_path, op, key):
    folder = write_folder(tmp_path, op)
    with pytest.raises(InputError) as caught:
        load(folder)
    message = caught.value.message
    assert message.startswith(f"{folder / 'family.toml'}: 'op.{key}' "), message
    assert "\n" not in message


def test_a_vendor_variant_needs_its_call_in_the_vendor_table_or_the_reference(tmp_path):
    folder = write_folder(tmp_path, vendor=TORCH_VENDOR)
    with pytest.raises(InputError, match=r"'op\.vendor' has no call 'torch' for the vendor variant 'torch'"):
        load(folder)
    ok = write_folder(tmp_path, {"vendor": '{ torch = "family.py:vendor_torch" }'}, name="b", vendor=TORCH_VENDOR)
    assert load(ok).vendor == {"torch": "family.py:vendor_torch"}
    as_reference = TORCH_VENDOR.replace('call = "torch"', 'call = "family.py:reference"')
    assert load(write_folder(tmp_path, name="c", vendor=as_reference)).vendor == {}


def test_family_py_functions_must_exist(tmp_path):
    without = write_folder(tmp_path, family_py=None)
    with pytest.raises(InputError, match=r"'op\.reference' is 'family\.py:reference', but there is no .*family\.py"):
        load(without)
    missing = write_folder(tmp_path, {"reference": '"family.py:nothere"'}, name="b")
    with pytest.raises(InputError, match=r"b/family\.py: defines no function nothere \(the manifest's 'op\.reference'"):
        load(missing)
    vendor = write_folder(tmp_path, {"vendor": '{ torch = "family.py:nothere" }'}, name="c")
    with pytest.raises(InputError, match=r"defines no function nothere \(the manifest's 'op\.vendor\.torch'"):
        load(vendor)


@pytest.mark.parametrize(("signature", "words"), [
    ("const float* x, float* y, int m", "parameter 'int m': an [op] family passes"),
    ("const float* x, float* z, int n", "parameter 'float* z': names no [op] input or output"),
    ("const float* x, const float* y, int n", "y is the output, so it cannot be const"),
    ("const float* x, int n", "has no parameter y, the [op] output"),
    ("const double* x, float* y, int n", "a pointer parameter is float*"),
    ("const float* x, float* y, float n", "parameter 'float n'"),
])
def test_every_signature_parameter_must_name_a_buffer_or_a_dim(tmp_path, signature, words):
    folder = write_folder(tmp_path, signature=signature)
    (folder / "k.cu").write_text(f'extern "C" __global__ void k_cuda({signature}) {{}}\n')
    with pytest.raises(InputError) as caught:
        load(folder)
    assert caught.value.message.startswith(f"{folder / 'family.toml'}: 'signature'")
    assert words in caught.value.message


def test_a_folder_with_neither_op_nor_family_py_is_refused(tmp_path):
    folder = write_folder(tmp_path, family_py=None)
    text = (folder / "family.toml").read_text()
    (folder / "family.toml").write_text(text[:text.index("[op]")] + text[text.index("[[variant]]"):])
    with pytest.raises(InputError, match="the family has no reference: describe the op in an \\[op\\] table"):
        registry.resolve(folder)


def test_host_and_op_together_are_refused(tmp_path):
    folder = write_folder(tmp_path, extra='host = "gpuprof.families.vecadd"')
    with pytest.raises(InputError, match="'host' and \\[op\\] both say where the reference is"):
        registry.resolve(folder)


def test_kernel_args_follow_the_parameter_names_not_their_order(tmp_path):
    signature = "int cols, const float* b, float* out, int rows, const float* a"
    folder = write_folder(tmp_path, {"inputs": '{ a = ["rows", "cols"], b = ["cols"] }',
                                     "output": '{ out = ["rows", "cols"] }', "flop": '"rows*cols"'},
                          signature=signature, dims='["rows", "cols"]',
                          sizes=("{ rows = 8, cols = 16 }", "[{ rows = 1, cols = 3 }]"),
                          family_py="def reference(a, b):\n    return a + b\n")
    (folder / "k.cu").write_text(f'extern "C" __global__ void k_cuda({signature}) {{}}\n')
    module = load(folder)
    a, b, out = np.zeros((3, 5), np.float32), np.zeros(5, np.float32), np.zeros((3, 5), np.float32)
    args = module.kernel_args({"a": a, "b": b}, out, {"rows": 3, "cols": 5})
    assert [type(x) for x in args] == [np.int32, np.ndarray, np.ndarray, np.int32, np.ndarray]
    assert args[0] == 5 and args[1] is b and args[2] is out and args[3] == 3 and args[4] is a


def test_counts_come_from_the_expressions_and_bytes_default_to_every_buffer_once(tmp_path):
    module = load(write_folder(tmp_path, {"inputs": '{ x = ["rows", "cols"], w = ["cols"] }',
                                          "output": '{ y = ["rows", "cols"] }', "flop": '"2*rows*cols + cols"'},
                               signature="const float* x, const float* w, float* y, int rows, int cols",
                               dims='["rows", "cols"]', sizes=("{ rows = 64, cols = 128 }", "[{ rows = 1, cols = 1 }]"),
                               family_py="def reference(x, w):\n    return x * w\n"))
    size = {"rows": 3, "cols": 7}
    assert module.flop(size) == 2 * 3 * 7 + 7
    assert module.bytes_moved(size) == 4 * (3 * 7 + 7 + 3 * 7)
    assert module.RATE == "bytes" and module.FORMULA.startswith("GB/s = 4·(rows·cols + cols + rows·cols) bytes")
    flop_rate = load(write_folder(tmp_path, {"rate": '"flop"', "bytes": '"ceil(n/32)*128"'}, name="b"))
    assert flop_rate.bytes_moved({"n": 33}) == 256 and flop_rate.flop({"n": 33}) == 99
    assert flop_rate.FORMULA == "TFLOP/s = 3*n FLOP / median time"


def test_tolerance_from_the_table_or_the_precision(tmp_path):
    module = load(write_folder(tmp_path))
    fp32 = Variant(name="v", technique="t")
    assert module.tolerance(fp32, {"n": 10}) == 1e-5
    assert module.tolerance(replace(fp32, precision="bf16"), {"n": 10}) == 8 * 2.0**-8
    assert module.tolerance(replace(fp32, precision="fp16"), {"n": 10}) == 8 * 2.0**-11
    assert module.tolerance(replace(fp32, precision="fp64"), {"n": 10}) == 1e-5
    assert module.ERROR_SCALE == "rms"
    own = load(write_folder(tmp_path, {"tolerance": "3e-4", "error_scale": '"element"'}, name="b"))
    assert own.tolerance(replace(fp32, precision="bf16"), {"n": 10}) == 3e-4 and own.ERROR_SCALE == "element"


@pytest.fixture
def numpy_device(monkeypatch):
    """NumPy arrays in place of CuPy's (draws on the host), CPU torch in place of CUDA torch."""
    torch = pytest.importorskip("torch")
    shim = SimpleNamespace(**{k: getattr(np, k) for k in ("float32", "float64", "nan", "full", "where", "clip",
                                                          "asarray", "from_dlpack", "sqrt", "mean")},
                           cuda=SimpleNamespace(get_current_stream=lambda: None))
    monkeypatch.setattr(_random, "cupy", lambda: shim)
    monkeypatch.setattr(op_host, "cupy", lambda: shim)
    monkeypatch.setattr(op_host._torch, "torch", lambda: torch)
    monkeypatch.setattr(op_host._torch, "as_tensor", torch.from_dlpack)
    monkeypatch.setattr(op_host._torch, "on_stream", lambda stream: contextlib.nullcontext())
    _random.draw_on_host(True)
    yield torch
    _random.draw_on_host(False)


def test_the_seed_picks_the_distribution_so_a_run_sees_several(tmp_path, numpy_device):
    module = load(write_folder(tmp_path))
    assert [module.distribution(s) for s in range(6)] == ["uniform", "normal", "heavy"] * 2
    uniform, normal, heavy = (module.make_inputs({"n": 20000}, seed)["x"] for seed in range(3))
    for x in (uniform, normal, heavy):
        assert x.dtype == np.float32 and x.shape == (20000,) and np.isfinite(x).all()
    assert uniform.min() >= -1 and uniform.max() < 1
    assert np.abs(normal).max() > 2 and 0.9 < normal.std() < 1.1
    assert np.abs(heavy).max() == op_host.HEAVY_LIMIT and np.median(np.abs(heavy)) < 2
    again = module.make_inputs({"n": 20000}, 2)["x"]
    assert np.array_equal(heavy, again)
    only = load(write_folder(tmp_path, {"distributions": '["normal"]'}, name="b"))
    assert {only.distribution(s) for s in range(5)} == {"normal"}


def test_the_output_starts_as_nan(tmp_path, numpy_device):
    out = load(write_folder(tmp_path)).make_output({"n": 5})
    assert out.dtype == np.float32 and out.shape == (5,) and np.isnan(out).all()


def test_the_reference_runs_in_float64_and_comes_back_in_the_output_shape(tmp_path, numpy_device):
    module = load(write_folder(tmp_path))
    x = np.linspace(-2, 2, 7, dtype=np.float32)
    ref = module.reference({"x": x}, {"n": 7})
    assert ref.dtype == np.float64
    np.testing.assert_array_equal(ref, x.astype(np.float64) ** 2 + x + 1)


def test_a_dotted_reference_is_imported_not_evaluated(tmp_path, numpy_device):
    module = load(write_folder(tmp_path, {"reference": '"torch.nn.functional.gelu"'}, family_py=None))
    x = np.linspace(-3, 3, 5, dtype=np.float32)
    ref = module.reference({"x": x}, {"n": 5})
    expected = [0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x.astype(np.float64)]
    np.testing.assert_allclose(ref, expected, rtol=1e-12)
    missing = load(write_folder(tmp_path, {"reference": '"torch.nosuch.thing"'}, name="b", family_py=None))
    with pytest.raises(InputError, match=r"'op\.reference' is 'torch\.nosuch\.thing', which cannot be found"):
        missing.reference({"x": x}, {"n": 5})


def test_a_reference_that_raises_or_has_the_wrong_shape_is_one_line(tmp_path, numpy_device):
    bad = "def reference(x):\n    raise ValueError('no\\nmore')\n\n\ndef short(x):\n    return x[:2]\n"
    folder = write_folder(tmp_path, family_py=bad)
    x = np.ones(5, np.float32)
    with pytest.raises(InputError) as raised:
        load(folder).reference({"x": x}, {"n": 5})
    assert raised.value.message == f"{folder / 'family.py'}: reference() raised ValueError: no"
    short = write_folder(tmp_path, {"reference": '"family.py:short"'}, name="b", family_py=bad)
    with pytest.raises(InputError, match=r"b/family\.py: short\(\) returned shape \[2\]; the output y is \[5\]"):
        load(short).reference({"x": x}, {"n": 5})


def test_vendor_rows_write_into_the_output(tmp_path, numpy_device):
    table = write_folder(tmp_path, {"vendor": '{ torch = "family.py:vendor_torch" }'}, vendor=TORCH_VENDOR)
    x = np.linspace(-1, 1, 9, dtype=np.float32)
    out = np.full(9, np.nan, np.float32)
    load(table).vendor_launch("torch", {"x": x}, out, {"n": 9})(None)
    np.testing.assert_allclose(out, x * x + x + 1, rtol=1e-6)
    as_reference = TORCH_VENDOR.replace('call = "torch"', 'call = "family.py:reference"')
    module = load(write_folder(tmp_path, name="b", vendor=as_reference))
    out[:] = np.nan
    assert module.FORMULA.endswith("; torch: the reference in FP32, its time includes a copy into the output")
    module.vendor_launch("family.py:reference", {"x": x}, out, {"n": 9})(None)  # the reference, copied into out
    np.testing.assert_allclose(out, x * x + x + 1, rtol=1e-6)
    with pytest.raises(KeyError):
        module.vendor_launch("cublas", {"x": x}, out, {"n": 9})


def test_resolve_dotted_imports_submodules_and_refuses_what_is_not_callable():
    import os.path

    assert op_host.resolve_dotted("os.path.join") is os.path.join
    assert op_host.resolve_dotted("email.utils.formatdate").__name__ == "formatdate"  # submodule imported on demand
    with pytest.raises(TypeError):
        op_host.resolve_dotted("math.pi")
    with pytest.raises(ImportError):
        op_host.resolve_dotted("no_such_module_here.f")


def test_the_docstring_documents_every_op_key():
    doc = op_host.__doc__ or ""
    for key in op_host.OP_KEYS:
        assert f"    {key} = " in doc, key


def test_the_reference_runs_on_cupys_current_stream(tmp_path, numpy_device, monkeypatch):
    seen = []

    @contextlib.contextmanager
    def on_stream(stream):
        seen.append(stream.ptr)
        yield

    monkeypatch.setattr(op_host._torch, "on_stream", on_stream)
    module = load(write_folder(tmp_path))
    shim = op_host.cupy()
    shim.cuda = SimpleNamespace(get_current_stream=lambda: SimpleNamespace(ptr=1234))
    module.reference({"x": np.ones(3, np.float32)}, {"n": 3})
    assert seen == [1234]
    shim.cuda = SimpleNamespace(get_current_stream=lambda: SimpleNamespace(ptr=0))  # legacy stream: shared already
    module.reference({"x": np.ones(3, np.float32)}, {"n": 3})
    assert seen == [1234]


def test_the_starters_op_passes_a_right_fp32_answer_and_fails_wrong_ones_on_every_distribution(tmp_path, numpy_device):
    """The check's own scaling (measure/check.scaled_error) against the starter's reference and
    default tolerance: FP32 arithmetic passes on uniform, normal and heavy inputs; a dropped term or
    one wrong element fails."""
    from typer.testing import CliRunner

    from gpuprof.cli import app
    from gpuprof.measure.check import scaled_error

    assert CliRunner().invoke(app, ["new-family", "starter", "--dir", str(tmp_path)]).exit_code == 0
    module = load(tmp_path / "starter")
    variant = registry.resolve(tmp_path / "starter").variant("cuda")
    size = {"n": 100003}
    for seed in range(3):
        x = module.make_inputs(size, seed)["x"]
        ref = module.reference({"x": x}, size)
        tolerance = module.tolerance(variant, size)
        right = x * x + x + np.float32(1)
        assert right.dtype == np.float32
        assert scaled_error(right, ref, module.ERROR_SCALE)[0] <= tolerance, module.distribution(seed)
        assert scaled_error(x * x + np.float32(1), ref, module.ERROR_SCALE)[0] > tolerance
        one_off = right.copy()
        one_off[size["n"] // 2] += 1
        assert scaled_error(one_off, ref, module.ERROR_SCALE)[0] > tolerance


def test_the_starters_vendor_function_writes_into_its_output(tmp_path, numpy_device):
    from typer.testing import CliRunner

    from gpuprof.cli import app

    assert CliRunner().invoke(app, ["new-family", "starter", "--dir", str(tmp_path)]).exit_code == 0
    module = load(tmp_path / "starter")
    x = np.linspace(-5, 5, 101, dtype=np.float32)
    out = np.full(101, np.nan, np.float32)
    module.vendor_launch("torch", {"x": x}, out, {"n": 101})(None)
    np.testing.assert_allclose(out, x * x + x + 1, rtol=1e-6)


GELU_PY = ("import torch\n\n\ndef reference(x):\n    return torch.nn.functional.gelu(x, approximate='tanh')\n")


def _gelu_fp32(x: np.ndarray) -> np.ndarray:
    """The tanh-form GELU as an FP32 kernel computes it (every step rounded to FP32)."""
    x = x.astype(np.float32)
    inner = np.float32(0.7978845608028654) * (x + np.float32(0.044715) * x * x * x)
    return np.float32(0.5) * x * (np.float32(1) + np.tanh(inner))


def test_input_scaling_judges_a_cancelling_activation_against_its_input(tmp_path, numpy_device):
    x = np.array([-4.0], np.float32)  # 1 + tanh(z) cancels: y is tiny, FP32's y is off by ~|x|·u
    rms = load(write_folder(tmp_path, family_py=GELU_PY, name="rms"))
    own = load(write_folder(tmp_path, {"error_scale": '"input"'}, family_py=GELU_PY, name="inp"))
    assert getattr(rms, "scaled_error", None) is None and own.scaled_error is not None
    out = _gelu_fp32(x)
    ref = own.reference({"x": x}, {"n": 1})
    err, unwritten = own.scaled_error(out, ref, {"n": 1})
    assert unwritten == 0 and err < 1e-6
    plain = float(np.abs(out.astype(np.float64) - ref).max() / np.abs(ref).max())
    assert plain > 1e-4  # judged against |y| alone, an honest FP32 GELU looks wrong (tolerance 1e-5)
    wrong, _ = own.scaled_error(out + np.float32(0.01), ref, {"n": 1})
    assert wrong > 1e-3  # a real error still shows against |x|
    nan_out = np.full(1, np.nan, np.float32)
    assert own.scaled_error(nan_out, ref, {"n": 1})[1] == 1


def test_input_classes_default_to_needles_and_heavy_tails_for_an_op_that_reduces(tmp_path):
    elementwise = load(write_folder(tmp_path))
    assert elementwise.INPUT_CLASSES == ()
    reducing = load(write_folder(tmp_path, {"inputs": '{ x = ["rows", "cols"] }', "output": '{ y = ["rows"] }',
                                            "flop": '"rows*cols"'},
                                 name="rowsum", signature="const float* x, float* y, int rows, int cols",
                                 dims='["rows", "cols"]', sizes=("{ rows = 4, cols = 8 }", "[{ rows = 1, cols = 3 }]")))
    assert reducing.INPUT_CLASSES == op_host.DEFAULT_REDUCING_CLASSES == ("needles", "heavy_tail")
    declared = load(write_folder(tmp_path, {"input_classes": '["spikes", "alternating"]'}, name="rowwise"))
    assert declared.INPUT_CLASSES == ("spikes", "alternating")
    off = load(write_folder(tmp_path, {"input_classes": "[]"}, name="off"))
    assert off.INPUT_CLASSES == ()


def test_the_adversarial_layernorm_folder_declares_row_classes():
    folder = Path(__file__).resolve().parents[1] / "kernels" / "adversarial" / "layernorm"
    module = load(folder)
    assert module.INPUT_CLASSES == ("spikes", "alternating")
    assert module.bytes_read({"rows": 2, "cols": 8}) == 4 * (16 + 8 + 8)
