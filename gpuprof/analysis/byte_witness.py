"""The hardware as a witness (issue 39): a kernel whose launch read clearly fewer bytes from DRAM
than its inputs hold did not read all of its input, whatever its output says.

ncu flushes the caches before each profiled launch (its default cache control), so every byte of
input a launch uses comes from DRAM at least once: an honest kernel's DRAM reads are at least the
bytes its inputs hold (the H100 recorded 33.56 MB read for vecadd's 33.55 MB of inputs). Writes may
end the launch in the L2 (write-back), so written bytes are owed only beyond one L2. The rule is
judged where the op's bytes are at least L2_MULTIPLE L2s (anything smaller says little), and only
for families that declare what their op reads (`bytes_read`): a row whose reads fall below RATIO of
its inputs, or whose writes fall below RATIO of its output less one L2, is IMPOSSIBLE.
"""

from __future__ import annotations

from gpuprof.results import IMPOSSIBLE, Row

RATIO = 0.98  # 2 % short is far outside what sector rounding and counters allow an honest kernel
L2_MULTIPLE = 4


def shortfall(read: float | None, must_read: float | None, written: float | None, must_write: float | None,
              l2_bytes: int | None) -> str | None:
    """The reason a row is IMPOSSIBLE by its DRAM bytes, or None when the rule holds or does not apply."""
    if l2_bytes is None:
        return None
    if read is not None and must_read and must_read >= L2_MULTIPLE * l2_bytes and read < RATIO * must_read:
        return (f"ncu counted {read / 1e9:.3g} GB read from DRAM, {100 * read / must_read:.0f} % of the "
                f"{must_read / 1e9:.3g} GB its inputs hold: part of its input was never read (an estimate?)")
    owed = (must_write or 0.0) - l2_bytes  # what cannot still sit in the L2 when the launch ends
    if written is not None and must_write and must_write >= L2_MULTIPLE * l2_bytes and written < RATIO * owed:
        return (f"ncu counted {written / 1e9:.3g} GB written to DRAM, {100 * written / must_write:.0f} % of "
                f"the {must_write / 1e9:.3g} GB of its output: part of its output was never written")
    return None


def mark(row: Row, read: float | None, must_read: float, written: float | None, must_write: float,
         l2_bytes: int | None) -> bool:
    """Make the row IMPOSSIBLE, the shortfall named, where its DRAM bytes fall short; True when it did."""
    why = shortfall(read, must_read, written, must_write, l2_bytes)
    if why:
        row.check.status = IMPOSSIBLE
        row.check.reasons.append(why)
    return why is not None
