"""--name / FILE:kernel=NAME, --require and run's --check-size: parsed, checked, and passed again to
a child process (AddSpec.cli_args) so that it loads the same variants. No GPU."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer

from gpuprof.cli import app
from gpuprof.errors import UsageError
from gpuprof.variants import catalog
from gpuprof.variants.selection import VariantOptions
from gpuprof.variants.user import check_name, parse_add, split_name

MATMUL = catalog.load_family("matmul")
SGEMM = """\
template <int BM, int BN, int BK, int TM, int TN>
__global__ void sgemm2DBlocktiling(const float* A, const float* B, float* C, int M, int N, int K) {}
template <int BM, int BN, int BK, int WM, int WN>
__global__ void sgemmWarptiling(float* A, float* B, float* C, int M, int N, int K) {}
"""
BLOCKTILE = "sgemm2DBlocktiling<128,128,8,8,8>"
WARPTILE = "sgemmWarptiling<128,128,16,64,64>"


@pytest.fixture
def sgemm(tmp_path: Path) -> Path:
    path = tmp_path / "sgemm.cuh"
    path.write_text(SGEMM)
    return path


@pytest.mark.parametrize(("text", "split"), [
    ("sgemm.cuh:k<128,128,8>=blocktile2d", ("sgemm.cuh:k<128,128,8>", "blocktile2d")),
    ("sgemm.cuh:k<128, (64)>=b", ("sgemm.cuh:k<128, (64)>", "b")),
    ("mine.cu=fast", ("mine.cu", "fast")),
    ("mine.cu:k", ("mine.cu:k", None)),
    ("dir=a/mine.cu:k=x", ("dir=a/mine.cu:k", "x")),  # the last '=' outside brackets
])
def test_the_name_is_after_the_last_equals_outside_angle_brackets(text, split):
    assert split_name(text) == split


def test_a_file_whose_path_has_an_equals_sign_is_not_split(tmp_path):
    path = tmp_path / "a=b.cu"
    path.write_text("__global__ void k(int n) {}\n")
    assert split_name(str(path)) == (str(path), None)


@pytest.mark.parametrize("name", ["1abc", "a-b", "a b", "x" * 65, "", "naïve"])
def test_a_bad_name_is_one_line(name):
    with pytest.raises(UsageError) as info:
        check_name(name)
    assert "bad variant name" in info.value.message and "\n" not in info.value.message


def test_two_kernels_of_one_header_side_by_side(sgemm):
    options = VariantOptions(add=[f"{sgemm}:{BLOCKTILE}=blocktile2d", f"{sgemm}:{WARPTILE}=warptile_t"])
    [(fam, chosen, extra)] = options.select([MATMUL], "naive")
    assert {"blocktile2d", "warptile_t"} <= set(fam.variant_names)
    assert [v.name for v in extra] == ["blocktile2d", "warptile_t"]
    assert [v.kernel for v in extra] == [BLOCKTILE, WARPTILE]
    assert [v.name for v in chosen] == ["naive", "blocktile2d", "warptile_t"]


def test_name_option_names_the_one_add(sgemm):
    [(_, _, extra)] = VariantOptions(add=[f"{sgemm}:{WARPTILE}"], name="mine").select([MATMUL], None)
    assert extra[0].name == "mine" and extra[0].kernel == WARPTILE


def _reparsed(args: tuple[str, ...]) -> VariantOptions:
    """What the child's command line parses into, through the real `launch` command."""
    command = typer.main.get_command(app).commands["launch"]  # type: ignore[attr-defined]
    params = command.make_context("launch", ["matmul", "x", *args]).params
    return VariantOptions(**{k: params[k] for k in ("define", "add", "block", "tile", "grid", "args",
                                                     "reads_output", "name", "require", "kernels_dir")})


def test_names_and_requires_reach_the_child_and_round_trip(sgemm):
    options = VariantOptions(add=[f"{sgemm}:{BLOCKTILE}=blocktile2d", f"{sgemm}:{WARPTILE}=warptile_t"],
                             require="M%128==0,N%128==0,K%16==0", block="256")
    args = options.cli_args()
    assert args.count("--require") == 1 and args.count("--block") == 1 and args.count("--add") == 2
    again = _reparsed(args)
    assert again.cli_args() == args
    first = [(v.name, v.kernel, v.require, v.block) for v in options.select([MATMUL], None)[0][2]]
    assert [(v.name, v.kernel, v.require, v.block) for v in again.select([MATMUL], None)[0][2]] == first
    assert first[0][2] == ("M%128==0", "N%128==0", "K%16==0")


