"""Text from files is data: control characters (ESC sequences that clear the screen or move the
cursor, CR and backspace that overwrite a line), C1 controls and the bidi controls that reorder a
line (U+202A-U+202E, U+2066-U+2069, and the marks U+200E, U+200F, U+061C) are written as visible
escapes (\\x1b, \\u202e) wherever gpuprof prints them: error lines, tables and Markdown."""

from __future__ import annotations

import re

_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
_UNSAFE_WITH_NEWLINE = re.compile(_UNSAFE.pattern[:-1] + "\n]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str, newlines: bool = True) -> str:
    """`text` with every control and bidi character written as an escape; newlines kept unless
    `newlines` is False (one-line places: a Markdown cell)."""
    return (_UNSAFE if newlines else _UNSAFE_WITH_NEWLINE).sub(_escape, text)


def is_safe(text: str) -> bool:
    return _UNSAFE.search(text) is None
