"""`gpuprof build` with a real nvcc (-arch=sm_90): every variant and the harness compile, ptxas
reports parse, -D overrides reach nvcc, broken sources name their file and line. No GPU needed."""

from __future__ import annotations

import json
import re
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from gpuprof.commands.build import BuildResult, build_family, build_variant
from gpuprof.errors import ParseError
from gpuprof.measure import timing
from gpuprof.parsers.nvcc_resources import parse_ptxas
from gpuprof.tools import _proc, nvcc
from gpuprof.variants import catalog, nvrtc

pytestmark = pytest.mark.nvcc  # skipped cleanly where nvcc is missing (tests/conftest.py)

ARCH = "sm_90"
HARNESS = Path(timing.__file__).parent / "harness.cu"
MAX_REGISTERS_PER_BLOCK = 65536
MAX_STATIC_SHARED_BYTES = 48 * 1024

FAMILIES = catalog.load_all()
COMPILED = [(f, v) for f in FAMILIES for v in f.variants if v.is_cuda]  # not vendor calls, not Triton files
COMPILED_IDS = [f"{f.name}/{v.name}" for f, v in COMPILED]

# ---------------------------------------------------------------- helpers


@pytest.fixture(scope="module")
def built() -> dict[tuple[str, str], BuildResult]:
    """One build of every shipped variant (nvcc runs in parallel threads inside build_family)."""
    out: dict[tuple[str, str], BuildResult] = {}
    for fam in FAMILIES:
        for result in build_family(fam, list(fam.variants), ARCH):
            out[(result.family, result.variant)] = result
    return out


