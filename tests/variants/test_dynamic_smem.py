"""The manifest's dynamic_smem key (issue 15 item 6): parsed and checked like block/tile, re-evaluated
under -D overrides and sweeps, reaches the launch (limit raised once, shared_mem on every call),
agrees with the .cu's own SMEM_BYTES, and a --kernels-dir manifest accepts it too."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from gpuprof.errors import InputError, UsageError
from gpuprof.families.interface import FamilyHost
from gpuprof.suite_file import load_suite
from gpuprof.variants import catalog, launch_plan, nvrtc
from gpuprof.variants.user import load_kernels_dir
from tests.variants.test_catalog import compiled_text, macros

SUITE = Path(__file__).resolve().parents[2] / "suites" / "matmul_tune.toml"
MATMUL = catalog.load_family("matmul")
DYNAMIC = [v for f in catalog.load_all() for v in f.variants if v.is_cuda and v.dynamic_smem]


def toy_manifest(tmp_path: Path, extra: str) -> Path:
    folder = tmp_path / "toy"
    folder.mkdir()
    (folder / "a.cu").write_text('// toy / a\nextern "C" __global__ void toy_a(int n) {}\n')
    path = folder / "family.toml"
    path.write_text(textwrap.dedent("""\
        family = "toy"
        summary = "a toy family"
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
        defines = { STAGES = 4, BK = 16 }
        """) + extra)
    return path


# ---------------------------------------------------------------- parsing and validation


def test_dynamic_smem_is_an_expression_over_the_defines(tmp_path):
    fam = catalog.parse_manifest(toy_manifest(tmp_path, 'dynamic_smem = "STAGES*BK*256*4"\n'))
    variant = fam.variant("a")
    assert variant.dynamic_smem_bytes() == 4 * 16 * 256 * 4
    assert variant.with_defines({"STAGES": 2}).dynamic_smem_bytes() == 2 * 16 * 256 * 4


def test_dynamic_smem_defaults_to_zero_and_takes_a_plain_integer(tmp_path):
    assert catalog.parse_manifest(toy_manifest(tmp_path, "")).variant("a").dynamic_smem_bytes() == 0
    other = tmp_path / "other"
    other.mkdir()
    variant = catalog.parse_manifest(toy_manifest(other, "dynamic_smem = 65536\n")).variant("a")
    assert variant.dynamic_smem_bytes() == 65536


BAD = {
    "unknown define": ('dynamic_smem = "STAGES*BX"', "uses BX"),
    "not arithmetic": ("dynamic_smem = \"__import__('os')\"", "only + - * /"),
    "not a number or string": ("dynamic_smem = [1024]", "must be an integer or an arithmetic string"),
    "a boolean": ("dynamic_smem = true", "must be an integer or an arithmetic string"),
    "over the per-block limit": ('dynamic_smem = "STAGES*BK*1024*4"', "0..232448"),
    "negative": ("dynamic_smem = -4", "0..232448"),
}


@pytest.mark.parametrize(("line", "why"), BAD.values(), ids=BAD.keys())
def test_bad_dynamic_smem_is_one_line_naming_the_key(tmp_path, line, why):
    path = toy_manifest(tmp_path, line + "\n")
    with pytest.raises(InputError) as info:
        catalog.parse_manifest(path)
    message = info.value.message
    assert message.startswith(f"{path}: ") and "\n" not in message and info.value.exit_code == 2
    assert "dynamic_smem" in message and why in message


def test_a_define_override_that_overflows_shared_memory_is_a_usage_error():
    swizzled = MATMUL.variant("swizzled")
    MATMUL.apply_defines([swizzled], {"STAGES": 16})  # 16 * 8 * 388 * 4 = 194 KB: fits
    with pytest.raises(UsageError, match="-D STAGES=16 -D BK=16 gives an invalid launch: .*dynamic_smem"):
        MATMUL.apply_defines([swizzled], {"STAGES": 16, "BK": 16})  # 388 KB: over
    (deeper,) = MATMUL.apply_defines([swizzled], {"STAGES": 6})
    assert deeper.dynamic_smem_bytes() == 6 * 8 * (128 + 4 + 256) * 4


def test_dynamic_smem_is_a_cuda_key(tmp_path):
    folder = tmp_path / "kd"
    folder.mkdir()
    (folder / "mine.py").write_text("def make_launch(inputs, out, size):\n    pass\n")
    (folder / "vecadd.toml").write_text('[[variant]]\nname = "mine"\nlanguage = "triton"\nfile = "mine.py"\n'
                                        'technique = "t"\ndynamic_smem = 1024\n')
    with pytest.raises(InputError, match="'dynamic_smem' does not apply to a Triton variant"):
        load_kernels_dir(folder, catalog.load_family("vecadd"))


def test_a_kernels_dir_manifest_accepts_dynamic_smem(tmp_path):
    source = MATMUL.variant("multistage").file.read_text().replace("matmul_multistage", "mine_deep")
    (tmp_path / "deep.cu").write_text(source)
    defines = ", ".join(f"{k} = {v}" for k, v in MATMUL.variant("multistage").defines.items())
    (tmp_path / "matmul.toml").write_text(textwrap.dedent(f"""\
        [[variant]]
        name = "deep"
        file = "deep.cu"
        kernel = "mine_deep"
        technique = "my deeper pipeline"
        block = ["NUM_THREADS"]
        tile = ["BN", "BM"]
        dynamic_smem = "STAGES*BK*(BM+PAD+BN)*4"
        defines = {{ {defines}, }}
        """).replace(", }", " }"))
    (variant,) = load_kernels_dir(tmp_path, MATMUL)
    assert variant.user and variant.dynamic_smem_bytes() == MATMUL.variant("multistage").dynamic_smem_bytes()


# ---------------------------------------------------------------- manifest <-> source


@pytest.mark.parametrize("v", DYNAMIC, ids=[v.name for v in DYNAMIC])
def test_shipped_dynamic_smem_matches_the_sources_smem_bytes(v):
    """The manifest's expression and the kernel's SMEM_BYTES macro must agree: a launch with less
    than the kernel indexes would read past its shared memory."""
    text = compiled_text(v)
    assert "extern __shared__" in text
    assert macros(text, v.defines)["SMEM_BYTES"] == v.dynamic_smem_bytes()


def test_dynamic_smem_matches_smem_bytes_in_every_tuning_case():
    suite = load_suite(SUITE)
    swept = [c for c in suite.cases if c.defines]
    assert swept, "the tuning suite sweeps the swizzled tile"
    for case in swept:
        (v,) = MATMUL.apply_defines([MATMUL.variant(case.variants[0])], case.defines)
        assert macros(compiled_text(v), v.defines)["SMEM_BYTES"] == v.dynamic_smem_bytes(), case.defines


# ---------------------------------------------------------------- the launch


class FakeFunction:
    """A cupy.RawKernel stand-in: records the limit it is given and each call's keywords."""

    def __init__(self) -> None:
        self.limit_sets: list[int] = []
        self.calls: list[dict[str, Any]] = []

    @property
    def max_dynamic_shared_size_bytes(self) -> int:
        return self.limit_sets[-1] if self.limit_sets else 0

    @max_dynamic_shared_size_bytes.setter
    def max_dynamic_shared_size_bytes(self, value: int) -> None:
        self.limit_sets.append(value)

    def __call__(self, grid, block, args, **kwargs) -> None:
        self.calls.append({"grid": grid, "block": block, **kwargs})


