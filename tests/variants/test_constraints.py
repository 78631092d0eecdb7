"""Size constraints (`require`, --require): conditions in the safe expression language, the nearest
allowed check size, and the decision a run makes per variant (docs/constraints.md). No GPU."""

from __future__ import annotations

import random
import textwrap
from pathlib import Path

import pytest

from gpuprof.errors import InputError
from gpuprof.results import SKIPPED, CheckResult, Results, Row, from_dict, to_dict
from gpuprof.variants import catalog, constraints
from gpuprof.variants.expressions import check_condition, condition_names, holds

MATMUL = catalog.load_family("matmul")
MNK = ("m", "n", "k")
TILES = ("M % 128 == 0", "N % 128 == 0", "K % 16 == 0")

# ---------------------------------------------------------------- the expression language


@pytest.mark.parametrize(("condition", "names", "expected"), [
    ("M % 128 == 0", {"M": 256}, True),
    ("M % 128 == 0", {"M": 257}, False),
    ("cols <= 1024", {"cols": 1024}, True),
    ("cols < 1024", {"cols": 1024}, False),
    ("rows >= 1", {"rows": 1}, True),
    ("K % 4 != 0", {"K": 6}, True),
    ("M > N", {"M": 3, "N": 2}, True),
    ("1 <= rows <= 1024", {"rows": 2000}, False),
    ("M % BM == 0 and K % BK == 0", {"M": 128, "K": 24, "BM": 64, "BK": 8}, True),
    ("M % BM == 0 and K % BK == 0", {"M": 128, "K": 20, "BM": 64, "BK": 8}, False),
    ("(M * N) / 4 >= 1", {"M": 2, "N": 2}, True),
])
def test_conditions_hold_or_not(condition, names, expected):
    assert holds(condition, names) is expected


@pytest.mark.parametrize("condition", [
    "__import__('os').system('touch PWNED')",
    "M.__class__ == 1",
    "len('a') == 1",
    "M or N",
    "M == 1 or N == 1",
    "not M == 1",
    "M ** 2 == 4",
    "M << 1 == 2",
    "M",
    "M + 1",
    "M == 1.5",
    "M == 'a'",
    "[M] == [1]",
    "M if M else N",
    "ceil(M/32) == 1",
    "(lambda: 1)() == 1",
    "M == 1; import os",
    "M ==",
    "",
])
def test_anything_but_a_condition_is_refused(condition):
    with pytest.raises(ValueError):
        check_condition(condition)


def test_a_condition_names_its_names_and_an_unknown_name_is_an_error():
    assert condition_names("M % BM == 0 and cols <= 1024") == {"M", "BM", "cols"}
    with pytest.raises(ValueError, match="uses Q"):
        holds("Q % 2 == 0", {"M": 1})


def test_a_remainder_by_zero_counts_as_a_violation():
    assert constraints.violations(["M % BM == 0"], MNK, {"m": 4, "n": 4, "k": 4}, {"BM": 0}) == ["M % BM == 0"]


# ---------------------------------------------------------------- violations and nearest_allowed


def test_violations_name_the_failing_conditions_over_sizes_and_defines():
    size = {"m": 127, "n": 128, "k": 64}
    assert constraints.violations(TILES, MNK, size, {}) == ["M % 128 == 0"]
    assert constraints.violations(["m % BM == 0"], MNK, size, {"BM": 127}) == []


@pytest.mark.parametrize(("asked", "allowed"), [
    ({"m": 127, "n": 129, "k": 65}, {"m": 128, "n": 256, "k": 80}),
    ({"m": 257, "n": 255, "k": 300}, {"m": 384, "n": 256, "k": 304}),
    ({"m": 1, "n": 1, "k": 1}, {"m": 128, "n": 128, "k": 16}),
    ({"m": 256, "n": 384, "k": 64}, {"m": 256, "n": 384, "k": 64}),  # allowed already: unchanged
])
def test_nearest_allowed_searches_upward_first(asked, allowed):
    assert constraints.nearest_allowed(asked, TILES, MNK, {}) == allowed


def test_nearest_allowed_searches_downward_when_nothing_above_fits():
    dims = ("rows", "cols")
    assert constraints.nearest_allowed({"rows": 3, "cols": 5000}, ("cols <= 1024",), dims, {}) == \
        {"rows": 3, "cols": 1024}


def test_nearest_allowed_with_a_condition_over_two_dims():
    # m is settled first (no condition names m alone); nothing above n = 9 keeps M >= N, so n goes down
    assert constraints.nearest_allowed({"m": 5, "n": 9, "k": 1}, ("M >= N",), MNK, {}) == {"m": 5, "n": 5, "k": 1}


def test_nearest_allowed_gives_up_beyond_its_reach():
    assert constraints.nearest_allowed({"m": 5, "n": 1, "k": 1}, ("M % 100003 == 0",), MNK, {}, steps=1000) is None
    assert constraints.nearest_allowed({"m": 5, "n": 1, "k": 1}, ("M == 0",), MNK, {}, steps=1000) is None


