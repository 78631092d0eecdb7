"""Ceilings for '% of ceiling', the IMPOSSIBLE floor and the roofline: one definition everywhere.

The ceiling of a row is the datasheet peak of the row's own precision (dense, never sparse) or the
datasheet memory bandwidth, for the GPU the row ran on, scaled to that card's maximum SM clock and
SM count. Ceilings measured by `gpuprof devicequery --measure` (cuBLAS, a D2D copy) are kept apart
and only ever shown as a separate "vs measured" figure (their cache file: measure/device_ceilings.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpuprof.gpu import DeviceInfo

# What each precision's ceiling is called. An FP32 kernel is judged against the FP32 pipe (TF32 is
# another precision); FP16/BF16/TF32 against the tensor cores (their fastest legal path); FP64
# against the FP64 tensor cores where the GPU has them (A100, H100, H200), else the FP64 pipe.
FLOP_NAMES = {"fp32": "FP32 (non-tensor)", "tf32": "TF32 tensor, dense", "bf16": "BF16 tensor, dense",
               "fp16": "FP16 tensor, dense", "fp64": "FP64", "fp64_tensor": "FP64 tensor",
               "fp8": "FP8 tensor, dense", "int8": "INT8 tensor, dense"}


@dataclass(frozen=True)
class Datasheet:
    """One GPU model's published figures. flops are FLOP/s (dense) at max_sm_clock_mhz on sm_count SMs."""

    model: str
    names: tuple[str, ...]  # runs of words in the CUDA device name that pick this entry ("-" = " ")
    sm_count: int
    max_sm_clock_mhz: float  # the maximum SM clock the board reports (nvidia-smi clocks.max.sm)
    bandwidth_bytes_s: float
    flops: dict[str, float]
    cite: str
    # The host link, PCIe (generation, lanes), from the same datasheet: the transfers family's roof.
    pcie: tuple[int, int] | None = None


T, G = 1e12, 1e9
# PCIe bytes/s per lane and direction: the transfer rate (GT/s) after line coding (PCIe base spec:
# 8b/10b for Gen1-2, 128b/130b from Gen3), before packet overhead. Gen5 x16: 63.0 GB/s each way
# (the "64 GB/s" of datasheets); ~50-55 GB/s is what a pinned copy reaches on an H100 SXM host.
PCIE_LANE_BYTES_S = {1: 2.5e9 * 8 / 10 / 8, 2: 5e9 * 8 / 10 / 8, 3: 8e9 * 128 / 130 / 8,
                     4: 16e9 * 128 / 130 / 8, 5: 32e9 * 128 / 130 / 8, 6: 64e9 * 242 / 256 / 8}
# GH100 at 132 SMs and 1980 MHz, dense (H100 SXM5 and H200 SXM share the chip and its clocks).
GH100_SXM_PEAKS = {"fp64": 33.5 * T, "fp64_tensor": 66.9 * T, "fp32": 66.9 * T, "tf32": 494.7 * T,
                   "bf16": 989.4 * T, "fp16": 989.4 * T, "fp8": 1978.9 * T, "int8": 1978.9 * T}
