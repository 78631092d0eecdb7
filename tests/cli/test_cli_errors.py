"""The CLI's error boundary through CliRunner: exit code, exactly one 'error:' line, never a traceback.

Usage errors must be found before any GPU access: the `forbid_gpu` fixture makes every GPU access
fail with exit 3, so these cases give exit 2 on a GPU machine too.
"""

from __future__ import annotations

import json
import re
import sys
from fnmatch import fnmatch

import pytest

from gpuprof import gpu
from gpuprof.cli import app
from gpuprof.errors import EnvironmentProblem
from gpuprof.measure.timing import MODES
from gpuprof.variants import catalog

# ---------------------------------------------------------------- helpers

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
FAMILY_CHOICES = ", ".join(catalog.family_names())
MATMUL_CHOICES = ", ".join(catalog.load_family("matmul").variant_names)
VECADD_CHOICES = ", ".join(catalog.load_family("vecadd").variant_names)


def plain(text: str) -> str:
    return ANSI.sub("", text)


def error_lines(text: str) -> list[str]:
    return [line for line in plain(text).splitlines() if line.startswith("error:")]


def invoke(runner, argv: list[str], tmp_path=None):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    return runner.invoke(app, argv)


def assert_one_error(result, code: int, words: list[str]) -> str:
    """Exit `code`, one 'error:' line on stderr containing every word, nothing like a traceback."""
    assert "Traceback" not in result.output
    assert isinstance(result.exception, SystemExit), f"crashed: {result.exception!r}\n{result.output}"
    assert result.exit_code == code, result.output
    lines = error_lines(result.stderr)
    assert len(lines) == 1, result.output
    assert error_lines(result.stdout) == []
    for word in words:
        assert word in lines[0]
    return lines[0]


def assert_lines_match(text: str, *patterns: str) -> None:
    lines = plain(text).splitlines()
    for pattern in patterns:
        assert any(fnmatch(line, pattern) for line in lines), f"no line matches {pattern!r}"


@pytest.fixture
def forbid_gpu(monkeypatch):
    """Any GPU access becomes an exit-3 error that names this test's reason."""
    def no_access() -> int:
        raise EnvironmentProblem("GPU accessed before the command line was validated")

    gpu.device_info.cache_clear()
    monkeypatch.setattr(gpu, "require_gpu", no_access)
    yield
    gpu.device_info.cache_clear()


# ---------------------------------------------------------------- usage and input errors (exit 2)