def test_name_option_round_trips_as_file_kernel_equals_name(sgemm):
    spec = parse_add(f"{sgemm}:{WARPTILE}", name="warptile_t")
    assert spec.cli_args() == ["--add", f"{sgemm.resolve()}:{WARPTILE}=warptile_t"]
    assert parse_add(spec.cli_args()[1]) == spec


@pytest.mark.parametrize(("options", "words"), [
    ({"name": "naive"}, "variant name 'naive' already exists in matmul; choose another name"),
    ({"name": "tiled"}, "already exists in matmul"),  # an alias of smem_tiled
])
def test_a_name_that_clashes_with_the_familys_is_refused(sgemm, options, words):
    with pytest.raises(UsageError, match=words):
        VariantOptions(add=[f"{sgemm}:{WARPTILE}"], **options).select([MATMUL], None)


def test_two_adds_with_one_name_are_refused(sgemm):
    with pytest.raises(UsageError, match="already exists in --add"):
        VariantOptions(add=[f"{sgemm}:{BLOCKTILE}=same", f"{sgemm}:{WARPTILE}=same"]).select([MATMUL], None)


def test_name_option_with_several_adds_is_refused(sgemm):
    with pytest.raises(UsageError, match="names one variant but --add is given 2 times"):
        VariantOptions(add=[f"{sgemm}:{BLOCKTILE}", f"{sgemm}:{WARPTILE}"], name="x").specs()


def test_check_sizes_parse_as_sizes_do():
    sizes = VariantOptions(check_size=["M=256,N=384,K=64", "127x129x65"]).check_sizes(MATMUL)
    assert sizes == [{"m": 256, "n": 384, "k": 64}, {"m": 127, "n": 129, "k": 65}]


# ---------------------------------------------------------------- the command line


def _one_line_error(result, *words: str) -> None:
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
    for word in words:
        assert word in result.stderr, result.stderr


@pytest.mark.parametrize(("extra", "words"), [
    (["--name", "bad-name"], ["bad variant name 'bad-name'"]),
    (["--name", "naive"], ["variant name 'naive' already exists in matmul"]),
    (["--require", "M%%128==0"], ["bad --require", "is not an arithmetic expression"]),
    (["--require", "M+1"], ["bad --require", "is not a condition"]),
    (["--require", "__import__('os').system('x')==0"], ["bad --require"]),
    (["--require", "Q%2==0"], ["--require Q%2==0: Q is none of the sizes and defines"]),
])
def test_bad_name_or_require_is_exit_2_one_line(runner, sgemm, extra, words):
    _one_line_error(runner.invoke(app, ["run", "matmul", "--add", f"{sgemm}:{WARPTILE}", *extra]), *words)


def test_name_and_require_without_add_are_refused(runner):
    _one_line_error(runner.invoke(app, ["run", "matmul", "--name", "x"]), "--name and --require go with --add FILE")
    _one_line_error(runner.invoke(app, ["run", "matmul", "--require", "M%2==0"]), "go with --add FILE")


def test_a_bad_check_size_is_exit_2_one_line(runner):
    _one_line_error(runner.invoke(app, ["run", "matmul", "--check-size", "M=1,N=2"]),
                    "bad --check-size 'M=1,N=2': --check-size for matmul is MxNxK")
    _one_line_error(runner.invoke(app, ["run", "matmul", "--check-size", "0x1x1"]), "bad --check-size")


def test_check_size_is_an_option_of_run_only(runner):
    assert runner.invoke(app, ["sanitize", "matmul", "--check-size", "1"]).exit_code == 2
    assert runner.invoke(app, ["ncu", "matmul", "--check-size", "1"]).exit_code == 2


def test_a_repeated_require_or_name_is_refused(runner, sgemm):
    result = runner.invoke(app, ["run", "matmul", "--add", str(sgemm), "--name", "a", "--name", "b"])
    _one_line_error(result, "--name given more than once")


def test_help_says_what_they_do(runner):
    result = runner.invoke(app, ["run", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    for option in ("--name", "--require", "--check-size"):
        assert option in result.output
    sanitize = runner.invoke(app, ["sanitize", "--help"], env={"COLUMNS": "200"}).output
    assert "--require" in sanitize and "--check-size" not in sanitize
