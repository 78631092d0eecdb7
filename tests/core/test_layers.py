"""The package map is a stack of layers: a module imports only from its own layer or below it.

Layers, top to bottom (README "How the code is organized"):
cli -> render -> commands -> api / pytest_plugin -> suite_file -> measure -> analysis
-> variants / families / fingerprint -> tools -> parsers -> results / row_parts / gpu -> files
-> errors / paths / progress
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "gpuprof"

LAYERS = [  # lowest first; a module may import its own layer or any lower one
    {"errors", "paths", "progress", "__init__"},
    {"files"},
    {"results", "row_parts", "gpu"},
    {"parsers"},
    {"tools"},
    {"variants", "families", "fingerprint"},
    {"analysis"},
    {"measure"},
    {"suite_file"},
    {"api", "pytest_plugin"},
    {"commands"},
    {"render"},
    {"cli", "__main__"},
]


def layer_of(dotted: str) -> int:
    head = dotted.split(".")[1] if dotted.count(".") else "__init__"
    for index, names in enumerate(LAYERS):
        if head in names:
            return index
    raise AssertionError(f"gpuprof.{head} is in no layer: add it to LAYERS (and to the README's map)")


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def dotted_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("gpuprof"):
            if node.module == "gpuprof":
                found.update(f"gpuprof.{alias.name}" for alias in node.names)
            else:
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("gpuprof"))
    return found


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_point_down_the_layers(path):
    me = dotted_name(path)
    mine = layer_of(me)
    upward = sorted(m for m in imported(path) if m != "gpuprof" and layer_of(m) > mine)
    assert not upward, f"{me} (layer {mine}) imports from higher layers: {upward}"


def test_top_level_is_small():
    top = [p.name for p in PACKAGE.glob("*.py")]
    assert len(top) <= 13, f"{len(top)} modules at gpuprof/'s top level: {sorted(top)}"