# Most specific names first: "h100 pcie" before "h100", "h200 nvl" before "h200".
DATASHEETS: tuple[Datasheet, ...] = (
    # NVIDIA H100 Tensor Core GPU datasheet (2023), PCIe column: FP64 26, FP64 TC 51, FP32 51,
    # TF32 TC 756* (378 dense), BF16/FP16 TC 1513* (756 dense), FP8 3026* (1513), INT8 3026* (1513);
    # 2 TB/s (H100 whitepaper: 2039 GB/s, HBM2e 5120-bit). 114 SMs, max 1755 MHz.
    Datasheet("H100 PCIe", ("h100 pcie",), 114, 1755, 2039 * G,
              {"fp64": 25.6 * T, "fp64_tensor": 51.2 * T, "fp32": 51.2 * T, "tf32": 378 * T,
               "bf16": 756 * T, "fp16": 756 * T, "fp8": 1513 * T, "int8": 1513 * T},
              "NVIDIA H100 datasheet, PCIe", pcie=(5, 16)),
    # H100 datasheet, H100 NVL column: FP64 30, FP64 TC 60, FP32 60, TF32 TC 835* (417.5), BF16/FP16
    # TC 1671* (835.5), FP8 3341* (1670.5); HBM3 3.9 TB/s. 132 SMs; the clock comes from the card.
    Datasheet("H100 NVL", ("h100 nvl",), 132, 1785, 3.9 * T,
              {"fp64": 30 * T, "fp64_tensor": 60 * T, "fp32": 60 * T, "tf32": 417.5 * T,
               "bf16": 835.5 * T, "fp16": 835.5 * T, "fp8": 1670.5 * T, "int8": 1670.5 * T},
              "NVIDIA H100 datasheet, NVL", pcie=(5, 16)),
    # H100 datasheet, SXM column: FP64 34 (whitepaper 33.5), FP64 TC 67 (66.9), FP32 67 (66.9),
    # TF32 TC 989* (494.7 dense), BF16/FP16 TC 1979* (989.4 dense), FP8 3958* (1978.9), INT8 3958*;
    # HBM3 3.35 TB/s. 132 SMs, max 1980 MHz.
    Datasheet("H100 SXM5", ("h100",), 132, 1980, 3.35 * T,
              GH100_SXM_PEAKS,
              "NVIDIA H100 datasheet / whitepaper, SXM5", pcie=(5, 16)),
    # H200 datasheet, SXM column: the H100 SXM5 compute figures (same GH100, 132 SMs, 1980 MHz);
    # HBM3e 4.8 TB/s. H200 NVL (4.8 TB/s too) gets these scaled to its own SM count and max clock.
    Datasheet("H200 SXM", ("h200",), 132, 1980, 4.8 * T,
              GH100_SXM_PEAKS,
              "NVIDIA H200 datasheet, SXM", pcie=(5, 16)),
    # NVIDIA A100 datasheet (2021): FP64 9.7, FP64 TC 19.5, FP32 19.5, TF32 TC 156 (312*),
    # BF16/FP16 TC 312 (624*), INT8 624 (1248*); 108 SMs, max 1410 MHz, both form factors.
    # Bandwidth per model: 80GB SXM 2039 GB/s, 80GB PCIe 1935 GB/s, 40GB (either) 1555 GB/s.
    Datasheet("A100 SXM4 80GB", ("a100 sxm4 80gb",), 108, 1410, 2039 * G,
              {"fp64": 9.7 * T, "fp64_tensor": 19.5 * T, "fp32": 19.5 * T, "tf32": 156 * T,
               "bf16": 312 * T, "fp16": 312 * T, "int8": 624 * T}, "NVIDIA A100 datasheet, 80GB SXM"),
    Datasheet("A100 PCIe 80GB", ("a100 80gb pcie", "a100 pcie 80gb"), 108, 1410, 1935 * G,
              {"fp64": 9.7 * T, "fp64_tensor": 19.5 * T, "fp32": 19.5 * T, "tf32": 156 * T,
               "bf16": 312 * T, "fp16": 312 * T, "int8": 624 * T}, "NVIDIA A100 datasheet, 80GB PCIe"),
    Datasheet("A100 40GB", ("a100",), 108, 1410, 1555 * G,
              {"fp64": 9.7 * T, "fp64_tensor": 19.5 * T, "fp32": 19.5 * T, "tf32": 156 * T,
               "bf16": 312 * T, "fp16": 312 * T, "int8": 624 * T}, "NVIDIA A100 datasheet, 40GB SXM/PCIe"),
    # NVIDIA L4 datasheet: FP32 30.3, TF32 TC 120* (60 dense), BF16/FP16 TC 242* (121), FP8 485*
    # (242.5), INT8 485* (242.5); 300 GB/s. 58 SMs, max 2040 MHz. FP64 is not on the datasheet:
    # Ada has 2 FP64 lanes per SM, 1/64 of FP32 (Ada tuning guide).
    Datasheet("L4", ("l4",), 58, 2040, 300 * G,
              {"fp64": 30.3 / 64 * T, "fp32": 30.3 * T, "tf32": 60 * T, "bf16": 121 * T, "fp16": 121 * T,
               "fp8": 242.5 * T, "int8": 242.5 * T}, "NVIDIA L4 datasheet"),
    # NVIDIA Ada GPU architecture whitepaper, GeForce RTX 4090: FP32 82.6, TF32 TC 82.6 (165.2*),
    # BF16 TC (FP32 accumulate) 165.2 (330.3*), FP16 TC with FP16 accumulate 330.3 (660.6*), FP8
    # (FP16 acc.) 660.6, INT8 660.6; 1008 GB/s. 128 SMs, boost 2520 MHz. FP16 takes the FP16-
    # accumulate rate: the fastest legal path for FP16 inputs (FP32 accumulate is half of it).
    Datasheet("GeForce RTX 4090", ("rtx 4090",), 128, 2520, 1008 * G,
              {"fp64": 82.6 / 64 * T, "fp32": 82.6 * T, "tf32": 82.6 * T, "bf16": 165.2 * T,
               "fp16": 330.3 * T, "fp8": 660.6 * T, "int8": 660.6 * T}, "NVIDIA Ada whitepaper, RTX 4090"),
    # Ada whitepaper, GeForce RTX 4080 (16GB): FP32 48.7, TF32 TC 48.7 (97.5*), BF16 TC 97.5 (195*),
    # FP16 TC (FP16 acc.) 194.9 (389.9*), FP8 389.9, INT8 389.9; 716.8 GB/s. 76 SMs, boost 2505 MHz.
    Datasheet("GeForce RTX 4080", ("rtx 4080",), 76, 2505, 716.8 * G,
              {"fp64": 48.7 / 64 * T, "fp32": 48.7 * T, "tf32": 48.7 * T, "bf16": 97.5 * T,
               "fp16": 194.9 * T, "fp8": 389.9 * T, "int8": 389.9 * T}, "NVIDIA Ada whitepaper, RTX 4080"),
)