USAGE_ERRORS = {
    "unknown family": (["run", "nope"], ["unknown family 'nope'", FAMILY_CHOICES]),
    "unknown variant": (["run", "matmul", "--variants", "naive,bogus"], ["unknown variant 'bogus'", MATMUL_CHOICES]),
    "unknown variant -v": (["run", "vecadd", "-v", "grid,nope"], ["unknown variant 'nope'", VECADD_CHOICES]),
    "empty variants": (["run", "vecadd", "-v", ","], ["empty", VECADD_CHOICES]),
    "unknown baseline": (["run", "matmul", "--baseline", "zzz"], ["unknown --baseline 'zzz'", MATMUL_CHOICES]),
    "size 0": (["run", "vecadd", "--size", "0"], ["bad size '0'", "positive"]),
    "size -3": (["run", "vecadd", "--size", "-3"], ["bad size '-3'", "positive"]),
    "size abc": (["run", "vecadd", "--size", "abc"], ["bad size 'abc'", "--size for vecadd"]),
    "size 2-d for matmul": (["run", "matmul", "--size", "4096x4096"], ["bad size '4096x4096'", "MxNxK"]),
    "size 2^40": (["run", "vecadd", "--size", "2^40"], ["bad size '2^40'", "32-bit"]),
    "size k missing": (["run", "matmul", "--size", "m=1,n=2"], ["bad size 'm=1,n=2'", "MxNxK"]),
    "unknown timing mode": (["run", "vecadd", "--timing", "warm"], ["unknown timing mode 'warm'", ", ".join(MODES)]),
    "min samples 0": (["run", "vecadd", "--min-samples", "0"], ["--min-samples 0", "at least 1"]),
    "max time 0": (["run", "vecadd", "--max-time", "0"], ["--max-time 0", "positive"]),
    "target spread 2": (["run", "vecadd", "--target-spread", "2"], ["--target-spread 2", "between 0 and 1"]),
    "define without value": (["run", "matmul", "-D", "BM"], ["bad --define 'BM'", "NAME=INTEGER"]),
    "define not an integer": (["run", "matmul", "-D", "BM=x"], ["bad --define 'BM=x'", "not an integer"]),
    "define bad name": (["run", "matmul", "--define", "1X=3"], ["bad --define '1X=3'", "NAME=INTEGER"]),
    "json into a missing directory": (["run", "vecadd", "--json", "{tmp}/missing/r.json"],
                                      ["{tmp}/missing", "does not exist"]),
    "compare a missing file": (["compare", "{tmp}/base.json", "{tmp}/new.json"], ["cannot read", "{tmp}/base.json"]),
    "launch unknown variant": (["launch", "vecadd", "bogus"], ["unknown variant 'bogus'", VECADD_CHOICES]),
    "launch bad size": (["launch", "matmul", "naive", "--size", "1x2"], ["bad size '1x2'"]),
    "list unknown family": (["list", "nope"], ["unknown family 'nope'", FAMILY_CHOICES]),
    "build unknown family": (["build", "nope"], ["unknown family 'nope'", FAMILY_CHOICES]),
    "build unknown variant": (["build", "matmul", "-v", "bogus"], ["unknown variant 'bogus'", MATMUL_CHOICES]),
    "build bad define": (["build", "matmul", "-D", "BM=x"], ["bad --define 'BM=x'"]),
    "suite missing file": (["suite", "{tmp}/nope.toml"], ["{tmp}/nope.toml"]),
    "suite json into a missing directory": (["suite", "suites/smoke.toml", "--json", "{tmp}/missing/s.json"],
                                            ["does not exist"]),
    "ncu with no target": (["ncu"], ["name a family"]),
    "ncu unknown variant": (["ncu", "matmul", "-v", "bogus"], ["unknown variant 'bogus'", MATMUL_CHOICES]),
    "ncu bad clock control": (["ncu", "vecadd", "--clock-control", "boost"], ["unknown --clock-control 'boost'"]),
    "ncu plot into a missing directory": (["ncu", "vecadd", "--plot", "{tmp}/missing/r.png"], ["does not exist"]),
    "ncu import a missing report": (["ncu", "--import", "{tmp}/nope.ncu-rep"], ["cannot read", "nope.ncu-rep"]),
    "sanitize unknown tool": (["sanitize", "vecadd", "--tool", "leakcheck"], ["unknown --tool 'leakcheck'"]),
    "sanitize unknown variant": (["sanitize", "vecadd", "-v", "bogus"], ["unknown variant 'bogus'", VECADD_CHOICES]),
    "sanitize import a missing log": (["sanitize", "--import", "{tmp}/nope.log"], ["cannot read", "nope.log"]),
    "nsys unknown variant": (["nsys", "matmul", "-v", "bogus"], ["unknown variant 'bogus'"]),
    "new bad name": (["new", "vecadd", "my-kernel"], ["cannot name a variant"]),
    "add a missing file": (["run", "vecadd", "--add", "{tmp}/nope.cu"], ["cannot read"]),
    "block without add": (["run", "vecadd", "--block", "128"], ["go with --add"]),
    "add with a bad block": (["run", "vecadd", "--add", "tests/kernels/oob_write.cu", "--block", "0"],
                             ["bad --block '0'"]),
    "launch bad define": (["launch", "matmul", "warptile", "-D", "BM=zz"], ["bad --define 'BM=zz'"]),
    "sanitize jobs 0": (["sanitize", "vecadd", "--jobs", "0"], ["--jobs 0", "at least 1"]),
    "timeout 0": (["run", "vecadd", "--timeout", "0"], ["--timeout 0", "positive"]),
    "suite negative timeout": (["suite", "suites/smoke.toml", "--timeout", "-5"], ["--timeout -5", "positive"]),
    "kernels-dir missing": (["run", "vecadd", "--kernels-dir", "{tmp}/nope"], ["--kernels-dir", "not a directory"]),
    "kernels-dir and add, dir missing": (["run", "vecadd", "--add", "tests/kernels/oob_write.cu", "--kernels-dir",
                                          "{tmp}/nope"], ["not a directory"]),
    "kernels-dir variant clashes with a built-in": (["run", "vecadd", "--kernels-dir", "tests/kernels/faulty",
                                                     "--add", "tests/kernels/faulty/infinite_loop.cu"],
                                                    ["'infinite_loop' already exists in --kernels-dir"]),
}

