"""Which resource bounds a row (pure): compute, DRAM, L2 or the host link, from its roofline.

A whole-run change is rarely uniform: a lower SM clock slows compute-bound rows, a memory clock or
ECC change DRAM-bound ones, a PCIe link change only transfers. compare estimates one shift per
class from that class's control rows, so each row is judged against what could have moved it.
"""

from __future__ import annotations

from gpuprof.analysis.ceilings import Ceilings
from gpuprof.results import Row

COMPUTE, DRAM, L2, LINK, OTHER = "compute", "DRAM", "L2", "host link", "other"
RESOURCE_CLASSES = (COMPUTE, DRAM, L2, LINK, OTHER)
L2_TIMING_MODES = ("hot", "graph")  # inputs stay in L2 between launches (analysis.derive.L2_MODES)


def resource_class(row: Row, ceilings: Ceilings | None) -> str:
    """The row's bound: "host link" for transfers (rate kind link); else its arithmetic intensity
    (FLOP / byte) against the GPU's ridge point (the precision's peak / DRAM bandwidth): compute at
    or above it; below it, "L2" when the timing keeps inputs in L2 and they fit, else "DRAM". Without
    ceilings the row's rate kind decides (flop: compute, bytes: DRAM); with nothing known, "other"."""
    kind = row.derived.rate_kind if row.derived is not None else None
    if kind == "link":
        return LINK
    peak = ceilings.ceiling("flop", row.precision) if ceilings is not None else None
    bandwidth = ceilings.bandwidth_bytes_s if ceilings is not None else None
    if row.flop and row.bytes and peak is not None and peak.value and bandwidth:
        if row.flop / row.bytes >= peak.value / bandwidth:
            return COMPUTE
        mode = row.timing.mode if row.timing is not None else ""
        l2_bytes = ceilings.l2_bytes if ceilings is not None else 0
        return L2 if mode in L2_TIMING_MODES and l2_bytes and row.bytes <= l2_bytes else DRAM
    return {"flop": COMPUTE, "bytes": DRAM}.get(kind or "", OTHER)