# FP32 lanes per SM by compute capability (CUDA C Programming Guide, arithmetic instruction table):
# the arithmetic fallback for a GPU with no datasheet entry (FP32 and bandwidth only).
FP32_LANES_PER_SM = {"7.0": 64, "7.5": 64, "8.0": 64, "8.6": 128, "8.7": 128, "8.9": 128, "9.0": 128,
                     "10.0": 128, "12.0": 128}


def _words(text: str) -> list[str]:
    return text.lower().replace("-", " ").split()


def datasheet_for(gpu_name: str) -> Datasheet | None:
    """The entry whose name words appear, in order and adjacent, in the device name ("NVIDIA L4"
    is an L4, "NVIDIA L40S" is not)."""
    words = _words(gpu_name)
    for entry in DATASHEETS:
        for key in map(_words, entry.names):
            if any(words[i:i + len(key)] == key for i in range(len(words))):
                return entry
    return None


@dataclass(frozen=True)
class Ceiling:
    """One roof: its value (FLOP/s or bytes/s), what it is, and where the figure comes from."""

    value: float
    name: str
    source: str


@dataclass(frozen=True)
class Measured:
    """What `devicequery --measure` stores per GPU (the cache file's fields). These are cuBLAS and
    a D2D copy, not the hardware: shown only as a separate "vs measured" figure."""

    bandwidth_bytes_s: float
    fp32_flops: float | None
    tf32_flops: float | None = None
    bf16_flops: float | None = None
    source: str = "measured"
    # Pinned host<->device cudaMemcpy of a large buffer, each direction alone (None: measured
    # before gpuprof measured the link; run `devicequery --measure` again).
    link_h2d_bytes_s: float | None = None
    link_d2h_bytes_s: float | None = None

    @property
    def link_bytes_s(self) -> float | None:
        """The link rate of equal bytes copied H2D then D2H (pinned, one after the other): the
        harmonic mean of the two directions, what a serial host->device->host unit can reach."""
        if not self.link_h2d_bytes_s or not self.link_d2h_bytes_s:
            return None
        return 2.0 / (1.0 / self.link_h2d_bytes_s + 1.0 / self.link_d2h_bytes_s)

    def ceiling(self, rate_kind: str, precision: str) -> Ceiling | None:
        if rate_kind == "bytes":
            return Ceiling(self.bandwidth_bytes_s, "measured D2D copy", self.source)
        if rate_kind == "link":
            link = self.link_bytes_s
            return Ceiling(link, "measured pinned copy H2D + D2H", self.source) if link else None
        value, name = {"fp32": (self.fp32_flops, "measured cuBLAS SGEMM"),
                       "tf32": (self.tf32_flops, "measured cuBLAS TF32 GEMM"),
                       "bf16": (self.bf16_flops, "measured cuBLAS BF16 GEMM")}.get(precision, (None, ""))
        return Ceiling(value, name, self.source) if value else None


