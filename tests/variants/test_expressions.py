"""The manifest's geometry expressions: integer arithmetic over the defines, and nothing else runs."""

from __future__ import annotations

import pytest

from gpuprof.variants.expressions import evaluate


@pytest.mark.parametrize(
    ("expr", "defines", "expected"),
    [
        (32, {}, 32),
        ("32", {}, 32),
        ("TILE", {"TILE": 16}, 16),
        ("(BM*BN)/(TM*TN)", {"BM": 128, "BN": 128, "TM": 8, "TN": 8}, 256),
        ("(BM*BN)/TM", {"BM": 64, "BN": 64, "TM": 8}, 512),
        ("BM + BN - 1", {"BM": 4, "BN": 5}, 8),
        ("7 / 2", {}, 3),  # integer division, as in the C preprocessor
        ("7 // 2", {}, 3),
        ("((2))*(3+4)", {}, 14),
    ],
)
def test_evaluate_integer_arithmetic(expr, defines, expected):
    value = evaluate(expr, defines)
    assert value == expected
    assert type(value) is int


@pytest.mark.parametrize(
    "expr",
    [
        "__import__('os')",
        "__import__('os').system('touch PWNED')",
        "BM.real",
        "BM.__class__",
        "abs(BM)",
        "len('abc')",
        "BM ** 2",
        "BM % 3",
        "BM << 1",
        "BM if BM else 1",
        "lambda: 1",
        "[BM]",
        "'BM'",
        "1.5",
        "BM == 1",
        "BM; 1",
        "",
        "BM +",
        "UNDEFINED * 2",
    ],
)
def test_evaluate_rejects_anything_but_arithmetic_on_defines(expr, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError):
        evaluate(expr, {"BM": 64})
    assert not (tmp_path / "PWNED").exists()


def test_evaluate_names_the_unknown_define():
    with pytest.raises(ValueError, match="BX"):
        evaluate("BX * 2", {"BM": 64})