@pytest.fixture(scope="module")
def build_json(built: dict[tuple[str, str], BuildResult]) -> list[dict]:
    """`gpuprof build --json` for everything: the CLI's selection and JSON, with nvcc's results
    taken from the `built` fixture instead of compiling every kernel a second time (27 s)."""
    from typer.testing import CliRunner

    from gpuprof.cli import app
    from gpuprof.commands import build as build_core

    def already_built(family, variants, arch, jobs=4, on_done=None, timeout_s=None):
        assert arch == ARCH
        results = [built[(family.name, v.name)] for v in variants if v.is_cuda]
        if on_done is not None:
            on_done(len(results))
        return results

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(build_core, "build_family", already_built)
        result = CliRunner().invoke(app, ["build", "--json", "-"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["kernels"]


def toy_variant(tmp_path: Path, body: str, name: str = "student") -> tuple[catalog.Family, catalog.Variant]:
    """A student-like vecadd variant in a file outside the package."""
    path = tmp_path / f"{name}.cu"
    path.write_text(textwrap.dedent(body))
    fam = catalog.load_family("vecadd")
    v = replace(fam.variant("grid"), name=name, file=path, kernel=f"vecadd_{name}", user=True)
    return fam, v


def first_line_containing(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


# ---------------------------------------------------------------- every shipped variant


def test_build_family_returns_one_result_per_compiled_variant_in_order(built):
    assert list(built) == [(f.name, v.name) for f, v in COMPILED]


@pytest.mark.parametrize(("fam", "v"), COMPILED, ids=COMPILED_IDS)
def test_variant_compiles_and_reports_resources(built, fam, v):
    result = built[(fam.name, v.name)]
    assert result.error is None
    assert result.defines == v.defines
    usage = result.usage
    assert usage is not None
    assert usage.kernel == v.kernel and usage.arch == (v.arch or ARCH)  # its own target (sm_90a) where it names one
    assert usage.registers > 0
    assert not usage.spills, f"{v.name} spills {usage.spill_store_bytes}/{usage.spill_load_bytes} bytes"
    # ptxas counts static arrays only; `extern __shared__` is sized at launch (manifest dynamic_smem)
    text = v.file.read_text()
    uses_static_shared = "__shared__" in text.replace("extern __shared__", "")
    if text.count("__global__") == 1:  # one kernel in the file: its own arrays are the file's
        assert (usage.shared_bytes > 0) == uses_static_shared
    assert usage.shared_bytes <= MAX_STATIC_SHARED_BYTES
    assert usage.shared_bytes + v.dynamic_smem_bytes() <= catalog.MAX_DYNAMIC_SMEM_BYTES


@pytest.mark.parametrize(("fam", "v"), COMPILED, ids=COMPILED_IDS)
def test_registers_fit_the_block_the_manifest_launches(built, fam, v):
    block = v.block_dims()
    assert built[(fam.name, v.name)].usage.registers * block[0] * block[1] * block[2] <= MAX_REGISTERS_PER_BLOCK


def test_harness_compiles():
    text = HARNESS.read_text()
    done = nvcc.compile_report(HARNESS, arch=ARCH)
    assert done.returncode == 0, done.stderr
    usages = parse_ptxas(done.stderr, str(HARNESS))
    declared = set(re.findall(r'extern\s+"C"\s+__global__\s+void\s+(\w+)', text))
    assert declared and {u.kernel for u in usages} == declared
    assert all(u.registers > 0 and not u.spills for u in usages)


# ---------------------------------------------------------------- the CLI


def test_build_cli_prints_the_table(runner):
    fam = catalog.load_family("vecadd")
    result = runner.invoke(_app(), ["build", "vecadd"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert any(f"nvcc -arch={ARCH}" in line for line in lines)
    for v in fam.variants:
        rows = [line for line in lines if re.search(rf"\bvecadd\b.*\b{v.name}\b", line)]
        if v.is_triton:  # not a table row: named under the table as left to Triton
            assert not any(r.startswith("│") for r in rows), v.name
            continue
        assert len(rows) == (0 if v.vendor else 1), v.name
        if not v.vendor:
            assert re.search(r"\b\d+\b", rows[0].split(v.name, 1)[1])  # a register count follows
    assert ("not built here (Triton and other Python variants compile at their first launch): vecadd/triton"
            in result.stdout)


def test_build_of_only_a_triton_variant_builds_nothing_and_says_why(runner):
    result = runner.invoke(_app(), ["build", "softmax", "-v", "triton", "--json", "-"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["kernels"] == []
    result = runner.invoke(_app(), ["build", "softmax", "-v", "triton,naive"])
    assert result.exit_code == 0, result.output
    assert "softmax/triton" in result.stdout and "compile at their first launch" in result.stdout


def test_build_json_has_one_entry_per_non_vendor_variant(build_json, built):
    assert [(e["family"], e["variant"]) for e in build_json] == [(f.name, v.name) for f, v in COMPILED]
    for entry in build_json:
        assert entry["error"] is None
        assert entry["resources"] == built[(entry["family"], entry["variant"])].usage.__dict__


def test_build_json_with_a_define_override_compiles_the_override(runner, built):
    v = catalog.load_family("matmul").variant("blocktile_2d")
    smaller = v.defines["BM"] // 2
    result = runner.invoke(_app(), ["build", "matmul", "-v", v.name, "-D", f"BM={smaller}", "--json", "-"])
    assert result.exit_code == 0, result.output
    (entry,) = json.loads(result.stdout)["kernels"]
    assert entry["defines"] == {**v.defines, "BM": smaller}
    default = built[("matmul", v.name)].usage
    assert 0 < entry["resources"]["shared_bytes"] < default.shared_bytes  # the A tile is BM x BK floats


def _app():
    from gpuprof.cli import app

    return app


# ---------------------------------------------------------------- -D overrides reach nvcc


def test_nvcc_argv_passes_each_define_and_the_arch():
    argv = nvcc.nvcc_argv("nvcc", Path("k.cu"), "sm_90", {"BM": 64, "BN": 32}, Path("out.cubin"))
    assert argv[0] == "nvcc" and argv[-1] == "k.cu"
    assert "-arch=sm_90" in argv
    assert argv.count("-DBM=64") == 1 and argv.count("-DBN=32") == 1
    assert argv[argv.index("-Xptxas") + 1] == "-v"  # the resource report
    assert argv[argv.index("-o") + 1] == "out.cubin"


def test_with_defines_overrides_reach_nvcc_argv(monkeypatch):
    """Through the one subprocess wrapper: the argv build_variant hands to _proc.run."""
    seen: list[list[str]] = []

    def fake_run(argv, *, timeout_s, **kwargs):
        seen.append(argv)
        return _proc.Completed(argv, 0, "", textwrap.dedent("""\
            ptxas info    : Compiling entry function 'matmul_blocktile_2d' for 'sm_90'
            ptxas info    : Used 90 registers, used 1 barriers, 6144 bytes smem
            """))

    monkeypatch.setattr(_proc, "run", fake_run)
    fam = catalog.load_family("matmul")
    v = fam.variant("blocktile_2d")
    result = build_variant(fam, v.with_defines({"BM": 64}), ARCH)
    (argv,) = seen
    assert "-DBM=64" in argv and f"-DBM={v.defines['BM']}" not in argv
    assert {f"-D{k}={x}" for k, x in v.defines.items() if k != "BM"} <= set(argv)
    assert result.defines["BM"] == 64 and result.usage.registers == 90


# ---------------------------------------------------------------- broken student sources


def test_syntax_error_names_the_file_and_line(tmp_path):
    body = """\
        // vecadd / student
        extern "C" __global__ void vecadd_student(const float* a, const float* b, float* c, int n) {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i < n) c[i] = a[i] + ;
        }
        """
    fam, v = toy_variant(tmp_path, body)
    result = build_variant(fam, v, ARCH)
    assert result.usage is None
    line = first_line_containing(v.file.read_text(), "a[i] + ;")
    assert result.error is not None
    assert re.search(rf"student\.cu:{line}: error", result.error), result.error


def test_nvrtc_errors_are_written_file_colon_line():
    """The log NVRTC gave for a student's typo on the H100 (through CuPy's CompileException)."""
    log = ('/tmp/student/broken.cu(20): error: identifier "Az" is undefined\n\n'
           '1 error detected in the compilation of "/tmp/student/broken.cu".\n')
    assert nvrtc._first_error(log) == '/tmp/student/broken.cu:20: error: identifier "Az" is undefined'


def test_kernel_without_extern_c_builds_by_its_cpp_name(tmp_path):
    """Issue 24: a C++ kernel is reached by its C++ name (the mangled symbol nvcc writes, demangled)."""
    body = """\
        __global__ void vecadd_student(const float* a, const float* b, float* c, int n) {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i < n) c[i] = a[i] + b[i];
        }
        """
    fam, v = toy_variant(tmp_path, body)
    result = build_variant(fam, v, ARCH)
    assert result.error is None, result.error
    assert result.usage is not None and result.usage.kernel.startswith("_Z14vecadd_student")


def test_build_family_keeps_going_after_a_broken_variant(tmp_path):
    fam, broken = toy_variant(tmp_path, "extern \"C\" __global__ void vecadd_student( {\n")
    results = build_family(fam, [broken, fam.variant("grid")], ARCH)
    assert [r.variant for r in results] == ["student", "grid"]
    assert results[0].error and results[1].error is None and results[1].usage.registers > 0


def test_vendor_variant_is_not_compiled():
    fam = catalog.load_family("matmul")
    assert build_family(fam, [fam.variant("cublas")], ARCH) == []
    with pytest.raises(ValueError):
        build_variant(fam, fam.variant("cublas"), ARCH)


def test_triton_variant_is_not_compiled_by_nvcc():
    fam = catalog.load_family("vecadd")
    assert [r.variant for r in build_family(fam, [fam.variant("triton"), fam.variant("grid")], ARCH)] == ["grid"]
    with pytest.raises(ValueError, match="Triton"):
        build_variant(fam, fam.variant("triton"), ARCH)


# ---------------------------------------------------------------- parse_ptxas on hand-written reports

REPORT = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'plain' for 'sm_90'
ptxas info    : Function properties for plain
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, used 1 barriers, 1024 bytes smem
ptxas info    : Compile time = 9.266 ms
ptxas info    : Compiling entry function 'spilly' for 'sm_90'
ptxas info    : Function properties for spilly
    848 bytes stack frame, 308 bytes spill stores, 368 bytes spill loads
ptxas info    : Used 32 registers, used 0 barriers, 848 bytes cumulative stack size
ptxas info    : Compile time = 47.890 ms
ptxas info    : Function properties for _Z6helperPfi
    16 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
"""


def test_parse_ptxas_with_spills_and_a_stack_frame():
    plain, spilly = parse_ptxas(REPORT)
    assert (plain.kernel, plain.arch, plain.registers, plain.shared_bytes, plain.barriers) == (
        "plain", "sm_90", 10, 1024, 1)
    assert (plain.stack_bytes, plain.spills) == (0, False)
    assert (spilly.kernel, spilly.registers, spilly.shared_bytes, spilly.barriers) == ("spilly", 32, 0, 0)
    assert (spilly.stack_bytes, spilly.spill_store_bytes, spilly.spill_load_bytes) == (848, 308, 368)
    assert spilly.spills


def test_parse_ptxas_ignores_device_function_properties_after_the_entries():
    assert [u.kernel for u in parse_ptxas(REPORT)] == ["plain", "spilly"]  # _Z6helperPfi is no entry


def test_parse_ptxas_of_nothing_is_empty():
    assert parse_ptxas("") == []


def test_parse_ptxas_entry_without_used_line_is_a_parse_error():
    text = REPORT.split("ptxas info    : Used 32")[0]
    with pytest.raises(ParseError) as info:
        parse_ptxas(text, "kernels/x/y.cu")
    assert info.value.path == "kernels/x/y.cu"
    assert "spilly" in info.value.where
    assert "Used" in info.value.why
    assert info.value.exit_code == 2


def test_parse_ptxas_entry_without_used_line_before_another_entry_is_a_parse_error():
    text = REPORT.replace("ptxas info    : Used 10 registers, used 1 barriers, 1024 bytes smem\n", "")
    with pytest.raises(ParseError, match="plain"):
        parse_ptxas(text)
