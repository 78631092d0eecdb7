"""ptxas -v output -> one ResourceUsage per compiled entry function."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpuprof.errors import ParseError

_ENTRY = re.compile(r"Compiling entry function '(?P<name>[^']+)' for '(?P<arch>[^']+)'")
_FRAME = re.compile(
    r"(?P<stack>\d+) bytes stack frame, (?P<spill_st>\d+) bytes spill stores, (?P<spill_ld>\d+) bytes spill loads"
)
_USED = re.compile(r"Used (?P<regs>\d+) registers(?P<rest>.*)")
_SMEM = re.compile(r"(\d+) bytes smem")
_BARRIERS = re.compile(r"used (\d+) barriers")


@dataclass(frozen=True)
class ResourceUsage:
    kernel: str
    arch: str
    registers: int
    shared_bytes: int
    stack_bytes: int
    spill_store_bytes: int
    spill_load_bytes: int
    barriers: int

    @property
    def spills(self) -> bool:
        return self.spill_store_bytes > 0 or self.spill_load_bytes > 0


def parse_ptxas(text: str, path: str | None = None) -> list[ResourceUsage]:
    """Parse `ptxas info` lines; every entry function must have its 'Used N registers' line."""
    found: list[ResourceUsage] = []
    current: dict[str, object] | None = None
    for lineno, line in enumerate(text.splitlines(), 1):
        if m := _ENTRY.search(line):
            if current is not None:
                raise ParseError(path, f"line {lineno}", f"entry {current['kernel']} has no 'Used N registers' line")
            current = {
                "kernel": m["name"],
                "arch": m["arch"],
                "stack_bytes": 0,
                "spill_store_bytes": 0,
                "spill_load_bytes": 0,
            }
        elif current is not None and (m := _FRAME.search(line)):
            current.update(
                stack_bytes=int(m["stack"]), spill_store_bytes=int(m["spill_st"]), spill_load_bytes=int(m["spill_ld"])
            )
        elif current is not None and (m := _USED.search(line)):
            smem = _SMEM.search(m["rest"])
            barriers = _BARRIERS.search(m["rest"])
            found.append(
                ResourceUsage(
                    registers=int(m["regs"]),
                    shared_bytes=int(smem.group(1)) if smem else 0,
                    barriers=int(barriers.group(1)) if barriers else 0,
                    **current,  # type: ignore[arg-type]
                )
            )
            current = None
    if current is not None:
        raise ParseError(path, f"entry {current['kernel']}", "no 'Used N registers' line followed it")
    return found
