"""Fixture access for the parser tests: recorded tool output under tests/fixtures/, with sidecars."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
TOOLS = FIXTURES / "tools"


@dataclass(frozen=True)
class Fixture:
    path: Path
    text: str
    sidecar: str  # the .source.txt: origin, exact command, notes

    @property
    def command(self) -> str:
        m = re.search(r"^Command[^:]*:\s*(.+)$", self.sidecar, re.MULTILINE)
        return m.group(1) if m else ""


def load(name: str) -> Fixture:
    path = TOOLS / name if (TOOLS / name).exists() else FIXTURES / name
    side = path.with_name(path.name.rsplit(".", 1)[0] + ".source.txt")
    text = path.read_text(encoding="utf-8", errors="replace")  # binary fixtures (.sqlite) come back mangled
    return Fixture(path, text, side.read_text(encoding="utf-8") if side.exists() else "")


@pytest.fixture
def fixture():
    """`fixture("ncu_...csv")` -> Fixture(path, text, sidecar)."""
    return load


def tool_fixtures(prefix: str, *suffixes: str) -> list[str]:
    """Names of the recorded files of one tool (sidecars excluded), for parametrisation."""
    return sorted(
        p.name
        for p in TOOLS.iterdir()
        if p.name.startswith(prefix) and not p.name.endswith(".source.txt") and p.name.endswith(suffixes)
    )


def transcript_sections(text: str) -> list[tuple[str, str, str, int | None]]:
    """Split a `$ cmd / --- stdout --- / --- stderr --- / --- exit code: N ---` transcript."""
    out = []
    for chunk in re.split(r"^\$ ", text, flags=re.MULTILINE)[1:]:
        command = chunk.split("\n", 1)[0]
        stdout = re.search(r"--- stdout ---\n(.*?)--- stderr ---", chunk, re.DOTALL)
        if stdout is None:
            continue  # a "$ ..." line without recorded output (e.g. an earlier setup step)
        stderr = re.search(r"--- stderr ---\n(.*?)(?:--- exit code|\Z)", chunk, re.DOTALL)
        code = re.search(r"--- exit code: (\d+) ---", chunk)
        out.append((command, stdout.group(1), stderr.group(1) if stderr else "", int(code.group(1)) if code else None))
    return out


def mutate(text: str, data) -> str:
    """Hypothesis helper: delete/duplicate lines, substitute characters inside lines, maybe truncate."""
    from hypothesis import strategies as st

    lines = text.split("\n")
    for _ in range(data.draw(st.integers(0, 3), label="line deletions")):
        if lines:
            del lines[data.draw(st.integers(0, len(lines) - 1))]
    for _ in range(data.draw(st.integers(0, 2), label="line duplications")):
        if lines:
            src, dst = data.draw(st.integers(0, len(lines) - 1)), data.draw(st.integers(0, len(lines)))
            lines.insert(dst, lines[src])
    for _ in range(data.draw(st.integers(0, 6), label="substitutions")):
        if not lines:
            break
        k = data.draw(st.integers(0, len(lines) - 1))
        line = lines[k]
        i = data.draw(st.integers(0, len(line)))
        ch = data.draw(st.sampled_from(list(',"\n:()x0 .-=[]{}<>9#/\t') + ["", "\r", "é", "\x00"]))
        lines[k] = line[:i] + ch + line[i + 1 :]
    text = "\n".join(lines)
    if data.draw(st.booleans(), label="truncate"):
        text = text[: data.draw(st.integers(0, len(text)))]
    return text
