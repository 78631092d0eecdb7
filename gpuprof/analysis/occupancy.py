"""Theoretical occupancy: how many blocks of a kernel fit on one SM at once, and which resource stops
the next one (CUDA's occupancy calculation, as cudaOccupancyMaxActiveBlocksPerMultiprocessor does it).

Pure arithmetic on ptxas's resource report and the launch's block size; the limits are per
architecture (docs/occupancy.md lists sm_90's and where they come from). Registers are given out per
warp in units of REGISTER_UNIT, and an SM's register file is split between its WARP_GRANULE
sub-partitions, so the warps a register count allows are counted per sub-partition; every block
takes RESERVED_SMEM_PER_BLOCK bytes of shared memory besides its own (sm_80 and later).
"""

from __future__ import annotations

from dataclasses import dataclass

REGISTERS, SHARED_MEMORY, WARPS, BLOCKS = "registers", "shared memory", "warps", "blocks"


@dataclass(frozen=True)
class SmLimits:
    arch: str
    registers_per_sm: int
    max_registers_per_thread: int
    register_unit: int  # registers are allocated per warp in multiples of this
    warp_granule: int  # register-file sub-partitions: warps are placed in multiples of this
    max_threads_per_sm: int
    max_warps_per_sm: int
    max_blocks_per_sm: int
    max_threads_per_block: int
    smem_per_sm: int  # bytes, the largest carveout
    max_smem_per_block: int  # bytes a block may opt in to (static + dynamic)
    reserved_smem_per_block: int  # bytes the system takes from every block's share
    smem_unit: int  # shared memory is allocated per block in multiples of this
    warp_size: int = 32


# NVIDIA H100/H200 (compute capability 9.0): CUDA C++ Programming Guide, "Technical Specifications per
# Compute Capability", and the CUDA occupancy calculator (cuda_occupancy.h). docs/occupancy.md.
SM_90 = SmLimits(arch="sm_90", registers_per_sm=65536, max_registers_per_thread=255, register_unit=256,
                 warp_granule=4, max_threads_per_sm=2048, max_warps_per_sm=64, max_blocks_per_sm=32,
                 max_threads_per_block=1024, smem_per_sm=228 * 1024, max_smem_per_block=227 * 1024,
                 reserved_smem_per_block=1024, smem_unit=128)
LIMITS = {"sm_90": SM_90, "sm_90a": SM_90}


@dataclass(frozen=True)
class Occupancy:
    blocks_per_sm: int
    warps_per_sm: int
    occupancy: float  # active warps / the SM's maximum, 0..1
    limiters: tuple[str, ...]  # the resources that allow no more blocks (ties: all of them)
    note: str = ""  # why no block fits at all, when blocks_per_sm is 0

    @property
    def limiter(self) -> str:
        return " & ".join(self.limiters)


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


def theoretical_occupancy(threads_per_block: int, registers_per_thread: int, smem_per_block: int,
                          limits: SmLimits = SM_90) -> Occupancy:
    """Blocks per SM and theoretical occupancy of a kernel using `registers_per_thread` (ptxas) and
    `smem_per_block` bytes of shared memory (static + dynamic), launched with `threads_per_block`."""
    if not 1 <= threads_per_block <= limits.max_threads_per_block:
        raise ValueError(f"{threads_per_block} threads per block: {limits.arch} allows 1 to "
                         f"{limits.max_threads_per_block}")
    if registers_per_thread < 0 or smem_per_block < 0:
        raise ValueError("registers and shared memory cannot be negative")
    warps_per_block = -(-threads_per_block // limits.warp_size)
    by: dict[str, int] = {
        WARPS: min(limits.max_warps_per_sm, limits.max_threads_per_sm // limits.warp_size) // warps_per_block,
        BLOCKS: limits.max_blocks_per_sm,
    }
    if registers_per_thread > limits.max_registers_per_thread:
        return Occupancy(0, 0, 0.0, (REGISTERS,), f"{registers_per_thread} registers per thread: "
                                                  f"{limits.arch} allows {limits.max_registers_per_thread}")
    if registers_per_thread:
        per_warp = _round_up(registers_per_thread * limits.warp_size, limits.register_unit)
        per_partition = limits.registers_per_sm // limits.warp_granule // per_warp
        by[REGISTERS] = per_partition * limits.warp_granule // warps_per_block
    if smem_per_block > limits.max_smem_per_block:
        return Occupancy(0, 0, 0.0, (SHARED_MEMORY,), f"{smem_per_block} B of shared memory per block: "
                                                      f"{limits.arch} allows {limits.max_smem_per_block} B")
    by[SHARED_MEMORY] = limits.smem_per_sm // _round_up(smem_per_block + limits.reserved_smem_per_block,
                                                        limits.smem_unit)
    blocks = min(by.values())
    limiters = tuple(name for name in (REGISTERS, SHARED_MEMORY, WARPS, BLOCKS) if by.get(name) == blocks)
    warps = blocks * warps_per_block
    note = "" if blocks else f"one block of {threads_per_block} threads needs more {limiters[0]} than an SM has"
    return Occupancy(blocks, warps, warps / limits.max_warps_per_sm, limiters, note)


def limits_for(arch: str) -> SmLimits | None:
    """The limits gpuprof knows for `arch` (sm_90, sm_90a), else None: no occupancy is computed."""
    return LIMITS.get(arch)