def test_nearest_allowed_property_with_a_fixed_seed():
    rng = random.Random(20261128)
    for _ in range(200):
        tiles = {d: rng.choice([1, 2, 4, 8, 16, 32, 64, 128]) for d in "MNK"}
        requires = tuple(f"{d} % {t} == 0" for d, t in tiles.items())
        asked = {d: rng.randint(1, 5000) for d in MNK}
        found = constraints.nearest_allowed(asked, requires, MNK, {})
        assert found is not None and not constraints.violations(requires, MNK, found, {})
        for d in MNK:
            t = tiles[d.upper()]
            assert asked[d] <= found[d] < asked[d] + t  # the nearest multiple at or above
            assert found[d] == asked[d] or asked[d] % t != 0  # an allowed value stays as it was


# ---------------------------------------------------------------- what a run does (plan_check)


def test_without_constraints_the_check_sizes_are_the_familys_and_the_benchmark_size():
    plan = constraints.plan_check((), MNK, MATMUL.check_sizes, {"m": 4097, "n": 1, "k": 1}, {})
    assert plan.sizes == [*MATMUL.check_sizes, {"m": 4097, "n": 1, "k": 1}] and not plan.notes and not plan.skip


def test_check_sizes_that_break_the_constraints_are_replaced_and_said_so():
    bench = {"m": 4096, "n": 4096, "k": 4096}
    plan = constraints.plan_check(TILES, MNK, MATMUL.check_sizes, bench, {})
    assert plan.skip is None and plan.sizes[-1] == bench
    assert plan.sizes[0] == {"m": 128, "n": 256, "k": 80}
    assert plan.replaced[0] == {"asked": {"m": 127, "n": 129, "k": 65}, "checked": {"m": 128, "n": 256, "k": 80}}
    assert plan.notes[0] == "checked at 128x256x80 in place of 127x129x65 (requires M%128==0, N%128==0, K%16==0)"
    assert all(not constraints.violations(TILES, MNK, s, {}) for s in plan.sizes)


def test_passing_check_sizes_are_still_checked_unchanged():
    sizes = [{"m": 256, "n": 384, "k": 64}, {"m": 128, "n": 128, "k": 16}]
    plan = constraints.plan_check(TILES, MNK, sizes, {"m": 512, "n": 512, "k": 512}, {})
    assert plan.sizes == [*sizes, {"m": 512, "n": 512, "k": 512}] and not plan.replaced and not plan.notes


def test_a_check_size_with_no_allowed_size_near_it_is_dropped_with_a_note():
    plan = constraints.plan_check(("M % 100003 == 0",), MNK, [{"m": 5, "n": 1, "k": 1}],
                                  {"m": 100003, "n": 1, "k": 1}, {})
    assert plan.sizes == [{"m": 100003, "n": 1, "k": 1}]
    assert plan.notes == ["not checked at 5x1x1: no size near it meets M%100003==0"]


def test_a_benchmark_size_that_breaks_them_is_not_run_naming_the_constraint():
    plan = constraints.plan_check(TILES, MNK, MATMUL.check_sizes, {"m": 4097, "n": 4096, "k": 4096}, {})
    assert plan.skip == "not run: size 4097x4096x4096 breaks the variant's constraint M%128==0"
    assert plan.sizes == []


def test_the_run_turns_a_skip_into_a_skipped_row_never_wrong():
    from gpuprof.commands.run import check_plan, constrained

    variant = catalog.Variant(name="mine", technique="t", require=TILES)
    bench = {"m": 4097, "n": 4096, "k": 4096}
    plan = check_plan(MATMUL, variant, bench)
    check = constrained(CheckResult(status=SKIPPED, reasons=[plan.skip]), MATMUL, variant, plan)
    assert check.status == SKIPPED and check.reasons == [plan.skip] and check.requires == list(TILES)


def test_the_familys_constraints_join_the_variants():
    family = MATMUL.__class__(**{**vars(MATMUL), "require": ("K % 4 == 0",)})
    variant = catalog.Variant(name="mine", technique="t", require=("M % 128 == 0", "K % 4 == 0"))
    assert family.requires(variant) == ("K % 4 == 0", "M % 128 == 0")


# ---------------------------------------------------------------- the results file


def _row(check: CheckResult) -> Row:
    return Row(family="matmul", variant="mine", size={"m": 128, "n": 128, "k": 16}, vendor=False, check=check)


def test_a_rows_constraints_and_moved_sizes_round_trip_and_are_absent_otherwise():
    moved = [{"asked": {"m": 127, "n": 129, "k": 65}, "checked": {"m": 128, "n": 256, "k": 80}}]
    check = CheckResult(status="ok", requires=list(TILES), replaced_sizes=moved, notes=["checked at ..."])
    data = to_dict(Results(environment={}, rows=[_row(check), _row(CheckResult(status="ok"))]))
    assert data["rows"][0]["check"]["requires"] == list(TILES)
    assert "requires" not in data["rows"][1]["check"] and "replaced_sizes" not in data["rows"][1]["check"]
    back = from_dict(data)
    assert back.rows[0].check.replaced_sizes == moved and back.rows[1].check.requires == []