# A kernels-dir manifest (DIR/vecadd.toml) with one thing wrong; kernel files beside it.
GOOD_CU = ('extern "C" __global__ void k(const float* __restrict__ a, const float* __restrict__ b, '
           'float* __restrict__ c, int n) {}\n')
VARIANT = 'name = "mine"\ntechnique = "t"\nfile = "k.cu"\nkernel = "k"\nblock = [256]\ntile = [256]\n'
BAD_KERNEL_DIRS = {
    "not TOML": ("[[variant]\n", ["vecadd.toml", "not valid TOML"]),
    "no variants": ('family = "vecadd"\n', ["vecadd.toml", "[[variant]]"]),
    "other family": ('family = "matmul"\n[[variant]]\n' + VARIANT, ["family = 'matmul'", "vecadd"]),
    "unknown key": ('famly = "vecadd"\n[[variant]]\n' + VARIANT, ["unknown key 'famly'"]),
    "missing file": ("[[variant]]\n" + VARIANT.replace("k.cu", "gone.cu"), ["gone.cu", "does not exist"]),
    "missing block": ("[[variant]]\n" + VARIANT.replace("block = [256]\n", ""), ["'block' is missing"]),
    "block too big": ("[[variant]]\n" + VARIANT.replace("[256]\nt", "[2048]\nt"), ["1..1024 threads"]),
    "vendor": ('[[variant]]\nname = "v"\ntechnique = "t"\nvendor = true\n', ["vendor variants need host code"]),
    "wrong signature": ("[[variant]]\n" + VARIANT.replace("kernel = \"k\"", "kernel = \"k2\""),
                        ["no __global__ kernel", "'k2'"]),
    "duplicate names": ("[[variant]]\n" + VARIANT + "[[variant]]\n" + VARIANT, ["duplicate variant names"]),
}


@pytest.mark.parametrize(("manifest", "words"), BAD_KERNEL_DIRS.values(), ids=BAD_KERNEL_DIRS.keys())
def test_bad_kernels_dir(runner, tmp_path, forbid_gpu, manifest, words):
    (tmp_path / "k.cu").write_text(GOOD_CU)
    (tmp_path / "vecadd.toml").write_text(manifest)
    assert_one_error(invoke(runner, ["run", "vecadd", "--kernels-dir", str(tmp_path)]), 2, words)
    # the suite key reads the same manifest, before any GPU work
    (tmp_path / "s.toml").write_text('schema = 1\nkernels_dir = "."\n[[case]]\nfamily = "vecadd"\n')
    assert_one_error(invoke(runner, ["suite", str(tmp_path / "s.toml")]), 2, words)

