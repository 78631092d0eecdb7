"""The hooks of a family folder that describes its op in an [op] table (being written: see registry)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from gpuprof.errors import InputError


class OpModule:
    def __init__(self, family: Any, python: ModuleType | None) -> None:
        raise InputError(f"{family.directory}/family.toml: [op] tables are not supported yet")
