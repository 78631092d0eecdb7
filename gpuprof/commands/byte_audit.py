"""`run --audit`: the hardware as a witness, without the whole profile (issue 39).

After check and timing, each row checked OK is launched once more under Nsight Compute, at the size
it was timed at, with ncu's cache control (the caches flushed before the launch: a cold L2) and one
section (SpeedOfLight: a few replay passes, besides the DRAM byte counters gpuprof always collects).
Its DRAM read and write bytes are judged by the byte rule (analysis/byte_witness.py): reads clearly
below the bytes the op's inputs hold make the row IMPOSSIBLE, the counts named. The rule needs the
op to hold several L2s of input (byte_witness.L2_MULTIPLE); below that the row says it was not judged.

Opt-in (`--audit`): one ncu child per family costs seconds to minutes, more than many runs take.
`--with ncu` applies the same rule to its full profile, so the two are not combined. When ncu is on
the PATH and neither was asked, the run's footnote says the audit is there to take (offer())."""

from __future__ import annotations

from pathlib import Path

from gpuprof.analysis import byte_witness
from gpuprof.progress import ProgressFn
from gpuprof.results import OK, Row
from gpuprof.variants.catalog import Family
from gpuprof.variants.selection import VariantOptions

AUDIT_SECTIONS = ("SpeedOfLight",)


def audit(rows: list[Row], family: Family, size: dict[str, int], options: VariantOptions, out_dir: Path,
          progress: ProgressFn | None = None) -> None:
    """Judge each OK row by its DRAM bytes at one cold launch: IMPOSSIBLE with the counts named, or a
    note with them (the footnote's)."""
    from gpuprof import families
    from gpuprof.gpu import device_info

    ok = [r for r in rows if r.check.status == OK]
    must_read = families.host(family).bytes_read(size)
    if not ok or not must_read:
        return
    l2_bytes = device_info().l2_bytes
    if must_read < byte_witness.L2_MULTIPLE * l2_bytes:
        for row in ok:
            row.check.notes.append(f"byte audit: not judged: the op's {must_read / 1e9:.3g} GB of inputs are under "
                                   f"{byte_witness.L2_MULTIPLE} L2s ({l2_bytes / 1e6:.0f} MB each); "
                                   "give a larger --size")
        return
    must_write = families.host(family).bytes_moved(size) - must_read
    for row, counted in zip(ok, _profile(ok, family, size, options, out_dir, progress)):
        judge(row, counted, must_read, must_write, l2_bytes)


def judge(row: Row, counted: tuple[float | None, float | None] | str, must_read: float, must_write: float,
          l2_bytes: int) -> None:
    """One row against its counted (read, written) DRAM bytes, or the reason ncu gave none."""
    if isinstance(counted, str):
        row.check.notes.append(f"byte audit: not judged: {counted}")
        return
    read, written = counted
    if not byte_witness.mark(row, read, must_read, written, must_write, l2_bytes) and read is not None:
        row.check.notes.append(f"byte audit: ncu counted {read / 1e9:.3g} GB read from DRAM at one cold-L2 launch, "
                               f"{100 * read / must_read:.0f} % of the {must_read / 1e9:.3g} GB its inputs hold "
                               f"(IMPOSSIBLE below {100 * byte_witness.RATIO:.0f} %)")


def _profile(rows: list[Row], family: Family, size: dict[str, int], options: VariantOptions, out_dir: Path,
             progress: ProgressFn | None) -> list[tuple[float | None, float | None] | str]:
    """Per row, ncu's summed (read, written) DRAM bytes over the variant's launches, or why none."""
    from gpuprof.commands import ncu as ncu_core
    from gpuprof.commands.row_story import ncu_summary, size_text
    from gpuprof.commands.target import Target

    target = Target(families=(family.locator,), options=options, size=size_text(family, size),
                    variants=",".join(r.variant for r in rows))
    run = ncu_core.execute(ncu_core.NcuRequest(target, out_dir=out_dir, sections=AUDIT_SECTIONS), progress)
    by_label = {result.label: result for result in run.results}
    counted: list[tuple[float | None, float | None] | str] = []
    for row in rows:
        result = by_label.get(row.variant)
        if result is None or result.error or result.note or not result.rows:
            counted.append((result and (result.error or result.note)) or "ncu returned nothing for this variant")
            continue
        part = ncu_summary(result.rows)  # the DRAM bytes summed as --with ncu sums them
        counted.append((part.dram_read_bytes, part.dram_write_bytes))
    return counted


def offer(family: Family, size: dict[str, int]) -> str | None:
    """The footnote's line when the audit was not asked: ncu is here and the family says what its op
    reads. None when either is missing (nothing to offer)."""
    from gpuprof import families
    from gpuprof.errors import EnvironmentProblem
    from gpuprof.tools import ncu as ncu_tool

    try:
        must_read = families.host(family).bytes_read(size)
        if not must_read:
            return None
        ncu_tool.find_ncu(None)
    except EnvironmentProblem:
        return None
    return (f"byte audit not run: --audit launches each OK row once under ncu (cold L2) and makes it IMPOSSIBLE if "
            f"it read clearly less from DRAM than the {must_read / 1e9:.3g} GB its inputs hold")