def test_a_malformed_replaced_size_is_refused_on_load():
    data = to_dict(Results(environment={}, rows=[_row(CheckResult(status="ok"))]))
    data["rows"][0]["check"]["replaced_sizes"] = [{"asked": {"m": 1}}]
    with pytest.raises(InputError, match="replaced_sizes"):
        from_dict(data)


# ---------------------------------------------------------------- manifests


def _family_folder(tmp_path: Path, extra: str) -> Path:
    folder = tmp_path / "matmul"
    folder.mkdir()
    text = (MATMUL.directory / "family.toml").read_text()
    (folder / "family.toml").write_text(extra + "\n" + text)
    for path in MATMUL.directory.iterdir():
        if path.name != "family.toml" and path.is_file():
            (folder / path.name).write_bytes(path.read_bytes())
    return folder / "family.toml"


def test_a_family_manifest_declares_require(tmp_path):
    family = catalog.parse_manifest(_family_folder(tmp_path, 'require = ["K % 1 == 0"]'))
    assert family.require == ("K % 1 == 0",)


@pytest.mark.parametrize(("line", "words"), [
    ('require = ["M %% 2 == 0"]', "is not an arithmetic expression"),
    ('require = ["M + 1"]', "is not a condition"),
    ('require = "M % 2 == 0"', "must be a list of conditions"),
    ('require = ["Q % 2 == 0"]', "'require' uses Q, which is none of the sizes"),
])
def test_a_bad_family_require_names_the_file_and_key(tmp_path, line, words):
    path = _family_folder(tmp_path, line)
    with pytest.raises(InputError) as info:
        catalog.parse_manifest(path)
    assert info.value.message.startswith(f"{path}: ") and "'require'" in info.value.message
    assert words in info.value.message and "\n" not in info.value.message


def _kernels_dir(tmp_path: Path, require: str) -> Path:
    (tmp_path / "course.cu").write_text(
        "__global__ void k(float* A, float* B, float* C, int M, int N, int K) {}\n")
    (tmp_path / "matmul.toml").write_text(textwrap.dedent(f"""\
        family = "matmul"
        [[variant]]
        name = "course"
        file = "course.cu"
        kernel = "k"
        technique = "t"
        block = ["BM", 1]
        tile = ["BM", 1]
        defines = {{ BM = 128 }}
        require = {require}
        """))
    return tmp_path


def test_a_kernels_dir_variant_declares_require_over_sizes_and_defines(tmp_path):
    from gpuprof.variants.user import AddSpec, add_to_family

    _, extra = add_to_family(MATMUL, AddSpec(None, kernels_dir=_kernels_dir(tmp_path, '["M % BM == 0"]')))
    assert extra[0].require == ("M % BM == 0",)


@pytest.mark.parametrize(("require", "words"), [
    ('["M % BM =="]', "'require' 'M % BM ==' is not an arithmetic expression"),
    ('["M % TILE == 0"]', "'require' uses TILE, which is none of the sizes and its defines"),
    ('["__import__(\'os\') == 0"]', "'require'"),
])
def test_a_bad_kernels_dir_require_is_exit_2_one_line_naming_file_and_key(runner, tmp_path, require, words):
    from gpuprof.cli import app

    folder = _kernels_dir(tmp_path, require)
    result = runner.invoke(app, ["run", "matmul", "--kernels-dir", str(folder)])
    assert result.exit_code == 2, result.output
    assert result.stderr.count("\n") == 1 and str(folder / "matmul.toml") in result.stderr
    assert words in result.stderr


def test_run_variant_reports_a_breaking_benchmark_size_as_not_run_before_any_gpu_work():
    from dataclasses import replace

    from gpuprof.commands.run import run_variant
    from gpuprof.measure.timing import TimingPolicy

    variant = replace(MATMUL.variant("naive"), require=("M % 128 == 0",))
    row = run_variant(MATMUL, variant, {"m": 4097, "n": 4096, "k": 4096}, TimingPolicy(), False, lambda _: None)
    assert row.check.status == SKIPPED and not row.failed
    assert row.check.reasons == ["not run: size 4097x4096x4096 breaks the variant's constraint M%128==0"]
    assert row.check.requires == ["M % 128 == 0"] and row.timing is None


def test_the_footer_says_what_the_constraints_did():
    from gpuprof.render.tables import footer

    skipped = "not run: size 4097x4096x4096 breaks the variant's constraint M%128==0"
    check = CheckResult(status=SKIPPED, reasons=[skipped], requires=["M % 128 == 0"])
    moved = CheckResult(status="ok", notes=["checked at 128x256x80 in place of 127x129x65 (requires M%128==0)"])
    rows = [Row(family="matmul", variant="a", size={"m": 4097, "n": 4096, "k": 4096}, vendor=False, check=check),
            Row(family="matmul", variant="b", size={"m": 4096, "n": 4096, "k": 4096}, vendor=False, check=moved)]
    from gpuprof.render.tables import RunTable

    lines = footer(RunTable(MATMUL, rows, "naive", None, "cold"), None)
    assert "a: not run: size 4097x4096x4096 breaks the variant's constraint M%128==0" in lines
    assert "b: checked at 128x256x80 in place of 127x129x65 (requires M%128==0)" in lines