BAD_FILES = {
    "suite not TOML": ("s.toml", "name = [", ["suite", "{file}"], ["s.toml"]),
    "suite unknown family": ("s.toml", 'schema = 1\nname = "x"\n[[case]]\nfamily = "nope"\nvariants = "all"\n',
                             ["suite", "{file}"], ["nope"]),
    "suite zero size": ("s.toml", ('schema = 1\nname = "x"\n[[case]]\nfamily = "vecadd"\nvariants = ["grid"]\n'
                                   'sizes = [{ n = 0 }]\n'), ["suite", "{file}"], ["s.toml"]),
    "results from the future": ("r.json", ('{"schema": "gpuprof.results", "schema_version": 99, "environment": {}, '
                                           '"rows": []}'),
                                ["compare", "{file}", "{file}"], ["schema_version 99", "upgrade gpuprof"]),
    "truncated results": ("r.json", '{"schema": "gpuprof.results", "schema_ver', ["compare", "{file}", "{file}"],
                          ["not valid JSON"]),
    "sanitizer log that is not one": ("x.log", "hello\n", ["sanitize", "--import", "{file}"], ["x.log"]),
    "suite kernels_dir missing": ("s.toml", 'schema = 1\nkernels_dir = "nope"\n[[case]]\nfamily = "vecadd"\n',
                                  ["suite", "{file}"], ["'kernels_dir' 'nope' is not a folder"]),
    "suite kernels_dir not a string": ("s.toml", 'schema = 1\nkernels_dir = 3\n[[case]]\nfamily = "vecadd"\n',
                                       ["suite", "{file}"], ["'kernels_dir' must be a folder path"]),
}


@pytest.mark.parametrize(("name", "content", "argv", "words"), BAD_FILES.values(), ids=BAD_FILES.keys())
def test_bad_input_file(runner, tmp_path, forbid_gpu, name, content, argv, words):
    path = tmp_path / name
    path.write_text(content)
    result = runner.invoke(app, [a.replace("{file}", str(path)) for a in argv])
    assert_one_error(result, 2, words)


@pytest.mark.parametrize(("argv", "words"), USAGE_ERRORS.values(), ids=USAGE_ERRORS.keys())
def test_usage_error(runner, tmp_path, forbid_gpu, argv, words):
    result = invoke(runner, argv, tmp_path)
    assert_one_error(result, 2, [w.replace("{tmp}", str(tmp_path)) for w in words])


def test_compare_with_a_file_that_is_not_results(runner, tmp_path):
    (tmp_path / "base.json").write_text("[]")
    (tmp_path / "new.json").write_text("{")
    result = invoke(runner, ["compare", "{tmp}/base.json", "{tmp}/new.json"], tmp_path)
    assert_one_error(result, 2, ["base.json", "not a gpuprof results file"])


TYPER_ERRORS = {
    "missing argument": (["run"], "error: missing argument 'family' (see gpuprof run --help)"),
    "missing second argument": (["compare", "a.json"],
                                "error: Missing argument 'NEW': give BASE and NEW results files*"),
    "unknown option": (["run", "vecadd", "--bogus"], "error: no such option --bogus*"),  # may suggest a close one
    "option with a close name": (["run", "vecadd", "--variant", "x"],
                                 "error: no such option --variant; did you mean --variants?"),
    "unknown command": (["frobnicate"], "error: no such command 'frobnicate'; choose from: *"),
    "command with a close name": (["lst"], "error: no such command 'lst'; did you mean list?"),
    "option needs a value": (["run", "vecadd", "--size"], "error: option '--size' requires an argument"),
    "not an integer option": (["run", "vecadd", "--min-samples", "many"], "error: invalid value for '--min-samples'*"),
}


@pytest.mark.parametrize(("argv", "pattern"), TYPER_ERRORS.values(), ids=TYPER_ERRORS.keys())
def test_typer_usage_error_is_one_line(runner, forbid_gpu, argv, pattern):
    result = invoke(runner, argv)
    assert result.exit_code == 2
    assert isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    lines = plain(result.stderr).splitlines()
    assert len(lines) == 1 and fnmatch(lines[0], pattern), lines


def test_version_and_short_help(runner):
    from gpuprof import __version__

    assert invoke(runner, ["--version"]).stdout.strip() == f"gpuprof {__version__}"
    assert "Usage" in plain(invoke(runner, ["run", "-h"]).stdout)
    assert "Usage" in plain(invoke(runner, ["-h"]).stdout)


def test_overflowing_size_is_a_usage_error(runner, forbid_gpu):
    assert_one_error(invoke(runner, ["run", "vecadd", "--size", "1e400"]), 2, ["bad size '1e400'"])