class FakeModule:
    @staticmethod
    def kernel_args(inputs, out, size):
        return ("A", "B", out)


def launched(monkeypatch, variant: catalog.Variant) -> FakeFunction:
    function = FakeFunction()
    fake = nvrtc.CompiledKernel(variant.name, variant.kernel, function, (), {variant.kernel: function})
    monkeypatch.setattr(nvrtc, "compile_variant", lambda v: fake)
    launch_for = launch_plan.make_launch_factory(MATMUL, variant, FamilyHost(FakeModule()), nvtx=False)
    size = {"m": 4096, "n": 4096, "k": 4096}
    launch = launch_for({}, "C", size)
    launch("stream-1")
    launch("stream-2")
    return function


@pytest.mark.parametrize("name", ["multistage", "swizzled", "interleaved"])
def test_the_launch_raises_the_limit_once_and_passes_shared_mem(monkeypatch, name):
    variant = MATMUL.variant(name)
    function = launched(monkeypatch, variant)
    want = variant.dynamic_smem_bytes()
    assert want > 48 * 1024  # the point of the rung: more than a static array may hold
    assert function.limit_sets == [want]
    assert [c["shared_mem"] for c in function.calls] == [want, want]
    assert [c["stream"] for c in function.calls] == ["stream-1", "stream-2"]
    assert function.calls[0]["grid"] == (4096 // 256, 4096 // 128) and function.calls[0]["block"] == (256, 1, 1)


def test_a_static_shared_memory_kernel_launches_with_none_and_keeps_its_limit(monkeypatch):
    function = launched(monkeypatch, MATMUL.variant("warptile"))
    assert function.limit_sets == []
    assert [c["shared_mem"] for c in function.calls] == [0, 0]


def test_a_sweep_case_launches_with_its_own_shared_memory(monkeypatch):
    (v,) = MATMUL.apply_defines([MATMUL.variant("swizzled")], {"BK": 16, "STAGES": 3})
    function = launched(monkeypatch, v)
    assert function.limit_sets == [3 * 16 * (128 + 4 + 256) * 4]
    assert function.calls[0]["shared_mem"] == 3 * 16 * (128 + 4 + 256) * 4


# ---------------------------------------------------------------- the tuning suite


def test_the_tuning_suite_loads_against_the_catalogue():
    families = catalog.load_all()
    suite = load_suite(SUITE, known={f.name: f.variant_names for f in families},
                       size_keys={f.name: list(f.dims) for f in families})
    assert suite.name == "matmul_tune" and suite.timing["mode"] == "cold"
    control, *swept = suite.cases
    assert control.variants == ["warptile", "multistage", "swizzled", "cublas"]
    assert {(c.family, tuple(c.variants)) for c in swept} == {("matmul", ("swizzled",))}
    assert all(c.sizes == [{"m": 4096, "n": 4096, "k": 4096}] for c in suite.cases)
    assert len({tuple(sorted(c.defines.items())) for c in swept}) == len(swept), "no case timed twice"
