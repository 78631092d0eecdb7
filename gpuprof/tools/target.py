"""The child command profilers and sanitizers watch: `python -m gpuprof launch FAMILY VARIANT ...`."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field


@dataclass(frozen=True)
class LaunchTarget:
    """One variant launched alone in a child process, inside NVTX ranges family -> variant."""

    family: str
    variant: str
    size: dict[str, int]
    count: int = 1
    warmup: int = 0
    plain_allocations: bool = False
    defines: dict[str, int] = field(default_factory=dict)
    add: tuple[str, ...] = ()  # --add options of a user's variant, passed on to the child
    locator: str = ""  # how the child finds the family (Family.locator: a name or a folder); "": `family`

    @property
    def nvtx_include(self) -> str:
        """ncu's expression for exactly this variant's launches (push/pop ranges need the '/').

        A variant named like its family (fused/fused) is selected by the family range alone: on
        the H100 ncu 2025.3 profiled nothing for 'fused/fused/', a range nested in one of the same
        name. The child runs only the variants asked for, each inside the family range, so the
        family range selects the same launches (warm-ups run outside every range)."""
        if self.variant == self.family:
            return f"{self.family}/"
        return f"{self.family}/{self.variant}/"

    def argv(self) -> list[str]:
        size = ",".join(f"{k}={v}" for k, v in self.size.items())
        argv = [sys.executable, "-m", "gpuprof", "launch", self.locator or self.family, self.variant, "--size", size,
                "--count", str(self.count), "--warmup", str(self.warmup)]
        if self.plain_allocations:
            argv.append("--plain-alloc")
        for name, value in self.defines.items():
            argv += ["--define", f"{name}={value}"]
        return argv + list(self.add)