def test_define_that_breaks_the_geometry_is_a_usage_error(runner, forbid_gpu):
    result = invoke(runner, ["run", "matmul", "-v", "blocktile_2d", "-D", "TM=0"])
    assert_one_error(result, 2, ["TM"])


# ---------------------------------------------------------------- environment errors (exit 3, no GPU here)

GPU_COMMANDS = {
    "run": ["run", "vecadd"],
    "run check-only": ["run", "matmul", "--variants", "naive", "--size", "256", "--check-only"],
    "devicequery": ["devicequery"],
    "devicequery json": ["devicequery", "--json", "-"],
    "launch": ["launch", "vecadd", "grid"],
}


@pytest.mark.parametrize("argv", GPU_COMMANDS.values(), ids=GPU_COMMANDS.keys())
def test_gpu_command_without_a_gpu_exits_3(runner, no_gpu, argv):
    """CuPy installed, no usable GPU: a machine with no driver at all is told so, not that its
    driver is too old (without CuPy the next test pins the message)."""
    pytest.importorskip("cupy", reason="this case needs CuPy installed; the no-CuPy case is the next test")
    line = assert_one_error(invoke(runner, argv), 3, [])
    assert line == f"error: {' '.join(no_gpu.split())}"
    assert "no CUDA GPU" in line or "no NVIDIA driver found" in line
    assert "insufficient" not in line.lower()


@pytest.mark.parametrize("argv", GPU_COMMANDS.values(), ids=GPU_COMMANDS.keys())
def test_gpu_command_without_cupy_exits_3_and_says_how_to_install_it(runner, no_gpu, monkeypatch, argv):
    monkeypatch.setitem(sys.modules, "cupy", None)  # `import cupy` raises ImportError, installed or not
    line = assert_one_error(invoke(runner, argv), 3, [])
    assert "CuPy is not installed" in line and "pip install 'gpuprof[cuda13]'" in line


def test_run_without_a_gpu_writes_no_json(runner, no_gpu, tmp_path):
    result = invoke(runner, ["run", "vecadd", "--json", "{tmp}/r.json"], tmp_path)
    assert_one_error(result, 3, [])
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- help and list (exit 0)


def test_top_level_help(runner):
    result = invoke(runner, ["--help"])
    assert result.exit_code == 0
    out = plain(result.stdout)
    assert "Examples" in out
    for command in ("list", "build", "run", "compare", "devicequery"):
        assert_lines_match(out, f"*{command} *")


def test_run_help_has_examples_and_options(runner):
    result = invoke(runner, ["run", "--help"])
    assert result.exit_code == 0
    out = plain(result.stdout)
    for word in ("Examples", "--variants", "--size", "--timing", "--json", "--define"):
        assert word in out


def test_list_shows_every_family_and_variant(runner):
    result = invoke(runner, ["list"])
    assert result.exit_code == 0, result.output
    out = result.stdout
    for fam in catalog.load_all():
        assert_lines_match(out, f"{fam.name}: *")
        assert f"; baseline {fam.baseline})" in " ".join(out.split())  # in the title, which may wrap
        for v in fam.variants:
            assert_lines_match(out, f"*{v.name}{' (vendor)' if v.vendor else ''}*")


def test_list_json_comes_from_the_manifests(runner):
    result = invoke(runner, ["list", "--json", "-"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["schema"] == "gpuprof.list"
    data = document["families"]
    families = catalog.load_all()
    assert [f["family"] for f in data] == [f.name for f in families]
    for entry, fam in zip(data, families):
        assert entry["baseline"] == fam.baseline
        assert entry["vendor_reference"] == fam.vendor_reference
        assert entry["default_size"] == fam.default_size
        assert [v["name"] for v in entry["variants"]] == fam.variant_names
        assert [v["technique"] for v in entry["variants"]] == [v.technique for v in fam.variants]
        assert [v["defines"] for v in entry["variants"]] == [v.defines for v in fam.variants]


def test_list_one_family_json(runner):
    result = invoke(runner, ["list", "vecadd", "--json", "-"])
    assert result.exit_code == 0
    assert [f["family"] for f in json.loads(result.stdout)["families"]] == ["vecadd"]