@dataclass(frozen=True)
class Ceilings:
    """The device's ceilings: peaks per precision key (fp32, tf32, bf16, fp16, fp64, fp64_tensor,
    fp8, int8) and DRAM bandwidth, plus the measured ones kept apart."""

    bandwidth_bytes_s: float | None
    flops: dict[str, float] = field(default_factory=dict)
    source: str = "datasheet"
    l2_bytes: int = 0
    measured: Measured | None = None
    link_bytes_s: float | None = None  # host link (PCIe) per direction, datasheet: the "link" rate's roof
    link_source: str = ""

    def ceiling(self, rate_kind: str, precision: str = "fp32") -> Ceiling | None:
        """The ceiling a row of this rate kind and precision is judged against ("link": bytes
        across the host link, against one direction's bandwidth)."""
        if rate_kind == "bytes":
            return Ceiling(self.bandwidth_bytes_s, "DRAM bandwidth", self.source) if self.bandwidth_bytes_s else None
        if rate_kind == "link":
            link = self.link_bytes_s
            return Ceiling(link, "host link per direction", self.link_source) if link else None
        key = precision
        if precision == "fp64" and self.flops.get("fp64_tensor", 0) > self.flops.get("fp64", 0):
            key = "fp64_tensor"  # DMMA is FP64's fastest path where it exists
        value = self.flops.get(key)
        return Ceiling(value, FLOP_NAMES.get(key, key), self.source) if value else None

    def measured_ceiling(self, rate_kind: str, precision: str = "fp32") -> Ceiling | None:
        return self.measured.ceiling(rate_kind, precision) if self.measured else None


def from_model(gpu_name: str, sm_count: int | None = None, max_sm_clock_mhz: float | None = None,
               l2_bytes: int = 0, compute_capability: str | None = None,
               fallback_bandwidth_bytes_s: float | None = None) -> Ceilings:
    """Datasheet ceilings for a GPU, scaled to its SM count and max SM clock when they are known;
    without a datasheet entry, FP32 from lanes x SMs x clock and the bandwidth given (if any)."""
    sheet = datasheet_for(gpu_name)
    if sheet is None:
        lanes = FP32_LANES_PER_SM.get(compute_capability or "")
        fp32 = 2.0 * lanes * sm_count * max_sm_clock_mhz * 1e6 if lanes and sm_count and max_sm_clock_mhz else None
        return Ceilings(bandwidth_bytes_s=fallback_bandwidth_bytes_s, flops={"fp32": fp32} if fp32 else {},
                        source=f"no datasheet entry for {gpu_name!r}: FP32 = lanes x SMs x max clock, bandwidth = "
                               "bus width x memory clock; other precisions have no ceiling", l2_bytes=l2_bytes)
    scale, how = 1.0, f"at {sheet.max_sm_clock_mhz:.0f} MHz"
    if sm_count and sm_count != sheet.sm_count:
        scale *= sm_count / sheet.sm_count
        how += f", x {sm_count}/{sheet.sm_count} SMs"
    if max_sm_clock_mhz and abs(max_sm_clock_mhz - sheet.max_sm_clock_mhz) >= 1:
        scale *= max_sm_clock_mhz / sheet.max_sm_clock_mhz
        how = f"scaled to this card's max SM clock {max_sm_clock_mhz:.0f} MHz" + how.removeprefix(
            f"at {sheet.max_sm_clock_mhz:.0f} MHz")
    link, link_source = None, ""
    if sheet.pcie:
        generation, lanes = sheet.pcie
        link = PCIE_LANE_BYTES_S[generation] * lanes
        link_source = f"datasheet {sheet.model} ({sheet.cite}): PCIe Gen{generation} x{lanes}, one direction"
    return Ceilings(bandwidth_bytes_s=sheet.bandwidth_bytes_s, flops={k: v * scale for k, v in sheet.flops.items()},
                    source=f"datasheet {sheet.model} ({sheet.cite}), dense, {how}", l2_bytes=l2_bytes,
                    link_bytes_s=link, link_source=link_source)


def theoretical(info: DeviceInfo) -> Ceilings:
    return from_model(info.name, info.sm_count, info.sm_clock_khz / 1e3 if info.sm_clock_khz else None,
                      info.l2_bytes, info.compute_capability, info.theoretical_bandwidth_bytes_s or None)


def from_environment(env: dict[str, Any]) -> Ceilings | None:
    """The ceilings of a results file's own fingerprint (to re-render it on a machine without a
    GPU); None when nothing is known about that GPU. Without a recorded max SM clock the datasheet's
    own clock is assumed."""
    limits = from_model(str(env.get("gpu_name", "")), env.get("sm_count"), env.get("sm_max_clock_mhz"),
                        int(env.get("l2_bytes") or 0), env.get("compute_capability"))
    return limits if limits.flops or limits.bandwidth_bytes_s else None
